/*
 * Renderers of a trace summary: an aligned table for people, markdown for
 * a running log's "Hotspots observed" section, and JSON for programs.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

const struct gdn_enum gdn_trace_by_enum[] = {
    {"family", GDN_TRACE_BY_FAMILY, "one row per op family (ops without their .N)"},
    {"op", GDN_TRACE_BY_OP, "one row per op"},
    {"framework-op", GDN_TRACE_BY_FRAMEWORK_OP, "one row per framework op (tf_op)"},
    {"category", GDN_TRACE_BY_CATEGORY, "one row per op category"},
    {"source", GDN_TRACE_BY_SOURCE, "one row per source line"},
    {"device", GDN_TRACE_BY_DEVICE, "one row per device"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_trace_diff_by_enum[] = {
    {"family", GDN_TRACE_BY_FAMILY, "categories, op families (renumbered ops match), sources"},
    {"op", GDN_TRACE_BY_OP, "categories, ops, sources"},
    {"framework-op", GDN_TRACE_BY_FRAMEWORK_OP, "categories, framework ops, sources"},
    {"category", GDN_TRACE_BY_CATEGORY, "categories only"},
    {"source", GDN_TRACE_BY_SOURCE, "sources only"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_trace_format_enum[] = {
    {"table", GDN_TRACE_TABLE, "aligned columns"},
    {"markdown", GDN_TRACE_MARKDOWN, "a Markdown table"},
    {"json", GDN_TRACE_JSON, "a JSON document"},
    GDN_ENUM_END,
};

void gdn_ps_fmt_ms(struct sbuf *out, gdn_ps v)
{
	unsigned __int128 m = v < 0 ? (unsigned __int128)-v : (unsigned __int128)v;
	unsigned __int128 us = (m + 500000) / 1000000; /* half away from zero */
	unsigned long long ms = (unsigned long long)(us / 1000),
			   frac = (unsigned long long)(us % 1000);

	sbuf_addf(out, "%s%llu.%03llu", v < 0 && us ? "-" : "", ms, frac);
}

double gdn_ps_to_us(gdn_ps v)
{
	/* split so that large values keep their microsecond fraction */
	gdn_ps whole = v / GDN_PS_PER_US, frac = v % GDN_PS_PER_US;

	return (double)whole + (double)frac / 1e6;
}

#define PS_PER_MS ((gdn_ps)1000000000)

/* ps in us with 3 decimals (to the ns), rounded half away from zero. */
static void fmt_us(struct sbuf *out, gdn_ps v)
{
	unsigned __int128 m = v < 0 ? (unsigned __int128)-v : (unsigned __int128)v;
	unsigned __int128 ns = (m + 500) / 1000;

	sbuf_addf(out, "%s%llu.%03llu", v < 0 && ns ? "-" : "", (unsigned long long)(ns / 1000),
		  (unsigned long long)(ns % 1000));
}

/* Units adapt: under 1 ms in us, else ms; with the unit. */
static void fmt_time(struct sbuf *out, gdn_ps v)
{
	if (v > -PS_PER_MS && v < PS_PER_MS) {
		fmt_us(out, v);
		sbuf_adds(out, " us");
	} else {
		gdn_ps_fmt_ms(out, v);
		sbuf_adds(out, " ms");
	}
}

static void fmt_in(struct sbuf *out, gdn_ps v, bool us)
{
	if (us)
		fmt_us(out, v);
	else
		gdn_ps_fmt_ms(out, v);
}

static gdn_ps div_round(gdn_ps v, uint64_t n)
{
	gdn_ps q;

	if (!n)
		return v;
	q = (v < 0 ? -v : v) + (gdn_ps)(n / 2);
	q /= (gdn_ps)n;
	return v < 0 ? -q : q;
}

static const struct gdn_trace_rows *rows_by(const struct gdn_trace_summary *s, enum gdn_trace_by by)
{
	switch (by) {
	case GDN_TRACE_BY_CATEGORY:
		return &s->categories;
	case GDN_TRACE_BY_SOURCE:
		return &s->sources;
	case GDN_TRACE_BY_DEVICE:
		return &s->devices;
	case GDN_TRACE_BY_FAMILY:
		return &s->families;
	case GDN_TRACE_BY_FRAMEWORK_OP:
		return &s->framework_ops;
	default:
		return &s->ops;
	}
}

