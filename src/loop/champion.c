/*
 * The champion and where it lives (--isolation worktree; the in-place
 * mode keeps its safety refs through ctx.c): the champion's ref
 * (refs/gdnctl/champion/<run>, the truth for --resume), the loop branch
 * brought to it, the agent's worktree made at it, reset to it and
 * retired, and what a candidate leaves there set aside.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"

/* Where the loop branch is now (NULL: deleted). */
int loop_branch_tip(struct ictx *x, char **tip, struct gdn_err *err)
{
	struct run *r = x->r;
	char *ref = xstrfmt("refs/heads/%s", r->branch);
	int ret = gdn_git_rev(&r->ugit, ref, tip, err);

	free(ref);
	return ret;
}

/*
 * Bring the loop branch to the champion when it is behind it: a
 * fast-forward that keeps the uncommitted edits of the checkout that has
 * it. When those edits touch the same files, or the branch moved
 * elsewhere, the champion stays at its ref (parked) and the summary says
 * how to bring it in; each later promotion tries again.
 */
void loop_advance_branch(struct ictx *x, long it)
{
	struct run *r = x->r;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf why = SBUF_INIT;
	bool ff = false;

	if (!strcmp(r->btip, r->champion))
		goto out;
	if (gdn_git_is_ancestor(&r->ugit, r->btip, r->champion, &ff, &err) ||
	    (ff && gdn_git_move_branch(&r->ugit, r->branch, r->btip, r->champion, x->o->workdir,
				       &why, &err))) {
		sbuf_reset(&why);
		sbuf_adds(&why, err.msg);
	} else if (!ff) {
		sbuf_addf(&why, "%s no longer leads to it", r->branch);
	}
	if (!why.len) {
		loop_journal(x, "branch_moved",
			     json_pack("{sIssssss}", "iteration", (json_int_t)it, "branch",
				       r->branch, "from", r->btip, "to", r->champion));
		if (r->sum->champion_parked)
			loop_say(x, GDN_LOOP_INFO, "%s caught up with the champion %.12s",
				 r->branch, r->champion);
		free(r->btip);
		r->btip = xstrdup(r->champion);
		r->sum->champion_parked = false;
		goto out;
	}
	if (!r->sum->champion_parked)
		loop_say(
		    x, GDN_LOOP_WARN,
		    "%s stays at %.12s (%s); the champion %.12s is kept at %s: bring it in with "
		    "`git merge --ff-only %s`",
		    r->branch, r->btip, why.buf, r->champion, r->champion_ref, r->champion_ref);
	loop_journal(x, "champion_parked",
		     json_pack("{sIssss}", "iteration", (json_int_t)it, "ref", r->champion_ref,
			       "reason", why.buf));
	r->sum->champion_parked = true;
out:
	sbuf_release(&why);
}

/* A new champion: its ref first (the truth for --resume), then the journal, then the branch. */
int loop_promote(struct ictx *x, long it, const char *sha, struct gdn_err *err)
{
	struct run *r = x->r;
	int ret = gdn_git_set_ref(&r->ugit, r->champion_ref, sha, NULL, err);

	if (ret)
		return ret;
	free(r->champion);
	r->champion = xstrdup(sha);
	loop_journal(x, "promote",
		     json_pack("{sIssss}", "iteration", (json_int_t)it, "champion", sha, "branch",
			       r->branch));
	loop_advance_branch(x, it);
	return 0;
}

/*
 * After the agent: the loop branch must be where the loop left it. A
 * branch moved meanwhile is kept under refs/gdnctl/discarded/<it> and put
 * back (*moved).
 */
