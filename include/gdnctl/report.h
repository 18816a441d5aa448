/*
 * The loop report (`gdnctl report`, docs/gdnctl-report.md): a model of one
 * run of the hill-climb loop built from its journal (<log dir>/loop.jsonl),
 * its performance state (perf_state.json: metric values and trace figures)
 * and, when available, the commit subjects and the agent's last messages;
 * rendered as a plain-text summary, a JSON document (schema
 * gdnctl.report.v1) and one self-contained HTML page (inline CSS and SVG,
 * no network).
 *
 * Pure: nothing here prints or exits. Loading fills a struct gdn_err;
 * renderers append to a struct sbuf.
 */
#ifndef GDNCTL_REPORT_H
#define GDNCTL_REPORT_H

#include <jansson.h>
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/strvec.h"

struct gdn_err;
struct sbuf;

#define GDN_REPORT_SCHEMA     "gdnctl.report.v1"
#define GDN_REPORT_TOP_DELTAS 3 /* trace deltas kept per iteration */
/* Trace deltas under the noise are not shown: |delta| < 0.01 ms or < 0.1 % of the champion's. */
#define GDN_REPORT_NOISE_MS  0.01
#define GDN_REPORT_NOISE_PCT 0.1
/* The chart's y axis turns logarithmic when its values span more than this factor. */
#define GDN_REPORT_LOG_RATIO 5.0

/* How an iteration ended, as the report colours it. */
enum gdn_report_outcome {
	GDN_REPORT_BASELINE = 0, /* iteration 0: the starting commit measured */
	GDN_REPORT_PROMOTED,	 /* the new champion */
	GDN_REPORT_WITHIN,	 /* kept, within the hold band */
	GDN_REPORT_REGRESSION,
	GDN_REPORT_GATE_REGRESSION,
	GDN_REPORT_UNSCORED,	 /* the metric was not measured */
	GDN_REPORT_FAILED_TESTS, /* the validation gate failed: reverted */
	GDN_REPORT_NO_COMMIT,
	GDN_REPORT_KEPT,     /* commits kept without a performance decision */
	GDN_REPORT_ERROR,    /* agent failure, post-check, iteration error, failed revert */
	GDN_REPORT_OPEN,     /* no decision in the journal (running or interrupted) */
	GDN_REPORT_CONFLICT, /* workers: the candidate conflicted with a newer champion */
	GDN_REPORT_OUTCOME_NR
};
/* "baseline", "promoted", "within_band", "regression", "gate_regression", "unscored",
 * "failed_tests", "no_commit", "kept", "error", "open", "conflict" (also the HTML
 * class suffix). */
const char *gdn_report_outcome_name(enum gdn_report_outcome o);
/* For people: "promoted", "within band", "failed tests", ... */
const char *gdn_report_outcome_label(enum gdn_report_outcome o);

/* One trace bucket's per-step time against the champion's. */
struct gdn_report_delta {
	char kind[12]; /* "step", "category" or "op" */
	char *name;    /* owned; NULL for the step */
	double candidate_ms, champion_ms, delta_ms;
};

