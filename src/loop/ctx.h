/*
 * Private to the loop's stack (docs/loop-map.md): the run's state, the
 * context one iteration runs in, one iteration's outcome, and the bottom
 * layer every step uses (src/loop/ctx.c: say, journal, keep a ref).
 *
 * State is passed, never swapped: a step gets the context it works in
 * (struct ictx: its options, worktree, repository, tag), and that context
 * names the run (struct run: journal, champion, budgets, options).
 */
#ifndef GDNCTL_LOOP_CTX_H
#define GDNCTL_LOOP_CTX_H

#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/journal.h"
#include "gdnctl/gitops.h"
#include "gdnctl/loop.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

#define MAX_IDS_JOURNALED 64
/* The run's own refs in the user's repository, each followed by the run id. */
#define CHAMPION_REFS "refs/gdnctl/champion/" /* its champion */
#define TIP_REFS      "refs/gdnctl/tip/"      /* with workers, its train's tip */

/* The whole run: one for a run, whatever its scheduler. */
struct run {
	const struct gdn_loop_opts *o; /* the run's options */
	const struct gdn_loop_agent *agent;
	const struct gdn_loop_hooks *hooks;
	struct gdn_loop_summary *sum;
	struct gdn_journal j;
	struct gdn_git ugit; /* the user's checkout (refs, the loop branch), quiet */
	long total;
	long first; /* first iteration of this session */
	long failures, consecutive;
	bool journal_warned;
	/*
	 * --isolation worktree: the loop branch, the champion (the last
	 * promoted commit), its ref, and where the loop last left the branch
	 * (btip: behind the champion while parked).
	 */
	char *branch, *champion, *btip, *champion_ref;
	/* --max-tokens-per-hour: this session's usage events (when, tokens) */
	struct usage_mark {
		time_t when;
		int64_t tokens;
	} * hour;
	size_t hour_nr, hour_alloc;
};

/*
 * Where an iteration runs: the run's options with this context's worktree
 * (o->workdir), git there (git: echoed; wgit: quiet), its repository, and
 * its tag (0: the run's own context; K: worker K, said as "[wK]" and
 * journaled as "worker").
 */
struct ictx {
	struct run *r;
	const struct gdn_loop_opts *o;
	struct gdn_git git, wgit;
	struct gdn_repo *repo; /* owned (NULL: none) */
	long tag;
	/*
	 * The dirty check after the agent found the tree clean and nothing
	 * has run since (no post-check, hook, stamp, stash restore or sleep):
	 * the next iteration's check would scan the same tree a moment later,
	 * so it uses this instead (one tree scan per iteration, not two).
	 */
	bool clean_known;
	char *note;		/* from a hook, for the next prompt ({{LOOP_NOTE}}) */
	struct gdn_stash stash; /* in place: the stash saved by the current iteration */
};

enum step {
	STEP_OK = 0,
	STEP_FAIL,  /* a failure handled by a policy: c->kind, c->rc, c->policy, c->msg */
	STEP_ERROR, /* an unexpected error (err): the iteration-error policy */
	STEP_INTR,  /* SIGINT/SIGTERM */
};

/* One iteration's candidate and outcome. */
struct iter {
	long it;
	char *head_before, *head_after;
	char *branch;	    /* the branch before the agent (worktree: the loop branch) */
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
	/* carried onto a newer champion: it conflicts (kept, not validated) */
	bool conflict;
};
#define ITER_INIT(n)                                            \
	(struct iter)                                           \
	{                                                       \
		.it = (n), .msg = SBUF_INIT, .ids = STRVEC_INIT \
	}

/* ---- ctx.c: the bottom layer ---- */

/* x (cleared) with its git, stash and options (o: the run's, or a worker's copy); no repository
 * yet. */
void loop_ictx_init(struct ictx *x, struct run *r, const struct gdn_loop_opts *o);
/* Its repository and note freed (its stash is the caller's to forget). */
void loop_ictx_release(struct ictx *x);
/* --isolation worktree. */
bool loop_isolated(const struct ictx *x);
void loop_say(struct ictx *x, enum gdn_loop_level level, const char *fmt, ...) GDN_PRINTF(3, 4);
/* The iteration's banner: `=== iteration 3/10 (codex) ===` (a worker's: ", worker K"). */
void loop_heading(struct ictx *x, long it);
/* Journal an event (ev stolen). A failing journal is reported once; the loop goes on. */
void loop_journal(struct ictx *x, const char *event, json_t *ev);
/* The hooks' and the stash's reporting (ctx: a struct ictx). */
void loop_hook_report(void *ctx, enum gdn_loop_level level, const char *msg);
void loop_hook_journal(void *ctx, const char *event, json_t *ev);
/* Keep `sha` under refs/gdnctl/<kind><it> (said, journaled, in the summary). */
void loop_keep_ref(struct ictx *x, long it, const char *kind, const char *sha, const char *what);
/* <log dir>/iteration-NNN-<what> (new string). */
char *loop_iter_path(struct ictx *x, long it, const char *what);
/* A failure handled by a policy: returns STEP_FAIL. */
enum step loop_fail(struct iter *c, enum gdn_loop_failure kind, int rc, enum gdn_loop_policy policy,
		    const char *msg);
void loop_iter_release(struct iter *c);
/* `tokens` used now, for --max-tokens-per-hour. */
void loop_usage_mark(struct run *r, int64_t tokens);

#endif
