/*
 * W&B artifacts through the GraphQL API: a run's outputArtifacts (every
 * page), an artifact by name, its files connection (every page: name and
 * directUrl) and its manifest (each file's md5 digest, base64, and size).
 * The API key goes with GraphQL requests and with file URLs on the API's
 * own host only: a signed URL elsewhere gets no credential at all.
 */
#include "gdnctl/compat.h"
#include <curl/curl.h>
#include "gdnctl/err.h"
#include "gdnctl/hf.h"
#include "gdnctl/http.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/json.h"
#include "gdnctl/md5.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/wandb.h"
#include "gdnctl/wandb_artifact.h"
#include "gdnctl/xalloc.h"

#define PAGE	      100
#define MAX_PAGES     10000
#define MANIFEST_MAX  ((size_t)256 << 20)
#define DEFAULT_ALIAS "latest"

#define ARTIFACT_FIELDS                                                                       \
	"id versionIndex updatedAt createdAt artifactType { name } artifactSequence { name }" \
	" aliases { alias } currentManifest { file { directUrl } }"

static const char run_artifacts_query[] =
    "query RunOutputArtifacts($entity: String!, $project: String!, $name: String!,"
    " $cursor: String, $per: Int!) {"
    " project(name: $project, entityName: $entity) { run(name: $name) {"
    " outputArtifacts(first: $per, after: $cursor) {"
    " edges { node { " ARTIFACT_FIELDS " } } pageInfo { hasNextPage endCursor } } } } }";

static const char artifact_query[] =
    "query ArtifactByName($entity: String!, $project: String!, $name: String!) {"
    " project(name: $project, entityName: $entity) {"
    " artifact(name: $name) { " ARTIFACT_FIELDS " } } }";

static const char files_query[] =
    "query ArtifactFiles($id: ID!, $cursor: String, $per: Int!) {"
    " artifact(id: $id) { files(first: $per, after: $cursor) {"
    " edges { node { name directUrl sizeBytes md5 } } pageInfo { hasNextPage endCursor } } } }";

void gdn_wandb_artifact_release(struct gdn_wandb_artifact *a)
{
	free(a->id);
	free(a->name);
	free(a->version);
	free(a->type);
	free(a->updated_at);
	free(a->manifest_url);
	strvec_clear(&a->aliases);
	memset(a, 0, sizeof(*a));
	strvec_init(&a->aliases);
}

/* A JSON string without embedded NUL; NULL otherwise. */
static const char *text(const json_t *v)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

/*
 * A count >= 0: an integer, or an integral real (GraphQL answers are read
 * with integers as reals, see gdn_graphql_parse).
 */
static bool count_value(const json_t *v, uint64_t *out)
{
	double d;

	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return true;
	}
	if (!json_is_real(v))
		return false;
	d = json_real_value(v);
	if (!(d >= 0 && d < 9.007199254740992e15 && d == floor(d)))
		return false;
	*out = (uint64_t)d;
	return true;
}

static char *dup_text(const json_t *v)
{
	const char *s = text(v);

	return s ? xstrdup(s) : NULL;
}

static bool has_alias(const json_t *node, const char *alias)
{
	size_t i;
	json_t *a; /* borrowed */

	json_array_foreach(json_object_get(node, "aliases"), i, a)
	{
		const char *s = text(json_object_get(a, "alias"));

		if (s && !strcmp(s, alias))
			return true;
	}
	return false;
}

static void fill(const json_t *node, struct gdn_wandb_artifact *out)
{
	uint64_t vi;
	size_t i;
	json_t *a; /* borrowed */

	gdn_wandb_artifact_release(out);
	out->id = dup_text(json_object_get(node, "id"));
	out->name = dup_text(json_object_get(json_object_get(node, "artifactSequence"), "name"));
	out->type = dup_text(json_object_get(json_object_get(node, "artifactType"), "name"));
	out->updated_at = dup_text(json_object_get(node, "updatedAt"));
	if (!out->updated_at)
		out->updated_at = dup_text(json_object_get(node, "createdAt"));
	out->manifest_url = dup_text(json_object_get(
	    json_object_get(json_object_get(node, "currentManifest"), "file"), "directUrl"));
	if (count_value(json_object_get(node, "versionIndex"), &vi))
		out->version = xstrfmt("v%" PRIu64, vi);
	json_array_foreach(json_object_get(node, "aliases"), i, a)
	{
		const char *s = text(json_object_get(a, "alias"));

		if (s)
			strvec_push(&out->aliases, s);
	}
}

