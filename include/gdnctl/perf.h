/*
 * The measured performance policy of the hill-climb loop (src/loop/perf.c,
 * src/loop/perf_state.c): metric samples from the profile job's output
 * (cli), W&B (wandb) or a trace summary (trace); the state file
 * perf_state.json (the original's version-2 shape plus our keys); gates
 * computed from measured per-step milliseconds; noise handling over
 * repeated samples; and the decision with the action it implies.
 *
 * Pure: nothing here prints, exits, spawns or reverts. The caller (the
 * loop's `decide` hook) measures, calls gdn_perf_decide(), saves the
 * state, prints the reasons and carries out the action.
 * docs/performance-policy.md describes the rules.
 */
#ifndef GDNCTL_PERF_H
#define GDNCTL_PERF_H

#include <jansson.h>
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/strvec.h"

struct gdn_err;
struct gdn_metric;
struct gdn_perf_measurement;
struct gdn_trace_summary;

#define GDN_PERF_STATE_VERSION	2
#define GDN_PERF_DEFAULT_METRIC "throughput/mfu"

/* ---- configuration ---- */

/*
 * --perf-mode: "on", "required" (the same as on), "off"; the value says
 * whether the policy is on.
 */
extern const struct gdn_enum gdn_perf_mode_enum[];

enum gdn_perf_direction {
	GDN_PERF_AUTO = 0, /* what the metric's name says (gdn_perf_direction_classify) */
	GDN_PERF_HIGHER,
	GDN_PERF_LOWER,
};
/* --perf-direction: "auto", "higher", "lower". */
extern const struct gdn_enum gdn_perf_direction_enum[];
const char *gdn_perf_direction_name(enum gdn_perf_direction d);
/*
 * What a metric's name says of its direction (--perf-direction auto): LOWER
 * for trace/... metrics (milliseconds per step) and times, HIGHER for rates,
 * GDN_PERF_AUTO when the name says neither (never a guess). The words of the
 * last path component decide (split at '_', '-', '.', ' ' and camelCase;
 * "throughput/duration_ms" is a time whatever "throughput/" says):
 * X_per_<unit of time> (tokens_per_second, items_per_s) is a rate and
 * <time>_per_X (ms_per_step) a time; else the last word, after qualifiers
 * (avg, mean, median, min, max, pct, p50, p99...): a unit of time (ms, us,
 * ns, s, sec, seconds, min, hours...) or time, duration, latency, elapsed,
 * runtime, walltime is a time; throughput, mfu, hfu, tflops, gflops, pflops,
 * speedup, qps, goodput a rate. "X/s" is a rate. *why (static) says which
 * rule decided, NULL for GDN_PERF_AUTO.
 */
enum gdn_perf_direction gdn_perf_direction_classify(const char *metric, const char **why);
/*
 * HIGHER or LOWER: `d`, or for AUTO what the name says; a name that says
 * neither gives HIGHER (for the records of runs before the loop refused
 * such names: callers that must not guess use gdn_perf_direction_classify).
 */
enum gdn_perf_direction gdn_perf_direction_resolve(enum gdn_perf_direction d, const char *metric);

/* --perf-regression-policy */
enum gdn_perf_policy {
	GDN_PERF_REVERT_COUNT_FAILURE = 0,
	GDN_PERF_REVERT_CONTINUE,
	GDN_PERF_FAIL,
	GDN_PERF_COUNT_FAILURE,
	GDN_PERF_CONTINUE,
};
/* "revert-count-failure", "revert-continue", "fail", "count-failure", "continue". */
extern const struct gdn_enum gdn_perf_policy_enum[];
const char *gdn_perf_policy_name(enum gdn_perf_policy p);

/*
 * --perf-within-threshold-policy: what a within_threshold decision (neither
 * a promotion nor a regression) does: keep the commit (the original), or
 * revert it without counting a failure.
 */
