/*
 * The loop engine (`gdnctl loop`, alias `codex-loop`): an unattended
 * hill-climb that runs an agent once per iteration in a git working tree
 * and never loses work. The engine never prints: progress goes through
 * the `say` callback of struct gdn_loop_opts, every state transition to
 * an append-only journal (<log dir>/loop.jsonl) that --resume reads.
 *
 * Modules:
 *   engine.c   the iteration lifecycle and its policies
 *   journal.c  the JSON-lines journal: write (O_APPEND + fsync), read back
 *   prompt.c   template substitution and session directives
 *   gitops.c   git through the child-process API: transient-lock retries,
 *              stash by commit id with a conflict preflight, sync with a remote
 *   gate.c     the hooks: the validation gate and the performance policy
 *   targets.c  where the gate's phases run: held dev TPU, Ray fallback clusters
 *   hold.c     the dev TPU held for the whole loop (--hold-dev-tpu)
 *   measure.c  the metric source (W&B or the output) and --log-measurements
 */
#ifndef GDNCTL_LOOP_H
#define GDNCTL_LOOP_H

#include <jansson.h>
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/backend.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

struct gdn_err;

/* ---- policies ---- */

/* --post-check-policy, --no-commit-policy, --iteration-error-policy */
enum gdn_loop_policy {
	GDN_POLICY_FAIL = 0,
	GDN_POLICY_COUNT_FAILURE,
	GDN_POLICY_CONTINUE,
};
/* "fail", "count-failure", "continue" (src/loop/policy.c: the names of this section's enums). */
extern const struct gdn_enum gdn_loop_policy_enum[];
const char *gdn_loop_policy_name(enum gdn_loop_policy p);

enum gdn_loop_verdict {
	GDN_VERDICT_EXIT = 0, /* stop the loop with the failure's exit code */
	GDN_VERDICT_NEXT,     /* skip the rest of the iteration, go on */
};
/*
 * Apply a policy to a failure: fail exits; count-failure adds one to
 * *failures and exits when max_failures >= 0 and *failures > max_failures;
 * continue goes on. *counted says whether the failure was counted.
 */
enum gdn_loop_verdict gdn_loop_policy_apply(enum gdn_loop_policy p, long *failures,
					    long max_failures, bool *counted);

enum gdn_dirty_policy { GDN_DIRTY_FAIL = 0, GDN_DIRTY_STASH };
enum gdn_restore_policy { GDN_RESTORE_WARN_KEEP = 0, GDN_RESTORE_FAIL };
enum gdn_sync_policy { GDN_SYNC_OFF = 0, GDN_SYNC_ONCE, GDN_SYNC_EACH };
enum gdn_sync_conflict { GDN_SYNC_CONFLICT_FAIL = 0, GDN_SYNC_CONFLICT_SKIP };
/* --dirty-policy, --stash-restore-policy, --sync-main-policy, --sync-main-conflict-policy */
extern const struct gdn_enum gdn_dirty_policy_enum[], gdn_restore_policy_enum[];
extern const struct gdn_enum gdn_sync_policy_enum[], gdn_sync_conflict_enum[];

/* Failure kinds, counted in the summary. */
enum gdn_loop_failure {
	GDN_FAIL_AGENT = 0,
	GDN_FAIL_POST_CHECK,
	GDN_FAIL_NO_COMMIT,
	GDN_FAIL_HOOK,
	GDN_FAIL_ITERATION_ERROR,
	GDN_FAIL_NR,
};
/* "agent", "post_check", "no_commit", "hook", "iteration_error" (journal.c: the journal's names).
 */
const char *gdn_loop_failure_name(enum gdn_loop_failure f);

/* ---- progress messages ---- */

enum gdn_loop_level {
	GDN_LOOP_INFO = 0, /* stdout: "[gdnctl] msg" */
	GDN_LOOP_HEADING,  /* stdout: "\n[gdnctl] msg" */
	GDN_LOOP_NOTE,	   /* stderr: "[gdnctl] msg" (the original's failure messages) */
	GDN_LOOP_WARN,	   /* stderr: "[gdnctl] WARNING: msg" */
};
typedef void (*gdn_loop_say_fn)(enum gdn_loop_level level, const char *msg, void *payload);

/* ---- git operations (gitops.c) ---- */