struct gdn_report_iter {
	long iteration;
	enum gdn_report_outcome outcome;
	char *commit;	   /* HEAD after the agent (40 hex, owned), or NULL without commits */
	char *stamped;	   /* the commit that stamped the running log on top (owned), or NULL */
	struct strvec ids; /* the iteration's commits, newest first */
	long commits;	   /* commits the agent made */
	long kept;	   /* commits kept (the decision's count) */
	bool reverted;
	char *discarded_ref; /* owned, or NULL */
	char *reason;	     /* why: revert reason, failure kind or perf reason (owned), or NULL */
	char *reason_text;   /* the same in words (gdn_loop_reason_words; owned), or NULL */
	char *hypothesis;    /* commit subjects or the agent's last message (owned), or NULL */
	char *perf_decision; /* the policy's decision name (owned), or NULL */
	bool has_metric;
	double metric;		/* the measured candidate value */
	double champion_before; /* NAN when there was no champion */
	double champion_after;	/* the champion after this iteration's decision, or NAN */
	double delta_pct;	/* (metric - champion_before) / |champion_before| * 100, or NAN */
	/* --perf-ab: the improvement's interval (percent) over ab_pairs pairs */
	bool has_ci;
	double ci_low_pct, ci_high_pct, ci_confidence;
	long ab_pairs;
	/* `gdnctl loop verify` (<log dir>/verify.json): against the baseline, percent */
	bool has_verified;
	double claimed_pct, verified_pct, verified_lo_pct, verified_hi_pct;
	long long agent_ms, validation_ms;
	bool has_usage;	  /* a `usage` event: what the agent reported */
	long long tokens; /* input + output */
	double cost_usd;  /* < 0: not reported */
	struct gdn_report_delta deltas[GDN_REPORT_TOP_DELTAS];
	size_t nr_deltas;
	bool seen_decision, seen_error, validation_failed;
	bool conflict;	/* a rebase conflict: discarded, not promoted */
	long rechecks;	/* workers: `recheck` events (checked again on a newer champion) */
	bool kept_away; /* a discarded ref kept for it (`ref_kept`) */
	char *failure;	/* the decision's failure kind (owned), or NULL */
	/*
	 * The trace of the iteration's last profile run with one (`trace`
	 * events): where it came from ("local", "backend", "gcs", "wandb"),
	 * its path, its path under the log dir (a link), the source it was
	 * fetched from; or why there was none. All owned, or NULL.
	 */
	char *trace_source, *trace_path, *trace_file, *trace_origin, *trace_reason;
	long worker; /* the worker that ran it (its events' "worker"; 1 without one) */
};

/*
 * Parallel workers (`gdnctl loop --workers N`, docs/gdnctl-report.md): one
 * lane per worker. A span is a stretch of the worker's time: the agent
 * (agent_start .. agent_end) or a validation phase ([ts - duration_ms, ts]
 * of a `validation` event). Times are milliseconds of the run's active
 * time (the idle gaps before resumes taken out) since its start.
 */
#define GDN_REPORT_MAX_WORKERS 256 /* worker ids above this are ignored */
enum gdn_report_span_kind { GDN_REPORT_SPAN_AGENT = 0, GDN_REPORT_SPAN_VALIDATION };

struct gdn_report_span {
	enum gdn_report_span_kind kind;
	long iteration;
	long long start_ms, end_ms; /* absolute while loading; active offsets once loaded */
};

struct gdn_report_lane {
	long worker; /* 1..N */
	struct gdn_report_span *v;
	size_t nr, alloc;
	/*
	 * Unions of the spans: an overlap is counted once, so busy_ms <=
	 * active time and idle_ms = active time - busy_ms.
	 */
	long long agent_ms, validation_ms, busy_ms, idle_ms;
	double busy;	   /* busy_ms / active time (NAN without active time) */
	double accel_busy; /* validation_ms / active time: the worker's accelerator */
	long iterations;   /* iterations started (iteration 0 not counted) */
	long promotions;
	long long open_agent_ms; /* internal: the start of an agent not yet ended, or -1 */
	long open_iteration;
	long open_target; /* internal: the target its validation runs on (--targets), or 0 */
	long open_agent;  /* internal: the agent its agent span runs on (--targets), or 0 */
};

/* A `promote` event: a new champion, in promotion order. */
struct gdn_report_promotion {
	long order; /* 1, 2, ... */
	long iteration, worker;
	char *champion;	 /* the new champion commit (owned), or NULL */
	double metric;	 /* the promoted iteration's measured metric, or NAN */
	bool best;	 /* its perf decision promoted it (not a kept within-band one) */
	long long at_ms; /* absolute while loading; the active offset once loaded */
};

/* An idle gap before a resume (absolute times, ms). */
struct gdn_report_gap {
	long long from_ms, to_ms;
};

