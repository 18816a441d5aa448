/*
 * Google Cloud Storage through its JSON API: the object listing
 * (GET /storage/v1/b/BUCKET/o?prefix=P&pageToken=T, following
 * nextPageToken) and media URLs (GET /download/storage/v1/b/BUCKET/o/NAME
 * ?alt=media, NAME URL-encoded with '/' as %2F). The downloads themselves
 * are hf.c's engine; md5Hash (base64) is what it verifies.
 *
 * The endpoint follows STORAGE_EMULATOR_HOST, the convention of Google's
 * client libraries and emulators. The token is a Bearer token from
 * GOOGLE_OAUTH_ACCESS_TOKEN or `gcloud auth print-access-token`.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gcs.h"
#include "gdnctl/hf.h"
#include "gdnctl/http.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/json.h"
#include "gdnctl/md5.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define MAX_PAGES     100000
#define GCLOUD_OUTPUT 65536

/* A one-line message about a URI (quoted through gdn_one_line). */
static int bad_uri(struct gdn_err *err, const char *uri, const char *why)
{
	char *q = gdn_one_line(uri, 200);
	int ret = gdn_err_set(err, GDN_EUSAGE, "'%s' %s", q, why);

	free(q);
	return ret;
}

int gdn_gcs_parse_uri(const char *uri, char **bucket, char **prefix, struct gdn_err *err)
{
	const char *b, *slash;
	size_t blen;

	*bucket = *prefix = NULL;
	if (strncmp(uri, "gs://", 5))
		return bad_uri(err, uri, "is not a gs://BUCKET/PREFIX URI");
	b = uri + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (!blen || blen > 222)
		return bad_uri(err, uri, "names no bucket (gs://BUCKET/PREFIX)");
	for (size_t i = 0; i < blen; i++)
		if (!islower((unsigned char)b[i]) && !isdigit((unsigned char)b[i]) &&
		    !strchr("-_.", b[i]))
			return bad_uri(err, uri,
				       "has a bad bucket name (only a-z, 0-9, '-', '_' and '.')");
	for (const char *p = uri; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return bad_uri(err, uri, "has a control character");
	*bucket = xstrndup(b, blen);
	*prefix = xstrdup(slash ? slash + 1 : "");
	return 0;
}

void gdn_gcs_list_url(struct sbuf *out, const char *endpoint, const char *bucket,
		      const char *prefix, const char *page_token)
{
	sbuf_addf(out, "%s/storage/v1/b/", endpoint);
	gdn_url_encode(out, bucket, false);
	sbuf_adds(out, "/o?prefix=");
	gdn_url_encode(out, prefix, false);
	sbuf_adds(out, "&fields=items(name,size,md5Hash),nextPageToken");
	if (page_token) {
		sbuf_adds(out, "&pageToken=");
		gdn_url_encode(out, page_token, false);
	}
}

void gdn_gcs_media_url(struct sbuf *out, const char *endpoint, const char *bucket, const char *name)
{
	sbuf_addf(out, "%s/download/storage/v1/b/", endpoint);
	gdn_url_encode(out, bucket, false);
	sbuf_adds(out, "/o/");
	gdn_url_encode(out, name, false);
	sbuf_adds(out, "?alt=media");
}

char *gdn_gcs_endpoint(void)
{
	const char *e = getenv("STORAGE_EMULATOR_HOST");
	char *url;
	size_t len;

	if (!e || !*e)
		return xstrdup(GDN_GCS_DEFAULT_ENDPOINT);
	url = strstr(e, "://") ? xstrdup(e) : xstrfmt("http://%s", e);
	len = strlen(url);
	while (len && url[len - 1] == '/')
		url[--len] = '\0';
	return url;
}

/* A decimal string ("1234") or a JSON integer, as the API and emulators write sizes. */
static bool size_value(const json_t *v, uint64_t *out)
{
	const char *s;
	char *end;
	unsigned long long n;

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	if (!json_is_string(v))
		return false;
	s = json_string_value(v);
	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno || *end || end - s > 19)
		return false;
	*out = n;
	return true;
}

static int parse_item(const json_t *e, size_t idx, const char *endpoint, const char *bucket,
		      struct gdn_hf_files *out, struct gdn_err *err)
{
	const json_t *jn = json_object_get(e, "name"); /* borrowed */
	const char *name, *md5;
	struct gdn_hf_file f = {0};
	struct sbuf url = SBUF_INIT;

