/*
 * The loop engine: the original codex-loop's iteration lifecycle (dirty
 * tree, sync, agent with retries, commit detection, post-checks,
 * no-commit policy, stamping), with every transition journaled so that
 * --resume continues after a crash without redoing a finished iteration
 * or losing uncommitted work.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/prompt.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "engine_impl.h"

static void say(struct loop *l, enum gdn_loop_level level, const char *fmt, ...) GDN_PRINTF(3, 4);
static void clear_stale_locks(struct loop *l);

static void say(struct loop *l, enum gdn_loop_level level, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (l->tag)
		sbuf_addf(&sb, "[w%ld] ", l->tag);
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	if (l->o->say)
		l->o->say(level, sb.buf, l->o->payload);
	sbuf_release(&sb);
}

/* Journal an event (ev stolen). A failing journal is reported once; the loop goes on. */
static void journal_event(struct loop *l, const char *event, json_t *ev)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (l->tag && json_is_object(ev))
		json_object_set_new(ev, "worker", json_integer(l->tag));
	if (gdn_journal_write(&l->j, event, ev, &err) && !l->journal_warned) {
		l->journal_warned = true;
		say(l, GDN_LOOP_WARN, "%s; --resume will not see this run's progress", err.msg);
	}
}

/* The hooks' reporting (struct gdn_loop_iter): through say and the journal. */
static void hook_report(void *ctx, enum gdn_loop_level level, const char *msg)
{
	say(ctx, level, "%s", msg);
}

void gdn_loop_reportf(const struct gdn_loop_iter *it, enum gdn_loop_level level, const char *fmt,
		      ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	it->report(it->ctx, level, sb.buf);
	sbuf_release(&sb);
}

static void hook_journal(void *ctx, const char *event, json_t *ev)
{
	journal_event(ctx, event, ev);
}

/* What the agent's spawn callback needs to journal its process group. */
struct spawn_note {
	struct loop *l;
	long it;
};
static void agent_spawned(pid_t pgid, void *payload);

/* "5m12s", "42s" */
static void add_elapsed(struct sbuf *sb, int64_t ms)
{
	int64_t s = ms / 1000;

	if (s >= 3600)
		sbuf_addf(sb, "%lldh%02lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else if (s >= 60)
		sbuf_addf(sb, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
	else
		sbuf_addf(sb, "%llds", (long long)s);
}

void gdn_loop_heartbeat_text(struct sbuf *sb, const char *what, int64_t elapsed_ms, int64_t idle_ms)
{
	sbuf_addf(sb, "still running: %s, ", what);
	add_elapsed(sb, elapsed_ms);
	sbuf_adds(sb, ", last output ");
	add_elapsed(sb, idle_ms);
	sbuf_adds(sb, " ago");
}

/* The heartbeat: `still running: agent, 5m12s, last output 3m ago` while it is silent. */
static void agent_tick(int64_t elapsed_ms, int64_t idle_ms, void *payload)
{
	const struct spawn_note *n = payload;
	struct sbuf sb = SBUF_INIT;

	if (idle_ms < n->l->o->heartbeat_ms)
		return;
	gdn_loop_heartbeat_text(&sb, "agent", elapsed_ms, idle_ms);
	say(n->l, GDN_LOOP_INFO, "%s", sb.buf);
	sbuf_release(&sb);
}

static int interrupted(void)
{
	return gdn_proc_interrupted();
}

static void stop_orphan_agent(struct loop *l, const struct gdn_loop_state *st);
static void wait_for_git(struct loop *l);

/* ---- one iteration ---- */

static enum step fail(struct iter *c, enum gdn_loop_failure kind, int rc,
		      enum gdn_loop_policy policy, const char *msg)
{
	c->kind = kind;
	c->rc = rc;
	c->policy = policy;
	sbuf_reset(&c->msg);
	sbuf_adds(&c->msg, msg);
	return STEP_FAIL;
}

/* ---- work set aside under refs/gdnctl/, and --isolation worktree ---- */

static bool isolated(const struct loop *l)
{
	return l->o->isolation == GDN_ISOLATION_WORKTREE;
}

/*
 * Keep `sha` under refs/gdnctl/<kind><it> (or <it>-2, ...; kind ends in '/'
 * or '-'): said, journaled
 * (`ref_kept`) and listed in the summary. Never fails the iteration: a ref
 * that cannot be written is a warning naming the commit.
 */
static void keep_ref(struct loop *l, long it, const char *kind, const char *sha, const char *what)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *base = xstrfmt("refs/gdnctl/%s%ld", kind, it), *ref = NULL;
	json_t *ev;

	if (gdn_git_keep_ref(&l->ugit, base, sha, &ref, &err)) {
		say(l, GDN_LOOP_WARN, "%s (%.12s) could not be kept under %s: %s", what, sha, base,
		    err.msg);
		goto out;
	}
	say(l, GDN_LOOP_WARN, "%s: kept at %s (%.12s)", what, ref, sha);
	ev = gdn_journal_iteration(it);
	json_object_set_new(ev, "kind", json_stringn(kind, strcspn(kind, "/")));
	json_object_set_new(ev, "ref", json_string(ref));
	json_object_set_new(ev, "sha", json_string(sha));
	json_object_set_new(ev, "what", json_string(what));
	journal_event(l, "ref_kept", ev);
	strvec_pushf(&l->sum->refs_kept, "%s %s", ref, what);
out:
	free(base);
	free(ref);
}

/*
 * Uncommitted changes in the agent's tree (`wgit`): kept as a commit under
 * refs/gdnctl/leftovers/<it>, then removed, so that validation tests exactly
 * the commits and nothing leaks into the next iteration or a user stash.
 */
static int set_leftovers_aside(struct loop *l, long it, struct gdn_err *err)
{
	char *idx = xstrfmt("%s/leftovers.index", l->o->log_dir), *sha = NULL;
	char *msg = xstrfmt("gdnctl: changes left by the agent in iteration %ld (run %s)", it,
			    l->sum->run_id);
	int ret = gdn_git_snapshot(&l->wgit, idx, msg, &sha, err);

	if (!ret && sha) {
		keep_ref(l, it, "leftovers/", sha, "uncommitted changes the agent left");
		ret = gdn_git_reset_clean(&l->wgit, NULL, err);
	}
	l->clean_known = !ret;
	free(idx);
	free(msg);
	free(sha);
	return ret;
}

/* Put the branch and HEAD of the user's checkout back at head_before (in place). */
static int restore_in_place(struct loop *l, struct iter *c, const char *branch, struct gdn_err *err)
{
	int rc = 0, ret;
	struct sbuf out = SBUF_INIT;

	ret = gdn_git_runl(&l->wgit, &rc, &out, err, "update-index", "-q", "--refresh", NULL);
	if (!ret && branch && (!c->branch_after || strcmp(c->branch_after, branch)))
		ret = gdn_git_runl(&l->git, &rc, &out, err, "checkout", "-q", branch, NULL);
	if (!ret && !rc)
		ret = gdn_git_runl(&l->git, &rc, &out, err, "reset", "-q", "--keep", c->head_before,
				   NULL);
	if (!ret && rc) {
		sbuf_trim(&out);
		ret = gdn_err_set(err, GDN_EFAILED, "cannot put %s back at %.12s: %s",
				  branch ? branch : "HEAD", c->head_before, out.buf);
	}
	sbuf_release(&out);
	return ret;
}

/* Where the loop branch is now (NULL: deleted). */
static int branch_tip(struct loop *l, char **tip, struct gdn_err *err)
{
	char *ref = xstrfmt("refs/heads/%s", l->branch);
	int ret = gdn_git_rev(&l->ugit, ref, tip, err);

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
static void advance_branch(struct loop *l, long it)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf why = SBUF_INIT;
	bool ff = false;

	if (!strcmp(l->btip, l->champion))
		goto out;
	if (gdn_git_is_ancestor(&l->ugit, l->btip, l->champion, &ff, &err) ||
	    (ff && gdn_git_move_branch(&l->ugit, l->branch, l->btip, l->champion, l->o->workdir,
				       &why, &err))) {
		sbuf_reset(&why);
		sbuf_adds(&why, err.msg);
	} else if (!ff) {
		sbuf_addf(&why, "%s no longer leads to it", l->branch);
	}
	if (!why.len) {
		journal_event(l, "branch_moved",
			      json_pack("{sIssssss}", "iteration", (json_int_t)it, "branch",
					l->branch, "from", l->btip, "to", l->champion));
		if (l->sum->champion_parked)
			say(l, GDN_LOOP_INFO, "%s caught up with the champion %.12s", l->branch,
			    l->champion);
		free(l->btip);
		l->btip = xstrdup(l->champion);
		l->sum->champion_parked = false;
		goto out;
	}
	if (!l->sum->champion_parked)
		say(l, GDN_LOOP_WARN,
		    "%s stays at %.12s (%s); the champion %.12s is kept at %s: bring it in with "
		    "`git merge --ff-only %s`",
		    l->branch, l->btip, why.buf, l->champion, l->champion_ref, l->champion_ref);
	journal_event(l, "champion_parked",
		      json_pack("{sIssss}", "iteration", (json_int_t)it, "ref", l->champion_ref,
				"reason", why.buf));
	l->sum->champion_parked = true;
out:
	sbuf_release(&why);
}

/* A new champion: its ref first (the truth for --resume), then the journal, then the branch. */
static int promote(struct loop *l, long it, const char *sha, struct gdn_err *err)
{
	int ret = gdn_git_set_ref(&l->ugit, l->champion_ref, sha, NULL, err);

	if (ret)
		return ret;
	free(l->champion);
	l->champion = xstrdup(sha);
	journal_event(l, "promote",
		      json_pack("{sIssss}", "iteration", (json_int_t)it, "champion", sha, "branch",
				l->branch));
	advance_branch(l, it);
	return 0;
}

/*
 * After the agent: the loop branch must be where the loop left it. A
 * branch moved meanwhile is kept under refs/gdnctl/discarded/<it> and put
 * back (*moved).
 */
static int check_branch(struct loop *l, struct iter *c, bool *moved, struct gdn_err *err)
{
	char *tip = NULL, *ref = xstrfmt("refs/heads/%s", l->branch);
	struct sbuf why = SBUF_INIT;
	int ret = branch_tip(l, &tip, err);

	*moved = !ret && (!tip || strcmp(tip, l->btip));
	if (ret || !*moved)
		goto out;
	if (tip) {
		keep_ref(l, c->it, "discarded/", tip,
			 "the loop branch, moved during the iteration");
		ret = gdn_git_move_branch(&l->ugit, l->branch, tip, l->btip, l->o->workdir, &why,
					  err);
	} else {
		ret = gdn_git_set_ref(&l->ugit, ref, l->btip, NULL, err);
	}
	if (!ret && why.len)
		say(l, GDN_LOOP_WARN, "%s could not be put back at %.12s: %s", l->branch, l->btip,
		    why.buf);
out:
	free(tip);
	free(ref);
	sbuf_release(&why);
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
static char *settle(struct loop *l, struct iter *c, bool accepted)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *head = NULL;

	if (gdn_git_rev(&l->wgit, "HEAD", &head, &err) || !head)
		goto fail;
	if (strcmp(head, l->champion) && c->commits > 0 && accepted)
		return head; /* promoted once the decision is journaled */
	if (strcmp(head, l->champion) && c->commits > 0)
		keep_ref(l, c->it, "discarded/", head, "the commits of a failed iteration");
	c->commits = 0;
	if (strcmp(head, l->champion) && gdn_git_reset_clean(&l->wgit, l->champion, &err))
		goto fail;
	free(head);
	return NULL;
fail:
	say(l, GDN_LOOP_WARN, "iteration %ld: %s", c->it, err.msg);
	c->commits = 0;
	free(head);
	return NULL;
}

/*
 * Retire the agent's worktree (the end of a run, or what a crashed run
 * left): its uncommitted changes and any commit past the champion (an
 * interrupted iteration `it`) are kept under refs, then it is removed.
 */
static void retire_worktree(struct loop *l, long it)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *head = NULL;
	bool behind = false;

	if (access(l->o->workdir, F_OK))
		goto prune;
	if (set_leftovers_aside(l, it, &err))
		say(l, GDN_LOOP_WARN, "%s", err.msg);
	gdn_err_clear(&err);
	if (!gdn_git_rev(&l->wgit, "HEAD", &head, &err) && head && l->champion &&
	    strcmp(head, l->champion) &&
	    /* a worker's worktree at a former champion holds nothing new */
	    (gdn_git_is_ancestor(&l->ugit, head, l->champion, &behind, &err) || !behind)) {
		char *kind = xstrfmt("loop/%s/iteration-", l->sum->run_id);

		keep_ref(l, it, kind, head, "the commits of an interrupted iteration");
		free(kind);
	}
	gdn_err_clear(&err);
	if (gdn_git_worktree_remove(&l->ugit, l->o->workdir, &err))
		say(l, GDN_LOOP_WARN, "%s", err.msg);
	else
		journal_event(l, "worktree_removed", json_pack("{ss}", "path", l->o->workdir));
	free(head);
	return;
prune:
	gdn_git_runl(&l->ugit, &(int){0}, NULL, &err, "worktree", "prune", NULL);
}