int loop_check_branch(struct ictx *x, struct iter *c, bool *moved, struct gdn_err *err)
{
	struct run *r = x->r;
	char *tip = NULL, *ref = xstrfmt("refs/heads/%s", r->branch);
	struct sbuf why = SBUF_INIT;
	int ret = loop_branch_tip(x, &tip, err);

	*moved = !ret && (!tip || strcmp(tip, r->btip));
	if (ret || !*moved)
		goto out;
	if (tip) {
		loop_keep_ref(x, c->it, "discarded/", tip,
			      "the loop branch, moved during the iteration");
		ret = gdn_git_move_branch(&r->ugit, r->branch, tip, r->btip, x->o->workdir, &why,
					  err);
	} else {
		ret = gdn_git_set_ref(&r->ugit, ref, r->btip, NULL, err);
	}
	if (!ret && why.len)
		loop_say(x, GDN_LOOP_WARN, "%s could not be put back at %.12s: %s", r->branch,
			 r->btip, why.buf);
out:
	free(tip);
	free(ref);
	sbuf_release(&why);
	return ret;
}

/*
 * Uncommitted changes in the agent's tree (`wgit`): kept as a commit under
 * refs/gdnctl/leftovers/<it>, then removed, so that validation tests exactly
 * the commits and nothing leaks into the next iteration or a user stash.
 */
int loop_set_leftovers_aside(struct ictx *x, long it, struct gdn_err *err)
{
	char *idx = xstrfmt("%s/leftovers.index", x->o->log_dir), *sha = NULL;
	char *msg = xstrfmt("gdnctl: changes left by the agent in iteration %ld (run %s)", it,
			    x->r->sum->run_id);
	struct gdn_err ignored = GDN_ERR_INIT;
	bool dirty = true;
	int ret = 0;

	/* nothing to keep: a clean tree (a cheap answer with the run's change feed) */
	if (x->repo && !strcmp(gdn_repo_root(x->repo), x->o->workdir) &&
	    !gdn_repo_dirty(x->repo, &dirty, &ignored) && !dirty)
		goto out;
	ret = gdn_git_snapshot(&x->wgit, idx, msg, &sha, err);
	if (!ret && sha) {
		loop_keep_ref(x, it, "leftovers/", sha, "uncommitted changes the agent left");
		ret = gdn_git_reset_clean(&x->wgit, NULL, err);
	}
out:
	x->clean_known = !ret;
	gdn_err_clear(&ignored);
	free(idx);
	free(msg);
	free(sha);
	return ret;
}

/*
 * The end of an iteration with --isolation worktree: an accepted
 * iteration's HEAD is returned, to become the champion once the decision
 * naming it is journaled (a crash in between: --resume promotes it); the
 * commits of any other are kept under refs/gdnctl/discarded/<it> (a hook
 * that reverted them kept them already) and the worktree goes back to the
 * champion.
 */
char *loop_settle(struct ictx *x, struct iter *c, bool accepted)
{
	struct run *r = x->r;
	struct gdn_err err = GDN_ERR_INIT;
	char *head = NULL;

	if (gdn_git_rev(&x->wgit, "HEAD", &head, &err) || !head)
		goto fail;
	if (strcmp(head, r->champion) && c->commits > 0 && accepted)
		return head; /* promoted once the decision is journaled */
	if (strcmp(head, r->champion) && c->commits > 0)
		loop_keep_ref(x, c->it, "discarded/", head, "the commits of a failed iteration");
	c->commits = 0;
	if (strcmp(head, r->champion) && gdn_git_reset_clean(&x->wgit, r->champion, &err))
		goto fail;
	free(head);
	return NULL;
fail:
	loop_say(x, GDN_LOOP_WARN, "iteration %ld: %s", c->it, err.msg);
	c->commits = 0;
	free(head);
	return NULL;
}

/*
 * Retire the agent's worktree (the end of a run, or what a crashed run
 * left): its uncommitted changes and any commit past the champion (an
 * interrupted iteration `it`) are kept under refs, then it is removed.
 */
