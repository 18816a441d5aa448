/*
 * git for the loop: the runner (the child-process API, with the
 * original's retries on transient lock errors), refs under refs/gdnctl/,
 * worktrees, a snapshot of leftover changes as a commit, moving the loop
 * branch the way `git merge --ff-only` moves a checked-out branch, and the
 * sync with a remote branch. Nothing here prints: messages go to g->say.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/gitops.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/* Unable to create '<at least one char, no newline>.lock' */
static bool unable_to_create_lock(const char *s)
{
	static const char head[] = "Unable to create '";

	for (const char *p = strstr(s, head); p; p = strstr(p + 1, head)) {
		const char *q = p + sizeof(head) - 1;
		const char *end = strchrnul(q, '\n');

		/* `.+?` needs one character before ".lock'" and never crosses a newline. */
		for (const char *r = q + 1; r + 6 <= end; r++)
			if (!strncmp(r, ".lock'", 6))
				return true;
	}
	return false;
}

bool gdn_git_transient_error(const char *out)
{
	return strstr(out, "index.lock") ||
	       strstr(out, "Another git process seems to be running") || unable_to_create_lock(out);
}

static void say(const struct gdn_git *g, enum gdn_loop_level level, const char *msg)
{
	if (g->say)
		g->say(level, msg, g->payload);
}

int gdn_git_run(const struct gdn_git *g, const char *const *args, int *rc, struct sbuf *out,
		struct gdn_err *err)
{
	struct strvec argv = STRVEC_INIT;
	struct sbuf line = SBUF_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	int ret = 0, attempts = g->retries + 1;

	strvec_push(&argv, "git");
	strvec_pushv(&argv, args);
	sbuf_adds(&line, "$ ");
	gdn_argv_format(&line, argv.v);
	if (!g->quiet)
		say(g, GDN_LOOP_INFO, line.buf);
	for (int attempt = 1; attempt <= attempts; attempt++) {
		gdn_proc_release(&p);
		p = (struct gdn_proc)GDN_PROC_INIT;
		p.argv = argv.v;
		p.dir = g->workdir;
		p.env = g->env;
		p.capture = true;
		p.out.limit = 4 * 1024 * 1024;
		ret = gdn_proc_run(&p, err);
		if (ret)
			goto out;
		*rc = gdn_proc_exit_code(&p);
		if (!*rc || attempt == attempts || !gdn_git_transient_error(p.out.buf) ||
		    gdn_proc_interrupted())
			break;
		sbuf_reset(&line);
		sbuf_addf(&line, "transient git error detected; retrying %d/%d after %.1fs",
			  attempt, attempts, g->retry_sleep_ms / 1000.0);
		say(g, GDN_LOOP_NOTE, line.buf);
		gdn_sleep_cleanup(g->retry_sleep_ms);
	}
	if (out) {
		sbuf_reset(out);
		sbuf_add(out, p.out.buf, p.out.len);
	}
out:
	gdn_proc_release(&p);
	sbuf_release(&line);
	strvec_clear(&argv);
	return ret;
}

int gdn_git_runl(const struct gdn_git *g, int *rc, struct sbuf *out, struct gdn_err *err, ...)
{
	struct strvec args = STRVEC_INIT;
	const char *a;
	va_list ap;
	int ret;

	va_start(ap, err);
	while ((a = va_arg(ap, const char *)))
		strvec_push(&args, a);
	va_end(ap);
	ret = gdn_git_run(g, args.v, rc, out, err);
	strvec_clear(&args);
	return ret;
}

/* ---- reporting, for git.c and stash.c ---- */

void gdn_git_sayf(const struct gdn_git *g, enum gdn_loop_level level, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	say(g, level, sb.buf);
	sbuf_release(&sb);
}

void gdn_git_say_output(const struct gdn_git *g, enum gdn_loop_level level, const char *prefix,
			struct sbuf *out)
{
	sbuf_trim(out);
	if (out->len)
		gdn_git_sayf(g, level, "%s%s", prefix, out->buf);
}

/* ---- refs, worktrees, snapshots ---- */

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
	return gdn_repo_rev_at(g->workdir, rev, sha, err);
}

int gdn_git_blob(const struct gdn_git *g, const char *rev, const char *path, struct sbuf *out,
		 bool *found, struct gdn_err *err)
{
	char *spec = xstrfmt("%s:%s", rev, path);
	int rc = 0, ret;

	sbuf_reset(out);
	ret = gdn_git_runl(g, &rc, out, err, "cat-file", "blob", spec, NULL);
	*found = !ret && !rc;
	if (!*found)
		sbuf_reset(out);
	free(spec);
	return ret;
}

