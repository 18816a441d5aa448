/*
 * Private to the parallel scheduler (--workers N > 1, docs/loop-workers.md):
 * the workers (src/loop/worker.c: their worktrees and their children) and
 * the scheduler that hands them iterations and decides their candidates
 * one at a time (src/loop/parallel.c). run.c starts and ends them.
 */
#ifndef GDNCTL_LOOP_WORKERS_H
#define GDNCTL_LOOP_WORKERS_H

#include "ctx.h"
#include "steps.h"

struct pool;

/* Worker K: a worktree, its context there, and a forked child while it works. */
struct worker {
	struct pool *p;
	long k;
	char *dir, *hlog, *result;
	char *headfile;	 /* where its child writes the candidate it put at the train's tip */
	char *readyfile; /* there while its candidate is ready and not decided (decide_join) */
	struct gdn_loop_opts o; /* the run's options, with this worktree */
	struct ictx x;		/* its context: o, git there, its repository, tag k */
	pid_t pid;		/* its child (0: idle) */
	long it;		/* the iteration it works on (0: none) */
	/*
	 * the child re-checks `cand` (built on `base`) on the newest champion:
	 * the agent's own commits, as its child reported them before carrying
	 * them anywhere (a carry onto the train drops what the candidates ahead
	 * already changed the same way, and they may not land); retry: a
	 * candidate that failed on a train candidate not promoted (not one
	 * that passed), as likely to fail as a new one
	 */
	bool recheck, retry;
	char *base, *cand;
	bool cancelled; /* stopped by the loop (the run ends): no decision */
	/*
	 * Its child's outcome (c, step, err), and whether it waits in the
	 * queue: a passed candidate (or one that failed on the train) waiting
	 * for the verdict on the candidate ahead of it, or for its turn to be
	 * re-checked on the champion; seq is its turn.
	 */
	bool queued;
	long seq;
	struct iter c;
	enum step step;
	struct gdn_err err;
	int64_t ready_ms; /* --sleep: not before */
};

/* The parallel scheduler's state. */
struct pool {
	struct ictx *x0; /* the run's own context (tag 0) */
	long nw;
	struct worker *w;
	unsigned char *done;	   /* the iterations decided (done[it], it <= total) */
	struct worker *rechecking; /* the worker whose candidate is being re-checked */
	long seq;		   /* the last queued candidate's turn */
	bool more;		   /* the queue may have another candidate ready */
	struct train t;
};

/* ---- worker.c ---- */

/* A new run's workers: their worktrees at the champion, the train's tip, worker 1's hooks. */
int loop_parallel_begin(struct ictx *x0, struct pool **pool, struct gdn_err *err);
/* --resume: what the crashed run's workers left stopped and kept, then fresh worktrees. */
int loop_parallel_resume(struct ictx *x0, struct pool **pool, struct gdn_loop_state *st,
			 struct gdn_err *err);
/* Worker 1's repository (borrowed). */
struct gdn_repo *loop_parallel_repo(struct pool *p);
/* Fork worker w's child for iteration `it` (or the re-check of w->cand). */
int loop_start_worker(struct worker *w, long it, bool recheck, struct gdn_err *err);
/* The child's outcome (exit `code`) into w->c, w->err; returns its step. */
enum step loop_read_result(struct worker *w, int code);
/* Each worktree retired (its work kept under refs); the train's tip removed. */
void loop_parallel_end(struct pool *p);
void loop_parallel_free(struct pool *p);

/* ---- parallel.c ---- */

/* The run with workers: returns the exit code, or -1 (completed). */
int loop_run_parallel(struct pool *p);

#endif