/* A new run's loop branch and champion (its tip), then the agent's worktree there. */
static int iso_begin(struct loop *l, struct gdn_err *err)
{
	int ret = 0;

	if (l->o->branch) {
		l->branch = xstrdup(l->o->branch);
	} else {
		ret = gdn_repo_head_at(l->o->user_workdir, NULL, &l->branch, err);
		if (!ret && !l->branch)
			ret = gdn_err_set(err, GDN_EUSAGE,
					  "'%s' is on a detached HEAD: name the loop branch with "
					  "--branch B, or use --isolation in-place",
					  l->o->user_workdir);
	}
	if (!ret)
		ret = branch_tip(l, &l->champion, err);
	if (!ret && !l->champion)
		ret = gdn_err_set(err, GDN_EUSAGE, "no branch '%s' with a commit to start from",
				  l->branch);
	if (ret)
		return ret;
	l->btip = xstrdup(l->champion);
	l->champion_ref = xstrfmt("refs/gdnctl/champion/%s", l->sum->run_id);
	return gdn_git_set_ref(&l->ugit, l->champion_ref, l->champion, NULL, err);
}

/* The worktree is known clean (nothing ran since it was checked) and at the champion. */
static bool worktree_at_champion(struct loop *l)
{
	struct gdn_err ignored = GDN_ERR_INIT;
	char *head = NULL;
	bool yes;

	if (!l->clean_known || !l->repo)
		return false;
	yes = !gdn_repo_head(l->repo, &head, NULL, &ignored) && head && !strcmp(head, l->champion);
	free(head);
	return yes;
}

/* Make the agent's worktree at the champion (journaled first, so a resume can remove it). */
static int iso_worktree(struct loop *l, struct gdn_err *err)
{
	journal_event(l, "worktree_add",
		      json_pack("{ssss}", "path", l->o->workdir, "commit", l->champion));
	return gdn_git_worktree_add(&l->ugit, l->o->workdir, l->champion, err);
}

/*
 * --resume: the interrupted iteration was promoted, but its decision was
 * never journaled. It is redone, so the champion and the loop branch go
 * back to where it began (its commits are kept with the worktree's), and
 * so does the user's checkout when a kill -9 cut the fast-forward between
 * its tree and its ref (the index has the undone champion's version of
 * every path the promotion changed).
 */
static int undo_undecided_promotion(struct loop *l, const char *from, struct gdn_err *err)
{
	char *undone = l->champion;
	struct strvec argv = STRVEC_INIT;
	struct sbuf why = SBUF_INIT, out = SBUF_INIT;
	int rc = 0, ret;

	l->champion = xstrdup(from);
	ret = gdn_git_set_ref(&l->ugit, l->champion_ref, l->champion, undone, err);
	if (!ret && !strcmp(l->btip, undone)) {
		ret = gdn_git_move_branch(&l->ugit, l->branch, undone, from, l->o->workdir, &why,
					  err);
		if (!ret && !why.len) {
			free(l->btip);
			l->btip = xstrdup(from);
		}
		goto out;
	}
	if (ret || strcmp(l->btip, from))
		goto out;
	ret = gdn_git_runl(&l->ugit, &rc, &out, err, "diff", "--name-only", from, undone, NULL);
	if (ret || rc || !out.len)
		goto out;
	strvec_pushl(&argv, "diff-index", "--cached", "--quiet", undone, "--", NULL);
	sbuf_trim(&out);
	strvec_split(&argv, out.buf, '\n');
	ret = gdn_git_run(&l->ugit, argv.v, &rc, NULL, err);
	if (!ret && !rc)
		ret = gdn_git_runl(&l->ugit, &rc, NULL, err, "read-tree", "-m", "-u", undone, from,
				   NULL);
out:
	free(undone);
	strvec_clear(&argv);
	sbuf_release(&why);
	sbuf_release(&out);
	return ret;
}

/*
 * --resume of a run with --isolation worktree: the champion (its ref, else
 * the journal's), the branch caught up if a promotion was cut short, what
 * the crashed run left in the worktree kept, and a fresh worktree.
 */
