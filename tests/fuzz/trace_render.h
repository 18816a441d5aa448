/*
 * What the trace fuzz targets (fuzz_trace.c, fuzz_xplane.c) do with every
 * summary: each table and markdown grouping, and the JSON.
 */
#ifndef GDNCTL_FUZZ_TRACE_RENDER_H
#define GDNCTL_FUZZ_TRACE_RENDER_H

#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"

static inline void fuzz_render_summary(const struct gdn_trace_summary *s, struct sbuf *out)
{
	for (int by = GDN_TRACE_BY_OP; by <= GDN_TRACE_BY_DEVICE; by++) {
		gdn_trace_render_table(s, (enum gdn_trace_by)by, 5, out);
		gdn_trace_render_markdown(s, (enum gdn_trace_by)by, 5, out);
	}
	json_decref(gdn_trace_summary_json(s, 0));
}

#endif
