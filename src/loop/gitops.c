/*
 * git through the child-process API, with the original's retries on
 * transient lock errors (another git process holding index.lock); the
 * loop's stash (saved by commit id, restored after a conflict preflight)
 * and its sync with a remote branch.
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

static void sayf(const struct gdn_git *g, enum gdn_loop_level level, const char *fmt, ...)
    GDN_PRINTF(3, 4);
static void sayf(const struct gdn_git *g, enum gdn_loop_level level, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	say(g, level, sb.buf);
	sbuf_release(&sb);
}

static void journal_event(struct gdn_stash *s, const char *event, json_t *ev)
{
	s->journal(s->ctx, event, ev);
}

/* Print captured git output, one message, stripped. */
static void say_output(const struct gdn_git *g, enum gdn_loop_level level, const char *prefix,
		       struct sbuf *out)
{
	sbuf_trim(out);
	if (out->len)
		sayf(g, level, "%s%s", prefix, out->buf);
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
		sayf(s->git, GDN_LOOP_WARN, "could not pin stash %s at %s", sha, ref);
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
	sayf(s->git, GDN_LOOP_INFO, "stashed dirty tree: %s", msg);
	say_output(s->git, GDN_LOOP_INFO, "", &out);
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

/* Apply the stash in a throw-away worktree at HEAD: *conflict when it would not apply. */
static int stash_preflight(struct gdn_stash *s, bool *conflict, struct sbuf *report,
			   struct gdn_err *err)
{
	char tmpl[] = GDN_STASH_PREFLIGHT_PREFIX "XXXXXX";
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
	sayf(s->git, GDN_LOOP_WARN,
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
	sayf(s->git, GDN_LOOP_INFO, "restoring stashed dirty tree: %s (%s)", s->msg, s->sha);
	ev = gdn_journal_iteration(s->iter);
	json_object_set_new(ev, "sha", json_string(s->sha));
	journal_event(s, "stash_restoring", ev);
	ret = stash_preflight(s, &conflict, &report, err);
	if (ret)
		goto out;
	if (conflict) {
		say_output(s->git, GDN_LOOP_NOTE, "stash preflight: ", &report);
		sayf(s->git, GDN_LOOP_NOTE,
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
		say_output(s->git, GDN_LOOP_NOTE, "", &out);
		/* apply may have half-worked; keep the stash, recover the tree */
		sayf(s->git, GDN_LOOP_NOTE,
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
			sayf(s->git, GDN_LOOP_WARN,
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

/* ---- sync with a remote branch ---- */

int gdn_git_sync(const struct gdn_git *g, const char *fetch_dir, const char *remote,
		 const char *branch, enum gdn_sync_conflict conflict, struct gdn_err *err)
{
	struct gdn_git fg = *g;
	struct sbuf out = SBUF_INIT, aout = SBUF_INIT;
	char *target = xstrfmt("%s/%s", remote, branch);
	int rc = 0, arc = 0, ret;

	sayf(g, GDN_LOOP_INFO, "syncing branch with %s", target);
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
	say_output(g, rc ? GDN_LOOP_NOTE : GDN_LOOP_INFO, "", &out);
	if (!rc)
		goto out;
	ret = gdn_git_runl(g, &arc, &aout, err, "merge", "--abort", NULL);
	if (ret)
		goto out;
	if ((strstr(out.buf, "CONFLICT") || strstr(out.buf, "Automatic merge failed")) &&
	    conflict == GDN_SYNC_CONFLICT_SKIP) {
		sayf(g, GDN_LOOP_WARN,
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
			sayf(s->git, GDN_LOOP_INFO, "stash %s was already restored", s->sha);
			journal_restored(s, dropped);
			gdn_stash_forget(s);
		} else {
			ret = gdn_stash_restore(s, err);
		}
	}
out:
	return ret;
}