/*
 * Whether git output names a transient lock error: it matches the
 * original's GIT_TRANSIENT_ERROR_RE
 * `(index\.lock|Another git process seems to be running|Unable to create '.+?\.lock')`.
 */
bool gdn_git_transient_error(const char *out);

struct gdn_git {
	const char *workdir;
	int retries;	     /* extra attempts on a transient lock error (the original: 3) */
	int retry_sleep_ms;  /* between them (the original: 2000) */
	gdn_loop_say_fn say; /* echo and retry messages, or NULL */
	void *payload;
};
/*
 * Run `git ARGS...` in g->workdir, capturing merged output in *out (may be
 * NULL). Returns 0 when git ran (its exit code in *rc), or a gdn_errcode
 * when it could not be started.
 */
int gdn_git_run(const struct gdn_git *g, const char *const *args, int *rc, struct sbuf *out,
		struct gdn_err *err);
/* gdn_git_run with the arguments as a NULL-terminated list. */
int gdn_git_runl(const struct gdn_git *g, int *rc, struct sbuf *out, struct gdn_err *err, ...);

/*
 * Merge <remote>/<branch> into the current branch after a fetch (the
 * original's --sync-main). A merge conflict is aborted and, under
 * GDN_SYNC_CONFLICT_SKIP, reported and skipped. Returns 0 (merged, or
 * skipped by policy) or an error.
 */
int gdn_git_sync(const struct gdn_git *g, const char *remote, const char *branch,
		 enum gdn_sync_conflict conflict, struct gdn_err *err);

struct gdn_repo;
struct gdn_loop_state;

/*
 * The stash the loop saved for an iteration, and what the stash
 * operations need. Progress goes to git->say, events to journal(ctx, ...)
 * (`ev` stolen): stash_saving, stash_saved, stash_restoring,
 * stash_restored, stash_kept, stash_forgotten.
 */
struct gdn_stash {
	const struct gdn_git *git; /* borrowed */
	struct gdn_repo *repo;	   /* the run's repository (borrowed) */
	enum gdn_restore_policy restore_policy;
	struct strvec *kept; /* stashes reported kept: "sha message" each (borrowed) */
	void (*journal)(void *ctx, const char *event, json_t *ev);
	void *ctx;
	/* the stash saved by the current iteration (sha NULL: none) */
	char *sha, *msg;
	long iter;
};
/* Where the restore preflight's throw-away worktrees live (a mkdtemp prefix). */
#define GDN_STASH_PREFLIGHT_PREFIX "/tmp/gdnctl-stash-preflight-"
/* Forget the current stash (it stays in git's stash list). */
void gdn_stash_forget(struct gdn_stash *s);
/*
 * `git stash push -u -m msg` for iteration `it` and find it by message: it
 * becomes the current stash. kind: "user" (the tree before an iteration),
 * "leftovers" (an interrupted agent's work).
 */
int gdn_stash_save(struct gdn_stash *s, long it, const char *msg, const char *kind,
		   struct gdn_err *err);
/*
 * Restore the current stash by its commit id (never by position: the
 * agent may have pushed or dropped stashes), after applying it in a
 * throw-away worktree at HEAD; then forget it. Returns 0 (restored, or
 * kept under warn-keep) or an error (the restore policy is fail, or
 * recovery failed). Nothing without a current stash.
 */
int gdn_stash_restore(struct gdn_stash *s, struct gdn_err *err);
/* Journal the current stash as kept (stash_kept, `reason`) and add it to s->kept. */
void gdn_stash_report_kept(struct gdn_stash *s, const char *reason);
/*
 * --resume: the stash the interrupted run saved and did not restore
 * (st->stash_msg set; st->stash_sha gets its id when it was found by
 * message): dropped when a restore had begun and its changes are all in
 * the tree, else restored; forgotten (journaled) when the push never
 * happened.
 */
int gdn_stash_recover(struct gdn_stash *s, struct gdn_loop_state *st, struct gdn_err *err);

/* ---- the journal (journal.c) ---- */

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
void gdn_journal_close(struct gdn_journal *j);