	if (!json_is_object(e))
		return gdn_err_set(err, GDN_EPARSE, "listing item %zu is not an object", idx);
	if (!json_is_string(jn) || !json_string_length(jn) ||
	    strlen(json_string_value(jn)) != json_string_length(jn))
		return gdn_err_set(err, GDN_EPARSE, "listing item %zu has no 'name'", idx);
	name = json_string_value(jn);
	if (name[strlen(name) - 1] == '/') {
		out->ignored++; /* a folder placeholder */
		return 0;
	}
	if (!size_value(json_object_get(e, "size"), &f.size))
		return gdn_err_set(err, GDN_EPARSE, "listing item %zu has no valid 'size'", idx);
	md5 = json_string_value(json_object_get(e, "md5Hash"));
	if (md5) {
		if (!gdn_md5_b64_valid(md5))
			return gdn_err_set(err, GDN_EPARSE,
					   "listing item %zu has a malformed 'md5Hash'", idx);
		memcpy(f.md5, md5, GDN_MD5_B64_SIZE);
		f.has_md5 = true;
	}
	f.path = xstrdup(name);
	if (endpoint) {
		gdn_gcs_media_url(&url, endpoint, bucket, name);
		f.url = sbuf_detach(&url, NULL);
	}
	ALLOC_GROW(out->v, out->nr + 1, out->alloc);
	out->v[out->nr++] = f;
	return 0;
}

static void files_truncate(struct gdn_hf_files *out, size_t nr)
{
	while (out->nr > nr) {
		struct gdn_hf_file *f = &out->v[--out->nr];

		free(f->path);
		free(f->oid);
		free(f->local_path);
		free(f->error);
		free(f->url);
	}
}

int gdn_gcs_parse_list(const char *json, size_t len, const char *endpoint, const char *bucket,
		       struct gdn_hf_files *out, char **next_token, struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr); /* new */
	json_t *items, *e, *next;					    /* borrowed */
	size_t i, before = out->nr, ignored = out->ignored;
	int ret = 0;

	*next_token = NULL;
	if (!doc) {
		char *q = gdn_one_line(jerr.text, 200);

		ret = gdn_err_set(err, GDN_EPARSE, "invalid object listing: %s at byte %d", q,
				  jerr.position);
		free(q);
		goto out;
	}
	if (!json_is_object(doc)) {
		ret = gdn_err_set(err, GDN_EPARSE, "invalid object listing: expected an object");
		goto out;
	}
	items = json_object_get(doc, "items");
	if (items && !json_is_array(items)) {
		ret = gdn_err_set(err, GDN_EPARSE, "invalid object listing: 'items' is not a list");
		goto out;
	}
	json_array_foreach(items, i, e)
	{
		ret = parse_item(e, i, endpoint, bucket, out, err);
		if (ret)
			goto out;
	}
	next = json_object_get(doc, "nextPageToken");
	if (next && !json_is_null(next)) {
		const char *t = json_string_value(next);

		if (!t || strlen(t) != json_string_length(next)) {
			ret =
			    gdn_err_set(err, GDN_EPARSE,
					"invalid object listing: 'nextPageToken' is not a string");
			goto out;
		}
		if (*t)
			*next_token = xstrdup(t);
	}
out:
	if (ret) {
		files_truncate(out, before);
		out->ignored = ignored;
	}
	json_decref(doc);
	return ret;
}

/* The last non-empty line of a program's output, masked, for a one-line message. */
static char *last_line(const struct sbuf *out)
{
	struct sbuf sb = SBUF_INIT;
	size_t end = out->len, start;
	char *line;

	while (end && (out->buf[end - 1] == '\n' || out->buf[end - 1] == '\r'))
		end--;
	start = end;
	while (start && out->buf[start - 1] != '\n')
		start--;
	sbuf_add(&sb, out->buf + start, end - start);
	gdn_secret_mask(&sb);
	line = gdn_one_line(sb.buf, 200);
	sbuf_release(&sb);
	return line;
}

static bool token_ok(const char *t)
{
	if (!*t)
		return false;
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return false;
	return true;
}

