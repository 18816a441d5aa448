/*
 * Hugging Face Hub client: the recursive tree listing (following
 * Link rel="next" pages), file selection, and resumable, verified
 * downloads through /resolve/ URLs (redirects to the CDN followed; the
 * token stays with the hub host, see src/hub/http.c).
 *
 * A download writes <local>.part, resumes it with Range after an
 * interruption (also one left by an earlier run), checks the size from
 * the listing and, for LFS files, the sha256 (hashed while the bytes
 * arrive), then fsyncs, renames it into place and fsyncs the directory.
 */
#include "gdnctl/compat.h"
#include <curl/curl.h>
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/md5.h"
#include "gdnctl/sha256.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/http.h"
#include "gdnctl/hf.h"
#include "gdnctl/json.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define TOKEN_FILE_MAX 4096
#define MAX_PAGES      100000
#define WRITE_BUFFER   ((size_t)1 << 20)
#define HASH_QUEUE     8
/* Files per gdn_http_run: memory stays flat for any queue length. */
#define BATCH_MIN 256

const struct gdn_enum gdn_hf_repo_type_enum[] = {
    {"dataset", GDN_HF_DATASET, "a data set repository"},
    {"model", GDN_HF_MODEL, "a model repository"},
    {"space", GDN_HF_SPACE, "a Space"},
    GDN_ENUM_END,
};

int gdn_hf_repo_type_parse(const char *s)
{
	int t;

	return gdn_enum_parse(gdn_hf_repo_type_enum, s, &t) ? -1 : t;
}

const char *gdn_hf_repo_type_name(enum gdn_hf_repo_type t)
{
	return gdn_enum_name(gdn_hf_repo_type_enum, (int)t);
}

static void file_release(struct gdn_hf_file *f)
{
	free(f->path);
	free(f->oid);
	free(f->local_path);
	free(f->error);
	free(f->url);
}

void gdn_hf_files_release(struct gdn_hf_files *f)
{
	for (size_t i = 0; i < f->nr; i++)
		file_release(&f->v[i]);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

/* ---- listing ---- */

static bool is_hex64(const char *s, size_t len)
{
	if (len != 64)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!isxdigit((unsigned char)s[i]))
			return false;
	return true;
}

/* A JSON integer >= 0 (or an integral real) into *out. */
static bool json_size(const json_t *v, uint64_t *out)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		if (d >= 0 && d < 9.007199254740992e15 && d == floor(d)) {
			*out = (uint64_t)d;
			return true;
		}
	}
	return false;
}

/* A JSON string without embedded NUL; NULL otherwise. */
static const char *json_text(const json_t *v)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

static int parse_entry(const json_t *e, size_t idx, struct gdn_hf_files *out, struct gdn_err *err)
{
	const char *type, *path, *oid;
	const json_t *lfs; /* borrowed */
	struct gdn_hf_file f = {0};

	if (!json_is_object(e))
		return gdn_err_set(err, GDN_EPARSE, "tree listing entry %zu is not an object", idx);
	type = json_text(json_object_get(e, "type"));
	if (!type)
		return gdn_err_set(err, GDN_EPARSE, "tree listing entry %zu has no 'type'", idx);
	if (strcmp(type, "file")) {
		out->ignored++; /* "directory", and whatever else the hub may add */
		return 0;
	}
	path = json_text(json_object_get(e, "path"));
	if (!path || !*path)
		return gdn_err_set(err, GDN_EPARSE, "tree listing entry %zu has no 'path'", idx);
	if (!json_size(json_object_get(e, "size"), &f.size))
		return gdn_err_set(err, GDN_EPARSE, "tree listing entry %zu has no valid 'size'",
				   idx);
	lfs = json_object_get(e, "lfs");
	if (lfs && !json_is_null(lfs)) {
		const char *sha = json_text(json_object_get(lfs, "oid"));

		if (!json_is_object(lfs) || !sha || !is_hex64(sha, strlen(sha)) ||
		    !json_size(json_object_get(lfs, "size"), &f.size))
			return gdn_err_set(err, GDN_EPARSE,
					   "tree listing entry %zu has a malformed 'lfs' object",
					   idx);
		for (int i = 0; i < 64; i++)
			f.sha256[i] = (char)tolower((unsigned char)sha[i]);
		f.sha256[64] = '\0';
		f.lfs = true;
	}
	oid = json_text(json_object_get(e, "oid"));
	f.has_xet = json_is_string(json_object_get(e, "xetHash"));
	f.path = xstrdup(path);
	f.oid = oid ? xstrdup(oid) : NULL;
	ALLOC_GROW(out->v, out->nr + 1, out->alloc);
	out->v[out->nr++] = f;
	return 0;
}

