/*
 * The report's model: one run of the loop journal (loop.jsonl, events
 * written by src/loop/ (run.c, decide.c, gate.c, journal.c ...)), completed with the
 * trace figures of the performance state (perf_state.json).
 */
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/perf.h"
#include "gdnctl/report.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

static const char *const outcome_names[] = {
    "baseline", "promoted",	"within_band", "regression", "gate_regression",
    "unscored", "failed_tests", "no_commit",   "kept",	     "error",
    "open",	"conflict",
};
static const char *const outcome_labels[] = {
    "baseline", "promoted",	   "within band", "regression", "gate regression",
    "unscored", "failed tests",	   "no commit",	  "kept",	"error",
    "open",	"rebase conflict",
};

const char *gdn_report_outcome_name(enum gdn_report_outcome o)
{
	return o < GDN_REPORT_OUTCOME_NR ? outcome_names[o] : "open";
}

const char *gdn_report_outcome_label(enum gdn_report_outcome o)
{
	return o < GDN_REPORT_OUTCOME_NR ? outcome_labels[o] : "open";
}

void gdn_report_init(struct gdn_report *r)
{
	memset(r, 0, sizeof(*r));
	strvec_init(&r->runs);
	r->baseline = NAN;
	r->last_ts_ms = -1;
	r->workers = 1;
	r->busy = NAN;
	r->accel_busy = NAN;
}

static void iter_release(struct gdn_report_iter *it)
{
	free(it->commit);
	free(it->stamped);
	strvec_clear(&it->ids);
	free(it->discarded_ref);
	free(it->reason);
	free(it->reason_text);
	free(it->hypothesis);
	free(it->perf_decision);
	free(it->failure);
	free(it->trace_source);
	free(it->trace_path);
	free(it->trace_file);
	free(it->trace_origin);
	free(it->trace_reason);
	for (size_t i = 0; i < it->nr_deltas; i++)
		free(it->deltas[i].name);
}

static void iter_init(struct gdn_report_iter *it, long n)
{
	memset(it, 0, sizeof(*it));
	strvec_init(&it->ids);
	it->iteration = n;
	it->outcome = GDN_REPORT_OPEN;
	it->metric = NAN;
	it->champion_before = NAN;
	it->champion_after = NAN;
	it->delta_pct = NAN;
}

void gdn_report_release(struct gdn_report *r)
{
	for (size_t i = 0; i < r->nr; i++)
		iter_release(&r->v[i]);
	free(r->v);
	strvec_clear(&r->runs);
	free(r->run_id);
	free(r->workdir);
	free(r->branch);
	free(r->start_head);
	free(r->started);
	free(r->ended);
	free(r->end_reason);
	free(r->metric);
	free(r->state_champion);
	free(r->link_base);
	gdn_report_lanes_release(r);
	gdn_report_init(r);
}

