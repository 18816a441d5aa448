/*
 * Private to the performance policy (perf_decide.c over perf_sample.c and
 * perf.c): the figures of a trace sample, a gate's subject.
 */
#ifndef GDNCTL_LOOP_PERF_IMPL_H
#define GDNCTL_LOOP_PERF_IMPL_H

#include "gdnctl/perf.h"

/* perf_sample.c: the value of a trace metric in figures (absent bucket: 0). */
double perf_figures_value(json_t *fig, enum gdn_perf_bucket bucket, const char *name);
/* perf_sample.c: whether figures have the trace metric. */
bool perf_figures_has(json_t *fig, enum gdn_perf_bucket bucket, const char *name);
/* perf.c: "step", "op:NAME" or "category:NAME". */
void perf_gate_subject(const struct gdn_perf_gate *gate, struct sbuf *out);

#endif
