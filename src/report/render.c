/*
 * The report's renderers: a plain-text summary, the JSON document
 * (gdnctl.report.v1) and one self-contained HTML page. The page loads
 * nothing: inline CSS, an inline SVG chart, no script, and a
 * Content-Security-Policy that forbids every fetch. Every text taken from
 * the journal, the state or git is HTML-escaped.
 */
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/report.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

/* Colours of the outcomes, in enum order (SVG fill and legend swatch). */
static const char *const outcome_colours[] = {
    "#546e7a", /* baseline */
    "#2e7d32", /* promoted */
    "#1e88e5", /* within band */
    "#d32f2f", /* regression */
    "#ef6c00", /* gate regression */
    "#bdbdbd", /* unscored */
    "#6a1b9a", /* failed tests */
    "#9e9e9e", /* no commit */
    "#00897b", /* kept */
    "#212121", /* error */
    "#fdd835", /* open */
    "#8d6e63", /* rebase conflict */
};

void gdn_report_html_escape(struct sbuf *out, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&':
			sbuf_adds(out, "&amp;");
			break;
		case '<':
			sbuf_adds(out, "&lt;");
			break;
		case '>':
			sbuf_adds(out, "&gt;");
			break;
		case '"':
			sbuf_adds(out, "&quot;");
			break;
		case '\'':
			sbuf_adds(out, "&#39;");
			break;
		default:
			if (c == '\n')
				sbuf_adds(out, "&#10;");
			else if (c < 0x20 || c == 0x7f)
				sbuf_addch(out, ' ');
			else
				sbuf_addch(out, c);
		}
	}
}

static void add_secs(struct sbuf *out, long long ms)
{
	sbuf_addf(out, "%lld.%03lld s", ms / 1000, ms % 1000);
}

static void add_num(struct sbuf *out, double v)
{
	if (isfinite(v))
		sbuf_addf(out, "%.6g", v);
	else
		sbuf_adds(out, "-");
}

static void add_pct(struct sbuf *out, double v)
{
	if (isfinite(v))
		sbuf_addf(out, "%+.2f%%", v);
	else
		sbuf_adds(out, "-");
}

static void add_short(struct sbuf *out, const char *commit)
{
	sbuf_addf(out, "%.12s", commit ? commit : "-");
}

static void add_delta(struct sbuf *out, const struct gdn_report_delta *d)
{
	if (d->name)
		sbuf_addf(out, "%s %s %+.3f ms", d->kind, d->name, d->delta_ms);
	else
		sbuf_addf(out, "%s %+.3f ms", d->kind, d->delta_ms);
}

/*
 * The champion at the end of the run: its last promotion, else the
 * state's. Its commit is named as the branch and refs/gdnctl/champion/RUN
 * hold it: the commit that stamped its running-log entry, when there is
 * one, as the promotions name it.
 */
static bool final_champion(const struct gdn_report *r, const char **commit, double *value)
{
	/* workers: the last promotion, which need not be the last iteration's */
	for (size_t k = r->nr_promotions; gdn_report_parallel(r) && k > 0; k--) {
		const struct gdn_report_promotion *p = &r->promotions[k - 1];

		for (size_t i = 0; i < r->nr; i++) {
			const struct gdn_report_iter *it = &r->v[i];

			if (it->iteration == p->iteration && it->has_metric &&
			    it->outcome == GDN_REPORT_PROMOTED) {
				*commit = it->stamped ? it->stamped : it->commit;
				*value = it->metric;
				return true;
			}
		}
	}
	for (size_t i = r->nr; i > 0; i--) {
		const struct gdn_report_iter *it = &r->v[i - 1];

		if ((it->outcome == GDN_REPORT_PROMOTED || it->outcome == GDN_REPORT_BASELINE) &&
		    it->has_metric) {
			*commit = it->stamped ? it->stamped : it->commit;
			*value = it->metric;
			return true;
		}
	}
	*commit = r->state_champion;
	*value = r->state_champion_value;
	return r->state_champion != NULL;
}

/* A figure of the headline: four significant digits. */
static void add_short_num(struct sbuf *out, double v)
{
	sbuf_addf(out, "%.4g", v);
}

void gdn_report_headline(const struct gdn_report *r, struct sbuf *out)
{
	const struct gdn_report_totals *t = &r->totals;
	const char *ccommit = NULL;
	double cvalue = NAN;
	bool champ = final_champion(r, &ccommit, &cvalue);

	if (r->metric && champ && isfinite(r->baseline) && isfinite(cvalue)) {
		double ratio = r->baseline != 0 ? cvalue / r->baseline : NAN;

		sbuf_adds(out, "baseline ");
		add_short_num(out, r->baseline);
		sbuf_adds(out, " -> ");
		add_short_num(out, cvalue);
		if (isfinite(ratio) && ratio > 0)
			sbuf_addf(out, ratio >= 100 ? " (x%.0f)" : " (x%.3g)", ratio);
		sbuf_adds(out, " in ");
	}
	sbuf_addf(out, "%ld iteration%s: %ld kept, %ld reverted", t->iterations,
		  t->iterations == 1 ? "" : "s", t->iters_kept, t->iters_reverted);
	if (t->iters_no_commit)
		sbuf_addf(out, ", %ld without a commit", t->iters_no_commit);
	if (t->iters_conflicted)
		sbuf_addf(out, ", %ld in conflict", t->iters_conflicted);
	if (t->iters_failed)
		sbuf_addf(out, ", %ld failed", t->iters_failed);
	sbuf_adds(out, ", ");
	gdn_loop_add_duration(out, t->active_ms);
}

const struct gdn_enum gdn_report_format_enum[] = {
    {"text", GDN_REPORT_FORMAT_TEXT, "the plain-text summary (the HTML page written to --output)"},
    {"html", GDN_REPORT_FORMAT_HTML, "the HTML page on standard output, no file written"},
    {"json", GDN_REPORT_FORMAT_JSON, "a JSON document (the HTML page written to --output)"},
    GDN_ENUM_END,
};

/* ---- text ---- */

/* A fraction as a percentage with one decimal ("-" when unknown). */
static void add_fraction(struct sbuf *out, double f)
{
	if (isfinite(f))
		sbuf_addf(out, "%.1f%%", f * 100);
	else
		sbuf_adds(out, "-");
}

/* The sums of all workers' lanes. */
static void lanes_total(const struct gdn_report *r, struct gdn_report_lane *all)
{
	memset(all, 0, sizeof(*all));
	for (size_t i = 0; i < r->nr_lanes; i++) {
		const struct gdn_report_lane *l = &r->lanes[i];

		all->iterations += l->iterations;
		all->promotions += l->promotions;
		all->agent_ms = gdn_add_sat_i64(all->agent_ms, l->agent_ms);
		all->validation_ms = gdn_add_sat_i64(all->validation_ms, l->validation_ms);
		all->busy_ms = gdn_add_sat_i64(all->busy_ms, l->busy_ms);
		all->idle_ms = gdn_add_sat_i64(all->idle_ms, l->idle_ms);
	}
	all->busy = r->busy;
	all->accel_busy = r->accel_busy;
}

static void text_lane_row(struct sbuf *out, const char *name, const struct gdn_report_lane *l)
{
	struct sbuf a = SBUF_INIT, v = SBUF_INIT, i = SBUF_INIT, b = SBUF_INIT, x = SBUF_INIT;

	add_secs(&a, l->agent_ms);
	add_secs(&v, l->validation_ms);
	add_secs(&i, l->idle_ms);
	add_fraction(&b, l->busy);
	add_fraction(&x, l->accel_busy);
	sbuf_addf(out, "%6s  %10ld  %12s  %12s  %12s  %6s  %10s  %10ld\n", name, l->iterations,
		  a.buf, v.buf, i.buf, b.buf, x.buf, l->promotions);
	sbuf_release(&a);
	sbuf_release(&v);
	sbuf_release(&i);
	sbuf_release(&b);
	sbuf_release(&x);
}

/* A row per lane, named `prefix` and its number (a worker's, an agent's "a", a target's "t"). */
static void text_lane_rows(struct sbuf *out, const char *prefix, const struct gdn_report_lane *v,
			   size_t nr)
{
	for (size_t k = 0; k < nr; k++) {
		char name[24];

		snprintf(name, sizeof(name), "%s%ld", prefix, v[k].worker);
		text_lane_row(out, name, &v[k]);
	}
}

