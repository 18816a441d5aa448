/*
 * Private to the loop engine (src/loop/engine.c) and its parallel workers
 * (src/loop/workers.c): the engine's state, one iteration's, and the steps
 * the workers reuse.
 */
#ifndef GDNCTL_LOOP_ENGINE_IMPL_H
#define GDNCTL_LOOP_ENGINE_IMPL_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/journal.h"
#include "gdnctl/gitops.h"
#include "gdnctl/loop.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

#define MAX_IDS_JOURNALED 64

struct worker;
struct loop_steps;

/* The engine's state. */
struct loop {
	const struct loop_steps *steps; /* engine.c's, for workers.c */
	const struct gdn_loop_opts *o;
	const struct gdn_loop_opts *o0; /* the run's (o: a worker's copy while it is handled) */
	const struct gdn_loop_agent *agent;
	const struct gdn_loop_hooks *hooks;
	struct gdn_loop_summary *sum;
	struct gdn_journal j;
	struct gdn_git git;
	long total;
	long first; /* first iteration of this session */
	long failures, consecutive;
	bool journal_warned;
	struct gdn_stash stash; /* the stash saved by the current iteration */
	struct gdn_repo *repo;
	/*
	 * The dirty check after the agent found the tree clean and nothing
	 * has run since (no post-check, hook, stamp, stash restore or sleep):
	 * the next iteration's check would scan the same tree a moment later,
	 * so it uses this instead (one tree scan per iteration, not two).
	 */
	bool clean_known;
	/*
	 * --isolation worktree: git in the user's checkout (refs, the branch)
	 * and in the agent's worktree, both quiet; the loop branch, the
	 * champion (the last promoted commit) and where the loop last left
	 * the branch (btip: behind the champion while parked).
	 */
	struct gdn_git ugit, wgit;
	char *branch, *champion, *btip, *champion_ref;
	/* --max-tokens-per-hour: this session's usage events (when, tokens) */
	struct usage_mark {
		time_t when;
		int64_t tokens;
	} * hour;
	size_t hour_nr, hour_alloc;
	char *note; /* from a hook, for the next prompt ({{LOOP_NOTE}}) */
	/*
	 * --workers N > 1: the workers, the one whose events these are (0:
	 * none; journaled as "worker", said as "[wK]"), the iterations
	 * decided (done[it], it <= total).
	 */
	long nw;
	struct worker *w;
	long tag;
	unsigned char *done;
	struct worker *rechecking; /* the worker whose candidate is being re-checked */
	long seq;		   /* the last queued candidate's turn */
	/*
	 * The train (speculation while candidates keep passing): its tip's
	 * ref, whether the next child may join it, and the last outcomes
	 * of candidates (bit 0: the newest; 1: it passed), recent_nr of them.
	 */
	char *tip_ref;
	bool spec;
	unsigned recent, recent_nr;
	char *log_rel; /* the running log, relative to a worktree (NULL: none there) */
};

enum step {
	STEP_OK = 0,
	STEP_FAIL,  /* a failure handled by a policy: c->kind, c->rc, c->policy, c->msg */
	STEP_ERROR, /* an unexpected error (err): the iteration-error policy */
	STEP_INTR,  /* SIGINT/SIGTERM */
};

struct iter {
	long it;
	char *head_before, *head_after;
	char *branch_after; /* the branch checked out after the agent (NULL: detached) */
	bool descendant;    /* head_after descends from head_before (or is it) */
	bool dirty_after;   /* the agent left uncommitted changes */
	long commits;
	enum gdn_loop_failure kind;
	int rc;
	enum gdn_loop_policy policy;
	bool agent_note;  /* the agent's failure: counted, no "Continuing" suffix */
	int64_t agent_ms; /* the agent's last attempt */
	struct sbuf msg;
	struct strvec ids;
	/* --workers: the candidate conflicts with a newer champion (kept, not validated) */
	bool conflict;
};

/*
 * ---- engine.c's steps, for workers.c ----
 * A table the engine fills (l->steps), so that the workers call the
 * engine's steps without the engine's file and theirs calling each other.
 */
struct loop_steps {
	void (*say)(struct loop *l, enum gdn_loop_level level, const char *fmt, ...)
	    GDN_PRINTF(3, 4);
	/* Journal an event (ev stolen). A failing journal is reported once; the loop goes on. */
	void (*journal)(struct loop *l, const char *event, json_t *ev);
	/* Keep `sha` under refs/gdnctl/<kind><it> (said, journaled, in the summary). */
	void (*keep_ref)(struct loop *l, long it, const char *kind, const char *sha,
			 const char *what);
	/* Bring the loop branch to the champion when it is behind it (or park the champion). */
	void (*advance_branch)(struct loop *l, long it);
	/* The loop branch where the loop left it: a moved one kept and put back (*moved). */
	int (*check_branch)(struct loop *l, struct iter *c, bool *moved, struct gdn_err *err);
	/* Retire the agent's worktree (l->o->workdir): what it holds kept, then removed. */
	void (*retire_worktree)(struct loop *l, long it);
	/* Make the agent's worktree (l->o->workdir) at the champion, journaled first. */
	int (*iso_worktree)(struct loop *l, struct gdn_err *err);
	/* Remove the stale index.lock / HEAD.lock a killed git left. */
	void (*clear_stale_locks)(struct loop *l);
	/* <log dir>/iteration-NNN-<what> (new string). */
	char *(*iter_path)(struct loop *l, long it, const char *what);
	void (*iter_release)(struct iter *c);
	/* The iteration up to its decision: prompt, agent, checks, hooks. */
	enum step (*iteration_body)(struct loop *l, struct iter *c, struct gdn_err *err);
	/* The validate and decide hooks on the iteration's commits. */
	enum step (*gate_hooks)(struct loop *l, struct iter *c, struct gdn_err *err);
	/* The decision, journaled, then the promotion. -1 to go on, or the exit code. */
	int (*conclude)(struct loop *l, struct iter *c, enum step step, struct gdn_err *err);
	/* A stop condition met before the next iteration, or NULL. */
	const char *(*stop_condition)(struct loop *l);
};

/* ---- workers.c (--workers N > 1) ---- */

/* The workers' worktrees at the champion, their repositories, the train's tip. */
int loop_workers_begin(struct loop *l, struct gdn_err *err);
/* --resume of a run with workers: what the crashed run left stopped and kept, fresh worktrees. */
int loop_workers_resume(struct loop *l, struct gdn_loop_state *st, struct gdn_err *err);
/* The run with workers: returns the exit code, or -1 (completed). */
int loop_run_workers(struct loop *l);
/* In a worker's child: the candidate carried onto the newest code before validation. */
enum step loop_catch_up(struct loop *l, struct iter *c, struct gdn_err *err);
/* Each worktree retired; the train's tip removed. */
void loop_workers_end(struct loop *l);
void loop_workers_release(struct loop *l);

#endif
