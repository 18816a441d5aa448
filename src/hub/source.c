/*
 * The HTTP trace sources: each one lists (hf.c, gcs.c, wandb_artifact.c),
 * then one path selects the files (pattern, limit, safe paths) and hands
 * them to hf.c's download engine, so every source gets the same
 * guarantees. Nothing here prints: the caller's callbacks hear of each
 * file and of the progress.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gcs.h"
#include "gdnctl/hf.h"
#include "gdnctl/http.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/source.h"
#include "gdnctl/strvec.h"
#include "gdnctl/wandb.h"
#include "gdnctl/wandb_artifact.h"
#include "gdnctl/xalloc.h"

#define GCLOUD_TIMEOUT_MS 30000

void gdn_fetch_result_init(struct gdn_fetch_result *r)
{
	memset(r, 0, sizeof(*r));
	strvec_init(&r->unsafe);
	strvec_init(&r->local_paths);
}

void gdn_fetch_result_release(struct gdn_fetch_result *r)
{
	free(r->source);
	free(r->endpoint);
	free(r->resolved);
	free(r->auth_source);
	free(r->pattern);
	free(r->dest_dir);
	gdn_hf_files_release(&r->files);
	strvec_clear(&r->unsafe);
	strvec_clear(&r->local_paths);
	gdn_fetch_result_init(r);
}

char *gdn_fetch_pattern(const struct gdn_fetch_opts *o)
{
	const char *p = o->pattern ? o->pattern : GDN_HF_DEFAULT_PATTERN;

	if (o->include_xplane)
		return xstrfmt("(%s)|(%s)", p, GDN_HF_XPLANE_PATTERN);
	return xstrdup(p);
}

bool gdn_source_is_hf(const char *spec)
{
	return !strncmp(spec, "hf:", 3);
}

bool gdn_source_is_gcs(const char *spec)
{
	return !strncmp(spec, "gs://", 5);
}

bool gdn_source_is_wandb_artifact(const char *spec)
{
	return !strncmp(spec, "wandb-artifact:", 15);
}

bool gdn_source_is_wandb_run(const char *spec)
{
	if (!strncmp(spec, "wandb:", 6))
		return true;
	return (!strncmp(spec, "https://", 8) || !strncmp(spec, "http://", 7)) &&
	       strstr(spec, "/runs/");
}

int gdn_source_parse_hf(const char *spec, char **repo_id, char **path, struct gdn_err *err)
{
	const char *s = spec + (gdn_source_is_hf(spec) ? 3 : 0);
	const char *s1 = strchr(s, '/'), *s2 = s1 ? strchr(s1 + 1, '/') : NULL;
	size_t rlen = s2 ? (size_t)(s2 - s) : strlen(s);

	char *q = NULL;
	int ret = 0;

	*repo_id = *path = NULL;
	if (!s1 || s1 == s || s1[1] == '/' || !s1[1] || rlen <= (size_t)(s1 - s) + 1) {
		q = gdn_one_line(spec, 200);
		ret = gdn_err_set(err, GDN_EUSAGE, "'%s' is not hf:ORG/REPO[/PATH]", q);
		free(q);
		return ret;
	}
	for (size_t i = 0; i < rlen; i++) {
		if (!isalnum((unsigned char)s[i]) && !strchr("-_./", s[i])) {
			q = gdn_one_line(spec, 200);
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "'%s': a repository name has only letters, digits, "
					  "'-', '_' and '.'",
					  q);
			free(q);
			return ret;
		}
	}
	*repo_id = xstrndup(s, rlen);
	if (s2 && s2[1])
		*path = xstrdup(s2 + 1);
	return 0;
}

int gdn_source_parse_wandb_run(const char *spec, const char *entity, const char *project, char **e,
			       char **p, char **r, char **alias, struct gdn_err *err)
{
	const char *s = spec;
	char *ref = NULL, *at;
	int ret;

	*e = *p = *r = *alias = NULL;
	if (!strncmp(s, "wandb:", 6))
		s += 6;
	ref = xstrdup(s);
	/* "@ALIAS" after the run id (not in a URL's user part: no '@' before the path there). */
	at = strrchr(ref, '@');
	if (at && !strchr(at, '/')) {
		*at = '\0';
		if (at[1])
			*alias = xstrdup(at + 1);
	}
	if (*ref && !strchr(ref, '/') && entity && *entity && project && *project) {
		char *full = xstrfmt("%s/%s/%s", entity, project, ref);

		free(ref);
		ref = full;
	}
	ret = gdn_wandb_parse_run_ref(ref, e, p, r, err);
	if (ret) {
		char *q = gdn_one_line(spec, 200);

		FREE_AND_NULL(*alias);
		gdn_err_prefix(err, "'%s'", q);
		free(q);
	}
	free(ref);
	return ret;
}

