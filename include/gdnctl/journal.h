/*
 * The loop's journal (src/loop/journal.c): JSON lines written with O_APPEND +
 * fsync, and the state of the last run read back for --resume.
 */
#ifndef GDNCTL_JOURNAL_H
#define GDNCTL_JOURNAL_H

#include <jansson.h>
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

struct gdn_journal {
	int fd;
	char *path;
	char *run_id;
};
#define GDN_JOURNAL_INIT       \
	{                      \
		-1, NULL, NULL \
	}
/* Open (create) <log_dir>/loop.jsonl for appending. */
int gdn_journal_open(struct gdn_journal *j, const char *log_dir, const char *run_id,
		     struct gdn_err *err);
/*
 * Append one event: `ev` (stolen) gets "ts" (UTC, RFC 3339 with ms),
 * "run" and "event" first, and is written as one line with a single
 * write(2) on an O_APPEND descriptor, then fsync(2).
 */
int gdn_journal_write(struct gdn_journal *j, const char *event, json_t *ev, struct gdn_err *err);
/* New reference: {"iteration": it}, the start of most events. */
json_t *gdn_journal_iteration(long it);
/* New reference: the commit ids as a JSON array of strings (a `head` or `rebase` event's "ids"). */
json_t *gdn_journal_ids(const struct strvec *ids);
/*
 * New reference: the "agent_leftovers" event of an agent attempt: {"iteration",
 * "attempt", "processes": [{"pid", "argv0"}...]}, the processes the agent
 * left running and that were stopped.
 */
json_t *gdn_journal_leftovers(long it, long attempt, const struct gdn_proc_leftovers *l);
void gdn_journal_close(struct gdn_journal *j);

/* What --resume needs to know, rebuilt from the journal of the last run. */
/* The most workers a run may have (--workers), and the most targets (--targets). */
#define GDN_LOOP_WORKERS_MAX 64
/* The most worker slots (worktrees): --workers N --targets M has N + M. */
#define GDN_LOOP_SLOTS_MAX (2 * GDN_LOOP_WORKERS_MAX)

struct gdn_loop_state {
	char *run_id;	     /* NULL: the journal holds no run */
	long iterations;     /* planned, from run_start */
	long last_done;	     /* highest iteration with a decision */
	bool ended;	     /* a run_end was written */
	char *end_reason;    /* its reason */
	long failures;	     /* counted failures so far */
	long consecutive;    /* consecutive failed iterations at the end */
	long commits;	     /* commits kept by completed iterations */
	long iterations_run; /* iterations that reached a decision */
	long fail_kinds[GDN_FAIL_NR];
	int64_t agent_ms;	      /* time spent in the agent */
	struct gdn_agent_usage usage; /* the usage events' sum (-1: none) */
	long usage_iterations;
	/* The iteration in progress at the crash (0: none) and what it had done. */
	long open_iter;
	char *open_head;	 /* HEAD before it, or NULL */
	bool open_agent;	 /* the agent had started */
	bool open_decided;	 /* it reached its decision */
	bool open_restored;	 /* its stash was restored (the tree holds the user's changes) */
	long agent_pgid;	 /* its agent's process group while the agent ran (0: none) */
	long long agent_started; /* that process's start time (/proc/PID/stat field 22) */
	char *agent_mark;	 /* its GDNCTL_AGENT_RUN mark (agent_start), or NULL */
	/* A stash saved by the loop and neither restored nor reported kept. */
	char *stash_msg;      /* its message, or NULL */
	char *stash_sha;      /* its commit id (NULL: saving had begun, id not recorded) */
	bool stash_restoring; /* a restore had begun */
	long stash_iter;
	/* An interrupted agent's work being stashed by a recovery, not yet reported kept. */
	char *leftover_msg, *leftover_sha;
	/* Stashes reported kept (for manual recovery): "sha message" each. */
	struct strvec kept;
	/*
	 * --isolation worktree: the agent's worktree (journaled before it is
	 * made), the loop branch and the champion (run_start, then each
	 * `promote`); all NULL in place.
	 */
	char *worktree, *loop_branch, *champion;
	/* The last stash preflight's throw-away worktree (removed on resume if still there). */
	char *preflight;
	/* The run's effective decision options (run_start "options", updated by each
	 * resume_override "options"), or NULL. */
	json_t *options;
	/*
	 * --workers N (run_start "workers"; 0 or 1: one): the agents' marks
	 * still running ("ITERATION MARK" each, agent_start without its
	 * agent_end), the iterations decided (decided[i] for iteration i,
	 * up to decided_nr), and per worker K its worktree (worktree_add) and
	 * the iteration it had begun and not decided (0: none).
	 */
	long workers;
	struct strvec open_marks;
	unsigned char *decided;
	size_t decided_nr;
	char *worker_tree[GDN_LOOP_SLOTS_MAX + 1];
	long worker_open[GDN_LOOP_SLOTS_MAX + 1];
};
#define GDN_LOOP_STATE_INIT                                    \
	{                                                      \
		.kept = STRVEC_INIT, .open_marks = STRVEC_INIT \
	}
