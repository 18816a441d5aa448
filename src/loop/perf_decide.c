/*
 * The measured performance policy, its decision (perf.h): the records of
 * the champion and the candidate, the gates, the MAD confidence rule, the
 * decision and the action it implies. docs/performance-policy.md
 * describes the rules.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/wandb.h"
#include "gdnctl/perf.h"
#include "perf_impl.h"
#include "gdnctl/abstat.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"

/* Slack when comparing a percentage with a threshold (0.25 may compute as 0.2499999...). */
#define PCT_EPS	  1e-9
#define MAD_SCALE 1.4826

/* ---- records ---- */

/* Values of a record's "samples" (or its metric_value), as a new array in *out. */
static size_t record_values(json_t *rec, double **out)
{
	json_t *samples = json_object_get(rec, "samples"); /* borrowed */
	json_t *mv = json_object_get(rec, "metric_value");
	size_t i, n = 0;
	json_t *s;

	*out = xmalloc(st_mult(json_array_size(samples) + 1, sizeof(**out)));
	json_array_foreach(samples, i, s)
	{
		json_t *v = json_object_get(s, "value");

		if (json_is_number(v) && isfinite(json_number_value(v)))
			(*out)[n++] = json_number_value(v);
	}
	if (!n && json_is_number(mv))
		(*out)[n++] = json_number_value(mv);
	return n;
}

/* New reference: the median figures of the samples with a trace, or NULL. */
static json_t *median_figures(const struct gdn_perf_measurement *m)
{
	static const char *const groups[] = {"categories", "ops"};
	json_t *fig = NULL, *first = NULL;
	double *vals = xmalloc(st_mult(m->nr + 1, sizeof(*vals)));
	size_t i, g, n = 0;

	for (i = 0; i < m->nr; i++) {
		if (!m->v[i].trace)
			continue;
		if (!first)
			first = m->v[i].trace;
		vals[n++] = perf_figures_value(m->v[i].trace, GDN_PERF_BUCKET_STEP, NULL);
	}
	if (!first)
		goto out;
	fig = json_object(); /* new */
	json_object_set(fig, "steps", json_object_get(first, "steps"));
	json_object_set_new(fig, "step_ms", json_real(gdn_perf_median(vals, n)));
	for (g = 0; g < ARRAY_SIZE(groups); g++) {
		json_t *out = json_object(); /* new, stolen below */
		size_t j;

		for (i = 0; i < m->nr; i++) {
			const char *key;
			json_t *v;

			if (!m->v[i].trace)
				continue;
			json_object_foreach(json_object_get(m->v[i].trace, groups[g]), key, v)
			{
				if (json_object_get(out, key))
					continue;
				n = 0;
				for (j = 0; j < m->nr; j++) {
					json_t *x;

					if (!m->v[j].trace)
						continue;
					x = json_object_get(
					    json_object_get(m->v[j].trace, groups[g]), key);
					vals[n++] = json_is_number(x) ? json_number_value(x) : 0;
				}
				json_object_set_new(out, key, json_real(gdn_perf_median(vals, n)));
			}
		}
		json_object_set_new(fig, groups[g], out);
	}
out:
	free(vals);
	return fig;
}

/* The figure of n > 0 values under c->repeat_stat (v is reordered). */
static double repeat_stat(const struct gdn_perf_config *c, double *v, size_t n)
{
	bool lower = gdn_perf_direction_resolve(c->direction, c->metric) == GDN_PERF_LOWER;
	double best = v[0];

	if (c->repeat_stat == GDN_PERF_STAT_MEDIAN)
		return gdn_perf_median(v, n);
	for (size_t i = 1; i < n; i++)
		if (lower ? v[i] < best : v[i] > best)
			best = v[i];
	return best;
}

