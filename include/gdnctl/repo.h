/* Thin libgit2 wrapper. Paths returned as char * belong to the caller. */
#ifndef GDNCTL_REPO_H
#define GDNCTL_REPO_H

#include "gdnctl/compat.h"

struct gdn_err;

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

#endif
