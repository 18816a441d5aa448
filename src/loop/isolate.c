/*
 * The git plumbing of --isolation worktree (and of the in-place mode's
 * safety refs): refs under refs/gdnctl/, the agent's worktree, a snapshot
 * of leftover changes as a commit, and moving the loop branch the way
 * `git merge --ff-only` moves a checked-out branch. Everything goes
 * through the child-process API (gdn_git_runl); nothing here prints.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gitops.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/* git ARGS... that must succeed: a failure is GDN_EFAILED with git's first output line. */
static int git_ok(const struct gdn_git *g, struct sbuf *out, struct gdn_err *err,
		  const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	struct sbuf buf = SBUF_INIT, *o = out ? out : &buf;
	int rc = 0, ret;

	strvec_pushv(&argv, args);
	ret = gdn_git_run(g, argv.v, &rc, o, err);
	if (!ret && rc) {
		sbuf_trim(o);
		o->buf[strcspn(o->buf, "\n")] = '\0';
		ret = gdn_err_set(err, GDN_EFAILED, "git %s failed (exit=%d): %s", args[0], rc,
				  o->buf);
	}
	strvec_clear(&argv);
	sbuf_release(&buf);
	return ret;
}

int gdn_git_rev(const struct gdn_git *g, const char *rev, char **sha, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	char *spec = xstrfmt("%s^{commit}", rev);
	int rc = 0, ret;

	*sha = NULL;
	ret = gdn_git_run(g, (const char *const[]){"rev-parse", "-q", "--verify", spec, NULL}, &rc,
			  &out, err);
	sbuf_trim(&out);
	if (!ret && !rc && out.len)
		*sha = sbuf_detach(&out, NULL);
	free(spec);
	sbuf_release(&out);
	return ret;
}

int gdn_git_set_ref(const struct gdn_git *g, const char *ref, const char *sha, const char *old,
		    struct gdn_err *err)
{
	if (!sha)
		return git_ok(g, NULL, err,
			      (const char *const[]){"update-ref", "-d", ref, old, NULL});
	return git_ok(g, NULL, err, (const char *const[]){"update-ref", ref, sha, old, NULL});
}

int gdn_git_free_ref(const struct gdn_git *g, const char *base, char **ref, struct gdn_err *err)
{
	int ret = 0;

	*ref = xstrdup(base);
	for (int n = 2; !ret; n++) {
		char *sha = NULL;

		ret = gdn_git_rev(g, *ref, &sha, err);
		if (ret || !sha)
			break;
		free(sha);
		free(*ref);
		*ref = xstrfmt("%s-%d", base, n);
	}
	if (ret)
		FREE_AND_NULL(*ref);
	return ret;
}

int gdn_git_keep_ref(const struct gdn_git *g, const char *base, const char *sha, char **ref,
		     struct gdn_err *err)
{
	int ret = gdn_git_free_ref(g, base, ref, err);

	if (!ret)
		ret = gdn_git_set_ref(g, *ref, sha, NULL, err);
	if (ret)
		FREE_AND_NULL(*ref);
	return ret;
}

int gdn_git_worktree_remove(const struct gdn_git *g, const char *path, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret;

	ret = gdn_git_run(
	    g, (const char *const[]){"worktree", "remove", "--force", "--force", path, NULL}, &rc,
	    &out, err);
	if (!ret)
		ret = gdn_git_run(g, (const char *const[]){"worktree", "prune", NULL}, &rc, &out,
				  err);
	if (!ret && !access(path, F_OK))
		ret = gdn_err_set(err, GDN_EFAILED, "cannot remove the worktree '%s'", path);
	sbuf_release(&out);
	return ret;
}

int gdn_git_worktree_add(const struct gdn_git *g, const char *path, const char *commit,
			 struct gdn_err *err)
{
	int ret = 0;

	if (!access(path, F_OK))
		ret = gdn_git_worktree_remove(g, path, err);
	else
		ret = git_ok(g, NULL, err, (const char *const[]){"worktree", "prune", NULL});
	if (!ret)
		ret = git_ok(
		    g, NULL, err,
		    (const char *const[]){"worktree", "add", "-q", "--detach", path, commit, NULL});
	return ret;
}

int gdn_git_snapshot(const struct gdn_git *g, const char *tmp_index, const char *msg, char **sha,
		     struct gdn_err *err)
{
	char *envv = xstrfmt("GIT_INDEX_FILE=%s", tmp_index);
	const char *env[] = {envv, NULL};
	struct gdn_git ig = *g;
	struct sbuf tree = SBUF_INIT, head_tree = SBUF_INIT, out = SBUF_INIT;
	int ret;