void loop_retire_worktree(struct ictx *x, long it)
{
	struct run *r = x->r;
	struct gdn_err err = GDN_ERR_INIT;
	char *head = NULL;
	bool behind = false;

	if (access(x->o->workdir, F_OK))
		goto prune;
	if (loop_set_leftovers_aside(x, it, &err))
		loop_say(x, GDN_LOOP_WARN, "%s", err.msg);
	gdn_err_clear(&err);
	if (!gdn_git_rev(&x->wgit, "HEAD", &head, &err) && head && r->champion &&
	    strcmp(head, r->champion) &&
	    /* a worker's worktree at a former champion holds nothing new */
	    (gdn_git_is_ancestor(&r->ugit, head, r->champion, &behind, &err) || !behind)) {
		char *kind = xstrfmt("loop/%s/iteration-", r->sum->run_id);

		loop_keep_ref(x, it, kind, head, "the commits of an interrupted iteration");
		free(kind);
	}
	gdn_err_clear(&err);
	if (gdn_git_worktree_remove(&r->ugit, x->o->workdir, &err))
		loop_say(x, GDN_LOOP_WARN, "%s", err.msg);
	else
		loop_journal(x, "worktree_removed", json_pack("{ss}", "path", x->o->workdir));
	free(head);
	return;
prune:
	gdn_git_runl(&r->ugit, &(int){0}, NULL, &err, "worktree", "prune", NULL);
}

/* A new run's loop branch and champion (its tip), then the agent's worktree there. */
int loop_champion_begin(struct ictx *x, struct gdn_err *err)
{
	struct run *r = x->r;
	int ret = 0;

	if (x->o->branch) {
		r->branch = xstrdup(x->o->branch);
	} else {
		ret = gdn_repo_head_at(x->o->user_workdir, NULL, &r->branch, err);
		if (!ret && !r->branch)
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "'%s' is on a detached HEAD: name the loop branch with "
					  "--branch B, or use --isolation in-place",
					  x->o->user_workdir);
	}
	if (!ret)
		ret = loop_branch_tip(x, &r->champion, err);
	if (!ret && !r->champion)
		ret = gdn_err_set(err, GDN_EUSAGE, "no branch '%s' with a commit to start from",
				  r->branch);
	if (ret)
		return ret;
	r->btip = xstrdup(r->champion);
	r->champion_ref = xstrfmt(CHAMPION_REFS "%s", r->sum->run_id);
	return gdn_git_set_ref(&r->ugit, r->champion_ref, r->champion, NULL, err);
}

/* The worktree is known clean (nothing ran since it was checked) and at the champion. */
static bool worktree_at_champion(struct ictx *x)
{
	struct gdn_err ignored = GDN_ERR_INIT;
	char *head = NULL;
	bool yes;

	if (!x->clean_known || !x->repo)
		return false;
	yes =
	    !gdn_repo_head(x->repo, &head, NULL, &ignored) && head && !strcmp(head, x->r->champion);
	free(head);
	return yes;
}

/* Make the agent's worktree at the champion (journaled first, so a resume can remove it). */
int loop_worktree_add(struct ictx *x, struct gdn_err *err)
{
	struct run *r = x->r;
	int ret;

	loop_journal(x, "worktree_add",
		     json_pack("{ssss}", "path", x->o->workdir, "commit", r->champion));
	ret = gdn_git_worktree_add(&r->ugit, x->o->workdir, r->champion, err);
	x->clean_known = !ret; /* a fresh checkout of the champion */
	return ret;
}

/*
 * The agent starts from a clean worktree at the champion: made again
 * when it was removed under the run (the agent deleted the log dir),
 * reset unless the last iteration left it so (nothing ran since).
 */
int loop_worktree_ready(struct ictx *x, struct gdn_err *err)
{
	if (access(x->o->workdir, F_OK))
		return loop_worktree_add(x, err); /* new, at the champion: nothing to reset */
	if (!worktree_at_champion(x))
		return gdn_git_reset_clean(&x->wgit, x->r->champion, err);
	return 0;
}