/*
 * Written by git, not in process as the reads are: a process killed -9
 * between taking a ref's lock and renaming it leaves the lock file, and
 * every later update of that ref fails until someone removes it. A git
 * child runs in its own process group, so a kill -9 of gdnctl (or of a
 * worker) does not stop it inside its lock (the chaos test found this).
 */
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
	/* a tree already deleted (rm -rf, git clean) stays registered until a prune */
	if (!ret && rc)
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
	/*
	 * checkout.workers=0: one worker per core (each file's open is slow on
	 * some VMs). --force: a registration of `path` whose tree was deleted
	 * is taken over, where a `worktree prune` first cost a git process.
	 */
	if (!ret)
		ret =
		    git_ok(g, NULL, err,
			   (const char *const[]){"-c", "checkout.workers=0", "worktree", "add",
						 "-q", "--force", "--detach", path, commit, NULL});
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

	/*
	 * a stale stat cache (touch, rsync) must not make `reset --hard` refuse;
	 * `checkout -f` does not refuse, and it is what a worker runs each time
	 */
	if (commit)
		ret =
		    git_ok(g, NULL, err,
			   (const char *const[]){"checkout", "-q", "-f", "--detach", commit, NULL});
	else if (!(ret = gdn_git_run(g,
				     (const char *const[]){"update-index", "-q", "--refresh", NULL},
				     &rc, &out, err)))
		ret = git_ok(g, NULL, err, (const char *const[]){"reset", "-q", "--hard", NULL});
	if (!ret)
		ret = git_ok(g, NULL, err, (const char *const[]){"clean", "-q", "-ffd", NULL});
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
	ret = gdn_repo_branch_checkout_at(g->workdir, branch, skip_dir, &dir, err);
	if (ret)
		goto out;
	if (dir) {
		/*
		 * update its tree as a fast-forward would, keeping uncommitted
		 * edits; when git refuses, once more after refreshing a stale stat
		 * cache (touch, rsync), which costs a stat of every tracked file
		 */
		const char *const read_tree[] = {"read-tree", "-m", "-u", from, to, NULL};

		wg.workdir = dir;
		ret = gdn_git_run(&wg, read_tree, &rc, &out, err);
		if (!ret && rc) {
			sbuf_reset(&out);
			ret = gdn_git_run(
			    &wg, (const char *const[]){"update-index", "-q", "--refresh", NULL},
			    &rc, &out, err);
			sbuf_reset(&out);
			if (!ret)
				ret = gdn_git_run(&wg, read_tree, &rc, &out, err);
		}
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
	return gdn_repo_is_ancestor_at(g->workdir, anc, desc, yes, err);
}

/* ---- sync with a remote branch ---- */

int gdn_git_sync(const struct gdn_git *g, const char *fetch_dir, const char *remote,
		 const char *branch, enum gdn_sync_conflict conflict, struct gdn_err *err)
{
	struct gdn_git fg = *g;
	struct sbuf out = SBUF_INIT, aout = SBUF_INIT;
	char *target = xstrfmt("%s/%s", remote, branch);
	int rc = 0, arc = 0, ret;

	gdn_git_sayf(g, GDN_LOOP_INFO, "syncing branch with %s", target);
	if (fetch_dir)
		fg.workdir = fetch_dir;
	ret = gdn_git_runl(&fg, &rc, &out, err, "fetch", remote, branch, NULL);
	if (ret)
		goto out;
	if (rc) {
		sbuf_trim(&out);
		ret = gdn_err_set(err, GDN_EFAILED, "git fetch %s %s failed (exit=%d): %s", remote,
				  branch, rc, out.buf);
		goto out;
	}
	ret = gdn_git_runl(g, &rc, &out, err, "merge", "--no-edit", target, NULL);
	if (ret)
		goto out;
	gdn_git_say_output(g, rc ? GDN_LOOP_NOTE : GDN_LOOP_INFO, "", &out);
	if (!rc)
		goto out;
	ret = gdn_git_runl(g, &arc, &aout, err, "merge", "--abort", NULL);
	if (ret)
		goto out;
	if ((strstr(out.buf, "CONFLICT") || strstr(out.buf, "Automatic merge failed")) &&
	    conflict == GDN_SYNC_CONFLICT_SKIP) {
		gdn_git_sayf(
		    g, GDN_LOOP_WARN,
		    "sync-main merge conflict detected; continuing without syncing from main this "
		    "iteration due policy=skip.");
		goto out;
	}
	ret = gdn_err_set(err, GDN_EFAILED,
			  "failed to merge %s into current branch (exit=%d). Resolve conflicts and "
			  "rerun.",
			  target, rc);
out:
	free(target);
	sbuf_release(&out);
	sbuf_release(&aout);
	return ret;
}
