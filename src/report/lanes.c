/*
 * The report's lanes (`gdnctl loop --workers N`): what each worker did
 * when. From the journal's events of the selected run (model.c hands each
 * one over): the agent spans (agent_start .. agent_end, per worker), the
 * validation spans ([ts - duration_ms, ts] of each `validation` event), the
 * promotions in their order, and the idle gaps before resumes. Once the
 * journal is read, the spans are put on the run's active time line and
 * summed per worker: agent, validation, busy (their union) and idle time,
 * and the busy fractions of each worker and of its accelerator.
 *
 * Events without "worker" belong to worker 1: a one-worker run has one
 * lane, which the renderers do not show (gdn_report_parallel). With
 * --targets, a `target` event says which target a worker's next
 * validations run on, and an `agent` event which of the N agents its
 * agent runs as: each target and each agent has a lane of its own too
 * (validation spans, agent spans).
 */
#include "gdnctl/compat.h"
#include "gdnctl/journal.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/report.h"
#include "gdnctl/xalloc.h"

long gdn_report_event_worker(json_t *o)
{
	json_t *w = json_object_get(o, "worker");
	json_int_t k;

	if (!w || !json_is_integer(w))
		return 1;
	k = json_integer_value(w);
	return k >= 1 && k <= GDN_REPORT_MAX_WORKERS ? (long)k : 0;
}

bool gdn_report_parallel(const struct gdn_report *r)
{
	return r->workers > 1;
}

/* Worker k's lane (1 <= k <= GDN_REPORT_MAX_WORKERS), created with those below it. */
static struct gdn_report_lane *lane(struct gdn_report *r, long k)
{
	if ((size_t)k > r->nr_lanes) {
		r->lanes = xrealloc(r->lanes, st_mult(sizeof(*r->lanes), (size_t)k));
		for (size_t i = r->nr_lanes; i < (size_t)k; i++) {
			memset(&r->lanes[i], 0, sizeof(r->lanes[i]));
			r->lanes[i].worker = (long)i + 1;
			r->lanes[i].open_agent_ms = -1;
		}
		r->nr_lanes = (size_t)k;
	}
	if (k > r->workers)
		r->workers = k;
	return &r->lanes[k - 1];
}

static void add_span(struct gdn_report_lane *l, enum gdn_report_span_kind kind, long iteration,
		     long long start, long long end)
{
	struct gdn_report_span *s;

	if (start < 0 || end <= start)
		return;
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	s = &l->v[l->nr++];
	s->kind = kind;
	s->iteration = iteration;
	s->start_ms = start;
	s->end_ms = end;
}

/*
 * Target or agent k's lane in *v (1 <= k <= GDN_REPORT_MAX_WORKERS), created
 * with those below it.
 */
static struct gdn_report_lane *extra_lane(struct gdn_report_lane **v, size_t *nr, long k)
{
	if ((size_t)k > *nr) {
		*v = xrealloc(*v, st_mult(sizeof(**v), (size_t)k));
		for (size_t i = *nr; i < (size_t)k; i++) {
			memset(&(*v)[i], 0, sizeof((*v)[i]));
			(*v)[i].worker = (long)i + 1;
			(*v)[i].open_agent_ms = -1;
		}
		*nr = (size_t)k;
	}
	return &(*v)[k - 1];
}

/* An agent span of worker lane l, on its agent's lane too (--targets). */
static void add_agent_span(struct gdn_report *r, struct gdn_report_lane *l, long iteration,
			   long long start, long long end)
{
	add_span(l, GDN_REPORT_SPAN_AGENT, iteration, start, end);
	if (l->open_agent > 0)
		add_span(extra_lane(&r->alanes, &r->nr_alanes, l->open_agent),
			 GDN_REPORT_SPAN_AGENT, iteration, start, end);
	l->open_agent = 0;
}

/* An agent still running when its worker, or the run, stopped: it ran until `at`. */
static void close_agent(struct gdn_report *r, struct gdn_report_lane *l, long long at)
{
	if (l->open_agent_ms >= 0 && at >= l->open_agent_ms)
		add_agent_span(r, l, l->open_iteration, l->open_agent_ms, at);
	l->open_agent_ms = -1;
}

