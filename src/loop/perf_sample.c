/*
 * The measured performance policy, its samples (perf.h): metric extraction
 * (cli, wandb, trace), a measurement's samples, the ruler, the median and
 * the MAD of repeated samples. docs/performance-policy.md describes them.
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

/* ---- metric extraction ---- */

/* Length of a number `[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?` at p, or 0. */
static size_t number_len(const char *p, const char *end)
{
	const char *q = p, *digits;
	bool any = false;

	if (q < end && (*q == '+' || *q == '-'))
		q++;
	digits = q;
	while (q < end && isdigit((unsigned char)*q))
		q++;
	any = q > digits;
	if (q < end && *q == '.') {
		const char *frac = ++q;

		while (q < end && isdigit((unsigned char)*q))
			q++;
		if (!any && q == frac)
			return 0;
		any = true;
	}
	if (!any)
		return 0;
	if (q < end && (*q == 'e' || *q == 'E')) {
		const char *e = q + 1;

		if (e < end && (*e == '+' || *e == '-'))
			e++;
		if (e < end && isdigit((unsigned char)*e)) {
			while (e < end && isdigit((unsigned char)*e))
				e++;
			q = e;
		}
	}
	return (size_t)(q - p);
}

static bool skippable(char ch)
{
	return !(isdigit((unsigned char)ch) || ch == 'e' || ch == 'E' || ch == '+' || ch == '-');
}

int gdn_perf_parse_cli_metric(const char *output, size_t len, const char *metric, double *value)
{
	size_t mlen = strlen(metric), pos = 0;
	const char *end = output + len, *last = NULL;
	size_t last_len = 0;
	char buf[128];
	double v;

	if (!mlen)
		return GDN_ENOTFOUND;
	while (pos < len) {
		const char *hit = memmem(output + pos, len - pos, metric, mlen);
		const char *p;
		size_t n;

		if (!hit)
			break;
		p = hit + mlen;
		while (p < end && skippable(*p))
			p++;
		n = number_len(p, end);
		if (!n) {
			pos = (size_t)(hit - output) + 1;
			continue;
		}
		last = p;
		last_len = n;
		pos = (size_t)(p + n - output);
	}
	if (!last || last_len >= sizeof(buf))
		return GDN_ENOTFOUND;
	memcpy(buf, last, last_len);
	buf[last_len] = '\0';
	v = strtod(buf, NULL);
	if (!isfinite(v))
		return GDN_ENOTFOUND;
	*value = v;
	return 0;
}

/* The bucket a trace metric names: 0, with *bucket and *name (owned) set. */
static int trace_metric_bucket(const char *metric, enum gdn_perf_bucket *bucket, char **name)
{
	size_t len = strlen(metric), pre;

	*name = NULL;
	if (!strcmp(metric, "trace/step_ms")) {
		*bucket = GDN_PERF_BUCKET_STEP;
		return 0;
	}
	if (!strncmp(metric, "trace/category/", 15)) {
		*bucket = GDN_PERF_BUCKET_CATEGORY;
		pre = 15;
	} else if (!strncmp(metric, "trace/op/", 9)) {
		*bucket = GDN_PERF_BUCKET_OP;
		pre = 9;
	} else {
		return -1;
	}
	if (len <= pre + 3 || strcmp(metric + len - 3, "_ms"))
		return -1;
	*name = xstrndup(metric + pre, len - pre - 3);
	return 0;
}

static double ps_per_step_ms(gdn_ps v, uint64_t steps)
{
	return gdn_ps_to_us(v) / 1000.0 / (double)steps;
}

int gdn_perf_trace_metric(const struct gdn_trace_summary *s, const char *metric, double *value,
			  struct gdn_err *err)
{
	enum gdn_perf_bucket bucket;
	const struct gdn_trace_rows *rows;
	char *name = NULL;
	size_t i;
	int ret = 0;

	if (trace_metric_bucket(metric, &bucket, &name)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "unknown trace metric '%s' (trace/step_ms, "
				  "trace/category/NAME_ms, trace/op/NAME_ms)",
				  metric);
		goto out;
	}
	if (!s->steps) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "trace '%s' has no steps",
				  s->path ? s->path : "-");
		goto out;
	}
	if (bucket == GDN_PERF_BUCKET_STEP) {
		*value = ps_per_step_ms(s->self, s->steps);
		goto out;
	}
	rows = bucket == GDN_PERF_BUCKET_OP ? &s->ops : &s->categories;
	*value = 0;
	for (i = 0; i < rows->nr; i++) {
		if (!strcmp(rows->v[i].key, name)) {
			*value = ps_per_step_ms(rows->v[i].self, s->steps);
			break;
		}
	}
