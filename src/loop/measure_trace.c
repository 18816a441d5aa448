/*
 * The trace metric source: the figures of the newest trace the profile
 * run wrote (step time, categories, ops), and their value for a trace/...
 * metric. The figures are kept whatever the source, for the trace gates.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/trace_work.h"
#include "measure_impl.h"

static bool trace_takes(const char *metric)
{
	return gdn_perf_is_trace_metric(metric);
}

static void trace_sample(const struct gdn_measure_opts *o, const struct gdn_measure_input *in,
			 struct gdn_perf_sample *s, const struct gdn_measure_sink *sink)
{
	struct gdn_trace_opts topts = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary sum = GDN_TRACE_SUMMARY_INIT;
	struct gdn_trace_work work = GDN_TRACE_WORK_INIT;
	struct gdn_err terr = GDN_ERR_INIT;
	struct sbuf msg = SBUF_INIT;

	(void)o;
	if (!in->trace)
		return;
	topts.work = &work; /* an XPlane's work figures come with its summary */
	if (gdn_trace_summarize_file(in->trace, &topts, &sum, &terr) ||
	    gdn_perf_sample_set_trace(s, in->perf_config, &sum, &terr)) {
		sbuf_addf(&msg, "trace '%s' gives no figures: %s", in->trace, terr.msg);
		if (sink->warn)
			sink->warn(msg.buf, sink->payload);
	} else {
		/* integrity gate (issue 28): the work figures of the same trace */
		gdn_integrity_attach_work(s->trace, in->trace, &sum,
					  sum.format && !strcmp(sum.format, "xplane") ? &work
										      : NULL);
	}
	gdn_trace_work_release(&work);
	gdn_trace_summary_release(&sum);
	sbuf_release(&msg);
}

const struct measure_source measure_trace_source = {
    .id = GDN_MEASURE_TRACE,
    .takes = trace_takes,
    .sample = trace_sample,
};
