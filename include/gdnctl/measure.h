/*
 * Where the loop's performance policy takes the metric of a profile run,
 * a table of sources (src/loop/measure.c, one driver file each): the
 * profile output (cli), Weights & Biases (summary or a history-window
 * aggregate, through the hub client), or the trace; and
 * --log-measurements, the measured figures written into the running
 * log's entry of a kept iteration. Nothing here prints: warnings are
 * returned as lines (or through a sink) for the caller to report.
 * See docs/performance-policy.md ("W&B as the source").
 */
#ifndef GDNCTL_MEASURE_H
#define GDNCTL_MEASURE_H

#include <jansson.h>
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/hub.h"
#include "gdnctl/strvec.h"

struct gdn_perf_config;
struct gdn_perf_sample;

/* --perf-source */
enum gdn_measure_source {
	GDN_MEASURE_AUTO = 0, /* W&B when a run is named or found, else the output */
	GDN_MEASURE_CLI,
	GDN_MEASURE_WANDB,
	GDN_MEASURE_TRACE,
};
/* --perf-source: "auto", "cli", "wandb", "trace". */
extern const struct gdn_enum gdn_measure_source_enum[];
/*
 * --perf-aggregation: "history-window" (1), "summary" (0); the value is
 * gdn_measure_opts.history.
 */
extern const struct gdn_enum gdn_measure_aggregation_enum[];
/* Whether the metric can come from src (trace/... metrics only from the trace; auto: any). */
bool gdn_measure_source_takes(enum gdn_measure_source src, const char *metric);

struct gdn_measure_opts {
	enum gdn_measure_source source;
	bool history; /* --perf-aggregation history-window (else summary) */
	struct gdn_history_window window;
	const char *entity, *project; /* for a run name or prefix (borrowed) */
	/* Discovery prefix; "{iteration}" becomes the zero-padded iteration (NNN). */
	const char *run_prefix;
	const char *base_url;	   /* NULL: WANDB_BASE_URL, else the default */
	struct gdn_http_opts http; /* retries etc.; deadline relative: see below */
	long fetch_timeout_ms;	   /* per sample, 0: none */
	/* --log-measurements: the running log (absolute path) or NULL: off */
	const char *log_file;
	size_t log_trace_deltas; /* trace delta lines at most */
};
void gdn_measure_opts_init(struct gdn_measure_opts *o);

/*
 * The last W&B run URL in `out` (the original's WANDB_RUN_URL_RE
 * `https://wandb.ai/E/P/runs/ID`, or the same path under base_url, which
 * may be NULL) as "E/P/ID" (new string), with the URL in *url (new), or
 * NULL when there is none.
 */
char *gdn_measure_find_run_url(const char *out, size_t len, const char *base_url, char **url);
/*
 * The run name W&B printed in `out` ("wandb: Syncing run NAME" or
 * "wandb: ... View run NAME at: ..."), the last one; new string or NULL.
 */
char *gdn_measure_find_run_name(const char *out, size_t len);

/*
 * Fill the sample's metric from W&B according to o (the caller has
 * already parsed the CLI value into s, and decides nothing for a trace
 * metric). `iteration` expands the prefix. On return:
 * *used_wandb says whether W&B was chosen as the source (the sample then
 * carries its value, or none: unscored); *run_url (new or NULL) names the
 * run; warnings get one line per problem (fetch failure, missing or
 * non-finite value, too few points, no run found) without credentials;
 * detail (may be NULL) gets a new JSON object for the journal
 * {"source", "wandb_run", "status", "points", "value"}.
 */
void gdn_measure_wandb(const struct gdn_measure_opts *o, const char *metric, long iteration,
		       const char *out, size_t len, struct gdn_perf_sample *s, bool *used_wandb,
		       char **run_url, struct strvec *warnings, json_t **detail);

/* What one profile run gave, for the sources to take the sample from. */
struct gdn_measure_input {
	const char *metric; /* the performance policy's metric */
	const struct gdn_perf_config *perf_config;
	long iteration;	 /* expands the W&B run prefix */
	const char *out; /* the profile's output */
	size_t len;
	int exit_code;	   /* the profile's: W&B is asked only after a success */
	const char *trace; /* the newest trace the run wrote, or NULL */
};

/* Where the sources report, in the order things happen; any may be NULL. */
struct gdn_measure_sink {
	void (*warn)(const char *line, void *payload);
	void (*run_url)(const char *url, void *payload); /* the W&B run the value came from */
	/* The `measurement` journal event (new reference, passed on to the callee). */
	void (*detail)(json_t *detail, void *payload);
	void *payload;
};

/*
 * Fill sample s of one profile run from every source in table order:
 * the value the output printed (cli), then W&B as o says (o NULL: not
 * asked), then the trace's figures (and its value for a trace metric).
 */
void gdn_measure_sample(const struct gdn_measure_opts *o, const struct gdn_measure_input *in,
			struct gdn_perf_sample *s, const struct gdn_measure_sink *sink);

/* ---- --log-measurements ---- */

/*
 * The lines describing the largest per-step trace differences between
 * two figure objects ({"step_ms", "categories", "ops"}), at most `max`,
 * largest |delta| first, in the running log's hotspot format:
 *   "- Trace <kind> `<name>`: `<before> ms -> <after> ms`"
 * Appended to out; nothing when either side is not an object.
 */
void gdn_measure_trace_deltas(json_t *before, json_t *after, size_t max, struct strvec *out);

#endif
