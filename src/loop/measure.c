/*
 * The metric sources of the loop's performance policy, a table of
 * drivers (measure_<name>.c, one row each below): the profile output
 * (cli), W&B, the trace; and the trace deltas --log-measurements writes
 * into the running log. See measure.h.
 */
#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/hub.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"
#include "measure_impl.h"

/*
 * The drivers, in sampling order; their names and help are the rows of
 * gdn_measure_source_enum below. auto (no sampler) chooses among the others.
 */
static const struct measure_source auto_source = {
    .id = GDN_MEASURE_AUTO,
};

static const struct measure_source *const sources[] = {
    &auto_source,
    &measure_cli_source,
    &measure_wandb_source,
    &measure_trace_source,
};

static const struct measure_source *find_source(enum gdn_measure_source id)
{
	for (size_t i = 0; i < ARRAY_SIZE(sources); i++)
		if (sources[i]->id == id)
			return sources[i];
	return NULL;
}

bool gdn_measure_source_takes(enum gdn_measure_source src, const char *metric)
{
	const struct measure_source *ms = find_source(src);

	return !ms || !ms->takes || ms->takes(metric);
}

void gdn_measure_sample(const struct gdn_measure_opts *o, const struct gdn_measure_input *in,
			struct gdn_perf_sample *s, const struct gdn_measure_sink *sink)
{
	for (size_t i = 0; i < ARRAY_SIZE(sources); i++)
		if (sources[i]->sample)
			sources[i]->sample(o, in, s, sink);
}

const struct gdn_enum gdn_measure_source_enum[] = {
    {"auto", GDN_MEASURE_AUTO,
     "W&B when the profile names a run or one is found by prefix, else the profile output"},
    {"cli", GDN_MEASURE_CLI, "the profile output"},
    {"wandb", GDN_MEASURE_WANDB, "Weights & Biases"},
    {"trace", GDN_MEASURE_TRACE, "the trace (trace/... metrics)"},
    GDN_ENUM_END,
};

const struct gdn_enum gdn_measure_aggregation_enum[] = {
    {"history-window", 1, "aggregate a window of the run's history"},
    {"summary", 0, "the run summary"},
    GDN_ENUM_END,
};

void gdn_measure_opts_init(struct gdn_measure_opts *o)
{
	struct gdn_http_opts ho = GDN_HTTP_OPTS_INIT;

	memset(o, 0, sizeof(*o));
	o->source = GDN_MEASURE_AUTO;
	o->history = true;
	o->window = (struct gdn_history_window){10, 18, GDN_AGG_MEDIAN, 5, 1000};
	o->entity = "marin-community";
	o->project = "marin";
	o->http = ho;
	o->fetch_timeout_ms = 120000;
}

/* Per-step ms of a bucket in figures (absent: 0); false when figures has no such table. */
static double fig_get(json_t *fig, const char *table, const char *name)
{
	json_t *v;

	if (!table)
		v = json_object_get(fig, "step_ms");
	else
		v = json_object_get(json_object_get(fig, table), name);
	return json_is_number(v) ? json_number_value(v) : 0.0;
}

struct delta {
	const char *kind, *name;
	double before, after;
};

static int delta_cmp(const void *a, const void *b)
{
	const struct delta *x = a, *y = b;
	double dx = fabs(x->after - x->before), dy = fabs(y->after - y->before);

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void add_table(json_t *before, json_t *after, const char *table, const char *kind,
		      struct delta **v, size_t *nr, size_t *alloc)
{
	json_t *objs[2] = {json_object_get(before, table), json_object_get(after, table)};

	for (int side = 0; side < 2; side++) {
		const char *key;
		json_t *val;

		json_object_foreach(objs[side], key, val)
		{
			bool seen = false;

			(void)val;
			for (size_t i = 0; i < *nr; i++)
				if (!strcmp((*v)[i].kind, kind) && !strcmp((*v)[i].name, key))
					seen = true;
			if (seen)
				continue;
			ALLOC_GROW(*v, *nr + 1, *alloc);
			(*v)[*nr] = (struct delta){kind, key, fig_get(before, table, key),
						   fig_get(after, table, key)};
			(*nr)++;
		}
	}
}

void gdn_measure_trace_deltas(json_t *before, json_t *after, size_t max, struct strvec *out)
{
	struct delta *v = NULL;
	size_t nr = 0, alloc = 0, shown = 0;

	if (!json_is_object(before) || !json_is_object(after))
		return;
	strvec_pushf(out, "- Trace step: `%.3f ms -> %.3f ms`", fig_get(before, NULL, NULL),
		     fig_get(after, NULL, NULL));
	add_table(before, after, "categories", "category", &v, &nr, &alloc);
	add_table(before, after, "ops", "op", &v, &nr, &alloc);
	if (nr)
		qsort(v, nr, sizeof(*v), delta_cmp);
	for (size_t i = 0; i < nr && shown < max; i++) {
		if (v[i].after == v[i].before)
			continue;
		strvec_pushf(out, "- Trace %s `%s`: `%.3f ms -> %.3f ms`", v[i].kind, v[i].name,
			     v[i].before, v[i].after);
		shown++;
	}
	free(v);
}