int gdn_hf_parse_tree(const char *json, size_t len, struct gdn_hf_files *out, struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr); /* new */
	size_t i, before = out->nr;
	json_t *e; /* borrowed */
	int ret = 0;

	if (!doc) {
		char *q = gdn_one_line(jerr.text, 200);

		ret = gdn_err_set(err, GDN_EPARSE, "invalid tree listing: %s at byte %d", q,
				  jerr.position);
		free(q);
		goto out;
	}
	if (!json_is_array(doc)) {
		ret = gdn_err_set(err, GDN_EPARSE, "invalid tree listing: expected a JSON array");
		goto out;
	}
	json_array_foreach(doc, i, e)
	{
		ret = parse_entry(e, i, out, err);
		if (ret)
			break;
	}
	if (ret) {
		/* All or nothing: drop what this page added. */
		while (out->nr > before)
			file_release(&out->v[--out->nr]);
	}
out:
	json_decref(doc);
	return ret;
}

bool gdn_hf_path_safe(const char *path)
{
	const char *p = path;

	if (!*p || *p == '/')
		return false;
	while (*p) {
		size_t len = strcspn(p, "/");

		if (!len || (len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		for (size_t i = 0; i < len; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f || p[i] == '\\')
				return false;
		p += len;
		if (*p == '/' && !*++p)
			return false; /* trailing slash */
	}
	return true;
}

static int file_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gdn_hf_file *)a)->path, ((const struct gdn_hf_file *)b)->path);
}

void gdn_hf_select_files(struct gdn_hf_files *files, const struct gdn_hf_select *sel,
			 struct strvec *unsafe)
{
	char *prefix = NULL;
	size_t keep = 0, plen = 0;

	if (sel && sel->path_prefix) {
		const char *s = sel->path_prefix;
		size_t len;

		while (*s == '/')
			s++;
		len = strlen(s);
		while (len && s[len - 1] == '/')
			len--;
		if (len) {
			prefix = xstrndup(s, len);
			plen = len;
		}
	}
	for (size_t i = 0; i < files->nr; i++) {
		struct gdn_hf_file *f = &files->v[i];
		bool ok = true;

		if (prefix && !(!strncmp(f->path, prefix, plen) &&
				(f->path[plen] == '\0' || f->path[plen] == '/')))
			ok = false;
		if (ok && sel && sel->regex && regexec(sel->regex, f->path, 0, NULL, 0))
			ok = false;
		if (ok && !gdn_hf_path_safe(f->path)) {
			if (unsafe)
				strvec_push(unsafe, f->path);
			ok = false;
		}
		if (ok)
			files->v[keep++] = *f;
		else
			file_release(f);
	}
	files->nr = keep;
	if (files->nr > 1)
		qsort(files->v, files->nr, sizeof(*files->v), file_cmp);
	/* Pages that overlap could list a file twice. */
	keep = 0;
	for (size_t i = 0; i < files->nr; i++) {
		if (keep && !strcmp(files->v[keep - 1].path, files->v[i].path)) {
			file_release(&files->v[i]);
			continue;
		}
		files->v[keep++] = files->v[i];
	}
	files->nr = keep;
	if (sel && sel->limit > 0) {
		while (files->nr > (size_t)sel->limit)
			file_release(&files->v[--files->nr]);
	}
	free(prefix);
}

/* ---- URLs, endpoint, token ---- */

static const char *type_api(enum gdn_hf_repo_type t)
{
	return t == GDN_HF_MODEL ? "models" : t == GDN_HF_SPACE ? "spaces" : "datasets";
}

static const char *type_url_prefix(enum gdn_hf_repo_type t)
{
	return t == GDN_HF_MODEL ? "" : t == GDN_HF_SPACE ? "spaces/" : "datasets/";
}

void gdn_hf_tree_url(struct sbuf *out, const char *endpoint, enum gdn_hf_repo_type type,
		     const char *repo_id, const char *revision)
{
	sbuf_addf(out, "%s/api/%s/", endpoint, type_api(type));
	gdn_url_encode(out, repo_id, true);
	sbuf_adds(out, "/tree/");
	gdn_url_encode(out, revision, false);
	sbuf_adds(out, "?recursive=true&expand=false");
}

void gdn_hf_resolve_url(struct sbuf *out, const char *endpoint, enum gdn_hf_repo_type type,
			const char *repo_id, const char *revision, const char *path)
{
	sbuf_addf(out, "%s/%s", endpoint, type_url_prefix(type));
	gdn_url_encode(out, repo_id, true);
	sbuf_adds(out, "/resolve/");
	gdn_url_encode(out, revision, false);
	sbuf_addch(out, '/');
	gdn_url_encode(out, path, true);
}

/* HF_ENDPOINT, else https://huggingface.co (a new string, no trailing '/'). */
static char *hf_endpoint(void)
{
	const char *e = getenv("HF_ENDPOINT");
	size_t len;

	if (!e || !*e)
		e = GDN_HF_DEFAULT_ENDPOINT;
	len = strlen(e);
	while (len && e[len - 1] == '/')
		len--;
	return xstrndup(e, len);
}

static bool token_ok(const char *t)
{
	for (const unsigned char *p = (const unsigned char *)t; *p; p++)
		if (*p <= 0x20 || *p == 0x7f)
			return false;
	return true;
}