/* Whether iteration `it` has a decision in the run (st->decided). */
bool gdn_loop_state_decided(const struct gdn_loop_state *st, long it);
/*
 * Rebuild the state of the last run from a journal's bytes. A last line
 * without its newline (a torn write) is ignored. Returns 0, or GDN_EPARSE
 * naming the 1-based line of a malformed event.
 */
int gdn_journal_parse(const char *buf, size_t len, struct gdn_loop_state *st, struct gdn_err *err);
/*
 * Walk a journal's bytes: fn(event name, event object, payload) for each
 * complete line (blank lines skipped). A last line without its newline (a
 * torn write) is not passed on and sets *torn (may be NULL). Returns 0, or
 * GDN_EPARSE "journal line N: WHY" (with `name`: "journal 'NAME' line N:
 * WHY") for a line that is not an event object.
 */
typedef void (*gdn_journal_event_fn)(const char *event, json_t *ev, void *payload);
int gdn_journal_each(const char *buf, size_t len, const char *name, gdn_journal_event_fn fn,
		     void *payload, bool *torn, struct gdn_err *err);
void gdn_loop_state_release(struct gdn_loop_state *st);

/*
 * The journal's events that a reader reads, one row each (journal_events.c),
 * sorted by name: the event's name, the fields its readers take beside
 * those of every event ("run", "ts", "event", and "iteration", "worker" of
 * an iteration's), which readers read it, and what it records. The readers
 * (the state a resume rebuilds, journal.c; `gdnctl loop status`, status.c;
 * the report, src/report/model.c and lanes.c) switch on gdn_journal_event()
 * of a line's name, never on the name itself. An event no reader takes
 * (written for people and tools) has no row: GDN_EV_UNKNOWN.
 */
enum gdn_event {
	GDN_EV_UNKNOWN = 0,
	GDN_EV_AGENT,
	GDN_EV_AGENT_END,
	GDN_EV_AGENT_PID,
	GDN_EV_AGENT_START,
	GDN_EV_CHECK,
	GDN_EV_CONFLICT,
	GDN_EV_DECISION,
	GDN_EV_ERROR,
	GDN_EV_FAILURE,
	GDN_EV_HEAD,
	GDN_EV_INTERRUPTED,
	GDN_EV_ITERATION_END,
	GDN_EV_ITERATION_START,
	GDN_EV_MEASUREMENT,
	GDN_EV_PERF_AB,
	GDN_EV_PERF_DECISION,
	GDN_EV_PREFLIGHT_WORKTREE,
	GDN_EV_PROMOTE,
	GDN_EV_REBASE,
	GDN_EV_RECHECK,
	GDN_EV_REF_KEPT,
	GDN_EV_RESUME_OVERRIDE,
	GDN_EV_REVERT,
	GDN_EV_RUN_END,
	GDN_EV_RUN_RESUME,
	GDN_EV_RUN_START,
	GDN_EV_STAMP,
	GDN_EV_STASH_FORGOTTEN,
	GDN_EV_STASH_KEPT,
	GDN_EV_STASH_RESTORED,
	GDN_EV_STASH_RESTORING,
	GDN_EV_STASH_SAVED,
	GDN_EV_STASH_SAVING,
	GDN_EV_STOP,
	GDN_EV_TARGET,
	GDN_EV_TRACE,
	GDN_EV_USAGE,
	GDN_EV_VALIDATION,
	GDN_EV_WORKER_END,
	GDN_EV_WORKTREE_ADD,
	GDN_EV_NR
};
/* Which readers read an event. */
enum gdn_event_reader {
	GDN_EV_READ_STATE = 1 << 0,  /* journal.c: the state --resume rebuilds */
	GDN_EV_READ_STATUS = 1 << 1, /* status.c: gdnctl loop status */
	GDN_EV_READ_REPORT = 1 << 2, /* src/report: gdnctl report */
};
struct gdn_event_def {
	const char *name;
	const char *fields; /* space-separated */
	unsigned readers;   /* enum gdn_event_reader */
	const char *about;
};
/* Indexed by enum gdn_event; row GDN_EV_UNKNOWN is all NULL. */
extern const struct gdn_event_def gdn_journal_events[GDN_EV_NR];
/* The event of a journal line's "event" name (NULL: GDN_EV_UNKNOWN). */
enum gdn_event gdn_journal_event(const char *name);

#endif