/* Set the metric fields of a record from its values. */
static void record_set_metric(json_t *rec, const struct gdn_perf_config *c, double *vals, size_t n)
{
	json_t *points = json_object(), *metrics = json_object(); /* new, stolen below */
	const char *metric = c->metric;

	json_object_set_new(points, metric, json_integer((json_int_t)n));
	if (n) {
		double mad = gdn_perf_mad(vals, n);
		double med = repeat_stat(c, vals, n);

		json_object_set_new(rec, "metric_value", json_real(med));
		json_object_set_new(rec, "metric_mad", json_real(mad));
		json_object_set_new(metrics, metric, json_real(med));
	} else {
		json_object_set_new(rec, "metric_value", json_null());
		json_object_set_new(rec, "metric_mad", json_null());
	}
	json_object_set_new(rec, "metric_points", points);
	json_object_set_new(rec, "metrics", metrics);
}

/* New reference: [{"value": X|null, "source": S|null, "trace": {...}|null}, ...]. */
static json_t *samples_json(const struct gdn_perf_measurement *m)
{
	json_t *a = json_array(); /* new */
	size_t i;

	for (i = 0; i < m->nr; i++) {
		const struct gdn_perf_sample *s = &m->v[i];

		json_array_append_new(a, json_pack("{s:o, s:o, s:O?}", "value",
						   s->has_value ? json_real(s->value) : json_null(),
						   "source",
						   s->source ? json_string(s->source) : json_null(),
						   "trace", s->trace));
	}
	return a;
}

static const char *first_source(const struct gdn_perf_measurement *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		if (m->v[i].has_value && m->v[i].source)
			return m->v[i].source;
	return NULL;
}

/* ---- the decision ---- */

void gdn_perf_verdict_release(struct gdn_perf_verdict *v)
{
	FREE_AND_NULL(v->champion_commit);
	strvec_clear(&v->reasons);
}

struct gdn_perf_action gdn_perf_action_for(enum gdn_perf_decision d, enum gdn_perf_policy p)
{
	struct gdn_perf_action a = {false, false, false};

	if (d != GDN_PERF_REGRESSION && d != GDN_PERF_GATE_REGRESSION && d != GDN_PERF_UNSCORED)
		return a;
	switch (p) {
	case GDN_PERF_REVERT_COUNT_FAILURE:
		a.revert = a.count_failure = true;
		break;
	case GDN_PERF_REVERT_CONTINUE:
		a.revert = true;
		break;
	case GDN_PERF_FAIL:
		a.stop = a.count_failure = true;
		break;
	case GDN_PERF_COUNT_FAILURE:
		a.count_failure = true;
		break;
	case GDN_PERF_CONTINUE:
		break;
	}
	return a;
}

struct gdn_perf_action gdn_perf_action_config(enum gdn_perf_decision d,
					      const struct gdn_perf_config *c)
{
	struct gdn_perf_action a = gdn_perf_action_for(d, c->policy);

	if (d == GDN_PERF_WITHIN_THRESHOLD && c->within_policy == GDN_PERF_WITHIN_REVERT)
		a.revert = true;
	return a;
}

/* Evaluate the gates; failing rules add a reason each. Returns whether any failed. */
static bool eval_gates(const struct gdn_perf_gates *g, json_t *champ, json_t *cand,
		       struct strvec *reasons)
{
	struct sbuf subj = SBUF_INIT;
	bool failed = false;
	size_t i;

	for (i = 0; i < g->nr; i++) {
		const struct gdn_perf_gate *gate = &g->v[i];
		double before = perf_figures_value(champ, gate->bucket, gate->name);
		double after = perf_figures_value(cand, gate->bucket, gate->name);

		sbuf_reset(&subj);
		if (gate->bucket == GDN_PERF_BUCKET_CATEGORY)
			sbuf_adds(&subj, gate->name);
		else
			perf_gate_subject(gate, &subj);
		if (gate->kind == GDN_PERF_GATE_MAX_INCREASE_MS &&
		    after - before > gate->limit_ms) {
			strvec_pushf(reasons,
				     "gate: `%s` grew %.3f ms/step (%.3f -> %.3f, limit %.3f)",
				     subj.buf, after - before, before, after, gate->limit_ms);
			failed = true;
		} else if (gate->kind == GDN_PERF_GATE_NEW_MAX_MS &&
			   !perf_figures_has(champ, gate->bucket, gate->name) &&
			   after > gate->limit_ms) {
			strvec_pushf(reasons,
				     "gate: `%s` is a new bucket of %.3f ms/step (limit %.3f)",
				     subj.buf, after, gate->limit_ms);
			failed = true;
		}
	}
	sbuf_release(&subj);
	return failed;
}

