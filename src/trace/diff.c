/*
 * Diff of two trace summaries: self time per op, category and source,
 * before and after (per step when both traces have steps), sorted by the
 * size of the change; and its three renderers.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

static gdn_ps per_step(gdn_ps v, uint64_t steps)
{
	gdn_ps q;

	if (!steps)
		return v;
	q = ((v < 0 ? -v : v) + (gdn_ps)(steps / 2)) / (gdn_ps)steps;
	return v < 0 ? -q : q;
}

static int cmp_key(const void *x, const void *y)
{
	const struct gdn_trace_row *const *a = x, *const *b = y;

	return strcmp((*a)->key, (*b)->key);
}

static const struct gdn_trace_row **sorted(const struct gdn_trace_rows *rows)
{
	const struct gdn_trace_row **v = xmalloc(st_mult(rows->nr + 1, sizeof(*v)));

	for (size_t i = 0; i < rows->nr; i++)
		v[i] = &rows->v[i];
	if (rows->nr)
		qsort(v, rows->nr, sizeof(*v), cmp_key);
	return v;
}

static gdn_ps absdelta(const struct gdn_trace_diff_row *r)
{
	gdn_ps d = r->after - r->before;

	return d < 0 ? -d : d;
}

static int cmp_delta(const void *x, const void *y)
{
	const struct gdn_trace_diff_row *a = x, *b = y;
	gdn_ps da = absdelta(a), db = absdelta(b);

	if (da != db)
		return da > db ? -1 : 1;
	return strcmp(a->key, b->key);
}

static void diff_rows(const struct gdn_trace_rows *rb, const struct gdn_trace_rows *ra, uint64_t sb,
		      uint64_t sa, struct gdn_trace_diff_rows *out)
{
	const struct gdn_trace_row **b = sorted(rb), **a = sorted(ra);
	size_t i = 0, j = 0;

	while (i < rb->nr || j < ra->nr) {
		struct gdn_trace_diff_row *r;
		int c = i >= rb->nr ? 1 : j >= ra->nr ? -1 : strcmp(b[i]->key, a[j]->key);

		ALLOC_GROW(out->v, out->nr + 1, out->alloc);
		r = &out->v[out->nr++];
		memset(r, 0, sizeof(*r));
		if (c <= 0) {
			r->key = b[i]->key;
			r->count_before = b[i]->count;
			r->before = per_step(b[i]->self, sb);
			i++;
		}
		if (c >= 0) {
			r->key = a[j]->key;
			r->count_after = a[j]->count;
			r->after = per_step(a[j]->self, sa);
			j++;
		}
		r->status = c < 0 ? GDN_TRACE_DIFF_VANISHED
				  : (c > 0 ? GDN_TRACE_DIFF_APPEARED : GDN_TRACE_DIFF_BOTH);
	}
	if (out->nr)
		qsort(out->v, out->nr, sizeof(*out->v), cmp_delta);
	free(b);
	free(a);
}

void gdn_trace_diff_init(struct gdn_trace_diff *d)
{
	memset(d, 0, sizeof(*d));
}

void gdn_trace_diff_release(struct gdn_trace_diff *d)
{
	free(d->ops.v);
	free(d->categories.v);
	free(d->sources.v);
	free(d->families.v);
	free(d->framework_ops.v);
	{
		enum gdn_trace_by by = d->by;

		gdn_trace_diff_init(d);
		d->by = by;
	}
}

void gdn_trace_diff_compute(struct gdn_trace_diff *d, const struct gdn_trace_summary *before,
			    const struct gdn_trace_summary *after)
{
	uint64_t sb, sa;

	gdn_trace_diff_release(d);
	d->before = before;
	d->after = after;
	d->per_step = before->steps && after->steps;
	sb = d->per_step ? before->steps : 0;
	sa = d->per_step ? after->steps : 0;
	d->total_before = per_step(before->self, sb);
	d->total_after = per_step(after->self, sa);
	diff_rows(&before->ops, &after->ops, sb, sa, &d->ops);
	diff_rows(&before->categories, &after->categories, sb, sa, &d->categories);
	diff_rows(&before->sources, &after->sources, sb, sa, &d->sources);
	diff_rows(&before->families, &after->families, sb, sa, &d->families);
	diff_rows(&before->framework_ops, &after->framework_ops, sb, sa, &d->framework_ops);
}

/* The op-like section the diff shows, with its title; NULL for none. */
static const struct gdn_trace_diff_rows *op_rows(const struct gdn_trace_diff *d, const char **what)
{
	switch (d->by) {
	case GDN_TRACE_BY_CATEGORY:
	case GDN_TRACE_BY_SOURCE:
		return NULL;
	case GDN_TRACE_BY_FAMILY:
		*what = "op family";
		return &d->families;
	case GDN_TRACE_BY_FRAMEWORK_OP:
		*what = "framework op";
		return &d->framework_ops;
	default:
		*what = "op";
		return &d->ops;
	}
}

