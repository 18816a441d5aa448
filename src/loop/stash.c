/*
 * The loop's stash (--isolation in-place only): the user's dirty tree saved
 * by commit id before an iteration, pinned under refs/gdnctl/stash/, and
 * restored after a conflict preflight in a throw-away worktree; --resume's
 * recovery of a stash an interrupted run left.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static void journal_event(struct gdn_stash *s, const char *event, json_t *ev)
{
	s->journal(s->ctx, event, ev);
}

/* ---- stash: saved by commit id, restored after a preflight ---- */

static char *pin_ref(const struct gdn_stash *s)
{
	return s->pin_run ? xstrfmt("refs/gdnctl/stash/%s/%ld", s->pin_run, s->iter) : NULL;
}

/* Pin the current stash (sha set) or, sha NULL, drop the pin of iteration s->iter. */
static void pin(struct gdn_stash *s, const char *sha)
{
	struct gdn_err ignored = GDN_ERR_INIT;
	struct gdn_git q = *s->git;
	char *ref = pin_ref(s);
	int rc = 0;

	q.quiet = true;
	if (ref &&
	    (gdn_git_run(&q,
			 sha ? (const char *const[]){"update-ref", ref, sha, NULL}
			     : (const char *const[]){"update-ref", "-d", ref, NULL},
			 &rc, NULL, &ignored) ||
	     rc) &&
	    sha)
		gdn_git_sayf(s->git, GDN_LOOP_WARN, "could not pin stash %s at %s", sha, ref);
	free(ref);
}

void gdn_stash_forget(struct gdn_stash *s)
{
	FREE_AND_NULL(s->sha);
	FREE_AND_NULL(s->msg);
	s->iter = 0;
}

/* kind: "user" (the tree before an iteration), "leftovers" (an interrupted agent's work). */
int gdn_stash_save(struct gdn_stash *s, long it, const char *msg, const char *kind,
		   struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	long index = -1;
	json_t *ev;
	int rc = 0, ret;

	gdn_stash_forget(s);
	s->msg = xstrdup(msg);
	s->iter = it;
	ev = gdn_journal_iteration(it);
	json_object_set_new(ev, "message", json_string(msg));
	json_object_set_new(ev, "kind", json_string(kind));
	journal_event(s, "stash_saving", ev);
	ret = gdn_git_runl(s->git, &rc, &out, err, "stash", "push", "-u", "-m", msg, NULL);
	if (ret)
		goto out;
	if (rc) {
		sbuf_trim(&out);
		ret = gdn_err_set(err, GDN_EFAILED, "git stash push failed (exit=%d): %s", rc,
				  out.buf);
		goto out;
	}
	gdn_git_sayf(s->git, GDN_LOOP_INFO, "stashed dirty tree: %s", msg);
	gdn_git_say_output(s->git, GDN_LOOP_INFO, "", &out);
	ret = gdn_repo_stash_find(s->repo, NULL, msg, &index, &s->sha, err);
	if (ret)
		goto out;
	if (index < 0) {
		ret = gdn_err_set(err, GDN_EFAILED,
				  "Failed to resolve stash ref after stashing dirty tree.");
		goto out;
	}
	pin(s, s->sha);
	ev = gdn_journal_iteration(it);
	json_object_set_new(ev, "sha", json_string(s->sha));
	json_object_set_new(ev, "message", json_string(msg));
	json_object_set_new(ev, "kind", json_string(kind));
	journal_event(s, "stash_saved", ev);
out:
	if (ret && !s->sha)
		gdn_stash_forget(s);
	sbuf_release(&out);
	return ret;
}

const char *gdn_stash_preflight_prefix(void)
{
	static char *prefix;

	if (!prefix) {
		const char *tmp = getenv("TMPDIR");

		prefix = xstrfmt("%s/gdnctl-stash-preflight-", tmp && *tmp ? tmp : "/tmp");
	}
	return prefix;
}

/* Apply the stash in a throw-away worktree at HEAD: *conflict when it would not apply. */
static int stash_preflight(struct gdn_stash *s, bool *conflict, struct sbuf *report,
			   struct gdn_err *err)
{
	char *tmpl = xstrfmt("%sXXXXXX", gdn_stash_preflight_prefix());
	char *probe = NULL;
	struct gdn_git pg = *s->git;
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret = 0;