/* What --resume needs to know, rebuilt from the journal of the last run. */
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
	int64_t agent_ms; /* time spent in the agent */
	/* The iteration in progress at the crash (0: none) and what it had done. */
	long open_iter;
	char *open_head;	 /* HEAD before it, or NULL */
	bool open_agent;	 /* the agent had started */
	bool open_decided;	 /* it reached its decision */
	bool open_restored;	 /* its stash was restored (the tree holds the user's changes) */
	long agent_pgid;	 /* its agent's process group while the agent ran (0: none) */
	long long agent_started; /* that process's start time (/proc/PID/stat field 22) */
	/* A stash saved by the loop and neither restored nor reported kept. */
	char *stash_msg;      /* its message, or NULL */
	char *stash_sha;      /* its commit id (NULL: saving had begun, id not recorded) */
	bool stash_restoring; /* a restore had begun */
	long stash_iter;
	/* An interrupted agent's work being stashed by a recovery, not yet reported kept. */
	char *leftover_msg, *leftover_sha;
	/* Stashes reported kept (for manual recovery): "sha message" each. */
	struct strvec kept;
};
#define GDN_LOOP_STATE_INIT         \
	{                           \
		.kept = STRVEC_INIT \
	}
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

/* ---- prompt (prompt.c) ---- */

struct gdn_prompt_vars {
	long iteration;
	long total;
	const char *head_sha;
	const char *branch;   /* NULL: "" */
	const char *log_tail; /* NULL: "" */
};
/*
 * The prompt of one iteration, appended to out: the template with
 * {{ITERATION}}, {{TOTAL_ITERATIONS}}, {{HEAD_SHA}}, {{BRANCH}} and
 * {{LOG_TAIL}} replaced (every occurrence); with directives, the original's
 * framing: rstrip, "\n\nSession directives for this codex-loop run (must
 * follow unless they conflict with tests/correctness):\n\n", then
 * "[Directive N]\n<text>" blocks joined with "\n", then "\n".
 */
void gdn_prompt_render(const char *tmpl, const struct gdn_prompt_vars *v,
		       const struct strvec *directives, struct sbuf *out);
/*
 * Read one directive file (stripped) and append it to `directives`.
 * `source` names it in errors: "directive file not found for <source>:
 * <path>" (GDN_ENOTFOUND), "directive file is empty for <source>: <path>"
 * (GDN_EUSAGE).
 */
int gdn_prompt_add_directive_file(struct strvec *directives, const char *path, const char *source,
				  struct gdn_err *err);
/*
 * The first existing file `rel` (e.g. "prompts/iteration.md") under each
 * of `dirs` (NULL-terminated; NULL entries skipped). Returns a new string
 * or NULL.
 */
char *gdn_prompt_find(const char *const *dirs, const char *rel);
/* The last entry of a running log ("### Iteration " heading to EOF), appended to out. */
void gdn_prompt_log_tail(const char *log, size_t len, struct sbuf *out);
/*
 * Replace a `- Commit: (pending)` / `- Commit: this commit` placeholder in
 * the last entry of a running log by `- Commit: <sha>` (the original's
 * stamping rules). Returns 1 when the file was rewritten, 0 when there was
 * nothing to stamp (or no file), or a gdn_errcode.
 */
int gdn_prompt_stamp_log(const char *path, const char *sha, struct gdn_err *err);

/* ---- the engine (engine.c) ---- */

/* How the engine runs the agent (cmd_loop.c binds the agent drivers). */
struct gdn_loop_agent {
	int (*run)(void *agent, const struct gdn_agent_request *req, struct gdn_agent_result *res,
		   struct gdn_err *err);
	void (*release)(struct gdn_agent_result *res);
	void *agent;
};

/* One iteration, as the hooks see it. */
struct gdn_loop_iter {
	long iteration;
	const char *head_before;
	const char *head_after;
	long commits; /* new commits on top of head_before (0: none, or HEAD did not advance) */
	/*
	 * The engine's reporting, for the hooks (which never print): a
	 * progress message (through gdn_loop_opts.say) and a journal event
	 * (`ev` stolen). Both are always set.
	 */
	void (*report)(void *ctx, enum gdn_loop_level level, const char *msg);
	void (*journal)(void *ctx, const char *event, json_t *ev);
	void *ctx;
};
/* it->report with a printf format. */
void gdn_loop_reportf(const struct gdn_loop_iter *it, enum gdn_loop_level level, const char *fmt,
		      ...) GDN_PRINTF(3, 4);
