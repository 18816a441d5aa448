/*
 * Work figures per step for the integrity gate (integrity.h): ops and
 * custom calls from the trace summary, FLOPs and bytes from the trace's
 * cost analysis (trace_work.h: JSON args or XPlane stats), and the rates
 * they imply over the device time.
 */
#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/trace.h"
#include "gdnctl/trace_work.h"

static bool is_custom_call(const struct gdn_trace_row *r)
{
	return (r->category && strcasestr(r->category, "custom")) ||
	       !strncasecmp(r->key, "custom-call", 11) || !strncasecmp(r->key, "custom_call", 11) ||
	       !strncasecmp(r->key, "custom-call", 11);
}

json_t *gdn_integrity_work_figures(const struct gdn_trace_summary *s,
				   const struct gdn_trace_work *w)
{
	double steps = (double)s->steps, sec = gdn_ps_to_us(s->self) / 1e6;
	uint64_t ops = 0, cc = 0;
	json_t *o;

	if (!s->steps)
		return NULL;
	for (size_t i = 0; i < s->ops.nr; i++) {
		ops += s->ops.v[i].count;
		if (is_custom_call(&s->ops.v[i]))
			cc += s->ops.v[i].count;
	}
	o = json_pack("{sfsf}", "ops", (double)ops / steps, "custom_calls", (double)cc / steps);
	if (w && w->has_flops) {
		json_object_set_new(o, "flops", json_real(w->flops / steps));
		if (sec > 0)
			json_object_set_new(o, "flops_per_s", json_real(w->flops / sec));
	}
	if (w && w->has_bytes) {
		json_object_set_new(o, "bytes", json_real(w->bytes / steps));
		if (sec > 0)
			json_object_set_new(o, "bytes_per_s", json_real(w->bytes / sec));
	}
	if (w && w->peak_name)
		json_object_set_new(o, "peak_op",
				    json_pack("{sssfsf}", "name", w->peak_name, "flops",
					      w->peak_flops, "flops_per_s",
					      w->peak_flops / (w->peak_us / 1e6)));
	return o;
}

void gdn_integrity_attach_work(json_t *fig, const char *trace, const struct gdn_trace_summary *s,
			       const struct gdn_trace_work *read)
{
	struct gdn_trace_work w = GDN_TRACE_WORK_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	json_t *o;

	if (!fig || !trace)
		return;
	if (read)
		o = gdn_integrity_work_figures(s, read);
	else
		o = gdn_integrity_work_figures(s, gdn_trace_work_file(trace, &w, &err) ? NULL : &w);
	if (o)
		json_object_set_new(fig, "work", o);
	gdn_trace_work_release(&w);
}