struct gdn_report_totals {
	long iterations; /* iterations with a decision (iteration 0 not counted) */
	long long agent_ms, validation_ms, wall_ms;
	long long active_ms, idle_ms; /* wall_ms without / only the idle gaps before resumes */
	long resumes;
	long commits_kept, commits_reverted, failures, promoted;
	/* iterations (> 0, with a decision) by what became of them */
	long iters_kept, iters_reverted, iters_no_commit, iters_failed;
	long iters_conflicted; /* workers: discarded by a rebase conflict (not in iters_failed) */
	/* the agent's reported usage (`usage` events; usage_iterations 0: none) */
	long usage_iterations;
	long long input_tokens, output_tokens, tokens;
	double cost_usd; /* < 0: never reported */
};

struct gdn_report {
	struct strvec runs;			      /* every run id in the journal, in order */
	char *run_id, *workdir, *branch, *start_head; /* the selected run (owned) */
	char *started, *ended;			      /* ISO timestamps, or NULL */
	char *end_reason;			      /* run_end's reason, or NULL */
	long planned;				      /* --iterations of the run */
	bool has_exit;
	int exit_code;
	char *metric; /* owned, or NULL when the run had no performance decision */
	bool lower_is_better;
	bool direction_journaled; /* a perf_decision said it (else: what the metric's name says) */
	bool torn_last_line;	  /* the journal's last line had no newline and was ignored */
	/* the state's champion, used when the run made no performance decision */
	char *state_champion; /* commit (owned), or NULL */
	double state_champion_value;
	double baseline;      /* the first champion of the run (iteration 0's metric), or NAN */
	long long last_ts_ms; /* internal: the selected run's last event time while loading */
	struct gdn_report_iter *v;
	size_t nr, alloc;
	struct gdn_report_totals totals;
	/*
	 * Workers: run_start's (or run_resume's) "workers", raised to the
	 * largest worker id seen (capped at GDN_REPORT_MAX_WORKERS); 1 for a
	 * one-worker run. The lanes, promotions and gaps are kept for every
	 * run; the renderers show them only when workers > 1
	 * (gdn_report_parallel), so a one-worker report is unchanged.
	 */
	long workers;
	struct gdn_report_lane *lanes; /* lanes[k - 1]: worker k; nr_lanes == workers */
	size_t nr_lanes;
	/* --targets M: tlanes[k - 1]: target k's validations (worker = k); else none */
	struct gdn_report_lane *tlanes;
	size_t nr_tlanes;
	/* --targets M with --workers N: alanes[k - 1]: agent k's agent spans (worker = k) */
	struct gdn_report_lane *alanes;
	size_t nr_alanes;
	struct gdn_report_promotion *promotions;
	size_t nr_promotions, alloc_promotions;
	struct gdn_report_gap *gaps;
	size_t nr_gaps, alloc_gaps;
	/* all workers: mean busy and accelerator-busy fractions (NAN without active time) */
	double busy, accel_busy;
	/*
	 * What the HTML puts before an iteration's trace_file (a path under the
	 * log dir) so that its link resolves from where the page is written
	 * (gdn_report_set_link_base); NULL: the page is in the log dir.
	 */
	char *link_base;
};
#define GDN_REPORT_INIT                                                                            \
	{                                                                                          \
		.runs = STRVEC_INIT, .baseline = NAN, .last_ts_ms = -1, .workers = 1, .busy = NAN, \
		.accel_busy = NAN                                                                  \
	}
/* `gdnctl report --format`: what goes to standard output. */
enum gdn_report_format { GDN_REPORT_FORMAT_TEXT, GDN_REPORT_FORMAT_HTML, GDN_REPORT_FORMAT_JSON };
extern const struct gdn_enum gdn_report_format_enum[];

void gdn_report_init(struct gdn_report *r);
void gdn_report_release(struct gdn_report *r);

