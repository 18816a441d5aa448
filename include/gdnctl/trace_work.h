/*
 * Work figures of a trace (src/trace/work.c): the cost-analysis numbers
 * XLA writes on each device op, summed per op name and over the whole
 * trace, and the event implying the highest FLOP/s (its figure over its own
 * duration; async `-start`/`-done` halves are left out: their event lasts
 * while the transfer is issued). In trace-event JSON they are the args
 * `model_flops` or `flops`, and `bytes_accessed` (strings or numbers); in an
 * XPlane, the stats of the same names (any value kind) on the event, else
 * on its event metadata (where TPU planes put them; `model_flops` wins over
 * `flops`). The integrity gate (integrity.h) divides the sums by the
 * trace's steps (work per step) and bounds the rates by the device's peak.
 * Pure: no printing.
 */
#ifndef GDNCTL_TRACE_WORK_H
#define GDNCTL_TRACE_WORK_H

#include "gdnctl/compat.h"

struct gdn_err;

struct gdn_trace_work_op {
	char *name; /* owned */
	double flops, bytes;
	uint64_t count; /* events of this name that carried a figure */
};

struct gdn_trace_work {
	double flops, bytes;	   /* sums over the trace */
	bool has_flops, has_bytes; /* some event carried the figure */
	uint64_t events;	   /* events that carried a figure */
	/* the event with the highest FLOP/s: its name (owned), FLOPs and duration; or NULL */
	char *peak_name;
	double peak_flops, peak_us;
	struct gdn_trace_work_op *v; /* unsorted; nr distinct names */
	size_t nr, alloc;
	size_t *slot; /* private: open-addressing index over v (index + 1) */
	size_t mask;
};
#define GDN_TRACE_WORK_INIT \
	{                   \
		0           \
	}
void gdn_trace_work_release(struct gdn_trace_work *w);

/* The op named `name` (borrowed), or NULL. */
const struct gdn_trace_work_op *gdn_trace_work_find(const struct gdn_trace_work *w,
						    const char *name);

/* One event's figures, for a reader to add (name borrowed). */
struct gdn_trace_work_event {
	const char *name;
	double flops, bytes, dur_us; /* finite, >= 0 where has_* */
	bool has_flops, has_bytes, has_dur;
};
/* Add an event (nothing when it carries neither figure). */
void gdn_trace_work_add(struct gdn_trace_work *w, const struct gdn_trace_work_event *ev);

/*
 * Feed a whole trace-event JSON document (plain or gzip) or XSpace already
 * in memory; for tests and the fuzzer. GDN_EPARSE on bad input.
 */
int gdn_trace_work_mem(const void *data, size_t len, struct gdn_trace_work *out,
		       struct gdn_err *err);
/*
 * Read `path`: trace-event JSON or an XPlane, plain or gzip (an XPlane
 * without cost analysis, as GPU planes, gives has_flops and has_bytes
 * false). Errors name the file.
 */
int gdn_trace_work_file(const char *path, struct gdn_trace_work *out, struct gdn_err *err);

#endif
