/*
 * The integrity gate's pure checks (integrity.h): two rulers, work
 * conserved, the physics floor; the findings and their policies.
 */
#include "gdnctl/compat.h"
#include <math.h>
#include <stdarg.h>
#include "gdnctl/integrity.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

const struct gdn_enum gdn_integrity_policy_enum[] = {
    {"revert", GDN_INTEGRITY_REVERT, "revert the candidate"},
    {"hold", GDN_INTEGRITY_HOLD, "revert it, kept for review (loop status lists it)"},
    {"flag", GDN_INTEGRITY_FLAG, "keep it, journaled"},
    {"off", GDN_INTEGRITY_OFF, "do not check"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_integrity_rule_enum[] = {
    {"diff", GDN_RULE_DIFF, "suspicious diff"},
    {"physics", GDN_RULE_PHYSICS, "above the device's peak"},
    {"work", GDN_RULE_WORK, "work per step fell"},
    {"rulers", GDN_RULE_RULERS, "device time disagrees"},
    {"holdout", GDN_RULE_HOLDOUT, "holdout failed"},
    GDN_ENUM_END,
};

#define DEVICE_SEED	 0x1d7e5eedULL
#define DEVICE_RESAMPLES 2000

void gdn_integrity_findings_release(struct gdn_integrity_findings *f)
{
	for (size_t i = 0; i < f->nr; i++)
		free(f->v[i].reason);
	free(f->v);
	memset(f, 0, sizeof(*f));
}

void gdn_integrity_add(struct gdn_integrity_findings *f, const struct gdn_integrity_config *c,
		       enum gdn_integrity_rule rule, const char *fmt, ...)
{
	struct gdn_integrity_finding *x;
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	if (c->policy[rule] == GDN_INTEGRITY_OFF)
		return;
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	ALLOC_GROW(f->v, f->nr + 1, f->alloc);
	x = &f->v[f->nr++];
	x->rule = rule;
	x->policy = c->policy[rule];
	x->reason = sbuf_detach(&sb, NULL);
}

const struct gdn_integrity_finding *gdn_integrity_decisive(const struct gdn_integrity_findings *f)
{
	for (size_t i = 0; i < f->nr; i++)
		if (f->v[i].policy == GDN_INTEGRITY_REVERT || f->v[i].policy == GDN_INTEGRITY_HOLD)
			return &f->v[i];
	return f->nr ? &f->v[0] : NULL;
}

static const char *const si_prefix[] = {"", "k", "M", "G", "T", "P", "E"};

/* "1.92 G" + unit: three significant digits, an SI prefix. */
static void add_si(struct sbuf *sb, double v, const char *unit)
{
	size_t i = 0;

	while (fabs(v) >= 1000 && i + 1 < ARRAY_SIZE(si_prefix)) {
		v /= 1000;
		i++;
	}
	sbuf_addf(sb, "%.3g %s%s", v, si_prefix[i], unit);
}

/* "1.92 -> 0.71 G" + unit: both in the prefix of the first. */
static void add_si_pair(struct sbuf *sb, double a, double b, const char *unit)
{
	size_t i = 0;

	while (fabs(a) >= 1000 && i + 1 < ARRAY_SIZE(si_prefix)) {
		a /= 1000;
		b /= 1000;
		i++;
	}
	sbuf_addf(sb, "%.3g -> %.3g %s%s", a, b, si_prefix[i], unit);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* The lower quartile of n values (v is sorted in place). */
static double lower_quartile(double *v, size_t n)
{
	double pos = 0.25 * (double)(n - 1);
	size_t i = (size_t)pos;

	qsort(v, n, sizeof(*v), cmp_double);
	return i + 1 < n ? v[i] + (pos - (double)i) * (v[i + 1] - v[i]) : v[i];
}

/* xorshift64*: the bootstrap's deterministic generator. */
static size_t draw(unsigned long long *s, size_t n)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (size_t)((*s * 2685821657736338717ULL) >> 11) % n;
}

/* One resample of v (n values) into tmp; its lower quartile. */
static double resampled(const double *v, size_t n, double *tmp, unsigned long long *s)
{
	for (size_t i = 0; i < n; i++)
		tmp[i] = v[draw(s, n)];
	return lower_quartile(tmp, n);
}

int gdn_integrity_device_ratio(const struct gdn_integrity_input *in, double confidence,
			       double *ratio, double *lo, double *hi)
{
	size_t na = in->n_champion, nb = in->n_candidate, m = na > nb ? na : nb;
	double *tmp, *r;
	unsigned long long s = DEVICE_SEED;

	for (size_t i = 0; i < na; i++)
		if (!(in->dev_champion[i] > 0) || !isfinite(in->dev_champion[i]))
			return -1;
	for (size_t i = 0; i < nb; i++)
		if (!(in->dev_candidate[i] > 0) || !isfinite(in->dev_candidate[i]))
			return -1;
	if (!na || !nb)
		return -1;
	tmp = xcalloc(m, sizeof(*tmp));
	r = xcalloc(DEVICE_RESAMPLES, sizeof(*r));
	memcpy(tmp, in->dev_champion, na * sizeof(*tmp));
	*ratio = lower_quartile(tmp, na);
	memcpy(tmp, in->dev_candidate, nb * sizeof(*tmp));
	*ratio /= lower_quartile(tmp, nb);
	for (size_t k = 0; k < DEVICE_RESAMPLES; k++) {
		double a = resampled(in->dev_champion, na, tmp, &s);

		r[k] = a / resampled(in->dev_candidate, nb, tmp, &s);
	}
	qsort(r, DEVICE_RESAMPLES, sizeof(*r), cmp_double);
	*lo = r[(size_t)((1 - confidence) / 2 * (DEVICE_RESAMPLES - 1))];
	*hi = r[(size_t)((1 + confidence) / 2 * (DEVICE_RESAMPLES - 1))];
	free(tmp);
	free(r);
	return 0;
}

void gdn_integrity_check_rulers(const struct gdn_integrity_config *c,
				const struct gdn_integrity_input *in,
				struct gdn_integrity_findings *f)
{
	double r, lo, hi, need;

	if (!isfinite(in->metric_ratio) || in->metric_ratio <= 1 ||
	    gdn_integrity_device_ratio(in, c->confidence, &r, &lo, &hi))
		return;
	need = 1 + c->rulers_share * (in->metric_ratio - 1);
	if (hi >= need)
		return;
	gdn_integrity_add(f, c, GDN_RULE_RULERS,
			  "device time disagrees: the metric claims x%.3g, the device time per "
			  "step shows x%.3g [%.3g, %.3g] (%.0f%% interval, %zu and %zu steps; at "
			  "least x%.3g needed)",
			  in->metric_ratio, r, lo, hi, c->confidence * 100, in->n_champion,
			  in->n_candidate, need);
}

static double fig(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_number(v) ? json_number_value(v) : NAN;
}

void gdn_integrity_check_work(const struct gdn_integrity_config *c,
			      const struct gdn_integrity_input *in,
			      struct gdn_integrity_findings *f)
{
	static const struct {
		const char *key, *unit;
	} figs[] = {
	    {"flops", "FLOP"}, {"bytes", "B"}, {"ops", "ops"}, {"custom_calls", "custom calls"}};

	for (size_t i = 0; i < ARRAY_SIZE(figs); i++) {
		double a = fig(in->work_champion, figs[i].key);
		double b = fig(in->work_candidate, figs[i].key);
		double drop;
		struct sbuf sb = SBUF_INIT;

		if (!isfinite(a) || !isfinite(b) || a <= 0 ||
		    strvec_contains(&c->work_allow, figs[i].key))
			continue;
		drop = (a - b) / a * 100;
		if (drop <= c->work_max_drop_pct)
			continue;
		add_si_pair(&sb, a, b, figs[i].unit);
		gdn_integrity_add(f, c, GDN_RULE_WORK,
				  "work per step fell %.0f %%: %s (%s per step; at most %.0f %% "
				  "allowed, integrity.work_allow lists none for it)",
				  drop, sb.buf, figs[i].key, c->work_max_drop_pct);
		sbuf_release(&sb);
		return;
	}
}

/* One rate against its peak: a finding when it is above. */
static bool over_peak(const struct gdn_integrity_config *c, struct gdn_integrity_findings *f,
		      const struct gdn_peak *peak, double rate, double cap, const char *unit,
		      const char *what)
{
	struct sbuf a = SBUF_INIT, b = SBUF_INIT;

	if (!(cap > 0) || !isfinite(rate) || rate <= cap)
		return false;
	add_si(&a, rate, unit);
	add_si(&b, cap, unit);
	gdn_integrity_add(f, c, GDN_RULE_PHYSICS,
			  "above the device's peak: %s implied by %s > %s of %s (%s)", a.buf, what,
			  b.buf, peak->kind, peak->source);
	sbuf_release(&a);
	sbuf_release(&b);
	return true;
}

void gdn_integrity_check_physics(const struct gdn_integrity_config *c,
				 const struct gdn_integrity_input *in,
				 struct gdn_integrity_findings *f)
{
	const struct gdn_peak *peak = c->device ? gdn_peaks_find(&c->peaks, c->device) : NULL;
	json_t *w = in->work_candidate;
	json_t *op = json_object_get(w, "peak_op");
	const char *name = json_string_value(json_object_get(op, "name"));
	char *what;

	if (!peak || !w)
		return;
	what = xstrfmt("op '%.80s'", name ? name : "?");
	/* bytes per op are not bounded: an async copy-start carries its whole transfer */
	if (!over_peak(c, f, peak, fig(op, "flops_per_s"), peak->flops, "FLOP/s", what) &&
	    !over_peak(c, f, peak, fig(w, "flops_per_s"), peak->flops, "FLOP/s", "the step"))
		over_peak(c, f, peak, fig(w, "bytes_per_s"), peak->bytes, "B/s", "the step");
	free(what);
}
