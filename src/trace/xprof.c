/*
 * The original gdnctl's xprof-compare payload (marin.profiling.xprof_analysis
 * build_xprof_comparison_report), computed from two summaries:
 * framework_op_stats (self time per tf_op) and op_profile_category (self time
 * per category), each with positive and negative deltas, and derived_metrics.
 * Times are milliseconds over the whole trace (not per step), as xprof's.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

#define NO_TFOP "(no tf_op)"

struct prow {
	const char *name;
	char *family; /* framework ops only (owned) */
	double before, after, delta, norm;
};

static double ms(gdn_ps v)
{
	return (double)v / 1e9;
}

/* To the picosecond (1e-9 ms): no float noise in sums and differences. */
static json_t *jms(double v)
{
	return json_real(round(v * 1e9) / 1e9);
}

/* "jit(f)/aten::index_select/jit(_take)/and:" -> "and"; "a/b/X:Y" -> "Y"; ".N" stripped. */
static char *tfop_family(const char *op)
{
	const char *last = strrchr(op, '/'), *colon;
	struct sbuf sb = SBUF_INIT;
	size_t n;

	last = last ? last + 1 : op;
	colon = strchr(last, ':');
	if (colon && colon[1] && colon[1] != ':')
		sbuf_adds(&sb, colon + 1);
	else if (colon)
		sbuf_add(&sb, last, (size_t)(colon - last));
	else
		sbuf_adds(&sb, last);
	n = sb.len;
	while (n && isdigit((unsigned char)sb.buf[n - 1]))
		n--;
	if (n < sb.len && n > 1 && sb.buf[n - 1] == '.')
		sbuf_setlen(&sb, n - 1);
	if (!sb.len)
		sbuf_adds(&sb, op);
	return sbuf_detach(&sb, NULL);
}

static int cmp_name(const void *x, const void *y)
{
	return strcmp(((const struct prow *)x)->name, ((const struct prow *)y)->name);
}

static int cmp_desc(const void *x, const void *y)
{
	const struct prow *a = x, *b = y;

	if (a->delta != b->delta)
		return a->delta > b->delta ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp_asc(const void *x, const void *y)
{
	const struct prow *a = x, *b = y;

	if (a->delta != b->delta)
		return a->delta < b->delta ? -1 : 1;
	return strcmp(a->name, b->name);
}

static const char *key_of(const struct gdn_trace_row *r, bool tfop)
{
	return tfop && !*r->key ? NO_TFOP : r->key;
}

/* Union of the two row sets by key. */
static struct prow *join(const struct gdn_trace_rows *b, const struct gdn_trace_rows *a, bool tfop,
			 size_t *nr)
{
	struct prow *v = xcalloc(b->nr + a->nr + 1, sizeof(*v)), *out;
	size_t n = 0, m = 0;

	for (size_t i = 0; i < b->nr; i++) {
		v[n].name = key_of(&b->v[i], tfop);
		v[n++].before = ms(b->v[i].self);
	}
	for (size_t i = 0; i < a->nr; i++) {
		v[n].name = key_of(&a->v[i], tfop);
		v[n].before = NAN;
		v[n++].after = ms(a->v[i].self);
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_name);
	out = xcalloc(n + 1, sizeof(*out));
	for (size_t i = 0; i < n;) {
		struct prow r = {v[i].name, NULL, 0, 0, 0, 0};

		for (; i < n && !strcmp(v[i].name, r.name); i++) {
			if (isnan(v[i].before))
				r.after += v[i].after;
			else
				r.before += v[i].before;
		}
		r.delta = r.after - r.before;
		r.norm = r.delta;
		if (tfop)
			r.family = tfop_family(r.name);
		out[m++] = r;
	}
	free(v);
	*nr = m;
	return out;
}

static json_t *row_json(const struct prow *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(r->name));
	json_object_set_new(o, "before", jms(r->before));
	json_object_set_new(o, "after", jms(r->after));
	json_object_set_new(o, "delta", jms(r->delta));
	json_object_set_new(o, "normalized_ms", jms(r->norm));
	if (r->family)
		json_object_set_new(o, "family", json_string(r->family));
	return o;
}

