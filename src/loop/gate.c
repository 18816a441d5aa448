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
#include "gdnctl/abstat.h"
#include "gdnctl/gitops.h"
#include "gdnctl/integrity.h"
#include "gdnctl/targets.h"
#include "gdnctl/trace_source.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/proc.h"
#include "gdnctl/revert.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

const struct gdn_enum gdn_gate_mode_enum[] = {
    {"required", GDN_GATE_REQUIRED, "the tests, then the profile"},
    {"profile-only", GDN_GATE_PROFILE_ONLY, "the profile only"},
    {"off", GDN_GATE_OFF, "no validation"},
    GDN_ENUM_END,
};

/*
 * A phase that could not run even after --validation-retries (ret < 0: an
 * unreachable host, an interruption): the iteration's commits were not
 * validated, so they are reverted before the error goes up to the engine
 * (an iteration error). Returns ret, or the revert's error.
 */
static int revert_unvalidated(const struct gdn_gate *g, const struct gdn_loop_iter *it,
			      struct gdn_loop_hook_out *out, int ret, struct gdn_err *err)
{
	struct gdn_err rerr = GDN_ERR_INIT;
	char *reason;

	if (gdn_proc_interrupted())
		reason = xstrfmt("validation interrupted by signal %d", gdn_proc_interrupted());
	else
		reason = xstrfmt("validation could not run: %s", err->msg);
	gdn_loop_reportf(it, GDN_LOOP_NOTE, "%s", reason);
	if (gate_revert(g, it, reason, &rerr)) {
		gdn_err_set(err, rerr.code, "%s (after: %s)", rerr.msg, reason);
		ret = rerr.code;
	} else {
		out->reverted = true;
	}
	free(reason);
	return ret;
}

bool gdn_gate_protected(const struct strvec *globs, const char *path)
{
	for (size_t i = 0; globs && i < globs->nr; i++) {
		const char *g = globs->v[i];
		size_t n = strlen(g);

		if (!fnmatch(g, path, 0))
			return true;
		/* "dir/" and "dir" protect everything below */
		if (n && (g[n - 1] == '/' ? !strncmp(path, g, n)
					  : !strncmp(path, g, n) && path[n] == '/'))
			return true;
	}
	return false;
}

/*
 * The first protected path that differs between the iteration's starting
 * commit and the working tree (its commits and anything left uncommitted;
 * renames count as a deletion and an addition). *path is NULL when none.
 * Returns 0 or a negative gdn_errcode (git could not run or failed).
 */
static int protected_change(const struct gdn_gate *g, const struct gdn_loop_iter *it, char **path,
			    struct gdn_err *err)
{
	struct gdn_git git = {.workdir = g->workdir, .quiet = true};
	struct sbuf out = SBUF_INIT;
	int rc = 0, ret;

	*path = NULL;
	ret = gdn_git_runl(&git, &rc, &out, err, "-c", "core.quotepath=off", "diff", "--name-only",
			   "--no-renames", "-z", it->head_before, "--", NULL);
	if (!ret && rc)
		ret = gdn_err_set(err, GDN_EIO, "git diff --name-only %s failed (exit %d): %.200s",
				  it->head_before, rc, out.buf);
	for (size_t off = 0; !ret && off < out.len;) {
		size_t n = strnlen(out.buf + off, out.len - off);
		char *name = xstrndup(out.buf + off, n);

		if (n && gdn_gate_protected(g->protected_paths, name)) {
			*path = name;
			break;
		}
		free(name);
		off += n + 1;
	}
	sbuf_release(&out);
	return ret;
}

