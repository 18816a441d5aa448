/*
 * The validation gate, its phases (gate_impl.h): a test or profile command
 * run on the gate's targets with --heartbeat and --validation-retries, and
 * the revert of an iteration's commits.
 */
#include "gdnctl/compat.h"
#include <fnmatch.h>
#include <glob.h>
#include <math.h>
#include <sys/stat.h>
#include "gdnctl/backend.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/loop.h"
#include "gdnctl/gate.h"
#include "gate_impl.h"
#include "gdnctl/journal.h"
#include "gdnctl/abstat.h"
#include "gdnctl/gitops.h"
#include "gdnctl/targets.h"
#include "gdnctl/trace_source.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/proc.h"
#include "gdnctl/revert.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

struct capture {
	const struct gdn_gate *g;
	struct sbuf *out;
	const struct gdn_loop_iter *it;
	const char *phase;
};

/* --heartbeat for a validation phase that says nothing for that long. */
static void phase_tick(int64_t elapsed_ms, int64_t idle_ms, void *payload)
{
	struct capture *c = payload;
	struct sbuf sb = SBUF_INIT, what = SBUF_INIT;

	if (idle_ms < c->g->heartbeat_ms)
		return;
	sbuf_addf(&what, "validation %s", c->phase);
	gdn_loop_heartbeat_text(&sb, what.buf, elapsed_ms, idle_ms);
	c->it->report(c->it->ctx, GDN_LOOP_INFO, sb.buf);
	sbuf_release(&sb);
	sbuf_release(&what);
}

/* Pass a line on to the terminal, and keep it for the metric parser. */
static int capture_line(const char *line, size_t len, void *payload)
{
	struct capture *c = payload;

	if (c->out) {
		sbuf_add(c->out, line, len);
		sbuf_addch(c->out, '\n');
	}
	return c->g->on_line ? c->g->on_line(line, len, c->g->payload) : 0;
}

/*
 * Run one phase (attempt k). Returns 0 (it ran: *rc is its exit code, 0
 * for success) or a negative gdn_errcode when it could not be run. The
 * output is appended to `out` (may be NULL).
 */
static int run_phase(const struct gdn_gate *g, const struct gdn_loop_iter *it, const char *phase,
		     long k, const char *command, int *rc, struct sbuf *out, struct gdn_err *err)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_run_spec spec = {0};
	struct sbuf shell = SBUF_INIT;
	struct capture cap = {g, out, it, phase};
	json_t *ev;
	int64_t start = gdn_now_ms();
	const char *root = g->backend->repo_root, *suffix = g->backend->copy_suffix;
	int ret;

	if (!strcmp(g->backend->ops->type, "local")) {
		sbuf_adds(&shell, "cd -- ");
		gdn_sh_add_path(&shell, g->workdir);
		sbuf_adds(&shell, " && ");
	}
	sbuf_adds(&shell, command);
	spec.shell = shell.buf;
	spec.timeout_ms = g->timeout_ms;
	spec.on_line = capture_line;
	spec.payload = &cap;
	if (g->heartbeat_ms > 0) {
		spec.on_tick = phase_tick;
		spec.tick_ms = g->heartbeat_ms > INT_MAX ? INT_MAX : (int)g->heartbeat_ms;
	}
	gdn_loop_reportf(it, GDN_LOOP_INFO, "validation %s attempt %ld", phase, k);
	if (g->targets) { /* the held dev TPU, then fallbacks (targets.c): journals each try */
		ret = gdn_targets_run_tree(g->targets, it, phase, k, command, g->workdir,
					   g->copy_suffix ? g->workdir : NULL, g->copy_suffix,
					   &spec, rc, err);
		goto out;
	}
	if (g->copy_suffix && strcmp(g->backend->ops->type, "local")) {
		/* the champion's tree (--perf-ab), for this run only */
		g->backend->repo_root = g->workdir;
		g->backend->copy_suffix = g->copy_suffix;
	}
	ret = g->backend->ops->run(g->backend, &spec, &st, err);
	g->backend->repo_root = root;
	g->backend->copy_suffix = suffix;
	if (ret)
		goto out;
	*rc = st.state == GDN_JOB_SUCCEEDED ? 0 : gdn_job_exit_code(&st);
	if (st.state != GDN_JOB_SUCCEEDED && !*rc)
		*rc = 1;
	ev = json_pack("{sIsssIsisssI}", "iteration", (json_int_t)it->iteration, "phase", phase,
		       "attempt", (json_int_t)k, "rc", *rc, "state", gdn_job_state_name(st.state),
		       "duration_ms", (json_int_t)(gdn_now_ms() - start));
	if (st.job_id[0]) /* the backend's job (Iris, Ray, Slurm), and how it ended there */
		json_object_set_new(ev, "job", json_string(st.job_id));
	if (st.job_id[0] && st.native[0])
		json_object_set_new(ev, "native", json_string(st.native));
	it->journal(it->ctx, "validation", ev);