static void close_agents(struct gdn_report *r, long long at)
{
	for (size_t i = 0; i < r->nr_lanes; i++)
		close_agent(r, &r->lanes[i], at);
}

/* The lane's target or agent number of a `target` or `agent` event (0: none). */
static long token_of(json_t *o, const char *what)
{
	json_int_t k = json_integer_value(json_object_get(o, what));

	return k >= 1 && k <= GDN_REPORT_MAX_WORKERS ? (long)k : 0;
}

static long long duration_of(json_t *o)
{
	json_int_t v = json_integer_value(json_object_get(o, "duration_ms"));

	return v > 0 ? (long long)v : 0;
}

static void set_workers(struct gdn_report *r, json_t *o)
{
	json_int_t n = json_integer_value(json_object_get(o, "workers"));

	if (n > 1)
		lane(r, n > GDN_REPORT_MAX_WORKERS ? GDN_REPORT_MAX_WORKERS : (long)n);
}

/* A promotion of worker k's lane l (t: when). */
static void add_promotion(struct gdn_report *r, struct gdn_report_lane *l, json_t *o, long n,
			  long k, long long t)
{
	struct gdn_report_promotion *p;
	const char *c = json_string_value(json_object_get(o, "champion"));

	ALLOC_GROW(r->promotions, r->nr_promotions + 1, r->alloc_promotions);
	p = &r->promotions[r->nr_promotions++];
	p->order = (long)r->nr_promotions;
	p->iteration = n;
	p->worker = k;
	p->champion = NULL;
	if (c) {
		p->champion = xstrndup(c, 64);
		for (char *q = p->champion; *q; q++)
			if ((unsigned char)*q < 0x20 || *q == 0x7f)
				*q = ' ';
	}
	p->metric = NAN;
	p->at_ms = t;
	l->promotions++;
}

void gdn_report_lane_event(struct gdn_report *r, const char *name, json_t *o, long long t,
			   long long prev, long k)
{
	enum gdn_event ev = gdn_journal_event(name);
	json_t *iteration = json_object_get(o, "iteration");
	long n = json_is_integer(iteration) ? (long)json_integer_value(iteration) : -1;
	struct gdn_report_lane *l;

	switch (ev) {
	case GDN_EV_RUN_START:
		lane(r, 1);
		set_workers(r, o);
		return;
	case GDN_EV_RUN_RESUME:
		/* the loop was stopped from its last event (prev) to the resume */
		close_agents(r, prev);
		if (t >= 0 && prev >= 0 && t > prev) {
			ALLOC_GROW(r->gaps, r->nr_gaps + 1, r->alloc_gaps);
			r->gaps[r->nr_gaps].from_ms = prev;
			r->gaps[r->nr_gaps++].to_ms = t;
		}
		set_workers(r, o);
		return;
	case GDN_EV_RUN_END:
		close_agents(r, t);
		return;
	default:
		break;
	}
	if (!k || t < 0)
		return;
	l = lane(r, k);
	switch (ev) {
	case GDN_EV_AGENT_START: {
		long agent = l->open_agent; /* an attempt of the same iteration: the same agent */

		close_agent(r, l, t);
		l->open_agent = agent;
		l->open_agent_ms = t;
		l->open_iteration = n;
		break;
	}
	case GDN_EV_AGENT_END:
		if (l->open_agent_ms >= 0)
			close_agent(r, l, t);
		else /* no start seen: its duration */
			add_agent_span(r, l, n, t - duration_of(o), t);
		break;
	case GDN_EV_VALIDATION:
		add_span(l, GDN_REPORT_SPAN_VALIDATION, n, t - duration_of(o), t);
		if (l->open_target > 0)
			add_span(extra_lane(&r->tlanes, &r->nr_tlanes, l->open_target),
				 GDN_REPORT_SPAN_VALIDATION, n, t - duration_of(o), t);
		break;
	case GDN_EV_TARGET:
		l->open_target = token_of(o, "target");
		if (l->open_target)
			extra_lane(&r->tlanes, &r->nr_tlanes, l->open_target);
		break;
	case GDN_EV_AGENT:
		l->open_agent = token_of(o, "agent");
		if (l->open_agent)
			extra_lane(&r->alanes, &r->nr_alanes, l->open_agent);
		break;
	case GDN_EV_WORKER_END:
		l->open_target = 0;
		/* its iteration's agent, not one the worker started since */
		if (n < 0 || n == l->open_iteration)
			close_agent(r, l, t);
		l->open_agent = 0;
		break;
	case GDN_EV_ITERATION_START:
		if (n > 0)
			l->iterations++;
		break;
	case GDN_EV_PROMOTE:
		add_promotion(r, l, o, n, k, t);
		break;
	default:
		break;
	}
}