static const char *by_name(enum gdn_trace_by by)
{
	switch (by) {
	case GDN_TRACE_BY_CATEGORY:
		return "category";
	case GDN_TRACE_BY_SOURCE:
		return "source";
	case GDN_TRACE_BY_DEVICE:
		return "device";
	case GDN_TRACE_BY_FAMILY:
		return "op family";
	case GDN_TRACE_BY_FRAMEWORK_OP:
		return "framework op";
	default:
		return "op";
	}
}

static const char *mode_name(enum gdn_trace_mode m)
{
	switch (m) {
	case GDN_TRACE_MODE_XLA:
		return "xla";
	case GDN_TRACE_MODE_KINETO:
		return "kineto";
	case GDN_TRACE_MODE_CUSTOM:
		return "custom";
	default:
		return "none";
	}
}

static const char *mode_text(enum gdn_trace_mode m)
{
	switch (m) {
	case GDN_TRACE_MODE_XLA:
		return "XLA Ops threads of /device: processes";
	case GDN_TRACE_MODE_KINETO:
		return "Kineto device events (kernel, gpu_memcpy, gpu_memset)";
	case GDN_TRACE_MODE_CUSTOM:
		return "the threads and categories asked for";
	default:
		return "nothing";
	}
}

/* "gated_deltanet.py:2361" from "/long/path/gated_deltanet.py:2361". */
static const char *short_source(const char *src)
{
	const char *slash = strrchr(src, '/');

	return slash ? slash + 1 : src;
}

static const char *shown(const char *s, const char *none)
{
	return *s ? s : none;
}

static void pct(struct sbuf *out, gdn_ps part, gdn_ps whole)
{
	if (whole <= 0)
		sbuf_adds(out, "-");
	else
		sbuf_addf(out, "%.1f%%", (double)part * 100.0 / (double)whole);
}

static void device_list(const struct gdn_trace_summary *s, struct sbuf *out)
{
	for (size_t i = 0; i < s->devices.nr; i++)
		sbuf_addf(out, "%s%s", i ? ", " : "", s->devices.v[i].key);
}

/* ---- aligned tables ---- */

#define MAXCOLS 10

struct table {
	size_t ncols;
	size_t shrink; /* the name column shortened to fit `width`; ncols: none */
	size_t width;  /* the terminal's columns; 0: never shorten */
	bool right[MAXCOLS];
	size_t width_of[MAXCOLS];
	struct strvec cells; /* row-major */
};

static void table_init(struct table *t, const char *const *heads, const bool *right, size_t n)
{
	memset(t, 0, sizeof(*t));
	strvec_init(&t->cells);
	t->ncols = n;
	t->shrink = n;
	for (size_t i = 0; i < n; i++) {
		t->right[i] = right[i];
		strvec_push(&t->cells, heads[i]);
		t->width_of[i] = strlen(heads[i]);
	}
}

static void table_cell(struct table *t, struct sbuf *cell)
{
	size_t col = t->cells.nr % t->ncols;

	strvec_push(&t->cells, cell->buf);
	if (cell->len > t->width_of[col])
		t->width_of[col] = cell->len;
	sbuf_reset(cell);
}

/* The start of the UTF-8 character at or before s[i]. */
static size_t char_start(const char *s, size_t i)
{
	while (i && ((unsigned char)s[i] & 0xc0) == 0x80)
		i--;
	return i;
}

/* s[0, head) "..." s[from, to) "..." s[n - tail, n): each cut at a character start. */
static char *elide(const char *s, size_t head, size_t from, size_t to, size_t tail)
{
	size_t n = strlen(s);
	struct sbuf sb = SBUF_INIT;

	head = char_start(s, head);
	sbuf_add(&sb, s, head);
	sbuf_adds(&sb, "...");
	if (from < to) {
		from = char_start(s, from);
		to = char_start(s, to);
		sbuf_add(&sb, s + from, to - from);
		sbuf_adds(&sb, "...");
	}
	tail = n - char_start(s, n - tail);
	sbuf_adds(&sb, s + n - tail);
	return sbuf_detach(&sb, NULL);
}

