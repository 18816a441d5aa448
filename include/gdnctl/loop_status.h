/*
 * A running loop seen from outside (`gdnctl loop status`, src/loop/status.c):
 * the last run of a journal (<log dir>/loop.jsonl) read back into where it
 * is (iteration, phase, elapsed time), its champion, its last decisions,
 * the failures budget left and the agent's last output line.
 *
 * Also the one table that turns the journal's tokens (decision and
 * failure names, "performance within_threshold: METRIC") into words for
 * people, used by the status and the report.
 *
 * Nothing here prints or exits.
 */
#ifndef GDNCTL_LOOP_STATUS_H
#define GDNCTL_LOOP_STATUS_H

#include <jansson.h>
#include "gdnctl/compat.h"

struct gdn_err;
struct sbuf;

#define GDN_LOOP_STATUS_SCHEMA	  "gdnctl.loop_status.v1"
#define GDN_LOOP_STATUS_DECISIONS 5 /* last decisions kept */

/* ---- tokens in words ---- */

/* The words for a journal token ("within_threshold" -> "within the noise band"), or NULL. */
const char *gdn_loop_token_words(const char *token);
/*
 * Append `reason` for people: a bare token becomes its words,
 * "performance TOKEN: METRIC" becomes "WORDS (METRIC)", and any other
 * token with an underscore inside the text is replaced by its words.
 */
void gdn_loop_reason_words(struct sbuf *out, const char *reason);

/* Milliseconds since the epoch of a journal "ts" (YYYY-MM-DDTHH:MM:SS[.mmm]Z), or -1. */
long long gdn_loop_ts_ms(const char *ts);

/* A duration for people: "850 ms", "4.2 s", "13 s", "4 min 10 s", "2 h 5 min". */
void gdn_loop_add_duration(struct sbuf *out, long long ms);

/* ---- the status of the last run ---- */

struct gdn_loop_status_decision {
	long iteration;
	char *text; /* "kept 1 commit: promoted, 2.83 (+179.81%)" (owned) */
};

struct gdn_loop_status {
	char *run_id;	   /* NULL: the journal holds no run */
	char *workdir;	   /* owned, or NULL */
	long planned;	   /* --iterations */
	long max_failures; /* -1 unlimited; -2 not in the journal (older gdnctl) */
	long stop_after_failures;
	bool ended;
	char *end_reason; /* owned, or NULL */
	bool has_exit;
	int exit_code;
	long iteration;	    /* the iteration in progress, or the last one begun (0: none) */
	bool in_iteration;  /* it has begun and not ended */
	char *phase;	    /* what the loop is doing, in words (owned) */
	char phase_key[24]; /* the phase without its details: its start is phase_start_ms */
	long long run_start_ms, iteration_start_ms, phase_start_ms, last_event_ms; /* -1: unknown */
	long long active_before_ms; /* time the run ran before its last resume (idle gaps out) */
	long long
	    segment_start_ms; /* the start of the current stretch (run_start or last resume) */
	long resumes;
	long done;				    /* iterations with a decision */
	long kept, reverted, failures, consecutive; /* failures: counted, as the policy counts */
	char *metric;				    /* owned, or NULL */
	bool has_champion;
	double champion;
	char *champion_commit; /* owned, or NULL */
	long champion_iteration;
	struct gdn_loop_status_decision last[GDN_LOOP_STATUS_DECISIONS]; /* oldest first */
	size_t nr_last;
	char *agent_line; /* the agent's last output line (owned), or NULL */
	/* internal: the iteration being decided */
	char *pending_perf, *pending_revert, *pending_summary;
	bool pending_reverted;
};
void gdn_loop_status_init(struct gdn_loop_status *st);
void gdn_loop_status_release(struct gdn_loop_status *st);

/*
 * Read the last run of a journal's bytes (`name` for messages). A torn
 * last line is ignored. GDN_EPARSE for a line that is not an event
 * object; a journal without runs is not an error (run_id stays NULL).
 */
int gdn_loop_status_load(struct gdn_loop_status *st, const char *buf, size_t len, const char *name,
			 struct gdn_err *err);
/*
 * Best effort: the last line the agent printed in the current (or last)
 * iteration, from <log_dir>/iteration-NNN-transcript.log, gdnctl's own
 * marker lines skipped.
 */
void gdn_loop_status_read_agent_line(struct gdn_loop_status *st, const char *log_dir);

/* The run's active time at now_ms: idle gaps before resumes are not counted. */
long long gdn_loop_status_elapsed_ms(const struct gdn_loop_status *st, long long now_ms);

/* Renderers, with now_ms the current time (ms since the epoch). */
void gdn_loop_status_render_text(const struct gdn_loop_status *st, long long now_ms,
				 struct sbuf *out);
/* New reference: {"schema": "gdnctl.loop_status.v1", ...}. */
json_t *gdn_loop_status_json(const struct gdn_loop_status *st, long long now_ms);

#endif