void gdn_report_lanes_release(struct gdn_report *r)
{
	for (size_t i = 0; i < r->nr_lanes; i++)
		free(r->lanes[i].v);
	free(r->lanes);
	for (size_t i = 0; i < r->nr_tlanes; i++)
		free(r->tlanes[i].v);
	free(r->tlanes);
	r->tlanes = NULL;
	r->nr_tlanes = 0;
	for (size_t i = 0; i < r->nr_alanes; i++)
		free(r->alanes[i].v);
	free(r->alanes);
	r->alanes = NULL;
	r->nr_alanes = 0;
	for (size_t i = 0; i < r->nr_promotions; i++)
		free(r->promotions[i].champion);
	free(r->promotions);
	free(r->gaps);
	r->lanes = NULL;
	r->promotions = NULL;
	r->gaps = NULL;
	r->nr_lanes = r->nr_promotions = r->alloc_promotions = r->nr_gaps = r->alloc_gaps = 0;
}

/* Absolute time t on the active time line: ms since start, the gaps before t taken out. */
static long long active_at(const struct gdn_report *r, long long start, long long end, long long t)
{
	long long off;

	if (t < start)
		t = start;
	if (t > end)
		t = end;
	off = t - start;
	for (size_t i = 0; i < r->nr_gaps; i++) {
		long long lo = r->gaps[i].from_ms > start ? r->gaps[i].from_ms : start;
		long long hi = r->gaps[i].to_ms < t ? r->gaps[i].to_ms : t;

		if (hi > lo)
			off -= hi - lo;
	}
	return off > 0 ? off : 0;
}

static int cmp_span(const void *a, const void *b)
{
	const struct gdn_report_span *x = a, *y = b;

	if (x->start_ms != y->start_ms)
		return (x->start_ms > y->start_ms) - (x->start_ms < y->start_ms);
	if (x->end_ms != y->end_ms)
		return (x->end_ms > y->end_ms) - (x->end_ms < y->end_ms);
	return (int)x->kind - (int)y->kind;
}

/* The length of the union of the lane's spans of the kinds in mask (bit 1 << kind); sorted spans.
 */
static long long union_ms(const struct gdn_report_lane *l, unsigned mask)
{
	long long sum = 0, lo = -1, hi = -1;

	for (size_t i = 0; i < l->nr; i++) {
		const struct gdn_report_span *s = &l->v[i];

		if (!(mask & (1u << s->kind)) || s->end_ms <= s->start_ms)
			continue;
		if (lo < 0 || s->start_ms > hi) {
			sum += hi - lo;
			lo = s->start_ms;
			hi = s->end_ms;
		} else if (s->end_ms > hi) {
			hi = s->end_ms;
		}
	}
	return sum + (hi - lo);
}

static double fraction(long long part, long long whole)
{
	return whole > 0 ? (double)part / (double)whole : NAN;
}

/* Iteration n's record, or NULL. */
static const struct gdn_report_iter *iter_of(const struct gdn_report *r, long iteration)
{
	size_t lo = 0, hi = r->nr; /* r->v is sorted by iteration (finalize) */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].iteration < iteration)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < r->nr && r->v[lo].iteration == iteration ? &r->v[lo] : NULL;
}

static int cmp_promotion_iteration(const void *a, const void *b)
{
	const struct gdn_report_promotion *x = *(const struct gdn_report_promotion *const *)a;
	const struct gdn_report_promotion *y = *(const struct gdn_report_promotion *const *)b;

	if (x->iteration != y->iteration)
		return (x->iteration > y->iteration) - (x->iteration < y->iteration);
	return (x->order > y->order) - (x->order < y->order);
}