/* "abcdefghij" in 7 columns: "ab...ij" (the middle goes; UTF-8 kept whole). */
static char *shorten(const char *s, size_t width)
{
	size_t n = strlen(s), head;

	if (n <= width || width < 5)
		return xstrdup(s);
	head = (width - 3 + 1) / 2;
	return elide(s, head, 0, 0, width - 3 - head);
}

/*
 * s in `width` columns with its byte `pos` (where it differs from a name
 * that shortened alike) in view: "nvj...168x1...TNN". A copy of s when it
 * cannot be done in that width.
 */
static char *shorten_around(const char *s, size_t width, size_t pos)
{
	size_t n = strlen(s), budget, head, tail, mid, from;

	if (n <= width)
		return xstrdup(s);
	if (width < 11 || pos >= n)
		return xstrdup(s);
	budget = width - 6;
	head = budget / 4 ? budget / 4 : 1;
	tail = budget / 4 ? budget / 4 : 1;
	mid = budget - head - tail;
	from = pos > mid / 2 ? pos - mid / 2 : 0;
	if (from <= head) /* the difference is near the start: one cut, a longer head */
		return elide(s, width - 3 - tail, 0, 0, tail);
	if (from + mid >= n - tail) /* near the end: one cut, a longer tail */
		return elide(s, head, 0, 0, width - 3 - head);
	return elide(s, head, from, from + mid, tail);
}

/* The first byte where a and b differ. */
static size_t first_difference(const char *a, const char *b)
{
	size_t i = 0;

	while (a[i] && a[i] == b[i])
		i++;
	return i;
}

/* For qsort_r-free sorting: the shown texts and the row of each. */
struct shown_ix {
	const char *text;
	size_t row;
};

static int cmp_shown(const void *a, const void *b)
{
	const struct shown_ix *x = a, *y = b;
	int c = strcmp(x->text, y->text);

	return c ? c : (x->row > y->row) - (x->row < y->row);
}

/*
 * The first two rows whose different names print the same: shortened
 * again around where the two differ (which sets them apart), or, for a
 * row already shortened so four times, printed whole. false when no two
 * clash.
 */
static bool fix_clash(char **shown, const char *const *orig, unsigned char *tried,
		      struct shown_ix *ix, size_t rows, size_t width)
{
	for (size_t r = 0; r < rows; r++)
		ix[r] = (struct shown_ix){shown[r], r};
	qsort(ix, rows, sizeof(*ix), cmp_shown);
	for (size_t k = 0; k + 1 < rows; k++) {
		size_t a = ix[k].row, b = ix[k + 1].row, pos = first_difference(orig[a], orig[b]);
		bool around = tried[a] < 4 && tried[b] < 4;

		if (strcmp(shown[a], shown[b]) || !strcmp(orig[a], orig[b]))
			continue;
		free(shown[a]);
		free(shown[b]);
		shown[a] = around ? shorten_around(orig[a], width, pos) : xstrdup(orig[a]);
		shown[b] = around ? shorten_around(orig[b], width, pos) : xstrdup(orig[b]);
		tried[a]++;
		tried[b]++;
		return true;
	}
	return false;
}

/*
 * Two different names never print the same. orig[r]: row r's name,
 * shown[r]: what is printed (shortened to width). Ends: each fix counts
 * its rows' tries or prints them whole, and whole names all differ.
 */
static void keep_apart(char **shown, const char *const *orig, size_t rows, size_t width)
{
	struct shown_ix *ix = xcalloc(rows ? rows : 1, sizeof(*ix));
	unsigned char *tried = xcalloc(rows ? rows : 1, sizeof(*tried));

	while (fix_clash(shown, orig, tried, ix, rows, width))
		;
	free(tried);
	free(ix);
}

