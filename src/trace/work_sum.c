/*
 * The sums of a trace's work figures (trace_work.h), per op name and over
 * the whole trace, as the readers hand them over event by event: the
 * trace-event JSON reader (work.c) and the XPlane reader (xplane.c).
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace_work.h"
#include "gdnctl/xalloc.h"

#define WORK_OPS_MAX (1u << 20)

void gdn_trace_work_release(struct gdn_trace_work *w)
{
	for (size_t i = 0; i < w->nr; i++)
		free(w->v[i].name);
	free(w->v);
	free(w->slot);
	free(w->peak_name);
	memset(w, 0, sizeof(*w));
}

static size_t hash_name(const char *s)
{
	size_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void rehash(struct gdn_trace_work *w)
{
	size_t n = w->mask ? (w->mask + 1) * 2 : 64;

	free(w->slot);
	w->slot = xcalloc(n, sizeof(*w->slot));
	w->mask = n - 1;
	for (size_t i = 0; i < w->nr; i++) {
		size_t j = hash_name(w->v[i].name) & w->mask;

		while (w->slot[j])
			j = (j + 1) & w->mask;
		w->slot[j] = i + 1;
	}
}

const struct gdn_trace_work_op *gdn_trace_work_find(const struct gdn_trace_work *w,
						    const char *name)
{
	if (!w->mask)
		return NULL;
	for (size_t j = hash_name(name) & w->mask; w->slot[j]; j = (j + 1) & w->mask)
		if (!strcmp(w->v[w->slot[j] - 1].name, name))
			return &w->v[w->slot[j] - 1];
	return NULL;
}

static struct gdn_trace_work_op *get_op(struct gdn_trace_work *w, const char *name)
{
	const struct gdn_trace_work_op *found = gdn_trace_work_find(w, name);
	struct gdn_trace_work_op *op;

	if (found)
		return &w->v[found - w->v];
	if (w->nr >= WORK_OPS_MAX)
		return NULL;
	if ((w->nr + 1) * 2 > w->mask + 1)
		rehash(w);
	ALLOC_GROW(w->v, w->nr + 1, w->alloc);
	op = &w->v[w->nr++];
	memset(op, 0, sizeof(*op));
	op->name = xstrdup(name);
	{
		size_t j = hash_name(name) & w->mask;

		while (w->slot[j])
			j = (j + 1) & w->mask;
		w->slot[j] = w->nr;
	}
	return op;
}

void gdn_trace_work_add(struct gdn_trace_work *w, const struct gdn_trace_work_event *ev)
{
	struct gdn_trace_work_op *op;

	if (!ev->has_flops && !ev->has_bytes)
		return;
	w->events++;
	if (ev->has_flops && ev->has_dur && ev->dur_us > 0 && ev->flops > 0 &&
	    !strstr(ev->name, "-start") && !strstr(ev->name, "-done") &&
	    (!w->peak_name || ev->flops / ev->dur_us > w->peak_flops / w->peak_us)) {
		free(w->peak_name);
		w->peak_name = xstrdup(ev->name);
		w->peak_flops = ev->flops;
		w->peak_us = ev->dur_us;
	}
	op = get_op(w, ev->name);
	if (ev->has_flops) {
		w->flops += ev->flops;
		w->has_flops = true;
	}
	if (ev->has_bytes) {
		w->bytes += ev->bytes;
		w->has_bytes = true;
	}
	if (!op)
		return;
	op->count++;
	op->flops += ev->has_flops ? ev->flops : 0;
	op->bytes += ev->has_bytes ? ev->bytes : 0;
}
