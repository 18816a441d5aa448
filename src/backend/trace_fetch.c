/*
 * The table of trace sources keyed by spelling, the cache under
 * $XDG_CACHE_HOME/gdnctl/traces, and the choice of what to read among the
 * fetched files. Adding a source is one entry in gdn_fetch_sources[].
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/sha256.h"
#include "gdnctl/source.h"
#include "gdnctl/strvec.h"
#include "gdnctl/trace_fetch.h"
#include "gdnctl/xalloc.h"

#define READABLE_MAX 64

static bool match_hf(const char *spec, const struct gdn_fetch_opts *o)
{
	(void)o;
	return gdn_source_is_hf(spec);
}

static bool match_gcs(const char *spec, const struct gdn_fetch_opts *o)
{
	(void)o;
	return gdn_source_is_gcs(spec);
}

static bool match_wandb_artifact(const char *spec, const struct gdn_fetch_opts *o)
{
	(void)o;
	return gdn_source_is_wandb_artifact(spec);
}

static bool match_wandb_run(const char *spec, const struct gdn_fetch_opts *o)
{
	(void)o;
	return gdn_source_is_wandb_run(spec);
}

const struct gdn_fetch_source gdn_fetch_sources[] = {
    {"hf", "hf:ORG/REPO[/PATH]", match_hf, gdn_source_fetch_hf},
    {"gcs", "gs://BUCKET/PREFIX", match_gcs, gdn_source_fetch_gcs},
    {"wandb-artifact", "wandb-artifact:ENTITY/PROJECT/NAME:ALIAS", match_wandb_artifact,
     gdn_source_fetch_wandb_artifact},
    {"wandb", "wandb:ENTITY/PROJECT/RUN_ID[@ALIAS] or a W&B run URL", match_wandb_run,
     gdn_source_fetch_wandb_run},
    /* (download-trace BACKEND:PATH is dispatched before: src/cmd/download_backend.c.) */
    {NULL, NULL, NULL, NULL},
};

const struct gdn_fetch_source *gdn_fetch_source_find(const char *spec,
						     const struct gdn_fetch_opts *o)
{
	for (const struct gdn_fetch_source *s = gdn_fetch_sources; s->kind; s++)
		if (s->match(spec, o))
			return s;
	return NULL;
}

char *gdn_trace_cache_dir(const char *spec, const char *kind)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct gdn_sha256 c;
	unsigned char dig[GDN_SHA256_LEN];
	char hex[65];
	struct sbuf sb = SBUF_INIT;
	const char *s = spec;
	size_t n = 0;

	if (xdg && *xdg == '/')
		sbuf_addf(&sb, "%s/gdnctl/traces/%s/", xdg, kind);
	else
		sbuf_addf(&sb, "%s/.cache/gdnctl/traces/%s/", home && *home ? home : ".", kind);
	/* A readable part: the spelling after its scheme, unsafe bytes as '_'. */
	if (strstr(s, "://"))
		s = strstr(s, "://") + 3;
	else if (strchr(s, ':') && strchr(s, ':') < s + strcspn(s, "/"))
		s = strchr(s, ':') + 1;
	for (; *s && n < READABLE_MAX; s++, n++)
		sbuf_addch(&sb, isalnum((unsigned char)*s) || strchr("-._", *s) ? *s : '_');
	gdn_sha256_init(&c);
	gdn_sha256_update(&c, spec, strlen(spec));
	gdn_sha256_final(&c, dig);
	gdn_sha256_hex(dig, hex);
	sbuf_addf(&sb, "-%.12s", hex);
	return sbuf_detach(&sb, NULL);
}

int gdn_trace_fetch_ex(const char *spec, const char *dest_dir, const struct gdn_fetch_opts *o,
		       struct gdn_fetch_result *res, struct strvec *files_out, struct gdn_err *err)
{
	const struct gdn_fetch_source *src = gdn_fetch_source_find(spec, o);
	char *dir = NULL;
	int ret;