out:
	free(name);
	return ret;
}

/* ---- samples ---- */

void gdn_perf_measurement_release(struct gdn_perf_measurement *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++) {
		free(m->v[i].source);
		free(m->v[i].why);
		json_decref(m->v[i].trace);
	}
	FREE_AND_NULL(m->v);
	m->nr = m->alloc = 0;
	FREE_AND_NULL(m->run_url);
}

struct gdn_perf_sample *gdn_perf_measurement_add(struct gdn_perf_measurement *m)
{
	struct gdn_perf_sample *s;

	ALLOC_GROW(m->v, m->nr + 1, m->alloc);
	s = &m->v[m->nr++];
	memset(s, 0, sizeof(*s));
	return s;
}

void gdn_perf_sample_set_value(struct gdn_perf_sample *s, const char *source, double value)
{
	free(s->source);
	s->source = source ? xstrdup(source) : NULL;
	s->has_value = isfinite(value);
	s->value = s->has_value ? value : 0;
}

int gdn_perf_sample_set_cli(struct gdn_perf_sample *s, const char *metric, const char *output,
			    size_t len)
{
	double v;
	int ret = gdn_perf_parse_cli_metric(output, len, metric, &v);

	if (!ret)
		gdn_perf_sample_set_value(s, "cli", v);
	return ret;
}

int gdn_perf_sample_set_wandb(struct gdn_perf_sample *s, const struct gdn_metric *m)
{
	if (m->status != GDN_METRIC_OK)
		return GDN_ENOTFOUND;
	gdn_perf_sample_set_value(s, "wandb", m->value);
	return s->has_value ? 0 : GDN_ENOTFOUND;
}

/* New reference: {NAME: per-step ms} of rows; with `only`, just those names. */
static json_t *rows_json(const struct gdn_trace_rows *rows, uint64_t steps,
			 const struct strvec *only)
{
	json_t *o = json_object(); /* new */
	size_t i;

	for (i = 0; i < rows->nr; i++) {
		if (only && !strvec_contains(only, rows->v[i].key))
			continue;
		json_object_set_new(o, rows->v[i].key,
				    json_real(ps_per_step_ms(rows->v[i].self, steps)));
	}
	return o;
}

/* The value of a trace metric in figures (absent bucket: 0). */
double perf_figures_value(json_t *fig, enum gdn_perf_bucket bucket, const char *name)
{
	json_t *v;

	if (bucket == GDN_PERF_BUCKET_STEP)
		v = json_object_get(fig, "step_ms"); /* borrowed */
	else
		v = json_object_get(
		    json_object_get(fig, bucket == GDN_PERF_BUCKET_OP ? "ops" : "categories"),
		    name);
	return json_is_number(v) ? json_number_value(v) : 0;
}

bool perf_figures_has(json_t *fig, enum gdn_perf_bucket bucket, const char *name)
{
	if (bucket == GDN_PERF_BUCKET_STEP)
		return json_is_number(json_object_get(fig, "step_ms"));
	return json_is_number(json_object_get(
	    json_object_get(fig, bucket == GDN_PERF_BUCKET_OP ? "ops" : "categories"), name));
}

int gdn_perf_sample_set_trace(struct gdn_perf_sample *s, const struct gdn_perf_config *c,
			      const struct gdn_trace_summary *t, struct gdn_err *err)
{
	struct strvec ops = STRVEC_INIT;
	enum gdn_perf_bucket bucket = GDN_PERF_BUCKET_STEP;
	char *name = NULL;
	json_t *fig = NULL;
	size_t i;
	int ret = 0;

	if (!t->steps) {
		ret = gdn_err_set(err, GDN_ENOTFOUND, "trace '%s' has no steps",
				  t->path ? t->path : "-");
		goto out;
	}
	for (i = 0; i < c->gates.nr; i++)
		if (c->gates.v[i].bucket == GDN_PERF_BUCKET_OP)
			strvec_push(&ops, c->gates.v[i].name);
	if (gdn_perf_is_trace_metric(c->metric) && trace_metric_bucket(c->metric, &bucket, &name)) {
		ret = gdn_err_set(err, GDN_EUSAGE,
				  "unknown trace metric '%s' (trace/step_ms, "
				  "trace/category/NAME_ms, trace/op/NAME_ms)",
				  c->metric);
		goto out;
	}
	if (name && bucket == GDN_PERF_BUCKET_OP)
		strvec_push(&ops, name);
	fig = json_object(); /* new */
	json_object_set_new(fig, "steps", json_integer((json_int_t)t->steps));
	json_object_set_new(fig, "step_ms", json_real(ps_per_step_ms(t->self, t->steps)));
	if (t->step_nr) {
		json_t *per = json_array(); /* new, stolen below */

		for (i = 0; i < t->step_nr; i++)
			json_array_append_new(per,
					      json_real(gdn_ps_to_us(t->step_v[i].self) / 1000.0));
		json_object_set_new(fig, "step_samples_ms", per);
	}
	json_object_set_new(fig, "categories", rows_json(&t->categories, t->steps, NULL));
	json_object_set_new(fig, "ops", rows_json(&t->ops, t->steps, &ops));
	if (gdn_perf_is_trace_metric(c->metric))
		gdn_perf_sample_set_value(s, "trace", perf_figures_value(fig, bucket, name));
	json_decref(s->trace);
	s->trace = fig;
	fig = NULL;
out:
	json_decref(fig);
	free(name);
	strvec_clear(&ops);
	return ret;
}