int gdn_wandb_pick_artifact(const json_t *nodes, const char *type, const char *alias,
			    struct gdn_wandb_artifact *out, struct gdn_err *err)
{
	const json_t *best = NULL, *aliased = NULL; /* borrowed */
	const char *best_at = "";
	size_t i;
	json_t *n; /* borrowed */

	if (!json_is_array(nodes))
		return gdn_err_set(err, GDN_EPARSE, "the artifact list is not a list");
	if (!alias || !*alias)
		alias = DEFAULT_ALIAS;
	json_array_foreach(nodes, i, n)
	{
		const char *t, *at;

		if (!json_is_object(n) || !text(json_object_get(n, "id")))
			return gdn_err_set(err, GDN_EPARSE, "artifact %zu has no 'id'", i);
		t = text(json_object_get(json_object_get(n, "artifactType"), "name"));
		if (type && (!t || strcmp(t, type)))
			continue;
		if (!aliased && has_alias(n, alias))
			aliased = n;
		at = text(json_object_get(n, "updatedAt"));
		if (!at)
			at = text(json_object_get(n, "createdAt"));
		if (!at)
			at = "";
		/* ISO 8601 in one time zone sorts as text; ties: the later in the list. */
		if (!best || strcmp(at, best_at) >= 0) {
			best = n;
			best_at = at;
		}
	}
	if (!best)
		return 0;
	fill(aliased ? aliased : best, out);
	return 1;
}

int gdn_wandb_parse_manifest(const char *json, size_t len, struct gdn_hf_files *out,
			     struct gdn_err *err)
{
	json_error_t jerr;
	json_t *doc = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr); /* new */
	json_t *contents, *e;						    /* borrowed */
	const char *path;
	size_t before = out->nr;
	int ret = 0;

	if (!doc) {
		char *q = gdn_one_line(jerr.text, 200);

		ret = gdn_err_set(err, GDN_EPARSE, "invalid artifact manifest: %s at byte %d", q,
				  jerr.position);
		free(q);
		goto out;
	}
	contents = json_object_get(doc, "contents");
	if (!json_is_object(contents)) {
		ret = gdn_err_set(err, GDN_EPARSE, "invalid artifact manifest: no 'contents'");
		goto out;
	}
	json_object_foreach(contents, path, e)
	{
		struct gdn_hf_file f = {0};
		const char *digest = text(json_object_get(e, "digest"));
		uint64_t size;
		char *q;

		if (!*path || strlen(path) > 4096 || !digest || !gdn_md5_b64_valid(digest) ||
		    !count_value(json_object_get(e, "size"), &size)) {
			q = gdn_one_line(path, 200);
			ret = gdn_err_set(
			    err, GDN_EPARSE,
			    "artifact manifest entry '%s' has no valid digest and size", q);
			free(q);
			goto out;
		}
		f.path = xstrdup(path);
		f.size = size;
		memcpy(f.md5, digest, GDN_MD5_B64_SIZE);
		f.has_md5 = true;
		ALLOC_GROW(out->v, out->nr + 1, out->alloc);
		out->v[out->nr++] = f;
	}
out:
	if (ret) {
		while (out->nr > before) {
			struct gdn_hf_file *f = &out->v[--out->nr];

			free(f->path);
			free(f->url);
		}
	}
	json_decref(doc);
	return ret;
}

static bool ref_part_ok(const char *s, size_t len)
{
	if (!len)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f || s[i] == '/')
			return false;
	return true;
}

