/*
 * The loop engine (`gdnctl loop`, alias `codex-loop`; src/loop/run.c and the
 * stack below it, docs/loop-map.md): an unattended hill-climb that runs an
 * agent once per iteration in a git working tree and never loses work. The
 * engine never prints: progress goes through the `say` callback of struct
 * gdn_loop_opts, every state transition to an append-only journal
 * (<log dir>/loop.jsonl, journal.h) that --resume reads.
 *
 * The other modules of src/loop have their own headers: loop_policy.h,
 * gitops.h, journal.h, prompt.h, gate.h, hold.h, targets.h, measure.h,
 * perf.h, agent.h, loop_setup.h.
 */
#ifndef GDNCTL_LOOP_H
#define GDNCTL_LOOP_H

#include <jansson.h>
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/backend.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

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
/* "still running: WHAT, 5m12s, last output 3m00s ago" (the --heartbeat line), to sb. */
void gdn_loop_heartbeat_text(struct sbuf *sb, const char *what, int64_t elapsed_ms,
			     int64_t idle_ms);
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
	/* A note for the next iteration's prompt (owned: xstrdup'd; the engine frees it), or NULL.
	 */
	char *note;
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
	/*
	 * --workers N > 1: each worker's iteration runs in a forked child of
	 * the loop. There, before the agent and again before a re-validation,
	 * `worker` (may be NULL) points the agent's side and the gate at
	 * worker k's worktree `workdir` and target.
	 */
	int (*worker)(void *payload, long k, const char *workdir, struct gdn_err *err);
	/*
	 * `worker_state` (may be NULL) hands shared state between the children
	 * and the parent: GDN_WORKER_FORK in the child (after `worker`: read
	 * what the parent saved, keep the child's own writes apart),
	 * GDN_WORKER_ADOPT in the parent when worker k's child ended (take in
	 * what it recorded; `promoted`: its candidate became the champion),
	 * GDN_WORKER_END in the parent for each worker at the end of the run.
	 */
	int (*worker_state)(void *payload, long k, int what, bool promoted, struct gdn_err *err);
};
enum { GDN_WORKER_FORK = 1, GDN_WORKER_ADOPT, GDN_WORKER_END };

struct gdn_loop_opts {
	/*
	 * Where the agent and the gate work: the user's checkout in place, the
	 * agent's worktree (made by the engine, under the log dir) with
	 * --isolation worktree.
	 */
	const char *workdir;
	const char *user_workdir; /* the user's checkout */
	enum gdn_isolation isolation;
	long workers; /* worktrees, each with a child at work: --workers N, or N + M */
	/*
	 * --workers N --targets M: at most `agents` (N) children run their
	 * agent at once, at most `targets` (M) validate at once, each on a
	 * target of its own (0: every worker runs both, on its own target)
	 */
	long agents, targets;
	const char *worktree_dir; /* --worktree-dir (NULL: <log dir>/workers) */
	const char *branch;	  /* --branch: the loop branch (NULL: the checkout's) */
	enum gdn_agent_failure_commits agent_failure_commits;
	json_t *options; /* the effective decision options, journaled with run_start; or NULL */
	json_t *plan;	 /* what the run measures and how it decides, journaled likewise; or NULL */
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
	bool original_exit_codes; /* codex-loop: the original's (gdn_loop_exit_code) */
	enum gdn_dirty_policy dirty_policy;
	enum gdn_restore_policy restore_policy;
	enum gdn_sync_policy sync_policy;
	const char *sync_remote, *sync_branch;
	enum gdn_sync_conflict sync_conflict;
	/* stop conditions (0: none) */
	time_t until_time;	  /* wall clock, seconds since the epoch */
	int64_t max_agent_ms;	  /* total time in the agent */
	long stop_after_failures; /* consecutive failed iterations */
	/* the agent's reported usage (gdn_agent_result.usage) */
	int64_t max_tokens;	     /* input + output, in total */
	int64_t max_tokens_per_hour; /* input + output, in the last 60 minutes */
	double max_cost_usd;	     /* in total */
	bool resume;		     /* continue the last run of the journal */
	const char *run_id;	     /* for a new run; NULL: generated */
	int git_retry_sleep_ms;	     /* transient lock retries (default 2000) */
	long heartbeat_ms;	/* "still running" while the agent is silent this long (0: off) */
	const char *agent_name; /* the banner's; NULL (or codex-loop): the original's banner */
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
	struct gdn_agent_usage usage; /* what the agent reported (all sessions; -1: nothing) */
	long usage_iterations;	      /* iterations that reported usage */
	char *stop_reason; /* "completed", "iterations", "failure-limit", "until-time", ... */
	int exit_code;
	struct strvec stashes_kept; /* "sha message" */
	struct strvec refs_kept;    /* "ref what": work set aside under refs/gdnctl/ */
	char *journal;		    /* path */
	/* --isolation worktree: the champion, and its ref when the branch could not take it */
	char *champion, *champion_ref;
	bool champion_parked;
};
#define GDN_LOOP_SUMMARY_INIT                                         \
	{                                                             \
		.stashes_kept = STRVEC_INIT, .refs_kept = STRVEC_INIT \
	}
void gdn_loop_summary_release(struct gdn_loop_summary *s);
/* Input + output tokens of `u` (unreported fields count 0). */
int64_t gdn_loop_usage_tokens(const struct gdn_agent_usage *u);
/* {"iterations", "input_tokens", "output_tokens", "tokens", "cost_usd"}, or null (none). */
json_t *gdn_loop_usage_json(const struct gdn_agent_usage *u, long iterations);
/* New reference: {"schema": "gdnctl.loop_summary.v1", ...}. */
json_t *gdn_loop_summary_json(const struct gdn_loop_summary *s);

/*
 * Run the loop. Returns 0 when it ran (the verdict is sum->exit_code: 0;
 * a failure's code from gdn_loop_exit_code(), which keeps the original's
 * codes with o->original_exit_codes; 1 after --stop-after-failures; 128+N
 * when interrupted by signal N), or a negative gdn_errcode when it could
 * not start (journal, repository, nothing to resume).
 */
int gdn_loop_run(const struct gdn_loop_opts *o, const struct gdn_loop_agent *agent,
		 const struct gdn_loop_hooks *hooks, struct gdn_loop_summary *sum,
		 struct gdn_err *err);

#endif