static void short_sha(char *buf, size_t size, const char *sha)
{
	snprintf(buf, size, "%.12s", sha ? sha : "?");
}

static void verdict_reset(struct gdn_perf_verdict *out)
{
	gdn_perf_verdict_release(out);
	out->decision = GDN_PERF_UNSCORED;
	out->candidate = out->champion = NAN;
	out->delta_pct = out->improvement_pct = NAN;
	out->noise = 0;
	out->confident = false;
	out->samples = 0;
	out->ab = false;
	out->pairs = 0;
	out->ci_low_pct = out->ci_high_pct = out->confidence = NAN;
	out->ab_verdict = NULL;
}

/* the history record of the candidate, before the comparison; returns a new reference */
static json_t *candidate_record(const struct gdn_perf_config *c, enum gdn_perf_direction dir,
				const char *commit, const struct gdn_perf_measurement *cand,
				const char *src, json_t *cfig, double *vals, size_t n)
{
	json_t *rec = json_object(); /* new */

	json_object_set_new(rec, "iteration", json_integer(cand->iteration));
	json_object_set_new(rec, "commit", commit ? json_string(commit) : json_null());
	json_object_set_new(rec, "metric", json_string(c->metric));
	json_object_set_new(rec, "direction", json_string(gdn_perf_direction_name(dir)));
	if (c->command)
		json_object_set_new(rec, "command", json_string(c->command));
	json_object_set_new(rec, "metric_source", src ? json_string(src) : json_null());
	json_object_set_new(rec, "run_url",
			    cand->run_url ? json_string(cand->run_url) : json_null());
	json_object_set_new(
	    rec, "timestamp_unix",
	    json_integer(cand->timestamp_unix ? cand->timestamp_unix : (json_int_t)time(NULL)));
	json_object_set_new(rec, "samples", samples_json(cand));
	json_object_set(rec, "trace", cfig ? cfig : json_null());
	record_set_metric(rec, c, vals, n);
	return rec;
}

/* delta, improvement and noise band of the candidate against the champion's values */
static void measure_delta(const struct gdn_perf_config *c, enum gdn_perf_direction dir, double diff,
			  double cand_mad, double champ_mad, double k, struct gdn_perf_verdict *out)
{
	if (out->champion != 0)
		out->delta_pct = diff / fabs(out->champion) * 100.0;
	else
		out->delta_pct = diff == 0 ? 0 : diff > 0 ? INFINITY : -INFINITY;
	out->improvement_pct = dir == GDN_PERF_LOWER ? -out->delta_pct : out->delta_pct;
	if (c->min_confidence > 0) {
		out->noise = c->min_confidence * MAD_SCALE * (cand_mad + champ_mad) / sqrt(k);
		out->confident = fabs(diff) > out->noise;
	} else {
		out->confident = true;
	}
}

/* the trace gates, or why they were not evaluated; true when one triggered */
static bool check_gates(const struct gdn_perf_config *c, json_t *champ, json_t *cfig, double imp,
			bool confident, struct strvec *detail)
{
	json_t *hfig = json_object_get(champ, "trace"); /* borrowed */

	if (!c->gates.nr)
		return false;
	if (c->gates.override_pct >= 0 && imp >= c->gates.override_pct - PCT_EPS && confident)
		strvec_pushf(detail, "gate: skipped, metric win %+.2f%% >= %.2f%%", imp,
			     c->gates.override_pct);
	else if (!json_is_object(hfig) || !cfig)
		strvec_pushf(detail, "gate: not evaluated, no trace figures for the %s",
			     !cfig ? "candidate" : "champion");
	else
		return eval_gates(&c->gates, hfig, cfig, detail);
	return false;
}

