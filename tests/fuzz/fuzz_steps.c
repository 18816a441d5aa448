/*
 * Fuzz target of the device-op selection and the steps (src/trace/agg.c):
 * trace-event JSON with GPU "Stream #N" threads, host step annotations
 * (step_num), Steps lines and XLA Modules, fed in chunks set by the first
 * byte. Checks the invariants of the per-step figures: windows in time
 * order, no op counted twice, no self time made up, one window per step of
 * the annotations.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "trace_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_trace *t;
	struct sbuf out = SBUF_INIT;
	size_t off = size ? 1 : 0, chunk = size ? 1 + data[0] % 61 : 1;
	int ret = 0;

	o.token_max = 4096;
	o.depth_max = 64;
	o.window = 1 + (size ? data[0] & 15 : 0);
	t = gdn_trace_new(&o);
	gdn_trace_summary_init(&s);
	while (off < size && !ret) {
		size_t n = chunk < size - off ? chunk : size - off;

		ret = gdn_trace_feed(t, data + off, n, &err);
		off += n;
	}
	if (!ret)
		ret = gdn_trace_finish(t, &s, &err);
	if (!ret) {
		uint64_t ops = 0;
		gdn_ps self = 0;

		for (size_t i = 0; i < s.step_nr; i++) {
			if (i && s.step_v[i].start < s.step_v[i - 1].start)
				BUG("steps out of time order");
			if (s.step_v[i].self < 0)
				BUG("negative step self time");
			ops += s.step_v[i].ops;
			self += s.step_v[i].self;
		}
		if (s.step_nr && !s.steps)
			BUG("per-step figures without steps");
		if (ops > s.events_selected)
			BUG("more ops in the steps than selected");
		if (self > s.self)
			BUG("more self time in the steps than in the trace");
		if (!strncmp(s.steps_from, "host step annotations", 21) && s.step_nr &&
		    s.step_nr != s.steps)
			BUG("a step window per annotation: %zu vs %llu", s.step_nr,
			    (unsigned long long)s.steps);
		fuzz_render_summary(&s, &out);
	} else if (strchr(err.msg, '\n')) {
		BUG("multi-line error: %s", err.msg);
	}
	sbuf_release(&out);
	gdn_trace_summary_release(&s);
	gdn_trace_free(t);
	return 0;
}
