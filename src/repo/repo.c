/* Thin libgit2 wrapper: repository discovery and commit lookup. */
#include "gdnctl/compat.h"
#include <git2.h>
#include "gdnctl/err.h"
#include "gdnctl/repo.h"
#include "gdnctl/xalloc.h"

static void shutdown_libgit2(void)
{
	git_libgit2_shutdown();
}

void gdn_repo_global_init(void)
{
	static bool done;

	if (done)
		return;
	done = true;
	git_libgit2_init();
	atexit(shutdown_libgit2);
}

static const char *git_msg(void)
{
	const git_error *e = git_error_last();
	return e && e->message ? e->message : "unknown libgit2 error";
}

int gdn_repo_discover(const char *start, char **root, struct gdn_err *err)
{
	git_buf found = {0};
	git_repository *repo = NULL;
	const char *workdir;
	int ret = 0, rc;

	*root = NULL;
	gdn_repo_global_init();
	rc = git_repository_discover(&found, start ? start : ".", 0, NULL);
	if (rc == GIT_ENOTFOUND) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no git repository at or above '%s'",
				  start ? start : ".");
		goto out;
	}
	if (rc < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot discover a git repository: %s", git_msg());
		goto out;
	}
	if (git_repository_open(&repo, found.ptr) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot open repository '%s': %s", found.ptr,
				  git_msg());
		goto out;
	}
	workdir = git_repository_workdir(repo);
	if (!workdir) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "repository '%s' is bare", found.ptr);
		goto out;
	}
	*root = xstrdup(workdir);
	/* libgit2 returns the workdir with a trailing slash; drop it. */
	if (strlen(*root) > 1 && (*root)[strlen(*root) - 1] == '/')
		(*root)[strlen(*root) - 1] = '\0';
out:
	git_repository_free(repo);
	git_buf_dispose(&found);
	return ret;
}

static bool is_hex_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 4 || n > GIT_OID_HEXSZ)
		return false;
	for (; *s; s++)
		if (!isxdigit((unsigned char)*s))
			return false;
	return true;
}

int gdn_repo_commit_exists(const char *root, const char *rev, int *exists, char **full,
			   struct gdn_err *err)
{
	git_repository *repo = NULL;
	git_object *obj = NULL;
	git_oid prefix;
	int ret = 0, rc;

	*exists = 0;
	if (full)
		*full = NULL;
	gdn_repo_global_init();
	if (!is_hex_id(rev)) {
		ret = gdn_err_set(err, GDN_EPARSE, "'%s' is not a hexadecimal commit id", rev);
		goto out;
	}
	if (git_repository_open(&repo, root) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot open repository '%s': %s", root, git_msg());
		goto out;
	}
	if (git_oid_fromstrn(&prefix, rev, strlen(rev)) < 0) {
		ret = gdn_err_set(err, GDN_EPARSE, "'%s' is not a hexadecimal commit id", rev);
		goto out;
	}
	rc = git_object_lookup_prefix(&obj, repo, &prefix, strlen(rev), GIT_OBJECT_COMMIT);
	if (rc == GIT_ENOTFOUND) {
		goto out;
	} else if (rc == GIT_EAMBIGUOUS) {
		ret =
		    gdn_err_set(err, GDN_EPARSE, "commit id '%s' is ambiguous in '%s'", rev, root);
		goto out;
	} else if (rc < 0) {
		/* A prefix naming a non-commit object is "not a commit", not an error. */
		if (git_error_last() && git_error_last()->klass == GIT_ERROR_INVALID)
			goto out;
		ret = gdn_err_set(err, GDN_EIO, "cannot look up '%s' in '%s': %s", rev, root,
				  git_msg());
		goto out;
	}
	*exists = 1;
	if (full) {
		char hex[GIT_OID_HEXSZ + 1];

		git_oid_tostr(hex, sizeof(hex), git_object_id(obj));
		*full = xstrdup(hex);
	}
out:
	git_object_free(obj);
	git_repository_free(repo);
	return ret;
}
