/*
 * Fuzz the hub clients' parsers with every input: the HF tree listing
 * page, Link and Retry-After header values, URL hosts and repository
 * path checks, .netrc, W&B run references, step windows, GraphQL
 * answers, summaryMetrics and sampledHistory rows, GCS listing pages
 * and gs:// URIs, W&B artifact lists, manifests and references, and the
 * source spellings of download-trace. Inputs must never
 * crash or leak, errors are one non-empty line, and what the parsers
 * return must hold together (selected paths are safe, links are
 * non-empty, aggregates of OK metrics are finite).
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gcs.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/md5.h"
#include "gdnctl/source.h"
#include "gdnctl/hf.h"
#include "gdnctl/wandb.h"
#include "gdnctl/wandb_artifact.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(int ret, const struct gdn_err *err, const char *what)
{
	if (ret && (!err->msg[0] || strchr(err->msg, '\n')))
		BUG("%s: errors are one non-empty line: '%s'", what, err->msg);
}

static void check_metrics(const struct gdn_metric_set *s)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->v[i].status == GDN_METRIC_OK && !isfinite(s->v[i].value))
			BUG("metric '%s' is OK but not finite", s->v[i].key);
}

static void tree(const char *text, size_t len)
{
	struct gdn_hf_files f = {0};
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec unsafe = STRVEC_INIT;
	struct gdn_hf_select sel = {"profiles", NULL, 3};
	int ret = gdn_hf_parse_tree(text, len, &f, &err);

	check_err(ret, &err, "tree");
	if (ret && f.nr)
		BUG("a failed page added %zu files", f.nr);
	gdn_hf_select_files(&f, &sel, &unsafe);
	for (size_t i = 0; i < f.nr; i++) {
		if (!gdn_hf_path_safe(f.v[i].path))
			BUG("selected an unsafe path '%s'", f.v[i].path);
		if (f.v[i].lfs && strlen(f.v[i].sha256) != 64)
			BUG("bad sha256 for '%s'", f.v[i].path);
	}
	if (f.nr > 3)
		BUG("limit not applied");
	gdn_hf_files_release(&f);
	strvec_clear(&unsafe);
}

static void headers(const char *s)
{
	char *next = gdn_link_next(s), *host = gdn_url_host(s);
	struct sbuf sb = SBUF_INIT;

	if (next && !*next)
		BUG("empty next link");
	(void)gdn_retry_after_ms(s, 784111777);
	(void)gdn_hf_path_safe(s);
	gdn_url_encode(&sb, s, true);
	for (size_t i = 0; i < sb.len; i++)
		if (!isalnum((unsigned char)sb.buf[i]) && !strchr("-._~/%", sb.buf[i]))
			BUG("unencoded byte 0x%02x", (unsigned char)sb.buf[i]);
	free(next);
	free(host);
	sbuf_release(&sb);
}

static void netrc(const char *text, size_t len)
{
	char *login = NULL, *password = NULL;

	if (gdn_netrc_lookup(text, len, "api.wandb.ai", &login, &password) == 0 &&
	    (login || password))
		BUG("netrc: values without an entry");
	free(login);
	free(password);
}

static void wandb(const char *s, size_t len)
{
	static const char *const keys[] = {"throughput/mfu", "throughput/duration", NULL};
	struct gdn_history_window w = {10, 18, GDN_AGG_MEDIAN, 2, 0};
	struct gdn_metric_set set = {0};
	struct gdn_err err = GDN_ERR_INIT;
	char *e = NULL, *p = NULL, *r = NULL;
	json_t *data = NULL;
	int ret;

	ret = gdn_graphql_parse(s, len, &data, &err);
	check_err(ret, &err, "graphql");
	json_decref(data);
	ret = gdn_wandb_summary_from_json(s, keys, &set, &err);
	check_err(ret, &err, "summary");
	check_metrics(&set);
	gdn_metric_set_release(&set);
	ret = gdn_wandb_history_from_json(s, keys, &w, &set, &err);
	check_err(ret, &err, "history");
	check_metrics(&set);
	gdn_metric_set_release(&set);
	w.agg = GDN_AGG_MEAN;
	ret = gdn_wandb_history_from_json(s, keys, &w, &set, &err);
	check_metrics(&set);
	gdn_metric_set_release(&set);
	ret = gdn_wandb_parse_run_ref(s, &e, &p, &r, &err);
	check_err(ret, &err, "run ref");
	if (!ret && (!*e || !*p || !*r))
		BUG("empty run reference part");
	free(e);
	free(p);
	free(r);
	ret = gdn_history_parse_steps(s, &w, &err);
	check_err(ret, &err, "steps");
	if (!ret && w.step_min > w.step_max)
		BUG("step window backwards");
}

static void check_files(const struct gdn_hf_files *f, const char *what)
{
	for (size_t i = 0; i < f->nr; i++) {
		if (!f->v[i].path || !*f->v[i].path)
			BUG("%s: a file without a path", what);
		if (f->v[i].has_md5 && !gdn_md5_b64_valid(f->v[i].md5))
			BUG("%s: a malformed md5 '%s'", what, f->v[i].md5);
	}
}

static void gcs(const char *text, size_t len, const char *s)
{
	struct gdn_hf_files f = {0};
	struct gdn_err err = GDN_ERR_INIT;
	char *next = NULL, *bucket = NULL, *prefix = NULL;
	int ret = gdn_gcs_parse_list(text, len, "http://127.0.0.1:1", "b", &f, &next, &err);

	check_err(ret, &err, "gcs listing");
	if (ret && (f.nr || next))
		BUG("a failed GCS page added %zu objects", f.nr);
	check_files(&f, "gcs listing");
	for (size_t i = 0; i < f.nr; i++)
		if (!f.v[i].url || strncmp(f.v[i].url, "http://127.0.0.1:1/download/", 28))
			BUG("object '%s' has no media URL", f.v[i].path);
	if (next && !*next)
		BUG("an empty page token");
	gdn_hf_files_release(&f);
	free(next);
	ret = gdn_gcs_parse_uri(s, &bucket, &prefix, &err);
	check_err(ret, &err, "gs uri");
	if (!ret && (!*bucket || !prefix || strchr(bucket, '/')))
		BUG("bad bucket from '%s'", s);
	free(bucket);
	free(prefix);
}

static void artifacts(const char *text, size_t len, const char *s)
{
	struct gdn_hf_files f = {0};
	struct gdn_wandb_artifact a = {0};
	struct gdn_err err = GDN_ERR_INIT;
	char *e = NULL, *p = NULL, *n = NULL, *al = NULL;
	json_t *doc = json_loadb(text, len, 0, NULL); /* new */
	int ret;

	ret = gdn_wandb_parse_manifest(text, len, &f, &err);
	check_err(ret, &err, "manifest");
	if (ret && f.nr)
		BUG("a failed manifest added %zu files", f.nr);
	check_files(&f, "manifest");
	gdn_hf_files_release(&f);
	ret = gdn_wandb_pick_artifact(doc, "jax_profile", NULL, &a, &err);
	if (ret < 0)
		check_err(ret, &err, "artifacts");
	if (ret == 1 && (!a.id || strcmp(a.type ? a.type : "", "jax_profile")))
		BUG("picked an artifact without id or of another type");
	gdn_wandb_artifact_release(&a);
	json_decref(doc);
	ret = gdn_wandb_parse_artifact_ref(s, &e, &p, &n, &al, &err);
	check_err(ret, &err, "artifact ref");
	if (!ret && (!*e || !*p || !*n || (al && !*al)))
		BUG("an empty artifact reference part");
	free(e);
	free(p);
	free(n);
	free(al);
}

static void spellings(const char *s)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *repo = NULL, *path = NULL, *e = NULL, *p = NULL, *r = NULL, *al = NULL;
	int ret = gdn_source_parse_hf(s, &repo, &path, &err);

	check_err(ret, &err, "hf spelling");
	if (!ret && (!strchr(repo, '/') || (path && !*path)))
		BUG("bad hf repository from '%s'", s);
	free(repo);
	free(path);
	ret = gdn_source_parse_wandb_run(s, "ent", "proj", &e, &p, &r, &al, &err);
	check_err(ret, &err, "wandb spelling");
	if (!ret && (!*e || !*p || !*r))
		BUG("an empty run part from '%s'", s);
	free(e);
	free(p);
	free(r);
	free(al);
	(void)gdn_source_is_wandb_run(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xstrndup((const char *)data, size); /* NUL-terminated; stops at a NUL */

	tree((const char *)data, size);
	headers(s);
	netrc((const char *)data, size);
	wandb(s, strlen(s));
	gcs((const char *)data, size, s);
	artifacts((const char *)data, size, s);
	spellings(s);
	free(s);
	return 0;
}
