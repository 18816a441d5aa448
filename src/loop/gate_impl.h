/*
 * Private to the validation gate (gate.c over gate_measure.c over
 * gate_phase.c): the calls go one way, down this list.
 */
#ifndef GDNCTL_LOOP_GATE_IMPL_H
#define GDNCTL_LOOP_GATE_IMPL_H

#include "gdnctl/gate.h"
#include "gdnctl/loop.h"
#include "gdnctl/perf.h"
#include "gdnctl/sbuf.h"

/* gate_phase.c */

/*
 * A phase (`command`) on the gate's targets with --validation-retries:
 * attempts k, k+1, ... while the phase could not run (a negative return
 * other than an interruption) or its job was stopped without gdnctl being
 * interrupted. A command that ran and failed is not retried. `out` keeps
 * only the last attempt's output; *rc the command's exit code.
 */
int gate_run_phase_retry(const struct gdn_gate *g, const struct gdn_loop_iter *it,
			 const char *phase, long k, const char *command, int *rc, struct sbuf *out,
			 struct gdn_err *err);
/* Revert the iteration's commits. Returns 0 or a negative gdn_errcode. */
int gate_revert(const struct gdn_gate *g, const struct gdn_loop_iter *it, const char *reason,
		struct gdn_err *err);

/* gate_measure.c */

/* One profile (attempt k) into m (may be NULL). 0 (*rc: its exit code) or a gdn_errcode. */
int gate_profile_once(const struct gdn_gate *g, const struct gdn_loop_iter *it, long k,
		      struct gdn_perf_measurement *m, int *rc, struct gdn_err *err);
/* Forget the last measurement (g->measured). */
void gate_drop_measured(struct gdn_gate *g);
/* Profile perf_repeats times into a new measurement (kept in g->measured). */
int gate_measure(struct gdn_gate *g, const struct gdn_loop_iter *it, int *rc, struct gdn_err *err);
/* The same; ab: --perf-ab may apply (not when the champion itself is re-profiled). */
int gate_measure_opt(struct gdn_gate *g, const struct gdn_loop_iter *it, bool ab, int *rc,
		     struct gdn_err *err);

#endif
