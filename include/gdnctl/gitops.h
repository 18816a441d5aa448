/*
 * The loop's git operations (src/loop/gitops.c): git through the child-process
 * API with transient-lock retries, the stash by commit id with a conflict
 * preflight, sync with a remote.
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
};
/*
 * Run `git ARGS...` (a NULL-terminated list) in g->workdir, capturing merged
 * output in *out (may be NULL). Returns 0 when git ran (its exit code in
 * *rc), or a gdn_errcode when it could not be started.
 */
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

#endif