static enum gdn_perf_decision pick_decision(const struct gdn_perf_config *c, bool gated,
					    bool confident, double imp)
{
	if (gated)
		return GDN_PERF_GATE_REGRESSION;
	if (confident && imp >= c->min_improvement_pct - PCT_EPS)
		return GDN_PERF_PROMOTED;
	if (confident && imp <= -c->max_regression_pct + PCT_EPS)
		return GDN_PERF_REGRESSION;
	return GDN_PERF_WITHIN_THRESHOLD;
}

/* the candidate against a valid champion: decision, reasons and the record's comparison */
static void compare_to_champion(const struct gdn_perf_config *c, enum gdn_perf_direction dir,
				json_t *champ, json_t *cfig, double *cvals, size_t cn, size_t n,
				const char *src, const char *csha, json_t *rec,
				struct gdn_perf_verdict *out)
{
	double champ_mad = gdn_perf_mad(cvals, cn);
	double cand_mad = json_number_value(json_object_get(rec, "metric_mad"));
	double k = (double)(n < cn ? n : cn);
	double diff, imp;
	struct strvec detail = STRVEC_INIT;
	bool gated;

	out->champion = repeat_stat(c, cvals, cn);
	diff = out->candidate - out->champion;
	measure_delta(c, dir, diff, cand_mad, champ_mad, k, out);
	imp = out->improvement_pct;
	gated = check_gates(c, champ, cfig, imp, out->confident, &detail);
	if (!out->confident &&
	    (imp >= c->min_improvement_pct - PCT_EPS || imp <= -c->max_regression_pct + PCT_EPS))
		strvec_pushf(&detail,
			     "difference within noise: |%.6g - %.6g| = %.6g <= %.6g (z=%g, "
			     "MAD %.6g + %.6g, K=%.0f)",
			     out->candidate, out->champion, fabs(diff), out->noise,
			     c->min_confidence, cand_mad, champ_mad, k);
	out->decision = pick_decision(c, gated, out->confident, imp);
	strvec_pushf(&out->reasons, "%s: %.6g -> %.6g (%+.2f%%, source=%s, champion %s)",
		     out->decision == GDN_PERF_PROMOTED ? "performance champion promoted"
		     : out->decision == GDN_PERF_REGRESSION
			 ? "performance regression detected vs champion"
		     : out->decision == GDN_PERF_GATE_REGRESSION
			 ? "performance gate triggered vs champion"
			 : "performance within hold band vs champion",
		     out->champion, out->candidate, imp, src ? src : "?", csha);
	strvec_pushv(&out->reasons, detail.v);
	json_object_set_new(rec, "delta_vs_champion_pct",
			    isfinite(out->delta_pct) ? json_real(out->delta_pct) : json_null());
	json_object_set_new(rec, "improvement_pct", isfinite(imp) ? json_real(imp) : json_null());
	json_object_set_new(rec, "noise", json_real(out->noise));
	json_object_set_new(rec, "confident", json_boolean(out->confident));
	strvec_clear(&detail);
}

/* the decision, its reasons and the action, ends the record and appends it to the history */
static void record_decision(struct gdn_perf_state *st, json_t *rec,
			    const struct gdn_perf_verdict *out)
{
	json_t *gate_reasons = json_array(); /* new, stolen below */
	json_t *reasons = json_array();	     /* new, stolen below */
	size_t i;

	for (i = 0; i < out->reasons.nr; i++)
		if (!strncmp(out->reasons.v[i], "gate: `", 7))
			json_array_append_new(gate_reasons, json_string(out->reasons.v[i]));
	json_object_set_new(rec, "decision", json_string(gdn_perf_decision_name(out->decision)));
	json_object_set_new(rec, "control_gate_reasons", gate_reasons);
	for (i = 0; i < out->reasons.nr; i++)
		json_array_append_new(reasons, json_string(out->reasons.v[i]));
	json_object_set_new(rec, "reasons", reasons);
	json_array_append(json_object_get(st->doc, "history"), rec);
	if (out->decision == GDN_PERF_BASELINE || out->decision == GDN_PERF_PROMOTED)
		json_object_set_new(st->doc, "champion", json_deep_copy(rec));
}