static int iso_resume(struct loop *l, struct gdn_loop_state *st, struct gdn_err *err)
{
	int ret = 0;

	if (!st->worktree || !st->loop_branch)
		return gdn_err_set(err, GDN_EUSAGE,
				   "run %s was started with --isolation in-place: resume it with "
				   "--isolation in-place",
				   st->run_id);
	l->branch = xstrdup(st->loop_branch);
	l->champion_ref = xstrfmt("refs/gdnctl/champion/%s", st->run_id);
	ret = gdn_git_rev(&l->ugit, l->champion_ref, &l->champion, err);
	if (!ret && st->champion && (!l->champion || strcmp(st->champion, l->champion))) {
		bool ahead = !l->champion;

		/* a decision journaled, its promotion cut short: finish it */
		ret = ahead ? 0
			    : gdn_git_is_ancestor(&l->ugit, l->champion, st->champion, &ahead, err);
		if (!ret && ahead) {
			free(l->champion);
			l->champion = xstrdup(st->champion);
			ret = gdn_git_set_ref(&l->ugit, l->champion_ref, l->champion, NULL, err);
		}
	}
	if (!ret && !l->champion)
		ret = gdn_err_set(err, GDN_ENOTFOUND, "run %s has no champion to resume from",
				  st->run_id);
	if (!ret)
		ret = branch_tip(l, &l->btip, err);
	if (ret)
		return ret;
	if (!l->btip)
		l->btip = xstrdup(l->champion);
	if (l->nw) {
		/* a one-worker run's agent worktree, when it goes on with workers */
		if (!access(l->o0->workdir, F_OK))
			retire_worktree(l, st->open_iter ? st->open_iter : st->last_done + 1);
		return loop_workers_resume(l, st, err);
	}
	stop_orphan_agent(l, st);
	wait_for_git(l);
	if (st->open_iter && !st->open_decided && st->open_head &&
	    strcmp(l->champion, st->open_head)) {
		ret = undo_undecided_promotion(l, st->open_head, err);
		if (ret)
			return ret;
	}
	if (strcmp(st->worktree, l->o->workdir) && !access(st->worktree, F_OK))
		gdn_git_worktree_remove(&l->ugit, st->worktree, err);
	gdn_err_clear(err);
	retire_worktree(l, st->open_iter ? st->open_iter : st->last_done + 1);
	advance_branch(l, st->last_done);
	return iso_worktree(l, err);
}

static char *iter_path(struct loop *l, long it, const char *what)
{
	return xstrfmt("%s/iteration-%03ld-%s", l->o->log_dir, it, what);
}

static int write_file(const char *path, const char *text, struct gdn_err *err)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), ret = 0;

	if (fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot write '%s'", path);
	if (write(fd, text, len) != (ssize_t)len)
		ret = gdn_err_errno(err, GDN_EIO, "cannot write '%s'", path);
	close(fd);
	return ret;
}

/* Keep a hook's note for the next prompt (the latest wins). */
static void take_note(struct loop *l, struct gdn_loop_hook_out *ho)
{
	if (!ho->note)
		return;
	free(l->note);
	l->note = ho->note;
	ho->note = NULL;
}

static int build_prompt(struct loop *l, struct iter *c, const char *branch, struct sbuf *prompt,
			struct gdn_err *err)
{
	struct sbuf log = SBUF_INIT, tail = SBUF_INIT;
	struct gdn_prompt_vars v = {
	    .iteration = c->it,
	    .total = l->total,
	    .head_sha = c->head_before,
	    .branch = branch,
	    .note = l->note,
	    .log_file = gdn_prompt_log_file(l->o->hillclimb_log, l->o->workdir),
	};
	int ret = 0;

	if (l->o->hillclimb_log && !access(l->o->hillclimb_log, R_OK)) {
		ret = sbuf_read_file(&log, l->o->hillclimb_log, 64 * 1024 * 1024, err);
		if (ret)
			goto out;
		gdn_prompt_log_tail(log.buf, log.len, &tail);
		v.log_tail = tail.buf;
	}
	gdn_prompt_render(l->o->prompt_template, &v, l->o->directives, prompt);
	FREE_AND_NULL(l->note); /* said once */
out:
	sbuf_release(&log);
	sbuf_release(&tail);
	return ret;
}

/*
 * The tokens and cost the agent reported for iteration `it` (all its
 * attempts): journaled as one "usage" event, added to the totals and to
 * the last hour's window.
 */
static void record_usage(struct loop *l, long it, const struct gdn_agent_usage *u)
{
	json_t *ev = gdn_journal_iteration(it);
	int64_t tokens = gdn_loop_usage_tokens(u);

	json_object_set_new(ev, "input_tokens",
			    u->input_tokens >= 0 ? json_integer(u->input_tokens) : json_null());
	json_object_set_new(ev, "output_tokens",
			    u->output_tokens >= 0 ? json_integer(u->output_tokens) : json_null());
	json_object_set_new(ev, "tokens", json_integer(tokens));
	json_object_set_new(ev, "cost_usd",
			    u->cost_usd >= 0 ? json_real(u->cost_usd) : json_null());
	journal_event(l, "usage", ev);
	gdn_agent_usage_add(&l->sum->usage, u);
	l->sum->usage_iterations++;
	ALLOC_GROW(l->hour, l->hour_nr + 1, l->hour_alloc);
	l->hour[l->hour_nr].when = time(NULL);
	l->hour[l->hour_nr++].tokens = tokens;
}

/* Tokens the agent used in the last 60 minutes (of this session). */
static int64_t tokens_last_hour(const struct loop *l)
{
	time_t now = time(NULL);
	int64_t n = 0;

	for (size_t i = 0; i < l->hour_nr; i++)
		if (now - l->hour[i].when < 3600)
			n = gdn_add_sat_i64(n, l->hour[i].tokens);
	return n;
}

static enum step run_agent(struct loop *l, struct iter *c, const char *prompt, struct gdn_err *err)
{
	char *pfile = iter_path(l, c->it, "prompt.txt");
	char *mfile = iter_path(l, c->it, "last-message.txt");
	char *tfile = iter_path(l, c->it, "transcript.log");
	struct spawn_note note = {l, c->it};
	struct gdn_agent_request req = {
	    .workdir = l->o->workdir,
	    .prompt = prompt,
	    .prompt_file = pfile,
	    .last_message_file = mfile,
	    .transcript_file = tfile,
	    .on_line = l->o->on_agent_line,
	    .payload = l->o->payload,
	    .on_spawn = agent_spawned,
	    .spawn_payload = &note,
	    .on_tick = l->o->heartbeat_ms > 0 ? agent_tick : NULL,
	    .tick_ms = l->o->heartbeat_ms > INT_MAX ? INT_MAX : (int)l->o->heartbeat_ms};
	long attempts = l->o->agent_retries + 1;
	enum step step = STEP_OK;
	char msg[128], *mark = NULL;
	struct gdn_agent_usage usage = GDN_AGENT_USAGE_NONE;

	if (write_file(pfile, prompt, err)) {
		step = STEP_ERROR;
		goto out;
	}
	for (long a = 1; a <= attempts; a++) {
		struct gdn_agent_result res = {0};
		json_t *ev = gdn_journal_iteration(c->it);
		int rc;

		json_object_set_new(ev, "attempt", json_integer(a));
		free(mark);
		mark = xstrfmt("GDNCTL_AGENT_RUN=%s.%ld.%ld.%ld", l->sum->run_id, c->it, a,
			       (long)getpid());
		req.mark = mark;
		json_object_set_new(ev, "mark", json_string(mark));
		journal_event(l, "agent_start", ev);
		if (l->agent->run(l->agent->agent, &req, &res, err)) {
			l->agent->release(&res);
			step = STEP_ERROR;
			goto out;
		}
		rc = res.exit_code;
		if (rc == 0 && !res.ok)
			rc = 1;
		l->sum->agent_ms = gdn_add_sat_i64(l->sum->agent_ms, res.duration_ms);
		c->agent_ms = res.duration_ms;
		gdn_agent_usage_add(&usage, &res.usage);
		ev = gdn_journal_iteration(c->it);
		json_object_set_new(ev, "attempt", json_integer(a));
		json_object_set_new(ev, "rc", json_integer(rc));
		json_object_set_new(ev, "status", json_integer(res.status));
		json_object_set_new(ev, "ok", json_boolean(res.ok && !rc));
		json_object_set_new(ev, "duration_ms", json_integer(res.duration_ms));
		if (res.reason[0])
			json_object_set_new(ev, "reason", json_string(res.reason));
		journal_event(l, "agent_end", ev);
		if (res.leftovers.nr) {
			say(l, GDN_LOOP_NOTE, "agent: stopped %zu process(es) it left running",
			    res.leftovers.nr);
			journal_event(l, "agent_leftovers",
				      gdn_journal_leftovers(c->it, a, &res.leftovers));
		}
		if (res.reason[0] && rc)
			say(l, GDN_LOOP_NOTE, "agent: %s", res.reason);
		if (res.last_message && access(mfile, F_OK))
			write_file(mfile, res.last_message, err);
		l->agent->release(&res);
		if (res.status != GDN_PROC_EXITED)
			clear_stale_locks(l); /* its group was killed, maybe in the middle of git */
		if (interrupted() || res.status == GDN_PROC_STOPPED) {
			step = STEP_INTR;
			goto out;
		}
		if (!rc)
			goto out;
		if (a < attempts) {
			say(l, GDN_LOOP_NOTE,
			    "codex iteration command failed (attempt %ld/%ld, rc=%d); retrying.", a,
			    attempts, rc);
			gdn_sleep_interruptible(l->o->retry_sleep_ms);
			if (interrupted()) {
				step = STEP_INTR;
				goto out;
			}
			continue;
		}
		snprintf(msg, sizeof(msg), "codex iteration failed with exit code %d", rc);
		step = fail(c, GDN_FAIL_AGENT, rc, GDN_POLICY_COUNT_FAILURE, msg);
		c->agent_note = true;
	}
out:
	if (gdn_agent_usage_known(&usage))
		record_usage(l, c->it, &usage);
	free(mark);
	free(pfile);
	free(mfile);
	free(tfile);
	return step;
}

static enum step post_checks(struct loop *l, struct iter *c, struct gdn_err *err)
{
	const struct strvec *pc = l->o->post_checks;
	long attempts = l->o->post_check_retries + 1;
	struct sbuf echo = SBUF_INIT;
	enum step step = STEP_OK;