/*
 * With workers, iterations are promoted out of order, and each promotion
 * beats the champion of its moment: the champion after iteration N (the
 * chart's step line) is the one of the last promotion, in promotion
 * order, of an iteration <= N. With one worker that is the iteration
 * order's.
 */
static void champions_by_promotion(struct gdn_report *r)
{
	const struct gdn_report_promotion **by_it =
	    xmalloc(st_mult(sizeof(*by_it), r->nr_promotions + 1));
	const struct gdn_report_promotion *last = NULL; /* the latest promotion so far */
	size_t k = 0;

	for (size_t i = 0; i < r->nr_promotions; i++)
		by_it[i] = &r->promotions[i];
	qsort(by_it, r->nr_promotions, sizeof(*by_it), cmp_promotion_iteration);
	for (size_t i = 0; i < r->nr; i++) { /* iterations ascending (finalize) */
		struct gdn_report_iter *it = &r->v[i];

		for (; k < r->nr_promotions && by_it[k]->iteration <= it->iteration; k++)
			if (by_it[k]->best && (!last || by_it[k]->order > last->order))
				last = by_it[k];
		if (it->outcome == GDN_REPORT_BASELINE)
			continue;
		if (last)
			it->champion_after = last->metric;
		else if (isfinite(r->baseline))
			it->champion_after = r->baseline;
	}
	free(by_it);
}

/* Lane l's spans on the active time line, and its sums. */
static void lane_finish(const struct gdn_report *r, struct gdn_report_lane *l, long long start,
			long long end)
{
	long long active = r->totals.active_ms;

	for (size_t j = 0; j < l->nr; j++) {
		l->v[j].start_ms = active_at(r, start, end, l->v[j].start_ms);
		l->v[j].end_ms = active_at(r, start, end, l->v[j].end_ms);
	}
	if (l->nr > 1)
		qsort(l->v, l->nr, sizeof(*l->v), cmp_span);
	l->agent_ms = union_ms(l, 1u << GDN_REPORT_SPAN_AGENT);
	l->validation_ms = union_ms(l, 1u << GDN_REPORT_SPAN_VALIDATION);
	l->busy_ms = union_ms(l, ~0u);
	if (l->busy_ms > active)
		l->busy_ms = active;
	l->idle_ms = active - l->busy_ms;
	l->busy = fraction(l->busy_ms, active);
	l->accel_busy = fraction(l->validation_ms < active ? l->validation_ms : active, active);
}

void gdn_report_lanes_finish(struct gdn_report *r)
{
	long long start = gdn_loop_ts_ms(r->started), end = gdn_loop_ts_ms(r->ended);
	long long active = r->totals.active_ms, busy = 0, accel = 0;

	if (!r->nr_lanes)
		lane(r, 1);
	if (start < 0 || end < start)
		start = end = 0;
	close_agents(r, r->last_ts_ms);
	for (size_t k = 0; k < r->nr_promotions; k++) {
		struct gdn_report_promotion *p = &r->promotions[k];
		const struct gdn_report_iter *it = iter_of(r, p->iteration);

		p->metric = it && it->has_metric ? it->metric : NAN;
		p->best = it && it->outcome == GDN_REPORT_PROMOTED && isfinite(p->metric);
	}
	if (gdn_report_parallel(r))
		champions_by_promotion(r);
	for (size_t k = 0; k < r->nr_promotions; k++)
		r->promotions[k].at_ms = active_at(r, start, end, r->promotions[k].at_ms);
	for (size_t i = 0; i < r->nr_tlanes; i++)
		lane_finish(r, &r->tlanes[i], start, end);
	for (size_t i = 0; i < r->nr_alanes; i++)
		lane_finish(r, &r->alanes[i], start, end);
	for (size_t i = 0; i < r->nr_lanes; i++) {
		struct gdn_report_lane *l = &r->lanes[i];

		lane_finish(r, l, start, end);
		busy = gdn_add_sat_i64(busy, l->busy_ms);
		accel =
		    gdn_add_sat_i64(accel, l->validation_ms < active ? l->validation_ms : active);
	}
	r->busy = fraction(busy, active * (long long)r->nr_lanes);
	r->accel_busy = fraction(accel, active * (long long)r->nr_lanes);
}