/* Narrow the name column (never below 16) so that the table fits t->width columns. */
static void table_fit(struct table *t)
{
	size_t total = 0, c = t->shrink, rows, w;
	const char **orig;
	char **shown;

	if (c >= t->ncols || !t->width)
		return;
	for (size_t i = 0; i < t->ncols; i++)
		total += t->width_of[i] + 2;
	if (total <= t->width || t->width_of[c] <= 16)
		return;
	/* (the excess may be wider than the column: never below 16, no wrap-around) */
	w = total - t->width + 16 >= t->width_of[c] ? 16 : t->width_of[c] - (total - t->width);
	rows = t->cells.nr / t->ncols - 1;
	orig = xcalloc(rows ? rows : 1, sizeof(*orig));
	shown = xcalloc(rows ? rows : 1, sizeof(*shown));
	for (size_t r = 0; r < rows; r++) {
		orig[r] = t->cells.v[(r + 1) * t->ncols + c];
		shown[r] = shorten(orig[r], w);
	}
	keep_apart(shown, orig, rows, w);
	t->width_of[c] = strlen(t->cells.v[c]);
	for (size_t r = 0; r < rows; r++) {
		size_t i = (r + 1) * t->ncols + c;

		free((char *)t->cells.v[i]);
		t->cells.v[i] = shown[r];
		if (strlen(shown[r]) > t->width_of[c])
			t->width_of[c] = strlen(shown[r]);
	}
	free(orig);
	free(shown);
}

static void table_render(struct table *t, struct sbuf *out)
{
	table_fit(t);
	for (size_t i = 0; i < t->cells.nr; i++) {
		size_t col = i % t->ncols, len = strlen(t->cells.v[i]);
		bool last = col == t->ncols - 1;

		sbuf_adds(out, col ? "  " : "  ");
		if (t->right[col])
			sbuf_addf(out, "%*s", (int)(t->width_of[col] - len), "");
		sbuf_adds(out, t->cells.v[i]);
		if (!t->right[col] && !last)
			sbuf_addf(out, "%*s", (int)(t->width_of[col] - len), "");
		if (last)
			sbuf_addch(out, '\n');
	}
	strvec_clear(&t->cells);
}

static void header(const struct gdn_trace_summary *s, struct sbuf *out)
{
	sbuf_addf(out, "Trace:     %s\n", s->path ? s->path : "-");
	if (s->format) {
		sbuf_addf(out, "Format:    %s, host%s ", s->format, s->hosts.nr == 1 ? "" : "s");
		for (size_t i = 0; i < s->hosts.nr; i++)
			sbuf_addf(out, "%s%s", i ? ", " : "", s->hosts.v[i]);
		sbuf_addch(out, '\n');
	}
	sbuf_addf(out, "Selection: %s (%llu track%s",
		  s->format && s->mode == GDN_TRACE_MODE_XLA
		      ? "XLA Ops and Sparse Core Ops lines of TPU planes, Stream lines of GPU "
			"planes"
		      : mode_text(s->mode),
		  (unsigned long long)s->tracks_selected, s->tracks_selected == 1 ? "" : "s");
	if (s->devices.nr) {
		sbuf_adds(out, " on ");
		device_list(s, out);
	}
	sbuf_adds(out, ")\n");
	sbuf_addf(out, "Events:    %llu in %s, %llu complete, %llu selected\n",
		  (unsigned long long)s->events_total, s->format ? "XEvents" : "traceEvents",
		  (unsigned long long)s->events_complete, (unsigned long long)s->events_selected);
	sbuf_adds(out, "Time:      self ");
	fmt_time(out, s->self);
	sbuf_adds(out, ", total ");
	fmt_time(out, s->total);
	if (s->steps) {
		sbuf_addf(out, "; %llu step%s (%s): self ", (unsigned long long)s->steps,
			  s->steps == 1 ? "" : "s", s->steps_from);
		fmt_time(out, div_round(s->self, s->steps));
		sbuf_adds(out, " per step");
		if (s->devices.nr > 1) {
			/* the devices run in parallel: say it is a sum */
			sbuf_addf(out, ", summed over %zu devices (", s->devices.nr);
			fmt_time(out, div_round(div_round(s->self, s->steps), s->devices.nr));
			sbuf_adds(out, " per step per device)");
		}
	}
	sbuf_adds(out, "\n");
}

void gdn_trace_render_table(const struct gdn_trace_summary *s, enum gdn_trace_by by, size_t top,
			    struct sbuf *out)
{
	gdn_trace_render_table_width(s, by, top, 0, out);
}