enum gdn_perf_within {
	GDN_PERF_WITHIN_KEEP = 0,
	GDN_PERF_WITHIN_REVERT,
};
/* "keep", "revert". */
extern const struct gdn_enum gdn_perf_within_enum[];
const char *gdn_perf_within_name(enum gdn_perf_within w);

/*
 * --perf-repeat-stat: what one figure of a commit's K samples is: their
 * median (the default), or the best (the highest for a higher-is-better
 * metric, the lowest otherwise), for benchmarks whose noise only ever
 * slows them down (a busy neighbour on a shared host).
 */
enum gdn_perf_stat {
	GDN_PERF_STAT_MEDIAN = 0,
	GDN_PERF_STAT_BEST,
};
/* "median", "best". */
extern const struct gdn_enum gdn_perf_stat_enum[];
const char *gdn_perf_stat_name(enum gdn_perf_stat s);

enum gdn_perf_bucket {
	GDN_PERF_BUCKET_STEP = 0, /* the whole step (self time of all selected tracks) */
	GDN_PERF_BUCKET_CATEGORY,
	GDN_PERF_BUCKET_OP,
};
enum gdn_perf_gate_kind {
	GDN_PERF_GATE_MAX_INCREASE_MS = 0, /* candidate - champion > limit fails */
	GDN_PERF_GATE_NEW_MAX_MS,	   /* absent in the champion, candidate > limit fails */
};
struct gdn_perf_gate {
	enum gdn_perf_bucket bucket;
	char *name; /* category or op name; NULL for the step */
	enum gdn_perf_gate_kind kind;
	double limit_ms;
};
struct gdn_perf_gates {
	struct gdn_perf_gate *v;
	size_t nr, alloc;
	double override_pct; /* a metric win of at least this skips the gates; < 0: never */
};
#define GDN_PERF_GATES_INIT      \
	{                        \
		NULL, 0, 0, -1.0 \
	}
void gdn_perf_gates_release(struct gdn_perf_gates *g);
/*
 * Parse one rule and add it: "SUBJECT SETTING=VALUE..." or "metric_win_pct=P".
 * SUBJECT is `step`, `category:NAME` or `op:NAME` (NAME may hold spaces:
 * the settings are the trailing words with '='); settings are
 * max_increase_ms=MS and new_max_ms=MS (one rule each), values finite and
 * >= 0. Errors are GDN_EUSAGE naming the rule.
 */
int gdn_perf_gate_parse(struct gdn_perf_gates *g, const char *spec, struct gdn_err *err);
/* The original's defaults: `category:while max_increase_ms=5`,
 * `category:conditional new_max_ms=5`, `metric_win_pct=5`. */
void gdn_perf_gates_add_defaults(struct gdn_perf_gates *g);
/* One rule as parse reads it, appended to out (for the journal and -h). */
void gdn_perf_gate_describe(const struct gdn_perf_gate *gate, struct strvec *out);

struct gdn_perf_config {
	const char *metric; /* borrowed; any cli/wandb key, or trace/... */
	enum gdn_perf_direction direction;
	double min_improvement_pct; /* promote at an improvement >= this (default 0.25) */
	double max_regression_pct;  /* regress at an improvement <= -this (default 1.0) */
	enum gdn_perf_policy policy;
	struct gdn_perf_gates gates;
	double min_confidence; /* z of the MAD rule; 0: off */
	enum gdn_perf_within within_policy;
	enum gdn_perf_stat repeat_stat;
	/* the profile command the samples come from (borrowed), recorded as "command"; or NULL */
	const char *command;
};
/* Defaults: throughput/mfu, auto, 0.25, 1.0, revert-count-failure, no gates, 0, keep. */
void gdn_perf_config_init(struct gdn_perf_config *c);
void gdn_perf_config_release(struct gdn_perf_config *c);
/* GDN_EUSAGE when a threshold or min_confidence is negative or not finite. */
int gdn_perf_config_check(const struct gdn_perf_config *c, struct gdn_err *err);

/* ---- metric extraction ---- */

