/*
 * References and ancestry in the repository at or above a directory, read
 * in process: what the loop's bookkeeping asked `git rev-parse`, `git
 * merge-base --is-ancestor` and `git worktree list` for. A git process
 * costs several milliseconds to start on a VM; the loop asked these
 * several times per promotion (issues 26 and 27).
 *
 * Each call opens the repository afresh (well under a millisecond), so
 * what git commands changed meanwhile (the agent's, gdnctl's own) is
 * seen, and nothing is shared between the loop's worker processes.
 * References are written by git (src/loop/git.c says why).
 */
#include "gdnctl/compat.h"
#include <git2.h>
#include "gdnctl/err.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "repo_impl.h"

static int open_at(const char *dir, git_repository **repo, struct gdn_err *err)
{
	gdn_repo_global_init();
	if (git_repository_open_ext(repo, dir ? dir : ".", 0, NULL) < 0)
		return gdn_err_set(err, GDN_EIO, "cannot open a git repository at '%s': %s",
				   dir ? dir : ".", gdn_repo_git_msg());
	return 0;
}

/* `rev^{commit}`, or false (with libgit2's message) when it names none. */
static bool peel_commit(git_repository *repo, const char *rev, git_oid *oid)
{
	git_object *obj = NULL, *commit = NULL;
	bool ok = gdn_repo_revparse(&obj, repo, rev) == 0 &&
		  git_object_peel(&commit, obj, GIT_OBJECT_COMMIT) == 0;

	if (ok)
		git_oid_cpy(oid, git_object_id(commit));
	git_object_free(commit);
	git_object_free(obj);
	return ok;
}

int gdn_repo_rev_at(const char *dir, const char *rev, char **sha, struct gdn_err *err)
{
	git_repository *repo = NULL;
	char hex[GIT_OID_HEXSZ + 1];
	git_oid oid;
	int ret;

	*sha = NULL;
	ret = open_at(dir, &repo, err);
	if (!ret && peel_commit(repo, rev, &oid))
		*sha = xstrdup(git_oid_tostr(hex, sizeof(hex), &oid));
	git_repository_free(repo);
	return ret;
}

int gdn_repo_is_ancestor_at(const char *dir, const char *anc, const char *desc, bool *yes,
			    struct gdn_err *err)
{
	git_repository *repo = NULL;
	git_oid a, d;
	int ret, rc;

	*yes = false;
	ret = open_at(dir, &repo, err);
	if (ret)
		goto out;
	if (!peel_commit(repo, anc, &a) || !peel_commit(repo, desc, &d)) {
		ret = gdn_err_set(err, GDN_EFAILED, "cannot compare '%s' and '%s': %s", anc, desc,
				  gdn_repo_git_msg());
		goto out;
	}
	if (git_oid_equal(&a, &d)) {
		*yes = true; /* as `git merge-base --is-ancestor`: a commit is its own ancestor */
		goto out;
	}
	rc = git_graph_descendant_of(repo, &d, &a);
	if (rc < 0)
		ret = gdn_err_set(err, GDN_EFAILED, "cannot compare '%s' and '%s': %s", anc, desc,
				  gdn_repo_git_msg());
	*yes = rc == 1;
out:
	git_repository_free(repo);
	return ret;
}

/* Whether two paths name the same directory (by their real paths where they exist). */
static bool same_dir(const char *a, const char *b)
{
	char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
	bool same = ra && rb ? !strcmp(ra, rb) : !strcmp(a, b);

	free(ra);
	free(rb);
	return same;
}

/* Keep `path` (without a trailing slash) in *dir when it is not `skip`. */
static bool found_at(const char *path, const char *skip, char **dir)
{
	size_t n = strlen(path);

	while (n > 1 && path[n - 1] == '/')
		n--;
	*dir = xstrndup(path, n);
	if (skip && same_dir(*dir, skip))
		FREE_AND_NULL(*dir);
	return *dir != NULL;
}

int gdn_repo_branch_checkout_at(const char *dir, const char *branch, const char *skip, char **wt,
				struct gdn_err *err)
{
	git_repository *repo = NULL, *main = NULL;
	git_reference *head = NULL;
	git_strarray names = {0};
	char *want = xstrfmt("refs/heads/%s", branch);
	int ret;

	*wt = NULL;
	ret = open_at(dir, &repo, err);
	if (ret)
		goto out;
	/* the main working tree: the one whose git directory is the common one */
	if (git_repository_open(&main, git_repository_commondir(repo)) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot open the repository of '%s': %s",
				  dir ? dir : ".", gdn_repo_git_msg());
		goto out;
	}
	if (!git_repository_is_bare(main) && git_reference_lookup(&head, main, "HEAD") == 0 &&
	    git_reference_type(head) == GIT_REFERENCE_SYMBOLIC &&
	    !strcmp(git_reference_symbolic_target(head), want) &&
	    found_at(git_repository_workdir(main), skip, wt))
		goto out;
	if (git_worktree_list(&names, main) < 0) {
		ret = gdn_err_set(err, GDN_EIO, "cannot list the worktrees of '%s': %s",
				  dir ? dir : ".", gdn_repo_git_msg());
		goto out;
	}
	for (size_t i = 0; i < names.count && !*wt; i++) {
		git_worktree *w = NULL;
		git_reference *h = NULL;

		/* a worktree's HEAD resolved: refs/heads/<branch>, or "HEAD" when detached */
		if (git_worktree_lookup(&w, main, names.strings[i]) == 0 &&
		    git_repository_head_for_worktree(&h, main, names.strings[i]) == 0 &&
		    !strcmp(git_reference_name(h), want))
			found_at(git_worktree_path(w), skip, wt);
		git_reference_free(h);
		git_worktree_free(w);
	}
out:
	git_strarray_dispose(&names);
	git_reference_free(head);
	git_repository_free(main);
	git_repository_free(repo);
	free(want);
	return ret;
}