void gdn_trace_render_table_width(const struct gdn_trace_summary *s, enum gdn_trace_by by,
				  size_t top, size_t width, struct sbuf *out)
{
	const struct gdn_trace_rows *rows = rows_by(s, by);
	size_t n = top && top < rows->nr ? top : rows->nr;
	const char *heads[MAXCOLS] = {"self ms", "share", "total ms", "count", "mean ms"};
	bool right[MAXCOLS] = {true, true, true, true, true};
	size_t nc = 5;
	struct table t;
	struct sbuf cell = SBUF_INIT;
	gdn_ps rest_self = 0, biggest = 0;
	bool us;

	header(s, out);
	if (!rows->nr)
		return;
	/* units adapt: microseconds when every time in the table is under 1 ms */
	for (size_t i = 0; i < rows->nr; i++)
		if (rows->v[i].total > biggest)
			biggest = rows->v[i].total;
	us = biggest < PS_PER_MS && s->self < PS_PER_MS;
	if (us) {
		heads[0] = "self us";
		heads[2] = "total us";
		heads[4] = "mean us";
	}
	if (s->steps) {
		heads[nc] = us ? "us/step" : "ms/step";
		right[nc++] = true;
	}
	if (by == GDN_TRACE_BY_OP || by == GDN_TRACE_BY_FAMILY) {
		heads[nc] = "category";
		right[nc++] = false;
		heads[nc] = by == GDN_TRACE_BY_OP ? "op" : "family";
		right[nc++] = false;
		heads[nc] = "source";
		right[nc++] = false;
	} else {
		heads[nc] = by_name(by);
		right[nc++] = false;
	}
	sbuf_addf(out, "\nBy %s, by self time (%zu of %zu):\n", by_name(by), n, rows->nr);
	table_init(&t, heads, right, nc);
	t.width = width;
	t.shrink = by == GDN_TRACE_BY_OP || by == GDN_TRACE_BY_FAMILY ? nc - 2 : nc - 1;
	for (size_t i = 0; i < rows->nr; i++) {
		const struct gdn_trace_row *r = &rows->v[i];

		if (i >= n) {
			rest_self += r->self;
			continue;
		}
		fmt_in(&cell, r->self, us);
		table_cell(&t, &cell);
		pct(&cell, r->self, s->self);
		table_cell(&t, &cell);
		fmt_in(&cell, r->total, us);
		table_cell(&t, &cell);
		sbuf_addf(&cell, "%llu", (unsigned long long)r->count);
		table_cell(&t, &cell);
		fmt_in(&cell, div_round(r->total, r->count), us);
		table_cell(&t, &cell);
		if (s->steps) {
			fmt_in(&cell, div_round(r->self, s->steps), us);
			table_cell(&t, &cell);
		}
		if (by == GDN_TRACE_BY_OP || by == GDN_TRACE_BY_FAMILY) {
			sbuf_adds(&cell, shown(r->category, "-"));
			table_cell(&t, &cell);
			sbuf_adds(&cell, shown(r->key, "(unnamed)"));
			table_cell(&t, &cell);
			sbuf_adds(&cell, shown(short_source(r->source), "-"));
			table_cell(&t, &cell);
		} else {
			sbuf_adds(&cell,
				  shown(r->key, by == GDN_TRACE_BY_SOURCE	  ? "(no source)"
						: by == GDN_TRACE_BY_FRAMEWORK_OP ? "(no tf_op)"
										  : "(none)"));
			table_cell(&t, &cell);
		}
	}
	table_render(&t, out);
	if (n < rows->nr) {
		sbuf_addf(out, "  ... %zu more, self ", rows->nr - n);
		fmt_time(out, rest_self);
		sbuf_adds(out, " (");
		pct(out, rest_self, s->self);
		sbuf_adds(out, ")\n");
	}
	sbuf_release(&cell);
}

/* ---- markdown ---- */

static void md_ms(struct sbuf *out, gdn_ps v)
{
	sbuf_addch(out, '`');
	gdn_ps_fmt_ms(out, v);
	sbuf_adds(out, " ms`");
}

/* Markdown code span: backticks inside the text need a longer fence. */
static void md_code(struct sbuf *out, const char *s)
{
	bool tick = strchr(s, '`') != NULL;

	sbuf_adds(out, tick ? "`` " : "`");
	sbuf_adds(out, s);
	sbuf_adds(out, tick ? " ``" : "`");
}