int gdn_gcs_find_token(bool emulator, int timeout_ms, char **token, char **source,
		       struct gdn_err *err)
{
	const char *env = getenv("GOOGLE_OAUTH_ACCESS_TOKEN");
	const char *prog = getenv("GDNCTL_GCLOUD");
	const char *argv[] = {prog && *prog ? prog : "gcloud", "auth", "print-access-token", NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct sbuf tok = SBUF_INIT;
	int ret = 0;

	*token = *source = NULL;
	if (env && *env) {
		sbuf_adds(&tok, env);
		sbuf_trim(&tok);
		gdn_secret_add_value(tok.buf);
		if (!token_ok(tok.buf)) {
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "GOOGLE_OAUTH_ACCESS_TOKEN contains spaces or control "
					  "characters");
			goto out;
		}
		*token = sbuf_detach(&tok, NULL);
		*source = xstrdup("GOOGLE_OAUTH_ACCESS_TOKEN");
		goto out;
	}
	p.argv = argv;
	p.capture = true;
	p.out.limit = GCLOUD_OUTPUT;
	p.timeout_ms = timeout_ms > 0 ? timeout_ms : 30000;
	p.kill_grace_ms = 1000;
	ret = gdn_proc_run(&p, err);
	if (ret == GDN_ENOTFOUND && emulator) {
		/* An emulator needs no credentials: go anonymous. */
		gdn_err_clear(err);
		ret = 0;
		goto out;
	}
	if (ret) {
		gdn_err_prefix(err, "no GCS access token (set GOOGLE_OAUTH_ACCESS_TOKEN)");
		goto out;
	}
	if (p.status_kind == GDN_PROC_STOPPED && p.stop_signal) {
		ret = gdn_err_set(err, GDN_EINTR, "'%s auth print-access-token' was interrupted",
				  argv[0]);
		goto out;
	}
	if (p.status_kind == GDN_PROC_TIMEOUT) {
		ret = gdn_err_set(err, GDN_ETIMEOUT,
				  "'%s auth print-access-token' did not answer within %.1f s",
				  argv[0], (double)p.timeout_ms / 1000.0);
		goto out;
	}
	/* The token is the last line of the output (warnings may come first). */
	{
		char *line = NULL;
		size_t end = p.out.len, start;

		while (end && (p.out.buf[end - 1] == '\n' || p.out.buf[end - 1] == '\r'))
			end--;
		start = end;
		while (start && p.out.buf[start - 1] != '\n')
			start--;
		sbuf_add(&tok, p.out.buf + start, end - start);
		sbuf_trim(&tok);
		if (p.status_kind != GDN_PROC_EXITED || p.code || !token_ok(tok.buf)) {
			line = last_line(&p.out);
			ret = gdn_err_set(
			    err, GDN_EFAILED,
			    "no GCS access token: '%s auth print-access-token' "
			    "failed (exit %d)%s%s; set GOOGLE_OAUTH_ACCESS_TOKEN or run "
			    "'gcloud auth login'",
			    argv[0], gdn_proc_exit_code(&p), *line ? ": " : "", line);
			free(line);
			goto out;
		}
	}
	gdn_secret_add_value(tok.buf);
	*token = sbuf_detach(&tok, NULL);
	*source = xstrfmt("%s auth print-access-token", argv[0]);
out:
	gdn_proc_release(&p);
	sbuf_release(&tok);
	return ret;
}

/* One clear line for a refused listing. */
static int list_refused(const struct gdn_http_req *req, const char *bucket, const char *prefix,
			int ret, struct gdn_err *err)
{
	switch (req->status) {
	case 401:
		return gdn_err_set(
		    err, GDN_EFAILED,
		    "cannot list gs://%s/%s: the credentials were refused (HTTP 401); "
		    "set GOOGLE_OAUTH_ACCESS_TOKEN or run 'gcloud auth login'",
		    bucket, prefix);
	case 403:
		return gdn_err_set(err, GDN_EFAILED,
				   "cannot list gs://%s/%s: permission denied (HTTP 403); the "
				   "account needs storage.objects.list on the bucket",
				   bucket, prefix);
	case 404:
		return gdn_err_set(err, GDN_ENOTFOUND,
				   "cannot list gs://%s/%s: no such bucket (HTTP 404)", bucket,
				   prefix);
	default:
		return ret;
	}
}

int gdn_gcs_list(struct gdn_hf *client, const char *bucket, const char *prefix,
		 struct gdn_hf_files *out, struct gdn_err *err)
{
	struct sbuf url = SBUF_INIT;
	struct gdn_http_req req = {0};
	struct gdn_http_req *reqs[1] = {&req};
	char *token = NULL;
	int ret = 0;

	req.resp = (struct sbuf)SBUF_INIT;
	gdn_gcs_list_url(&url, client->endpoint, bucket, prefix, NULL);
	for (;;) {
		char *next = NULL;

		req.url = url.buf;
		req.bearer = client->token;
		req.follow_redirects = false;
		ret = gdn_http_run(client->http, reqs, 1, 1, err);
		if (ret) {
			ret = list_refused(&req, bucket, prefix, ret, err);
			goto out;
		}
		ret = gdn_gcs_parse_list(req.resp.buf, req.resp.len, client->endpoint, bucket, out,
					 &next, err);
		if (ret) {
			gdn_err_prefix(err, "page %zu of the listing of gs://%s/%s", out->pages + 1,
				       bucket, prefix);
			goto out;
		}
		out->pages++;
		gdn_http_req_release(&req);
		if (!next)
			break;
		if ((token && !strcmp(token, next)) || out->pages >= MAX_PAGES) {
			free(next);
			ret = gdn_err_set(err, GDN_EPARSE,
					  "the listing of gs://%s/%s does not end (page %zu)",
					  bucket, prefix, out->pages);
			goto out;
		}
		free(token);
		token = next;
		sbuf_reset(&url);
		gdn_gcs_list_url(&url, client->endpoint, bucket, prefix, token);
	}
out:
	gdn_http_req_release(&req);
	sbuf_release(&url);
	free(token);
	return ret;
}