/* "+3.04%" ((after - before) / before, two decimals, with sign), or "new". */
static void change(struct sbuf *out, gdn_ps before, gdn_ps after)
{
	if (!before) {
		sbuf_adds(out, after ? "new" : "0.00%");
		return;
	}
	sbuf_addf(out, "%+.2f%%", (double)(after - before) * 100.0 / (double)before);
}

static const char *status_word(enum gdn_trace_diff_status s)
{
	switch (s) {
	case GDN_TRACE_DIFF_APPEARED:
		return "appeared";
	case GDN_TRACE_DIFF_VANISHED:
		return "vanished";
	default:
		return "both";
	}
}

static void side(struct sbuf *out, const char *label, const struct gdn_trace_summary *s)
{
	sbuf_addf(out, "%s %s: %llu events selected, self ", label, s->path ? s->path : "-",
		  (unsigned long long)s->events_selected);
	gdn_ps_fmt_ms(out, s->self);
	sbuf_adds(out, " ms");
	if (s->steps)
		sbuf_addf(out, ", %llu step%s", (unsigned long long)s->steps,
			  s->steps == 1 ? "" : "s");
	sbuf_adds(out, "\n");
}

static void section(const struct gdn_trace_diff_rows *rows, const char *what, size_t top,
		    bool per_step, struct sbuf *out)
{
	size_t n = top && top < rows->nr ? top : rows->nr;
	size_t w[4] = {strlen(per_step ? "before ms/step" : "before ms"),
		       strlen(per_step ? "after ms/step" : "after ms"), strlen("delta ms"),
		       strlen("change")};
	struct sbuf cell = SBUF_INIT;

	if (!rows->nr)
		return;
	/* widths first */
	for (size_t i = 0; i < n; i++) {
		const struct gdn_trace_diff_row *r = &rows->v[i];
		gdn_ps vals[3] = {r->before, r->after, r->after - r->before};

		for (int k = 0; k < 3; k++) {
			sbuf_reset(&cell);
			if (k == 2 && vals[k] > 0)
				sbuf_addch(&cell, '+');
			gdn_ps_fmt_ms(&cell, vals[k]);
			if (cell.len > w[k])
				w[k] = cell.len;
		}
		sbuf_reset(&cell);
		change(&cell, r->before, r->after);
		if (cell.len > w[3])
			w[3] = cell.len;
	}
	sbuf_addf(out, "\nBy %s, by size of the change (%zu of %zu):\n", what, n, rows->nr);
	sbuf_addf(out, "  %*s  %*s  %*s  %*s  %s\n", (int)w[0],
		  per_step ? "before ms/step" : "before ms", (int)w[1],
		  per_step ? "after ms/step" : "after ms", (int)w[2], "delta ms", (int)w[3],
		  "change", what);
	for (size_t i = 0; i < n; i++) {
		const struct gdn_trace_diff_row *r = &rows->v[i];
		gdn_ps vals[3] = {r->before, r->after, r->after - r->before};

		sbuf_adds(out, "  ");
		for (int k = 0; k < 3; k++) {
			sbuf_reset(&cell);
			if (k == 2 && vals[k] > 0)
				sbuf_addch(&cell, '+');
			gdn_ps_fmt_ms(&cell, vals[k]);
			sbuf_addf(out, "%*s  ", (int)w[k], cell.buf);
		}
		sbuf_reset(&cell);
		change(&cell, r->before, r->after);
		sbuf_addf(out, "%*s  %s", (int)w[3], cell.buf, *r->key ? r->key : "(none)");
		if (r->status != GDN_TRACE_DIFF_BOTH)
			sbuf_addf(out, " (%s)", status_word(r->status));
		sbuf_addch(out, '\n');
	}
	sbuf_release(&cell);
}

