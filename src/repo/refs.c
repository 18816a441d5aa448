/*
 * References and ancestry in the repository at or above a directory, in
 * process: what the loop's bookkeeping asked `git rev-parse`, `git
 * update-ref`, `git merge-base --is-ancestor` and `git worktree list`
 * for. A git process costs several milliseconds to start on a VM; the
 * loop asked these several times per promotion (issues 26 and 27).
 *
 * Each call opens the repository afresh (well under a millisecond), so
 * what git commands changed meanwhile (the agent's, gdnctl's own) is
 * seen, and nothing is shared between the loop's worker processes.
 * Reference updates take the same lock files as git, so they are atomic
 * against git commands running at the same time.
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
	bool ok = git_revparse_single(&obj, repo, rev) == 0 &&
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

int gdn_repo_set_ref_at(const char *dir, const char *ref, const char *sha, const char *old,
			bool *locked, struct gdn_err *err)
{
	git_repository *repo = NULL;
	git_reference *out = NULL, *cur = NULL;
	const char *bad;
	git_oid new_id, old_id;
	int ret, rc = 0;

	*locked = false;
	ret = open_at(dir, &repo, err);
	if (ret)
		goto out;
	bad = sha && git_oid_fromstr(&new_id, sha) < 0	 ? sha
	      : old && git_oid_fromstr(&old_id, old) < 0 ? old
							 : NULL;
	if (bad) {
		ret = gdn_err_set(err, GDN_EUSAGE, "cannot set '%s': '%s' is not an object id", ref,
				  bad);
		goto out;
	}
	if (sha && old)
		rc = git_reference_create_matching(&out, repo, ref, &new_id, 1, &old_id, NULL);
	else if (sha)
		rc = git_reference_create(&out, repo, ref, &new_id, 1, NULL);
	else {
		rc = git_reference_lookup(&cur, repo, ref);
		if (rc == GIT_ENOTFOUND) {
			rc = 0; /* `git update-ref -d` of a missing ref: done */
			if (old)
				goto moved;
			goto out;
		}
		if (!rc && old &&
		    (git_reference_type(cur) != GIT_REFERENCE_DIRECT ||
		     !git_oid_equal(git_reference_target(cur), &old_id)))
			goto moved;
		if (!rc)
			rc = git_reference_delete(cur); /* under the lock, only if still at cur */
	}
	if (rc == GIT_ELOCKED) {
		*locked = true;
		ret = gdn_err_set(err, GDN_EFAILED, "cannot update '%s': it is locked: %s", ref,
				  gdn_repo_git_msg());
	} else if (rc == GIT_EMODIFIED) {
		goto moved;
	} else if (rc < 0) {
		ret = gdn_err_set(err, GDN_EFAILED, "cannot %s '%s': %s", sha ? "update" : "delete",
				  ref, gdn_repo_git_msg());
	}
	goto out;
moved:
	ret = gdn_err_set(err, GDN_EFAILED, "cannot %s '%s': it is no longer at %s",
			  sha ? "update" : "delete", ref, old);
out:
	git_reference_free(cur);
	git_reference_free(out);
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