/* The token file huggingface_hub reads (a new string). */
static char *token_path(void)
{
	const char *p = getenv("HF_TOKEN_PATH"), *home;

	if (p && *p)
		return xstrdup(p);
	p = getenv("HF_HOME");
	if (p && *p)
		return xstrfmt("%s/token", p);
	p = getenv("XDG_CACHE_HOME");
	if (p && *p)
		return xstrfmt("%s/huggingface/token", p);
	home = getenv("HOME");
	return xstrfmt("%s/.cache/huggingface/token", home && *home ? home : ".");
}

int gdn_hf_find_token(const char *explicit_token, char **token, char **source, struct gdn_err *err)
{
	static const char *const vars[] = {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"};
	struct sbuf sb = SBUF_INIT;
	char *path = NULL, *src = NULL;
	int ret = 0;

	*token = NULL;
	*source = NULL;
	if (explicit_token) {
		sbuf_adds(&sb, explicit_token);
		src = xstrdup("--token");
	}
	for (size_t i = 0; !src && i < ARRAY_SIZE(vars); i++) {
		const char *v = getenv(vars[i]);

		if (v && *v) {
			sbuf_adds(&sb, v);
			src = xstrdup(vars[i]);
		}
	}
	if (!src) {
		path = token_path();
		ret = sbuf_read_file(&sb, path, TOKEN_FILE_MAX, err);
		if (ret == GDN_ENOTFOUND) {
			gdn_err_clear(err);
			ret = 0;
			goto out;
		}
		if (ret)
			goto out;
		src = path;
		path = NULL;
	}
	sbuf_trim(&sb);
	gdn_secret_add_value(sb.buf);
	if (!sb.len)
		goto out; /* an empty token: anonymous, as huggingface_hub does */
	if (!token_ok(sb.buf)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "the Hugging Face token from '%s' contains spaces or control "
				  "characters",
				  src);
		goto out;
	}
	*token = sbuf_detach(&sb, NULL);
	*source = src;
	src = NULL;
out:
	free(src);
	free(path);
	sbuf_release(&sb);
	return ret;
}

int gdn_hf_init(struct gdn_hf *hf, const char *endpoint, const char *token,
		const struct gdn_http_opts *opts, struct gdn_err *err)
{
	size_t len;
	int ret = 0;

	memset(hf, 0, sizeof(*hf));
	if (!endpoint) {
		hf->endpoint = hf_endpoint();
	} else {
		len = strlen(endpoint);
		while (len && endpoint[len - 1] == '/')
			len--;
		hf->endpoint = xstrndup(endpoint, len);
	}
	if (strncmp(hf->endpoint, "http://", 7) && strncmp(hf->endpoint, "https://", 8)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "the Hugging Face endpoint '%s' is not an http(s) URL",
				  hf->endpoint);
		goto out;
	}
	if (token && *token) {
		hf->token = xstrdup(token);
		gdn_secret_add_value(token);
	}
	hf->http = gdn_http_new(opts, err);
	if (!hf->http)
		ret = err->code;
out:
	if (ret)
		gdn_hf_release(hf);
	return ret;
}

void gdn_hf_release(struct gdn_hf *hf)
{
	free(hf->endpoint);
	free(hf->token);
	gdn_http_free(hf->http);
	memset(hf, 0, sizeof(*hf));
}

/* Whether two URLs have the same scheme, host and port. */
static bool same_origin(const char *a, const char *b)
{
	static const CURLUPart parts[] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
	CURLU *ua = curl_url(), *ub = curl_url();
	bool same = ua && ub && !curl_url_set(ua, CURLUPART_URL, a, 0) &&
		    !curl_url_set(ub, CURLUPART_URL, b, 0);

	for (size_t i = 0; same && i < ARRAY_SIZE(parts); i++) {
		char *pa = NULL, *pb = NULL;

		curl_url_get(ua, parts[i], &pa, CURLU_DEFAULT_PORT);
		curl_url_get(ub, parts[i], &pb, CURLU_DEFAULT_PORT);
		same = pa && pb && !strcasecmp(pa, pb);
		curl_free(pa);
		curl_free(pb);
	}
	curl_url_cleanup(ua);
	curl_url_cleanup(ub);
	return same;
}

int gdn_hf_list(struct gdn_hf *hf, enum gdn_hf_repo_type type, const char *repo_id,
		const char *revision, struct gdn_hf_files *out, struct gdn_err *err)
{
	struct sbuf url = SBUF_INIT;
	struct gdn_http_req req = {0};
	struct gdn_http_req *reqs[1] = {&req};
	int ret = 0;

	req.resp = (struct sbuf)SBUF_INIT;
	gdn_hf_tree_url(&url, hf->endpoint, type, repo_id, revision);
	while (url.len) {
		req.url = url.buf;
		req.bearer = hf->token;
		req.follow_redirects = true;
		ret = gdn_http_run(hf->http, reqs, 1, 1, err);
		if (ret)
			goto out;
		ret = gdn_hf_parse_tree(req.resp.buf, req.resp.len, out, err);
		if (ret) {
			gdn_err_prefix(err, "page %zu of the listing of '%s'", out->pages + 1,
				       repo_id);
			goto out;
		}
		out->pages++;
		sbuf_reset(&url);
		if (!req.link_next)
			break;
		if (!same_origin(req.link_next, hf->endpoint)) {
			ret = gdn_err_set(err, GDN_EPARSE,
					  "the listing of '%s' links its next page to another host",
					  repo_id);
			goto out;
		}
		if (!strcmp(req.link_next, req.url) || out->pages >= MAX_PAGES) {
			ret = gdn_err_set(err, GDN_EPARSE,
					  "the listing of '%s' does not end (page %zu)", repo_id,
					  out->pages);
			goto out;
		}
		sbuf_adds(&url, req.link_next);
		gdn_http_req_release(&req);
	}
out:
	gdn_http_req_release(&req);
	sbuf_release(&url);
	return ret;
}