/* Workers: one lane per worker, then the promotions in their order. */
static void text_lanes(const struct gdn_report *r, struct sbuf *out)
{
	struct gdn_report_lane all;

	sbuf_addf(out, "workers: %ld, active time ", r->workers);
	add_secs(out, r->totals.active_ms);
	sbuf_adds(out, "; busy ");
	add_fraction(out, r->busy);
	sbuf_adds(out, " (agent + validation), accelerators busy ");
	add_fraction(out, r->accel_busy);
	sbuf_adds(out, " (validation)\n");
	sbuf_addf(out, "%6s  %10s  %12s  %12s  %12s  %6s  %10s  %10s\n", "worker", "iterations",
		  "agent", "validation", "idle", "busy", "accel busy", "promotions");
	text_lane_rows(out, "", r->lanes, r->nr_lanes);
	lanes_total(r, &all);
	text_lane_row(out, "all", &all);
	if (r->nr_alanes) /* --targets: the agents' time by agent */
		sbuf_addf(out, "%6s  %10s  %12s  %12s  %12s  %6s  %10s  %10s\n", "agent", "",
			  "agent", "", "idle", "busy", "", "");
	text_lane_rows(out, "a", r->alanes, r->nr_alanes);
	if (r->nr_tlanes) /* --targets: the validations by target */
		sbuf_addf(out, "%6s  %10s  %12s  %12s  %12s  %6s  %10s  %10s\n", "target", "", "",
			  "validation", "idle", "busy", "", "");
	text_lane_rows(out, "t", r->tlanes, r->nr_tlanes);
	if (!r->nr_promotions)
		return;
	sbuf_adds(out, "promotions on the champion line, in order:\n");
	for (size_t k = 0; k < r->nr_promotions; k++) {
		const struct gdn_report_promotion *p = &r->promotions[k];

		sbuf_addf(out, "%6ld  iteration %ld by worker %ld at ", p->order, p->iteration,
			  p->worker);
		add_secs(out, p->at_ms);
		sbuf_adds(out, ": champion ");
		if (isfinite(p->metric)) { /* without a metric, its commit only */
			add_num(out, p->metric);
			sbuf_adds(out, " @ ");
		}
		add_short(out, p->champion);
		sbuf_addch(out, '\n');
	}
}

/* Journal text for a terminal: control characters (escape sequences) become '?'. */
static void add_clean(struct sbuf *out, const char *s)
{
	for (; s && *s; s++)
		sbuf_addch(out, (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s);
}

/* The delta against the champion; with --perf-ab, its interval: "+8.10% [+6.00, +10.20]". */
static void add_text_delta(struct sbuf *out, const struct gdn_report_iter *it)
{
	add_pct(out, it->delta_pct);
	if (it->has_ci && isfinite(it->delta_pct))
		sbuf_addf(out, " [%+.2f, %+.2f]", it->ci_low_pct, it->ci_high_pct);
	if (it->has_verified) /* loop verify */
		sbuf_addf(
		    out, " (vs the baseline: claimed %+.2f%%, verified %+.2f%% [%+.2f, %+.2f])",
		    it->claimed_pct, it->verified_pct, it->verified_lo_pct, it->verified_hi_pct);
}

void gdn_report_render_text(const struct gdn_report *r, struct sbuf *out)
{
	const struct gdn_report_totals *t = &r->totals;
	const char *ccommit = NULL;
	double cvalue = NAN;
	bool champ = final_champion(r, &ccommit, &cvalue);
	int dw = 10;

	sbuf_adds(out, "run ");
	add_clean(out, r->run_id ? r->run_id : "-");
	sbuf_addf(out, ": %ld iteration%s, ", t->iterations, t->iterations == 1 ? "" : "s");
	add_clean(out, r->end_reason ? r->end_reason : "not ended");
	if (r->has_exit)
		sbuf_addf(out, ", exit %d", r->exit_code);
	sbuf_addch(out, '\n');
	gdn_report_headline(r, out);
	if (t->resumes) {
		sbuf_addf(out, " (resumed %ld time%s: ", t->resumes, t->resumes == 1 ? "" : "s");
		gdn_loop_add_duration(out, t->idle_ms);
		sbuf_adds(out, " idle not counted)");
	}
	sbuf_addch(out, '\n');
	if (r->metric) {
		sbuf_adds(out, "metric ");
		add_clean(out, r->metric);
		sbuf_addf(out, " (%s is better)", r->lower_is_better ? "lower" : "higher");
		if (champ) {
			sbuf_adds(out, ", champion ");
			add_num(out, cvalue);
			sbuf_adds(out, " @ ");
			add_short(out, ccommit);
		}
		sbuf_addch(out, '\n');
	}
	/* the delta column widens for the A/B intervals, one blank before the widest */
	for (size_t i = 0; i < r->nr; i++) {
		struct sbuf d = SBUF_INIT;

		add_text_delta(&d, &r->v[i]);
		if (r->v[i].has_ci && d.len + 1 > (size_t)dw)
			dw = (int)d.len + 1;
		sbuf_release(&d);
	}
	sbuf_addf(out, "%5s  ", "iter");
	if (gdn_report_parallel(r))
		sbuf_addf(out, "%6s  ", "worker");
	sbuf_addf(out, "%-16s %12s %*s  %-12s  %s\n", "decision", "metric", dw, "delta", "commit",
		  "hypothesis");
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_report_iter *it = &r->v[i];
		struct sbuf m = SBUF_INIT, d = SBUF_INIT, c = SBUF_INIT;

		add_num(&m, it->has_metric ? it->metric : NAN);
		add_text_delta(&d, it);
		add_short(&c, it->commit);
		sbuf_addf(out, "%5ld  ", it->iteration);
		if (gdn_report_parallel(r))
			sbuf_addf(out, "%6ld  ", it->worker);
		sbuf_addf(out, "%-16s %12s %*s  %-12s  %s\n", gdn_report_outcome_label(it->outcome),
			  m.buf, dw, d.buf, c.buf, it->hypothesis ? it->hypothesis : "");
		if (it->nr_deltas) {
			sbuf_adds(out, "       trace:");
			for (size_t k = 0; k < it->nr_deltas; k++) {
				sbuf_adds(out, k ? ", " : " ");
				add_delta(out, &it->deltas[k]);
			}
			sbuf_addch(out, '\n');
		}
		if (it->trace_path)
			sbuf_addf(out, "       trace file: %s (%s%s%s)\n",
				  it->trace_file ? it->trace_file : it->trace_path,
				  it->trace_source, it->trace_origin ? " " : "",
				  it->trace_origin ? it->trace_origin : "");
		else if (it->trace_reason)
			sbuf_addf(out, "       no trace: %s\n", it->trace_reason);
		sbuf_release(&m);
		sbuf_release(&d);
		sbuf_release(&c);
	}
	sbuf_adds(out, "totals: time in agent ");
	add_secs(out, t->agent_ms);
	sbuf_adds(out, ", time in validation ");
	add_secs(out, t->validation_ms);
	sbuf_addf(out, ", commits kept %ld, commits reverted %ld, failures %ld, promoted %ld",
		  t->commits_kept, t->commits_reverted, t->failures, t->promoted);
	sbuf_adds(out, ", wall ");
	add_secs(out, t->wall_ms);
	sbuf_addch(out, '\n');
	if (t->usage_iterations > 0) {
		sbuf_addf(out, "usage: %lld token%s (input %lld, output %lld) in %ld iteration%s",
			  t->tokens, t->tokens == 1 ? "" : "s", t->input_tokens, t->output_tokens,
			  t->usage_iterations, t->usage_iterations == 1 ? "" : "s");
		if (t->cost_usd >= 0)
			sbuf_addf(out, ", $%.4f", t->cost_usd);
		if (t->promoted > 0) {
			sbuf_addf(out, "; per kept speed-up %lld token%s", t->tokens / t->promoted,
				  t->tokens / t->promoted == 1 ? "" : "s");
			if (t->cost_usd >= 0)
				sbuf_addf(out, ", $%.4f", t->cost_usd / (double)t->promoted);
		}
		sbuf_addch(out, '\n');
	}
	if (gdn_report_parallel(r))
		text_lanes(r, out);
}

/*
 * The run's usage figures, or NULL when the agent reported none:
 * totals, and per kept speed-up (promoted decisions; null when none).
 */
static json_t *usage_json(const struct gdn_report_totals *t)
{
	json_t *u;

	if (t->usage_iterations <= 0)
		return NULL;
	u = json_pack("{sIsIsIsI}", "iterations", (json_int_t)t->usage_iterations, "input_tokens",
		      (json_int_t)t->input_tokens, "output_tokens", (json_int_t)t->output_tokens,
		      "tokens", (json_int_t)t->tokens);
	json_object_set_new(u, "cost_usd", t->cost_usd >= 0 ? json_real(t->cost_usd) : json_null());
	json_object_set_new(u, "tokens_per_speedup",
			    t->promoted > 0 ? json_integer(t->tokens / t->promoted) : json_null());
	json_object_set_new(u, "cost_usd_per_speedup",
			    t->promoted > 0 && t->cost_usd >= 0
				? json_real(t->cost_usd / (double)t->promoted)
				: json_null());
	return u;
}

/* ---- JSON ---- */

