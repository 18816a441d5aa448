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

/*
 * ---- a repository handle: opened once, used for a whole run ----
 *
 * The loop engine opens its working tree once: libgit2 then keeps the
 * configuration, the object cache and the index between calls, and reads
 * the index again only when it changed on disk (its stat cache makes a
 * dirty check one lstat per tracked file). References (HEAD, the stash
 * reflog) are read from disk on each call, so changes made by git
 * commands (the agent's, gdnctl's) are seen. Not for concurrent use from
 * several threads. Returned char * belong to the caller.
 */
struct gdn_repo;

/* Open the repository whose working tree is `root`. Returns 0 or GDN_EIO. */
int gdn_repo_open(const char *root, struct gdn_repo **out, struct gdn_err *err);
/* NULL is fine. */
void gdn_repo_free(struct gdn_repo *r);
/* The root given to gdn_repo_open (borrowed). */
const char *gdn_repo_root(const struct gdn_repo *r);

/*
 * HEAD: *sha (40 hex) and *branch (short name, NULL when detached); either
 * pointer may be NULL. An unborn HEAD gives *sha NULL. Returns 0 or GDN_EIO.
 */
int gdn_repo_head(struct gdn_repo *r, char **sha, char **branch, struct gdn_err *err);
/* Whether the working tree or index differs from HEAD, untracked files included (not ignored). */
int gdn_repo_dirty(struct gdn_repo *r, bool *dirty, struct gdn_err *err);
/*
 * From now on, answer gdn_repo_dirty from a change feed (fswatch.h) where
 * it can: after a full look that found the tree clean, the next answers
 * look only at what changed since (src/repo/dirty.c says how). Where no
 * feed can be had (no inotify, the watch limit reached), every answer
 * stays a full look. The feed's queue must not be shared with a forked
 * child that asks too.
 */
void gdn_repo_watch(struct gdn_repo *r);
/* The first line of commit `sha`'s message (`git log -1 --format=%s`). Returns 0 or a gdn_errcode.
 */
int gdn_repo_commit_subject(struct gdn_repo *r, const char *sha, char **subject,
			    struct gdn_err *err);
/* How many answers took the full look (for the tests and the bench). */
unsigned long gdn_repo_full_looks(const struct gdn_repo *r);
/* One-shot forms for commands that read once: open `root`, read, close. */
int gdn_repo_head_at(const char *root, char **sha, char **branch, struct gdn_err *err);
int gdn_repo_dirty_at(const char *root, bool *dirty, struct gdn_err *err);
/*
 * Whether commit `desc` is a strict descendant of commit `anc` (both full
 * or abbreviated hex ids). Returns 0 with *is_desc set, or a gdn_errcode.
 */
int gdn_repo_descendant(struct gdn_repo *r, const char *desc, const char *anc, bool *is_desc,
			struct gdn_err *err);
/*
 * The commits reachable from `to` but not from `from` (a revwalk,
 * `git rev-list from..to`): *count, and their ids (newest first, at most
 * `max`) appended to `ids` when non-NULL.
 */
int gdn_repo_count_commits(struct gdn_repo *r, const char *from, const char *to, long *count,
			   struct strvec *ids, size_t max, struct gdn_err *err);
/*
 * `git cherry-pick sha` onto commit `onto`, in memory (no worktree, no
 * index touched): *out (the caller's) is the new commit's id, with sha's
 * author and message and the configured committer; NULL when it does not
 * apply cleanly or changes nothing there (the caller falls back to a
 * cherry-pick in a worktree, which says why). Returns 0 or a gdn_errcode.
 */
int gdn_repo_cherry_pick(struct gdn_repo *r, const char *onto, const char *sha, char **out,
			 struct gdn_err *err);
/*
 * Find a stash entry by commit id (`sha`, may be NULL) or, failing that,
 * by message (`msg`: the entry's message is "<msg>" or ends with ": <msg>";
 * may be NULL). *index is its position (stash@{N}) or -1; *found (may be
 * NULL) gets its commit id.
 */
int gdn_repo_stash_find(struct gdn_repo *r, const char *sha, const char *msg, long *index,
			char **found, struct gdn_err *err);
/*
 * Whether every change recorded in stash commit `sha` (tracked and
 * untracked files) is already in the working tree: each file the stash
 * adds or modifies has the stash's content, each it deletes is absent.
 */
int gdn_repo_stash_in_tree(struct gdn_repo *r, const char *sha, bool *in_tree, struct gdn_err *err);
/* The git directory, with a trailing slash (a worktree's own under .git/worktrees/); borrowed. */
const char *gdn_repo_gitdir(const struct gdn_repo *r);
/*
 * The common git directory, with a trailing slash: the same for the main
 * working tree and every linked worktree (git_repository_commondir);
 * borrowed.
 */
const char *gdn_repo_commondir(const struct gdn_repo *r);

/*
 * ---- references, in the repository at or above `dir` (NULL: ".") ----
 *
 * Read in process, each call on a freshly opened repository (src/repo/refs.c).
 */
/* `rev^{commit}` as 40 hex in *sha, or *sha NULL when rev names no commit. */
int gdn_repo_rev_at(const char *dir, const char *rev, char **sha, struct gdn_err *err);
/* Whether `anc` is `desc` or one of its ancestors; an unknown name is GDN_EFAILED. */
int gdn_repo_is_ancestor_at(const char *dir, const char *anc, const char *desc, bool *yes,
			    struct gdn_err *err);
/*
 * The working tree (the main one or a linked worktree), other than `skip`,
 * that has refs/heads/<branch> checked out: its path in *wt, or NULL.
 */
int gdn_repo_branch_checkout_at(const char *dir, const char *branch, const char *skip, char **wt,
				struct gdn_err *err);

#endif