/* ---- downloads ---- */

struct dl;

struct dl_file {
	struct dl *dl;
	struct gdn_hf_file *f;
	struct gdn_http_req req;
	struct sbuf url;
	char *part;
	int fd;
	uint64_t pos;	  /* bytes received: written to .part, then buffered in wbuf */
	uint64_t written; /* bytes written to .part (and hashed, for LFS) */
	char *wbuf;	  /* WRITE_BUFFER bytes */
	size_t wlen;
	int pending; /* buffers queued for the hasher (under dl->hs.lock) */
	struct gdn_sha256 sha;
	struct gdn_md5 md5;
	bool opened;
	bool present;	   /* found complete and verified: nothing fetched */
	bool from_disk;	   /* pos came (partly) from an earlier run's .part */
	bool started_over; /* restarted once after a mismatch on resumed data */
	bool bad_data;	   /* verification failed: the .part is removed */
	int64_t t0;
};

/*
 * The hasher: a thread that runs SHA-256 over written buffers while the
 * main thread goes on receiving, so hashing overlaps the transfer (on
 * two cores it would otherwise add its whole time to a big download).
 * Buffers of one file are hashed in the order they were written.
 */
struct hash_job {
	struct dl_file *d;
	char *buf;
	size_t len;
	int fd;	      /* the .part the buffer was written to */
	uint64_t off; /* where */
};

struct hasher {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_t thread;
	bool running; /* the thread exists */
	bool failed;  /* it could not be started: hash on the main thread */
	bool stop;
	struct hash_job q[HASH_QUEUE];
	size_t q_head, q_nr;
	char *free_bufs[HASH_QUEUE + 1];
	size_t nfree;
};

struct dl {
	struct gdn_hf *hf;
	const struct gdn_hf_download_opts *o;
	struct dl_file *df;  /* the batch running now */
	size_t nr;	     /* files in the batch */
	size_t total;	     /* files in the queue (dl->sorted) */
	uint64_t done_bytes; /* sizes of the files downloaded or present so far */
	struct gdn_hf_progress p;
	int64_t start;
	struct hasher hs;
	const char **sorted; /* every file's path, sorted (for bsearch) */
};

/* Whether the bytes of a file are hashed (a checksum to verify). */
static bool hashed(const struct gdn_hf_file *f)
{
	return f->lfs || f->has_md5;
}

static void hash_update(struct dl_file *d, const void *data, size_t len)
{
	if (d->f->lfs)
		gdn_sha256_update(&d->sha, data, len);
	if (d->f->has_md5)
		gdn_md5_update(&d->md5, data, len);
}

static void hash_init(struct dl_file *d)
{
	gdn_sha256_init(&d->sha);
	gdn_md5_init(&d->md5);
}

static void *hasher_main(void *arg)
{
	struct hasher *hs = arg;

	pthread_mutex_lock(&hs->lock);
	for (;;) {
		struct hash_job job;

		while (!hs->q_nr && !hs->stop)
			pthread_cond_wait(&hs->cond, &hs->lock);
		if (!hs->q_nr)
			break;
		job = hs->q[hs->q_head];
		hs->q_head = (hs->q_head + 1) % HASH_QUEUE;
		hs->q_nr--;
		pthread_mutex_unlock(&hs->lock);
		hash_update(job.d, job.buf, job.len);
		/*
		 * Start writing the bytes back to disk now, on this thread, so
		 * the fsync before the rename has little left to do. (On the
		 * receiving thread this blocked the transfer on the disk queue.)
		 * The fd stays open while the job is pending.
		 */
		sync_file_range(job.fd, (off64_t)job.off, (off64_t)job.len, SYNC_FILE_RANGE_WRITE);
		pthread_mutex_lock(&hs->lock);
		job.d->pending--;
		if (hs->nfree < ARRAY_SIZE(hs->free_bufs))
			hs->free_bufs[hs->nfree++] = job.buf;
		else
			free(job.buf);
		pthread_cond_broadcast(&hs->cond);
	}
	pthread_mutex_unlock(&hs->lock);
	return NULL;
}

/* A WRITE_BUFFER-sized buffer: a recycled one or a new one. */
static char *hasher_buffer(struct hasher *hs)
{
	char *buf = NULL;

	pthread_mutex_lock(&hs->lock);
	if (hs->nfree)
		buf = hs->free_bufs[--hs->nfree];
	pthread_mutex_unlock(&hs->lock);
	return buf ? buf : xmalloc(WRITE_BUFFER);
}