/*
 * Read a journal's bytes (`name` for messages) and build the model of run
 * `run_id` (NULL: the last run). A line that is not a JSON event object is
 * GDN_EPARSE "journal 'NAME' line N: ..."; a journal without runs or
 * without `run_id` is GDN_ENOTFOUND. A torn last line (no newline) is
 * ignored and noted in torn_last_line.
 */
int gdn_report_load_journal(struct gdn_report *r, const char *buf, size_t len, const char *run_id,
			    const char *name, struct gdn_err *err);
/*
 * Add a performance state's bytes (perf_state.json): the metric direction
 * and each iteration's trace deltas against its champion; when the run
 * made no performance decision, the state's champion and metric (the
 * champion line of a run that only kept or lost commits). GDN_EPARSE for a
 * malformed state (see gdn_perf_state_parse).
 */
int gdn_report_add_state(struct gdn_report *r, const char *buf, size_t len, const char *name,
			 struct gdn_err *err);
/*
 * Best effort: fill each iteration's hypothesis from its commit subjects
 * (libgit2, the run's working tree, or `repo` when non-NULL) or else from
 * <log_dir>/iteration-NNN-last-message.txt. Never fails.
 */
/*
 * The table of `gdnctl loop verify` (<log dir>/verify.json, src/report/verify.c):
 * each row's verified and claimed speed-ups on its iteration. GDN_EPARSE naming
 * `name` when it is not that document.
 */
int gdn_report_add_verify(struct gdn_report *r, const char *buf, size_t len, const char *name,
			  struct gdn_err *err);
void gdn_report_add_hypotheses(struct gdn_report *r, const char *repo, const char *log_dir);

/*
 * Where the page is written: `output` (a file path; NULL: nowhere, e.g.
 * standard output). Sets r->link_base to the log dir relative to the
 * output's directory ("../logs/"; "" when they are the same), or to the log
 * dir's absolute path (with a final '/') when no relative path can be
 * made. Both are resolved with realpath(3) where they exist.
 */
void gdn_report_set_link_base(struct gdn_report *r, const char *log_dir, const char *output);
/*
 * The relative path from directory `from` to directory `to` (both
 * absolute and normalized), with a final '/' ("" when they are the same);
 * NULL when either is not absolute. Caller frees.
 */
char *gdn_report_relative_dir(const char *from, const char *to);

/*
 * The story in one line: "baseline 1.02 -> 14.35 (x14.1) in 5 iterations:
 * 2 kept, 3 reverted, 13 s" (without a metric, from "5 iterations").
 */
void gdn_report_headline(const struct gdn_report *r, struct sbuf *out);
/* The round ticks of an axis over [lo, hi] (log: 1-2-5 per decade); returns how many (<= max). */
size_t gdn_report_ticks(double lo, double hi, bool log, double *ticks, size_t max);

/* The run had more than one worker: the report shows its lanes and promotions. */
bool gdn_report_parallel(const struct gdn_report *r);

/*
 * The lanes, for the model (src/report/lanes.c; the loader calls them):
 * an event's "worker" (1 without one, 0 for an id out of range); one
 * event of the selected run at time t (ms, -1 unknown; prev: the run's
 * previous event time) of worker k (0: none); the sums once the journal
 * is read (after the totals); release.
 */
long gdn_report_event_worker(json_t *o);
void gdn_report_lane_event(struct gdn_report *r, const char *ev, json_t *o, long long t,
			   long long prev, long k);
void gdn_report_lanes_finish(struct gdn_report *r);
void gdn_report_lanes_release(struct gdn_report *r);

/* Renderers: append to out. */
void gdn_report_render_text(const struct gdn_report *r, struct sbuf *out);
void gdn_report_render_html(const struct gdn_report *r, struct sbuf *out);
/* New reference: the JSON document {"schema": "gdnctl.report.v1", ...}. */
json_t *gdn_report_json(const struct gdn_report *r);

/* Append s HTML-escaped (& < > " ' and control characters) to out. */
void gdn_report_html_escape(struct sbuf *out, const char *s);

#endif
