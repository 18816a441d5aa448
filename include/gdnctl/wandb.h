/*
 * The Weights & Biases client, src/hub/wandb.c: GraphQL run lookup,
 * summary and history windows (over http.h).
 */
#ifndef GDNCTL_WANDB_H
#define GDNCTL_WANDB_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/http.h"
#include "gdnctl/json.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

#define GDN_WANDB_DEFAULT_BASE_URL "https://api.wandb.ai"

enum gdn_metric_status {
	GDN_METRIC_OK = 0,
	GDN_METRIC_MISSING,	/* no such key, or no point in the window */
	GDN_METRIC_NONFINITE,	/* NaN or +-Infinity (summary), or only such points (history) */
	GDN_METRIC_NOT_NUMERIC, /* a string, object, list or bool */
	GDN_METRIC_TOO_FEW,	/* fewer finite points in the window than min_points */
};
const char *gdn_metric_status_name(enum gdn_metric_status s);

struct gdn_metric {
	char *key;
	enum gdn_metric_status status;
	double value;	  /* only meaningful when status is OK */
	size_t points;	  /* finite points used (history); 1 or 0 (summary) */
	size_t nonfinite; /* non-finite points seen in the window (skipped) */
};

struct gdn_wandb_run {
	char *entity, *project;
	char *name;	    /* the run id ("3xk2q1ab") */
	char *display_name; /* or NULL */
	char *state;	    /* running, finished, crashed, failed, killed; or NULL */
	char *created_at;   /* ISO 8601 as the server wrote it; or NULL */
	char *summary_json; /* summaryMetrics: a JSON string (decoded once); or NULL */
	char *url;	    /* https://wandb.ai/<entity>/<project>/runs/<name> */
};
void gdn_wandb_run_release(struct gdn_wandb_run *r);

struct gdn_metric_set {
	struct gdn_metric *v;
	size_t nr, alloc;
	struct gdn_wandb_run run; /* the run the values came from */
	char *source;		  /* "wandb-summary" or "wandb-history-median[10:18]" */
};
void gdn_metric_set_release(struct gdn_metric_set *s);
const struct gdn_metric *gdn_metric_set_get(const struct gdn_metric_set *s, const char *key);

/*
 * A run reference: a URL (https://wandb.ai/E/P/runs/R, any host, with or
 * without query, fragment or trailing path), E/P/R or E/P/runs/R. The
 * three parts are new strings. GDN_EUSAGE with a message otherwise.
 */
int gdn_wandb_parse_run_ref(const char *ref, char **entity, char **project, char **run,
			    struct gdn_err *err);

enum gdn_agg {
	GDN_AGG_MEDIAN,
	GDN_AGG_MEAN,
};
/* "median", "mean" */
extern const struct gdn_enum gdn_agg_enum[];

struct gdn_history_window {
	int64_t step_min, step_max; /* inclusive; INT64_MIN/INT64_MAX: open */
	enum gdn_agg agg;
	size_t min_points; /* fewer finite points: GDN_METRIC_TOO_FEW */
	int samples;	   /* sampledHistory samples per key; 0: 1000 */
};
/* "A:B" (either side may be empty: open) into step_min/step_max. */
int gdn_history_parse_steps(const char *s, struct gdn_history_window *w, struct gdn_err *err);

/*
 * Pure helpers (unit tested, fuzzed). Decode the summaryMetrics string and
 * fill one metric per key. Bare NaN/Infinity tokens in the JSON (Python's
 * json.dumps writes them) are accepted and reported as non-finite.
 */
int gdn_wandb_summary_from_json(const char *summary_json, const char *const *keys,
				struct gdn_metric_set *out, struct gdn_err *err);
/*
 * Aggregate sampledHistory rows for each key. `rows_json` is the GraphQL
 * "sampledHistory" value: one array of row objects per key, in key order
 * (each row has "_step" and the key). Rows outside the window are ignored.
 */
int gdn_wandb_history_from_json(const char *rows_json, const char *const *keys,
				const struct gdn_history_window *w, struct gdn_metric_set *out,
				struct gdn_err *err);
/* Median (average of the middle two) or mean of n values; sorts v. */
double gdn_agg_values(double *v, size_t n, enum gdn_agg agg);
/*
 * Parse a GraphQL answer body: check of "errors" (the
 * first message becomes the error) and "data". *data is a new reference.
 */
int gdn_graphql_parse(const char *body, size_t len, json_t **data, struct gdn_err *err);

struct gdn_wandb {
	char *base_url; /* no trailing '/' */
	char *api_key;	/* NULL: anonymous */
	char *key_source;
	struct gdn_http *http;
};

/*
 * base_url NULL: WANDB_BASE_URL, else https://api.wandb.ai. api_key NULL:
 * WANDB_API_KEY, else the password of `machine <host>` in $NETRC or
 * ~/.netrc, else anonymous.
 */
int gdn_wandb_init(struct gdn_wandb *c, const char *base_url, const char *api_key,
		   const struct gdn_http_opts *opts, struct gdn_err *err);
void gdn_wandb_release(struct gdn_wandb *c);
/*
 * Run a GraphQL query at base_url/graphql (the key as HTTP Basic api:KEY).
 * `vars` is stolen; *data (new reference) is the answer's "data" object.
 */
int gdn_wandb_graphql(struct gdn_wandb *c, const char *query, json_t *vars, json_t **data,
		      struct gdn_err *err);

/*
 * Find a run by id, then (as the original tool did) by display name among
 * the project's newest runs. GDN_ENOTFOUND when there is none.
 */
int gdn_wandb_get_run(struct gdn_wandb *c, const char *run_ref, struct gdn_wandb_run *out,
		      struct gdn_err *err);
/*
 * The newest run (order -created_at) whose name or display name starts
 * with "<prefix>_", scanning at most max_runs runs (0: 1000).
 * GDN_ENOTFOUND when there is none.
 */
int gdn_wandb_find_run(struct gdn_wandb *c, const char *entity, const char *project,
		       const char *prefix, int max_runs, struct gdn_wandb_run *out,
		       struct gdn_err *err);
/* Summary values of `keys` (NULL-terminated) for a run reference. */
int gdn_wandb_summary(struct gdn_wandb *c, const char *run_ref, const char *const *keys,
		      struct gdn_metric_set *out, struct gdn_err *err);
/* History window aggregate of `keys` for a run reference. */
int gdn_wandb_history_agg(struct gdn_wandb *c, const char *run_ref, const char *const *keys,
			  const struct gdn_history_window *w, struct gdn_metric_set *out,
			  struct gdn_err *err);

#endif