	for (size_t i = 0; pc && i < pc->nr && step == STEP_OK; i++) {
		/* the user's own command string */
		const char *argv[] = {"bash", "-c", pc->v[i], NULL};
		int rc = 0;

		l->clean_known = false;

		for (long a = 1; a <= attempts; a++) {
			struct gdn_proc p = GDN_PROC_INIT;
			json_t *ev;
			int ret;

			sbuf_reset(&echo);
			gdn_argv_format(&echo, argv);
			say(l, GDN_LOOP_INFO, "$ %s", echo.buf);
			p.argv = argv;
			p.dir = l->o->workdir;
			p.inherit_output = true;
			ret = gdn_proc_run(&p, err);
			rc = ret ? 127 : gdn_proc_exit_code(&p);
			gdn_proc_release(&p);
			if (ret) {
				step = STEP_ERROR;
				goto out;
			}
			ev = gdn_journal_iteration(c->it);
			json_object_set_new(ev, "command", json_string(pc->v[i]));
			json_object_set_new(ev, "attempt", json_integer(a));
			json_object_set_new(ev, "rc", json_integer(rc));
			journal_event(l, "check", ev);
			if (interrupted()) {
				step = STEP_INTR;
				goto out;
			}
			if (!rc)
				break;
			if (a < attempts) {
				say(l, GDN_LOOP_NOTE,
				    "post-check failed (attempt %ld/%ld) for command: %s", a,
				    attempts, pc->v[i]);
				if (l->o->retry_sleep_ms > 0)
					say(l, GDN_LOOP_NOTE, "retrying post-check in %.1fs",
					    l->o->retry_sleep_ms / 1000.0);
				gdn_sleep_interruptible(l->o->retry_sleep_ms);
			}
		}
		if (rc)
			step = fail(
			    c, GDN_FAIL_POST_CHECK, rc, l->o->post_check_policy,
			    "post-check failed. Use --post-check-policy count-failure/continue "
			    "to avoid exiting.");
	}
out:
	sbuf_release(&echo);
	return step;
}

/* `agent done in 5.0 s: 1 commit abc123 "subject"` (the newest commit's subject). */
static void agent_done(struct loop *l, const struct iter *c)
{
	struct gdn_git g = l->wgit;
	struct sbuf subj = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int rc = 1;

	if (l->o->original_exit_codes)
		return;
	g.quiet = true;
	g.retries = 0;
	if (c->commits > 0 &&
	    !gdn_git_runl(&g, &rc, &subj, &err, "log", "-1", "--format=%s", c->head_after, NULL) &&
	    !rc)
		sbuf_rtrim(&subj);
	else
		sbuf_reset(&subj);
	if (c->commits > 0)
		say(l, GDN_LOOP_INFO, "agent done in %.1f s: %ld commit%s %.7s \"%s\"",
		    (double)c->agent_ms / 1000.0, c->commits, c->commits == 1 ? "" : "s",
		    c->head_after, subj.buf);
	else
		say(l, GDN_LOOP_INFO, "agent done in %.1f s: no commit",
		    (double)c->agent_ms / 1000.0);
	gdn_err_clear(&err);
	sbuf_release(&subj);
}

/* HEAD after the agent: commits on top of head_before, or a reset reported. */
static int detect_commits(struct loop *l, struct iter *c, struct gdn_err *err)
{
	bool desc = false, dirty = false;
	json_t *ev;
	int ret;

	FREE_AND_NULL(c->head_after);
	FREE_AND_NULL(c->branch_after);
	c->commits = 0;
	strvec_clear(&c->ids);
	ret = gdn_repo_head(l->repo, &c->head_after, &c->branch_after, err);
	if (ret)
		return ret;
	if (!c->head_after)
		return gdn_err_set(err, GDN_EFAILED, "HEAD has no commit after the agent ran");
	desc = !strcmp(c->head_after, c->head_before);
	if (!desc) {
		ret = gdn_repo_descendant(l->repo, c->head_after, c->head_before, &desc, err);
		if (ret)
			return ret;
		if (desc) {
			ret = gdn_repo_count_commits(l->repo, c->head_before, c->head_after,
						     &c->commits, &c->ids, MAX_IDS_JOURNALED, err);
			if (ret)
				return ret;
		} else {
			say(l, GDN_LOOP_WARN,
			    "HEAD moved from %.12s to %.12s, which does not descend from it (a "
			    "reset or checkout by the agent?); not counted as progress",
			    c->head_before, c->head_after);
		}
	}
	c->descendant = desc;
	ev = gdn_journal_iteration(c->it);
	json_object_set_new(ev, "before", json_string(c->head_before));
	json_object_set_new(ev, "after", json_string(c->head_after));
	json_object_set_new(ev, "descendant", json_boolean(desc));
	json_object_set_new(ev, "commits", json_integer(c->commits));
	json_object_set_new(ev, "ids", gdn_journal_ids(&c->ids));
	journal_event(l, "head", ev);
	agent_done(l, c);
	ret = gdn_repo_dirty(l->repo, &dirty, err);
	l->clean_known = !ret && !dirty;
	c->dirty_after = !ret && dirty;
	if (!ret && dirty) {
		say(l, GDN_LOOP_WARN, "the agent left uncommitted changes in the working tree");
		journal_event(l, "dirty_after", gdn_journal_iteration(c->it));
	}
	return 0;
}

/* The commits after a rewrite or a failed attempt are set aside: a `head` event says so. */
static void journal_set_aside(struct loop *l, struct iter *c, const char *why)
{
	json_t *ev = gdn_journal_iteration(c->it);

	json_object_set_new(ev, "before", json_string(c->head_before));
	json_object_set_new(ev, "after", json_string(c->head_before));
	json_object_set_new(ev, "set_aside", json_string(c->head_after));
	json_object_set_new(ev, "reason", json_string(why));
	json_object_set_new(ev, "commits", json_integer(0));
	json_object_set_new(ev, "ids", json_array());
	journal_event(l, "head", ev);
	c->commits = 0;
	strvec_clear(&c->ids);
}

/*
 * What the agent left, whatever its exit: the loop branch where the loop
 * left it (worktree), the commits (a `head` event), uncommitted changes
 * set aside, a rewritten history or switched branch set aside and undone
 * (a "history" failure), and the commits of a failed attempt set aside
 * or, with --agent-failure-commits validate, passed on to validation.
 */
static enum step after_agent(struct loop *l, struct iter *c, const char *branch, enum step step,
			     struct gdn_err *err)
{
	bool rewritten = false, undo = false;
	const char *why = NULL;

	if (isolated(l) && !l->nw && check_branch(l, c, &rewritten, err))
		return STEP_ERROR;
	if (detect_commits(l, c, err))
		return STEP_ERROR;
	if (c->dirty_after && (isolated(l) || !l->o->allow_dirty) &&
	    set_leftovers_aside(l, c->it, err))
		return STEP_ERROR;
	if (!c->descendant ||
	    (!isolated(l) && branch && (!c->branch_after || strcmp(c->branch_after, branch)))) {
		why = "history rewritten or branch switched by the agent";
		keep_ref(l, c->it, "discarded/", c->head_after, why);
		undo = rewritten = true;
	} else if (step == STEP_FAIL && c->commits) {
		if (l->o->agent_failure_commits == GDN_AFC_VALIDATE) {
			say(l, GDN_LOOP_NOTE,
			    "%s; its %ld commit(s) are validated (--agent-failure-commits "
			    "validate)",
			    c->msg.buf, c->commits);
			c->agent_note = false;
			step = STEP_OK;
		} else {
			why = "the commits of a failed agent attempt";
			keep_ref(l, c->it, "discarded/", c->head_after, why);
			undo = true;
		}
	}
	if (undo) {
		journal_set_aside(l, c, why);
		if (isolated(l) ? gdn_git_reset_clean(&l->wgit, c->head_before, err)
				: restore_in_place(l, c, branch, err))
			return STEP_ERROR;
	}
	if (rewritten && step != STEP_FAIL)
		step = fail(c, GDN_FAIL_HISTORY, 1, GDN_POLICY_COUNT_FAILURE,
			    "The agent rewrote history or moved the branch; its work was set aside "
			    "under refs/gdnctl/.");
	return step;
}

/*
 * Stamp the running log's placeholder with the new HEAD and commit the stamp
 * (the original left it uncommitted: docs/compatibility.md, "Bugs of the original that gdnctl
 * fixes").
 */
static void stamp_log(struct loop *l, struct iter *c)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT;
	char *msg = NULL, *head = NULL;
	json_t *ev;
	int rc = 0, r;

	if (!l->o->hillclimb_log || !c->commits)
		goto out;
	r = gdn_prompt_stamp_log(l->o->hillclimb_log, c->head_after, l->tag, c->it, &err);
	if (r)
		l->clean_known = false; /* the log rewritten (or maybe half-written) */
	if (r < 0) {
		say(l, GDN_LOOP_WARN, "%s", err.msg);
		goto out;
	}
	if (r == 0)
		goto out;
	say(l, GDN_LOOP_INFO, "stamped last hill-climb log entry with commit %.12s", c->head_after);
	msg = xstrfmt("gdnctl: stamp hill-climb log entry with commit %.12s", c->head_after);
	if (gdn_git_runl(&l->git, &rc, &out, &err, "commit", "-q", "-m", msg, "--",
			 l->o->hillclimb_log, NULL) ||
	    rc) {
		sbuf_trim(&out);
		say(l, GDN_LOOP_WARN, "could not commit the stamped hill-climb log: %s",
		    err.msg[0] ? err.msg : out.buf);
		goto out;
	}
	if (gdn_repo_head(l->repo, &head, NULL, &err) || !head)
		goto out;
	ev = gdn_journal_iteration(c->it);
	json_object_set_new(ev, "commit", json_string(head));
	journal_event(l, "stamp", ev);