size_t gdn_perf_measurement_split_steps(struct gdn_perf_measurement *m,
					const struct gdn_perf_config *c)
{
	struct gdn_perf_sample *s;
	json_t *per;
	size_t n;

	if (!m->nr)
		return 0;
	s = &m->v[m->nr - 1];
	per = json_object_get(s->trace, "step_samples_ms"); /* borrowed */
	n = json_array_size(per);
	if (strcmp(c->metric, "trace/step_ms") || !s->has_value || !s->source ||
	    strcmp(s->source, "trace") || n < 2)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (!json_is_number(json_array_get(per, i)))
			return 1;
	gdn_perf_sample_set_value(s, "trace", json_number_value(json_array_get(per, 0)));
	/* the figures (and per) stay with the first sample; add may move m->v, not them */
	for (size_t i = 1; i < n; i++)
		gdn_perf_sample_set_value(gdn_perf_measurement_add(m), "trace",
					  json_number_value(json_array_get(per, i)));
	return n;
}

const char *gdn_perf_ruler(const char *configured, bool marin, bool trace, bool *decide,
			   const char **why)
{
	const char *w = "default";

	*decide = false;
	if (configured && *configured) {
		if (why)
			*why = "configured";
		return configured;
	}
	if (marin) {
		w = "Marin default";
	} else if (trace) {
		w = "no --perf-metric: from the profile's output, else trace/step_ms, the device "
		    "time per step of its trace, decided at the baseline";
		*decide = true;
	}
	if (why)
		*why = w;
	return GDN_PERF_DEFAULT_METRIC;
}

void gdn_perf_ruler_use_steps(struct gdn_perf_config *c)
{
	c->metric = "trace/step_ms";
	/* the direction resolved for the default metric was a rate's: a time's now */
	c->direction = GDN_PERF_LOWER;
}

bool gdn_perf_ruler_pick(struct gdn_perf_config *c, struct gdn_perf_measurement *m)
{
	struct gdn_perf_measurement old = *m;
	bool steps = false;

	for (size_t i = 0; i < m->nr; i++) {
		if (m->v[i].has_value)
			return false;
		steps |= json_is_number(json_object_get(m->v[i].trace, "step_ms"));
	}
	if (!steps)
		return false;
	gdn_perf_ruler_use_steps(c);
	m->v = NULL;
	m->nr = m->alloc = 0;
	for (size_t i = 0; i < old.nr; i++) {
		struct gdn_perf_sample *s = gdn_perf_measurement_add(m);
		json_t *ms = json_object_get(old.v[i].trace, "step_ms");

		s->trace = old.v[i].trace; /* moved */
		if (json_is_number(ms)) {
			gdn_perf_sample_set_value(s, "trace", json_number_value(ms));
			gdn_perf_measurement_split_steps(m, c);
		}
		free(old.v[i].source);
		free(old.v[i].why); /* the default metric's: it had no value */
	}
	free(old.v);
	return true;
}

/* ---- statistics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double gdn_perf_median(double *v, size_t n)
{
	if (!n)
		BUG("median of nothing");
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double gdn_perf_mad(const double *v, size_t n)
{
	double *tmp = xmalloc(st_mult(n, sizeof(*tmp)));
	double med, mad;
	size_t i;

	memcpy(tmp, v, n * sizeof(*tmp));
	med = gdn_perf_median(tmp, n);
	for (i = 0; i < n; i++)
		tmp[i] = fabs(v[i] - med);
	mad = gdn_perf_median(tmp, n);
	free(tmp);
	return mad;
}
