/*
 * Private to the loop's stack (docs/loop-map.md): the steps the schedulers
 * compose, one section per file, highest first. A file calls only the
 * files listed below it (and ctx.c, git.c, stash.c); none calls up, and
 * no step is reached through a pointer table.
 *
 *   run.c        start or resume a run, pick its scheduler
 *   serial.c     the serial scheduler    (parallel.c, worker.c: workers.h)
 *   recover.c    --resume: the champion, what a crashed run left
 *   decide.c     the decision: policies, stamp, keep or revert, promote, stop
 *   iteration.c  one candidate up to the gate: propose, examine, validate
 *   train.c      a candidate carried onto the champion or the train's tip
 *   champion.c   the champion's ref, the loop branch, the agent's worktree
 *   orphans.c    what a crashed run left running
 *   ctx.c        say, journal, keep a ref (ctx.h)
 *   git.c, stash.c  git itself (gdnctl/gitops.h)
 */
#ifndef GDNCTL_LOOP_STEPS_H
#define GDNCTL_LOOP_STEPS_H

#include "ctx.h"

/* ---- serial.c: the serial scheduler ---- */

/* The run's iterations one after another in x. Returns the exit code, or -1 (completed). */
int loop_run_serial(struct ictx *x);

/* ---- recover.c: --resume ---- */

/* The last run's state from the journal. */
int loop_load_state(struct run *r, struct gdn_loop_state *st, struct gdn_err *err);
/* Worktree: the loop branch, the champion (a promotion cut short finished), the branch's tip. */
int loop_recover_champion(struct ictx *x, struct gdn_loop_state *st, struct gdn_err *err);
/* Worktree, serial: an undecided promotion undone, the old worktree retired, a fresh one. */
int loop_recover_worktree(struct ictx *x, struct gdn_loop_state *st, struct gdn_err *err);
/* Serial: the interrupted iteration's agent stopped, its work kept, its commits set aside. */
int loop_recover(struct ictx *x, struct gdn_loop_state *st, struct gdn_err *err);

/* ---- decide.c: the decision ---- */

/*
 * The end of iteration c->it after its steps returned `step` (err: its
 * error): the running log stamped, the policies, the decision journaled,
 * the promotion. The one place where a candidate is kept or reverted.
 * Returns -1 to go on, or the loop's exit code.
 */
int loop_decide(struct ictx *x, struct iter *c, enum step step, struct gdn_err *err);
/* A stop condition met before the next iteration, or NULL. */
const char *loop_stop_condition(struct run *r);

/* ---- iteration.c: one candidate up to the gate ---- */

/* The tree ready, the prompt, the agent (with retries). */
enum step loop_propose(struct ictx *x, struct iter *c, struct gdn_err *err);
/*
 * What the agent left (`step`: loop_propose's; moved: the loop branch had
 * moved and was put back): commits counted, leftovers and rewrites set
 * aside, the post-checks, the no-commit policy.
 */
enum step loop_examine(struct ictx *x, struct iter *c, enum step step, bool moved,
		       struct gdn_err *err);
/* The validate and decide hooks on the iteration's commits. */
enum step loop_validate(struct ictx *x, struct iter *c, struct gdn_err *err);

/* ---- train.c: a candidate carried onto newer code ---- */

/*
 * The train (the speculative pipeline): its tip's ref, the lock file that
 * lets one child at a time join it, whether children join it, where the
 * running log lies in a worktree, and the last outcomes of candidates
 * (bit 0: the newest; 1: it was promoted), recent_nr of them.
 */
struct train {
	char *tip_ref;
	char *lock_path;
	char *log_rel; /* relative to a worktree (NULL: not in one) */
	bool spec;
	unsigned recent, recent_nr;	/* the decided candidates: 1 promoted (newest: bit 0) */
	unsigned rechecks, rechecks_nr; /* the decided re-checks, alike */
	char *share_path; /* the parent's shares, for a child deciding later than its fork */
};
/*
 * In a worker's child, before validation: the candidate carried onto the
 * champion or (t->spec, a re-check too) the train's tip, which it then
 * joins (its head written to `headfile`), one child at a time under
 * t->lock_path: the k-th candidate in the train is validated on top of
 * the k-1 ahead of it. A candidate that does not apply is kept under
 * refs/gdnctl/discarded/<it> with c->conflict set.
 */