/* New reference: the values of a measurement ([X|null, ...]). */
static json_t *values_json(const struct gdn_perf_measurement *m)
{
	json_t *a = json_array();

	for (size_t i = 0; i < m->nr; i++)
		json_array_append_new(a,
				      m->v[i].has_value ? json_real(m->v[i].value) : json_null());
	return a;
}

int gdn_perf_ab_stat(const struct gdn_perf_config *c, const struct gdn_perf_measurement *champion,
		     const struct gdn_perf_measurement *cand, double confidence, long looks,
		     struct gdn_abstat *stat, int *verdict)
{
	size_t n = champion->nr < cand->nr ? champion->nr : cand->nr, k = 0;
	double *a = xmalloc(st_mult(n + 1, sizeof(*a))), *b = xmalloc(st_mult(n + 1, sizeof(*b)));
	bool lower = gdn_perf_direction_resolve(c->direction, c->metric) == GDN_PERF_LOWER;
	int ret = -1;

	for (size_t i = 0; i < n; i++)
		if (champion->v[i].has_value && cand->v[i].has_value && champion->v[i].value > 0 &&
		    cand->v[i].value > 0) {
			a[k] = champion->v[i].value;
			b[k++] = cand->v[i].value;
		}
	if (k && !gdn_abstat_ratio_ci(a, b, k, lower, gdn_abstat_look_confidence(confidence, looks),
				      0x6764e5eedULL + k, stat)) {
		*verdict =
		    (int)gdn_abstat_classify(stat, c->min_improvement_pct, c->max_regression_pct);
		ret = 0;
	}
	free(a);
	free(b);
	return ret;
}

/* the candidate against the champion measured alternately with it (--perf-ab) */
static void compare_ab(const struct gdn_perf_config *c, json_t *champ, json_t *cfig,
		       const struct gdn_perf_measurement *cm, const struct gdn_abstat *stat,
		       int verdict, const char *src, const char *csha, json_t *rec,
		       struct gdn_perf_verdict *out)
{
	double *v = xmalloc(st_mult(cm->nr + 1, sizeof(*v)));
	size_t n = 0;
	struct strvec detail = STRVEC_INIT;
	bool gated;
	json_t *ab;

	for (size_t i = 0; i < cm->nr; i++)
		if (cm->v[i].has_value)
			v[n++] = cm->v[i].value;
	out->champion = n ? repeat_stat(c, v, n) : NAN;
	free(v);
	out->ab = true;
	out->pairs = stat->pairs;
	out->ci_low_pct = stat->lo_pct;
	out->ci_high_pct = stat->hi_pct;
	out->confidence = stat->confidence;
	out->ab_verdict = gdn_abstat_verdict_name((enum gdn_abstat_verdict)verdict);
	out->improvement_pct = stat->improvement_pct;
	out->delta_pct = gdn_perf_direction_resolve(c->direction, c->metric) == GDN_PERF_LOWER
			     ? -stat->improvement_pct
			     : stat->improvement_pct;
	out->confident = verdict != GDN_AB_INCONCLUSIVE;
	gated =
	    check_gates(c, champ, cfig, out->improvement_pct, verdict == GDN_AB_PROMOTE, &detail);
	out->decision = gated			       ? GDN_PERF_GATE_REGRESSION
			: verdict == GDN_AB_PROMOTE    ? GDN_PERF_PROMOTED
			: verdict == GDN_AB_REGRESSION ? GDN_PERF_REGRESSION
						       : GDN_PERF_WITHIN_THRESHOLD;
	strvec_pushf(&out->reasons,
		     "%s: %.6g -> %.6g (%+.2f%%, %.4g%% interval [%+.2f%%, %+.2f%%] over %zu "
		     "A/B pair%s: %s; source=%s, champion %s)",
		     out->decision == GDN_PERF_PROMOTED ? "performance champion promoted"
		     : out->decision == GDN_PERF_REGRESSION
			 ? "performance regression detected vs champion"
		     : out->decision == GDN_PERF_GATE_REGRESSION
			 ? "performance gate triggered vs champion"
			 : "performance within hold band vs champion",
		     out->champion, out->candidate, stat->improvement_pct, stat->confidence * 100,
		     stat->lo_pct, stat->hi_pct, stat->pairs, stat->pairs == 1 ? "" : "s",
		     out->ab_verdict, src ? src : "?", csha);
	strvec_pushv(&out->reasons, detail.v);
	strvec_clear(&detail);
	json_object_set_new(rec, "delta_vs_champion_pct", json_real(out->delta_pct));
	json_object_set_new(rec, "improvement_pct", json_real(stat->improvement_pct));
	json_object_set_new(rec, "noise", json_real(0));
	json_object_set_new(rec, "confident", json_boolean(out->confident));
	ab = json_pack("{s:s, s:I, s:f, s:f, s:f, s:f, s:I, s:s, s:o, s:o}", "statistic",
		       "paired log-ratio, bootstrap interval", "pairs", (json_int_t)stat->pairs,
		       "improvement_pct", stat->improvement_pct, "ci_low_pct", stat->lo_pct,
		       "ci_high_pct", stat->hi_pct, "confidence", stat->confidence, "resamples",
		       (json_int_t)stat->resamples, "verdict", out->ab_verdict, "champion_samples",
		       values_json(cm), "champion_value",
		       isfinite(out->champion) ? json_real(out->champion) : json_null());
	json_object_set_new(rec, "ab", ab);
}

