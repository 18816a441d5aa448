/*
 * The cli metric source: the value the profile printed for the metric
 * ("METRIC: 12.5" and the original's forms; gdn_perf_parse_cli_metric).
 * Always read first: W&B or the trace override it where they apply.
 */
#include "gdnctl/compat.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "measure_impl.h"

static bool cli_takes(const char *metric)
{
	return !gdn_perf_is_trace_metric(metric);
}

static void cli_sample(const struct gdn_measure_opts *o, const struct gdn_measure_input *in,
		       struct gdn_perf_sample *s, const struct gdn_measure_sink *sink)
{
	(void)o;
	(void)sink;
	gdn_perf_sample_set_cli(s, in->metric, in->out, in->len);
}

const struct measure_source measure_cli_source = {
    .id = GDN_MEASURE_CLI,
    .takes = cli_takes,
    .sample = cli_sample,
};