int gdn_gate_validate(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		      struct gdn_err *err)
{
	struct gdn_gate *g = payload;
	struct sbuf reason = SBUF_INIT;
	int ret = 0, rc = 0;

	gate_drop_measured(g);
	if (it->commits <= 0)
		goto out;
	if (g->protected_paths && g->protected_paths->nr) {
		char *path = NULL;

		ret = protected_change(g, it, &path, err);
		if (ret) {
			ret = revert_unvalidated(g, it, out, ret, err);
			goto out;
		}
		if (path) {
			sbuf_addf(&reason, "protected path changed: %s", path);
			out->note =
			    xstrfmt("Iteration %ld was reverted without validation: it changed "
				    "the protected path %s. The tests, the benchmark and the "
				    "profile harness are not yours to change: leave them as "
				    "they are.",
				    it->iteration, path);
			free(path);
			rc = 1;
			goto reject;
		}
	}
	if (g->mode == GDN_GATE_OFF)
		goto out;
	if (g->mode == GDN_GATE_REQUIRED && g->test_command && *g->test_command) {
		ret = gate_run_phase_retry(g, it, "tests", 1, g->test_command, &rc, NULL, err);
		if (ret) {
			ret = revert_unvalidated(g, it, out, ret, err);
			goto out;
		}
		if (rc && gdn_proc_interrupted())
			sbuf_addf(&reason, "validation interrupted by signal %d",
				  gdn_proc_interrupted());
		else if (rc)
			sbuf_addf(&reason, "validation failed: tests exit %d", rc);
	}
	if (!rc && g->profile_command && *g->profile_command) {
		if (g->perf_config)
			ret = gate_measure(g, it, &rc, err);
		else
			ret = gate_profile_once(g, it, 1, NULL, &rc, err);
		if (ret) {
			gate_drop_measured(g);
			ret = revert_unvalidated(g, it, out, ret, err);
			goto out;
		}
		if (rc && gdn_proc_interrupted())
			sbuf_addf(&reason, "validation interrupted by signal %d",
				  gdn_proc_interrupted());
		else if (rc)
			sbuf_addf(&reason, "validation failed: profile exit %d", rc);
	}
	if (!rc)
		goto out;
reject:
	gate_drop_measured(g);
	gdn_loop_reportf(it, GDN_LOOP_NOTE, "%s", reason.buf);
	ret = gate_revert(g, it, reason.buf, err);
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
 * "[a,b,...]": each number in the fewest digits (up to 17) that read back
 * as the same double, so the line holds exactly the journal's values.
 */
static void add_samples(struct sbuf *sb, const json_t *arr)
{
	const json_t *x;
	size_t i;

	sbuf_addch(sb, '[');
	json_array_foreach(arr, i, x)
	{
		double d = json_number_value(x);
		char buf[40];
		int digits = 6;

		do
			snprintf(buf, sizeof(buf), "%.*g", digits, d);
		while (strtod(buf, NULL) != d && ++digits <= 17);
		sbuf_addf(sb, "%s%s", i ? "," : "", json_is_number(x) ? buf : "null");
	}
	sbuf_addch(sb, ']');
}

/*
 * --log-measurements: the metric before (the champion's median) and after,
 * the largest trace deltas against the champion's figures and, with A/B,
 * the interval and both sides' samples, appended to the kept iteration's
 * running-log entry and committed. A failure is a warning: the iteration
 * stays kept and the tree clean.
 */
static void log_measurements(const struct gdn_gate *g, const struct gdn_loop_iter *it,
			     const struct gdn_perf_verdict *v, json_t *champ)
{
	json_t *hist = json_object_get(g->perf_state->doc, "history");
	json_t *rec = json_array_get(hist, json_array_size(hist) - 1);
	struct strvec lines = STRVEC_INIT;
	struct gdn_measured meas = {g->perf_config->metric, v->champion, v->candidate, NULL};
	struct gdn_err err = GDN_ERR_INIT;
	char *commit = NULL;

	if (v->decision == GDN_PERF_BASELINE)
		meas.before = NAN;
	gdn_measure_trace_deltas(json_object_get(champ, "trace"), json_object_get(rec, "trace"),
				 g->measure->log_trace_deltas, &lines);
	if (v->ab) {
		json_t *ab = json_object_get(rec, "ab");
		struct sbuf cs = SBUF_INIT, ks = SBUF_INIT;
		json_t *vals = json_array(), *s;
		size_t i;

		json_array_foreach(json_object_get(rec, "samples"), i, s)
		    json_array_append(vals, json_object_get(s, "value"));
		add_samples(&cs, json_object_get(ab, "champion_samples"));
		add_samples(&ks, vals);
		strvec_pushf(&lines,
			     "- A/B: %+.2f%%, %.4g%% interval [%+.2f%%, %+.2f%%] over %zu pairs "
			     "(paired log-ratio, bootstrap; %s)",
			     v->improvement_pct, v->confidence * 100, v->ci_low_pct, v->ci_high_pct,
			     v->pairs, v->ab_verdict);
		strvec_pushf(&lines, "- A/B samples: champion %s, candidate %s", cs.buf, ks.buf);
		sbuf_release(&cs);
		sbuf_release(&ks);
		json_decref(vals);
	}
	meas.lines = (const char *const *)lines.v;
	if (gdn_revert_log_measurements(g->workdir, g->measure->log_file, &meas, &commit, &err)) {
		gdn_loop_reportf(it, GDN_LOOP_WARN, "measured figures not logged: %s", err.msg);
	} else {
		gdn_loop_reportf(it, GDN_LOOP_INFO, "measured figures logged in %s (commit %.12s)",
				 g->measure->log_file, commit);
		it->journal(it->ctx, "log_measurements",
			    json_pack("{sIssss}", "iteration", (json_int_t)it->iteration, "commit",
				      commit, "log", g->measure->log_file));
	}
	free(commit);
	strvec_clear(&lines);
}

/* Why the samples have no value, to an unscored decision's reasons (each reason once). */
static void add_unscored_whys(const struct gdn_perf_measurement *m, struct gdn_perf_verdict *v)
{
	for (size_t i = 0; m && i < m->nr; i++) {
		char *line;

		if (!m->v[i].why)
			continue;
		line = m->nr > 1 ? xstrfmt("profile run %zu: %s", i + 1, m->v[i].why)
				 : xstrdup(m->v[i].why);
		if (!strvec_contains(&v->reasons, line))
			strvec_push(&v->reasons, line);
		free(line);
	}
}

/*
 * Measure (unless the validation gate did), decide, save the state,
 * report and journal. Returns 0 or a negative gdn_errcode.
 */
static int evaluate(struct gdn_gate *g, const struct gdn_loop_iter *it, const char *commit,
		    struct gdn_perf_verdict *v, struct gdn_err *err)
{
	json_t *reasons = json_array(), *champ = NULL;
	bool keep;
	int ret = 0, rc = 0;

	if (!g->measured || g->measured_iter != it->iteration || !it->iteration) {
		ret = gate_measure(g, it, &rc, err);
		if (ret)
			goto out;
	}
	if (g->ruler_auto && !it->iteration) {
		/* no --perf-metric: the baseline decides the ruler, once */
		if (gdn_perf_ruler_pick(g->ruler_auto, g->measured))
			gdn_loop_reportf(
			    it, GDN_LOOP_INFO,
			    "deciding on trace/step_ms, lower is better: the device time per "
			    "step of the profile's trace (no --perf-metric, and the profile "
			    "printed no %s)",
			    GDN_PERF_DEFAULT_METRIC);
		g->ruler_auto = NULL;
	}
	champ = json_incref(gdn_perf_state_champion(g->perf_state));
	if (g->measured_champion) {
		struct gdn_abstat st;
		int verdict;
		long k = g->perf_repeats > 0 ? g->perf_repeats : 1;
		long max = g->perf_max_repeats > k ? g->perf_max_repeats : k;

		if (!gdn_perf_ab_stat(g->perf_config, g->measured_champion, g->measured,
				      g->perf_confidence, max - k + 1, &st, &verdict))
			ret = gdn_perf_decide_ab(g->perf_config, g->perf_state, commit, g->measured,
						 g->measured_champion, &st, verdict, v, err);
		else
			ret = gdn_perf_decide(g->perf_config, g->perf_state, commit, g->measured, v,
					      err);
	} else {
		ret = gdn_perf_decide(g->perf_config, g->perf_state, commit, g->measured, v, err);
	}
	if (ret)
		goto out;
	if (g->integrity) { /* integrity gate (issue 28) */
		g->integrity->workdir = g->workdir;
		ret = gdn_integrity_gate(g->integrity, it, g->perf_config, g->perf_state, champ,
					 g->measured, g->measured_champion, v, err);
		if (ret)
			goto out;
	}
	if (v->decision == GDN_PERF_UNSCORED && !it->iteration) /* the baseline: the run stops */
		add_unscored_whys(g->measured, v);
	ret = gdn_perf_state_save(g->perf_state, err);
	if (ret)
		goto out;
	keep = !v->action.revert && !v->action.count_failure && !v->action.stop;
	if (keep && it->iteration > 0 && it->commits > 0 && g->measure && g->measure->log_file)
		log_measurements(g, it, v, champ);
	for (size_t i = 0; i < v->reasons.nr; i++) {
		gdn_loop_reportf(it, keep ? GDN_LOOP_INFO : GDN_LOOP_NOTE, "%s", v->reasons.v[i]);
		json_array_append_new(reasons, json_string(v->reasons.v[i]));
	}
	it->journal(
	    it->ctx, "perf_decision",
	    json_pack("{sIsssssssOsIsosososbs{sbsbsb}ss}", "iteration", (json_int_t)it->iteration,
		      "commit", commit, "metric", g->perf_config->metric, "decision",
		      gdn_perf_decision_name(v->decision), "reasons", reasons, "samples",
		      (json_int_t)v->samples, "candidate", num_or_null(v->candidate), "champion",
		      num_or_null(v->champion), "improvement_pct", num_or_null(v->improvement_pct),
		      "confident", v->confident, "action", "revert", v->action.revert,
		      "count_failure", v->action.count_failure, "stop", v->action.stop, "direction",
		      gdn_perf_direction_name(gdn_perf_direction_resolve(g->perf_config->direction,
									 g->perf_config->metric))));
	if (v->ab)
		it->journal(
		    it->ctx, "perf_ab",
		    json_pack("{sIsssIsfsfsfsfssssso?}", "iteration", (json_int_t)it->iteration,
			      "commit", commit, "pairs", (json_int_t)v->pairs, "improvement_pct",
			      v->improvement_pct, "ci_low_pct", v->ci_low_pct, "ci_high_pct",
			      v->ci_high_pct, "confidence", v->confidence, "verdict", v->ab_verdict,
			      "decision", gdn_perf_decision_name(v->decision), "ab",
			      json_deep_copy(json_object_get(
				  json_array_get(json_object_get(g->perf_state->doc, "history"),
						 json_array_size(json_object_get(g->perf_state->doc,
										 "history")) -
						     1),
				  "ab"))));
out:
	json_decref(reasons);
	json_decref(champ);
	gate_drop_measured(g);
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
		gate_drop_measured(g);
		goto out;
	}
	ret = evaluate(g, it, it->head_after, &v, err);
	if (ret)
		goto out;
	reason = xstrfmt("performance %s: %s", gdn_perf_decision_name(v.decision),
			 g->perf_config->metric);
	if (g->integrity && g->integrity->reason) { /* integrity gate (issue 28) */
		free(reason);
		reason = xstrdup(g->integrity->reason);
	}
	if (v.action.revert) {
		ret = gate_revert(g, it, reason, err);
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

int gdn_gate_synced(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err)
{
	struct gdn_gate *g = payload;
	json_t *champ;
	const char *was;
	int ret = 0, rc = 0;

	if (!g->perf_config || !g->profile_command || !*g->profile_command)
		return 0;
	champ = gdn_perf_state_champion(g->perf_state);
	if (!champ)
		return 0;
	was = json_string_value(json_object_get(champ, "commit"));
	gdn_loop_reportf(it, GDN_LOOP_INFO,
			 "the sync moved HEAD to %.12s: re-profiling the champion (was %.12s)",
			 it->head_after, was ? was : "?");
	ret = gate_measure_opt(g, it, false, &rc, err);
	if (!ret && rc)
		ret = gdn_err_set(
		    err, GDN_EFAILED,
		    "re-profiling the champion after the sync failed: profile exit %d", rc);
	if (!ret)
		ret = gdn_perf_champion_reprofile(g->perf_config, g->perf_state, it->head_after,
						  g->measured, err);
	if (!ret)
		ret = gdn_perf_state_save(g->perf_state, err);
	if (!ret) {
		champ = gdn_perf_state_champion(g->perf_state);
		gdn_loop_reportf(
		    it, GDN_LOOP_INFO, "performance champion re-profiled: %s=%.6g @ %.12s",
		    g->perf_config->metric,
		    json_number_value(json_object_get(champ, "metric_value")), it->head_after);
		it->journal(it->ctx, "perf_reprofile",
			    json_pack("{s:I, s:s, s:s?, s:s, s:O}", "iteration",
				      (json_int_t)it->iteration, "commit", it->head_after, "was",
				      was, "metric", g->perf_config->metric, "metric_value",
				      json_object_get(champ, "metric_value")));
	}
	gate_drop_measured(g);
	return ret;
}

static const char *str_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/*
 * Why the state's champion is not this run's (new string), or NULL when
 * it is: measured with another metric, direction or profile command, or
 * its commit is not `head` (the loop branch's tip) or an ancestor of it.
 */
static char *stale_champion(const struct gdn_gate *g, json_t *champ, const char *head)
{
	const struct gdn_perf_config *c = g->perf_config;
	const char *metric = str_of(champ, "metric"), *dir = str_of(champ, "direction");
	const char *cmd = str_of(champ, "command"), *sha = str_of(champ, "commit");
	const char *want =
	    gdn_perf_direction_name(gdn_perf_direction_resolve(c->direction, c->metric));
	struct gdn_git git = {.workdir = g->workdir, .quiet = true};
	struct gdn_err ignored = GDN_ERR_INIT;
	bool yes = false;

	if (!metric || strcmp(metric, c->metric))
		return xstrfmt("it was measured with another metric (%s)",
			       metric ? metric : "none");
	if (!json_is_number(json_object_get(champ, "metric_value")))
		return xstrfmt("it has no value of %s", metric);
	if (dir && strcmp(dir, want))
		return xstrfmt("it was measured as %s is better, this run has %s", dir, want);
	if (cmd && c->command && strcmp(cmd, c->command))
		return xstrfmt("it was measured with another profile command ('%s')", cmd);
	if (!sha)
		return xstrdup("it names no commit");
	if (head && gdn_git_is_ancestor(&git, sha, head, &yes, &ignored))
		return xstrfmt("its commit %.12s is not in this repository", sha);
	if (head && !yes)
		return xstrfmt(
		    "its commit %.12s is not on the loop branch (not an ancestor of %.12s)", sha,
		    head);
	return NULL;
}

int gdn_gate_start(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err)
{
	struct gdn_gate *g = payload;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	const char *path, *metric;
	char *stale = NULL;
	json_t *champ;
	int ret = 0;

	if (!g->perf_config || !g->profile_command || !*g->profile_command)
		goto out;
	path = g->perf_state->path ? g->perf_state->path : "the state";
	champ = gdn_perf_state_champion(g->perf_state);
	metric = champ ? json_string_value(json_object_get(champ, "metric")) : NULL;
	if (g->ruler_auto && metric && json_is_number(json_object_get(champ, "metric_value"))) {
		/* a champion from an earlier run: its ruler stays */
		if (!strcmp(metric, "trace/step_ms"))
			gdn_perf_ruler_use_steps(g->ruler_auto);
		g->ruler_auto = NULL;
	}
	if (champ && !(stale = stale_champion(g, champ, it->head_after))) {
		gdn_loop_reportf(it, GDN_LOOP_INFO, "performance champion kept from %s: %s=%.6g",
				 path, g->perf_config->metric,
				 json_number_value(json_object_get(champ, "metric_value")));
		goto out;
	}
	if (stale) {
		/* the history keeps it; the run measures its own baseline */
		gdn_loop_reportf(it, GDN_LOOP_INFO, "performance champion of %s not reused: %s",
				 path, stale);
		it->journal(it->ctx, "perf_champion_stale",
			    json_pack("{sIss?ss}", "iteration", (json_int_t)0, "commit",
				      str_of(champ, "commit"), "reason", stale));
		json_object_set_new(g->perf_state->doc, "champion", json_null());
	}
	gdn_loop_reportf(it, GDN_LOOP_INFO, "measuring the starting commit %.12s as the baseline",
			 it->head_after);
	ret = evaluate(g, it, it->head_after, &v, err);
	if (!ret && v.decision == GDN_PERF_UNSCORED && !gdn_proc_interrupted()) {
		/* every iteration would be unscored: nothing the night does could be kept */
		struct sbuf why = SBUF_INIT;

		for (size_t i = 1; i < v.reasons.nr; i++)
			sbuf_addf(&why, "%s%s", why.len ? "; " : "", v.reasons.v[i]);
		gdn_err_set(
		    err, GDN_EFAILED,
		    "the baseline cannot be measured: %s at the starting commit %.12s; "
		    "every iteration would be unscored, so the run stops before iteration 1",
		    why.len ? why.buf : "no value", it->head_after);
		sbuf_release(&why);
		ret = 1;
	}
out:
	free(stale);
	gdn_perf_verdict_release(&v);
	return ret;
}