out:
	free(head);
	free(msg);
	sbuf_release(&out);
}

/* The validate and decide hooks on the iteration's commits. */
static enum step gate_hooks(struct loop *l, struct iter *c, struct gdn_err *err)
{
	struct gdn_loop_iter gi = {
	    c->it, c->head_before, c->head_after, c->commits, hook_report, hook_journal, l};
	struct gdn_loop_hook_out ho = {0};
	bool reverted = false;
	int rc = 0;

	if (!l->hooks)
		return STEP_OK;
	l->clean_known = false;
	if (l->hooks->validate)
		rc = l->hooks->validate(l->hooks->payload, &gi, &ho, err);
	reverted = ho.reverted;
	take_note(l, &ho);
	if (!rc && l->hooks->decide) {
		memset(&ho, 0, sizeof(ho));
		rc = l->hooks->decide(l->hooks->payload, &gi, &ho, err);
		reverted = reverted || ho.reverted;
		take_note(l, &ho);
	}
	if (reverted)
		c->commits = 0; /* none of them is kept */
	if (rc < 0)
		return STEP_ERROR;
	if (rc > 0)
		return fail(c, GDN_FAIL_HOOK, rc, ho.has_policy ? ho.policy : l->hooks->policy,
			    err->msg[0] ? err->msg : "iteration hook failed.");
	return STEP_OK;
}

static enum step iteration_body(struct loop *l, struct iter *c, struct gdn_err *err)
{
	char *branch = NULL, *smsg = NULL, *synced_from = NULL;
	struct sbuf prompt = SBUF_INIT;
	bool dirty = false, clean_known;
	enum step step = STEP_OK;
	json_t *ev;

	if (l->o->original_exit_codes || !l->o->agent_name)
		say(l, GDN_LOOP_HEADING, "=== codex iteration %ld/%ld ===", c->it, l->total);
	else if (l->tag)
		say(l, GDN_LOOP_HEADING, "=== iteration %ld/%ld (%s, worker %ld) ===", c->it,
		    l->total, l->o->agent_name, l->tag);
	else
		say(l, GDN_LOOP_HEADING, "=== iteration %ld/%ld (%s) ===", c->it, l->total,
		    l->o->agent_name);
	/*
	 * The agent starts from a clean worktree at the champion: made again
	 * when it was removed under the run (the agent deleted the log dir),
	 * reset unless the last iteration left it so (nothing ran since).
	 */
	if (isolated(l) &&
	    ((access(l->o->workdir, F_OK) && iso_worktree(l, err)) ||
	     (!worktree_at_champion(l) && gdn_git_reset_clean(&l->wgit, l->champion, err)))) {
		step = STEP_ERROR;
		goto out;
	}
	if (gdn_repo_head(l->repo, &c->head_before, &branch, err)) {
		step = STEP_ERROR;
		goto out;
	}
	if (isolated(l)) {
		free(branch);
		branch = xstrdup(l->branch);
	}
	ev = gdn_journal_iteration(c->it);
	json_object_set_new(ev, "head", c->head_before ? json_string(c->head_before) : json_null());
	json_object_set_new(ev, "branch", branch ? json_string(branch) : json_null());
	journal_event(l, "iteration_start", ev);
	clean_known = l->clean_known;
	l->clean_known = false;
	if (!l->o->allow_dirty && !clean_known && !isolated(l)) {
		if (gdn_repo_dirty(l->repo, &dirty, err)) {
			step = STEP_ERROR;
			goto out;
		}
		if (dirty && l->o->dirty_policy == GDN_DIRTY_STASH) {
			smsg = xstrfmt("gdnctl-loop: %s iteration %ld", l->sum->run_id, c->it);
			if (gdn_stash_save(&l->stash, c->it, smsg, "user", err)) {
				step = STEP_ERROR;
				goto out;
			}
		} else if (dirty) {
			gdn_err_set(
			    err, GDN_EFAILED,
			    "Working tree is dirty before starting the iteration. "
			    "Commit/stash or rerun with --allow-dirty or --dirty-policy stash.");
			step = STEP_ERROR;
			goto out;
		}
	}
	if (interrupted()) {
		step = STEP_INTR;
		goto out;
	}
	if (l->o->sync_policy == GDN_SYNC_EACH ||
	    (l->o->sync_policy == GDN_SYNC_ONCE && c->it == l->first)) {
		FREE_AND_NULL(synced_from);
		if (gdn_repo_head(l->repo, &synced_from, NULL, err) ||
		    gdn_git_sync(&l->git, l->ugit.workdir, l->o->sync_remote, l->o->sync_branch,
				 l->o->sync_conflict, err)) {
			step = STEP_ERROR;
			goto out;
		}
		if (interrupted()) {
			step = STEP_INTR;
			goto out;
		}
	}
	FREE_AND_NULL(c->head_before);
	if (gdn_repo_head(l->repo, &c->head_before, NULL, err)) {
		step = STEP_ERROR;
		goto out;
	}
	if (!c->head_before) {
		gdn_err_set(err, GDN_EFAILED, "HEAD has no commit in '%s'", l->o->workdir);
		step = STEP_ERROR;
		goto out;
	}
	if (synced_from && strcmp(synced_from, c->head_before) && isolated(l) &&
	    promote(l, c->it, c->head_before, err)) {
		step = STEP_ERROR;
		goto out;
	}
	if (synced_from && strcmp(synced_from, c->head_before) && l->hooks && l->hooks->synced) {
		/* the branch moved under the champion: the hook re-measures it */
		struct gdn_loop_iter gi = {
		    c->it, c->head_before, c->head_before, 0, hook_report, hook_journal, l};

		if (l->hooks->synced(l->hooks->payload, &gi, err)) {
			step = interrupted() ? STEP_INTR : STEP_ERROR;
			goto out;
		}
	}
	if (build_prompt(l, c, branch, &prompt, err)) {
		step = STEP_ERROR;
		goto out;
	}
	step = run_agent(l, c, prompt.buf, err);
	if (step == STEP_OK || step == STEP_FAIL)
		step = after_agent(l, c, branch, step, err);
	if (step != STEP_OK)
		goto out;
	if (interrupted()) {
		step = STEP_INTR;
		goto out;
	}
	step = post_checks(l, c, err);
	if (step != STEP_OK)
		goto out;
	if (!l->o->allow_no_commit && !c->commits) {
		step =
		    fail(c, GDN_FAIL_NO_COMMIT, GDN_LOOP_ORIGINAL_NO_COMMIT, l->o->no_commit_policy,
			 "Iteration did not produce a new commit. Use --allow-no-commit or set "
			 "--no-commit-policy count-failure/continue.");
		goto out;
	}
	if (l->nw) {
		step = loop_catch_up(l, c, err);
		if (step != STEP_OK || c->conflict)
			goto out;
	}
	step = gate_hooks(l, c, err);
out:
	free(branch);
	free(smsg);
	free(synced_from);
	sbuf_release(&prompt);
	return step;
}

static void journal_decision(struct loop *l, struct iter *c, bool failed, bool counted, int exit,
			     const char *champion)
{
	json_t *ev = gdn_journal_iteration(c->it);

	json_object_set_new(ev, "outcome", json_string(failed ? "failed" : "ok"));
	json_object_set_new(ev, "failure",
			    failed ? json_string(gdn_loop_failure_name(c->kind)) : json_null());
	json_object_set_new(ev, "counted", json_boolean(counted));
	json_object_set_new(ev, "commits", json_integer(c->commits));
	json_object_set_new(ev, "failures", json_integer(l->failures));
	json_object_set_new(ev, "consecutive", json_integer(l->consecutive));
	json_object_set_new(ev, "exit", exit >= 0 ? json_integer(exit) : json_null());
	if (champion)
		json_object_set_new(ev, "champion", json_string(champion));
	journal_event(l, "decision", ev);
}

/*
 * The end of iteration c->it after its body returned `step` (err: its
 * error): the running log stamped, the policies, the decision journaled,
 * the promotion. Returns -1 to go on, or the loop's exit code.
 */