	if (!src) {
		struct sbuf kinds = SBUF_INIT;

		for (const struct gdn_fetch_source *s = gdn_fetch_sources; s->kind; s++)
			sbuf_addf(&kinds, "%s%s", kinds.len ? ", " : "", s->spelling);
		char *q = gdn_one_line(spec, 200);

		ret = gdn_err_set(err, GDN_EUSAGE, "'%s' is not a trace source (%s)", q, kinds.buf);
		free(q);
		sbuf_release(&kinds);
		return ret;
	}
	dir = dest_dir ? xstrdup(dest_dir) : gdn_trace_cache_dir(spec, src->kind);
	ret = src->fetch(spec, dir, o, res, err);
	if (!res->kind)
		res->kind = src->kind;
	if (files_out)
		for (size_t i = 0; i < res->local_paths.nr; i++)
			strvec_push(files_out, res->local_paths.v[i]);
	free(dir);
	return ret;
}

int gdn_trace_fetch(const char *spec, const char *dest_dir, const struct gdn_trace_fetch_opts *opts,
		    struct strvec *files_out, struct gdn_err *err)
{
	struct gdn_fetch_opts o = GDN_FETCH_OPTS_INIT;
	struct gdn_fetch_result res;
	int ret;

	if (opts) {
		o.pattern = opts->pattern;
		o.include_xplane = opts->include_xplane;
		o.http.deadline = opts->deadline_ms;
	}
	gdn_fetch_result_init(&res);
	ret = gdn_trace_fetch_ex(spec, dest_dir, &o, &res, files_out, err);
	gdn_fetch_result_release(&res);
	return ret;
}

static bool ends_with(const char *s, const char *end)
{
	size_t ls = strlen(s), le = strlen(end);

	return ls >= le && !strcmp(s + ls - le, end);
}

/* Rank of a trace-event file (lower is better), or -1. */
static int json_rank(const char *path)
{
	if (ends_with(path, "/perfetto_trace.json.gz") || !strcmp(path, "perfetto_trace.json.gz"))
		return 0;
	if (ends_with(path, ".trace.json.gz"))
		return 1;
	if (ends_with(path, ".trace.json"))
		return 2;
	return -1;
}

static bool is_xplane(const char *path)
{
	return ends_with(path, ".xplane.pb") || ends_with(path, ".xplane.pb.gz");
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? (size_t)(slash - path) : 0;
}

int gdn_trace_fetch_pick(const struct strvec *local_paths, char **path, struct strvec *xplanes,
			 struct gdn_err *err)
{
	const char *best = NULL, *last_xp = NULL;
	int best_rank = 99;

	*path = NULL;
	for (size_t i = 0; i < local_paths->nr; i++) {
		const char *p = local_paths->v[i];
		int r = json_rank(p);

		if (r >= 0 && (r < best_rank || (r == best_rank && strcmp(p, best) > 0))) {
			best = p;
			best_rank = r;
		}
		if (is_xplane(p) && (!last_xp || strcmp(p, last_xp) > 0))
			last_xp = p;
	}
	if (best) {
		*path = xstrdup(best);
		return 0;
	}
	if (!last_xp)
		return gdn_err_set(err, GDN_ENOTFOUND,
				   "none of the %zu fetched files is a trace (*.trace.json.gz, "
				   "perfetto_trace.json.gz, *.xplane.pb)",
				   local_paths->nr);
	{
		size_t dl = dir_len(last_xp);
		struct strvec all = STRVEC_INIT;

		for (size_t i = 0; i < local_paths->nr; i++) {
			const char *p = local_paths->v[i];

			if (is_xplane(p) && dir_len(p) == dl && !strncmp(p, last_xp, dl))
				strvec_push(&all, p);
		}
		qsort(all.v, all.nr, sizeof(*all.v), str_cmp);
		for (size_t i = 0; i < all.nr; i++)
			strvec_push(xplanes, all.v[i]);
		*path = xstrdup(all.v[0]);
		strvec_clear(&all);
	}
	return 0;
}
