/*
 * Private to the metric sources (src/loop/measure*.c): a source is one
 * `const struct measure_source` in its own file (measure_<name>.c),
 * declared here with one line, listed with one row in measure.c's
 * table and named by one row of gdn_measure_source_enum.
 */
#ifndef GDNCTL_LOOP_MEASURE_IMPL_H
#define GDNCTL_LOOP_MEASURE_IMPL_H

#include "gdnctl/compat.h"
#include "gdnctl/measure.h"

struct measure_source {
	enum gdn_measure_source id; /* its name and help: a row of gdn_measure_source_enum */
	/* Whether the metric can come from this source (NULL: any). */
	bool (*takes)(const char *metric);
	/*
	 * Add what this source knows to the sample of one profile run, in
	 * table order (a later source overrides an earlier value). o is NULL
	 * when no source options were given (no W&B). NULL: nothing to do.
	 */
	void (*sample)(const struct gdn_measure_opts *o, const struct gdn_measure_input *in,
		       struct gdn_perf_sample *s, const struct gdn_measure_sink *sink);
};

extern const struct measure_source measure_cli_source;
extern const struct measure_source measure_wandb_source;
extern const struct measure_source measure_trace_source;

#endif