static int conclude(struct loop *l, struct iter *c, enum step step, struct gdn_err *err)
{
	struct gdn_err rerr = GDN_ERR_INIT;
	long it = c->it;
	char *candidate = NULL;
	bool failed = false, counted = false;
	int exit = -1;

	/*
	 * A failure or an error that comes with SIGINT/SIGTERM (a hook's phase
	 * killed by the Ctrl-C, an interrupted profile) is the interruption:
	 * no policy applies, nothing is counted, no decision (--resume redoes
	 * the iteration, setting aside any commit a hook did not revert).
	 */
	if ((step == STEP_FAIL || step == STEP_ERROR) && interrupted())
		step = STEP_INTR;
	/*
	 * Commits left on the branch get their running-log entry stamped,
	 * whatever the outcome (a failure under count-failure, continue or
	 * fail keeps them); c->commits is 0 when a hook reverted them.
	 */
	if (step != STEP_INTR)
		stamp_log(l, c);
	/*
	 * With isolation, what lands: an accepted iteration, or one whose
	 * gate or performance policy failed it without reverting (the policy
	 * chose to keep the validated commits, as in place).
	 */
	if (step != STEP_INTR && isolated(l))
		candidate = settle(
		    l, c, step == STEP_OK || (step == STEP_FAIL && c->kind == GDN_FAIL_HOOK));
	if (step == STEP_ERROR) {
		sbuf_reset(&c->msg);
		sbuf_addf(&c->msg, "iteration %ld raised: %s", it, err->msg);
		c->kind = GDN_FAIL_ITERATION_ERROR;
		c->rc = GDN_LOOP_ORIGINAL_ITERATION_ERROR;
		c->policy = l->o->iteration_error_policy;
		journal_event(
		    l, "error",
		    json_pack("{sIss}", "iteration", (json_int_t)it, "message", err->msg));
	}
	if (step == STEP_FAIL || step == STEP_ERROR) {
		bool stops;

		failed = true;
		stops = gdn_loop_policy_apply(c->policy, &l->failures, l->o->max_failures,
					      &counted) == GDN_VERDICT_EXIT;
		if (stops)
			exit = gdn_loop_exit_code(c->kind, c->rc, l->o->original_exit_codes);
		if (c->agent_note || c->policy == GDN_POLICY_FAIL)
			say(l, GDN_LOOP_NOTE, "%s", c->msg.buf);
		else if (stops && !l->o->original_exit_codes)
			say(l, GDN_LOOP_NOTE,
			    "%s%s stopping: %ld counted failure%s exceeds --max-failures %ld (-1: "
			    "unlimited)",
			    c->msg.buf, step == STEP_ERROR ? "." : "", l->failures,
			    l->failures == 1 ? "" : "s", l->o->max_failures);
		else
			say(l, GDN_LOOP_NOTE, "%s%s Continuing due to policy=%s.", c->msg.buf,
			    step == STEP_ERROR ? "." : "", gdn_loop_policy_name(c->policy));
		l->sum->fail_kinds[c->kind]++;
		l->consecutive++;
	} else if (step == STEP_OK) {
		l->consecutive = 0;
	}
	if (step != STEP_INTR) { /* an interrupted iteration has no decision: --resume redoes it */
		/*
		 * The commits left on the branch, also after a failure that kept
		 * them (c->commits is 0 when a hook reverted them): the decision
		 * journals the same number, which --resume adds up.
		 */
		l->sum->commits = (long)gdn_add_sat_i64(l->sum->commits, c->commits);
		l->sum->iterations_run++;
		journal_decision(l, c, failed, counted, exit, candidate);
	}
	if (candidate && promote(l, it, candidate, &rerr)) {
		say(l, GDN_LOOP_WARN, "iteration %ld: %s", it, rerr.msg);
		gdn_err_clear(&rerr);
	}
	if (l->stash.sha)
		l->clean_known = false;
	if (gdn_stash_restore(&l->stash, &rerr)) {
		/*
		 * A failing restore never turns an exit into "continue" (the original's
		 * did: docs/compatibility.md, "Bugs of the original that gdnctl fixes").
		 */
		say(l, GDN_LOOP_NOTE, "iteration %ld raised: %s", it, rerr.msg);
		journal_event(
		    l, "error",
		    json_pack("{sIss}", "iteration", (json_int_t)it, "message", rerr.msg));
		if (exit < 0 && step != STEP_INTR) {
			if (gdn_loop_policy_apply(l->o->iteration_error_policy, &l->failures,
						  l->o->max_failures, &counted) == GDN_VERDICT_EXIT)
				exit = gdn_loop_exit_code(GDN_FAIL_ITERATION_ERROR,
							  GDN_LOOP_ORIGINAL_ITERATION_ERROR,
							  l->o->original_exit_codes);
			l->sum->fail_kinds[GDN_FAIL_ITERATION_ERROR]++;
			journal_event(l, "failure",
				      json_pack("{sIsssIsI}", "iteration", (json_int_t)it,
						"failure",
						gdn_loop_failure_name(GDN_FAIL_ITERATION_ERROR),
						"failures", (json_int_t)l->failures, "consecutive",
						(json_int_t)l->consecutive));
		}
	}
	if (step == STEP_INTR || interrupted()) {
		int sig = interrupted();

		journal_event(l, "interrupted",
			      json_pack("{sIsi}", "iteration", (json_int_t)it, "signal", sig));
		exit = 128 + (sig ? sig : SIGINT);
		free(l->sum->stop_reason);
		l->sum->stop_reason = xstrdup("interrupted");
		goto out;
	}
	journal_event(l, "iteration_end", gdn_journal_iteration(it));
	if (exit < 0 && !failed && it < l->total && l->o->sleep_ms > 0 && !l->nw) {
		l->clean_known = false;
		gdn_sleep_interruptible(l->o->sleep_ms);
	}
	if (exit >= 0) {
		free(l->sum->stop_reason);
		l->sum->stop_reason = xstrdup("failure");
	}
out:
	free(candidate);
	return exit;
}

static void iter_release(struct iter *c)
{
	free(c->head_before);
	free(c->head_after);
	free(c->branch_after);
	sbuf_release(&c->msg);
	strvec_clear(&c->ids);
}

/* Run iteration `it`. Returns -1 to go on, or the loop's exit code. */
static int iteration(struct loop *l, long it)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct iter c = {.it = it, .msg = SBUF_INIT, .ids = STRVEC_INIT};
	int exit = conclude(l, &c, iteration_body(l, &c, &err), &err);

	iter_release(&c);
	return exit;
}

/* A stop condition met before iteration `it`, or NULL. */
static const char *stop_condition(struct loop *l)
{
	if (l->o->until_time && time(NULL) >= l->o->until_time)
		return "until-time";
	if (l->o->max_agent_ms && l->sum->agent_ms >= l->o->max_agent_ms)
		return "agent-budget";
	if (l->o->stop_after_failures && l->consecutive >= l->o->stop_after_failures)
		return "consecutive-failures";
	if (l->o->max_tokens && gdn_loop_usage_tokens(&l->sum->usage) >= l->o->max_tokens)
		return "token-budget";
	if (l->o->max_cost_usd > 0 && l->sum->usage.cost_usd >= l->o->max_cost_usd)
		return "cost-budget";
	if (l->o->max_tokens_per_hour && tokens_last_hour(l) >= l->o->max_tokens_per_hour)
		return "tokens-per-hour";
	return NULL;
}

/* ---- resume ---- */

static int load_state(struct loop *l, struct gdn_loop_state *st, struct gdn_err *err)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	ret = sbuf_read_file(&sb, l->j.path, 256 * 1024 * 1024, err);
	if (ret == GDN_ENOTFOUND || (!ret && !sb.len)) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "nothing to resume: no journal at '%s'",
				  l->j.path);
		goto out;
	}
	if (ret)
		goto out;
	ret = gdn_journal_parse(sb.buf, sb.len, st, err);
	if (!ret && !st->run_id)
		ret =
		    gdn_err_set(err, GDN_ENOTFOUND, "nothing to resume: no run in '%s'", l->j.path);
out:
	sbuf_release(&sb);
	return ret;
}