out:
	sbuf_release(&shell);
	return ret;
}

/* The state run_phase journals for a phase, seen on its way to the journal. */
struct watch {
	const struct gdn_loop_iter *it;
	char state[32];
};

static void watch_report(void *ctx, enum gdn_loop_level level, const char *msg)
{
	struct watch *w = ctx;

	w->it->report(w->it->ctx, level, msg);
}

static void watch_journal(void *ctx, const char *event, json_t *ev)
{
	struct watch *w = ctx;
	const char *st = json_string_value(json_object_get(ev, "state"));

	if (gdn_journal_event(event) == GDN_EV_VALIDATION && st)
		snprintf(w->state, sizeof(w->state), "%s", st);
	w->it->journal(w->it->ctx, event, ev);
}

/*
 * run_phase with --validation-retries: attempts k, k+1, ... while the
 * phase could not run (a negative return other than an interruption) or
 * its job was stopped without gdnctl being interrupted. A command that ran
 * and failed is not retried. `out` keeps only the last attempt's output.
 */
int gate_run_phase_retry(const struct gdn_gate *g, const struct gdn_loop_iter *it,
			 const char *phase, long k, const char *command, int *rc, struct sbuf *out,
			 struct gdn_err *err)
{
	for (long retry = 0;; retry++) {
		struct watch w = {it, ""};
		struct gdn_loop_iter wit = *it;
		size_t mark = out ? out->len : 0;
		bool infra;
		int ret;

		wit.report = watch_report;
		wit.journal = watch_journal;
		wit.ctx = &w;
		ret = run_phase(g, &wit, phase, k + retry, command, rc, out, err);
		infra = !gdn_proc_interrupted() &&
			((ret < 0 && ret != GDN_EINTR) || (!ret && !strcmp(w.state, "stopped")));
		if (infra && !ret && retry >= g->phase_retries)
			/* still stopped after the retries: it could not run, not a failure */
			return gdn_err_set(err, GDN_EBACKEND,
					   "validation %s job was stopped from outside "
					   "(retries: %ld)",
					   phase, g->phase_retries);
		if (!infra || retry >= g->phase_retries)
			return ret;
		gdn_loop_reportf(it, GDN_LOOP_NOTE,
				 "validation %s could not run (%s); retry %ld/%ld in %lds", phase,
				 ret ? err->msg : "job stopped", retry + 1, g->phase_retries,
				 (g->retry_sleep_ms + 999) / 1000);
		it->journal(it->ctx, "validation_retry",
			    json_pack("{sIsssIsIss}", "iteration", (json_int_t)it->iteration,
				      "phase", phase, "attempt", (json_int_t)(k + retry), "retry",
				      (json_int_t)(retry + 1), "reason",
				      ret ? err->msg : "job stopped"));
		if (out)
			sbuf_setlen(out, mark);
		gdn_err_clear(err);
		if (gdn_sleep_interruptible(g->retry_sleep_ms))
			return gdn_err_set(err, GDN_EINTR, "interrupted during validation %s",
					   phase);
	}
}

/* Revert the iteration's commits. Returns 0 or a negative gdn_errcode. */
int gate_revert(const struct gdn_gate *g, const struct gdn_loop_iter *it, const char *reason,
		struct gdn_err *err)
{
	struct gdn_revert_opts ro = GDN_REVERT_OPTS_INIT;
	struct gdn_revert_result res = GDN_REVERT_RESULT_INIT;
	int ret;

	ro.root = g->workdir;
	ro.iteration = it->iteration;
	ro.old_head = it->head_before;
	ro.new_head = it->head_after;
	ro.reason = reason;
	ro.mode = g->revert_mode;
	ret = gdn_revert_iteration(&ro, &res, err);
	if (ret) {
		it->journal(it->ctx, "revert",
			    json_pack("{sIsssbss}", "iteration", (json_int_t)it->iteration,
				      "reason", reason, "ok", 0, "error", err->msg));
		goto out;
	}
	it->journal(it->ctx, "revert",
		    json_pack("{sIsssbsssssI}", "iteration", (json_int_t)it->iteration, "reason",
			      reason, "ok", 1, "discarded_ref", res.discarded_ref, "head", res.head,
			      "commits", (json_int_t)res.nr_reverted));
	gdn_loop_reportf(it, GDN_LOOP_NOTE,
			 "iteration %ld reverted (%s); discarded commits kept as %s", it->iteration,
			 reason, res.discarded_ref);
out:
	gdn_revert_result_release(&res);
	return ret;
}