int gdn_wandb_parse_artifact_ref(const char *ref, char **entity, char **project, char **name,
				 char **alias, struct gdn_err *err)
{
	const char *s1 = strchr(ref, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	const char *colon = s2 ? strrchr(s2 + 1, ':') : NULL;
	const char *nend = colon ? colon : ref + strlen(ref);

	*entity = *project = *name = *alias = NULL;
	if (!s1 || !s2 || !ref_part_ok(ref, (size_t)(s1 - ref)) ||
	    !ref_part_ok(s1 + 1, (size_t)(s2 - s1 - 1)) ||
	    !ref_part_ok(s2 + 1, (size_t)(nend - s2 - 1)) ||
	    (colon && !ref_part_ok(colon + 1, strlen(colon + 1)))) {
		char *q = gdn_one_line(ref, 200);
		int ret =
		    gdn_err_set(err, GDN_EUSAGE,
				"'%s' is not an artifact reference ENTITY/PROJECT/NAME:ALIAS", q);

		free(q);
		return ret;
	}
	*entity = xstrndup(ref, (size_t)(s1 - ref));
	*project = xstrndup(s1 + 1, (size_t)(s2 - s1 - 1));
	*name = xstrndup(s2 + 1, (size_t)(nend - s2 - 1));
	*alias = colon ? xstrdup(colon + 1) : NULL;
	return 0;
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

int gdn_wandb_run_artifact(struct gdn_wandb *c, const char *entity, const char *project,
			   const char *run, const char *type, const char *alias,
			   struct gdn_wandb_artifact *out, struct gdn_err *err)
{
	json_t *all = json_array(); /* new */
	char *cursor = NULL;
	int ret = 0, pages = 0;

	for (;;) {
		json_t *data = NULL, *conn, *e, *info; /* new, borrowed... */
		json_t *vars = json_pack("{s:s, s:s, s:s, s:i}", "entity", entity, "project",
					 project, "name", run, "per", PAGE);
		json_t *proj, *r;
		size_t i;

		json_object_set_new(vars, "cursor", cursor ? json_string(cursor) : json_null());
		ret = gdn_wandb_graphql(c, run_artifacts_query, vars, &data, err);
		if (ret)
			goto out;
		proj = json_object_get(data, "project");
		r = json_object_get(proj, "run");
		if (!json_is_object(proj) || !json_is_object(r)) {
			ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B run '%s/%s/%s'", entity,
					  project, run);
			json_decref(data);
			goto out;
		}
		conn = json_object_get(r, "outputArtifacts");
		json_array_foreach(json_object_get(conn, "edges"), i, e)
		    json_array_append(all, json_object_get(e, "node"));
		info = json_object_get(conn, "pageInfo");
		free(cursor);
		cursor = dup_text(json_object_get(info, "endCursor"));
		pages++;
		if (!json_is_true(json_object_get(info, "hasNextPage")) || !cursor ||
		    pages >= MAX_PAGES) {
			json_decref(data);
			break;
		}
		json_decref(data);
	}
	ret = gdn_wandb_pick_artifact(all, type, alias, out, err);
	if (ret == 0)
		ret = gdn_err_set(err, GDN_ENOTFOUND,
				  "W&B run '%s/%s/%s' logged no artifact of type '%s' (%zu "
				  "artifact%s of other types)",
				  entity, project, run, type ? type : "any", json_array_size(all),
				  json_array_size(all) == 1 ? "" : "s");
	else if (ret > 0)
		ret = 0;
out:
	free(cursor);
	json_decref(all);
	return ret;
}

int gdn_wandb_artifact_by_name(struct gdn_wandb *c, const char *entity, const char *project,
			       const char *name_alias, struct gdn_wandb_artifact *out,
			       struct gdn_err *err)
{
	json_t *data = NULL, *art; /* new, borrowed */
	int ret;

	ret = gdn_wandb_graphql(
	    c, artifact_query,
	    json_pack("{s:s, s:s, s:s}", "entity", entity, "project", project, "name", name_alias),
	    &data, err);
	if (ret)
		goto out;
	art = json_object_get(json_object_get(data, "project"), "artifact");
	if (!json_is_object(art) || !text(json_object_get(art, "id"))) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no W&B artifact '%s/%s/%s'", entity, project,
				  name_alias);
		goto out;
	}
	fill(art, out);
out:
	json_decref(data);
	return ret;
}

/* GET a small JSON document (the manifest); credentials only on the API's host. */
static int get_json(struct gdn_wandb *c, const char *url, struct sbuf *out, struct gdn_err *err)
{
	struct gdn_http_req req = {0};
	struct gdn_http_req *reqs[1] = {&req};
	int ret;

	req.resp = (struct sbuf)SBUF_INIT;
	req.url = url;
	req.follow_redirects = true;
	req.body_max = MANIFEST_MAX;
	if (same_origin(url, c->base_url) && c->api_key) {
		req.basic_user = "api";
		req.basic_password = c->api_key;
	}
	ret = gdn_http_run(c->http, reqs, 1, 1, err);
	if (!ret)
		sbuf_add(out, req.resp.buf, req.resp.len);
	gdn_http_req_release(&req);
	return ret;
}