enum step loop_catch_up(struct ictx *x, const struct train *t, struct iter *c, const char *headfile,
			struct gdn_err *err);
/* In a worker's child: the shared state as the parent last saved it (the worker_state hook). */
int loop_fork_state(struct ictx *x, struct gdn_err *err);
/*
 * Whether the next child joins the train (not with a performance decision),
 * with `ahead` candidates to be decided before it.
 */
bool loop_may_speculate(const struct run *r, const struct train *t, long ahead);
/* The same for a re-check: from the re-checks decided (a candidate that passed once). */
bool loop_may_speculate_recheck(const struct run *r, const struct train *t, long ahead);
/* The parent, after each decision: the shares above, for its children to read. */
void loop_train_save_share(const struct train *t);
/*
 * In a child, about to decide whether it joins: the shares as the parent
 * last saved them (a child's own copy is its fork's, an agent's time ago).
 */
void loop_train_load_share(struct train *t);
/* A candidate that will not be promoted: the train's tip back to the champion if on it. */
void loop_untip(struct ictx *x, const struct train *t, const char *sha);

/* ---- champion.c: the champion, the loop branch, the agent's worktree ---- */

/* Where the loop branch is now (NULL: deleted). */
int loop_branch_tip(struct ictx *x, char **tip, struct gdn_err *err);
/* Bring the loop branch to the champion when it is behind it (or park the champion). */
void loop_advance_branch(struct ictx *x, long it);
/* A new champion: its ref first (the truth for --resume), then the journal, then the branch. */
int loop_promote(struct ictx *x, long it, const char *sha, struct gdn_err *err);
/* The loop branch where the loop left it: a moved one kept and put back (*moved). */
int loop_check_branch(struct ictx *x, struct iter *c, bool *moved, struct gdn_err *err);
/* Uncommitted changes in x's tree kept under refs/gdnctl/leftovers/<it>, then removed. */
int loop_set_leftovers_aside(struct ictx *x, long it, struct gdn_err *err);
/* Worktree: the head to promote (accepted), or the commits kept aside and the tree reset. */
char *loop_settle(struct ictx *x, struct iter *c, bool accepted);
/* Retire x's worktree: what it holds kept, then removed. */
void loop_retire_worktree(struct ictx *x, long it);
/* A new run's loop branch and champion. */
int loop_champion_begin(struct ictx *x, struct gdn_err *err);
/* x's worktree made at the champion, journaled first. */
int loop_worktree_add(struct ictx *x, struct gdn_err *err);
/* x's worktree, before the agent: there, clean, at the champion. */
int loop_worktree_ready(struct ictx *x, struct gdn_err *err);

/* ---- orphans.c: what a crashed run left running ---- */

void loop_stop_orphan_agent(struct ictx *x, const struct gdn_loop_state *st);
/* Wait (at most 10 s) until no git runs in x's tree. */
void loop_wait_for_git(struct ictx *x);
/* Remove the stale index.lock / HEAD.lock a killed git left in x's repository. */
void loop_clear_stale_locks(struct ictx *x);
/*
 * The same for the run's own refs in the user's repository (its champion,
 * its train's tip, the loop branch): a git killed with the run (kill -9)
 * while it wrote one of them leaves <ref>.lock, and every later write of
 * that ref fails.
 */
void loop_clear_stale_ref_locks(struct ictx *x, const char *run_id, const char *branch);
/* With workers: git in their trees waited for, what their agents left stopped. */
void loop_stop_worker_orphans(struct ictx *x, const struct gdn_loop_state *st);

#endif