/* Put the commits of an interrupted iteration aside (a ref) and the branch back. */
static int set_aside(struct loop *l, struct gdn_loop_state *st, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	char *head = NULL, *ref = NULL;
	int rc = 0, ret;

	ret = gdn_repo_head(l->repo, &head, NULL, err);
	if (ret || !head || !st->open_head || !strcmp(head, st->open_head))
		goto out;
	ref = xstrfmt("refs/gdnctl/loop/%s/iteration-%ld", st->run_id, st->open_iter);
	ret = gdn_git_runl(&l->git, &rc, &out, err, "update-ref", ref, head, NULL);
	/* a stale stat cache (touch, rsync) makes reset refuse with "not uptodate" */
	if (!ret && !rc)
		ret =
		    gdn_git_runl(&l->wgit, &rc, &out, err, "update-index", "-q", "--refresh", NULL);
	if (!ret)
		ret = gdn_git_runl(&l->git, &rc, &out, err, "reset", "-q", "--keep", st->open_head,
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
	say(l, GDN_LOOP_WARN,
	    "iteration %ld was interrupted; its commits are kept at %s and the branch is back at "
	    "%.12s",
	    st->open_iter, ref, st->open_head);
	journal_event(l, "set_aside",
		      json_pack("{sIssss}", "iteration", (json_int_t)st->open_iter, "ref", ref,
				"head", head));
out:
	free(head);
	free(ref);
	sbuf_release(&out);
	return ret;
}

/* The agent's process group exists: journal it, so a resume can stop it if we die. */
static void agent_spawned(pid_t pgid, void *payload)
{
	struct spawn_note *n = payload;
	json_t *ev = gdn_journal_iteration(n->it);

	json_object_set_new(ev, "pgid", json_integer(pgid));
	json_object_set_new(ev, "started", json_integer(gdn_proc_started(pgid)));
	journal_event(n->l, "agent_pid", ev);
}

/*
 * The agent of an iteration whose gdnctl was killed (kill -9) keeps
 * running in its own process group and would go on editing the tree the
 * resumed run works in. Stop it: SIGINT, SIGTERM, SIGKILL to its group,
 * but only when its leader is still the process that was journaled (same
 * pid and start time), never a stranger that reused the number.
 */
/*
 * What a crashed run's agent left running outside its group (setsid
 * children, re-parented to init): found by the attempt's journaled mark.
 */
static void stop_marked(struct loop *l, const struct gdn_loop_state *st)
{
	struct gdn_proc_leftovers killed = GDN_PROC_LEFTOVERS_INIT;

	if (!st->agent_mark)
		return;
	gdn_proc_stop_leftovers(0, st->agent_mark, 2000, &killed);
	if (killed.nr) {
		say(l, GDN_LOOP_WARN,
		    "stopped %zu process(es) the agent of interrupted iteration %ld left running",
		    killed.nr, st->open_iter);
		journal_event(l, "agent_leftovers",
			      gdn_journal_leftovers(st->open_iter, 0, &killed));
	}
	gdn_proc_leftovers_release(&killed);
}

static void stop_orphan_agent(struct loop *l, const struct gdn_loop_state *st)
{
	pid_t pg = (pid_t)st->agent_pgid;

	if (!st->open_iter)
		return;
	if (pg > 1 && st->agent_started >= 0 && gdn_proc_started(pg) == st->agent_started) {
		say(l, GDN_LOOP_WARN,
		    "the agent of interrupted iteration %ld is still running (process group %ld); "
		    "stopping it",
		    st->open_iter, (long)pg);
		gdn_proc_stop_group(pg, st->agent_started, 2000);
		journal_event(l, "orphan_agent_stopped",
			      json_pack("{sIsI}", "iteration", (json_int_t)st->open_iter, "pgid",
					(json_int_t)pg));
	}
	stop_marked(l, st);
}

/*
 * git commands started by the crashed gdnctl run in their own process
 * groups and survive it: wait (at most 10 s) until none runs in the tree.
 */
static void wait_for_git(struct loop *l)
{
	/* git, or a child of a killed gdnctl between fork and exec; also in a stash preflight */
	static const char *const names[] = {"git", "gdnctl", NULL};
	int64_t deadline = gdn_now_ms() + 10000;

	while (gdn_proc_running_in(names, l->o->workdir, GDN_STASH_PREFLIGHT_PREFIX) &&
	       gdn_now_ms() < deadline)
		gdn_sleep_interruptible(20);
}

/*
 * A git command killed with its agent's process group (or with a crashed
 * gdnctl) leaves index.lock or HEAD.lock behind, and every later git
 * command fails. When no git process runs in the tree, such a lock is
 * stale: remove it and say so.
 */
static void clear_stale_locks(struct loop *l)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec locks = STRVEC_INIT;
	const char *gitdir = gdn_repo_gitdir(l->repo);
	char *branch = NULL;

	strvec_pushl(&locks, "index.lock", "HEAD.lock", "refs/stash.lock", NULL);
	if (!gdn_repo_head(l->repo, NULL, &branch, &err) && branch)
		strvec_pushf(&locks, "refs/heads/%s.lock", branch);
	for (size_t i = 0; i < locks.nr; i++) {
		char *path = xstrfmt("%s%s", gitdir, locks.v[i]);

		if (!access(path, F_OK)) {
			wait_for_git(l);
			if (!access(path, F_OK) && !unlink(path)) {
				say(l, GDN_LOOP_WARN,
				    "removed stale '%s' left by a killed git process", path);
				journal_event(l, "stale_lock", json_pack("{ss}", "path", path));
			}
		}
		free(path);
	}
	strvec_clear(&locks);
	free(branch);
}

static int recover(struct loop *l, struct gdn_loop_state *st, struct gdn_err *err)
{
	bool dirty = false;
	long index = -1;
	int ret = 0;

	stop_orphan_agent(l, st);
	wait_for_git(l);
	clear_stale_locks(l);
	/* a stash preflight's throw-away worktree left by a kill -9 */
	if (st->preflight && !access(st->preflight, F_OK)) {
		char *dir = xstrdup(st->preflight);

		if (!gdn_git_worktree_remove(&l->ugit, st->preflight, err))
			say(l, GDN_LOOP_WARN, "removed the stash preflight worktree '%s'", dir);
		gdn_err_clear(err);
		*strrchr(dir, '/') = '\0';
		rmdir(dir);
		free(dir);
	}
	/* A recovery that was itself killed while stashing an interrupted agent's work. */
	if (st->leftover_msg) {
		ret = gdn_repo_stash_find(l->repo, st->leftover_sha, st->leftover_msg, &index,
					  &l->stash.sha, err);
		if (ret)
			goto out;
		if (index >= 0) {
			l->stash.msg = xstrdup(st->leftover_msg);
			l->stash.iter = st->open_iter;
			gdn_stash_report_kept(&l->stash, "interrupted");
		}
		gdn_stash_forget(&l->stash);
	}

	/*
	 * Work the interrupted agent left uncommitted is stashed under its own
	 * name. The tree was clean when the agent started (or stashed), unless
	 * --allow-dirty or the stash was already restored.
	 */
	if (st->open_iter && st->open_agent && !st->open_decided && !l->o->allow_dirty &&
	    !st->open_restored && !st->stash_restoring) {
		ret = gdn_repo_dirty(l->repo, &dirty, err);
		if (ret)
			goto out;
		if (dirty) {
			char *user_msg = st->stash_msg, *user_sha = st->stash_sha;
			char *msg = xstrfmt("gdnctl-loop: %s iteration %ld interrupted", st->run_id,
					    st->open_iter);

			st->stash_msg = st->stash_sha = NULL;
			ret = gdn_stash_save(&l->stash, st->open_iter, msg, "leftovers", err);
			if (!ret) {
				say(l, GDN_LOOP_WARN,
				    "uncommitted work of interrupted iteration %ld is kept in "
				    "stash "
				    "%s (%s)",
				    st->open_iter, l->stash.sha, msg);
				gdn_stash_report_kept(&l->stash, "interrupted");
				gdn_stash_forget(&l->stash);
			}
			st->stash_msg = user_msg;
			st->stash_sha = user_sha;
			free(msg);
			if (ret)
				goto out;
		}
	}
	if (st->open_iter && st->open_agent && !st->open_decided) {
		ret = set_aside(l, st, err);
		if (ret)
			goto out;
	}
	if (st->stash_msg)
		ret = gdn_stash_recover(&l->stash, st, err);
out:
	if (!ret && st->open_iter && st->open_decided)
		journal_event(l, "iteration_end", gdn_journal_iteration(st->open_iter));
	return ret;
}

static char *new_run_id(void)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	return xstrfmt("%04d%02d%02dT%02d%02d%02dZ-%ld", tm.tm_year + 1900, tm.tm_mon + 1,
		       tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)getpid());
}

