/*
 * Undoing a hill-climb iteration, and the commits gdnctl makes in the
 * running log (stamping the commit placeholder, measured figures). All of
 * it through libgit2, in the working tree `root`; nothing here prints.
 * See docs/revert.md.
 *
 * Error codes: GDN_EFAILED means "the revert (or commit) did not happen,
 * the tree is clean and HEAD is where it was": the caller counts a
 * failure and may continue. Refusals (dirty tree, HEAD moved, old_head
 * not an ancestor, nothing to revert, reset of pushed commits) are
 * GDN_EFAILED as well, with the reason in err. GDN_EIO means the
 * repository could not be read, or restoring the tree after a failure
 * failed too (the tree may then be dirty: abort). GDN_ENOTFOUND: a
 * commit or the log file does not exist.
 */
#ifndef GDNCTL_REVERT_H
#define GDNCTL_REVERT_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"

struct gdn_err;

enum gdn_revert_mode {
	GDN_REVERT_COMMIT = 0, /* one new commit restoring old_head's tree (default) */
	GDN_REVERT_RESET,      /* move the branch back to old_head (unpushed commits only) */
};

/* "commit", "reset": the names of enum gdn_revert_mode. */
extern const struct gdn_enum gdn_revert_mode_enum[];

struct gdn_revert_opts {
	const char *root;     /* working tree */
	long iteration;	      /* names the discarded ref and the message */
	const char *old_head; /* HEAD before the iteration (hex id, full or abbreviated) */
	const char *new_head; /* HEAD after it: must be the current HEAD */
	const char *reason;   /* e.g. "regression: throughput/mfu -1.8%"; may be NULL */
	enum gdn_revert_mode mode;
};
#define GDN_REVERT_OPTS_INIT                                 \
	{                                                    \
		NULL, 0, NULL, NULL, NULL, GDN_REVERT_COMMIT \
	}

struct gdn_revert_result {
	char *discarded_ref; /* "refs/gdnctl/discarded/<iteration>[-N]", owned */
	char *head;	     /* HEAD afterwards (revert commit, or old_head for reset), owned */
	char **reverted;     /* first-parent ids old_head..new_head, newest first, owned */
	size_t nr_reverted;
};
#define GDN_REVERT_RESULT_INIT      \
	{                           \
		NULL, NULL, NULL, 0 \
	}
void gdn_revert_result_release(struct gdn_revert_result *res);

/*
 * Revert every commit of the iteration (first-parent old_head..new_head).
 * Refuses (GDN_EFAILED, nothing changed) when the working tree or index
 * has changes (untracked files included), when HEAD is not new_head, when
 * old_head is not a strict ancestor of new_head, or, in reset mode, when
 * one of the commits is reachable from a remote-tracking ref
 * (refs/remotes/). Otherwise keeps new_head as refs/gdnctl/discarded/<it>
 * (then <it>-2, <it>-3, ... if taken), and either commits old_head's tree
 * on top of new_head (message "gdnctl: revert iteration <it> (<reason>)"
 * naming every reverted id) or moves the branch (or a detached HEAD) back
 * to old_head; then checks out HEAD's tree into the index and working
 * tree. On a failure after the refusal checks, HEAD, index and working
 * tree are put back to new_head, the discarded ref is deleted, and
 * GDN_EFAILED is returned. `res` (may be NULL) is filled on success.
 */
int gdn_revert_iteration(const struct gdn_revert_opts *o, struct gdn_revert_result *res,
			 struct gdn_err *err);

/*
 * Stamp the running log `log` (relative to `root`, or absolute inside
 * it): in the last entry (from the last line starting "### Iteration "),
 * the last line whose stripped text starts "- Commit:" is replaced by
 * "<indentation>- Commit: <sha>" when its value is "(pending)" or
 * "this commit"; line endings (LF or CRLF) are kept as they are. The file
 * is rewritten atomically and committed on top of HEAD with the message
 * "gdnctl: stamp running log with <sha[:12]>". *stamped says whether
 * anything changed (false: file and repository untouched); *commit (may
 * be NULL) gets the new commit id, owned by the caller, or NULL.
 * The commit is made from the repository's index: the caller keeps the
 * index clean (it is, after an iteration committed).
 */
int gdn_revert_stamp_log(const char *root, const char *log, const char *sha, bool *stamped,
			 char **commit, struct gdn_err *err);

struct gdn_measured {
	const char *metric;	  /* e.g. "throughput/mfu" */
	double before, after;	  /* NAN before: no baseline, printed as "n/a" */
	const char *const *lines; /* NULL-terminated extra lines (trace deltas), may be NULL */
};

/*
 * Append the measured figures to the end of the last entry of the running
 * log (which runs to the end of the file):
 *   "- Measured: <metric> <before> -> <after> (<+d.dd>%)"
 * then each of m->lines as given, in the file's line-ending style, and
 * commit with the message "gdnctl: record measured figures for <metric>".
 * GDN_ENOTFOUND when the log has no "### Iteration " entry (nothing
 * written). *commit (may be NULL) gets the new commit id, owned.
 */
int gdn_revert_log_measurements(const char *root, const char *log, const struct gdn_measured *m,
				char **commit, struct gdn_err *err);

#endif