/* One section; fills map (name -> normalized ms of positive deltas) when given. */
static json_t *section(const struct gdn_trace_rows *b, const struct gdn_trace_rows *a, bool tfop,
		       size_t top_k, bool normalize, double budget, json_t *map, json_t *famap)
{
	size_t n = 0;
	struct prow *v = join(b, a, tfop, &n);
	json_t *o = json_object(), *pos = json_array(), *neg = json_array();
	double ptot = 0, ntot = 0;
	size_t shown = 0;

	for (size_t i = 0; i < n; i++) {
		if (v[i].delta > 0)
			ptot += v[i].delta;
		else if (v[i].delta < 0)
			ntot += v[i].delta;
	}
	for (size_t i = 0; i < n; i++)
		if (normalize && v[i].delta > 0)
			v[i].norm = ptot > 0 ? v[i].delta / ptot * budget : 0;
	if (n)
		qsort(v, n, sizeof(*v), cmp_desc);
	for (size_t i = 0; i < n && v[i].delta > 0; i++) {
		if (shown++ < top_k || !top_k)
			json_array_append_new(pos, row_json(&v[i]));
		if (map)
			json_object_set_new(map, v[i].name, jms(v[i].norm));
	}
	if (tfop) {
		/* family_positive_deltas: positive deltas summed by family */
		json_t *fams = json_array();
		struct prow *f = xcalloc(n + 1, sizeof(*f));
		size_t nf = 0;

		for (size_t i = 0; i < n && v[i].delta > 0; i++) {
			size_t j = 0;

			while (j < nf && strcmp(f[j].name, v[i].family))
				j++;
			if (j == nf)
				f[nf++].name = v[i].family;
			f[j].delta += v[i].delta;
			f[j].norm += v[i].norm;
		}
		if (nf)
			qsort(f, nf, sizeof(*f), cmp_desc);
		for (size_t j = 0; j < nf; j++) {
			json_t *r = json_object();

			json_object_set_new(r, "family", json_string(f[j].name));
			json_object_set_new(r, "delta", jms(f[j].delta));
			json_object_set_new(r, "normalized_ms", jms(f[j].norm));
			json_array_append_new(fams, r);
			if (famap)
				json_object_set_new(famap, f[j].name, jms(f[j].norm));
		}
		json_object_set_new(o, "family_positive_deltas", fams);
		free(f);
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_asc);
	shown = 0;
	for (size_t i = 0; i < n && v[i].delta < 0; i++)
		if (shown++ < top_k || !top_k)
			json_array_append_new(neg, row_json(&v[i]));
	json_object_set_new(o, "positive_deltas", pos);
	json_object_set_new(o, "negative_deltas", neg);
	json_object_set_new(o, "positive_delta_total", jms(ptot));
	json_object_set_new(o, "negative_delta_total", jms(ntot));
	for (size_t i = 0; i < n; i++)
		free(v[i].family);
	free(v);
	return o;
}

void gdn_trace_xprof_payload(json_t *doc, const struct gdn_trace_summary *before,
			     const struct gdn_trace_summary *after, size_t top_k, bool normalize,
			     double normalize_ms)
{
	json_t *dm = json_object(), *fam = json_object(), *cat = json_object();
	json_t *idle;

	json_object_set_new(doc, "before_xplane",
			    before->path ? json_string(before->path) : json_null());
	json_object_set_new(doc, "after_xplane",
			    after->path ? json_string(after->path) : json_null());
	json_object_set_new(doc, "normalize_positive_deltas_ms",
			    normalize ? json_real(normalize_ms) : json_null());
	json_object_set_new(doc, "framework_op_stats",
			    section(&before->framework_ops, &after->framework_ops, true, top_k,
				    normalize, normalize_ms, NULL, fam));
	json_object_set_new(doc, "op_profile_category",
			    section(&before->categories, &after->categories, false, top_k,
				    normalize, normalize_ms, cat, NULL));
	idle = json_object_get(cat, "IDLE");
	json_object_set_new(dm, "idle_normalized_ms", idle ? json_incref(idle) : json_real(0));
	json_object_set_new(dm, "framework_family_normalized_ms", fam);
	json_object_set_new(dm, "op_profile_category_normalized_ms", cat);
	json_object_set_new(doc, "derived_metrics", dm);
}