struct ab_in {
	const struct gdn_perf_measurement *champion;
	const struct gdn_abstat *stat;
	int verdict;
};

static int decide(const struct gdn_perf_config *c, struct gdn_perf_state *st, const char *commit,
		  const struct gdn_perf_measurement *cand, const struct ab_in *ab,
		  struct gdn_perf_verdict *out, struct gdn_err *err);

int gdn_perf_decide(const struct gdn_perf_config *c, struct gdn_perf_state *st, const char *commit,
		    const struct gdn_perf_measurement *cand, struct gdn_perf_verdict *out,
		    struct gdn_err *err)
{
	return decide(c, st, commit, cand, NULL, out, err);
}

int gdn_perf_decide_ab(const struct gdn_perf_config *c, struct gdn_perf_state *st,
		       const char *commit, const struct gdn_perf_measurement *cand,
		       const struct gdn_perf_measurement *champion, const struct gdn_abstat *stat,
		       int verdict, struct gdn_perf_verdict *out, struct gdn_err *err)
{
	struct ab_in ab = {champion, stat, verdict};

	return decide(c, st, commit, cand, &ab, out, err);
}

static int decide(const struct gdn_perf_config *c, struct gdn_perf_state *st, const char *commit,
		  const struct gdn_perf_measurement *cand, const struct ab_in *ab,
		  struct gdn_perf_verdict *out, struct gdn_err *err)
{
	enum gdn_perf_direction dir = gdn_perf_direction_resolve(c->direction, c->metric);
	double *vals = xmalloc(st_mult(cand->nr + 1, sizeof(*vals))), *cvals = NULL;
	json_t *rec = NULL, *champ, *cfig = NULL;
	const char *src = first_source(cand), *cmetric;
	char sha[16], csha[16];
	size_t i, n = 0, cn = 0;
	bool champ_ok;
	int ret;

	verdict_reset(out);
	ret = gdn_perf_config_check(c, err);
	if (ret)
		goto out;
	if (!st->doc)
		BUG("perf state not initialised");
	for (i = 0; i < cand->nr; i++)
		if (cand->v[i].has_value)
			vals[n++] = cand->v[i].value;
	out->samples = n;
	short_sha(sha, sizeof(sha), commit);

	cfig = median_figures(cand);					  /* new */
	rec = candidate_record(c, dir, commit, cand, src, cfig, vals, n); /* new */
	if (n)
		out->candidate = json_number_value(json_object_get(rec, "metric_value"));