/* What a hook did besides its return value (zeroed by the engine before each call). */
struct gdn_loop_hook_out {
	/*
	 * The hook reverted the iteration's commits: none of them is kept
	 * (the decision journals 0 commits) and the running log is not
	 * stamped, whether the hook accepted (0) or failed (> 0). Without it
	 * a failure keeps them: counted in the decision and the summary, and
	 * the running log stamped, as for an accepted iteration.
	 */
	bool reverted;
	/* With a failure (> 0): handle it with `policy` instead of gdn_loop_hooks.policy. */
	bool has_policy;
	enum gdn_loop_policy policy;
};

/*
 * The seam for the validation gate and the performance policy: called
 * after the post-checks and the no-commit check, in that order (decide
 * only when validate accepted). With --allow-no-commit they also run for
 * an iteration without a commit (it->commits == 0): they must then never
 * revert anything (the original reverted a commit the iteration had not
 * made: docs/compatibility.md, "Bugs of the original that gdnctl fixes"). Each returns 0 to accept,
 * an exit code (> 0) for a failure that the iteration-level `policy` (or out->policy) handles like
 * a post-check failure (kind "hook", message err->msg), or a negative
 * gdn_errcode for an iteration error. Either, when gdnctl was interrupted
 * (SIGINT/SIGTERM) meanwhile, is the interruption: no policy, no
 * decision, exit 128+N (--resume redoes the iteration).
 *
 * `start` (may be NULL) runs once at the start of a new run (not on
 * --resume), after the run_start event, with iteration 0 and HEAD as both
 * heads (commits 0): the performance policy measures its baseline there.
 * A non-zero return stops the run before iteration 1: > 0 is the exit
 * code, < 0 an error (gdn_loop_run returns it), or, when interrupted,
 * exit 128+N with `interrupted` journaled.
 */
struct gdn_loop_hooks {
	int (*validate)(void *payload, const struct gdn_loop_iter *it,
			struct gdn_loop_hook_out *out, struct gdn_err *err);
	int (*decide)(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		      struct gdn_err *err);
	void *payload;
	enum gdn_loop_policy policy;
	int (*start)(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err);
	/*
	 * `synced` (may be NULL) runs when --sync-main-policy moved HEAD at the
	 * start of an iteration, before the agent, with the new HEAD as both
	 * heads: the performance policy re-measures its champion there. A
	 * non-zero return is an iteration error (err says why).
	 */
	int (*synced)(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err);
};

struct gdn_loop_opts {
	const char *workdir;
	const char *log_dir;
	const char *prompt_template; /* the template's text */
	const struct strvec *directives;
	const char *hillclimb_log; /* absolute path, or NULL */
	long iterations;
	long sleep_ms;
	const struct strvec *post_checks;
	enum gdn_loop_policy post_check_policy, no_commit_policy, iteration_error_policy;
	long max_failures; /* -1: unlimited */
	long agent_retries, post_check_retries;
	long retry_sleep_ms;
	bool allow_dirty, allow_no_commit;
	enum gdn_dirty_policy dirty_policy;
	enum gdn_restore_policy restore_policy;
	enum gdn_sync_policy sync_policy;
	const char *sync_remote, *sync_branch;
	enum gdn_sync_conflict sync_conflict;
	/* stop conditions (0: none) */
	time_t until_time;	  /* wall clock, seconds since the epoch */
	int64_t max_agent_ms;	  /* total time in the agent */
	long stop_after_failures; /* consecutive failed iterations */
	bool resume;		  /* continue the last run of the journal */
	const char *run_id;	  /* for a new run; NULL: generated */
	int git_retry_sleep_ms;	  /* transient lock retries (default 2000) */
	gdn_loop_say_fn say;
	gdn_line_fn on_agent_line; /* the agent's filtered output, for the terminal */
	void *payload;
};

struct gdn_loop_summary {
	char *run_id;
	long iterations_run; /* iterations that reached a decision (all sessions of the run) */
	long commits;	     /* commits kept */
	long failures;	     /* counted failures */
	long fail_kinds[GDN_FAIL_NR];
	int64_t agent_ms;
	char *stop_reason; /* "completed", "iterations", "failure-limit", "until-time", ... */
	int exit_code;
	struct strvec stashes_kept; /* "sha message" */
	char *journal;		    /* path */
};
#define GDN_LOOP_SUMMARY_INIT               \
	{                                   \
		.stashes_kept = STRVEC_INIT \
	}
void gdn_loop_summary_release(struct gdn_loop_summary *s);
/* New reference: {"schema": "gdnctl.loop_summary.v1", ...}. */
json_t *gdn_loop_summary_json(const struct gdn_loop_summary *s);