/*
 * Hand a written buffer to the hasher (which keeps it); false when there
 * is no hasher thread and the caller must hash it itself.
 */
static bool hasher_submit(struct hasher *hs, struct dl_file *d, char *buf, size_t len)
{
	pthread_mutex_lock(&hs->lock);
	if (!hs->running && !hs->failed) {
		hs->running = !pthread_create(&hs->thread, NULL, hasher_main, hs);
		hs->failed = !hs->running;
	}
	if (hs->failed) {
		pthread_mutex_unlock(&hs->lock);
		return false;
	}
	while (hs->q_nr == HASH_QUEUE)
		pthread_cond_wait(&hs->cond, &hs->lock);
	hs->q[(hs->q_head + hs->q_nr) % HASH_QUEUE] =
	    (struct hash_job){d, buf, len, d->fd, d->written - len};
	hs->q_nr++;
	d->pending++;
	pthread_cond_broadcast(&hs->cond);
	pthread_mutex_unlock(&hs->lock);
	return true;
}

/* Wait until every buffer of d is hashed (d->sha is then ours again). */
static void hasher_wait(struct hasher *hs, struct dl_file *d)
{
	pthread_mutex_lock(&hs->lock);
	while (d->pending)
		pthread_cond_wait(&hs->cond, &hs->lock);
	pthread_mutex_unlock(&hs->lock);
}

static void hasher_stop(struct hasher *hs)
{
	pthread_mutex_lock(&hs->lock);
	hs->stop = true;
	pthread_cond_broadcast(&hs->cond);
	pthread_mutex_unlock(&hs->lock);
	if (hs->running)
		pthread_join(hs->thread, NULL);
	while (hs->nfree)
		free(hs->free_bufs[--hs->nfree]);
	pthread_cond_destroy(&hs->cond);
	pthread_mutex_destroy(&hs->lock);
}

static int fsync_parent(const char *path)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	int fd, ret = 0;

	if (slash && slash != dir)
		*slash = '\0';
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		if (fsync(fd) && errno != EINVAL)
			ret = -1;
		close(fd);
	}
	free(dir);
	return ret;
}