void gdn_trace_render_markdown(const struct gdn_trace_summary *s, enum gdn_trace_by by, size_t top,
			       struct sbuf *out)
{
	const struct gdn_trace_rows *rows = rows_by(s, by);
	size_t n = top && top < rows->nr ? top : rows->nr;
	const char *base = s->path ? short_source(s->path) : "-";

	sbuf_adds(out, "- Hotspots observed (");
	if (s->mode == GDN_TRACE_MODE_XLA)
		sbuf_adds(out, "XLA Ops");
	else if (s->mode == GDN_TRACE_MODE_KINETO)
		sbuf_adds(out, "GPU kernels");
	else
		sbuf_adds(out, "selected events");
	if (s->devices.nr) {
		sbuf_adds(out, " on ");
		device_list(s, out);
	}
	sbuf_addf(out, ", self time by %s, from ", by_name(by));
	md_code(out, base);
	sbuf_addf(out, "; %llu events", (unsigned long long)s->events_selected);
	if (s->steps)
		sbuf_addf(out, ", %llu step%s", (unsigned long long)s->steps,
			  s->steps == 1 ? "" : "s");
	sbuf_adds(out, "):\n");
	sbuf_adds(out, "  - Total: ");
	md_ms(out, s->self);
	if (s->steps) {
		sbuf_adds(out, " (");
		md_ms(out, div_round(s->self, s->steps));
		sbuf_adds(out, " per step)");
	}
	sbuf_adds(out, ".\n");
	for (size_t i = 0; i < n; i++) {
		const struct gdn_trace_row *r = &rows->v[i];

		sbuf_adds(out, "  - ");
		md_code(out, shown(r->key, "(none)"));
		sbuf_adds(out, ": ");
		md_ms(out, r->self);
		sbuf_adds(out, " (");
		pct(out, r->self, s->self);
		sbuf_addf(out, ", %llu event%s", (unsigned long long)r->count,
			  r->count == 1 ? "" : "s");
		if (s->steps) {
			sbuf_adds(out, ", ");
			md_ms(out, div_round(r->self, s->steps));
			sbuf_adds(out, " per step");
		}
		sbuf_adds(out, ")");
		if (by == GDN_TRACE_BY_OP) {
			if (*r->category) {
				sbuf_adds(out, "; category ");
				md_code(out, r->category);
			}
			if (*r->source) {
				sbuf_adds(out, "; from ");
				md_code(out, short_source(r->source));
			}
		} else if (by == GDN_TRACE_BY_CATEGORY) {
			/* the dominant ops of the category */
			size_t shown_ops = 0;

			for (size_t j = 0; j < s->ops.nr && shown_ops < 3; j++) {
				const struct gdn_trace_row *o = &s->ops.v[j];

				if (strcmp(o->category, r->key))
					continue;
				sbuf_adds(out, shown_ops ? ", " : "; top ops ");
				md_code(out, shown(o->key, "(unnamed)"));
				sbuf_adds(out, " (");
				md_ms(out, o->self);
				if (*o->source) {
					sbuf_adds(out, ", ");
					md_code(out, short_source(o->source));
				}
				sbuf_adds(out, ")");
				shown_ops++;
			}
		}
		sbuf_adds(out, ".\n");
	}
}

/* ---- JSON ---- */

/* Returns a new reference. */
static json_t *rows_json(const struct gdn_trace_rows *rows, const char *keyname, bool op,
			 size_t top, gdn_ps whole)
{
	json_t *arr = json_array();
	size_t n = top && top < rows->nr ? top : rows->nr;

	for (size_t i = 0; i < n; i++) {
		const struct gdn_trace_row *r = &rows->v[i];
		json_t *o = json_object();

		json_object_set_new(o, keyname, json_string(r->key));
		if (op)
			json_object_set_new(o, "category", json_string(r->category));
		json_object_set_new(o, "count", json_integer((json_int_t)r->count));
		json_object_set_new(o, "total_us", json_real(gdn_ps_to_us(r->total)));
		json_object_set_new(o, "self_us", json_real(gdn_ps_to_us(r->self)));
		json_object_set_new(
		    o, "mean_us",
		    json_real(r->count ? gdn_ps_to_us(r->total) / (double)r->count : 0.0));
		json_object_set_new(o, "share",
				    json_real(whole > 0 ? (double)r->self / (double)whole : 0.0));
		if (op) {
			json_object_set_new(o, "source", json_string(r->source));
			json_object_set_new(o, "tf_op", json_string(r->tf_op));
		}
		json_array_append_new(arr, o);
	}
	return arr;
}