	*conflict = false;
	if (!mkdtemp(tmpl))
		goto out; /* fail open, as the original */
	probe = xstrfmt("%s/probe", tmpl);
	/* journaled first: a resume after a kill -9 here removes it */
	journal_event(s, "preflight_worktree", json_pack("{ss}", "path", probe));
	ret = gdn_git_runl(s->git, &rc, report, err, "worktree", "add", "--detach", probe, "HEAD",
			   NULL);
	if (ret || rc) {
		ret = 0; /* fail open; the output is kept in report */
		goto out;
	}
	pg.workdir = probe;
	ret = gdn_git_run(&pg, (const char *const[]){"stash", "apply", "--quiet", s->sha, NULL},
			  &rc, &out, err);
	if (!ret && rc) {
		*conflict = true;
		sbuf_add(report, out.buf, out.len);
	}
	ret = 0;
	gdn_git_runl(s->git, &rc, &out, err, "worktree", "remove", "--force", probe, NULL);
out:
	if (probe) {
		struct gdn_err ignored = GDN_ERR_INIT;

		gdn_git_runl(s->git, &rc, &out, &ignored, "worktree", "prune", NULL);
		rmdir(probe);
	}
	rmdir(tmpl);
	free(tmpl);
	free(probe);
	sbuf_release(&out);
	return ret;
}

void gdn_stash_report_kept(struct gdn_stash *s, const char *reason)
{
	json_t *ev = gdn_journal_iteration(s->iter);

	json_object_set_new(ev, "sha", json_string(s->sha));
	json_object_set_new(ev, "message", json_string(s->msg));
	json_object_set_new(ev, "reason", json_string(reason));
	journal_event(s, "stash_kept", ev);
	if (!strvec_contains(s->kept, s->sha)) {
		char *ref = pin_ref(s);

		strvec_pushf(s->kept, "%s %s", s->sha, s->msg);
		if (ref && s->refs)
			strvec_pushf(s->refs, "%s the stash of iteration %ld, not restored (%s)",
				     ref, s->iter, s->msg);
		free(ref);
	}
}

static int drop_stash(struct gdn_stash *s, bool *dropped, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	char ref[64];
	long index = -1;
	int rc = 0, ret;

	*dropped = false;
	ret = gdn_repo_stash_find(s->repo, s->sha, NULL, &index, NULL, err);
	if (ret || index < 0)
		goto out; /* already gone (dropped by someone else): nothing to drop */
	snprintf(ref, sizeof(ref), "stash@{%ld}", index);
	ret = gdn_git_runl(s->git, &rc, &out, err, "stash", "drop", ref, NULL);
	*dropped = !ret && !rc;
out:
	sbuf_release(&out);
	return ret;
}

static void journal_restored(struct gdn_stash *s, bool dropped)
{
	json_t *ev = gdn_journal_iteration(s->iter);

	json_object_set_new(ev, "sha", json_string(s->sha));
	json_object_set_new(ev, "message", json_string(s->msg));
	json_object_set_new(ev, "dropped", json_boolean(dropped));
	journal_event(s, "stash_restored", ev);
	pin(s, NULL);
}

/* After a failed restore: the original's unmerged-paths recovery. */
static int recover_unmerged(struct gdn_stash *s, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret;

	ret = gdn_git_runl(s->git, &rc, &out, err, "diff", "--name-only", "--diff-filter=U", NULL);
	sbuf_trim(&out);
	if (ret || rc || !out.len)
		goto out;
	gdn_git_sayf(
	    s->git, GDN_LOOP_WARN,
	    "unmerged paths detected after stash restore attempt; resetting index/worktree to "
	    "HEAD to keep loop running (stashes are preserved).");
	ret = gdn_git_runl(s->git, &rc, &out, err, "reset", "--merge", NULL);
	if (!ret)
		ret = gdn_git_runl(s->git, &rc, &out, err, "diff", "--name-only", "--diff-filter=U",
				   NULL);
	sbuf_trim(&out);
	if (!ret && (rc || out.len))
		ret = gdn_err_set(err, GDN_EFAILED,
				  "Unable to recover from unmerged paths after stash restore "
				  "attempt. Resolve conflicts manually before continuing.");
out:
	sbuf_release(&out);
	return ret;
}

/* A stash that could not be restored: report it, recover the tree, apply the policy. */
static int keep_stash(struct gdn_stash *s, const char *reason, struct gdn_err *err)
{
	int ret;

	gdn_stash_report_kept(s, reason);
	ret = recover_unmerged(s, err);
	if (!ret && s->restore_policy == GDN_RESTORE_FAIL)
		ret = gdn_err_set(err, GDN_EFAILED,
				  "Failed to restore stashed dirty tree. Resolve stash conflicts "
				  "manually before continuing.");
	gdn_stash_forget(s);
	return ret;
}

