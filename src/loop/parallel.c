/*
 * The parallel scheduler (--workers N > 1, docs/loop-workers.md): the
 * iterations handed to idle workers in order, each worker's child
 * composing propose, catch up and validate in its own worktree
 * (worker.c); here, in the parent, each outcome decided one at a time
 * (promotions serialized, a candidate re-checked on the champion of its
 * turn) through the same decision step as the serial scheduler's.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/gitops.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "ctx.h"
#include "steps.h"
#include "workers.h"

#define WORKER_STOP_MS 30000 /* after a stop, a child that has not ended gets SIGKILL */
#define WORKER_TICK_MS 50

/* The iteration a worker takes next: the first one neither decided nor at work (0: none). */
static long next_iteration(struct pool *p)
{
	struct run *r = p->x0->r;
	for (long it = 1; it <= r->total; it++) {
		bool busy = p->done[it];

		for (long k = 0; k < p->nw && !busy; k++)
			busy = (p->w[k].pid || p->w[k].queued) && p->w[k].it == it;
		if (!busy)
			return it;
	}
	return 0;
}

/* Its candidate passed (or a policy kept it after validation). */
static bool accepted(const struct worker *w)
{
	return !w->c.conflict && w->c.commits > 0 && w->c.head_before &&
	       (w->step == STEP_OK || (w->step == STEP_FAIL && w->c.kind == GDN_FAIL_HOOK));
}

/*
 * Its candidate failed validation on a base that is not the champion: on
 * a candidate ahead of it in the train, whose fault it may be.
 */
static bool failed_on_train(const struct pool *p, const struct worker *w)
{
	struct run *r = p->x0->r;
	return !w->c.conflict && w->step == STEP_FAIL && w->c.kind == GDN_FAIL_HOOK &&
	       w->c.head_before && w->c.head_after && strcmp(w->c.head_before, w->c.head_after) &&
	       strcmp(w->c.head_before, r->champion);
}

static void adopt_state(struct worker *w, bool promoted)
{
	struct gdn_err err = GDN_ERR_INIT;

	const struct gdn_loop_hooks *h = w->x.r->hooks;

	if (h && h->worker_state &&
	    h->worker_state(h->payload, w->k, GDN_WORKER_ADOPT, promoted, &err))
		loop_say(&w->x, GDN_LOOP_WARN, "%s", err.msg);
}

/*
 * Worker w's outcome (w->c, w->step) decided: a candidate that passed on a
 * champion that has moved since (or, recheck_failed, failed on a train
 * candidate that was not promoted) is re-checked on the champion first
 * (its child forked again, p->rechecking); anything else is concluded,
 * promoted when accepted. Returns -1 to go on, or the loop's exit code.
 */
