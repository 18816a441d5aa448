/* The repository handle's insides, shared by src/repo/ only. */
#ifndef GDNCTL_REPO_IMPL_H
#define GDNCTL_REPO_IMPL_H

#include "gdnctl/compat.h"
#include <git2.h>

struct gdn_fswatch;

/* An index entry as it was at the last clean answer. */
struct repo_snap_entry {
	char *path;
	git_oid id;
	uint32_t mode;
};

struct gdn_repo {
	git_repository *git;
	char *root;

	/* gdn_repo_watch: answer gdn_repo_dirty from the change feed */
	bool watching;
	bool clean; /* the last answer was "clean" and the feed has run since */
	struct gdn_fswatch *watch;
	git_oid head_tree, index_sum;
	struct repo_snap_entry *snap;
	size_t nsnap, asnap;
	struct timespec exclude_mtime;
	off_t exclude_size;
	unsigned long full_looks;
};

static inline const char *gdn_repo_git_msg(void)
{
	const git_error *e = git_error_last();

	return e && e->message ? e->message : "unknown libgit2 error";
}

void gdn_repo_unwatch(struct gdn_repo *r);

/* git_revparse_single, without its leak (revparse.c says which). */
int gdn_repo_revparse(git_object **out, git_repository *repo, const char *spec);

#endif