/*
 * Run the loop. Returns 0 when it ran (the verdict, with the original's
 * exit codes, is sum->exit_code: 0; the agent's code, 124 on a timeout;
 * 1; 2 for an iteration error; 3 for a missing commit; 128+N when
 * interrupted by signal N), or a negative gdn_errcode when it could not
 * start (journal, repository, nothing to resume).
 */
int gdn_loop_run(const struct gdn_loop_opts *o, const struct gdn_loop_agent *agent,
		 const struct gdn_loop_hooks *hooks, struct gdn_loop_summary *sum,
		 struct gdn_err *err);

/* ---- the validation gate and the performance policy (gate.c): the hooks ---- */

struct gdn_backend;
struct gdn_perf_config;
struct gdn_perf_state;
struct gdn_measure_opts;

enum gdn_gate_mode {
	GDN_GATE_OFF = 0,
	GDN_GATE_REQUIRED,     /* tests, then profile */
	GDN_GATE_PROFILE_ONLY, /* profile only */
};
/* --validation-mode: "required", "profile-only", "off". */
extern const struct gdn_enum gdn_gate_mode_enum[];

struct gdn_gate {
	const char *workdir;
	enum gdn_gate_mode mode;
	const char *test_command, *profile_command; /* NULL or "": the phase is skipped */
	long timeout_ms;			    /* per phase; 0: none */
	struct gdn_backend *backend;		    /* borrowed */
	gdn_line_fn on_line;			    /* the phases' output */
	void *payload;
	/* The performance policy (perf_config NULL: off); all borrowed. */
	const struct gdn_perf_config *perf_config;
	struct gdn_perf_state *perf_state; /* loaded; saved after each decision */
	long perf_repeats;		   /* profile runs per commit (>= 1) */
	const char *trace_glob;		   /* relative to workdir, or NULL */
	/* The W&B source and --log-measurements (measure.h); NULL: neither. */
	const struct gdn_measure_opts *measure;
	/*
	 * --validation-retries: a phase that could not run (a backend error
	 * such as an unreachable ssh host) or whose job was stopped from
	 * outside runs again up to this many times, retry_sleep_ms apart; a
	 * command that ran and failed is never retried.
	 */
	long phase_retries, retry_sleep_ms;
	/* Where the phases run (targets.c); NULL: on `backend` only. Borrowed. */
	struct gdn_targets *targets;
	/* Private: the profile runs of the validation gate, reused by decide. */
	void *measured;
	long measured_iter;
};
/*
 * The validate hook (payload: struct gdn_gate). For an iteration with
 * commits, runs each phase with `bash -lc` on the backend (in the working
 * tree for the local backend) and journals a `validation` event (phase,
 * rc, state, duration_ms). A failed phase reverts every commit of the
 * iteration (gdn_revert_iteration, reason "validation failed: <phase>
 * exit N"), journals `revert` (discarded ref, head) and returns the exit
 * code (> 0) with the reason in err; a failed revert is an error (< 0).
 * A phase that could not run even after phase_retries (a backend error,
 * or a job still stopped from outside: GDN_EBACKEND) or was interrupted
 * also reverts (reason "validation could not run: ..." or "validation
 * interrupted by signal N") and returns the error (< 0).
 * Never reverts an iteration without commits (it does nothing then).
 */
int gdn_gate_validate(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		      struct gdn_err *err);
/*
 * The decide hook (payload: struct gdn_gate with perf_config set). For an
 * iteration with commits: profiles HEAD perf_repeats times (or reuses the
 * validation gate's profile runs of this iteration): each run's output
 * gives the CLI metric (or, with `measure`, the W&B value: measure.h; a
 * `measurement` event per W&B sample), and the newest file matching
 * trace_glob that the run wrote gives the trace figures; then
 * gdn_perf_decide(), saves the state, reports the reasons and journals a
 * `perf_decision` event, and carries out the action: revert (every commit
 * of the iteration, journaled as `revert`), count a failure (returns 1,
 * count-failure) or stop (returns 1, fail). A kept iteration's running-log
 * entry gets the measured figures with measure->log_file
 * (--log-measurements), committed (`log_measurements` event).
 */
int gdn_gate_decide(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		    struct gdn_err *err);
/*
 * The start hook: profiles the starting commit as the baseline (decision
 * `baseline`) unless the state already has a champion for the metric.
 */