/*
 * The original's CLI parsing: the LAST match of
 * `<metric>[^0-9eE+\-]*([+\-]?(\d+(\.\d*)?|\.\d+)([eE][+\-]?\d+)?)` in the
 * profile job's output. Returns 0 with *value, or GDN_ENOTFOUND (no match,
 * or the last match is not finite). err is not touched.
 */
int gdn_perf_parse_cli_metric(const char *output, size_t len, const char *metric, double *value);

/*
 * Per-step milliseconds of a trace summary (self time / steps): metric
 * `trace/step_ms`, `trace/category/<name>_ms` or `trace/op/<name>_ms`; a
 * bucket absent from the trace is 0. Returns 0, GDN_ENOTFOUND when the
 * trace has no steps, or GDN_EUSAGE for a name that is not a trace metric.
 */
int gdn_perf_trace_metric(const struct gdn_trace_summary *s, const char *metric, double *value,
			  struct gdn_err *err);
/* Whether `metric` names a trace metric ("trace/" prefix). */
bool gdn_perf_is_trace_metric(const char *metric);

/*
 * The loop's ruler when --perf-metric is not given: in a Marin setup (its
 * profile target or checkout) the original's throughput/mfu; else
 * throughput/mfu too, but when the profile leaves a trace
 * (project.trace_glob or project.trace_source) *decide is set: the
 * baseline's measurement decides (gdn_perf_ruler_pick). A configured metric
 * is returned as it is. *why (may be NULL) gets a phrase saying why.
 */
const char *gdn_perf_ruler(const char *configured, bool marin, bool trace, bool *decide,
			   const char **why);

/*
 * The baseline decides the ruler: when no sample of m has a value of
 * c->metric (the profile printed no throughput/mfu) and its traces have
 * steps, c->metric becomes trace/step_ms and m's samples are made again
 * from the trace figures (one per step, see gdn_perf_measurement_split_steps).
 * Returns whether it switched.
 */
bool gdn_perf_ruler_pick(struct gdn_perf_config *c, struct gdn_perf_measurement *m);
/* The ruler becomes trace/step_ms, lower is better (a time). */
void gdn_perf_ruler_use_steps(struct gdn_perf_config *c);

/* ---- samples and measurements ---- */

/*
 * A profile run measured on trace/step_ms whose trace has per-step figures
 * ("step_samples_ms" in its trace figures): the last sample of m becomes
 * one sample per step (the first keeps the figures), so that the spread of
 * the steps enters the decision (median, MAD, the A/B pairs). Other
 * metrics and traces without them: nothing changes. Returns the number of
 * samples the run gave.
 */
struct gdn_perf_measurement;
size_t gdn_perf_measurement_split_steps(struct gdn_perf_measurement *m,
					const struct gdn_perf_config *c);

/* One profile run. */
struct gdn_perf_sample {
	bool has_value; /* the configured metric was measured, finite */
	double value;
	char *source; /* "cli", "wandb", "trace" (owned), or NULL */
	/*
	 * New reference or NULL: per-step figures of the run's trace,
	 * {"steps": N, "step_ms": X, "categories": {NAME: MS}, "ops": {NAME: MS}};
	 * ops only those named by the gates or the metric.
	 */
	json_t *trace;
	char *why; /* no value: why, in words (owned), or NULL */
};

/* The K samples of one commit. */
struct gdn_perf_measurement {
	struct gdn_perf_sample *v;
	size_t nr, alloc;
	long iteration;		/* 0 for the starting commit */
	int64_t timestamp_unix; /* 0: now */
	char *run_url;		/* owned, or NULL */
};
#define GDN_PERF_MEASUREMENT_INIT \
	{                         \
		0                 \
	}
void gdn_perf_measurement_release(struct gdn_perf_measurement *m);
/* A new empty sample (borrowed, valid until the next add). */
struct gdn_perf_sample *gdn_perf_measurement_add(struct gdn_perf_measurement *m);

