/*
 * One candidate up to the gate (docs/loop-map.md): the tree ready, the
 * prompt, the agent with retries (loop_propose); what it left, set aside
 * or undone, the post-checks and the no-commit policy (loop_examine); the
 * validate and decide hooks (loop_validate). The scheduler composes them;
 * nothing here knows whether workers run.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/prompt.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"

/* What the agent's spawn callback needs to journal its process group. */
struct spawn_note {
	struct ictx *x;
	long it;
};

/* The agent's process group exists: journal it, so a resume can stop it if we die. */
static void agent_spawned(pid_t pgid, void *payload)
{
	struct spawn_note *n = payload;
	json_t *ev = gdn_journal_iteration(n->it);

	json_object_set_new(ev, "pgid", json_integer(pgid));
	json_object_set_new(ev, "started", json_integer(gdn_proc_started(pgid)));
	loop_journal(n->x, "agent_pid", ev);
}

/* The heartbeat: `still running: agent, 5m12s, last output 3m ago` while it is silent. */
static void agent_tick(int64_t elapsed_ms, int64_t idle_ms, void *payload)
{
	const struct spawn_note *n = payload;
	struct sbuf sb = SBUF_INIT;

	if (idle_ms < n->x->o->heartbeat_ms)
		return;
	gdn_loop_heartbeat_text(&sb, "agent", elapsed_ms, idle_ms);
	loop_say(n->x, GDN_LOOP_INFO, "%s", sb.buf);
	sbuf_release(&sb);
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
static void take_note(struct ictx *x, struct gdn_loop_hook_out *ho)
{
	if (!ho->note)
		return;
	free(x->note);
	x->note = ho->note;
	ho->note = NULL;
}

static int build_prompt(struct ictx *x, struct iter *c, const char *branch, struct sbuf *prompt,
			struct gdn_err *err)
{
	struct sbuf log = SBUF_INIT, tail = SBUF_INIT;
	struct gdn_prompt_vars v = {
	    .iteration = c->it,
	    .total = x->r->total,
	    .head_sha = c->head_before,
	    .branch = branch,
	    .note = x->note,
	    .log_file = gdn_prompt_log_file(x->o->hillclimb_log, x->o->workdir),
	};
	int ret = 0;

	if (x->o->hillclimb_log && !access(x->o->hillclimb_log, R_OK)) {
		ret = sbuf_read_file(&log, x->o->hillclimb_log, 64 * 1024 * 1024, err);
		if (ret)
			goto out;
		gdn_prompt_log_tail(log.buf, log.len, &tail);
		v.log_tail = tail.buf;
	}
	gdn_prompt_render(x->o->prompt_template, &v, x->o->directives, prompt);
	FREE_AND_NULL(x->note); /* said once */
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
static void record_usage(struct ictx *x, long it, const struct gdn_agent_usage *u)
{
	struct run *r = x->r;
	json_t *ev = gdn_journal_iteration(it);
	int64_t tokens = gdn_loop_usage_tokens(u);

	json_object_set_new(ev, "input_tokens",
			    u->input_tokens >= 0 ? json_integer(u->input_tokens) : json_null());
	json_object_set_new(ev, "output_tokens",
			    u->output_tokens >= 0 ? json_integer(u->output_tokens) : json_null());
	json_object_set_new(ev, "tokens", json_integer(tokens));
	json_object_set_new(ev, "cost_usd",
			    u->cost_usd >= 0 ? json_real(u->cost_usd) : json_null());
	loop_journal(x, "usage", ev);
	gdn_agent_usage_add(&r->sum->usage, u);
	r->sum->usage_iterations++;
	loop_usage_mark(r, tokens);
}

/* An attempt of the agent ended (rc: its exit code, 1 when it failed with 0): journaled, said. */
static void agent_ended(struct ictx *x, long it, long a, int rc, const struct gdn_agent_result *res)
{
	json_t *ev = gdn_journal_iteration(it);

	json_object_set_new(ev, "attempt", json_integer(a));
	json_object_set_new(ev, "rc", json_integer(rc));
	json_object_set_new(ev, "status", json_integer(res->status));
	json_object_set_new(ev, "ok", json_boolean(res->ok && !rc));
	json_object_set_new(ev, "duration_ms", json_integer(res->duration_ms));
	if (res->reason[0])
		json_object_set_new(ev, "reason", json_string(res->reason));
	loop_journal(x, "agent_end", ev);
	if (res->leftovers.nr) {
		loop_say(x, GDN_LOOP_NOTE, "agent: stopped %zu process(es) it left running",
			 res->leftovers.nr);
		loop_journal(x, "agent_leftovers", gdn_journal_leftovers(it, a, &res->leftovers));
	}
	if (res->reason[0] && rc)
		loop_say(x, GDN_LOOP_NOTE, "agent: %s", res->reason);
}

static enum step run_agent(struct ictx *x, struct iter *c, const char *prompt, struct gdn_err *err)
{
	struct run *r = x->r;
	char *pfile = loop_iter_path(x, c->it, "prompt.txt");
	char *mfile = loop_iter_path(x, c->it, "last-message.txt");
	char *tfile = loop_iter_path(x, c->it, "transcript.log");
	struct spawn_note note = {x, c->it};
	struct gdn_agent_request req = {
	    .workdir = x->o->workdir,
	    .prompt = prompt,
	    .prompt_file = pfile,
	    .last_message_file = mfile,
	    .transcript_file = tfile,
	    .on_line = x->o->on_agent_line,
	    .payload = x->o->payload,
	    .on_spawn = agent_spawned,
	    .spawn_payload = &note,
	    .on_tick = x->o->heartbeat_ms > 0 ? agent_tick : NULL,
	    .tick_ms = x->o->heartbeat_ms > INT_MAX ? INT_MAX : (int)x->o->heartbeat_ms};
	long attempts = x->o->agent_retries + 1;
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
		mark = xstrfmt("GDNCTL_AGENT_RUN=%s.%ld.%ld.%ld", r->sum->run_id, c->it, a,
			       (long)getpid());
		req.mark = mark;
		json_object_set_new(ev, "mark", json_string(mark));
		loop_journal(x, "agent_start", ev);
		if (r->agent->run(r->agent->agent, &req, &res, err)) {
			r->agent->release(&res);
			step = STEP_ERROR;
			goto out;
		}
		rc = res.exit_code;
		if (rc == 0 && !res.ok)
			rc = 1;
		r->sum->agent_ms = gdn_add_sat_i64(r->sum->agent_ms, res.duration_ms);
		c->agent_ms = res.duration_ms;
		gdn_agent_usage_add(&usage, &res.usage);
		agent_ended(x, c->it, a, rc, &res);
		if (res.last_message && access(mfile, F_OK))
			write_file(mfile, res.last_message, err);
		r->agent->release(&res);
		if (res.status != GDN_PROC_EXITED)
			loop_clear_stale_locks(
			    x); /* its group was killed, maybe in the middle of git */
		if (gdn_proc_interrupted() || res.status == GDN_PROC_STOPPED) {
			step = STEP_INTR;
			goto out;
		}
		if (!rc)
			goto out;
		if (a < attempts) {
			loop_say(
			    x, GDN_LOOP_NOTE,
			    "codex iteration command failed (attempt %ld/%ld, rc=%d); retrying.", a,
			    attempts, rc);
			gdn_sleep_interruptible(x->o->retry_sleep_ms);
			if (gdn_proc_interrupted()) {
				step = STEP_INTR;
				goto out;
			}
			continue;
		}
		snprintf(msg, sizeof(msg), "codex iteration failed with exit code %d", rc);
		step = loop_fail(c, GDN_FAIL_AGENT, rc, GDN_POLICY_COUNT_FAILURE, msg);
		c->agent_note = true;
	}
out:
	if (gdn_agent_usage_known(&usage))
		record_usage(x, c->it, &usage);
	free(mark);
	free(pfile);
	free(mfile);
	free(tfile);
	return step;
}

static enum step post_checks(struct ictx *x, struct iter *c, struct gdn_err *err)
{
	const struct strvec *pc = x->o->post_checks;
	long attempts = x->o->post_check_retries + 1;
	struct sbuf echo = SBUF_INIT;
	enum step step = STEP_OK;

	for (size_t i = 0; pc && i < pc->nr && step == STEP_OK; i++) {
		/* the user's own command string */
		const char *argv[] = {"bash", "-c", pc->v[i], NULL};
		int rc = 0;

		x->clean_known = false;

		for (long a = 1; a <= attempts; a++) {
			struct gdn_proc p = GDN_PROC_INIT;
			json_t *ev;
			int ret;

			sbuf_reset(&echo);
			gdn_argv_format(&echo, argv);
			loop_say(x, GDN_LOOP_INFO, "$ %s", echo.buf);
			p.argv = argv;
			p.dir = x->o->workdir;
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
			loop_journal(x, "check", ev);
			if (gdn_proc_interrupted()) {
				step = STEP_INTR;
				goto out;
			}
			if (!rc)
				break;
			if (a < attempts) {
				loop_say(x, GDN_LOOP_NOTE,
					 "post-check failed (attempt %ld/%ld) for command: %s", a,
					 attempts, pc->v[i]);
				if (x->o->retry_sleep_ms > 0)
					loop_say(x, GDN_LOOP_NOTE, "retrying post-check in %.1fs",
						 x->o->retry_sleep_ms / 1000.0);
				gdn_sleep_interruptible(x->o->retry_sleep_ms);
			}
		}
		if (rc)
			step = loop_fail(
			    c, GDN_FAIL_POST_CHECK, rc, x->o->post_check_policy,
			    "post-check failed. Use --post-check-policy count-failure/continue "
			    "to avoid exiting.");
	}
out:
	sbuf_release(&echo);
	return step;
}

/* `agent done in 5.0 s: 1 commit abc123 "subject"` (the newest commit's subject). */
static void agent_done(struct ictx *x, const struct iter *c)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *subj = NULL;

	if (x->o->original_exit_codes)
		return;
	if (c->commits > 0)
		gdn_repo_commit_subject(x->repo, c->head_after, &subj, &err);
	if (c->commits > 0)
		loop_say(x, GDN_LOOP_INFO, "agent done in %.1f s: %ld commit%s %.7s \"%s\"",
			 (double)c->agent_ms / 1000.0, c->commits, c->commits == 1 ? "" : "s",
			 c->head_after, subj ? subj : "");
	else
		loop_say(x, GDN_LOOP_INFO, "agent done in %.1f s: no commit",
			 (double)c->agent_ms / 1000.0);
	gdn_err_clear(&err);
	free(subj);
}