static json_t *num_or_null(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static const char *span_kind_name(enum gdn_report_span_kind k)
{
	return k == GDN_REPORT_SPAN_AGENT ? "agent" : "validation";
}

static json_t *lane_json(const struct gdn_report_lane *l, bool spans)
{
	json_t *o = json_pack("{sIsIsIsIsIsIsososI}", "worker", (json_int_t)l->worker, "iterations",
			      (json_int_t)l->iterations, "agent_ms", (json_int_t)l->agent_ms,
			      "validation_ms", (json_int_t)l->validation_ms, "busy_ms",
			      (json_int_t)l->busy_ms, "idle_ms", (json_int_t)l->idle_ms,
			      "busy_fraction", num_or_null(l->busy), "accelerator_busy_fraction",
			      num_or_null(l->accel_busy), "promotions", (json_int_t)l->promotions);
	json_t *v;

	if (!spans)
		return o;
	v = json_array();
	for (size_t i = 0; i < l->nr; i++)
		json_array_append_new(v,
				      json_pack("{sssIsIsI}", "kind", span_kind_name(l->v[i].kind),
						"iteration", (json_int_t)l->v[i].iteration,
						"start_ms", (json_int_t)l->v[i].start_ms, "end_ms",
						(json_int_t)l->v[i].end_ms));
	json_object_set_new(o, "spans", v);
	return o;
}

/* --targets: the lanes of the targets or of the agents, each numbered by `key`. */
static json_t *extra_lanes_json(const struct gdn_report_lane *v, size_t nr, const char *key)
{
	json_t *a = json_array();

	for (size_t k = 0; k < nr; k++) {
		json_t *t = lane_json(&v[k], true);

		json_object_set(t, key, json_object_get(t, "worker"));
		json_object_del(t, "worker");
		json_array_append_new(a, t);
	}
	return a;
}

/*
 * Workers: {"count", "active_ms", "busy_fraction", "accelerator_busy_fraction",
 * "lanes": [{"worker", figures, "spans": [...]}], "all": {figures}}.
 */
static json_t *workers_json(const struct gdn_report *r)
{
	json_t *o = json_object(), *lanes = json_array();
	struct gdn_report_lane all;

	json_object_set_new(o, "count", json_integer(r->workers));
	json_object_set_new(o, "active_ms", json_integer(r->totals.active_ms));
	json_object_set_new(o, "busy_fraction", num_or_null(r->busy));
	json_object_set_new(o, "accelerator_busy_fraction", num_or_null(r->accel_busy));
	for (size_t k = 0; k < r->nr_lanes; k++)
		json_array_append_new(lanes, lane_json(&r->lanes[k], true));
	json_object_set_new(o, "lanes", lanes);
	if (r->nr_alanes) /* --targets: {"agent", figures, "spans"} */
		json_object_set_new(o, "agents",
				    extra_lanes_json(r->alanes, r->nr_alanes, "agent"));
	if (r->nr_tlanes) /* --targets: {"target", figures, "spans"} */
		json_object_set_new(o, "targets",
				    extra_lanes_json(r->tlanes, r->nr_tlanes, "target"));
	lanes_total(r, &all);
	json_object_set_new(o, "all", lane_json(&all, false));
	json_object_del(json_object_get(o, "all"), "worker");
	return o;
}

/*
 * The promotions in their order: [{"order", "iteration", "worker",
 * "champion", "metric", "at_ms", "best"}].
 */
static json_t *promotions_json(const struct gdn_report *r)
{
	json_t *v = json_array();

	for (size_t k = 0; k < r->nr_promotions; k++) {
		const struct gdn_report_promotion *p = &r->promotions[k];

		json_array_append_new(
		    v,
		    json_pack("{sIsIsIsososIsb}", "order", (json_int_t)p->order, "iteration",
			      (json_int_t)p->iteration, "worker", (json_int_t)p->worker, "champion",
			      gdn_json_string_lossy(p->champion), "metric", num_or_null(p->metric),
			      "at_ms", (json_int_t)p->at_ms, "best", p->best));
	}
	return v;
}

static json_t *iter_json(const struct gdn_report *r, const struct gdn_report_iter *it)
{
	json_t *o = json_object(), *deltas = json_array();

	json_object_set_new(o, "iteration", json_integer(it->iteration));
	if (gdn_report_parallel(r))
		json_object_set_new(o, "worker", json_integer(it->worker));
	json_object_set_new(o, "decision", json_string(gdn_report_outcome_name(it->outcome)));
	json_object_set_new(o, "perf_decision", gdn_json_string_lossy(it->perf_decision));
	json_object_set_new(o, "commit", gdn_json_string_lossy(it->commit));
	json_object_set_new(o, "commits", json_integer(it->commits));
	json_object_set_new(o, "kept", json_integer(it->kept));
	json_object_set_new(o, "reverted", json_boolean(it->reverted));
	json_object_set_new(o, "discarded_ref", gdn_json_string_lossy(it->discarded_ref));
	json_object_set_new(o, "metric", num_or_null(it->has_metric ? it->metric : NAN));
	json_object_set_new(o, "champion", num_or_null(it->champion_before));
	json_object_set_new(o, "champion_after", num_or_null(it->champion_after));
	json_object_set_new(o, "delta_pct", num_or_null(it->delta_pct));
	if (it->has_ci)
		json_object_set_new(
		    o, "ab",
		    json_pack("{s:o, s:o, s:o, s:I}", "ci_low_pct", num_or_null(it->ci_low_pct),
			      "ci_high_pct", num_or_null(it->ci_high_pct), "confidence",
			      num_or_null(it->ci_confidence), "pairs", (json_int_t)it->ab_pairs));
	if (it->has_verified) /* loop verify */
		json_object_set_new(o, "verified",
				    json_pack("{s:o, s:o, s:o, s:o}", "claimed_pct",
					      num_or_null(it->claimed_pct), "verified_pct",
					      num_or_null(it->verified_pct), "ci_low_pct",
					      num_or_null(it->verified_lo_pct), "ci_high_pct",
					      num_or_null(it->verified_hi_pct)));
	json_object_set_new(o, "agent_ms", json_integer(it->agent_ms));
	json_object_set_new(o, "validation_ms", json_integer(it->validation_ms));
	if (it->has_usage) {
		json_object_set_new(o, "tokens", json_integer(it->tokens));
		json_object_set_new(o, "cost_usd",
				    it->cost_usd >= 0 ? json_real(it->cost_usd) : json_null());
	}
	json_object_set_new(o, "hypothesis", gdn_json_string_lossy(it->hypothesis));
	json_object_set_new(o, "reason", gdn_json_string_lossy(it->reason));
	json_object_set_new(o, "reason_text", gdn_json_string_lossy(it->reason_text));
	for (size_t k = 0; k < it->nr_deltas; k++) {
		const struct gdn_report_delta *d = &it->deltas[k];

		json_array_append_new(deltas,
				      json_pack("{sssosfsfsf}", "kind", d->kind, "name",
						gdn_json_string_lossy(d->name), "candidate_ms",
						d->candidate_ms, "champion_ms", d->champion_ms,
						"delta_ms", d->delta_ms));
	}
	json_object_set_new(o, "trace_deltas", deltas);
	if (it->trace_path || it->trace_reason)
		json_object_set_new(o, "trace",
				    json_pack("{s:o, s:o, s:o, s:o, s:o}", "source",
					      gdn_json_string_lossy(it->trace_source), "path",
					      gdn_json_string_lossy(it->trace_path), "file",
					      gdn_json_string_lossy(it->trace_file), "origin",
					      gdn_json_string_lossy(it->trace_origin), "reason",
					      gdn_json_string_lossy(it->trace_reason)));
	else
		json_object_set_new(o, "trace", json_null());
	return o;
}

json_t *gdn_report_json(const struct gdn_report *r)
{
	const struct gdn_report_totals *t = &r->totals;
	const char *ccommit = NULL;
	double cvalue = NAN;
	bool champ = final_champion(r, &ccommit, &cvalue);
	json_t *doc = gdn_json_doc(GDN_REPORT_SCHEMA), *run = json_object(), *runs = json_array();
	json_t *iters = json_array();

	json_object_set_new(run, "id", gdn_json_string_lossy(r->run_id));
	json_object_set_new(run, "workdir", gdn_json_string_lossy(r->workdir));
	json_object_set_new(run, "branch", gdn_json_string_lossy(r->branch));
	json_object_set_new(run, "head", gdn_json_string_lossy(r->start_head));
	json_object_set_new(run, "started", gdn_json_string_lossy(r->started));
	json_object_set_new(run, "ended", gdn_json_string_lossy(r->ended));
	json_object_set_new(run, "planned_iterations", json_integer(r->planned));
	json_object_set_new(run, "end_reason", gdn_json_string_lossy(r->end_reason));
	json_object_set_new(run, "exit_code",
			    r->has_exit ? json_integer(r->exit_code) : json_null());
	json_object_set_new(run, "torn_last_line", json_boolean(r->torn_last_line));
	json_object_set_new(doc, "run", run);
	for (size_t i = 0; i < r->runs.nr; i++)
		json_array_append_new(runs, gdn_json_string_lossy(r->runs.v[i]));
	json_object_set_new(doc, "runs", runs);
	json_object_set_new(doc, "metric", gdn_json_string_lossy(r->metric));
	json_object_set_new(doc, "direction",
			    r->metric ? json_string(r->lower_is_better ? "lower" : "higher")
				      : json_null());
	json_object_set_new(
	    doc, "champion",
	    champ ? json_pack("{sosf}", "commit", gdn_json_string_lossy(ccommit), "value", cvalue)
		  : json_null());
	for (size_t i = 0; i < r->nr; i++)
		json_array_append_new(iters, iter_json(r, &r->v[i]));
	json_object_set_new(doc, "iterations", iters);
	{
		struct sbuf h = SBUF_INIT;

		gdn_report_headline(r, &h);
		json_object_set_new(doc, "headline", gdn_json_string_lossy(h.buf));
		sbuf_release(&h);
	}
	json_object_set_new(
	    doc, "totals",
	    json_pack("{sIsIsIsIsIsIsIsI}", "iterations", (json_int_t)t->iterations, "agent_ms",
		      (json_int_t)t->agent_ms, "validation_ms", (json_int_t)t->validation_ms,
		      "wall_ms", (json_int_t)t->wall_ms, "commits_kept",
		      (json_int_t)t->commits_kept, "commits_reverted",
		      (json_int_t)t->commits_reverted, "failures", (json_int_t)t->failures,
		      "promoted", (json_int_t)t->promoted));
	json_object_set_new(json_object_get(doc, "totals"), "active_ms",
			    json_integer(t->active_ms));
	json_object_set_new(json_object_get(doc, "totals"), "idle_ms", json_integer(t->idle_ms));
	if (t->usage_iterations > 0)
		json_object_set_new(doc, "usage", usage_json(t));
	json_object_set_new(json_object_get(doc, "totals"), "resumes", json_integer(t->resumes));
	json_object_set_new(json_object_get(doc, "totals"), "iterations_kept",
			    json_integer(t->iters_kept));
	json_object_set_new(json_object_get(doc, "totals"), "iterations_reverted",
			    json_integer(t->iters_reverted));
	if (gdn_report_parallel(r)) {
		json_object_set_new(json_object_get(doc, "totals"), "iterations_conflicted",
				    json_integer(t->iters_conflicted));
		json_object_set_new(doc, "workers", workers_json(r));
		json_object_set_new(doc, "promotions", promotions_json(r));
	}
	return doc;
}

/* ---- HTML ---- */

#define CHART_W	 900.0
#define CHART_H	 380.0
#define MARGIN_L 80.0
#define MARGIN_R 24.0
#define MARGIN_T 20.0
#define MARGIN_B 50.0

/* the metric at an improvement of pct over the champion c */
static double at_improvement(const struct gdn_report *r, double c, double pct)
{
	return r->lower_is_better ? c / (1 + pct / 100) : c * (1 + pct / 100);
}

struct scale {
	double x0, x1, y0, y1;
	bool log; /* the y axis is logarithmic */
};

static double sx(const struct scale *s, double x)
{
	return MARGIN_L + (x - s->x0) / (s->x1 - s->x0) * (CHART_W - MARGIN_L - MARGIN_R);
}

static double sy(const struct scale *s, double y)
{
	double t;

	if (s->log)
		t = (log10(y > s->y0 ? y : s->y0) - log10(s->y0)) / (log10(s->y1) - log10(s->y0));
	else
		t = (y - s->y0) / (s->y1 - s->y0);
	return CHART_H - MARGIN_B - t * (CHART_H - MARGIN_T - MARGIN_B);
}

static void widen(double *lo, double *hi, double v)
{
	if (!isfinite(v))
		return;
	if (!isfinite(*lo) || v < *lo)
		*lo = v;
	if (!isfinite(*hi) || v > *hi)
		*hi = v;
}

/* 1, 2 or 5 times a power of ten: the round step nearest above raw. */
static double nice_step(double raw)
{
	double e = pow(10, floor(log10(raw))), f = raw / e;

	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
}

size_t gdn_report_ticks(double lo, double hi, bool log, double *ticks, size_t max)
{
	static const double mant[] = {1, 2, 5};
	size_t n = 0;

	if (!isfinite(lo) || !isfinite(hi) || !(hi > lo) || !max)
		return 0;
	if (log) {
		int d0, d1;
		bool all;

		if (lo <= 0)
			return 0;
		d0 = (int)floor(log10(lo));
		d1 = (int)ceil(log10(hi));
		all = d1 - d0 <= 3; /* 1-2-5 in a few decades, powers of ten beyond */
		for (int d = d0; d <= d1; d++)
			for (size_t k = 0; k < ARRAY_SIZE(mant); k++) {
				double v = mant[k] * pow(10, d);

				if ((k && !all) || v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9))
					continue;
				if (n < max)
					ticks[n++] = v;
			}
		return n;
	}
	{
		double step = nice_step((hi - lo) / 5);
		double k0 = ceil(lo / step - 1e-9);

		for (double k = k0; (k * step) <= hi + step * 1e-9 && n < max; k++)
			ticks[n++] = fabs(k) < 0.5 ? 0.0 : k * step;
	}
	return n;
}