/* Returns a new reference. */
json_t *gdn_trace_summary_json(const struct gdn_trace_summary *s, size_t top)
{
	json_t *doc = gdn_json_doc("gdnctl.trace_summary.v1");
	json_t *ev = json_object(), *warn = json_array();

	json_object_set_new(doc, "path", s->path ? json_string(s->path) : json_null());
	json_object_set_new(doc, "mode", json_string(mode_name(s->mode)));
	if (s->format) {
		json_t *hosts = json_array();

		json_object_set_new(doc, "format", json_string(s->format));
		for (size_t i = 0; i < s->hosts.nr; i++)
			json_array_append_new(hosts, json_string(s->hosts.v[i]));
		json_object_set_new(doc, "hosts", hosts);
	}
	json_object_set_new(ev, "total", json_integer((json_int_t)s->events_total));
	json_object_set_new(ev, "complete", json_integer((json_int_t)s->events_complete));
	json_object_set_new(ev, "selected", json_integer((json_int_t)s->events_selected));
	json_object_set_new(ev, "metadata", json_integer((json_int_t)s->events_metadata));
	json_object_set_new(ev, "invalid", json_integer((json_int_t)s->events_invalid));
	json_object_set_new(ev, "unmatched", json_integer((json_int_t)s->events_unmatched));
	json_object_set_new(ev, "late", json_integer((json_int_t)s->events_late));
	json_object_set_new(ev, "deep", json_integer((json_int_t)s->events_deep));
	if (s->events_capped)
		json_object_set_new(ev, "capped", json_integer((json_int_t)s->events_capped));
	json_object_set_new(doc, "events", ev);
	json_object_set_new(doc, "tracks_selected", json_integer((json_int_t)s->tracks_selected));
	json_object_set_new(doc, "total_us", json_real(gdn_ps_to_us(s->total)));
	json_object_set_new(doc, "self_us", json_real(gdn_ps_to_us(s->self)));
	if (s->steps) {
		json_object_set_new(doc, "steps", json_integer((json_int_t)s->steps));
		json_object_set_new(doc, "steps_from", json_string(s->steps_from));
		json_object_set_new(doc, "self_us_per_step",
				    json_real(gdn_ps_to_us(s->self) / (double)s->steps));
	} else {
		json_object_set_new(doc, "steps", json_null());
		json_object_set_new(doc, "steps_from", json_null());
		json_object_set_new(doc, "self_us_per_step", json_null());
	}
	if (s->step_nr) {
		json_t *steps = json_array();

		for (size_t i = 0; i < s->step_nr; i++)
			json_array_append_new(steps,
					      json_pack("{s:I, s:f, s:f, s:I}", "number",
							(json_int_t)s->step_v[i].number, "start_us",
							gdn_ps_to_us(s->step_v[i].start), "self_us",
							gdn_ps_to_us(s->step_v[i].self), "ops",
							(json_int_t)s->step_v[i].ops));
		json_object_set_new(doc, "per_step", steps);
	} else {
		json_object_set_new(doc, "per_step", json_null());
	}
	json_object_set_new(doc, "truncated", json_boolean(s->truncated));
	for (size_t i = 0; i < s->warnings.nr; i++)
		json_array_append_new(warn, json_string(s->warnings.v[i]));
	json_object_set_new(doc, "warnings", warn);
	json_object_set_new(doc, "ops", rows_json(&s->ops, "name", true, top, s->self));
	json_object_set_new(doc, "categories",
			    rows_json(&s->categories, "category", false, top, s->self));
	json_object_set_new(doc, "sources", rows_json(&s->sources, "source", false, top, s->self));
	json_object_set_new(doc, "devices", rows_json(&s->devices, "device", false, top, s->self));
	json_object_set_new(doc, "families",
			    rows_json(&s->families, "family", false, top, s->self));
	json_object_set_new(doc, "framework_ops",
			    rows_json(&s->framework_ops, "framework_op", false, top, s->self));
	return doc;
}
