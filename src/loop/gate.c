/*
 * The validation gate (--validation-mode) and the measured performance
 * policy (--perf-mode) of `gdnctl loop`: the engine's hooks. They run the
 * project's test and profile commands on a backend after an iteration
 * that made commits, measure (profile output, trace summary), decide with
 * the perf module, and revert the iteration's commits when a phase fails
 * or the policy says so. They never print: they report through the
 * iteration's report and journal callbacks.
 */
#include "gdnctl/compat.h"
#include <glob.h>
#include <math.h>
#include <sys/stat.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/loop.h"
#include "gdnctl/perf.h"
#include "gdnctl/revert.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"

int gdn_gate_mode_parse(const char *s, enum gdn_gate_mode *mode)
{
	if (!strcmp(s, "off"))
		*mode = GDN_GATE_OFF;
	else if (!strcmp(s, "required"))
		*mode = GDN_GATE_REQUIRED;
	else if (!strcmp(s, "profile-only"))
		*mode = GDN_GATE_PROFILE_ONLY;
	else
		return -1;
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void report(const struct gdn_loop_iter *it, enum gdn_loop_level level, const char *fmt, ...)
    GDN_PRINTF(3, 4);
static void report(const struct gdn_loop_iter *it, enum gdn_loop_level level, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	it->report(it->ctx, level, sb.buf);
	sbuf_release(&sb);
}

struct capture {
	const struct gdn_gate *g;
	struct sbuf *out;
};

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
	struct capture cap = {g, out};
	int64_t start = now_ms();
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
	report(it, GDN_LOOP_INFO, "validation %s attempt %ld", phase, k);
	ret = g->backend->ops->run(g->backend, &spec, &st, err);
	if (ret)
		goto out;
	*rc = st.state == GDN_JOB_SUCCEEDED ? 0 : gdn_job_exit_code(&st);
	if (st.state != GDN_JOB_SUCCEEDED && !*rc)
		*rc = 1;
	it->journal(it->ctx, "validation",
		    json_pack("{sIsssIsisssI}", "iteration", (json_int_t)it->iteration, "phase",
			      phase, "attempt", (json_int_t)k, "rc", *rc, "state",
			      gdn_job_state_name(st.state), "duration_ms",
			      (json_int_t)(now_ms() - start)));
out:
	sbuf_release(&shell);
	return ret;
}

/* Revert the iteration's commits. Returns 0 or a negative gdn_errcode. */
static int revert(const struct gdn_gate *g, const struct gdn_loop_iter *it, const char *reason,
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
	report(it, GDN_LOOP_NOTE, "iteration %ld reverted (%s); discarded commits kept as %s",
	       it->iteration, reason, res.discarded_ref);
out:
	gdn_revert_result_release(&res);
	return ret;
}

/* The newest regular file matching the trace glob modified at or after `since`, or NULL. */
static char *newest_trace(const struct gdn_gate *g, const struct timespec *since)
{
	char *pattern = xstrfmt("%s/%s", g->workdir, g->trace_glob), *best = NULL;
	struct timespec best_t = {0, 0};
	glob_t gl;

	if (glob(pattern, 0, NULL, &gl))
		goto out;
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		struct stat st;

		if (stat(gl.gl_pathv[i], &st) || !S_ISREG(st.st_mode))
			continue;
		if (st.st_mtim.tv_sec < since->tv_sec ||
		    (st.st_mtim.tv_sec == since->tv_sec && st.st_mtim.tv_nsec < since->tv_nsec))
			continue;
		if (!best || st.st_mtim.tv_sec > best_t.tv_sec ||
		    (st.st_mtim.tv_sec == best_t.tv_sec && st.st_mtim.tv_nsec > best_t.tv_nsec)) {
			free(best);
			best = xstrdup(gl.gl_pathv[i]);
			best_t = st.st_mtim;
		}
	}
	globfree(&gl);
out:
	free(pattern);
	return best;
}

/*
 * Profile once (attempt k) and, with the performance policy, add a sample
 * to m (may be NULL): the CLI metric from the output, the trace figures of
 * the newest trace the run wrote. Returns 0 (*rc: the profile's exit
 * code) or a negative gdn_errcode.
 */
