/*
 * Cold verification (`gdnctl loop verify`, src/loop/verify.c; issue 28):
 * every commit a loop run kept (the promoted records of its performance
 * state after the last baseline) is measured again against the run's
 * baseline in fresh interleaved A/B runs of the profile command, each in a
 * worktree of its own, and the
 * verified speed-up with its interval is set beside the claimed one. The
 * result is written to <log dir>/verify.json, which `gdnctl report` shows.
 * Nothing here prints.
 */
#ifndef GDNCTL_VERIFY_H
#define GDNCTL_VERIFY_H

#include <jansson.h>
#include "gdnctl/compat.h"

struct gdn_err;

#define GDN_VERIFY_SCHEMA "gdnctl.loop_verify/1"

struct gdn_verify_opts {
	const char *log_dir;	/* perf_state.json; the worktrees go under verify/ */
	const char *repo;	/* the repository the commits are in */
	const char *command;	/* the profile command; NULL: the one the state recorded */
	const char *trace_glob; /* for a trace/... metric: the trace a run wrote */
	long pairs;		/* A/B pairs per kept commit (>= 2) */
	double confidence;	/* of the interval, in (0, 1) */
	long timeout_ms;	/* per profile run; 0: none */
	/* progress, one line each (may be NULL) */
	void (*say)(const char *line, void *payload);
	void *payload;
};

struct gdn_verify_row {
	long iteration;
	char *commit;
	double claimed_pct;		     /* the run's: the record against the baseline's */
	double verified_pct, lo_pct, hi_pct; /* the fresh A/B estimate and its interval */
	size_t pairs;			     /* pairs with two values */
	bool reproduced;		     /* claimed_pct lies in [lo_pct, hi_pct] */
	bool faster;			     /* lo_pct > 0 */
};

struct gdn_verify_result {
	char *baseline; /* the baseline's commit */
	char *metric;
	bool lower_is_better;
	struct gdn_verify_row *v;
	size_t nr, alloc;
};
void gdn_verify_result_release(struct gdn_verify_result *r);

/*
 * Verify every kept commit. GDN_ENOTFOUND when the state has no baseline
 * or nothing kept; GDN_EFAILED when a profile run fails or gives no value
 * (the message names the commit). The worktrees are removed at the end.
 */
int gdn_verify_run(const struct gdn_verify_opts *o, struct gdn_verify_result *res,
		   struct gdn_err *err);
/* New reference: {"schema", "baseline", "metric", "direction", "rows": [...]}. */
json_t *gdn_verify_json(const struct gdn_verify_result *r);

#endif