static void close_part(struct dl_file *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/* Empty the .part and start hashing over. */
static int restart_part(struct dl_file *d, struct gdn_err *err)
{
	hasher_wait(&d->dl->hs, d);
	if (ftruncate(d->fd, 0) || lseek(d->fd, 0, SEEK_SET) < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot truncate '%s'", d->part);
	d->pos = 0;
	d->written = 0;
	d->wlen = 0;
	d->from_disk = false;
	hash_init(d);
	return 0;
}

static bool file_verified(const struct gdn_hf_file *f, const char *path, struct gdn_err *err)
{
	struct gdn_sha256 c;
	unsigned char dig[GDN_SHA256_LEN];
	char hex[65];
	uint64_t n = 0;
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->size)
		return false;
	if (f->has_md5) {
		struct gdn_md5 m;
		unsigned char md[GDN_MD5_LEN];
		char b64[GDN_MD5_B64_SIZE];

		gdn_md5_init(&m);
		if (gdn_md5_file(path, UINT64_MAX, &m, &n, err) || n != f->size) {
			gdn_err_clear(err);
			return false;
		}
		gdn_md5_final(&m, md);
		gdn_md5_b64(md, b64);
		if (strcmp(b64, f->md5))
			return false;
	}
	if (!f->lfs)
		return true;
	gdn_sha256_init(&c);
	if (gdn_sha256_file(path, UINT64_MAX, &c, &n, err) || n != f->size) {
		gdn_err_clear(err);
		return false;
	}
	gdn_sha256_final(&c, dig);
	gdn_sha256_hex(dig, hex);
	return !strcmp(hex, f->sha256);
}

/*
 * The .part holds f->size bytes: verify, fsync, rename into place.
 * GDN_HTTP_AGAIN when resumed data was wrong and we start over once.
 */
static int finalize(struct dl_file *d, struct gdn_err *err)
{
	struct gdn_hf_file *f = d->f;

	hasher_wait(&d->dl->hs, d);
	if (f->has_md5) {
		struct gdn_md5 c = d->md5;
		unsigned char dig[GDN_MD5_LEN];
		char b64[GDN_MD5_B64_SIZE];

		gdn_md5_final(&c, dig);
		gdn_md5_b64(dig, b64);
		if (strcmp(b64, f->md5)) {
			if (d->from_disk && !d->started_over) {
				d->started_over = true;
				if (restart_part(d, err))
					return err->code;
				gdn_err_set(err, GDN_EFAILED,
					    "'%s': the resumed data did not verify; starting over",
					    f->path);
				return GDN_HTTP_AGAIN;
			}
			d->bad_data = true;
			return gdn_err_set(err, GDN_EFAILED,
					   "'%s': md5 mismatch: expected %s, got %s", f->path,
					   f->md5, b64);
		}
	}
	if (f->lfs) {
		struct gdn_sha256 c = d->sha;
		unsigned char dig[GDN_SHA256_LEN];
		char hex[65];

		gdn_sha256_final(&c, dig);
		gdn_sha256_hex(dig, hex);
		if (strcmp(hex, f->sha256)) {
			if (d->from_disk && !d->started_over) {
				d->started_over = true;
				if (restart_part(d, err))
					return err->code;
				gdn_err_set(err, GDN_EFAILED,
					    "'%s': the resumed data did not verify; starting over",
					    f->path);
				return GDN_HTTP_AGAIN;
			}
			d->bad_data = true;
			return gdn_err_set(err, GDN_EFAILED,
					   "'%s': sha256 mismatch: expected %s, got %s", f->path,
					   f->sha256, hex);
		}
	}
	if (fsync(d->fd))
		return gdn_err_errno(err, GDN_EIO, "cannot sync '%s'", d->part);
	close_part(d);
	if (rename(d->part, f->local_path))
		return gdn_err_errno(err, GDN_EIO, "cannot rename '%s' to '%s'", d->part,
				     f->local_path);
	if (fsync_parent(f->local_path))
		return gdn_err_errno(err, GDN_EIO, "cannot sync the directory of '%s'",
				     f->local_path);
	return 0;
}

/* First attempt: is the file already there? Is there a .part to resume? */
static int open_part(struct dl_file *d, struct gdn_err *err)
{
	struct gdn_hf_file *f = d->f;
	struct stat st;
	uint64_t have = 0;
	int ret;

	d->opened = true;
	d->dl->p.active++;
	hash_init(d);
	if (!d->wbuf)
		d->wbuf = hasher_buffer(&d->dl->hs);
	if (file_verified(f, f->local_path, err)) {
		d->present = true;
		return GDN_HTTP_SKIP;
	}
	ret = gdn_mkdir_parents(d->part, 0777, err);
	if (ret)
		return ret;
	d->fd = open(d->part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (d->fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open '%s'", d->part);
	if (fstat(d->fd, &st))
		return gdn_err_errno(err, GDN_EIO, "cannot stat '%s'", d->part);
	if (!S_ISREG(st.st_mode))
		return gdn_err_set(err, GDN_EIO, "'%s' is not a regular file", d->part);
	if ((uint64_t)st.st_size > f->size)
		return restart_part(d, err);
	if (st.st_size > 0 && hashed(f)) {
		if (f->lfs)
			ret = gdn_sha256_file(d->part, (uint64_t)st.st_size, &d->sha, &have, err);
		if (!ret && f->has_md5)
			ret = gdn_md5_file(d->part, (uint64_t)st.st_size, &d->md5, &have, err);
		if (ret)
			return ret;
	} else {
		have = (uint64_t)st.st_size;
	}
	/* Reserve the blocks (the size stays: it is the resume point). Best effort. */
	if (f->size > have)
		(void)fallocate(d->fd, FALLOC_FL_KEEP_SIZE, (off_t)have, (off_t)(f->size - have));
	if (lseek(d->fd, (off_t)have, SEEK_SET) < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot seek in '%s'", d->part);
	d->pos = have;
	d->written = have;
	d->from_disk = have > 0;
	f->resumed = have;
	return 0;
}

/* Write bytes at the end of the .part. */
static int write_part(struct dl_file *d, const char *data, size_t len, struct gdn_err *err)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(d->fd, data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return gdn_err_errno(err, GDN_EIO, "cannot write '%s'", d->part);
		done += (size_t)n;
	}
	d->written += len;
	return 0;
}

/* Write what is buffered; LFS files: the hasher takes the buffer, we take a fresh one. */
static int flush_part(struct dl_file *d, struct gdn_err *err)
{
	int ret = 0;

	if (!d->wlen)
		return 0;
	ret = write_part(d, d->wbuf, d->wlen, err);
	if (!ret && hashed(d->f)) {
		if (hasher_submit(&d->dl->hs, d, d->wbuf, d->wlen))
			d->wbuf = hasher_buffer(&d->dl->hs);
		else
			hash_update(d, d->wbuf, d->wlen);
	}
	d->wlen = 0;
	return ret;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Whether <path>.part is itself one of the files (its download would clobber it). */
static bool part_collides(const struct dl *dl, const char *path)
{
	char *part = xstrfmt("%s.part", path);
	const char *key = part;
	bool found = bsearch(&key, dl->sorted, dl->total, sizeof(*dl->sorted), str_cmp) != NULL;

	free(part);
	return found;
}

static int dl_prepare(struct gdn_http_req *r, struct gdn_err *err)
{
	struct dl_file *d = r->data;
	int ret;

	if (!d->opened && part_collides(d->dl, d->f->path))
		return gdn_err_set(
		    err, GDN_EFAILED,
		    "'%s': its temporary file '%s.part' is also a file of the repository",
		    d->f->path, d->f->path);
	if (!d->opened) {
		d->t0 = gdn_now_ms();
		ret = open_part(d, err);
		if (ret)
			return ret;
	} else {
		ret = flush_part(d, err);
		if (ret)
			return ret;
	}
	if (r->status == 416 && d->pos > 0) {
		ret = restart_part(d, err);
		if (ret)
			return ret;
	}
	if (d->pos == d->f->size) {
		ret = finalize(d, err);
		if (ret != GDN_HTTP_AGAIN)
			return ret ? ret : GDN_HTTP_SKIP;
	}
	r->offset = d->pos;
	return 0;
}

static int dl_body(struct gdn_http_req *r, uint64_t at, const char *data, size_t len,
		   struct gdn_err *err)
{
	struct dl_file *d = r->data;
	struct gdn_hf_file *f = d->f;
	int ret;

	if (at != d->pos) {
		if (at)
			return gdn_err_set(err, GDN_ENETWORK,
					   "'%s': unexpected data offset %" PRIu64, f->path, at);
		ret = restart_part(d, err);
		if (ret)
			return ret;
	}
	if (len > f->size - d->pos) {
		d->bad_data = true;
		return gdn_err_set(err, GDN_EFAILED,
				   "'%s': the server sent more than the listing's %" PRIu64
				   " bytes",
				   f->path, f->size);
	}
	/* libcurl hands over at most 16 KiB a call: write in bigger pieces. */
	if (d->wlen + len > WRITE_BUFFER) {
		ret = flush_part(d, err);
		if (ret)
			return ret;
	}
	if (len > WRITE_BUFFER) {
		ret = write_part(d, data, len, err);
		if (ret)
			return ret;
		if (hashed(f)) {
			hasher_wait(&d->dl->hs, d);
			hash_update(d, data, len);
		}
	} else {
		memcpy(d->wbuf + d->wlen, data, len);
		d->wlen += len;
	}
	d->pos += len;
	f->fetched += len;
	return 0;
}

static int dl_complete(struct gdn_http_req *r, struct gdn_err *err)
{
	struct dl_file *d = r->data;
	int ret = flush_part(d, err);

	if (ret)
		return ret;
	if (d->pos < d->f->size) {
		gdn_err_set(err, GDN_ENETWORK,
			    "the answer ended after %" PRIu64 " of %" PRIu64 " bytes", d->pos,
			    d->f->size);
		return GDN_HTTP_AGAIN;
	}
	return finalize(d, err);
}

static void dl_progress(void *ctx)
{
	struct dl *dl = ctx;
	uint64_t bytes = dl->done_bytes;

	/* Only the batch: files before it are in done_bytes, none after it started. */
	for (size_t i = 0; i < dl->nr; i++) {
		const struct dl_file *d = &dl->df[i];

		if (d->f->state == GDN_HF_PENDING && d->opened)
			bytes += d->pos;
	}
	dl->p.bytes_done = bytes;
	dl->p.elapsed_ms = gdn_now_ms() - dl->start;
	if (dl->o->on_progress)
		dl->o->on_progress(dl->o->ctx, &dl->p);
}

static void dl_finished(struct gdn_http_req *r)
{
	struct dl_file *d = r->data;
	struct gdn_hf_file *f = d->f;
	struct gdn_err ignored = GDN_ERR_INIT;

	if (d->fd >= 0 && !d->bad_data)
		flush_part(d, &ignored); /* keep what arrived, for a later resume */
	hasher_wait(&d->dl->hs, d);
	close_part(d);
	FREE_AND_NULL(d->wbuf);
	f->attempts = r->attempts;
	f->fetch_ms = d->t0 ? gdn_now_ms() - d->t0 : 0;
	if (d->opened)
		d->dl->p.active--;
	if ((r->result == GDN_EINTR || r->result == GDN_ETIMEOUT) && !d->opened && !r->attempts) {
		/* Stopped before it began: one summary for all of them, no event each. */
		f->state = GDN_HF_CANCELLED;
		f->result = r->result;
		return;
	}
	if (!r->result) {
		f->state = d->present ? GDN_HF_PRESENT : GDN_HF_DOWNLOADED;
		d->dl->done_bytes += f->size;
	} else {
		f->state = GDN_HF_FAILED;
		f->result = r->result;
		f->error = xstrdup(r->err.msg);
		if (d->bad_data)
			unlink(d->part);
		d->dl->p.files_failed++;
	}
	d->dl->p.files_done++;
	if (d->dl->o->on_file)
		d->dl->o->on_file(d->dl->o->ctx, f);
	dl_progress(d->dl);
}

static const struct gdn_http_hooks dl_hooks = {dl_prepare, dl_body, dl_complete, dl_finished};

/* How serious a failure is, for the overall result. */
static int severity(int code)
{
	switch (code) {
	case GDN_EINTR:
		return 6;
	case GDN_ETIMEOUT:
		return 5;
	case GDN_ENETWORK:
		return 4;
	case GDN_EFAILED:
		return 3;
	case 0:
		return 0;
	default:
		return 2;
	}
}

/*
 * Files not started because the queue stopped (code: GDN_EINTR or
 * GDN_ETIMEOUT). No message each: there may be hundreds of thousands, and
 * the caller says it once.
 */
static void cancel_rest(struct gdn_hf_files *files, size_t from, int code)
{
	for (size_t i = from; i < files->nr; i++) {
		struct gdn_hf_file *f = &files->v[i];

		if (f->state != GDN_HF_PENDING)
			continue;
		f->state = GDN_HF_CANCELLED;
		f->result = code;
	}
}

/* Set up the requests of files [from, from + n) as dl->df. */
static void batch_setup(struct dl *dl, struct gdn_hf_files *files, size_t from, size_t n,
			struct gdn_http_req **reqs)
{
	struct gdn_hf *hf = dl->hf;
	const struct gdn_hf_download_opts *o = dl->o;

	dl->nr = n;
	memset(dl->df, 0, n * sizeof(*dl->df));
	for (size_t i = 0; i < n; i++) {
		struct gdn_hf_file *f = &files->v[from + i];
		struct dl_file *d = &dl->df[i];

		d->dl = dl;
		d->f = f;
		d->fd = -1;
		d->url = (struct sbuf)SBUF_INIT;
		d->part = xstrfmt("%s.part", f->local_path);
		if (f->url)
			sbuf_adds(&d->url, f->url);
		else
			gdn_hf_resolve_url(&d->url, hf->endpoint, o->type, o->repo_id, o->revision,
					   f->path);
		d->req.resp = (struct sbuf)SBUF_INIT;
		d->req.url = d->url.buf;
		if (!f->no_auth) {
			d->req.bearer = hf->token;
			d->req.basic_user = o->basic_user;
			d->req.basic_password = o->basic_password;
		}
		d->req.follow_redirects = true;
		d->req.hooks = &dl_hooks;
		d->req.data = d;
		reqs[i] = &d->req;
	}
}

static void batch_release(struct dl *dl)
{
	for (size_t i = 0; i < dl->nr; i++) {
		close_part(&dl->df[i]);
		free(dl->df[i].part);
		sbuf_release(&dl->df[i].url);
		gdn_http_req_release(&dl->df[i].req);
	}
	dl->nr = 0;
}

int gdn_hf_download(struct gdn_hf *hf, struct gdn_hf_files *files,
		    const struct gdn_hf_download_opts *o, struct gdn_err *err)
{
	struct dl dl = {0};
	struct gdn_http_req **reqs = NULL;
	struct gdn_err ignored = GDN_ERR_INIT;
	size_t batch = (size_t)(o->jobs > 0 ? o->jobs : 1) * 16;
	int ret = 0, worst = 0;

	if (batch < BATCH_MIN)
		batch = BATCH_MIN;
	dl.hf = hf;
	dl.o = o;
	dl.total = files->nr;
	dl.df = xcalloc(batch, sizeof(*dl.df));
	reqs = xcalloc(batch, sizeof(*reqs));
	dl.sorted = xcalloc(files->nr ? files->nr : 1, sizeof(*dl.sorted));
	dl.start = gdn_now_ms();
	dl.p.files_total = files->nr;
	pthread_mutex_init(&dl.hs.lock, NULL);
	pthread_cond_init(&dl.hs.cond, NULL);
	for (size_t i = 0; i < files->nr; i++) {
		struct gdn_hf_file *f = &files->v[i];

		f->state = GDN_HF_PENDING;
		free(f->local_path);
		f->local_path = xstrfmt("%s/%s", o->output_dir, f->path);
		dl.p.bytes_total += f->size;
		dl.sorted[i] = f->path;
	}
	if (files->nr > 1)
		qsort(dl.sorted, files->nr, sizeof(*dl.sorted), str_cmp);
	gdn_http_set_tick(hf->http, dl_progress, &dl);
	for (size_t from = 0; from < files->nr; from += batch) {
		size_t n = files->nr - from < batch ? files->nr - from : batch;
		int stop = 0;

		if (gdn_proc_interrupted()) {
			cancel_rest(files, from, GDN_EINTR);
			break;
		}
		batch_setup(&dl, files, from, n, reqs);
		gdn_http_run(hf->http, reqs, n, o->jobs, &ignored);
		for (size_t i = 0; i < n; i++) {
			int r = files->v[from + i].result;

			if (r == GDN_EINTR || (r == GDN_ETIMEOUT && !stop))
				stop = r;
		}
		batch_release(&dl);
		if (stop) {
			cancel_rest(files, from + n, stop);
			break;
		}
	}
	gdn_http_set_tick(hf->http, NULL, NULL);
	dl.nr = 0;
	dl_progress(&dl);
	hasher_stop(&dl.hs);
	for (size_t i = 0; i < files->nr; i++) {
		struct gdn_hf_file *f = &files->v[i];
		int code =
		    f->state == GDN_HF_FAILED || f->state == GDN_HF_CANCELLED ? f->result : 0;

		if (severity(code) > severity(worst)) {
			worst = code;
			if (f->error)
				ret = gdn_err_set(err, code, "%s", f->error);
			else if (f->state == GDN_HF_CANCELLED)
				ret = gdn_err_set(err, code, "'%s': not started: %s", f->path,
						  code == GDN_EINTR ? "interrupted"
								    : "the deadline passed");
			else
				ret = gdn_err_set(err, code, "download failed");
		}
	}
	free(reqs);
	free(dl.sorted);
	free(dl.df);
	return ret;
}