/* Select, then download (unless a dry run); fills res->files and local_paths. */
static int select_and_download(struct gdn_hf *client, struct gdn_hf_files *listed,
			       const char *dest_dir, const struct gdn_fetch_opts *o,
			       const char *basic_user, const char *basic_password,
			       struct gdn_fetch_result *res, struct gdn_err *err)
{
	struct gdn_hf_download_opts d = {0};
	struct gdn_hf_select sel = {0};
	regex_t re;
	int rc, ret = 0;

	res->pattern = gdn_fetch_pattern(o);
	res->dest_dir = xstrdup(dest_dir);
	rc = regcomp(&re, res->pattern, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char msg[256];

		regerror(rc, &re, msg, sizeof(msg));
		return gdn_err_set(err, GDN_EUSAGE, "invalid pattern '%s': %s", res->pattern, msg);
	}
	res->listed = listed->nr;
	sel.regex = &re;
	sel.limit = o->limit;
	gdn_hf_select_files(listed, &sel, &res->unsafe);
	regfree(&re);
	gdn_hf_files_release(&res->files);
	res->files = *listed;
	memset(listed, 0, sizeof(*listed));
	for (size_t i = 0; i < res->files.nr; i++) {
		free(res->files.v[i].local_path);
		res->files.v[i].local_path = xstrfmt("%s/%s", dest_dir, res->files.v[i].path);
	}
	if (o->on_listed)
		o->on_listed(o->ctx, res);
	if (o->dry_run || !res->files.nr)
		return 0;
	d.output_dir = dest_dir;
	d.jobs = o->jobs > 0 ? o->jobs : 1;
	d.on_file = o->on_file;
	d.on_progress = o->on_progress;
	d.ctx = o->ctx;
	d.basic_user = basic_user;
	d.basic_password = basic_password;
	d.repo_id = "";
	d.revision = "main";
	ret = gdn_hf_download(client, &res->files, &d, err);
	for (size_t i = 0; i < res->files.nr; i++)
		if (res->files.v[i].state == GDN_HF_DOWNLOADED ||
		    res->files.v[i].state == GDN_HF_PRESENT)
			strvec_push(&res->local_paths, res->files.v[i].local_path);
	return ret;
}

int gdn_source_fetch_hf(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
			struct gdn_fetch_result *res, struct gdn_err *err)
{
	struct gdn_hf hf = {0};
	struct gdn_hf_files files = {0};
	char *repo = NULL, *path = NULL, *token = NULL, *token_src = NULL;
	const char *rev = o->hf_revision ? o->hf_revision : "main";
	int ret;

	res->kind = "hf";
	res->source = xstrdup(spec);
	ret = gdn_source_parse_hf(spec, &repo, &path, err);
	if (!ret)
		ret = gdn_hf_find_token(o->hf_token, &token, &token_src, err);
	if (!ret)
		ret = gdn_hf_init(&hf, NULL, token, &o->http, err);
	if (ret)
		goto out;
	res->endpoint = xstrdup(hf.endpoint);
	res->auth_source = token_src;
	token_src = NULL;
	ret = gdn_hf_list(&hf, (enum gdn_hf_repo_type)o->hf_repo_type, repo, rev, &files, err);
	if (ret)
		goto out;
	if (path) {
		/* Keep what is under PATH. */
		struct gdn_hf_select sel = {path, NULL, 0};

		gdn_hf_select_files(&files, &sel, NULL);
	}
	/* The hub's resolve URLs, filled here: the engine then needs no repository. */
	for (size_t i = 0; i < files.nr; i++) {
		struct sbuf u = SBUF_INIT;

		gdn_hf_resolve_url(&u, hf.endpoint, (enum gdn_hf_repo_type)o->hf_repo_type, repo,
				   rev, files.v[i].path);
		files.v[i].url = sbuf_detach(&u, NULL);
	}
	ret = select_and_download(&hf, &files, dest_dir, o, NULL, NULL, res, err);
out:
	gdn_hf_files_release(&files);
	gdn_hf_release(&hf);
	free(repo);
	free(path);
	free(token);
	free(token_src);
	return ret;
}

int gdn_source_fetch_gcs(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
			 struct gdn_fetch_result *res, struct gdn_err *err)
{
	struct gdn_hf client = {0};
	struct gdn_hf_files files = {0};
	char *bucket = NULL, *prefix = NULL, *endpoint = gdn_gcs_endpoint();
	char *token = NULL, *token_src = NULL;
	bool emulator = getenv("STORAGE_EMULATOR_HOST") && *getenv("STORAGE_EMULATOR_HOST");
	int timeout = GCLOUD_TIMEOUT_MS;
	int ret;

