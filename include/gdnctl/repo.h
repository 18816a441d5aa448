/* Thin libgit2 wrapper. Paths returned as char * belong to the caller. */
#ifndef GDNCTL_REPO_H
#define GDNCTL_REPO_H

#include "gdnctl/compat.h"

struct gdn_err;
struct strvec;

/* Initialise libgit2 once (idempotent); shutdown at exit is registered. */
void gdn_repo_global_init(void);

/*
 * Find the working-tree root of the repository containing `start` (NULL:
 * the current directory). Returns 0 with *root set, GDN_ENOTFOUND when
 * there is no repository, or another gdn_errcode.
 */
int gdn_repo_discover(const char *start, char **root, struct gdn_err *err);

/*
 * Whether `rev` (a full or abbreviated hex id) names a commit in the
 * repository at `root`. *exists is set to 0 or 1; *full (optional) gets
 * the full id. Returns 0, or a gdn_errcode when the repository cannot be
 * opened or the id is ambiguous (GDN_EPARSE).
 */
int gdn_repo_commit_exists(const char *root, const char *rev, int *exists, char **full,
			   struct gdn_err *err);

/* ---- reads for the loop engine (src/loop/). Returned char * belong to the caller. ---- */

/*
 * HEAD of the repository at `root`: *sha (40 hex) and *branch (short name,
 * NULL when detached); either pointer may be NULL. An unborn HEAD gives
 * *sha NULL. Returns 0 or GDN_EIO.
 */
int gdn_repo_head(const char *root, char **sha, char **branch, struct gdn_err *err);
/* Whether the working tree or index differs from HEAD, untracked files included (not ignored). */
int gdn_repo_dirty(const char *root, bool *dirty, struct gdn_err *err);
/*
 * Whether commit `desc` is a strict descendant of commit `anc` (both full
 * or abbreviated hex ids). Returns 0 with *is_desc set, or a gdn_errcode.
 */
int gdn_repo_descendant(const char *root, const char *desc, const char *anc, bool *is_desc,
			struct gdn_err *err);
/*
 * The commits reachable from `to` but not from `from` (a revwalk,
 * `git rev-list from..to`): *count, and their ids (newest first, at most
 * `max`) appended to `ids` when non-NULL.
 */
int gdn_repo_count_commits(const char *root, const char *from, const char *to, long *count,
			   struct strvec *ids, size_t max, struct gdn_err *err);
/*
 * Find a stash entry by commit id (`sha`, may be NULL) or, failing that,
 * by message (`msg`: the entry's message is "<msg>" or ends with ": <msg>";
 * may be NULL). *index is its position (stash@{N}) or -1; *found (may be
 * NULL) gets its commit id.
 */
int gdn_repo_stash_find(const char *root, const char *sha, const char *msg, long *index,
			char **found, struct gdn_err *err);
/*
 * Whether every change recorded in stash commit `sha` (tracked and
 * untracked files) is already in the working tree: each file the stash
 * adds or modifies has the stash's content, each it deletes is absent.
 */
int gdn_repo_stash_in_tree(const char *root, const char *sha, bool *in_tree, struct gdn_err *err);
/* The repository's git directory, with a trailing slash (a worktree's own under .git/worktrees/).
 */
int gdn_repo_gitdir(const char *root, char **path, struct gdn_err *err);

#endif