static const char *str_of(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* A non-negative integer field (0 when absent, negative or not an integer). */
static long long count_of(json_t *o, const char *key);

/* A `usage` event: the iteration's and the run's token and cost figures. */
static void apply_usage(struct gdn_report *r, struct gdn_report_iter *it, json_t *o)
{
	struct gdn_report_totals *t = &r->totals;
	const json_t *c = json_object_get(o, "cost_usd");
	double cost = json_is_number(c) && json_number_value(c) >= 0 ? json_number_value(c) : -1;
	long long in = count_of(o, "input_tokens"), outn = count_of(o, "output_tokens");

	if (!it->has_usage)
		it->cost_usd = -1;
	it->has_usage = true;
	long long all = count_of(o, "tokens");

	if (all < in + outn)
		all = gdn_add_sat_i64(in, outn);
	it->tokens = gdn_add_sat_i64(it->tokens, all);
	if (cost >= 0)
		it->cost_usd = (it->cost_usd < 0 ? 0 : it->cost_usd) + cost;
	if (!t->usage_iterations)
		t->cost_usd = -1;
	t->usage_iterations++;
	t->input_tokens = gdn_add_sat_i64(t->input_tokens, in);
	t->output_tokens = gdn_add_sat_i64(t->output_tokens, outn);
	t->tokens = gdn_add_sat_i64(t->tokens, all);
	if (cost >= 0)
		t->cost_usd = (t->cost_usd < 0 ? 0 : t->cost_usd) + cost;
}

static long long count_of(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (long long)v : 0;
}

static void set_str(char **dst, const char *s)
{
	free(*dst);
	*dst = s ? xstrdup(s) : NULL;
}

/* A copy of untrusted text for display: control characters become spaces, capped. */
static char *clean_text(const char *s, size_t max)
{
	size_t n = strlen(s);
	char *t;

	if (n > max)
		n = max;
	t = xstrndup(s, n);
	for (char *p = t; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return t;
}

static struct gdn_report_iter *find_iter(struct gdn_report *r, long n)
{
	for (size_t i = r->nr; i > 0; i--)
		if (r->v[i - 1].iteration == n)
			return &r->v[i - 1];
	return NULL;
}

/* The record of iteration n, created (or, with `reset`, started afresh). */
static struct gdn_report_iter *get_iter(struct gdn_report *r, long n, bool reset)
{
	struct gdn_report_iter *it = find_iter(r, n);

	if (it && reset) {
		iter_release(it);
		iter_init(it, n);
	}
	if (it)
		return it;
	ALLOC_GROW(r->v, r->nr + 1, r->alloc);
	it = &r->v[r->nr++];
	iter_init(it, n);
	return it;
}

static double num_or_nan(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void apply_perf_decision(struct gdn_report *r, json_t *o, long n)
{
	struct gdn_report_iter *it = get_iter(r, n, false);
	json_t *reasons = json_object_get(o, "reasons");
	const char *s;

	set_str(&it->perf_decision, str_of(o, "decision"));
	if ((s = str_of(o, "metric")))
		set_str(&r->metric, s);
	if ((s = str_of(o, "direction"))) { /* the run's, resolved at its start */
		r->lower_is_better = !strcmp(s, "lower");
		r->direction_journaled = true;
	}
	it->metric = num_or_nan(o, "candidate");
	it->has_metric = isfinite(it->metric);
	it->champion_before = num_or_nan(o, "champion");
	if (!it->commit && (s = str_of(o, "commit")))
		it->commit = clean_text(s, 64);
	s = json_string_value(json_array_get(reasons, 0));
	if (s) {
		free(it->reason);
		it->reason = clean_text(s, 400);
	}
}

static void apply_head(struct gdn_report_iter *it, json_t *o)
{
	json_t *ids = json_object_get(o, "ids"), *id;
	const char *after = str_of(o, "after");
	size_t i;

	it->commits = (long)count_of(o, "commits");
	FREE_AND_NULL(it->commit);
	if (it->commits > 0 && after)
		it->commit = clean_text(after, 64);
	strvec_clear(&it->ids);
	json_array_foreach(ids, i, id)
	{
		if (json_is_string(id) && i < 1000)
			strvec_push(&it->ids, json_string_value(id));
	}
}

/* A path under the log dir fit for a relative link: no scheme, no "..", no control characters. */
static bool link_safe(const char *s)
{
	const char *p = s;

	if (!*s || *s == '/' || strlen(s) > 1024)
		return false;
	for (; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f || *p == ':' || *p == '\\')
			return false;
	for (p = s; *p;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (!len || (len == 2 && !strncmp(p, "..", 2)))
			return false;
		p = slash ? slash + 1 : p + len;
	}
	return true;
}

/* A `trace` event: the run's trace (the last one found wins), or why there was none. */
static void apply_trace(struct gdn_report_iter *it, json_t *o)
{
	const char *path = str_of(o, "path"), *s;

	if (!path) {
		if (!it->trace_path && (s = str_of(o, "reason"))) {
			free(it->trace_reason);
			it->trace_reason = clean_text(s, 400);
		}
		return;
	}
	FREE_AND_NULL(it->trace_reason);
	free(it->trace_path);
	it->trace_path = clean_text(path, 1024);
	free(it->trace_source);
	it->trace_source = clean_text((s = str_of(o, "source")) ? s : "?", 16);
	free(it->trace_origin);
	it->trace_origin = (s = str_of(o, "origin")) ? clean_text(s, 400) : NULL;
	free(it->trace_file);
	s = str_of(o, "file");
	it->trace_file = s && link_safe(s) ? xstrdup(s) : NULL;
}

/* The iteration's worker: its first event's. */
static void note_worker(struct gdn_report_iter *it, json_t *o)
{
	if (!it->worker)
		it->worker = gdn_report_event_worker(o);
}

static void on_revert(struct gdn_report *r, struct gdn_report_iter *it, json_t *o)
{
	const char *s;

	it->reverted = json_is_true(json_object_get(o, "ok"));
	if (!it->reverted)
		it->seen_error = true;
	if (it->reverted)
		r->totals.commits_reverted =
		    (long)gdn_add_sat_i64(r->totals.commits_reverted, count_of(o, "commits"));
	if ((s = str_of(o, "discarded_ref")))
		set_str(&it->discarded_ref, s);
	if ((s = str_of(o, "reason"))) {
		free(it->reason);
		it->reason = clean_text(s, 400);
	}
}

/* The iteration's reason: the event's `key`, cleaned (none: unchanged). */
static void set_reason(struct gdn_report_iter *it, json_t *o, const char *key)
{
	const char *s = str_of(o, key);

	if (s) {
		free(it->reason);
		it->reason = clean_text(s, 400);
	}
}

/* The events of one iteration (it). */
static void apply_iter_event(struct gdn_report *r, struct gdn_report_iter *it, enum gdn_event ev,
			     json_t *o)
{
	const char *s;

	switch (ev) {
	case GDN_EV_PERF_AB:
		it->ci_low_pct = num_or_nan(o, "ci_low_pct");
		it->ci_high_pct = num_or_nan(o, "ci_high_pct");
		it->ci_confidence = num_or_nan(o, "confidence");
		it->ab_pairs = count_of(o, "pairs");
		it->has_ci = isfinite(it->ci_low_pct) && isfinite(it->ci_high_pct);
		break;
	case GDN_EV_AGENT_END:
		it->agent_ms = gdn_add_sat_i64(it->agent_ms, count_of(o, "duration_ms"));
		break;
	case GDN_EV_USAGE:
		apply_usage(r, it, o);
		break;
	case GDN_EV_HEAD:
		apply_head(it, o);
		break;
	case GDN_EV_VALIDATION:
		it->validation_ms = gdn_add_sat_i64(it->validation_ms, count_of(o, "duration_ms"));
		s = str_of(o, "state");
		it->validation_failed = !s || strcmp(s, "succeeded");
		break;
	case GDN_EV_REVERT:
		on_revert(r, it, o);
		break;
	case GDN_EV_DECISION:
		it->seen_decision = true;
		it->kept = (long)count_of(o, "commits");
		s = str_of(o, "failure");
		set_str(&it->failure, s);
		if (s && !it->reason)
			it->reason = clean_text(s, 64);
		break;
	case GDN_EV_TRACE:
		apply_trace(it, o);
		break;
	case GDN_EV_REBASE:
		s = str_of(o, "result");
		if (s && !strcmp(s, "clean") && (s = str_of(o, "head"))) {
			/* carried onto a newer champion: the commit measured and promoted */
			free(it->commit);
			it->commit = clean_text(s, 64);
		} else if (s && !strcmp(s, "conflict")) {
			/* the candidate did not apply on the newer champion: discarded */
			it->conflict = true;
			set_reason(it, o, "reason");
		}
		break;
	case GDN_EV_CONFLICT:
		it->conflict = true;
		set_reason(it, o, "reason");
		break;
	case GDN_EV_STAMP:
		/* the running log's entry stamped in a commit of its own: what the branch holds */
		if ((s = str_of(o, "commit"))) {
			free(it->stamped);
			it->stamped = clean_text(s, 64);
		}
		break;
	case GDN_EV_RECHECK:
		it->rechecks++;
		break;
	case GDN_EV_REF_KEPT:
		/* where a conflicting candidate was kept */
		if ((it->conflict || it->rechecks) && (s = str_of(o, "kind")) &&
		    !strcmp(s, "discarded") && (s = str_of(o, "ref"))) {
			it->kept_away = true;
			set_str(&it->discarded_ref, s);
		}
		break;
	case GDN_EV_ERROR:
	case GDN_EV_FAILURE:
		it->seen_error = true;
		set_reason(it, o, "message");
		break;
	default:
		break;
	}
}

/* Apply one event of the selected run. */
static void apply_event(struct gdn_report *r, const char *name, json_t *o)
{
	enum gdn_event ev = gdn_journal_event(name);
	json_t *iteration = json_object_get(o, "iteration");
	long n = json_is_integer(iteration) ? (long)json_integer_value(iteration) : -1;
	struct gdn_report_iter *it = NULL;

	switch (ev) {
	case GDN_EV_RUN_START:
		set_str(&r->workdir, str_of(o, "workdir"));
		set_str(&r->branch, str_of(o, "branch"));
		set_str(&r->start_head, str_of(o, "head"));
		set_str(&r->started, str_of(o, "ts"));
		r->planned = (long)count_of(o, "iterations");
		return;
	case GDN_EV_RUN_RESUME:
		FREE_AND_NULL(r->end_reason);
		r->has_exit = false;
		if (count_of(o, "iterations") > 0)
			r->planned = (long)count_of(o, "iterations");
		return;
	case GDN_EV_RUN_END:
		set_str(&r->end_reason, str_of(o, "reason"));
		r->has_exit = json_is_integer(json_object_get(o, "exit_code"));
		r->exit_code = (int)json_integer_value(json_object_get(o, "exit_code"));
		return;
	/* sums of untrusted figures saturate: a journal's INT64_MAX never wraps round */
	case GDN_EV_AGENT_END:
		r->totals.agent_ms =
		    gdn_add_sat_i64(r->totals.agent_ms, count_of(o, "duration_ms"));
		break;
	case GDN_EV_VALIDATION:
		r->totals.validation_ms =
		    gdn_add_sat_i64(r->totals.validation_ms, count_of(o, "duration_ms"));
		break;
	default:
		break;
	}
	if (n < 0 || n > 100000000L)
		return;
	if (ev == GDN_EV_ITERATION_START) {
		note_worker(get_iter(r, n, true), o);
		return;
	}
	if (ev == GDN_EV_PERF_DECISION) {
		apply_perf_decision(r, o, n);
		note_worker(get_iter(r, n, false), o);
		return;
	}
	it = n > 0 || ev == GDN_EV_VALIDATION ? get_iter(r, n, false) : find_iter(r, n);
	if (!it)
		return;
	note_worker(it, o);
	apply_iter_event(r, it, ev, o);
}

static enum gdn_report_outcome classify(const struct gdn_report_iter *it)
{
	/* the outcome of each decision the journal names (gdn_perf_decision_enum) */
	static const enum gdn_report_outcome perf[] = {
	    [GDN_PERF_BASELINE] = GDN_REPORT_BASELINE,
	    [GDN_PERF_PROMOTED] = GDN_REPORT_PROMOTED,
	    [GDN_PERF_WITHIN_THRESHOLD] = GDN_REPORT_WITHIN,
	    [GDN_PERF_REGRESSION] = GDN_REPORT_REGRESSION,
	    [GDN_PERF_GATE_REGRESSION] = GDN_REPORT_GATE_REGRESSION,
	    [GDN_PERF_UNSCORED] = GDN_REPORT_UNSCORED,
	};
	int d;

	if (it->conflict)
		return GDN_REPORT_CONFLICT;
	if (it->perf_decision) {
		if (gdn_enum_parse(gdn_perf_decision_enum, it->perf_decision, &d) ||
		    (size_t)d >= ARRAY_SIZE(perf))
			return GDN_REPORT_ERROR;
		return perf[d];
	}
	if (it->validation_failed)
		return GDN_REPORT_FAILED_TESTS;
	if (it->failure && !strcmp(it->failure, gdn_loop_failure_name(GDN_FAIL_NO_COMMIT)))
		return GDN_REPORT_NO_COMMIT;
	if (it->seen_error || it->failure)
		return GDN_REPORT_ERROR;
	if (it->seen_decision)
		return it->commits > 0 ? GDN_REPORT_KEPT : GDN_REPORT_NO_COMMIT;
	return GDN_REPORT_OPEN;
}

static int cmp_iter(const void *a, const void *b)
{
	long x = ((const struct gdn_report_iter *)a)->iteration;
	long y = ((const struct gdn_report_iter *)b)->iteration;

	return (x > y) - (x < y);
}

static void finalize(struct gdn_report *r)
{
	double cur = NAN;
	long long a, b;

	if (r->nr > 1)
		qsort(r->v, r->nr, sizeof(*r->v), cmp_iter);
	for (size_t i = 0; i < r->nr; i++) {
		if (r->v[i].perf_decision) {
			cur = r->v[i].champion_before;
			break;
		}
	}
	for (size_t i = 0; i < r->nr; i++) {
		struct gdn_report_iter *it = &r->v[i];

		it->outcome = classify(it);
		if (!it->perf_decision)
			it->champion_before = cur;
		if (it->has_metric && isfinite(it->champion_before) && it->champion_before != 0)
			it->delta_pct =
			    (it->metric - it->champion_before) / fabs(it->champion_before) * 100.0;
		if ((it->outcome == GDN_REPORT_BASELINE || it->outcome == GDN_REPORT_PROMOTED) &&
		    it->has_metric)
			cur = it->metric;
		it->champion_after = cur;
		if (it->iteration > 0 && it->seen_decision)
			r->totals.iterations++;
		r->totals.commits_kept = (long)gdn_add_sat_i64(r->totals.commits_kept, it->kept);
		if (it->outcome == GDN_REPORT_PROMOTED)
			r->totals.promoted++;
		if (it->iteration > 0 && it->seen_decision && it->failure)
			r->totals.failures++;
		if (!isfinite(r->baseline) && it->outcome == GDN_REPORT_BASELINE && it->has_metric)
			r->baseline = it->metric;
		if (!isfinite(r->baseline) && isfinite(it->champion_before))
			r->baseline = it->champion_before;
		if (it->reason) {
			struct sbuf sb = SBUF_INIT;

			gdn_loop_reason_words(&sb, it->reason);
			free(it->reason_text);
			it->reason_text = sbuf_detach(&sb, NULL);
		}
		if (it->iteration <= 0 || !it->seen_decision)
			continue;
		if (it->reverted)
			r->totals.iters_reverted++;
		else if (it->kept > 0)
			r->totals.iters_kept++;
		else if (it->outcome == GDN_REPORT_NO_COMMIT)
			r->totals.iters_no_commit++;
		else if (it->outcome == GDN_REPORT_CONFLICT)
			r->totals.iters_conflicted++;
		else
			r->totals.iters_failed++;
	}
	a = gdn_loop_ts_ms(r->started);
	b = gdn_loop_ts_ms(r->ended);
	r->totals.wall_ms = a >= 0 && b >= a ? b - a : 0;
	if (r->totals.idle_ms > r->totals.wall_ms)
		r->totals.idle_ms = r->totals.wall_ms;
	r->totals.active_ms = r->totals.wall_ms - r->totals.idle_ms;
	if (r->metric && !r->direction_journaled)
		r->lower_is_better =
		    gdn_perf_direction_resolve(GDN_PERF_AUTO, r->metric) == GDN_PERF_LOWER;
	gdn_report_lanes_finish(r);
}

struct each {
	struct gdn_report *r;
	void (*fn)(struct gdn_report *r, const char *ev, json_t *o);
};

static void each_cb(const char *event, json_t *ev, void *payload)
{
	struct each *e = payload;

	e->fn(e->r, event, ev);
}

/* Call fn on each complete line; a torn last line sets *torn. Returns 0 or GDN_EPARSE. */
static int each_event(struct gdn_report *r, const char *buf, size_t len, const char *name,
		      void (*fn)(struct gdn_report *r, const char *ev, json_t *o), bool *torn,
		      struct gdn_err *err)
{
	struct each e = {r, fn};

	return gdn_journal_each(buf, len, name, each_cb, &e, torn, err);
}

static void collect_run(struct gdn_report *r, const char *ev, json_t *o)
{
	const char *run = str_of(o, "run");

	if (gdn_journal_event(ev) == GDN_EV_RUN_START && run && !strvec_contains(&r->runs, run))
		strvec_push(&r->runs, run);
}

/*
 * An event's worker: its "worker", else its iteration's (an event a
 * parallel run wrote without one), else worker 1.
 */
static long event_worker(struct gdn_report *r, json_t *o)
{
	json_t *iteration = json_object_get(o, "iteration");
	struct gdn_report_iter *it;

	if (json_object_get(o, "worker") || !json_is_integer(iteration))
		return gdn_report_event_worker(o);
	it = find_iter(r, (long)json_integer_value(iteration));
	return it && it->worker > 0 ? it->worker : 1;
}

static void apply_if_selected(struct gdn_report *r, const char *ev, json_t *o)
{
	const char *run = str_of(o, "run");
	const char *ts = str_of(o, "ts");

	long long t = gdn_loop_ts_ms(ts), prev = r->last_ts_ms;

	if (!run || strcmp(run, r->run_id))
		return;
	if (ts)
		set_str(&r->ended, ts);
	if (gdn_journal_event(ev) == GDN_EV_RUN_RESUME) {
		/* the loop was not running between its last event and the resume */
		r->totals.resumes++;
		if (t >= 0 && r->last_ts_ms >= 0 && t >= r->last_ts_ms)
			r->totals.idle_ms = gdn_add_sat_i64(r->totals.idle_ms, t - r->last_ts_ms);
	}
	if (t >= 0)
		r->last_ts_ms = t;
	apply_event(r, ev, o);
	gdn_report_lane_event(r, ev, o, t, prev, event_worker(r, o));
}

int gdn_report_load_journal(struct gdn_report *r, const char *buf, size_t len, const char *run_id,
			    const char *name, struct gdn_err *err)
{
	bool torn = false;
	int ret;

	gdn_report_release(r);
	ret = each_event(r, buf, len, name, collect_run, &torn, err);
	if (ret)
		return ret;
	if (!r->runs.nr)
		return gdn_err_set(err, GDN_ENOTFOUND,
				   "journal '%s' has no run (no run_start event)", name);
	if (run_id && !strvec_contains(&r->runs, run_id))
		return gdn_err_set(err, GDN_ENOTFOUND, "journal '%s' has no run '%s'", name,
				   run_id);
	r->run_id = xstrdup(run_id ? run_id : r->runs.v[r->runs.nr - 1]);
	r->last_ts_ms = -1;
	ret = each_event(r, buf, len, name, apply_if_selected, &torn, err);
	if (ret)
		return ret;
	r->torn_last_line = torn;
	finalize(r);
	return 0;
}

/* ---- the performance state: trace deltas against the champion ---- */

static double fig(json_t *trace, const char *group, const char *name)
{
	json_t *v = group ? json_object_get(json_object_get(trace, group), name)
			  : json_object_get(trace, name);

	return json_is_number(v) && isfinite(json_number_value(v)) ? json_number_value(v) : 0.0;
}

/* Keep the GDN_REPORT_TOP_DELTAS largest |delta| (ties: first seen). */
static void offer_delta(struct gdn_report_iter *it, const char *kind, const char *name, double cand,
			double champ)
{
	struct gdn_report_delta d = {{0}, NULL, cand, champ, cand - champ};
	size_t pos = it->nr_deltas;

	if (!isfinite(d.delta_ms) || d.delta_ms == 0)
		return;
	/* under the noise: not a finding */
	if (fabs(d.delta_ms) < GDN_REPORT_NOISE_MS ||
	    (champ != 0 && fabs(d.delta_ms) < fabs(champ) * GDN_REPORT_NOISE_PCT / 100.0))
		return;
	while (pos > 0 && fabs(it->deltas[pos - 1].delta_ms) < fabs(d.delta_ms))
		pos--;
	if (pos >= GDN_REPORT_TOP_DELTAS)
		return;
	if (it->nr_deltas == GDN_REPORT_TOP_DELTAS)
		free(it->deltas[--it->nr_deltas].name);
	memmove(&it->deltas[pos + 1], &it->deltas[pos], (it->nr_deltas - pos) * sizeof(d));
	snprintf(d.kind, sizeof(d.kind), "%s", kind);
	d.name = name ? clean_text(name, 200) : NULL;
	it->deltas[pos] = d;
	it->nr_deltas++;
}

static void group_deltas(struct gdn_report_iter *it, json_t *cand, json_t *champ, const char *group,
			 const char *kind)
{
	json_t *a = json_object_get(cand, group), *b = json_object_get(champ, group), *v;
	const char *key;

	json_object_foreach(a, key, v)
	    offer_delta(it, kind, key, fig(cand, group, key), fig(champ, group, key));
	json_object_foreach(b, key, v)
	{
		if (!json_object_get(a, key))
			offer_delta(it, kind, key, 0.0, fig(champ, group, key));
	}
}

/* Indexes of the history, so each iteration finds its records in O(1). */
struct history_index {
	json_t *history;   /* borrowed */
	json_t *records;   /* "COMMIT ITERATION" -> index of the latest such record */
	json_t *champions; /* "COMMIT" -> [indexes of its baseline/promoted records, ascending] */
};

static char *record_key(const char *commit, long long iteration)
{
	return xstrfmt("%s %lld", commit, iteration);
}

static void index_history(struct history_index *ix, json_t *history)
{
	json_t *rec;
	size_t i;

	ix->history = history;
	ix->records = json_object();
	ix->champions = json_object();
	json_array_foreach(history, i, rec)
	{
		const char *c = str_of(rec, "commit"), *d = str_of(rec, "decision");
		json_t *list;
		char *key;
		int k = -1;

		if (!c)
			continue;
		key = record_key(c, json_integer_value(json_object_get(rec, "iteration")));
		json_object_set_new(ix->records, key, json_integer((json_int_t)i));
		free(key);
		if (d)
			gdn_enum_parse(gdn_perf_decision_enum, d, &k);
		if (k != GDN_PERF_BASELINE && k != GDN_PERF_PROMOTED)
			continue;
		list = json_object_get(ix->champions, c);
		if (!list) {
			list = json_array();
			json_object_set_new(ix->champions, c, list);
		}
		json_array_append_new(list, json_integer((json_int_t)i));
	}
}

static void index_release(struct history_index *ix)
{
	json_decref(ix->records);
	json_decref(ix->champions);
}

/* The champion record of `ccommit` measured before history index `at`, or NULL. */
static json_t *champion_before(const struct history_index *ix, const char *ccommit, size_t at)
{
	json_t *list = json_object_get(ix->champions, ccommit);

	for (size_t k = json_array_size(list); k > 0; k--) {
		json_int_t i = json_integer_value(json_array_get(list, k - 1));

		if (i >= 0 && (size_t)i < at)
			return json_array_get(ix->history, (size_t)i);
	}
	return NULL;
}

static void add_deltas(struct gdn_report_iter *it, const struct history_index *ix,
		       json_t *champion_rec)
{
	char *key = record_key(it->commit, it->iteration);
	json_t *at = json_object_get(ix->records, key), *rec, *champ, *cand_trace, *champ_trace;
	const char *ccommit, *c;

	free(key);
	if (!at)
		return;
	rec = json_array_get(ix->history, (size_t)json_integer_value(at));
	if (!(ccommit = str_of(rec, "champion_commit")))
		return;
	champ = champion_before(ix, ccommit, (size_t)json_integer_value(at));
	if (!champ && champion_rec && (c = str_of(champion_rec, "commit")) && !strcmp(c, ccommit))
		champ = champion_rec;
	cand_trace = json_object_get(rec, "trace");
	champ_trace = champ ? json_object_get(champ, "trace") : NULL;
	if (!json_is_object(cand_trace) || !json_is_object(champ_trace))
		return;
	offer_delta(it, "step", NULL, fig(cand_trace, NULL, "step_ms"),
		    fig(champ_trace, NULL, "step_ms"));
	group_deltas(it, cand_trace, champ_trace, "categories", "category");
	group_deltas(it, cand_trace, champ_trace, "ops", "op");
}

/* A run without performance decisions: the champion of the state throughout. */
static void use_state_champion(struct gdn_report *r, json_t *champion)
{
	double v = num_or_nan(champion, "metric_value");
	const char *m = str_of(champion, "metric"), *c = str_of(champion, "commit");

	if (!m || !c || !isfinite(v))
		return;
	r->metric = clean_text(m, 200);
	r->lower_is_better = gdn_perf_direction_resolve(GDN_PERF_AUTO, m) == GDN_PERF_LOWER;
	FREE_AND_NULL(r->state_champion);
	r->state_champion = clean_text(c, 64);
	r->state_champion_value = v;
	for (size_t i = 0; i < r->nr; i++) {
		if (!isfinite(r->v[i].champion_before))
			r->v[i].champion_before = v;
		if (!isfinite(r->v[i].champion_after))
			r->v[i].champion_after = v;
	}
}

int gdn_report_add_state(struct gdn_report *r, const char *buf, size_t len, const char *name,
			 struct gdn_err *err)
{
	struct gdn_perf_state st = GDN_PERF_STATE_INIT;
	struct history_index ix;
	json_t *history, *champion;
	int ret = gdn_perf_state_parse(&st, buf, len, name, err);

	if (ret)
		goto out;
	history = json_object_get(st.doc, "history");
	champion = gdn_perf_state_champion(&st);
	if (!r->metric && champion)
		use_state_champion(r, champion);
	for (size_t i = json_array_size(history); i > 0 && r->metric; i--) {
		json_t *rec = json_array_get(history, i - 1);
		const char *m = str_of(rec, "metric"), *dir = str_of(rec, "direction");

		if (m && dir && !strcmp(m, r->metric)) {
			r->lower_is_better = !strcmp(dir, "lower");
			break;
		}
	}
	index_history(&ix, history);
	for (size_t i = 0; i < r->nr; i++) {
		struct gdn_report_iter *it = &r->v[i];

		for (size_t k = 0; k < it->nr_deltas; k++)
			free(it->deltas[k].name);
		it->nr_deltas = 0;
		if (it->perf_decision && it->commit && it->outcome != GDN_REPORT_BASELINE)
			add_deltas(it, &ix, champion);
	}
	index_release(&ix);
out:
	gdn_perf_state_release(&st);
	return ret;
}

/* ---- links from where the page is written ---- */

/* The next component of a path at *p ("" at its end); *p moves past it and its slashes. */
static size_t next_component(const char **p, const char **start)
{
	size_t n;

	while (**p == '/')
		(*p)++;
	*start = *p;
	n = strcspn(*p, "/");
	*p += n;
	return n;
}

char *gdn_report_relative_dir(const char *from, const char *to)
{
	const char *f = from, *t = to, *fs, *ts, *rest;
	struct sbuf sb = SBUF_INIT;
	size_t fn, tn;

	if (!from || !to || from[0] != '/' || to[0] != '/')
		return NULL;
	/* the common leading components */
	for (;;) {
		const char *f0 = f, *t0 = t;

		fn = next_component(&f, &fs);
		tn = next_component(&t, &ts);
		if (!fn || !tn || fn != tn || memcmp(fs, ts, fn)) {
			f = f0;
			t = t0;
			break;
		}
	}
	/* one ".." per component of `from` left, then the rest of `to` */
	while ((fn = next_component(&f, &fs)))
		sbuf_adds(&sb, "../");
	rest = t;
	while ((tn = next_component(&rest, &ts))) {
		sbuf_add(&sb, ts, tn);
		sbuf_addch(&sb, '/');
	}
	return sbuf_detach(&sb, NULL);
}

/* realpath(3) of `path`, else a copy of it. */
static char *resolved(const char *path)
{
	char *rp = realpath(path, NULL);

	return rp ? rp : xstrdup(path);
}

void gdn_report_set_link_base(struct gdn_report *r, const char *log_dir, const char *output)
{
	char *log = NULL, *dir = NULL, *rel = NULL;
	const char *slash;

	FREE_AND_NULL(r->link_base);
	if (!log_dir)
		return;
	log = resolved(log_dir);
	if (output && (slash = strrchr(output, '/'))) {
		char *parent = xstrndup(output, slash == output ? 1 : (size_t)(slash - output));

		dir = resolved(parent);
		free(parent);
		rel = gdn_report_relative_dir(dir, log);
	}
	if (rel)
		r->link_base = rel;
	else if (log[0] == '/')
		r->link_base = xstrfmt("%s%s", log, log[1] ? "/" : "");
	free(log);
	free(dir);
}