	*sha = NULL;
	ig.env = env;
	unlink(tmp_index);
	ret = git_ok(&ig, NULL, err, (const char *const[]){"read-tree", "HEAD", NULL});
	if (!ret)
		ret = git_ok(&ig, NULL, err, (const char *const[]){"add", "-A", "--", ".", NULL});
	if (!ret)
		ret = git_ok(&ig, &tree, err, (const char *const[]){"write-tree", NULL});
	if (!ret)
		ret = git_ok(g, &head_tree, err,
			     (const char *const[]){"rev-parse", "HEAD^{tree}", NULL});
	sbuf_trim(&tree);
	sbuf_trim(&head_tree);
	if (ret || !strcmp(tree.buf, head_tree.buf))
		goto out;
	ret = git_ok(g, &out, err,
		     (const char *const[]){"commit-tree", tree.buf, "-p", "HEAD", "-m", msg, NULL});
	sbuf_trim(&out);
	if (!ret)
		*sha = sbuf_detach(&out, NULL);
out:
	unlink(tmp_index);
	free(envv);
	sbuf_release(&tree);
	sbuf_release(&head_tree);
	sbuf_release(&out);
	return ret;
}

int gdn_git_reset_clean(const struct gdn_git *g, const char *commit, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret;

	/* a stale stat cache (touch, rsync) must not make git refuse */
	ret = gdn_git_run(g, (const char *const[]){"update-index", "-q", "--refresh", NULL}, &rc,
			  &out, err);
	if (!ret && commit)
		ret =
		    git_ok(g, NULL, err,
			   (const char *const[]){"checkout", "-q", "-f", "--detach", commit, NULL});
	else if (!ret)
		ret = git_ok(g, NULL, err, (const char *const[]){"reset", "-q", "--hard", NULL});
	if (!ret)
		ret = git_ok(g, NULL, err, (const char *const[]){"clean", "-q", "-ffd", NULL});
	sbuf_release(&out);
	return ret;
}

/* The worktree (other than `skip`) that has refs/heads/<branch> checked out, or NULL. */
static int branch_worktree(const struct gdn_git *g, const char *branch, const char *skip,
			   char **dir, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	char *want = xstrfmt("branch refs/heads/%s", branch), *wt = NULL;
	int ret =
	    git_ok(g, &out, err, (const char *const[]){"worktree", "list", "--porcelain", NULL});

	*dir = NULL;
	for (char *line = out.buf, *nl; !ret && *line; line = nl + (*nl != '\0')) {
		nl = strchrnul(line, '\n');
		if (!strncmp(line, "worktree ", 9)) {
			free(wt);
			wt = xstrndup(line + 9, (size_t)(nl - line - 9));
		} else if ((size_t)(nl - line) == strlen(want) &&
			   !strncmp(line, want, strlen(want)) && wt &&
			   (!skip || strcmp(wt, skip))) {
			*dir = wt;
			wt = NULL;
			break;
		}
	}
	free(wt);
	free(want);
	sbuf_release(&out);
	return ret;
}

int gdn_git_move_branch(const struct gdn_git *g, const char *branch, const char *from,
			const char *to, const char *skip_dir, struct sbuf *why, struct gdn_err *err)
{
	char *ref = xstrfmt("refs/heads/%s", branch), *tip = NULL, *dir = NULL;
	struct gdn_git wg = *g;
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret;

	sbuf_reset(why);
	ret = gdn_git_rev(g, ref, &tip, err);
	if (ret)
		goto out;
	if (!tip || strcmp(tip, from)) {
		sbuf_addf(why, "%s is at %.12s, not at %.12s", branch, tip ? tip : "(nothing)",
			  from);
		goto out;
	}
	ret = branch_worktree(g, branch, skip_dir, &dir, err);
	if (ret)
		goto out;
	if (dir) {
		/* update its tree as a fast-forward would, keeping uncommitted edits */
		wg.workdir = dir;
		ret =
		    gdn_git_run(&wg, (const char *const[]){"update-index", "-q", "--refresh", NULL},
				&rc, &out, err);
		if (!ret)
			ret = gdn_git_run(
			    &wg, (const char *const[]){"read-tree", "-m", "-u", from, to, NULL},
			    &rc, &out, err);
		if (ret)
			goto out;
		if (rc) {
			sbuf_trim(&out);
			sbuf_addf(why, "uncommitted changes in '%s' touch the same files: %s", dir,
				  out.buf);
			goto out;
		}
	}
	ret = gdn_git_set_ref(g, ref, to, from, err);
	if (ret && dir) {
		struct gdn_err ignored = GDN_ERR_INIT;

		/* the branch moved meanwhile: put the tree back */
		gdn_git_run(&wg, (const char *const[]){"read-tree", "-m", "-u", to, from, NULL},
			    &rc, &out, &ignored);
	}
out:
	free(ref);
	free(tip);
	free(dir);
	sbuf_release(&out);
	return ret;
}

int gdn_git_is_ancestor(const struct gdn_git *g, const char *anc, const char *desc, bool *yes,
			struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret;

	ret = gdn_git_run(g, (const char *const[]){"merge-base", "--is-ancestor", anc, desc, NULL},
			  &rc, &out, err);
	*yes = !ret && !rc;
	if (!ret && rc > 1) {
		sbuf_trim(&out);
		ret = gdn_err_set(err, GDN_EFAILED, "git merge-base failed (exit=%d): %s", rc,
				  out.buf);
	}
	sbuf_release(&out);
	return ret;
}