/* The largest 1-2-5 value <= v (up: the smallest >= v), for a log axis's ends. */
static double round125(double v, bool up)
{
	double e = pow(10, floor(log10(v))), f = v / e;

	if (up)
		return (f <= 1 + 1e-9 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * e;
	return (f >= 5 ? 5 : f >= 2 ? 2 : 1) * e;
}

static void chart_scale(const struct gdn_report *r, struct scale *s)
{
	double lo = NAN, hi = NAN, pad, step;

	s->x0 = r->nr ? (double)r->v[0].iteration : 0;
	s->x1 = r->nr ? (double)r->v[r->nr - 1].iteration : 1;
	if (s->x1 <= s->x0)
		s->x1 = s->x0 + 1;
	pad = (s->x1 - s->x0) * 0.04;
	s->x0 -= pad;
	s->x1 += pad;
	for (size_t i = 0; i < r->nr; i++) {
		widen(&lo, &hi, r->v[i].has_metric ? r->v[i].metric : NAN);
		widen(&lo, &hi, r->v[i].champion_before);
		widen(&lo, &hi, r->v[i].champion_after);
		if (r->v[i].has_ci && isfinite(r->v[i].champion_before)) {
			widen(&lo, &hi,
			      at_improvement(r, r->v[i].champion_before, r->v[i].ci_low_pct));
			widen(&lo, &hi,
			      at_improvement(r, r->v[i].champion_before, r->v[i].ci_high_pct));
		}
	}
	if (!isfinite(lo)) {
		lo = 0;
		hi = 1;
	}
	s->log = lo > 0 && hi / lo > GDN_REPORT_LOG_RATIO;
	if (s->log) {
		s->y0 = round125(lo, false);
		s->y1 = round125(hi, true);
		if (lo < s->y0 * 1.1) /* room under the lowest point, above the highest */
			s->y0 = round125(lo * 0.9, false);
		if (hi > s->y1 / 1.1)
			s->y1 = round125(hi * 1.1, true);
		return;
	}
	/* round ends, a quarter step of room beyond the points, no negative axis for a positive
	 * metric */
	step = nice_step(hi > lo ? (hi - lo) / 5 : (fabs(lo) > 0 ? fabs(lo) * 0.05 : 0.2));
	s->y0 = floor((lo - step * 0.25) / step) * step;
	if (lo >= 0 && s->y0 < 0)
		s->y0 = 0;
	s->y1 = ceil((hi + step * 0.25) / step) * step;
	if (s->y1 <= s->y0)
		s->y1 = s->y0 + step;
}

/* Where a point sits: its metric, else the champion of the moment, else the bottom. */
static double point_y(const struct gdn_report_iter *it, const struct scale *s)
{
	if (it->has_metric)
		return it->metric;
	if (isfinite(it->champion_before))
		return it->champion_before;
	return s->y0;
}

static void html_title(struct sbuf *out, const struct gdn_report *r,
		       const struct gdn_report_iter *it)
{
	struct sbuf t = SBUF_INIT;

	sbuf_addf(&t, "iteration %ld\ncommit ", it->iteration);
	add_short(&t, it->commit);
	sbuf_addf(&t, "\ndecision: %s", gdn_report_outcome_label(it->outcome));
	if (r->metric) {
		sbuf_addf(&t, "\n%s: ", r->metric);
		add_num(&t, it->has_metric ? it->metric : NAN);
		if (isfinite(it->delta_pct)) {
			sbuf_adds(&t, " (");
			add_pct(&t, it->delta_pct);
			sbuf_adds(&t, " vs champion ");
			add_num(&t, it->champion_before);
			sbuf_adds(&t, ")");
		}
	}
	if (it->hypothesis)
		sbuf_addf(&t, "\nhypothesis: %s", it->hypothesis);
	if (it->reason_text)
		sbuf_addf(&t, "\nreason: %s", it->reason_text);
	sbuf_adds(out, "<title>");
	gdn_report_html_escape(out, t.buf);
	sbuf_adds(out, "</title>");
	sbuf_release(&t);
}

static void html_champion_line(struct sbuf *out, const struct gdn_report *r, const struct scale *s)
{
	struct sbuf d = SBUF_INIT;
	double cur = NAN;

	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_report_iter *it = &r->v[i];
		double x = sx(s, (double)it->iteration);

		if (!isfinite(cur)) {
			double start = isfinite(it->champion_before) ? it->champion_before
								     : it->champion_after;
			if (!isfinite(start))
				continue;
			cur = start;
			sbuf_addf(&d, "M%.1f %.1f", x, sy(s, cur));
		}
		sbuf_addf(&d, " H%.1f", x);
		if (isfinite(it->champion_after) && it->champion_after != cur) {
			cur = it->champion_after;
			sbuf_addf(&d, " V%.1f", sy(s, cur));
		}
	}
	if (d.len) {
		sbuf_addf(out,
			  "<path id=\"champion-line\" class=\"champion-line\" d=\"%s H%.1f\">"
			  "<title>champion (step line)</title></path>\n",
			  d.buf, sx(s, s->x1) - 4);
	}
	sbuf_release(&d);
}