int gdn_gate_start(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err);
/*
 * The synced hook: with the performance policy and a champion, profiles
 * the synced HEAD perf_repeats times and makes it the champion's
 * measurement (gdn_perf_champion_reprofile), journaled as
 * `perf_reprofile`: the next candidate is compared with the code it was
 * built on, not with a champion that predates the sync.
 */
int gdn_gate_synced(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err);
/* Free what the hooks kept between calls. */
void gdn_gate_release(struct gdn_gate *g);

/* ---- where validation runs: the held dev TPU (hold.c) and the targets (targets.c) ---- */

struct gdn_config;
struct gdn_hold;

/* --hold-dev-tpu-policy: "required" (1), "best-effort" (0); the value is gdn_hold_opts.required. */
extern const struct gdn_enum gdn_hold_policy_enum[];

/*
 * A dev TPU held for the whole loop (--hold-dev-tpu) through a dev-tpu
 * backend's hold/release ops. Progress goes to `say` (the original's
 * messages); journal events (`dev_tpu`: action acquired, failed, lost,
 * reacquire, rate_limited, released) go to the iteration's journal when
 * one is given, else they wait in the hold until gdn_hold_flush().
 */
struct gdn_hold_opts {
	struct gdn_backend *backend; /* type dev-tpu (borrowed) */
	const char *tpu_name;	     /* for messages and the directive */
	const char *tpu_type;	     /* NULL: v5p-8 in the directive */
	bool required;		     /* --hold-dev-tpu-policy required (else best-effort) */
	long reacquire_interval_ms;  /* at most one re-acquire this often */
	enum gdn_gate_mode mode;     /* the directive's last line */
	/*
	 * The session directives the engine renders each iteration (borrowed):
	 * the managed dev TPU directive is appended once held, and rewritten
	 * to name the cluster actually held after a re-acquire.
	 */
	struct strvec *directives;
	gdn_loop_say_fn say;
	void *payload;
};
struct gdn_hold *gdn_hold_new(const struct gdn_hold_opts *o);
/*
 * Acquire before the loop. Returns 0 when held, or, best-effort, when not
 * (a warning said so); GDN_EBACKEND with the allocation's last error under
 * the required policy; GDN_EINTR when interrupted.
 */
int gdn_hold_acquire(struct gdn_hold *h, struct gdn_err *err);
/*
 * The health check: whether the allocation is held and its process still
 * alive. A dead one is journaled (`lost`) and forgotten. it may be NULL.
 */
bool gdn_hold_alive(struct gdn_hold *h, const struct gdn_loop_iter *it);
/*
 * Re-acquire (stop what is left, allocate again) unless one was tried less
 * than reacquire_interval_ms ago. Returns true when held afterwards.
 */
bool gdn_hold_reacquire(struct gdn_hold *h, const struct gdn_loop_iter *it, const char *reason);
/* The cluster held now, or NULL. */
const char *gdn_hold_cluster(const struct gdn_hold *h);
/*
 * Release whatever is held, also a re-acquired allocation (which the
 * original leaked: docs/compatibility.md, "Bugs of the original that gdnctl fixes"). Idempotent.
 */
int gdn_hold_release(struct gdn_hold *h, struct gdn_err *err);
/* Write the events still waiting to <log_dir>/loop.jsonl under run_id. */
void gdn_hold_flush(struct gdn_hold *h, const char *log_dir, const char *run_id);
/* Release (errors ignored) and free. NULL is fine. */
void gdn_hold_free(struct gdn_hold *h);
/* The managed dev TPU directive for cluster C (the original's text, gdnctl commands). */
void gdn_hold_directive(const char *cluster, const char *tpu_name, const char *tpu_type,
			enum gdn_gate_mode mode, struct sbuf *out);

/* Ray fallback clusters from <repo>/infra/marin-*.yaml (the original's filters). */
struct gdn_cluster_filter {
	const struct strvec *excludes; /* case-insensitive substrings of the cluster name */
	const char *tpu;	       /* NULL, "" or "auto": any tpu_slice_ */
	bool modern;		       /* any of tpu_slice_v5p_, _v5e_, _v6e_ (tests) */
};
/* "tpu_slice_" + tpu lowered, runs of other than [a-z0-9] as one '_', '_' trimmed. */
void gdn_tpu_slice_key(const char *tpu, struct sbuf *out);
/* Whether cluster `name` (file stem minus "marin-") with YAML `text` passes f. */
bool gdn_cluster_matches(const char *name, const char *text, const struct gdn_cluster_filter *f);
/* Append the matching clusters of sorted <repo>/infra/marin-*.yaml to out (deduped). */
int gdn_clusters_discover(const char *repo, const struct gdn_cluster_filter *f, struct strvec *out,
			  struct gdn_err *err);