static int path_cmp(const void *a, const void *b)
{
	return strcmp(((const struct gdn_hf_file *)a)->path, ((const struct gdn_hf_file *)b)->path);
}

int gdn_wandb_artifact_files(struct gdn_wandb *c, const struct gdn_wandb_artifact *a,
			     struct gdn_hf_files *out, struct gdn_err *err)
{
	struct gdn_hf_files manifest = {0};
	struct sbuf body = SBUF_INIT;
	char *cursor = NULL;
	int ret = 0;

	if (a->manifest_url) {
		ret = get_json(c, a->manifest_url, &body, err);
		if (!ret)
			ret = gdn_wandb_parse_manifest(body.buf, body.len, &manifest, err);
		if (ret) {
			gdn_err_prefix(err, "the manifest of artifact '%s'",
				       a->name ? a->name : a->id);
			goto out;
		}
		if (manifest.nr > 1)
			qsort(manifest.v, manifest.nr, sizeof(*manifest.v), path_cmp);
	}
	for (;;) {
		json_t *data = NULL, *conn, *e, *info; /* new, borrowed */
		json_t *vars = json_pack("{s:s, s:i}", "id", a->id, "per", PAGE);
		size_t i;
		bool more;

		json_object_set_new(vars, "cursor", cursor ? json_string(cursor) : json_null());
		ret = gdn_wandb_graphql(c, files_query, vars, &data, err);
		if (ret)
			goto out;
		conn = json_object_get(json_object_get(data, "artifact"), "files");
		if (!json_is_object(conn)) {
			json_decref(data);
			ret = gdn_err_set(err, GDN_ENOTFOUND, "artifact '%s' has no file list",
					  a->name ? a->name : a->id);
			goto out;
		}
		json_array_foreach(json_object_get(conn, "edges"), i, e)
		{
			const json_t *node = json_object_get(e, "node"); /* borrowed */
			const char *name = text(json_object_get(node, "name"));
			const char *url = text(json_object_get(node, "directUrl"));
			const char *md5 = text(json_object_get(node, "md5"));
			uint64_t size;
			struct gdn_hf_file f = {0}, key = {0}, *m = NULL;

			if (!name || !*name || !url ||
			    (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))) {
				ret =
				    gdn_err_set(err, GDN_EPARSE,
						"artifact '%s': file %zu has no name or directUrl",
						a->name ? a->name : a->id, out->nr);
				json_decref(data);
				goto out;
			}
			key.path = (char *)name;
			if (manifest.nr)
				m = bsearch(&key, manifest.v, manifest.nr, sizeof(*manifest.v),
					    path_cmp);
			if (m) {
				f.size = m->size;
				memcpy(f.md5, m->md5, GDN_MD5_B64_SIZE);
				f.has_md5 = true;
			} else if (count_value(json_object_get(node, "sizeBytes"), &size)) {
				f.size = size;
				if (md5 && gdn_md5_b64_valid(md5)) {
					memcpy(f.md5, md5, GDN_MD5_B64_SIZE);
					f.has_md5 = true;
				}
			} else {
				ret = gdn_err_set(
				    err, GDN_EPARSE,
				    "artifact '%s': '%s' is neither in the manifest nor "
				    "sized",
				    a->name ? a->name : a->id, name);
				json_decref(data);
				goto out;
			}
			f.path = xstrdup(name);
			f.url = xstrdup(url);
			f.no_auth = !same_origin(url, c->base_url);
			ALLOC_GROW(out->v, out->nr + 1, out->alloc);
			out->v[out->nr++] = f;
		}
		info = json_object_get(conn, "pageInfo");
		free(cursor);
		cursor = dup_text(json_object_get(info, "endCursor"));
		out->pages++;
		more = json_is_true(json_object_get(info, "hasNextPage"));
		json_decref(data);
		if (!more || !cursor || out->pages >= MAX_PAGES)
			break;
	}
out:
	free(cursor);
	sbuf_release(&body);
	gdn_hf_files_release(&manifest);
	return ret;
}