static void html_axes(struct sbuf *out, const struct gdn_report *r, const struct scale *s)
{
	long first = r->nr ? r->v[0].iteration : 0, last = r->nr ? r->v[r->nr - 1].iteration : 1;
	long step =
	    (long)nice_step((double)(last - first) / 20 > 1 ? (double)(last - first) / 20 : 1);
	double bottom = CHART_H - MARGIN_B, ticks[64];
	size_t nticks;

	sbuf_addf(out,
		  "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n"
		  "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		  MARGIN_L, bottom, CHART_W - MARGIN_R, bottom, MARGIN_L, MARGIN_T, MARGIN_L,
		  bottom);
	for (long x = first; x <= last; x += step)
		sbuf_addf(out,
			  "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
			  "text-anchor=\"middle\">%ld</text>\n",
			  sx(s, (double)x), bottom + 18, x);
	nticks = gdn_report_ticks(s->y0, s->y1, s->log, ticks, ARRAY_SIZE(ticks));
	for (size_t k = 0; k < nticks; k++) {
		double v = ticks[k];
		struct sbuf label = SBUF_INIT;

		if (s->log) {
			sbuf_addf(&label, "%g", v);
		} else {
			double st = nticks > 1 ? ticks[1] - ticks[0] : 1;
			int decimals = st < 1 ? (int)ceil(-log10(st) - 1e-9) : 0;

			sbuf_addf(&label, "%.*f", decimals, v);
		}
		sbuf_addf(out,
			  "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			  "<text class=\"tick y-tick\" x=\"%.1f\" y=\"%.1f\" "
			  "text-anchor=\"end\">%s</text>\n",
			  MARGIN_L, sy(s, v), CHART_W - MARGIN_R, sy(s, v), MARGIN_L - 6,
			  sy(s, v) + 4, label.buf);
		sbuf_release(&label);
	}
	sbuf_addf(
	    out,
	    "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">iteration</text>\n",
	    (MARGIN_L + CHART_W - MARGIN_R) / 2, CHART_H - 10);
	sbuf_addf(out,
		  "<text class=\"label\" x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
		  "transform=\"rotate(-90 14 %.1f)\">",
		  (MARGIN_T + bottom) / 2, (MARGIN_T + bottom) / 2);
	gdn_report_html_escape(out, r->metric ? r->metric : "metric");
	if (s->log)
		sbuf_adds(out, " (log scale)");
	sbuf_adds(out, "</text>\n");
}

/* --perf-ab: the interval of each A/B decision, an error bar around its point */
static void html_error_bars(struct sbuf *out, const struct gdn_report *r, const struct scale *s)
{
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_report_iter *it = &r->v[i];
		double x, y0, y1;

		if (!it->has_ci || !it->has_metric || !isfinite(it->champion_before))
			continue;
		x = sx(s, (double)it->iteration);
		y0 = sy(s, at_improvement(r, it->champion_before, it->ci_low_pct));
		y1 = sy(s, at_improvement(r, it->champion_before, it->ci_high_pct));
		if (!isfinite(y0) || !isfinite(y1))
			continue;
		sbuf_addf(out,
			  "<path class=\"error-bar\" data-iteration=\"%ld\" "
			  "d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" stroke=\"#555\" "
			  "fill=\"none\"><title>%.4g%% interval [%+.2f%%, %+.2f%%] over %ld "
			  "A/B pairs</title></path>\n",
			  it->iteration, x, y0, y1, x - 5, y0, x + 5, x - 5, y1, x + 5,
			  it->ci_confidence * 100, it->ci_low_pct, it->ci_high_pct, it->ab_pairs);
	}
}

static void html_chart(struct sbuf *out, const struct gdn_report *r)
{
	struct scale s;

	chart_scale(r, &s);
	sbuf_addf(out,
		  "<svg id=\"metric-chart\" role=\"img\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
		  "height=\"%.0f\" data-scale=\"%s\">\n",
		  CHART_W, CHART_H, CHART_W, CHART_H, s.log ? "log" : "linear");
	html_axes(out, r, &s);
	html_champion_line(out, r, &s);
	html_error_bars(out, r, &s);
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_report_iter *it = &r->v[i];
		const char *name = gdn_report_outcome_name(it->outcome);
		double x = sx(&s, (double)it->iteration), y = sy(&s, point_y(it, &s));

		if (it->has_metric)
			sbuf_addf(out,
				  "<circle class=\"point decision-%s\" data-iteration=\"%ld\" "
				  "cx=\"%.1f\" cy=\"%.1f\" r=\"7\">",
				  name, it->iteration, x, y);
		else
			sbuf_addf(out,
				  "<rect class=\"point unmeasured decision-%s\" "
				  "data-iteration=\"%ld\" x=\"%.1f\" y=\"%.1f\" width=\"12\" "
				  "height=\"12\">",
				  name, it->iteration, x - 6, y - 6);
		html_title(out, r, it);
		sbuf_adds(out, it->has_metric ? "</circle>\n" : "</rect>\n");
	}
	/* workers: each promotion's order and worker, below right of its point */
	for (size_t k = 0; gdn_report_parallel(r) && k < r->nr_promotions; k++) {
		const struct gdn_report_promotion *p = &r->promotions[k];

		if (!isfinite(p->metric))
			continue;
		sbuf_addf(out,
			  "<text class=\"promotion-label\" data-order=\"%ld\" data-worker=\"%ld\" "
			  "data-iteration=\"%ld\" x=\"%.1f\" y=\"%.1f\">#%ld w%ld</text>\n",
			  p->order, p->worker, p->iteration, sx(&s, (double)p->iteration) + 6,
			  sy(&s, p->metric) + 20, p->order, p->worker);
	}
	/* the values, readable without hovering: above each measured point */
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_report_iter *it = &r->v[i];

		if (!it->has_metric)
			continue;
		sbuf_addf(out,
			  "<text class=\"value-label\" data-iteration=\"%ld\" x=\"%.1f\" "
			  "y=\"%.1f\" text-anchor=\"middle\">%.4g</text>\n",
			  it->iteration, sx(&s, (double)it->iteration), sy(&s, it->metric) - 11,
			  it->metric);
	}
	sbuf_adds(out, "</svg>\n");
}

static void html_legend(struct sbuf *out, const struct gdn_report *r)
{
	bool seen[GDN_REPORT_OUTCOME_NR] = {false};

	for (size_t i = 0; i < r->nr; i++)
		seen[r->v[i].outcome] = true;
	sbuf_adds(out, "<ul id=\"legend\" class=\"legend\">\n");
	sbuf_adds(out, "<li class=\"legend-item legend-champion\"><span class=\"swatch-line\">"
		       "</span>champion</li>\n");
	for (int o = 0; o < GDN_REPORT_OUTCOME_NR; o++) {
		/* the six the issue names always; the others when they occur */
		if (!seen[o] && o != GDN_REPORT_PROMOTED && o != GDN_REPORT_WITHIN &&
		    o != GDN_REPORT_REGRESSION && o != GDN_REPORT_FAILED_TESTS &&
		    o != GDN_REPORT_NO_COMMIT && o != GDN_REPORT_ERROR)
			continue;
		sbuf_addf(
		    out,
		    "<li class=\"legend-item decision-%s\"><span class=\"swatch\"></span>%s</li>\n",
		    gdn_report_outcome_name(o), gdn_report_outcome_label(o));
	}
	sbuf_adds(out, "</ul>\n");
}

static void html_td_ms(struct sbuf *out, long long ms)
{
	sbuf_adds(out, "<td class=\"num\">");
	add_secs(out, ms);
	sbuf_adds(out, "</td>");
}