void gdn_trace_diff_render_table(const struct gdn_trace_diff *d, size_t top, struct sbuf *out)
{
	side(out, "Before:", d->before);
	side(out, "After: ", d->after);
	sbuf_addf(out, "Self time%s: ", d->per_step ? " per step" : "");
	gdn_ps_fmt_ms(out, d->total_before);
	sbuf_adds(out, " ms -> ");
	gdn_ps_fmt_ms(out, d->total_after);
	sbuf_adds(out, " ms (");
	change(out, d->total_before, d->total_after);
	sbuf_adds(out, ")\n");
	{
		const char *what = NULL;
		const struct gdn_trace_diff_rows *ops = op_rows(d, &what);

		if (d->by != GDN_TRACE_BY_SOURCE)
			section(&d->categories, "category", top, d->per_step, out);
		if (ops)
			section(ops, what, top, d->per_step, out);
		if (d->by != GDN_TRACE_BY_CATEGORY)
			section(&d->sources, "source", top, d->per_step, out);
	}
}

static void md_code(struct sbuf *out, const char *s)
{
	bool tick = strchr(s, '`') != NULL;

	sbuf_adds(out, tick ? "`` " : "`");
	sbuf_adds(out, *s ? s : "(none)");
	sbuf_adds(out, tick ? " ``" : "`");
}

static void md_section(const struct gdn_trace_diff_rows *rows, const char *what, size_t top,
		       bool per_step, struct sbuf *out)
{
	size_t n = top && top < rows->nr ? top : rows->nr;

	if (!rows->nr)
		return;
	sbuf_addf(out, "  - By %s:\n", what);
	for (size_t i = 0; i < n; i++) {
		const struct gdn_trace_diff_row *r = &rows->v[i];

		sbuf_adds(out, "    - ");
		md_code(out, r->key);
		sbuf_adds(out, ": `");
		gdn_ps_fmt_ms(out, r->before);
		sbuf_adds(out, " ms -> ");
		gdn_ps_fmt_ms(out, r->after);
		sbuf_addf(out, " ms%s` (`", per_step ? "/step" : "");
		change(out, r->before, r->after);
		sbuf_adds(out, "`");
		if (r->status != GDN_TRACE_DIFF_BOTH)
			sbuf_addf(out, ", %s", status_word(r->status));
		sbuf_adds(out, ").\n");
	}
}