/* Append items of `in` not already in out (empty ones dropped). */
void gdn_strvec_add_unique(struct strvec *out, const struct strvec *in);

/*
 * The command of a phase on one target when it depends on the target (the
 * Marin defaults: include/gdnctl/marin_gate.h): `dev` for the held dev TPU
 * (cluster: the one held), else a Ray cluster or the one backend (cluster
 * NULL). Appends the command to `command` and "K=V" items to `env`; leaves
 * `command` empty for the phase's own command. 0 or a gdn_errcode.
 */
typedef int (*gdn_phase_command_fn)(void *payload, const struct gdn_loop_iter *it,
				    const char *phase, bool dev, const char *cluster,
				    struct sbuf *command, struct strvec *env, struct gdn_err *err);

/*
 * The ordered targets of each phase: the held dev TPU (when any), then
 * Ray fallback clusters (a ray backend each), or the one backend.
 */
struct gdn_targets_opts {
	const char *repo;	       /* the working tree: infra/ and the backends' repo_root */
	struct gdn_hold *hold;	       /* NULL: no held dev TPU */
	struct gdn_backend *dev;       /* the hold's dev-tpu backend (borrowed) */
	const struct strvec *clusters; /* --validation-ray-cluster */
	bool auto_discover;	       /* --validation-ray-cluster-auto */
	const struct strvec *excludes; /* added to the defaults vllm, big-run */
	const struct strvec *dev_clusters; /* the dev TPU's, first in the auto list */
	const char *test_tpu;		   /* --tpu of Ray test jobs (NULL: backend default) */
	const char *profile_tpu;	   /* of Ray profile jobs, and the discovery filter */
	bool cross_tpu_tests;		   /* tests: any modern TPU family */
	struct gdn_backend *backend;	   /* without clusters: the fallback (borrowed) */
	long passes;			   /* >= 1; < 0: until a pass succeeds (or interrupted) */
	long retry_sleep_ms;
	/* Ray fallback jobs: the phase timeout (0: spec's) and the output shown (0: all). */
	long ray_tests_timeout_ms, ray_profile_timeout_ms, ray_log_tail;
	gdn_phase_command_fn phase_command; /* NULL: the phase's command everywhere */
	void *phase_payload;
	gdn_backend_event_fn on_event; /* for the ray backends opened here */
	void *event_payload;
	gdn_loop_say_fn say;
	void *payload;
};
struct gdn_targets;
/*
 * Open a ray backend per fallback cluster (backends.validation-<purpose>-N
 * set in cfg) and report auto-discovered lists. 0 or a gdn_errcode.
 */
int gdn_targets_new(struct gdn_config *cfg, const struct gdn_targets_opts *o,
		    struct gdn_targets **out, struct gdn_err *err);
void gdn_targets_free(struct gdn_targets *t);
/*
 * Run a phase ("tests" or "profile") through the targets: up to `passes`
 * passes, retry_sleep_ms apart, each trying the held dev TPU (health
 * check, re-acquire when lost or failed), then each valid fallback in
 * order, then a re-acquired dev TPU once more. Stops at the first
 * success. A cluster whose submission said "No cluster config found for
 * region" is skipped for the rest of the run. Each try is journaled
 * (`validation`: phase, attempt, pass, target, cluster, rc, state,
 * duration_ms). spec gives the timeout and the output callback; the shell
 * is `command` (in `workdir` on a local backend), or what phase_command
 * gives for the target; Ray fallback jobs take the ray_*_timeout_ms of the
 * phase and show only their last ray_log_tail lines (when set). Returns 0 (*rc: the
 * last try's exit code), GDN_EINTR when interrupted, or another error.
 */
int gdn_targets_run(struct gdn_targets *t, const struct gdn_loop_iter *it, const char *phase,
		    long attempt, const char *command, const char *workdir,
		    const struct gdn_run_spec *spec, int *rc, struct gdn_err *err);

#endif