	champ = gdn_perf_state_champion(st); /* borrowed */
	cmetric = json_string_value(json_object_get(champ, "metric"));
	if (champ) {
		const char *s = json_string_value(json_object_get(champ, "commit"));

		out->champion_commit = s ? xstrdup(s) : NULL;
		json_object_set_new(rec, "champion_commit", s ? json_string(s) : json_null());
	}
	short_sha(csha, sizeof(csha), out->champion_commit);
	champ_ok = champ && json_is_number(json_object_get(champ, "metric_value")) &&
		   (!cmetric || !strcmp(cmetric, c->metric));
	if (champ_ok) {
		cn = record_values(champ, &cvals);
		champ_ok = cn > 0;
	}

	if (!n) {
		out->decision = GDN_PERF_UNSCORED;
		strvec_pushf(&out->reasons, "required performance metric is unavailable: %s",
			     c->metric);
	} else if (!champ) {
		out->decision = GDN_PERF_BASELINE;
		strvec_pushf(
		    &out->reasons,
		    "performance baseline initialized: %s=%.6g @ %s (source=%s, %zu sample%s)",
		    c->metric, out->candidate, sha, src ? src : "?", n, n == 1 ? "" : "s");
	} else if (!champ_ok) {
		out->decision = GDN_PERF_BASELINE;
		strvec_pushf(&out->reasons,
			     "champion record was invalid (no %s value); replaced with current "
			     "candidate: %s=%.6g @ %s",
			     c->metric, c->metric, out->candidate, sha);
	} else if (ab) {
		compare_ab(c, champ, cfig, ab->champion, ab->stat, ab->verdict, src, csha, rec,
			   out);
	} else {
		compare_to_champion(c, dir, champ, cfig, cvals, cn, n, src, csha, rec, out);
	}
	out->action = gdn_perf_action_config(out->decision, c);
	record_decision(st, rec, out);
out:
	json_decref(rec);
	json_decref(cfig);
	free(vals);
	free(cvals);
	return ret;
}

int gdn_perf_champion_add_samples(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				  const struct gdn_perf_measurement *m, struct gdn_err *err)
{
	json_t *champ = gdn_perf_state_champion(st); /* borrowed */
	json_t *samples, *add = NULL;
	double *vals = NULL;
	size_t n;
	int ret = 0;

	if (!champ) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "no performance champion to re-profile");
		goto out;
	}
	samples = json_object_get(champ, "samples");
	if (!json_is_array(samples)) {
		/* an original record: its metric_value becomes the first sample */
		json_t *mv = json_object_get(champ, "metric_value");

		samples = json_array(); /* new, stolen below */
		if (json_is_number(mv))
			json_array_append_new(samples,
					      json_pack("{s:O, s:O?}", "value", mv, "source",
							json_object_get(champ, "metric_source")));
		json_object_set_new(champ, "samples", samples);
	}
	add = samples_json(m); /* new */
	json_array_extend(samples, add);
	n = record_values(champ, &vals);
	record_set_metric(champ, c, vals, n);
	json_object_set_new(champ, "reprofiled", json_true());
out:
	json_decref(add);
	free(vals);
	return ret;
}

int gdn_perf_champion_reprofile(const struct gdn_perf_config *c, struct gdn_perf_state *st,
				const char *commit, const struct gdn_perf_measurement *m,
				struct gdn_err *err)
{
	json_t *champ = gdn_perf_state_champion(st); /* borrowed */
	json_t *fig;
	double *vals = NULL;
	size_t n;

	if (!champ)
		return gdn_err_set(err, GDN_ENOTFOUND, "no performance champion to re-profile");
	if (!json_is_string(json_object_get(champ, "reprofiled_from")))
		json_object_set(champ, "reprofiled_from", json_object_get(champ, "commit"));
	json_object_set_new(champ, "commit", json_string(commit));
	json_object_set_new(champ, "samples", samples_json(m));
	fig = median_figures(m); /* new */
	json_object_set_new(champ, "trace", fig ? fig : json_null());
	n = record_values(champ, &vals);
	record_set_metric(champ, c, vals, n);
	json_object_set_new(champ, "reprofiled", json_true());
	free(vals);
	return 0;
}