void gdn_trace_diff_render_markdown(const struct gdn_trace_diff *d, size_t top, struct sbuf *out)
{
	const char *b = d->before->path ? d->before->path : "-";
	const char *a = d->after->path ? d->after->path : "-";
	const char *bs = strrchr(b, '/'), *as = strrchr(a, '/');

	sbuf_adds(out, "- Hotspots observed (self time");
	sbuf_adds(out, d->per_step ? " per step" : "");
	sbuf_adds(out, ", ");
	md_code(out, bs ? bs + 1 : b);
	sbuf_adds(out, " -> ");
	md_code(out, as ? as + 1 : a);
	sbuf_adds(out, "):\n  - Total: `");
	gdn_ps_fmt_ms(out, d->total_before);
	sbuf_adds(out, " ms -> ");
	gdn_ps_fmt_ms(out, d->total_after);
	sbuf_adds(out, " ms` (`");
	change(out, d->total_before, d->total_after);
	sbuf_adds(out, "`).\n");
	{
		const char *what = NULL;
		const struct gdn_trace_diff_rows *ops = op_rows(d, &what);

		if (d->by != GDN_TRACE_BY_SOURCE)
			md_section(&d->categories, "category", top, d->per_step, out);
		if (ops)
			md_section(ops, what, top, d->per_step, out);
		if (d->by != GDN_TRACE_BY_CATEGORY)
			md_section(&d->sources, "source", top, d->per_step, out);
	}
}

/* Returns a new reference. */
static json_t *side_json(const struct gdn_trace_summary *s)
{
	json_t *o = json_object();

	json_object_set_new(o, "path", s->path ? json_string(s->path) : json_null());
	json_object_set_new(o, "events_selected", json_integer((json_int_t)s->events_selected));
	json_object_set_new(o, "total_us", json_real(gdn_ps_to_us(s->total)));
	json_object_set_new(o, "self_us", json_real(gdn_ps_to_us(s->self)));
	json_object_set_new(o, "steps",
			    s->steps ? json_integer((json_int_t)s->steps) : json_null());
	return o;
}

/* Returns a new reference. */
static json_t *rows_json(const struct gdn_trace_diff_rows *rows, const char *keyname, size_t top)
{
	json_t *arr = json_array();
	size_t n = top && top < rows->nr ? top : rows->nr;

	for (size_t i = 0; i < n; i++) {
		const struct gdn_trace_diff_row *r = &rows->v[i];
		json_t *o = json_object();

		json_object_set_new(o, keyname, json_string(r->key));
		json_object_set_new(o, "status", json_string(status_word(r->status)));
		json_object_set_new(o, "before_us", json_real(gdn_ps_to_us(r->before)));
		json_object_set_new(o, "after_us", json_real(gdn_ps_to_us(r->after)));
		json_object_set_new(o, "delta_us", json_real(gdn_ps_to_us(r->after - r->before)));
		json_object_set_new(o, "change_pct",
				    r->before ? json_real((double)(r->after - r->before) * 100.0 /
							  (double)r->before)
					      : json_null());
		json_object_set_new(o, "count_before", json_integer((json_int_t)r->count_before));
		json_object_set_new(o, "count_after", json_integer((json_int_t)r->count_after));
		json_array_append_new(arr, o);
	}
	return arr;
}

/* Returns a new reference. */
json_t *gdn_trace_diff_json(const struct gdn_trace_diff *d, size_t top)
{
	json_t *doc = gdn_json_doc("gdnctl.trace_diff.v1");
	json_t *self = json_object();

	json_object_set_new(doc, "before", side_json(d->before));
	json_object_set_new(doc, "after", side_json(d->after));
	json_object_set_new(doc, "per_step", json_boolean(d->per_step));
	json_object_set_new(doc, "unit", json_string(d->per_step ? "us_per_step" : "us"));
	json_object_set_new(self, "before_us", json_real(gdn_ps_to_us(d->total_before)));
	json_object_set_new(self, "after_us", json_real(gdn_ps_to_us(d->total_after)));
	json_object_set_new(self, "delta_us",
			    json_real(gdn_ps_to_us(d->total_after - d->total_before)));
	json_object_set_new(doc, "self", self);
	json_object_set_new(doc, "categories", rows_json(&d->categories, "category", top));
	json_object_set_new(doc, "ops", rows_json(&d->ops, "name", top));
	json_object_set_new(doc, "sources", rows_json(&d->sources, "source", top));
	json_object_set_new(doc, "families", rows_json(&d->families, "family", top));
	json_object_set_new(doc, "framework_ops",
			    rows_json(&d->framework_ops, "framework_op", top));
	return doc;
}
