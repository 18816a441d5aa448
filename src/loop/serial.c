/*
 * The serial scheduler (docs/loop-map.md): one iteration after another in
 * the run's own context (the user's checkout in place, or the agent's
 * worktree), each composed of the same steps as a worker's: propose,
 * validate, decide.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"

/* Iteration `it`, up to its decision. Returns -1 to go on, or the loop's exit code. */
static int iteration(struct ictx *x, long it)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct iter c = ITER_INIT(it);
	enum step step = loop_propose(x, &c, &err);
	bool moved = false;
	int exit;

	/* with a worktree, the loop branch must be where the loop left it */
	if ((step == STEP_OK || step == STEP_FAIL) && loop_isolated(x) &&
	    loop_check_branch(x, &c, &moved, &err))
		step = STEP_ERROR;
	else
		step = loop_examine(x, &c, step, moved, &err);
	if (step == STEP_OK)
		step = loop_validate(x, &c, &err);
	exit = loop_decide(x, &c, step, &err);
	if (exit < 0 && step == STEP_OK && it < x->r->total && x->o->sleep_ms > 0) {
		x->clean_known = false;
		gdn_sleep_interruptible(x->o->sleep_ms);
	}
	loop_iter_release(&c);
	return exit;
}

int loop_run_serial(struct ictx *x)
{
	struct run *r = x->r;
	const char *reason;
	int exit = -1;

	for (long it = r->first; it <= r->total && exit < 0; it++) {
		reason = loop_stop_condition(r);
		if (reason) {
			loop_say(x, GDN_LOOP_INFO, "stopping before iteration %ld: %s", it, reason);
			loop_journal(
			    x, "stop",
			    json_pack("{sIss}", "iteration", (json_int_t)it, "reason", reason));
			exit = !strcmp(reason, "consecutive-failures") ? 1 : 0;
			r->sum->stop_reason = xstrdup(reason);
			break;
		}
		if (gdn_proc_interrupted()) {
			int sig = gdn_proc_interrupted();

			loop_journal(
			    x, "interrupted",
			    json_pack("{sIsi}", "iteration", (json_int_t)it, "signal", sig));
			exit = 128 + sig;
			r->sum->stop_reason = xstrdup("interrupted");
			break;
		}
		exit = iteration(x, it);
	}
	return exit;
}