static int profile_once(const struct gdn_gate *g, const struct gdn_loop_iter *it, long k,
			struct gdn_perf_measurement *m, int *rc, struct gdn_err *err)
{
	struct sbuf out = SBUF_INIT;
	struct timespec since;
	struct gdn_perf_sample *s;
	char *trace = NULL;
	int ret;

	clock_gettime(CLOCK_REALTIME, &since);
	since.tv_sec -= 1; /* file systems with coarse timestamps */
	ret = run_phase(g, it, "profile", k, g->profile_command, rc, m ? &out : NULL, err);
	if (ret || !m)
		goto out;
	s = gdn_perf_measurement_add(m);
	gdn_perf_sample_set_cli(s, g->perf_config->metric, out.buf, out.len);
	if (g->trace_glob && *g->trace_glob)
		trace = newest_trace(g, &since);
	if (trace) {
		struct gdn_trace_opts topts = GDN_TRACE_OPTS_INIT;
		struct gdn_trace_summary sum = GDN_TRACE_SUMMARY_INIT;
		struct gdn_err terr = GDN_ERR_INIT;

		if (gdn_trace_summarize_file(trace, &topts, &sum, &terr) ||
		    gdn_perf_sample_set_trace(s, g->perf_config, &sum, &terr))
			report(it, GDN_LOOP_WARN, "trace '%s' gives no figures: %s", trace,
			       terr.msg);
		gdn_trace_summary_release(&sum);
	}
	if (*rc)
		report(it, GDN_LOOP_WARN, "profile run %ld failed with exit %d", k, *rc);
out:
	free(trace);
	sbuf_release(&out);
	return ret;
}

static void drop_measured(struct gdn_gate *g)
{
	if (g->measured) {
		gdn_perf_measurement_release(g->measured);
		free(g->measured);
		g->measured = NULL;
	}
	g->measured_iter = 0;
}

void gdn_gate_release(struct gdn_gate *g)
{
	drop_measured(g);
}

/* Profile perf_repeats times into a new measurement (kept in g->measured). */
static int measure(struct gdn_gate *g, const struct gdn_loop_iter *it, int *rc, struct gdn_err *err)
{
	struct gdn_perf_measurement *m;
	long k = g->perf_repeats > 0 ? g->perf_repeats : 1;
	int ret = 0;

	drop_measured(g);
	m = xcalloc(1, sizeof(*m));
	m->iteration = it->iteration;
	g->measured = m;
	g->measured_iter = it->iteration;
	*rc = 0;
	for (long i = 1; i <= k && !ret; i++) {
		int one = 0;

		ret = profile_once(g, it, i, m, &one, err);
		if (one && !*rc)
			*rc = one;
	}
	return ret;
}

int gdn_gate_validate(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		      struct gdn_err *err)
{
	struct gdn_gate *g = payload;
	struct sbuf reason = SBUF_INIT;
	int ret = 0, rc = 0;

	drop_measured(g);
	if (g->mode == GDN_GATE_OFF || it->commits <= 0)
		goto out;
	if (g->mode == GDN_GATE_REQUIRED && g->test_command && *g->test_command) {
		ret = run_phase(g, it, "tests", 1, g->test_command, &rc, NULL, err);
		if (ret)
			goto out;
		if (rc)
			sbuf_addf(&reason, "validation failed: tests exit %d", rc);
	}
	if (!rc && g->profile_command && *g->profile_command) {
		if (g->perf_config)
			ret = measure(g, it, &rc, err);
		else
			ret = profile_once(g, it, 1, NULL, &rc, err);
		if (ret)
			goto out;
		if (rc)
			sbuf_addf(&reason, "validation failed: profile exit %d", rc);
	}
	if (!rc)
		goto out;
	drop_measured(g);
	report(it, GDN_LOOP_NOTE, "%s", reason.buf);
	ret = revert(g, it, reason.buf, err);
	if (ret)
		goto out;
	out->reverted = true;
	gdn_err_set(err, GDN_EFAILED, "Iteration failed the validation gate (%s).", reason.buf);
	ret = rc;
out:
	sbuf_release(&reason);
	return ret;
}

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

