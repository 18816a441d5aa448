/*
 * The decision on one candidate (docs/loop-map.md): the single place where
 * a candidate is kept or reverted. The running log stamped, the failure
 * policies applied, the decision journaled, then the promotion (the
 * champion's ref, the loop branch); and the run's stop conditions.
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

/*
 * Stamp the running log's placeholder with the new HEAD and commit the stamp
 * (the original left it uncommitted: docs/compatibility.md, "Bugs of the original that gdnctl
 * fixes").
 */
static void stamp_log(struct ictx *x, struct iter *c)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT;
	char *msg = NULL, *head = NULL;
	json_t *ev;
	int rc = 0, r;

	if (!x->o->hillclimb_log || !c->commits)
		goto out;
	r = gdn_prompt_stamp_log(x->o->hillclimb_log, c->head_after, x->tag, c->it, &err);
	if (r)
		x->clean_known = false; /* the log rewritten (or maybe half-written) */
	if (r < 0) {
		loop_say(x, GDN_LOOP_WARN, "%s", err.msg);
		goto out;
	}
	if (r == 0)
		goto out;
	loop_say(x, GDN_LOOP_INFO, "stamped last hill-climb log entry with commit %.12s",
		 c->head_after);
	msg = xstrfmt("gdnctl: stamp hill-climb log entry with commit %.12s", c->head_after);
	if (gdn_git_runl(&x->git, &rc, &out, &err, "commit", "-q", "-m", msg, "--",
			 x->o->hillclimb_log, NULL) ||
	    rc) {
		sbuf_trim(&out);
		loop_say(x, GDN_LOOP_WARN, "could not commit the stamped hill-climb log: %s",
			 err.msg[0] ? err.msg : out.buf);
		goto out;
	}
	if (gdn_repo_head(x->repo, &head, NULL, &err) || !head)
		goto out;
	ev = gdn_journal_iteration(c->it);
	json_object_set_new(ev, "commit", json_string(head));
	loop_journal(x, "stamp", ev);
out:
	free(head);
	free(msg);
	sbuf_release(&out);
}

static void journal_decision(struct ictx *x, struct iter *c, bool failed, bool counted, int exit,
			     const char *champion)
{
	struct run *r = x->r;
	json_t *ev = gdn_journal_iteration(c->it);

	json_object_set_new(ev, "outcome", json_string(failed ? "failed" : "ok"));
	json_object_set_new(ev, "failure",
			    failed ? json_string(gdn_loop_failure_name(c->kind)) : json_null());
	json_object_set_new(ev, "counted", json_boolean(counted));
	json_object_set_new(ev, "commits", json_integer(c->commits));
	json_object_set_new(ev, "failures", json_integer(r->failures));
	json_object_set_new(ev, "consecutive", json_integer(r->consecutive));
	json_object_set_new(ev, "exit", exit >= 0 ? json_integer(exit) : json_null());
	if (champion)
		json_object_set_new(ev, "champion", json_string(champion));
	loop_journal(x, "decision", ev);
}

/*
 * A failed iteration (STEP_FAIL, or STEP_ERROR with err) under its policy:
 * counted, said, and whether it ends the run. Returns -1 to go on, or the
 * exit code (*counted: it counted towards --max-failures).
 */
static int apply_policy(struct ictx *x, struct iter *c, enum step step, struct gdn_err *err,
			bool *counted)
{
	struct run *r = x->r;
	bool stops;
	int exit = -1;

	if (step == STEP_OK)
		r->consecutive = 0;
	if (step != STEP_FAIL && step != STEP_ERROR)
		return -1;
	if (step == STEP_ERROR) {
		sbuf_reset(&c->msg);
		sbuf_addf(&c->msg, "iteration %ld raised: %s", c->it, err->msg);
		c->kind = GDN_FAIL_ITERATION_ERROR;
		c->rc = GDN_LOOP_ORIGINAL_ITERATION_ERROR;
		c->policy = x->o->iteration_error_policy;
		loop_journal(
		    x, "error",
		    json_pack("{sIss}", "iteration", (json_int_t)c->it, "message", err->msg));
	}
	stops = gdn_loop_policy_apply(c->policy, &r->failures, x->o->max_failures, counted) ==
		GDN_VERDICT_EXIT;
	if (stops)
		exit = gdn_loop_exit_code(c->kind, c->rc, x->o->original_exit_codes);
	if (c->agent_note || c->policy == GDN_POLICY_FAIL)
		loop_say(x, GDN_LOOP_NOTE, "%s", c->msg.buf);
	else if (stops && !x->o->original_exit_codes)
		loop_say(x, GDN_LOOP_NOTE,
			 "%s%s stopping: %ld counted failure%s exceeds --max-failures %ld (-1: "
			 "unlimited)",
			 c->msg.buf, step == STEP_ERROR ? "." : "", r->failures,
			 r->failures == 1 ? "" : "s", x->o->max_failures);
	else
		loop_say(x, GDN_LOOP_NOTE, "%s%s Continuing due to policy=%s.", c->msg.buf,
			 step == STEP_ERROR ? "." : "", gdn_loop_policy_name(c->policy));
	r->sum->fail_kinds[c->kind]++;
	r->consecutive++;
	return exit;
}

/*
 * In place: the user's stash put back after the iteration. A failing
 * restore is an iteration error, but never turns an exit into "continue"
 * (the original's did: docs/compatibility.md, "Bugs of the original that
 * gdnctl fixes"). Returns `exit`, or the exit code the error ends the run
 * with.
 */