static int decide_worker(struct pool *p, struct worker *w, bool recheck_failed)
{
	struct run *r = p->x0->r;
	char *champion = xstrdup(r->champion);
	bool recheck = strcmp(w->c.head_before ? w->c.head_before : "", r->champion) &&
		       (accepted(w) || (recheck_failed && failed_on_train(p, w)));
	bool candidate;
	int exit = -1;

	if (recheck && gdn_proc_interrupted()) {
		w->step = STEP_INTR; /* never promoted unchecked */
		recheck = false;
	}
	if (recheck) {
		if (!w->base || !w->cand) { /* the child did not say: as it was validated */
			free(w->base);
			free(w->cand);
			w->base = xstrdup(w->c.head_before);
			w->cand = xstrdup(w->c.head_after);
		}
		loop_say(
		    &w->x, GDN_LOOP_INFO,
		    "iteration %ld passed on %.12s, but the champion is now %.12s: re-checking it "
		    "there",
		    w->c.it, w->c.head_before, r->champion);
		loop_journal(&w->x, "recheck",
			     json_pack("{sIssssss}", "iteration", (json_int_t)w->c.it, "base",
				       w->c.head_before, "champion", r->champion, "candidate",
				       w->cand));
		adopt_state(w, false); /* what it decided on its base stays on record */
		loop_untip(&w->x, &p->t, w->c.head_after); /* what joined behind it is redone */
		w->retry = !accepted(w);
		if (!loop_start_worker(w, w->it, true, &w->err)) {
			/*
			 * in the train, re-checks run at once; on the champion, one
			 * that passed before runs alone (the others wait, so that it
			 * decides on the champion of its moment), a retry as a new
			 * candidate does
			 */
			if (!p->t.spec && !w->retry)
				p->rechecking = w;
			goto out;
		}
		w->step = STEP_ERROR;
	}
	/* a candidate (its commits are 0 once a failed validation reverted them) */
	candidate = !w->c.conflict && w->c.head_before && w->c.head_after &&
		    strcmp(w->c.head_before, w->c.head_after);
	exit = loop_decide(&w->x, &w->c, w->step, &w->err);
	unlink(w->readyfile);
	if (w->step != STEP_INTR && w->c.it <= r->total)
		p->done[w->c.it] = 1;
	if (strcmp(champion, r->champion))
		loop_say(&w->x, GDN_LOOP_INFO, "iteration %ld promoted: the champion is now %.12s",
			 w->c.it, r->champion);
	adopt_state(w, strcmp(champion, r->champion) != 0);
	if (w->step != STEP_INTR && candidate) {
		p->t.recent = (p->t.recent << 1) | (strcmp(champion, r->champion) != 0);
		p->t.recent_nr++;
	}
	if (w->step != STEP_INTR && candidate && w->recheck && !w->retry) {
		p->t.rechecks = (p->t.rechecks << 1) | (strcmp(champion, r->champion) != 0);
		p->t.rechecks_nr++;
	}
	if (w->step != STEP_INTR && candidate)
		loop_train_save_share(&p->t);
	if (!strcmp(champion, r->champion))
		loop_untip(&w->x, &p->t, w->c.head_after);
	w->ready_ms = gdn_now_ms() + (w->step == STEP_OK ? p->x0->o->sleep_ms : 0);
	if (w->step != STEP_INTR)
		w->it = 0;
out:
	free(champion);
	return exit;
}

/* The queued candidate whose turn it is (NULL: none). */
static struct worker *next_queued(struct pool *p)
{
	struct worker *first = NULL;

	for (long k = 0; k < p->nw; k++)
		if (p->w[k].queued && (!first || p->w[k].seq < first->seq))
			first = &p->w[k];
	return first;
}

/* `sha` is a candidate still to be decided: one at work in a child, or one waiting. */
static bool undecided(struct pool *p, const struct worker *me, const char *sha)
{
	for (long k = 0; k < p->nw; k++) {
		const struct worker *w = &p->w[k];
		struct sbuf head = SBUF_INIT;
		struct gdn_err ignored = GDN_ERR_INIT;
		bool yes = false;

		if (w == me)
			continue;
		if (w->queued && w->c.head_after)
			yes = !strcmp(w->c.head_after, sha);
		else if (w->pid && !sbuf_read_file(&head, w->headfile, 128, &ignored))
			yes = !strcmp(head.buf, sha);
		sbuf_release(&head);
		if (yes)
			return true;
	}
	return false;
}

/*
 * The accepted candidates wait here, decided in turn: one on the champion
 * is promoted (not while another's re-check runs: that one decides on the
 * champion of the moment); one on a candidate still to be decided (it
 * joined the train) waits for that verdict; any other is re-checked on the
 * champion (in the train, all at once; else one re-check at a time). One
 * at a time: p->more says another may be ready, for the scheduler's next
 * round, after it started the idle workers. Returns -1 to go on, or the
 * exit code.
 */