/* Record a value (a non-finite one leaves the sample unscored). */
void gdn_perf_sample_set_value(struct gdn_perf_sample *s, const char *source, double value);
/* From the profile output: 0, or GDN_ENOTFOUND leaving the sample unscored. */
int gdn_perf_sample_set_cli(struct gdn_perf_sample *s, const char *metric, const char *output,
			    size_t len);
/* From a W&B result: 0 when its status is ok, else GDN_ENOTFOUND (unscored). */
int gdn_perf_sample_set_wandb(struct gdn_perf_sample *s, const struct gdn_metric *m);
/*
 * Attach the figures of a trace summary; when the configured metric is a
 * trace metric, also its value (source "trace"). GDN_ENOTFOUND (err
 * filled) when the trace has no steps: the sample keeps no figures.
 */
int gdn_perf_sample_set_trace(struct gdn_perf_sample *s, const struct gdn_perf_config *c,
			      const struct gdn_trace_summary *t, struct gdn_err *err);

/* Median and median absolute deviation of n values (n > 0; v is reordered). */
double gdn_perf_median(double *v, size_t n);
double gdn_perf_mad(const double *v, size_t n);

/* ---- state file ---- */

struct gdn_perf_state {
	char *path; /* owned, or NULL */
	/* {"version": 2, "champion": {...}|null, "history": [...]}, owned */
	json_t *doc;
};
#define GDN_PERF_STATE_INIT \
	{                   \
		NULL, NULL  \
	}
/* An empty state (no champion, no history) for `path` (may be NULL). */
void gdn_perf_state_init(struct gdn_perf_state *st, const char *path);
void gdn_perf_state_release(struct gdn_perf_state *st);
/*
 * Parse a state file's bytes. Version 1 is read as 2. A file that is not
 * JSON, not of this shape, or of another version is GDN_EPARSE naming
 * `name` in quotes.
 */
int gdn_perf_state_parse(struct gdn_perf_state *st, const char *buf, size_t len, const char *name,
			 struct gdn_err *err);
/*
 * Load `path` into st (initialised by GDN_PERF_STATE_INIT or init; its
 * contents are released first); a missing file gives an empty state.
 */
int gdn_perf_state_load(struct gdn_perf_state *st, const char *path, struct gdn_err *err);
/*
 * Save to st->path: indented, sorted keys, trailing newline, written to a
 * temporary file in the same directory, fsync(2)ed and renamed over it.
 */
int gdn_perf_state_save(const struct gdn_perf_state *st, struct gdn_err *err);
/* Borrowed: the champion record, or NULL. */
json_t *gdn_perf_state_champion(const struct gdn_perf_state *st);

/* ---- the decision ---- */

enum gdn_perf_decision {
	GDN_PERF_BASELINE = 0,
	GDN_PERF_PROMOTED,
	GDN_PERF_WITHIN_THRESHOLD,
	GDN_PERF_REGRESSION,
	GDN_PERF_GATE_REGRESSION,
	GDN_PERF_UNSCORED,
};
/* "baseline", "promoted", "within_threshold", "regression", "gate_regression", "unscored". */
extern const struct gdn_enum gdn_perf_decision_enum[];
const char *gdn_perf_decision_name(enum gdn_perf_decision d);

struct gdn_perf_action {
	bool revert;	    /* revert the iteration's commits */
	bool count_failure; /* count one failure */
	bool stop;	    /* stop the loop (exit code 1) */
};

