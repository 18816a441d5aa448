/*
 * --resume (docs/loop-map.md): the journal read back; with a worktree, the
 * champion recovered and a promotion cut short finished or undone; what
 * the interrupted iteration left (its agent, its uncommitted work, its
 * commits, the user's stash) stopped, kept and set aside.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"

int loop_load_state(struct run *r, struct gdn_loop_state *st, struct gdn_err *err)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	ret = sbuf_read_file(&sb, r->j.path, 256 * 1024 * 1024, err);
	if (ret == GDN_ENOTFOUND || (!ret && !sb.len)) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "nothing to resume: no journal at '%s'",
				  r->j.path);
		goto out;
	}
	if (ret)
		goto out;
	ret = gdn_journal_parse(sb.buf, sb.len, st, err);
	if (!ret && !st->run_id)
		ret =
		    gdn_err_set(err, GDN_ENOTFOUND, "nothing to resume: no run in '%s'", r->j.path);
out:
	sbuf_release(&sb);
	return ret;
}

/*
 * --resume: the interrupted iteration was promoted, but its decision was
 * never journaled. It is redone, so the champion and the loop branch go
 * back to where it began (its commits are kept with the worktree's), and
 * so does the user's checkout when a kill -9 cut the fast-forward between
 * its tree and its ref (the index has the undone champion's version of
 * every path the promotion changed).
 */
static int undo_undecided_promotion(struct ictx *x, const char *from, struct gdn_err *err)
{
	struct run *r = x->r;
	char *undone = r->champion;
	struct strvec argv = STRVEC_INIT;
	struct sbuf why = SBUF_INIT, out = SBUF_INIT;
	int rc = 0, ret;

	r->champion = xstrdup(from);
	ret = gdn_git_set_ref(&r->ugit, r->champion_ref, r->champion, undone, err);
	if (!ret && !strcmp(r->btip, undone)) {
		ret = gdn_git_move_branch(&r->ugit, r->branch, undone, from, x->o->workdir, &why,
					  err);
		if (!ret && !why.len) {
			free(r->btip);
			r->btip = xstrdup(from);
		}
		goto out;
	}
	if (ret || strcmp(r->btip, from))
		goto out;
	ret = gdn_git_runl(&r->ugit, &rc, &out, err, "diff", "--name-only", from, undone, NULL);
	if (ret || rc || !out.len)
		goto out;
	strvec_pushl(&argv, "diff-index", "--cached", "--quiet", undone, "--", NULL);
	sbuf_trim(&out);
	strvec_split(&argv, out.buf, '\n');
	ret = gdn_git_run(&r->ugit, argv.v, &rc, NULL, err);
	if (!ret && !rc)
		ret = gdn_git_runl(&r->ugit, &rc, NULL, err, "read-tree", "-m", "-u", undone, from,
				   NULL);
out:
	free(undone);
	strvec_clear(&argv);
	sbuf_release(&why);
	sbuf_release(&out);
	return ret;
}

/*
 * --resume of a run with --isolation worktree: the loop branch and the
 * champion (its ref, else the journal's: a promotion cut short after its
 * decision is finished), and where the branch is.
 */
int loop_recover_champion(struct ictx *x, struct gdn_loop_state *st, struct gdn_err *err)
{
	struct run *r = x->r;
	int ret = 0;

	if (!st->worktree || !st->loop_branch)
		return gdn_err_set(err, GDN_EUSAGE,
				   "run %s was started with --isolation in-place: resume it with "
				   "--isolation in-place",
				   st->run_id);
	r->branch = xstrdup(st->loop_branch);
	r->champion_ref = xstrfmt(CHAMPION_REFS "%s", st->run_id);
	ret = gdn_git_rev(&r->ugit, r->champion_ref, &r->champion, err);
	if (!ret && st->champion && (!r->champion || strcmp(st->champion, r->champion))) {
		bool ahead = !r->champion;

		/* a decision journaled, its promotion cut short: finish it */
		ret = ahead ? 0
			    : gdn_git_is_ancestor(&r->ugit, r->champion, st->champion, &ahead, err);
		if (!ret && ahead) {
			free(r->champion);
			r->champion = xstrdup(st->champion);
			ret = gdn_git_set_ref(&r->ugit, r->champion_ref, r->champion, NULL, err);
		}
	}
	if (!ret && !r->champion)
		ret = gdn_err_set(err, GDN_ENOTFOUND, "run %s has no champion to resume from",
				  st->run_id);
	if (!ret)
		ret = loop_branch_tip(x, &r->btip, err);
	if (ret)
		return ret;
	if (!r->btip)
		r->btip = xstrdup(r->champion);
	return 0;
}

/*
 * Then, for the serial scheduler: the crashed run's agent stopped, a
 * promotion whose decision was never journaled undone, what the crashed
 * run left in the worktree kept, and a fresh worktree.
 */
int loop_recover_worktree(struct ictx *x, struct gdn_loop_state *st, struct gdn_err *err)
{
	struct run *r = x->r;
	int ret;

	loop_stop_orphan_agent(x, st);
	loop_wait_for_git(x);
	if (st->open_iter && !st->open_decided && st->open_head &&
	    strcmp(r->champion, st->open_head)) {
		ret = undo_undecided_promotion(x, st->open_head, err);
		if (ret)
			return ret;
	}
	if (strcmp(st->worktree, x->o->workdir) && !access(st->worktree, F_OK))
		gdn_git_worktree_remove(&r->ugit, st->worktree, err);
	gdn_err_clear(err);
	loop_retire_worktree(x, st->open_iter ? st->open_iter : st->last_done + 1);
	loop_advance_branch(x, st->last_done);
	return loop_worktree_add(x, err);
}