/* A path in an href: unreserved characters and '/' kept, the rest %-escaped. */
static void add_href_path(struct sbuf *out, const char *s)
{
	for (const char *p = s; *p; p++) {
		unsigned char c = (unsigned char)*p;

		if (isalnum(c) || strchr("/._-~", c))
			sbuf_addch(out, (char)c);
		else
			sbuf_addf(out, "%%%02X", c);
	}
}

/*
 * The iteration's trace file (a link from where the page is written:
 * r->link_base, then the path under the log dir) or why there is none.
 */
static void html_trace_link(struct sbuf *out, const struct gdn_report *r,
			    const struct gdn_report_iter *it)
{
	if (it->trace_file) {
		sbuf_adds(out, "<div class=\"trace-file\"><a href=\"");
		if (r->link_base)
			add_href_path(out, r->link_base);
		add_href_path(out, it->trace_file);
		sbuf_adds(out, "\">trace</a> (");
		gdn_report_html_escape(out, it->trace_source);
		sbuf_adds(out, ")</div>");
	} else if (it->trace_path) {
		sbuf_adds(out, "<div class=\"trace-file\">trace: ");
		gdn_report_html_escape(out, it->trace_path);
		sbuf_adds(out, " (");
		gdn_report_html_escape(out, it->trace_source);
		sbuf_adds(out, ")</div>");
	} else if (it->trace_reason) {
		sbuf_adds(out, "<div class=\"trace-none\">no trace: ");
		gdn_report_html_escape(out, it->trace_reason);
		sbuf_adds(out, "</div>");
	}
}

static void html_table(struct sbuf *out, const struct gdn_report *r)
{
	struct sbuf t = SBUF_INIT;

	sbuf_adds(out, "<table id=\"iterations\">\n<thead><tr><th>iteration</th><th>decision</th>"
		       "<th>metric</th><th>delta</th><th>commit</th><th>hypothesis</th>"
		       "<th>top trace deltas vs champion (per step)</th><th>agent</th>"
		       "<th>validation</th><th>reason</th></tr></thead>\n<tbody>\n");
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_report_iter *it = &r->v[i];
		const char *name = gdn_report_outcome_name(it->outcome);

		sbuf_addf(
		    out,
		    "<tr class=\"iter-row decision-%s\" id=\"iter-%ld\"><td class=\"num\">%ld</td>"
		    "<td class=\"decision\"><span class=\"swatch\"></span>%s",
		    name, it->iteration, it->iteration, gdn_report_outcome_label(it->outcome));
		if (gdn_report_parallel(r))
			sbuf_addf(out, "<div class=\"worker\">worker %ld</div>", it->worker);
		sbuf_adds(out, "</td><td class=\"num metric\">");
		add_num(out, it->has_metric ? it->metric : NAN);
		sbuf_adds(out, "</td><td class=\"num delta\">");
		add_pct(out, it->delta_pct);
		if (it->has_verified) /* loop verify */
			sbuf_addf(out,
				  "<div class=\"verified\">vs the baseline: claimed %+.2f%%, "
				  "verified %+.2f%% [%+.2f, %+.2f]</div>",
				  it->claimed_pct, it->verified_pct, it->verified_lo_pct,
				  it->verified_hi_pct);
		sbuf_adds(out, "</td><td class=\"commit\"><code>");
		sbuf_reset(&t);
		add_short(&t, it->commit);
		gdn_report_html_escape(out, t.buf);
		sbuf_adds(out, "</code>");
		if ((it->reverted || it->kept_away) && it->discarded_ref) {
			sbuf_adds(out, "<div class=\"ref\">");
			gdn_report_html_escape(out, it->discarded_ref);
			sbuf_adds(out, "</div>");
		}
		sbuf_adds(out, "</td><td class=\"hypothesis\">");
		gdn_report_html_escape(out, it->hypothesis);
		sbuf_adds(out, "</td><td class=\"trace\">");
		for (size_t k = 0; k < it->nr_deltas; k++) {
			sbuf_reset(&t);
			add_delta(&t, &it->deltas[k]);
			sbuf_addf(out, "<div class=\"trace-delta %s\">",
				  it->deltas[k].delta_ms > 0 ? "worse-ms" : "better-ms");
			gdn_report_html_escape(out, t.buf);
			sbuf_adds(out, "</div>");
		}
		html_trace_link(out, r, it);
		sbuf_adds(out, "</td>");
		html_td_ms(out, it->agent_ms);
		html_td_ms(out, it->validation_ms);
		sbuf_adds(out, "<td class=\"reason\">");
		gdn_report_html_escape(out, it->reason_text);
		sbuf_adds(out, "</td></tr>\n");
	}
	sbuf_adds(out, "</tbody></table>\n");
	sbuf_release(&t);
}

static void html_total(struct sbuf *out, const char *id, const char *label, long long v, bool secs)
{
	sbuf_addf(out, "<dt>%s</dt><dd id=\"%s\" data-value=\"%lld\">", label, id, v);
	if (secs)
		add_secs(out, v);
	else
		sbuf_addf(out, "%lld", v);
	sbuf_adds(out, "</dd>\n");
}

static void html_totals(struct sbuf *out, const struct gdn_report *r)
{
	const struct gdn_report_totals *t = &r->totals;

	sbuf_adds(out, "<dl id=\"totals\">\n");
	html_total(out, "total-iterations", "iterations", t->iterations, false);
	html_total(out, "total-agent-ms", "time in agent", t->agent_ms, true);
	html_total(out, "total-validation-ms", "time in validation", t->validation_ms, true);
	html_total(out, "total-wall-ms", "wall time", t->wall_ms, true);
	html_total(out, "total-commits-kept", "commits kept", t->commits_kept, false);
	html_total(out, "total-commits-reverted", "commits reverted", t->commits_reverted, false);
	html_total(out, "total-failures", "failures", t->failures, false);
	html_total(out, "total-promoted", "promoted", t->promoted, false);
	if (t->usage_iterations > 0) {
		html_total(out, "total-tokens", "agent tokens", t->tokens, false);
		if (t->cost_usd >= 0)
			sbuf_addf(out, "<dt>agent cost</dt><dd id=\"total-cost-usd\">$%.4f</dd>\n",
				  t->cost_usd);
		if (t->promoted > 0)
			html_total(out, "tokens-per-speedup", "tokens per kept speed-up",
				   t->tokens / t->promoted, false);
		if (t->promoted > 0 && t->cost_usd >= 0)
			sbuf_addf(out,
				  "<dt>cost per kept speed-up</dt><dd id=\"cost-per-speedup\">"
				  "$%.4f</dd>\n",
				  t->cost_usd / (double)t->promoted);
	}
	sbuf_adds(out, "</dl>\n");
}

/* ---- HTML: the workers' lanes ---- */

#define LANES_W	      900.0
#define LANES_ML      80.0 /* the lane names */
#define LANES_MR      24.0
#define LANES_CHAMP_H 30.0 /* the champion line and its promotions */
#define LANES_ROW_H   22.0
#define LANES_ROW_GAP 8.0
#define LANES_AXIS_H  40.0
/* More promotions than this: their marks only, no rules across the lanes nor names. */
#define LANES_MAX_LABELS 40

struct lane_scale {
	double ms;	  /* the active time the width shows (> 0) */
	double div;	  /* ms per unit of the axis labels */
	const char *unit; /* "s", "min" or "h" */
};

static double lx(const struct lane_scale *s, long long ms)
{
	return LANES_ML + (double)ms / s->ms * (LANES_W - LANES_ML - LANES_MR);
}

static double lane_y(size_t k)
{
	return LANES_CHAMP_H + (double)k * (LANES_ROW_H + LANES_ROW_GAP);
}

static void html_lane_axis(struct sbuf *out, const struct lane_scale *s, double bottom)
{
	double units = s->ms / s->div, step = nice_step(units / 8 > 0 ? units / 8 : 1);

	sbuf_addf(out, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
		  LANES_ML, bottom, LANES_W - LANES_MR, bottom);
	for (int i = 0; step > 0 && i * step <= units + 1e-9; i++)
		sbuf_addf(out,
			  "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g %s"
			  "</text>\n",
			  lx(s, (long long)(i * step * s->div)), bottom + 16, i * step, s->unit);
	sbuf_addf(out,
		  "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">active time "
		  "since the start</text>\n",
		  (LANES_ML + LANES_W - LANES_MR) / 2, bottom + 34);
}

