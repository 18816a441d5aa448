/*
 * The loop's git operations: git through the child-process API with
 * transient-lock retries, refs, worktrees, snapshots and sync with a remote
 * (src/loop/git.c); the in-place mode's stash by commit id with a conflict
 * preflight (src/loop/stash.c).
 */
#ifndef GDNCTL_GITOPS_H
#define GDNCTL_GITOPS_H

#include <jansson.h>
#include "gdnctl/compat.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/sbuf.h"

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
	bool quiet;		/* no "$ git ..." echo (bookkeeping commands) */
	const char *const *env; /* the proc API's env changes, or NULL */
};
/*
 * Run `git ARGS...` (a NULL-terminated list) in g->workdir, capturing merged
 * output in *out (may be NULL). Returns 0 when git ran (its exit code in
 * *rc), or a gdn_errcode when it could not be started.
 */
int gdn_git_runl(const struct gdn_git *g, int *rc, struct sbuf *out, struct gdn_err *err, ...);
/* The same with the arguments as a NULL-terminated array. */
int gdn_git_run(const struct gdn_git *g, const char *const *args, int *rc, struct sbuf *out,
		struct gdn_err *err);
/* A message through g->say (nothing without one); captured output, stripped, as one message. */
void gdn_git_sayf(const struct gdn_git *g, enum gdn_loop_level level, const char *fmt, ...)
    GDN_PRINTF(3, 4);
void gdn_git_say_output(const struct gdn_git *g, enum gdn_loop_level level, const char *prefix,
			struct sbuf *out);

/*
 * Refs, worktrees and snapshots (src/loop/git.c). Each returns 0 or an error
 * (GDN_EFAILED with git's message when git refused).
 *
 * gdn_git_rev: the commit `rev` names, or *sha NULL when it names none.
 * gdn_git_set_ref: `update-ref ref sha [old]`; sha NULL deletes the ref.
 * gdn_git_free_ref: `base`, or base-2, base-3, ... whichever names nothing yet.
 * gdn_git_keep_ref: point such a free ref at `sha` (*ref: its name).
 */
int gdn_git_rev(const struct gdn_git *g, const char *rev, char **sha, struct gdn_err *err);
/*
 * The contents of `path` in `rev` (a commit, or ":2" for the index's
 * stage 2), as stored (`git cat-file blob REV:PATH`), into out (reset
 * first); *found: it exists there.
 */
int gdn_git_blob(const struct gdn_git *g, const char *rev, const char *path, struct sbuf *out,
		 bool *found, struct gdn_err *err);
int gdn_git_set_ref(const struct gdn_git *g, const char *ref, const char *sha, const char *old,
		    struct gdn_err *err);
int gdn_git_free_ref(const struct gdn_git *g, const char *base, char **ref, struct gdn_err *err);
int gdn_git_keep_ref(const struct gdn_git *g, const char *base, const char *sha, char **ref,
		     struct gdn_err *err);
/* *yes: `anc` is `desc` or one of its ancestors. */
int gdn_git_is_ancestor(const struct gdn_git *g, const char *anc, const char *desc, bool *yes,
			struct gdn_err *err);
/* A detached worktree at `commit` in `path` (a stale one there is removed first). */
int gdn_git_worktree_add(const struct gdn_git *g, const char *path, const char *commit,
			 struct gdn_err *err);
/*
 * Remove the worktree at `path` with whatever it holds, and its registration
 * when the tree was already deleted.
 */
int gdn_git_worktree_remove(const struct gdn_git *g, const char *path, struct gdn_err *err);
/*
 * The working tree's changes against HEAD (tracked, staged and untracked,
 * not ignored) as one commit on top of HEAD, built in the throw-away index
 * `tmp_index`: *sha its id, or NULL when the tree is clean. Nothing in the
 * tree or the real index changes.
 */
int gdn_git_snapshot(const struct gdn_git *g, const char *tmp_index, const char *msg, char **sha,
		     struct gdn_err *err);
/*
 * Refresh the index, check out `commit` detached with -f (NULL: reset
 * --hard, staying on the branch), remove untracked files (not ignored ones).
 */
int gdn_git_reset_clean(const struct gdn_git *g, const char *commit, struct gdn_err *err);
/*
 * Move refs/heads/<branch> from `from` to `to`. When a worktree other
 * than `skip_dir` has it checked out, its index and files are updated
 * with a two-way merge (as `git merge --ff-only` does), keeping the
 * uncommitted edits there. Not moved (0 returned, the reason in *why)
 * when the branch is not at `from` or those edits touch the same files.
 */
int gdn_git_move_branch(const struct gdn_git *g, const char *branch, const char *from,
			const char *to, const char *skip_dir, struct sbuf *why,
			struct gdn_err *err);

/*
 * Merge <remote>/<branch> into the current branch after a fetch (the
 * original's --sync-main); the fetch runs in `fetch_dir` when not NULL
 * (the user's checkout, where a relative remote URL means what the user
 * meant). A merge conflict is aborted and, under
 * GDN_SYNC_CONFLICT_SKIP, reported and skipped. Returns 0 (merged, or
 * skipped by policy) or an error.
 */
int gdn_git_sync(const struct gdn_git *g, const char *fetch_dir, const char *remote,
		 const char *branch, enum gdn_sync_conflict conflict, struct gdn_err *err);

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
	struct strvec *refs; /* and their pins: "ref what" each (borrowed, may be NULL) */
	void (*journal)(void *ctx, const char *event, json_t *ev);
	void *ctx;
	/* the stash saved by the current iteration (sha NULL: none) */
	char *sha, *msg;
	long iter;
	/*
	 * While a stash is not restored it is pinned at
	 * refs/gdnctl/stash/<pin_run>/<iteration>: `git stash clear` and gc
	 * cannot take it. NULL pin_run: no pin.
	 */
	const char *pin_run;
};
/* "$TMPDIR/gdnctl-stash-preflight-" (TMPDIR unset or empty: /tmp): where preflights go. */
const char *gdn_stash_preflight_prefix(void);
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
/*
 * Journal the current stash as kept (stash_kept, `reason`) and add it to
 * s->kept ("sha message"), its pin to s->refs.
 */
void gdn_stash_report_kept(struct gdn_stash *s, const char *reason);
/*
 * --resume: the stash the interrupted run saved and did not restore
 * (st->stash_msg set; st->stash_sha gets its id when it was found by
 * message): dropped when a restore had begun and its changes are all in
 * the tree, else restored; forgotten (journaled) when the push never
 * happened.
 */
int gdn_stash_recover(struct gdn_stash *s, struct gdn_loop_state *st, struct gdn_err *err);

#endif