struct gdn_perf_verdict {
	enum gdn_perf_decision decision;
	struct gdn_perf_action action;
	size_t samples;		/* candidate samples with a value */
	double candidate;	/* median of the candidate (NAN when unscored) */
	double champion;	/* median of the champion (NAN when none) */
	double delta_pct;	/* (candidate - champion) / |champion| * 100 */
	double improvement_pct; /* delta_pct, negated for a lower-is-better metric */
	double noise;		/* the confidence rule's threshold in metric units (0: off) */
	bool confident;		/* |candidate - champion| > noise */
	char *champion_commit;	/* the champion before the decision (owned), or NULL */
	struct strvec reasons;	/* one line each, for printing and the journal */
	/* --perf-ab: the paired interval the decision used (ab false: not interleaved) */
	bool ab;
	size_t pairs;
	double ci_low_pct, ci_high_pct, confidence;
	const char *ab_verdict; /* gdn_abstat_verdict_name() */
};
#define GDN_PERF_VERDICT_INIT          \
	{                              \
		.reasons = STRVEC_INIT \
	}
void gdn_perf_verdict_release(struct gdn_perf_verdict *v);

/*
 * The action a decision implies under a policy: baseline, promoted and
 * within_threshold keep the commit; regression, gate_regression and
 * unscored follow the policy (revert-count-failure: revert + count;
 * revert-continue: revert; count-failure: keep + count; continue: keep;
 * fail: stop + count).
 */
struct gdn_perf_action gdn_perf_action_for(enum gdn_perf_decision d, enum gdn_perf_policy p);

/*
 * The action of a decision under a configuration: gdn_perf_action_for()
 * with c->policy, and for within_threshold under GDN_PERF_WITHIN_REVERT a
 * revert (no failure counted).
 */
struct gdn_perf_action gdn_perf_action_config(enum gdn_perf_decision d,
					      const struct gdn_perf_config *c);

/*
 * Decide on `commit` measured by `cand` (its samples' medians), append the
 * record to the state's history and make it the champion when it is the
 * baseline or promoted. `out` (initialised) is released and refilled.
 * The caller saves the state. Returns 0, or
 * GDN_EUSAGE for a bad configuration.
 */
struct gdn_abstat;

/*
 * --perf-ab: the paired statistic of an interleaved measurement (champion
 * sample i and candidate sample i were taken one after the other; pairs
 * where either has no value are skipped), at the per-look confidence of
 * `confidence` over `looks` sequential looks. Deterministic (a fixed seed).
 * Returns 0 with *stat and *verdict (an enum gdn_abstat_verdict), or -1
 * when no pair has two positive values.
 */
int gdn_perf_ab_stat(const struct gdn_perf_config *c, const struct gdn_perf_measurement *champion,
		     const struct gdn_perf_measurement *cand, double confidence, long looks,
		     struct gdn_abstat *stat, int *verdict);

/*
 * gdn_perf_decide with an interleaved measurement: the decision follows
 * the interval of the paired statistic (gdn_perf_ab_stat) instead of the
 * medians; the record keeps the champion's samples of this measurement,
 * the interval and the statistic under "ab".
 */
int gdn_perf_decide_ab(const struct gdn_perf_config *c, struct gdn_perf_state *st,
		       const char *commit, const struct gdn_perf_measurement *cand,
		       const struct gdn_perf_measurement *champion, const struct gdn_abstat *stat,
		       int verdict, struct gdn_perf_verdict *out, struct gdn_err *err);

int gdn_perf_decide(const struct gdn_perf_config *c, struct gdn_perf_state *st, const char *commit,
		    const struct gdn_perf_measurement *cand, struct gdn_perf_verdict *out,
		    struct gdn_err *err);

/*
 * Champion re-profiles: add the samples (with values) of `m` to the
 * champion's and recompute its median and MAD. GDN_ENOTFOUND when the
 * state has no champion.
 */
int gdn_perf_champion_add_samples(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				  const struct gdn_perf_measurement *m, struct gdn_err *err);
/*
 * After the branch moved under the champion (a sync merged upstream
 * work): the champion becomes `commit` measured by `m` (its samples,
 * median, MAD and trace figures replace the old ones); the commit it was
 * first measured at stays in "reprofiled_from". GDN_ENOTFOUND without a
 * champion. The caller saves the state.
 */
int gdn_perf_champion_reprofile(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				const char *commit, const struct gdn_perf_measurement *m,
				struct gdn_err *err);

#endif