/*
 * Restore the iteration's stash by its commit id (never by position: the
 * agent may have pushed or dropped stashes). Returns 0 (restored, or kept
 * under warn-keep) or an error (the restore policy is fail, or recovery
 * failed).
 */
int gdn_stash_restore(struct gdn_stash *s, struct gdn_err *err)
{
	struct sbuf report = SBUF_INIT, out = SBUF_INIT;
	bool conflict = false, dropped = false, in_tree = false;
	json_t *ev;
	int rc = 0, ret = 0;

	if (!s->sha)
		goto out;
	gdn_git_sayf(s->git, GDN_LOOP_INFO, "restoring stashed dirty tree: %s (%s)", s->msg,
		     s->sha);
	ev = gdn_journal_iteration(s->iter);
	json_object_set_new(ev, "sha", json_string(s->sha));
	journal_event(s, "stash_restoring", ev);
	ret = stash_preflight(s, &conflict, &report, err);
	if (ret)
		goto out;
	if (conflict) {
		gdn_git_say_output(s->git, GDN_LOOP_NOTE, "stash preflight: ", &report);
		gdn_git_sayf(
		    s->git, GDN_LOOP_NOTE,
		    "stash restore skipped because preflight detected conflicts; stash kept for "
		    "manual recovery (%s, message=%s).",
		    s->sha, s->msg);
		ret = keep_stash(s, "conflict", err);
		goto out;
	}
	ret = gdn_git_runl(s->git, &rc, &out, err, "stash", "apply", s->sha, NULL);
	if (ret)
		goto out;
	if (rc) {
		gdn_git_say_output(s->git, GDN_LOOP_NOTE, "", &out);
		/* apply may have half-worked; keep the stash, recover the tree */
		gdn_git_sayf(
		    s->git, GDN_LOOP_NOTE,
		    "stash restore failed; stash was kept for manual recovery (%s, message=%s).",
		    s->sha, s->msg);
		ret = keep_stash(s, "apply-failed", err);
		goto out;
	}
	ret = drop_stash(s, &dropped, err);
	if (ret)
		goto out;
	if (!dropped && !gdn_repo_stash_in_tree(s->repo, s->sha, &in_tree, err) && in_tree) {
		long index = -1;

		gdn_repo_stash_find(s->repo, s->sha, NULL, &index, NULL, err);
		if (index >= 0)
			gdn_git_sayf(
			    s->git, GDN_LOOP_WARN,
			    "stash was applied but could not be dropped automatically (%s).",
			    s->sha);
	}
	journal_restored(s, dropped);
	gdn_stash_forget(s);
	goto out;
out:
	sbuf_release(&report);
	sbuf_release(&out);
	return ret;
}

/* --resume: the stash an interrupted run had saved and not restored (st->stash_msg set). */
int gdn_stash_recover(struct gdn_stash *s, struct gdn_loop_state *st, struct gdn_err *err)
{
	bool in_tree = false;
	long index = -1;
	int ret = 0;

	if (st->stash_msg) {
		ret = gdn_repo_stash_find(s->repo, st->stash_sha, st->stash_msg, &index,
					  st->stash_sha ? NULL : &st->stash_sha, err);
		if (ret)
			goto out;
		if (!st->stash_sha) {
			/* the push never happened */
			journal_event(s, "stash_forgotten",
				      json_pack("{sIss}", "iteration", (json_int_t)st->stash_iter,
						"message", st->stash_msg));
			goto out;
		}
		s->sha = xstrdup(st->stash_sha);
		s->msg = xstrdup(st->stash_msg);
		s->iter = st->stash_iter;
		if (st->stash_restoring) {
			ret = gdn_repo_stash_in_tree(s->repo, s->sha, &in_tree, err);
			if (ret)
				goto out;
		}
		if (in_tree) {
			bool dropped = false;

			ret = drop_stash(s, &dropped, err);
			if (ret)
				goto out;
			gdn_git_sayf(s->git, GDN_LOOP_INFO, "stash %s was already restored",
				     s->sha);
			journal_restored(s, dropped);
			gdn_stash_forget(s);
		} else {
			ret = gdn_stash_restore(s, err);
		}
	}
out:
	return ret;
}