/*
 * Measure (unless the validation gate did), decide, save the state,
 * report and journal. Returns 0 or a negative gdn_errcode.
 */
static int evaluate(struct gdn_gate *g, const struct gdn_loop_iter *it, const char *commit,
		    struct gdn_perf_verdict *v, struct gdn_err *err)
{
	json_t *reasons = json_array();
	bool keep;
	int ret = 0, rc = 0;

	if (!g->measured || g->measured_iter != it->iteration || !it->iteration) {
		ret = measure(g, it, &rc, err);
		if (ret)
			goto out;
	}
	ret = gdn_perf_decide(g->perf_config, g->perf_state, commit, g->measured, v, err);
	if (ret)
		goto out;
	ret = gdn_perf_state_save(g->perf_state, err);
	if (ret)
		goto out;
	keep = !v->action.revert && !v->action.count_failure && !v->action.stop;
	for (size_t i = 0; i < v->reasons.nr; i++) {
		report(it, keep ? GDN_LOOP_INFO : GDN_LOOP_NOTE, "%s", v->reasons.v[i]);
		json_array_append_new(reasons, json_string(v->reasons.v[i]));
	}
	it->journal(
	    it->ctx, "perf_decision",
	    json_pack("{sIsssssssOsIsosososbs{sbsbsb}}", "iteration", (json_int_t)it->iteration,
		      "commit", commit, "metric", g->perf_config->metric, "decision",
		      gdn_perf_decision_name(v->decision), "reasons", reasons, "samples",
		      (json_int_t)v->samples, "candidate", num_or_null(v->candidate), "champion",
		      num_or_null(v->champion), "improvement_pct", num_or_null(v->improvement_pct),
		      "confident", v->confident, "action", "revert", v->action.revert,
		      "count_failure", v->action.count_failure, "stop", v->action.stop));
out:
	json_decref(reasons);
	drop_measured(g);
	return ret;
}

int gdn_gate_decide(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		    struct gdn_err *err)
{
	struct gdn_gate *g = payload;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	char *reason = NULL;
	int ret = 0;

	if (!g->perf_config || it->commits <= 0 || !g->profile_command || !*g->profile_command) {
		drop_measured(g);
		goto out;
	}
	ret = evaluate(g, it, it->head_after, &v, err);
	if (ret)
		goto out;
	reason = xstrfmt("performance %s: %s", gdn_perf_decision_name(v.decision),
			 g->perf_config->metric);
	if (v.action.revert) {
		ret = revert(g, it, reason, err);
		if (ret)
			goto out;
		out->reverted = true;
	}
	if (v.action.stop || v.action.count_failure) {
		out->has_policy = true;
		out->policy = v.action.stop ? GDN_POLICY_FAIL : GDN_POLICY_COUNT_FAILURE;
		gdn_err_set(err, GDN_EFAILED, "performance policy failed this iteration (%s).",
			    gdn_perf_decision_name(v.decision));
		ret = 1;
	}
out:
	free(reason);
	gdn_perf_verdict_release(&v);
	return ret;
}

int gdn_gate_start(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err)
{
	struct gdn_gate *g = payload;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	json_t *champ;
	const char *metric;
	int ret = 0;

	if (!g->perf_config || !g->profile_command || !*g->profile_command)
		goto out;
	champ = gdn_perf_state_champion(g->perf_state);
	metric = champ ? json_string_value(json_object_get(champ, "metric")) : NULL;
	if (metric && !strcmp(metric, g->perf_config->metric) &&
	    json_is_number(json_object_get(champ, "metric_value"))) {
		report(it, GDN_LOOP_INFO, "performance champion kept from %s: %s=%.6g",
		       g->perf_state->path ? g->perf_state->path : "the state", metric,
		       json_number_value(json_object_get(champ, "metric_value")));
		goto out;
	}
	report(it, GDN_LOOP_INFO, "measuring the starting commit %.12s as the baseline",
	       it->head_after);
	ret = evaluate(g, it, it->head_after, &v, err);
out:
	gdn_perf_verdict_release(&v);
	return ret;
}