/* Put the commits of an interrupted iteration aside (a ref) and the branch back. */
static int set_aside(struct ictx *x, struct gdn_loop_state *st, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	char *head = NULL, *ref = NULL;
	int rc = 0, ret;

	ret = gdn_repo_head(x->repo, &head, NULL, err);
	if (ret || !head || !st->open_head || !strcmp(head, st->open_head))
		goto out;
	ref = xstrfmt("refs/gdnctl/loop/%s/iteration-%ld", st->run_id, st->open_iter);
	ret = gdn_git_runl(&x->git, &rc, &out, err, "update-ref", ref, head, NULL);
	/* a stale stat cache (touch, rsync) makes reset refuse with "not uptodate" */
	if (!ret && !rc)
		ret =
		    gdn_git_runl(&x->wgit, &rc, &out, err, "update-index", "-q", "--refresh", NULL);
	if (!ret)
		ret = gdn_git_runl(&x->git, &rc, &out, err, "reset", "-q", "--keep", st->open_head,
				   NULL);
	if (!ret && rc) {
		sbuf_trim(&out);
		ret = gdn_err_set(err, GDN_EFAILED,
				  "cannot move the branch back to %.12s before redoing interrupted "
				  "iteration %ld: %s",
				  st->open_head, st->open_iter, out.buf);
	}
	if (ret)
		goto out;
	loop_say(
	    x, GDN_LOOP_WARN,
	    "iteration %ld was interrupted; its commits are kept at %s and the branch is back at "
	    "%.12s",
	    st->open_iter, ref, st->open_head);
	loop_journal(x, "set_aside",
		     json_pack("{sIssss}", "iteration", (json_int_t)st->open_iter, "ref", ref,
			       "head", head));
out:
	free(head);
	free(ref);
	sbuf_release(&out);
	return ret;
}

int loop_recover(struct ictx *x, struct gdn_loop_state *st, struct gdn_err *err)
{
	bool dirty = false;
	long index = -1;
	int ret = 0;

	loop_stop_orphan_agent(x, st);
	loop_wait_for_git(x);
	loop_clear_stale_locks(x);
	/* a stash preflight's throw-away worktree (or its empty parent) left by a kill -9 */
	if (st->preflight && strrchr(st->preflight, '/')) {
		char *dir = xstrdup(st->preflight);

		if (!access(st->preflight, F_OK) &&
		    !gdn_git_worktree_remove(&x->r->ugit, st->preflight, err))
			loop_say(x, GDN_LOOP_WARN, "removed the stash preflight worktree '%s'",
				 dir);
		gdn_err_clear(err);
		*strrchr(dir, '/') = '\0';
		rmdir(dir);
		free(dir);
	}
	/* A recovery that was itself killed while stashing an interrupted agent's work. */
	if (st->leftover_msg) {
		ret = gdn_repo_stash_find(x->repo, st->leftover_sha, st->leftover_msg, &index,
					  &x->stash.sha, err);
		if (ret)
			goto out;
		if (index >= 0) {
			x->stash.msg = xstrdup(st->leftover_msg);
			x->stash.iter = st->open_iter;
			gdn_stash_report_kept(&x->stash, "interrupted");
		}
		gdn_stash_forget(&x->stash);
	}

	/*
	 * Work the interrupted agent left uncommitted is stashed under its own
	 * name. The tree was clean when the agent started (or stashed), unless
	 * --allow-dirty or the stash was already restored.
	 */
	if (st->open_iter && st->open_agent && !st->open_decided && !x->o->allow_dirty &&
	    !st->open_restored && !st->stash_restoring) {
		ret = gdn_repo_dirty(x->repo, &dirty, err);
		if (ret)
			goto out;
		if (dirty) {
			char *user_msg = st->stash_msg, *user_sha = st->stash_sha;
			char *msg = xstrfmt("gdnctl-loop: %s iteration %ld interrupted", st->run_id,
					    st->open_iter);

			st->stash_msg = st->stash_sha = NULL;
			ret = gdn_stash_save(&x->stash, st->open_iter, msg, "leftovers", err);
			if (!ret) {
				loop_say(x, GDN_LOOP_WARN,
					 "uncommitted work of interrupted iteration %ld is kept in "
					 "stash "
					 "%s (%s)",
					 st->open_iter, x->stash.sha, msg);
				gdn_stash_report_kept(&x->stash, "interrupted");
				gdn_stash_forget(&x->stash);
			}
			st->stash_msg = user_msg;
			st->stash_sha = user_sha;
			free(msg);
			if (ret)
				goto out;
		}
	}
	if (st->open_iter && st->open_agent && !st->open_decided) {
		ret = set_aside(x, st, err);
		if (ret)
			goto out;
	}
	if (st->stash_msg)
		ret = gdn_stash_recover(&x->stash, st, err);
out:
	if (!ret && st->open_iter && st->open_decided)
		loop_journal(x, "iteration_end", gdn_journal_iteration(st->open_iter));
	return ret;
}