/* Keep the log directory's files out of `git status` when it lies inside the tree. */
static void ignore_log_dir(const char *log_dir)
{
	char *path = xstrfmt("%s/.gitignore", log_dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	if (fd >= 0) {
		if (write(fd, "*\n", 2) != 2) {
			/* best effort */
		}
		close(fd);
	}
	free(path);
}

/* run_start: the run's plan, where it works and, with isolation, its branch and champion. */
static json_t *run_start_event(struct loop *l)
{
	const struct gdn_loop_opts *o = l->o;
	json_t *ev =
	    json_pack("{sIssss}", "iterations", (json_int_t)l->total, "workdir",
		      o->user_workdir ? o->user_workdir : o->workdir, "log_dir", o->log_dir);

	struct gdn_err ignored = GDN_ERR_INIT;
	char *head = NULL, *branch = NULL;

	if (isolated(l)) {
		head = xstrdup(l->champion);
		branch = xstrdup(l->branch);
	} else {
		gdn_repo_head_at(o->workdir, &head, &branch, &ignored);
	}
	json_object_set_new(ev, "head", head ? json_string(head) : json_null());
	json_object_set_new(ev, "branch", branch ? json_string(branch) : json_null());
	free(head);
	free(branch);
	json_object_set_new(ev, "max_failures", json_integer(o->max_failures));
	json_object_set_new(ev, "stop_after_failures", json_integer(o->stop_after_failures));
	json_object_set_new(ev, "isolation",
			    json_string(gdn_enum_name(gdn_isolation_enum, (int)o->isolation)));
	if (isolated(l)) {
		json_object_set_new(ev, "worktree", json_string(o->workdir));
		json_object_set_new(ev, "loop_branch", json_string(l->branch));
		json_object_set_new(ev, "champion", json_string(l->champion));
	}
	if (l->nw)
		json_object_set_new(ev, "workers", json_integer(l->nw));
	if (o->options)
		json_object_set(ev, "options", o->options);
	if (o->plan)
		json_object_set(ev, "plan", o->plan);
	return ev;
}

/* The run's repository handle, for the engine and its stash operations. */
static int open_repo(struct loop *l, struct gdn_err *err)
{
	int ret = gdn_repo_open(l->o->workdir, &l->repo, err);

	l->stash.repo = l->repo;
	return ret;
}

/* --resume: the last run's state from the journal, its counters, then the recovery. */
static int resume(struct loop *l, struct gdn_loop_state *st, struct gdn_err *err)
{
	int ret = load_state(l, st, err);

	if (ret)
		return ret;
	free(l->sum->run_id);
	l->sum->run_id = xstrdup(st->run_id);
	free(l->j.run_id);
	l->j.run_id = xstrdup(st->run_id);
	l->stash.pin_run = l->sum->run_id;
	if (l->total <= 0)
		l->total = st->iterations;
	if (st->workers > 1 && !l->nw)
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "run %s was started with --workers %ld: resume it with --workers",
				  st->run_id, st->workers);
	else if (isolated(l))
		ret = iso_resume(l, st, err);
	else if (st->worktree)
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "run %s was started with --isolation worktree: resume it with "
				  "--isolation worktree",
				  st->run_id);
	if (!ret && !l->nw)
		ret = open_repo(l, err);
	if (ret)
		return ret;
	l->failures = st->failures;
	l->consecutive = st->consecutive;
	l->sum->commits = st->commits;
	l->sum->iterations_run = st->iterations_run;
	l->sum->agent_ms = st->agent_ms;
	l->sum->usage = st->usage;
	l->sum->usage_iterations = st->usage_iterations;
	memcpy(l->sum->fail_kinds, st->fail_kinds, sizeof(l->sum->fail_kinds));
	for (size_t i = 0; i < st->kept.nr; i++) {
		long index = -1;
		char *sha = xstrndup(st->kept.v[i], strcspn(st->kept.v[i], " "));

		if (!gdn_repo_stash_find(l->repo, sha, NULL, &index, NULL, err) && index >= 0 &&
		    !strvec_contains(&l->sum->stashes_kept, st->kept.v[i]))
			strvec_push(&l->sum->stashes_kept, st->kept.v[i]);
		free(sha);
	}
	gdn_err_clear(err);
	l->first = st->last_done + 1;
	say(l, GDN_LOOP_INFO, "resuming run %s after iteration %ld of %ld", st->run_id,
	    st->last_done, l->total);
	journal_event(l, "run_resume",
		      json_pack("{sIsIsIsI}", "iterations", (json_int_t)l->total, "after",
				(json_int_t)st->last_done, "max_failures",
				(json_int_t)l->o->max_failures, "stop_after_failures",
				(json_int_t)l->o->stop_after_failures));
	return l->nw ? 0 : recover(l, st, err);
}

/* The engine's steps, for the workers (engine_impl.h). */
static const struct loop_steps engine_steps = {
    .say = say,
    .journal = journal_event,
    .keep_ref = keep_ref,
    .advance_branch = advance_branch,
    .check_branch = check_branch,
    .retire_worktree = retire_worktree,
    .iso_worktree = iso_worktree,
    .clear_stale_locks = clear_stale_locks,
    .iter_path = iter_path,
    .iter_release = iter_release,
    .iteration_body = iteration_body,
    .gate_hooks = gate_hooks,
    .conclude = conclude,
    .stop_condition = stop_condition,
};

int gdn_loop_run(const struct gdn_loop_opts *o, const struct gdn_loop_agent *agent,
		 const struct gdn_loop_hooks *hooks, struct gdn_loop_summary *sum,
		 struct gdn_err *err)
{
	struct loop l = {.steps = &engine_steps,
			 .o = o,
			 .o0 = o,
			 .agent = agent,
			 .hooks = hooks,
			 .sum = sum,
			 .j = GDN_JOURNAL_INIT};
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	char *head = NULL, *branch = NULL;
	const char *reason = NULL;
	int ret = 0, exit = -1;

	l.git.workdir = o->workdir;
	l.git.retries = 3;
	l.git.retry_sleep_ms = o->git_retry_sleep_ms;
	l.git.say = o->say;
	l.git.payload = o->payload;
	l.wgit = l.git;
	l.wgit.quiet = true;
	l.ugit = l.wgit;
	l.ugit.workdir = o->user_workdir ? o->user_workdir : o->workdir;
	l.stash.git = &l.git;
	l.stash.restore_policy = o->restore_policy;
	l.stash.kept = &sum->stashes_kept;
	l.stash.refs = &sum->refs_kept;
	l.stash.journal = hook_journal;
	l.stash.ctx = &l;
	if (o->workers > 1) {
		if (o->workers > GDN_LOOP_WORKERS_MAX)
			return gdn_err_set(err, GDN_EUSAGE, "--workers %ld: at most %d", o->workers,
					   GDN_LOOP_WORKERS_MAX);
		if (!isolated(&l))
			return gdn_err_set(err, GDN_EUSAGE,
					   "--workers %ld needs --isolation worktree", o->workers);
		if (o->sync_policy != GDN_SYNC_OFF)
			return gdn_err_set(
			    err, GDN_EUSAGE,
			    "--workers %ld does not go with a --sync-main-policy yet", o->workers);
		l.nw = o->workers;
	}
	ignore_log_dir(o->log_dir);
	sum->run_id = o->run_id ? xstrdup(o->run_id) : new_run_id();
	l.stash.pin_run = sum->run_id;
	ret = gdn_journal_open(&l.j, o->log_dir, sum->run_id, err);
	if (ret)
		goto out;
	sum->journal = xstrdup(l.j.path);
	l.total = o->iterations;
	l.first = 1;
	if (o->resume) {
		ret = resume(&l, &st, err);
		if (ret)
			goto out;
	} else {
		if (isolated(&l))
			ret = iso_begin(&l, err);
		if (ret)
			goto out;
		journal_event(&l, "run_start", run_start_event(&l));
		if (l.nw)
			ret = loop_workers_begin(&l, err);
		else if (isolated(&l))
			ret = iso_worktree(&l, err);
		if (!ret && !l.nw)
			ret = open_repo(&l, err);
		if (!ret)
			ret = gdn_repo_head(l.repo, &head, &branch, err);
		if (ret)
			goto out;
		if (hooks && hooks->start && head && l.total >= 1) {
			struct gdn_loop_iter gi = {0, head, head, 0, hook_report, hook_journal, &l};
			int rc = hooks->start(hooks->payload, &gi, err);

			if (rc && interrupted()) {
				/* Ctrl-C during the baseline: the run stops as interrupted */
				journal_event(&l, "interrupted",
					      json_pack("{sIsi}", "iteration", (json_int_t)0,
							"signal", interrupted()));
				gdn_err_clear(err);
				exit = 128 + interrupted();
				sum->stop_reason = xstrdup("interrupted");
			} else if (rc < 0) {
				ret = rc;
				goto out;
			} else if (rc > 0) {
				say(&l, GDN_LOOP_NOTE, "%s", err->msg);
				exit =
				    gdn_loop_exit_code(GDN_FAIL_HOOK, rc, o->original_exit_codes);
				sum->stop_reason = xstrdup("start");
			}
		}
	}
	if (l.nw && exit < 0)
		exit = loop_run_workers(&l);
	for (long it = l.first; it <= l.total && exit < 0 && !l.nw; it++) {
		reason = stop_condition(&l);
		if (reason) {
			say(&l, GDN_LOOP_INFO, "stopping before iteration %ld: %s", it, reason);
			journal_event(
			    &l, "stop",
			    json_pack("{sIss}", "iteration", (json_int_t)it, "reason", reason));
			exit = !strcmp(reason, "consecutive-failures") ? 1 : 0;
			sum->stop_reason = xstrdup(reason);
			break;
		}
		if (interrupted()) {
			int sig = interrupted();

			journal_event(
			    &l, "interrupted",
			    json_pack("{sIsi}", "iteration", (json_int_t)it, "signal", sig));
			exit = 128 + sig;
			sum->stop_reason = xstrdup("interrupted");
			break;
		}
		exit = iteration(&l, it);
	}
	if (exit < 0) {
		exit = 0;
		free(sum->stop_reason);
		sum->stop_reason = xstrdup("completed");
	}
	sum->exit_code = exit;
	sum->failures = l.failures;
	if (l.nw)
		loop_workers_end(&l);
	else if (isolated(&l))
		retire_worktree(&l, l.sum->iterations_run + 1);
	journal_event(&l, "run_end",
		      json_pack("{sssi}", "reason", sum->stop_reason, "exit_code", exit));
out:
	if (l.stash.sha) {
		struct gdn_err ignored = GDN_ERR_INIT;

		gdn_stash_restore(&l.stash, &ignored);
	}
	if (isolated(&l) && l.champion) {
		if (l.nw)
			loop_workers_end(&l);
		else
			retire_worktree(&l, l.sum->iterations_run + 1);
		sum->champion = xstrdup(l.champion);
		sum->champion_ref = xstrdup(l.champion_ref);
	}
	loop_workers_release(&l);
	free(l.branch);
	free(l.champion);
	free(l.btip);
	free(l.champion_ref);
	free(l.hour);
	free(l.note);
	gdn_stash_forget(&l.stash);
	gdn_repo_free(l.repo);
	gdn_loop_state_release(&st);
	gdn_journal_close(&l.j);
	free(head);
	free(branch);
	return ret;
}