	res->kind = "gcs";
	res->source = xstrdup(spec);
	res->endpoint = xstrdup(endpoint);
	if (o->http.deadline > 0) {
		int64_t left = o->http.deadline - gdn_now_ms();

		if (left < timeout)
			timeout = left > 1 ? (int)left : 1;
	}
	ret = gdn_gcs_parse_uri(spec, &bucket, &prefix, err);
	if (!ret)
		ret = gdn_gcs_find_token(emulator, timeout, &token, &token_src, err);
	if (!ret)
		ret = gdn_hf_init(&client, endpoint, token, &o->http, err);
	if (ret)
		goto out;
	res->auth_source = token_src;
	token_src = NULL;
	ret = gdn_gcs_list(&client, bucket, prefix, &files, err);
	if (!ret)
		ret = select_and_download(&client, &files, dest_dir, o, NULL, NULL, res, err);
out:
	gdn_hf_files_release(&files);
	gdn_hf_release(&client);
	free(bucket);
	free(prefix);
	free(endpoint);
	free(token);
	free(token_src);
	return ret;
}

/* The artifact's files, downloaded with the W&B key for same-host URLs only. */
static int wandb_download(struct gdn_wandb *c, const struct gdn_wandb_artifact *a,
			  const char *entity, const char *project, const char *dest_dir,
			  const struct gdn_fetch_opts *o, struct gdn_fetch_result *res,
			  struct gdn_err *err)
{
	struct gdn_hf client = {0};
	struct gdn_hf_files files = {0};
	int ret;

	free(res->resolved);
	res->resolved = xstrfmt("%s/%s/%s:%s", entity, project, a->name ? a->name : a->id,
				a->version ? a->version : (a->aliases.nr ? a->aliases.v[0] : "?"));
	ret = gdn_wandb_artifact_files(c, a, &files, err);
	if (!ret)
		ret = gdn_hf_init(&client, c->base_url, NULL, &o->http, err);
	if (!ret)
		ret = select_and_download(&client, &files, dest_dir, o, c->api_key ? "api" : NULL,
					  c->api_key, res, err);
	gdn_hf_files_release(&files);
	gdn_hf_release(&client);
	return ret;
}

int gdn_source_fetch_wandb_run(const char *spec, const char *dest_dir,
			       const struct gdn_fetch_opts *o, struct gdn_fetch_result *res,
			       struct gdn_err *err)
{
	struct gdn_wandb c = {0};
	struct gdn_wandb_artifact a = {0};
	char *e = NULL, *p = NULL, *r = NULL, *alias = NULL;
	int ret;

	res->kind = "wandb";
	res->source = xstrdup(spec);
	ret = gdn_source_parse_wandb_run(spec, o->wandb_entity, o->wandb_project, &e, &p, &r,
					 &alias, err);
	if (!ret)
		ret = gdn_wandb_init(&c, NULL, NULL, &o->http, err);
	if (ret)
		goto out;
	res->endpoint = xstrdup(c.base_url);
	res->auth_source = c.key_source ? xstrdup(c.key_source) : NULL;
	ret = gdn_wandb_run_artifact(&c, e, p, r,
				     o->wandb_type ? o->wandb_type : GDN_WANDB_PROFILE_TYPE,
				     alias ? alias : o->wandb_alias, &a, err);
	if (!ret)
		ret = wandb_download(&c, &a, e, p, dest_dir, o, res, err);
out:
	gdn_wandb_artifact_release(&a);
	gdn_wandb_release(&c);
	free(e);
	free(p);
	free(r);
	free(alias);
	return ret;
}

int gdn_source_fetch_wandb_artifact(const char *spec, const char *dest_dir,
				    const struct gdn_fetch_opts *o, struct gdn_fetch_result *res,
				    struct gdn_err *err)
{
	struct gdn_wandb c = {0};
	struct gdn_wandb_artifact a = {0};
	char *e = NULL, *p = NULL, *n = NULL, *alias = NULL, *name_alias = NULL;
	int ret;

	res->kind = "wandb-artifact";
	res->source = xstrdup(spec);
	ret = gdn_wandb_parse_artifact_ref(spec + (gdn_source_is_wandb_artifact(spec) ? 15 : 0), &e,
					   &p, &n, &alias, err);
	if (!ret)
		ret = gdn_wandb_init(&c, NULL, NULL, &o->http, err);
	if (ret)
		goto out;
	res->endpoint = xstrdup(c.base_url);
	res->auth_source = c.key_source ? xstrdup(c.key_source) : NULL;
	name_alias = xstrfmt("%s:%s", n,
			     alias	      ? alias
			     : o->wandb_alias ? o->wandb_alias
					      : "latest");
	ret = gdn_wandb_artifact_by_name(&c, e, p, name_alias, &a, err);
	if (!ret)
		ret = wandb_download(&c, &a, e, p, dest_dir, o, res, err);
out:
	gdn_wandb_artifact_release(&a);
	gdn_wandb_release(&c);
	free(e);
	free(p);
	free(n);
	free(alias);
	free(name_alias);
	return ret;
}