static int restore_stash(struct ictx *x, long it, enum step step, int exit)
{
	struct run *r = x->r;
	struct gdn_err rerr = GDN_ERR_INIT;
	bool counted = false;

	if (x->stash.sha)
		x->clean_known = false;
	if (!gdn_stash_restore(&x->stash, &rerr))
		return exit;
	loop_say(x, GDN_LOOP_NOTE, "iteration %ld raised: %s", it, rerr.msg);
	loop_journal(x, "error",
		     json_pack("{sIss}", "iteration", (json_int_t)it, "message", rerr.msg));
	if (exit >= 0 || step == STEP_INTR)
		return exit;
	if (gdn_loop_policy_apply(x->o->iteration_error_policy, &r->failures, x->o->max_failures,
				  &counted) == GDN_VERDICT_EXIT)
		exit =
		    gdn_loop_exit_code(GDN_FAIL_ITERATION_ERROR, GDN_LOOP_ORIGINAL_ITERATION_ERROR,
				       x->o->original_exit_codes);
	r->sum->fail_kinds[GDN_FAIL_ITERATION_ERROR]++;
	loop_journal(x, "failure",
		     json_pack("{sIsssIsI}", "iteration", (json_int_t)it, "failure",
			       gdn_loop_failure_name(GDN_FAIL_ITERATION_ERROR), "failures",
			       (json_int_t)r->failures, "consecutive", (json_int_t)r->consecutive));
	return exit;
}

int loop_decide(struct ictx *x, struct iter *c, enum step step, struct gdn_err *err)
{
	struct run *r = x->r;
	struct gdn_err rerr = GDN_ERR_INIT;
	long it = c->it;
	char *candidate = NULL;
	bool counted = false;
	int exit;

	/*
	 * A failure or an error that comes with SIGINT/SIGTERM (a hook's phase
	 * killed by the Ctrl-C, an interrupted profile) is the interruption:
	 * no policy applies, nothing is counted, no decision (--resume redoes
	 * the iteration, setting aside any commit a hook did not revert).
	 */
	if ((step == STEP_FAIL || step == STEP_ERROR) && gdn_proc_interrupted())
		step = STEP_INTR;
	/*
	 * Commits left on the branch get their running-log entry stamped,
	 * whatever the outcome (a failure under count-failure, continue or
	 * fail keeps them); c->commits is 0 when a hook reverted them.
	 */
	if (step != STEP_INTR)
		stamp_log(x, c);
	/*
	 * Kept or reverted. With isolation, what lands: an accepted
	 * iteration, or one whose gate or performance policy failed it
	 * without reverting (the policy chose to keep the validated commits,
	 * as in place); the commits of any other are set aside.
	 */
	if (step != STEP_INTR && loop_isolated(x))
		candidate = loop_settle(
		    x, c, step == STEP_OK || (step == STEP_FAIL && c->kind == GDN_FAIL_HOOK));
	exit = apply_policy(x, c, step, err, &counted);
	if (step != STEP_INTR) { /* an interrupted iteration has no decision: --resume redoes it */
		/*
		 * The commits left on the branch, also after a failure that kept
		 * them (c->commits is 0 when a hook reverted them): the decision
		 * journals the same number, which --resume adds up.
		 */
		r->sum->commits = (long)gdn_add_sat_i64(r->sum->commits, c->commits);
		r->sum->iterations_run++;
		journal_decision(x, c, step == STEP_FAIL || step == STEP_ERROR, counted, exit,
				 candidate);
	}
	if (candidate && loop_promote(x, it, candidate, &rerr)) {
		loop_say(x, GDN_LOOP_WARN, "iteration %ld: %s", it, rerr.msg);
		gdn_err_clear(&rerr);
	}
	exit = restore_stash(x, it, step, exit);
	free(candidate);
	if (step == STEP_INTR || gdn_proc_interrupted()) {
		int sig = gdn_proc_interrupted();

		loop_journal(x, "interrupted",
			     json_pack("{sIsi}", "iteration", (json_int_t)it, "signal", sig));
		free(r->sum->stop_reason);
		r->sum->stop_reason = xstrdup("interrupted");
		return 128 + (sig ? sig : SIGINT);
	}
	loop_journal(x, "iteration_end", gdn_journal_iteration(it));
	if (exit >= 0) {
		free(r->sum->stop_reason);
		r->sum->stop_reason = xstrdup("failure");
	}
	return exit;
}

/* Tokens the agent used in the last 60 minutes (of this session). */
static int64_t tokens_last_hour(const struct run *r)
{
	time_t now = time(NULL);
	int64_t n = 0;

	for (size_t i = 0; i < r->hour_nr; i++)
		if (now - r->hour[i].when < 3600)
			n = gdn_add_sat_i64(n, r->hour[i].tokens);
	return n;
}

const char *loop_stop_condition(struct run *r)
{
	const struct gdn_loop_opts *o = r->o;

	if (o->until_time && time(NULL) >= o->until_time)
		return "until-time";
	if (o->max_agent_ms && r->sum->agent_ms >= o->max_agent_ms)
		return "agent-budget";
	if (o->stop_after_failures && r->consecutive >= o->stop_after_failures)
		return "consecutive-failures";
	if (o->max_tokens && gdn_loop_usage_tokens(&r->sum->usage) >= o->max_tokens)
		return "token-budget";
	if (o->max_cost_usd > 0 && r->sum->usage.cost_usd >= o->max_cost_usd)
		return "cost-budget";
	if (o->max_tokens_per_hour && tokens_last_hour(r) >= o->max_tokens_per_hour)
		return "tokens-per-hour";
	return NULL;
}