/* The champion line over the lanes: one mark per promotion, in order, with its worker. */
static void html_lane_promotions(struct sbuf *out, const struct gdn_report *r,
				 const struct lane_scale *s, double bottom)
{
	double y = LANES_CHAMP_H / 2;
	bool dense = r->nr_promotions > LANES_MAX_LABELS;

	sbuf_addf(
	    out,
	    "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">champion</text>\n"
	    "<line class=\"lane-champion\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
	    LANES_ML - 8, y + 4, LANES_ML, y, LANES_W - LANES_MR, y);
	for (size_t k = 0; k < r->nr_promotions; k++) {
		const struct gdn_report_promotion *p = &r->promotions[k];
		double x = lx(s, p->at_ms);
		struct sbuf c = SBUF_INIT;

		if (!dense) /* a rule down through the lanes, and the worker's name */
			sbuf_addf(out,
				  "<line class=\"promotion-rule\" x1=\"%.1f\" y1=\"%.1f\" "
				  "x2=\"%.1f\" y2=\"%.1f\"/>\n<text class=\"promotion-label\" "
				  "x=\"%.1f\" y=\"%.1f\">w%ld</text>\n",
				  x, y + 7, x, bottom, x + 9, y + 4, p->worker);
		add_short(&c, p->champion);
		sbuf_addf(
		    out,
		    "<path class=\"promotion-mark\" data-order=\"%ld\" data-worker=\"%ld\" "
		    "data-iteration=\"%ld\" d=\"M%.1f %.1fl7 7l-7 7l-7 -7z\"><title>promotion "
		    "%ld: iteration %ld by worker %ld at ",
		    p->order, p->worker, p->iteration, x, y - 7, p->order, p->iteration, p->worker);
		add_secs(out, p->at_ms);
		sbuf_adds(out, ", champion ");
		if (isfinite(p->metric)) {
			add_num(out, p->metric);
			sbuf_adds(out, " at ");
		}
		gdn_report_html_escape(out, c.buf);
		sbuf_adds(out, "</title></path>\n");
		sbuf_release(&c);
	}
}

/*
 * One lane: a worker's (agent, validation, idle) or, with --targets, a
 * target's (validations) or an agent's (agent spans). who: "worker",
 * "target" or "agent".
 */
static void html_lane_g(struct sbuf *out, const struct lane_scale *s,
			const struct gdn_report_lane *l, double y, const char *who)
{
	bool worker = !strcmp(who, "worker");

	sbuf_addf(out,
		  "<g class=\"%s%s\" data-%s=\"%ld\" data-busy=\"%.4f\" "
		  "data-accelerator-busy=\"%.4f\">\n"
		  "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s %ld"
		  "</text>\n<rect class=\"lane-idle\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		  "height=\"%.1f\"><title>%s %ld: idle ",
		  worker ? "" : who, worker ? "lane" : "-lane", who, l->worker,
		  isfinite(l->busy) ? l->busy : 0.0, isfinite(l->accel_busy) ? l->accel_busy : 0.0,
		  LANES_ML - 8, y + LANES_ROW_H / 2 + 4, who, l->worker, LANES_ML, y,
		  LANES_W - LANES_ML - LANES_MR, LANES_ROW_H, who, l->worker);
	add_secs(out, l->idle_ms);
	sbuf_adds(out, "</title></rect>\n");
	for (size_t i = 0; i < l->nr; i++) {
		const struct gdn_report_span *sp = &l->v[i];
		double x0 = lx(s, sp->start_ms), x1 = lx(s, sp->end_ms);
		const char *kind = span_kind_name(sp->kind);

		if (sp->end_ms <= sp->start_ms)
			continue;
		sbuf_addf(out,
			  "<rect class=\"span span-%s\" data-iteration=\"%ld\" x=\"%.2f\" "
			  "y=\"%.1f\" width=\"%.2f\" height=\"%.1f\"><title>%s %ld, "
			  "iteration %ld: %s ",
			  kind, sp->iteration, x0, y, x1 - x0 > 0.5 ? x1 - x0 : 0.5, LANES_ROW_H,
			  who, l->worker, sp->iteration, kind);
		add_secs(out, sp->end_ms - sp->start_ms);
		sbuf_adds(out, "</title></rect>\n");
	}
	sbuf_adds(out, "</g>\n");
}

static void html_lane_svg(struct sbuf *out, const struct gdn_report *r)
{
	struct lane_scale s = {(double)(r->totals.active_ms > 0 ? r->totals.active_ms : 1), 1000,
			       "s"};
	double bottom = lane_y(r->nr_lanes + r->nr_alanes + r->nr_tlanes) + 4,
	       h = bottom + LANES_AXIS_H;

	if (s.ms > 3 * 3600 * 1000.0)
		s.div = 3600 * 1000.0, s.unit = "h";
	else if (s.ms > 10 * 60 * 1000.0)
		s.div = 60 * 1000.0, s.unit = "min";
	sbuf_addf(out,
		  "<svg id=\"worker-lanes\" role=\"img\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
		  "height=\"%.0f\" data-active-ms=\"%lld\">\n",
		  LANES_W, h, LANES_W, h, r->totals.active_ms);
	for (size_t k = 0; k < r->nr_lanes; k++)
		html_lane_g(out, &s, &r->lanes[k], lane_y(k), "worker");
	for (size_t k = 0; k < r->nr_alanes; k++) /* --targets: the agents, below the workers */
		html_lane_g(out, &s, &r->alanes[k], lane_y(r->nr_lanes + k), "agent");
	for (size_t k = 0; k < r->nr_tlanes; k++) /* --targets: the targets, below the agents */
		html_lane_g(out, &s, &r->tlanes[k], lane_y(r->nr_lanes + r->nr_alanes + k),
			    "target");
	html_lane_promotions(out, r, &s, bottom);
	html_lane_axis(out, &s, bottom);
	sbuf_adds(out, "</svg>\n");
}

static void html_lane_row(struct sbuf *out, const char *cls, const char *name, long worker,
			  const struct gdn_report_lane *l)
{
	struct sbuf b = SBUF_INIT, x = SBUF_INIT;

	add_fraction(&b, l->busy);
	add_fraction(&x, l->accel_busy);
	sbuf_addf(out, "<tr class=\"%s\" data-worker=\"%ld\"><td>%s</td><td class=\"num\">%ld</td>",
		  cls, worker, name, l->iterations);
	html_td_ms(out, l->agent_ms);
	html_td_ms(out, l->validation_ms);
	html_td_ms(out, l->idle_ms);
	sbuf_addf(out,
		  "<td class=\"num busy\">%s</td><td class=\"num accelerator-busy\">%s</td>"
		  "<td class=\"num\">%ld</td></tr>\n",
		  b.buf, x.buf, l->promotions);
	sbuf_release(&b);
	sbuf_release(&x);
}

/* A table row per lane, of class `cls`, named `prefix` and its number. */
static void html_lane_rows(struct sbuf *out, const char *cls, const char *prefix,
			   const struct gdn_report_lane *v, size_t nr)
{
	for (size_t k = 0; k < nr; k++) {
		char name[24];

		snprintf(name, sizeof(name), "%s%ld", prefix, v[k].worker);
		html_lane_row(out, cls, name, v[k].worker, &v[k]);
	}
}

/* Workers: a timeline with one lane per worker, their figures, the promotions in order. */
static void html_lanes(struct sbuf *out, const struct gdn_report *r)
{
	struct gdn_report_lane all;

	sbuf_addf(out,
		  "<h2>workers</h2>\n<p class=\"lanes-note\">%ld workers. Each lane shows when its "
		  "worker's agent ran and when its validation ran (tests and profiles on its "
		  "accelerator); the rest is idle. Busy: (agent + validation) / active time; "
		  "accelerator busy: validation / active time. The diamonds are the promotions on "
		  "the champion line, in order, with the worker that made them.%s</p>\n",
		  r->workers,
		  r->nr_tlanes || r->nr_alanes
		      ? " With --targets, the lanes below the workers' show when each agent (a1, "
			"a2, ...) thought and the validations each target (t1, t2, ...) ran, "
			"whichever worker they came from."
		      : "");
	html_lane_svg(out, r);
	sbuf_adds(out, "<ul id=\"lane-legend\" class=\"legend\">\n"
		       "<li class=\"legend-item\"><span class=\"swatch agent\"></span>agent</li>\n"
		       "<li class=\"legend-item\"><span class=\"swatch validation\"></span>"
		       "validation</li>\n"
		       "<li class=\"legend-item\"><span class=\"swatch idle\"></span>idle</li>\n"
		       "<li class=\"legend-item\"><span class=\"swatch promotion\"></span>"
		       "promotion</li>\n</ul>\n");
	sbuf_adds(out, "<table id=\"lanes\">\n<thead><tr><th>worker</th><th>iterations</th>"
		       "<th>agent</th><th>validation</th><th>idle</th><th>busy</th>"
		       "<th>accelerator busy</th><th>promotions</th></tr></thead>\n<tbody>\n");
	html_lane_rows(out, "lane-row", "", r->lanes, r->nr_lanes);
	lanes_total(r, &all);
	html_lane_row(out, "lane-total", "all", 0, &all);
	/* --targets: when each agent thought, what each target validated */
	html_lane_rows(out, "agent-row", "a", r->alanes, r->nr_alanes);
	html_lane_rows(out, "target-row", "t", r->tlanes, r->nr_tlanes);
	sbuf_adds(out, "</tbody></table>\n");
	if (!r->nr_promotions)
		return;
	sbuf_adds(out, "<h2>promotions</h2>\n<ol id=\"promotions\">\n");
	for (size_t k = 0; k < r->nr_promotions; k++) {
		const struct gdn_report_promotion *p = &r->promotions[k];
		struct sbuf c = SBUF_INIT;

		add_short(&c, p->champion);
		sbuf_addf(out,
			  "<li class=\"promotion\" data-worker=\"%ld\" data-iteration=\"%ld\">"
			  "iteration %ld by worker %ld at ",
			  p->worker, p->iteration, p->iteration, p->worker);
		add_secs(out, p->at_ms);
		sbuf_adds(out, ": champion ");
		if (isfinite(p->metric)) {
			add_num(out, p->metric);
			sbuf_adds(out, " at ");
		}
		sbuf_adds(out, "<code>");
		gdn_report_html_escape(out, c.buf);
		sbuf_adds(out, "</code></li>\n");
		sbuf_release(&c);
	}
	sbuf_adds(out, "</ol>\n");
}