/* HEAD after the agent: commits on top of head_before, or a reset reported. */
static int detect_commits(struct ictx *x, struct iter *c, struct gdn_err *err)
{
	bool desc = false, dirty = false;
	json_t *ev;
	int ret;

	FREE_AND_NULL(c->head_after);
	FREE_AND_NULL(c->branch_after);
	c->commits = 0;
	strvec_clear(&c->ids);
	ret = gdn_repo_head(x->repo, &c->head_after, &c->branch_after, err);
	if (ret)
		return ret;
	if (!c->head_after)
		return gdn_err_set(err, GDN_EFAILED, "HEAD has no commit after the agent ran");
	desc = !strcmp(c->head_after, c->head_before);
	if (!desc) {
		ret = gdn_repo_descendant(x->repo, c->head_after, c->head_before, &desc, err);
		if (ret)
			return ret;
		if (desc) {
			ret = gdn_repo_count_commits(x->repo, c->head_before, c->head_after,
						     &c->commits, &c->ids, MAX_IDS_JOURNALED, err);
			if (ret)
				return ret;
		} else {
			loop_say(
			    x, GDN_LOOP_WARN,
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
	loop_journal(x, "head", ev);
	agent_done(x, c);
	ret = gdn_repo_dirty(x->repo, &dirty, err);
	x->clean_known = !ret && !dirty;
	c->dirty_after = !ret && dirty;
	if (!ret && dirty) {
		loop_say(x, GDN_LOOP_WARN,
			 "the agent left uncommitted changes in the working tree");
		loop_journal(x, "dirty_after", gdn_journal_iteration(c->it));
	}
	return 0;
}

/* The commits after a rewrite or a failed attempt are set aside: a `head` event says so. */
static void journal_set_aside(struct ictx *x, struct iter *c, const char *why)
{
	json_t *ev = gdn_journal_iteration(c->it);

	json_object_set_new(ev, "before", json_string(c->head_before));
	json_object_set_new(ev, "after", json_string(c->head_before));
	json_object_set_new(ev, "set_aside", json_string(c->head_after));
	json_object_set_new(ev, "reason", json_string(why));
	json_object_set_new(ev, "commits", json_integer(0));
	json_object_set_new(ev, "ids", json_array());
	loop_journal(x, "head", ev);
	c->commits = 0;
	strvec_clear(&c->ids);
}

/* Put the branch and HEAD of the user's checkout back at head_before (in place). */
static int restore_in_place(struct ictx *x, struct iter *c, const char *branch, struct gdn_err *err)
{
	int rc = 0, ret;
	struct sbuf out = SBUF_INIT;

	ret = gdn_git_runl(&x->wgit, &rc, &out, err, "update-index", "-q", "--refresh", NULL);
	if (!ret && branch && (!c->branch_after || strcmp(c->branch_after, branch)))
		ret = gdn_git_runl(&x->git, &rc, &out, err, "checkout", "-q", branch, NULL);
	if (!ret && !rc)
		ret = gdn_git_runl(&x->git, &rc, &out, err, "reset", "-q", "--keep", c->head_before,
				   NULL);
	if (!ret && rc) {
		sbuf_trim(&out);
		ret = gdn_err_set(err, GDN_EFAILED, "cannot put %s back at %.12s: %s",
				  branch ? branch : "HEAD", c->head_before, out.buf);
	}
	sbuf_release(&out);
	return ret;
}

/*
 * What the agent left, whatever its exit (moved: the loop branch had
 * moved, and was put back), the commits (a `head` event), uncommitted changes
 * set aside, a rewritten history or switched branch set aside and undone
 * (a "history" failure), and the commits of a failed attempt set aside
 * or, with --agent-failure-commits validate, passed on to validation.
 */
static enum step after_agent(struct ictx *x, struct iter *c, enum step step, bool moved,
			     struct gdn_err *err)
{
	const char *branch = c->branch;
	bool rewritten = moved, undo = false;
	const char *why = NULL;

	if (detect_commits(x, c, err))
		return STEP_ERROR;
	if (c->dirty_after && (loop_isolated(x) || !x->o->allow_dirty) &&
	    loop_set_leftovers_aside(x, c->it, err))
		return STEP_ERROR;
	if (!c->descendant || (!loop_isolated(x) && branch &&
			       (!c->branch_after || strcmp(c->branch_after, branch)))) {
		why = "history rewritten or branch switched by the agent";
		loop_keep_ref(x, c->it, "discarded/", c->head_after, why);
		undo = rewritten = true;
	} else if (step == STEP_FAIL && c->commits) {
		if (x->o->agent_failure_commits == GDN_AFC_VALIDATE) {
			loop_say(x, GDN_LOOP_NOTE,
				 "%s; its %ld commit(s) are validated (--agent-failure-commits "
				 "validate)",
				 c->msg.buf, c->commits);
			c->agent_note = false;
			step = STEP_OK;
		} else {
			why = "the commits of a failed agent attempt";
			loop_keep_ref(x, c->it, "discarded/", c->head_after, why);
			undo = true;
		}
	}
	if (undo) {
		journal_set_aside(x, c, why);
		if (loop_isolated(x) ? gdn_git_reset_clean(&x->wgit, c->head_before, err)
				     : restore_in_place(x, c, branch, err))
			return STEP_ERROR;
	}
	if (rewritten && step != STEP_FAIL)
		step = loop_fail(
		    c, GDN_FAIL_HISTORY, 1, GDN_POLICY_COUNT_FAILURE,
		    "The agent rewrote history or moved the branch; its work was set aside "
		    "under refs/gdnctl/.");
	return step;
}

/*
 * The iteration's start: the banner, the tree ready (a worktree at the
 * champion; in place, a dirty tree stashed or refused), HEAD and the
 * branch journaled.
 */
static enum step start(struct ictx *x, struct iter *c, struct gdn_err *err)
{
	struct run *r = x->r;
	char *smsg = NULL;
	bool dirty = false, clean_known;
	int ret = 0;
	json_t *ev;

	loop_heading(x, c->it);
	if ((loop_isolated(x) && loop_worktree_ready(x, err)) ||
	    gdn_repo_head(x->repo, &c->head_before, &c->branch, err))
		return STEP_ERROR;
	if (loop_isolated(x)) {
		free(c->branch);
		c->branch = xstrdup(r->branch);
	}
	ev = gdn_journal_iteration(c->it);
	json_object_set_new(ev, "head", c->head_before ? json_string(c->head_before) : json_null());
	json_object_set_new(ev, "branch", c->branch ? json_string(c->branch) : json_null());
	loop_journal(x, "iteration_start", ev);
	clean_known = x->clean_known;
	x->clean_known = false;
	if (x->o->allow_dirty || clean_known || loop_isolated(x))
		return STEP_OK;
	if (gdn_repo_dirty(x->repo, &dirty, err))
		return STEP_ERROR;
	if (dirty && x->o->dirty_policy == GDN_DIRTY_STASH) {
		smsg = xstrfmt("gdnctl-loop: %s iteration %ld", r->sum->run_id, c->it);
		ret = gdn_stash_save(&x->stash, c->it, smsg, "user", err);
		free(smsg);
	} else if (dirty) {
		ret = gdn_err_set(
		    err, GDN_EFAILED,
		    "Working tree is dirty before starting the iteration. "
		    "Commit/stash or rerun with --allow-dirty or --dirty-policy stash.");
	}
	return ret ? STEP_ERROR : STEP_OK;
}

/*
 * --sync-main-policy: the branch merged with the remote's, HEAD (the new
 * c->head_before) read again; when it moved, it is the champion (worktree)
 * and the `synced` hook re-measures it.
 */
static enum step sync_main(struct ictx *x, struct iter *c, struct gdn_err *err)
{
	struct run *r = x->r;
	char *synced_from = NULL;
	enum step step = STEP_ERROR;

	if (x->o->sync_policy == GDN_SYNC_EACH ||
	    (x->o->sync_policy == GDN_SYNC_ONCE && c->it == r->first)) {
		if (gdn_repo_head(x->repo, &synced_from, NULL, err) ||
		    gdn_git_sync(&x->git, r->ugit.workdir, x->o->sync_remote, x->o->sync_branch,
				 x->o->sync_conflict, err))
			goto out;
		if (gdn_proc_interrupted()) {
			step = STEP_INTR;
			goto out;
		}
	}
	FREE_AND_NULL(c->head_before);
	if (gdn_repo_head(x->repo, &c->head_before, NULL, err))
		goto out;
	if (!c->head_before) {
		gdn_err_set(err, GDN_EFAILED, "HEAD has no commit in '%s'", x->o->workdir);
		goto out;
	}
	if (synced_from && strcmp(synced_from, c->head_before) && loop_isolated(x) &&
	    loop_promote(x, c->it, c->head_before, err))
		goto out;
	if (synced_from && strcmp(synced_from, c->head_before) && r->hooks && r->hooks->synced) {
		/* the branch moved under the champion: the hook re-measures it */
		struct gdn_loop_iter gi = {c->it, c->head_before,   c->head_before,
					   0,	  loop_hook_report, loop_hook_journal,
					   x};

		if (r->hooks->synced(r->hooks->payload, &gi, err)) {
			step = gdn_proc_interrupted() ? STEP_INTR : STEP_ERROR;
			goto out;
		}
	}
	step = STEP_OK;
out:
	free(synced_from);
	return step;
}

enum step loop_propose(struct ictx *x, struct iter *c, struct gdn_err *err)
{
	struct sbuf prompt = SBUF_INIT;
	enum step step = start(x, c, err);

	if (step == STEP_OK && gdn_proc_interrupted())
		step = STEP_INTR;
	if (step == STEP_OK)
		step = sync_main(x, c, err);
	if (step == STEP_OK && build_prompt(x, c, c->branch, &prompt, err))
		step = STEP_ERROR;
	if (step == STEP_OK)
		step = run_agent(x, c, prompt.buf, err);
	sbuf_release(&prompt);
	return step;
}

enum step loop_examine(struct ictx *x, struct iter *c, enum step step, bool moved,
		       struct gdn_err *err)
{
	if (step == STEP_OK || step == STEP_FAIL)
		step = after_agent(x, c, step, moved, err);
	if (step != STEP_OK)
		return step;
	if (gdn_proc_interrupted())
		return STEP_INTR;
	step = post_checks(x, c, err);
	if (step != STEP_OK)
		return step;
	if (!x->o->allow_no_commit && !c->commits)
		return loop_fail(c, GDN_FAIL_NO_COMMIT, GDN_LOOP_ORIGINAL_NO_COMMIT,
				 x->o->no_commit_policy,
				 "Iteration did not produce a new commit. Use --allow-no-commit or "
				 "set --no-commit-policy count-failure/continue.");
	return STEP_OK;
}

/* The validate and decide hooks on the iteration's commits. */
enum step loop_validate(struct ictx *x, struct iter *c, struct gdn_err *err)
{
	struct run *r = x->r;
	struct gdn_loop_iter gi = {c->it,      c->head_before,	 c->head_after,
				   c->commits, loop_hook_report, loop_hook_journal,
				   x};
	struct gdn_loop_hook_out ho = {0};
	bool reverted = false;
	int rc = 0;

	if (!r->hooks)
		return STEP_OK;
	x->clean_known = false;
	if (r->hooks->validate)
		rc = r->hooks->validate(r->hooks->payload, &gi, &ho, err);
	reverted = ho.reverted;
	take_note(x, &ho);
	if (!rc && r->hooks->decide) {
		memset(&ho, 0, sizeof(ho));
		rc = r->hooks->decide(r->hooks->payload, &gi, &ho, err);
		reverted = reverted || ho.reverted;
		take_note(x, &ho);
	}
	if (reverted)
		c->commits = 0; /* none of them is kept */
	if (rc < 0)
		return STEP_ERROR;
	if (rc > 0)
		return loop_fail(c, GDN_FAIL_HOOK, rc, ho.has_policy ? ho.policy : r->hooks->policy,
				 err->msg[0] ? err->msg : "iteration hook failed.");
	return STEP_OK;
}