static int process_queue(struct pool *p)
{
	struct run *r = p->x0->r;
	struct worker *order[GDN_LOOP_SLOTS_MAX];
	size_t n = 0;
	int exit = -1;

	p->more = false;
	for (long k = 0; k < p->nw; k++)
		if (p->w[k].queued)
			order[n++] = &p->w[k];
	for (size_t i = 1; i < n; i++) /* by turn: few items */
		for (size_t j = i; j > 0 && order[j]->seq < order[j - 1]->seq; j--) {
			struct worker *t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (size_t i = 0; i < n && !p->more; i++) {
		struct worker *q = order[i];
		struct gdn_err ignored = GDN_ERR_INIT;
		bool on_champion = !strcmp(q->c.head_before, r->champion), was = false;

		if (p->rechecking || (!on_champion && undecided(p, q, q->c.head_before)))
			continue;
		/* a failure on a former champion stands; on a rejected candidate, not */
		if (!accepted(q) && !on_champion &&
		    gdn_git_is_ancestor(&r->ugit, q->c.head_before, r->champion, &was, &ignored))
			gdn_err_clear(&ignored);
		q->queued = false;
		exit = decide_worker(p, q, !was);
		p->more = true;
	}
	return exit;
}

/*
 * Worker w's child ended with `code`: its outcome decided, or queued when
 * it passed (promotions are serialized: process_queue, in the scheduler's
 * next round, after the idle workers started). Returns -1 to go
 * on, or the loop's exit code.
 */
static int worker_done(struct pool *p, struct worker *w, int code)
{
	struct run *r = p->x0->r;
	bool moved = false, turn = p->rechecking == w;
	int exit = -1;

	loop_iter_release(&w->c);
	w->c = ITER_INIT(w->it);
	gdn_err_clear(&w->err);
	if (turn)
		p->rechecking = NULL;
	w->step = loop_read_result(w, code);
	unlink(w->headfile);
	if ((w->step == STEP_FAIL || w->step == STEP_ERROR) && gdn_proc_interrupted())
		w->step = STEP_INTR;
	if (w->cancelled) {
		loop_journal(&w->x, "abandoned", gdn_journal_iteration(w->it));
		loop_untip(&w->x, &p->t, w->c.head_after);
		goto out;
	}
	if (loop_check_branch(&w->x, &w->c, &moved, &w->err)) {
		loop_say(&w->x, GDN_LOOP_WARN, "%s", w->err.msg);
		gdn_err_clear(&w->err);
	} else if (moved) {
		loop_say(&w->x, GDN_LOOP_WARN, "an agent moved %s; it is back at %.12s", r->branch,
			 r->btip);
	}
	if (w->c.conflict) {
		free(w->x.note);
		w->x.note = xstrfmt("%s. Start from the current code: your change must apply on "
				    "top of it.",
				    w->c.msg.buf);
		loop_say(&w->x, GDN_LOOP_NOTE, "%s", w->c.msg.buf);
	}
	if (accepted(w) || failed_on_train(p, w)) {
		w->queued = true;
		w->seq = turn ? 0 : ++p->seq; /* a re-checked candidate has the turn */
	} else {
		exit = decide_worker(p, w, false);
	}
	p->more = true; /* decided in the scheduler's next round, one at a time */
out:
	return exit;
}

static struct worker *idle_worker(struct pool *p)
{
	int64_t now = gdn_now_ms();

	for (long k = 0; k < p->nw; k++)
		if (!p->w[k].pid && !p->w[k].queued && p->w[k].ready_ms <= now)
			return &p->w[k];
	return NULL;
}

/* A child runs (queued: or a candidate waits for its turn). */
static bool workers_busy(const struct pool *p, bool queued)
{
	for (long k = 0; k < p->nw; k++)
		if (p->w[k].pid || (queued && p->w[k].queued))
			return true;
	return false;
}

/*
 * No child runs, candidates wait: the run is stopping (their re-check was
 * stopped). After a failure that ends the run they are abandoned; after
 * Ctrl-C they end as interrupted (one already on the champion is decided).
 */
static int flush_queue(struct pool *p, int exit)
{
	struct worker *q;

	while (!p->rechecking && (q = next_queued(p))) {
		int rc;

		q->queued = false;
		if (exit >= 0 && !gdn_proc_interrupted()) {
			loop_journal(&q->x, "abandoned", gdn_journal_iteration(q->it));
			continue;
		}
		rc = decide_worker(p, q, false);
		if (rc >= 0 && exit < 0)
			exit = rc;
	}
	return exit;
}

/*
 * A worker's child that got SIGKILL cannot stop its agent: what the agent
 * of its iteration left running is found by its attempts' marks (the
 * child's GDNCTL_AGENT_RUN, as the journal's agent_start has it).
 */
static void stop_agent_of(struct pool *p, const struct worker *w)
{
	struct run *r = p->x0->r;

	if (!w->it)
		return;
	for (long a = 1; a <= p->x0->o->agent_retries + 1; a++) {
		char *mark = xstrfmt("GDNCTL_AGENT_RUN=%s.%ld.%ld.%ld", r->sum->run_id, w->it, a,
				     (long)w->pid);

		gdn_proc_stop_leftovers(0, mark, -1, 2000, NULL);
		free(mark);
	}
}

/* Until a worker's child ends (a decision to make), a signal, or a tick. */
static void wait_for_workers(const struct pool *p)
{
	pid_t *pids = xcalloc(p->nw, sizeof(*pids));

	for (long k = 0; k < p->nw; k++)
		pids[k] = p->w[k].pid;
	gdn_proc_fork_wait(pids, (size_t)p->nw, WORKER_TICK_MS);
	free(pids);
}

/*
 * The loop with workers: iterations handed to idle workers in order, each
 * child's outcome decided here one at a time (promotions serialized).
 * A stop condition lets the running iterations finish; a failure that ends
 * the run stops them (abandoned, no decision); Ctrl-C or SIGTERM stops
 * them as interrupted. Returns the exit code, or -1 (completed).
 */
int loop_run_parallel(struct pool *p)
{
	struct run *r = p->x0->r;
	struct gdn_err err = GDN_ERR_INIT;
	bool launching = true;
	int exit = -1, stop_exit = -1;
	int64_t signalled = 0;
	bool hard_killed = false;

	for (;;) {
		bool reaped = false;

		while (launching && exit < 0 && !gdn_proc_interrupted()) {
			struct worker *w = idle_worker(p);
			const char *reason;
			long it;

			if (!w)
				break;
			it = next_iteration(p);
			if (!it) {
				launching = false;
				break;
			}
			reason = loop_stop_condition(p->x0->r);
			if (reason) {
				loop_say(p->x0, GDN_LOOP_INFO, "stopping before iteration %ld: %s",
					 it, reason);
				loop_journal(p->x0, "stop",
					     json_pack("{sIss}", "iteration", (json_int_t)it,
						       "reason", reason));
				stop_exit = !strcmp(reason, "consecutive-failures") ? 1 : 0;
				r->sum->stop_reason = xstrdup(reason);
				launching = false;
				break;
			}
			if (loop_start_worker(w, it, false, &err)) {
				loop_say(p->x0, GDN_LOOP_NOTE, "%s", err.msg);
				exit = gdn_loop_exit_code(GDN_FAIL_ITERATION_ERROR,
							  GDN_LOOP_ORIGINAL_ITERATION_ERROR,
							  p->x0->o->original_exit_codes);
				r->sum->stop_reason = xstrdup("failure");
				gdn_err_clear(&err);
			}
		}
		if (p->more && exit < 0) { /* the queue's next candidate, if ready */
			int rc = process_queue(p);

			if (rc >= 0)
				exit = rc;
			continue;
		}
		if (!workers_busy(p, false) && workers_busy(p, true))
			exit = flush_queue(p, exit);
		if (!workers_busy(p, true)) {
			if (!launching || exit >= 0 || gdn_proc_interrupted())
				break;
			gdn_sleep_interruptible(WORKER_TICK_MS);
			continue;
		}
		if ((gdn_proc_interrupted() || exit >= 0) && !signalled) {
			for (long k = 0; k < p->nw; k++) {
				struct worker *w = &p->w[k];

				if (!w->pid)
					continue;
				w->cancelled = !gdn_proc_interrupted();
				gdn_proc_fork_signal(w->pid, gdn_proc_interrupted()
								 ? gdn_proc_interrupted()
								 : SIGTERM);
			}
			signalled = gdn_now_ms();
		} else if (signalled && gdn_now_ms() - signalled > WORKER_STOP_MS) {
			for (long k = 0; k < p->nw; k++) {
				if (!p->w[k].pid)
					continue;
				gdn_proc_fork_signal(p->w[k].pid, SIGKILL);
				if (!hard_killed)
					stop_agent_of(p, &p->w[k]);
			}
			hard_killed = true;
		}
		for (long k = 0; k < p->nw; k++) {
			struct worker *w = &p->w[k];
			int code = 0, rc;

			if (!w->pid || !gdn_proc_fork_poll(w->pid, &code))
				continue;
			w->pid = 0;
			reaped = true;
			rc = worker_done(p, w, code);
			if (rc >= 0 && exit < 0)
				exit = rc;
		}
		if (!reaped)
			wait_for_workers(p);
	}
	return exit >= 0 ? exit : stop_exit;
}