/* The lanes' colours and layout (workers only: a one-worker page is unchanged). */
static void html_lanes_style(struct sbuf *out)
{
	sbuf_adds(out,
		  ".span-agent{fill:#1e88e5}.span-validation{fill:#ef6c00}"
		  ".lane-idle{fill:#eceff1}\n"
		  ".promotion-mark{fill:#2e7d32;stroke:#fff;stroke-width:1}"
		  ".promotion-rule{stroke:#2e7d32;stroke-width:1;stroke-dasharray:3 3}"
		  ".lane-champion{stroke:#2e7d32;stroke-width:2}\n"
		  ".promotion-label{font-size:11px;fill:#2e7d32}"
		  "td.decision .worker{color:#777;font-size:11px}\n"
		  ".legend .swatch.agent{background:#1e88e5;border-radius:0}"
		  ".legend .swatch.validation{background:#ef6c00;border-radius:0}"
		  ".legend .swatch.idle{background:#eceff1;border-radius:0;border:1px solid #ccc}"
		  ".legend .swatch.promotion{background:#2e7d32;transform:rotate(45deg);"
		  "border-radius:0;width:9px;height:9px}\n"
		  "table#lanes{width:auto}\n");
}

static void html_style(struct sbuf *out, const struct gdn_report *r)
{
	sbuf_adds(
	    out,
	    "<style>\n"
	    "body{font-family:system-ui,sans-serif;margin:16px;color:#212121;background:#fff}\n"
	    /* no sideways scroll at 1000 px: long paths, names and refs break anywhere */
	    "p.run,p.metric,td.hypothesis,td.reason,td.trace,.ref{overflow-wrap:anywhere}\n"
	    "td.commit code{white-space:nowrap}\n"
	    ".headline{font-size:1.15em;font-weight:600}\n"
	    "h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.6em}\n"
	    "code{font-family:monospace}\n"
	    ".run{color:#555}\n"
	    "svg{border:1px solid #ddd;background:#fafafa;max-width:100%;height:auto}\n"
	    ".axis{stroke:#333;stroke-width:1}.grid{stroke:#e0e0e0;stroke-width:1}\n"
	    ".tick,.label{font-size:12px;fill:#444}.value-label{font-size:11px;fill:#212121}\n"
	    ".champion-line{fill:none;stroke:#2e7d32;stroke-width:2;stroke-dasharray:6 3}\n"
	    ".point{stroke:#fff;stroke-width:1.5}.point.unmeasured{stroke:#333}\n"
	    ".legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:14px}\n"
	    ".swatch{display:inline-block;width:12px;height:12px;border-radius:6px;"
	    "margin-right:5px;vertical-align:middle}\n"
	    ".swatch-line{display:inline-block;width:22px;border-top:2px dashed #2e7d32;"
	    "margin-right:5px;vertical-align:middle}\n"
	    "table{border-collapse:collapse;font-size:13px;width:100%}\n"
	    "th,td{border-bottom:1px solid #e0e0e0;padding:4px 8px;text-align:left;"
	    "vertical-align:top}\n"
	    "td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	    ".worse-ms{color:#c62828}.better-ms{color:#2e7d32}.ref{color:#777}\n"
	    "td.decision{white-space:nowrap}\n"
	    "td.reason{min-width:8em;max-width:20em}\n"
	    "td.hypothesis{min-width:8em}\n"
	    "dl{display:grid;grid-template-columns:max-content auto;gap:4px 16px}\n"
	    "dt{color:#555}dd{margin:0;font-variant-numeric:tabular-nums}\n");
	for (int o = 0; o < GDN_REPORT_OUTCOME_NR; o++) {
		if (o == GDN_REPORT_CONFLICT && !gdn_report_parallel(r))
			continue;
		sbuf_addf(out, ".point.decision-%s{fill:%s}.decision-%s .swatch{background:%s}\n",
			  gdn_report_outcome_name(o), outcome_colours[o],
			  gdn_report_outcome_name(o), outcome_colours[o]);
	}
	if (gdn_report_parallel(r))
		html_lanes_style(out);
	sbuf_adds(out, "</style>\n");
}

void gdn_report_render_html(const struct gdn_report *r, struct sbuf *out)
{
	const char *ccommit = NULL;
	double cvalue = NAN;
	bool champ = final_champion(r, &ccommit, &cvalue);

	sbuf_adds(out,
		  "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
		  "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		  "style-src 'unsafe-inline'\">\n"
		  "<meta name=\"generator\" content=\"gdnctl report\">\n<title>gdnctl report: ");
	gdn_report_html_escape(out, r->run_id);
	sbuf_adds(out, "</title>\n");
	html_style(out, r);
	sbuf_adds(out, "</head>\n<body>\n<h1>gdnctl loop report</h1>\n<p id=\"headline\" "
		       "class=\"headline\">");
	{
		struct sbuf h = SBUF_INIT;

		gdn_report_headline(r, &h);
		gdn_report_html_escape(out, h.buf);
		sbuf_release(&h);
	}
	sbuf_adds(out, "</p>\n<p class=\"run\">run <code id=\"run-id\">");
	gdn_report_html_escape(out, r->run_id);
	sbuf_adds(out, "</code>");
	if (r->branch) {
		sbuf_adds(out, " on branch <code>");
		gdn_report_html_escape(out, r->branch);
		sbuf_adds(out, "</code>");
	}
	if (r->workdir) {
		sbuf_adds(out, " in <code>");
		gdn_report_html_escape(out, r->workdir);
		sbuf_adds(out, "</code>");
	}
	sbuf_adds(out, "<br>");
	gdn_report_html_escape(out, r->started ? r->started : "?");
	sbuf_adds(out, " &ndash; ");
	gdn_report_html_escape(out, r->ended ? r->ended : "?");
	sbuf_addf(out, ", ran <span id=\"duration\" data-ms=\"%lld\">", r->totals.active_ms);
	{
		struct sbuf d = SBUF_INIT;

		gdn_loop_add_duration(&d, r->totals.active_ms);
		if (r->totals.resumes) {
			sbuf_addf(&d, " (resumed %ld time%s: ", r->totals.resumes,
				  r->totals.resumes == 1 ? "" : "s");
			gdn_loop_add_duration(&d, r->totals.idle_ms);
			sbuf_adds(&d, " idle not counted)");
		}
		gdn_report_html_escape(out, d.buf);
		sbuf_release(&d);
	}
	sbuf_adds(out, "</span>, ");
	gdn_report_html_escape(out, r->end_reason ? r->end_reason : "not ended");
	if (r->has_exit)
		sbuf_addf(out, ", exit %d", r->exit_code);
	sbuf_adds(out, "</p>\n<h2>metric per iteration</h2>\n<p class=\"metric\">");
	if (r->metric) {
		sbuf_adds(out, "<code id=\"metric-name\">");
		gdn_report_html_escape(out, r->metric);
		sbuf_addf(out, "</code> (%s is better)", r->lower_is_better ? "lower" : "higher");
		if (champ) {
			struct sbuf c = SBUF_INIT;

			sbuf_adds(out, "; champion ");
			add_num(out, cvalue);
			add_short(&c, ccommit);
			sbuf_adds(out, " at <code>");
			gdn_report_html_escape(out, c.buf);
			sbuf_adds(out, "</code>");
			sbuf_release(&c);
		}
	} else {
		sbuf_adds(out, "no performance decisions in this run: points sit at the bottom");
	}
	sbuf_adds(out, ". Each point shows its value; hover it for its commit and hypothesis; "
		       "squares were not measured.</p>\n");
	html_chart(out, r);
	html_legend(out, r);
	if (gdn_report_parallel(r))
		html_lanes(out, r);
	sbuf_adds(out, "<h2>iterations</h2>\n");
	html_table(out, r);
	sbuf_adds(out, "<h2>totals</h2>\n");
	html_totals(out, r);
	sbuf_adds(out, "</body>\n</html>\n");
}
