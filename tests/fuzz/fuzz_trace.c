/*
 * Fuzz target of the trace pipeline: arbitrary bytes (gzip or JSON) fed in
 * arbitrary chunks. The first byte seeds the chunk sizes and the options,
 * so the corpus covers chunk boundaries anywhere. Every result is rendered.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "trace_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const threads[] = {"threadA", "XLA Ops", NULL};
	static const char *const devices[] = {"TPU:1", NULL};
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_trace *t;
	struct sbuf out = SBUF_INIT;
	uint32_t seed = size ? data[0] : 0, state;
	size_t off = size ? 1 : 0;
	int ret = 0;

	o.token_max = 4096;
	o.depth_max = 64;
	o.window = 1 + (seed & 7);
	if (seed & 0x40)
		o.threads = threads;
	if (seed & 0x80)
		o.devices = devices;
	state = seed * 2654435761u + 1;
	t = gdn_trace_new(&o);
	gdn_trace_summary_init(&s);
	while (off < size && !ret) {
		size_t n;

		state = state * 1103515245u + 12345u;
		n = 1 + ((state >> 16) % ((seed & 0x20) ? 3 : 97));
		if (n > size - off)
			n = size - off;
		ret = gdn_trace_feed(t, data + off, n, &err);
		off += n;
	}
	if (!ret)
		ret = gdn_trace_finish(t, &s, &err);
	if (!ret) {
		struct gdn_trace_diff d;

		fuzz_render_summary(&s, &out);
		gdn_trace_diff_init(&d);
		gdn_trace_diff_compute(&d, &s, &s);
		gdn_trace_diff_render_table(&d, 3, &out);
		gdn_trace_diff_render_markdown(&d, 3, &out);
		json_decref(gdn_trace_diff_json(&d, 0));
		gdn_trace_diff_release(&d);
	} else if (strchr(err.msg, '\n')) {
		BUG("multi-line error: %s", err.msg);
	}
	sbuf_release(&out);
	gdn_trace_summary_release(&s);
	gdn_trace_free(t);
	return 0;
}
