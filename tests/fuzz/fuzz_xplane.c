/*
 * Fuzz target of the XPlane reader: arbitrary bytes (a serialized XSpace,
 * plain or gzip) summarised from memory; the first byte picks options. Every
 * result is rendered; an error must be one line. With FUZZ_XPLANE_FAILS=TEXT
 * (a replay of inputs known bad, such as every truncation of a good file),
 * every input must also fail with TEXT in its message.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "trace_render.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const threads[] = {"XLA Ops", "Steps", NULL};
	static const char *const devices[] = {"TPU:0", NULL};
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT;
	uint32_t seed = size ? data[0] : 0;
	const char *fails = getenv("FUZZ_XPLANE_FAILS");
	int ret;

	o.window = 1 + (seed & 7);
	o.device_span = seed & 0x10;
	if (seed & 0x40)
		o.threads = threads;
	if (seed & 0x80)
		o.devices = devices;
	(void)gdn_xplane_sniff(data, size);
	gdn_trace_summary_init(&s);
	ret = gdn_xplane_summarize_mem(size ? data + 1 : data, size ? size - 1 : 0, &o, &s, &err);
	if (!ret) {
		struct gdn_trace_diff d;
		json_t *doc;

		fuzz_render_summary(&s, &out);
		gdn_trace_diff_init(&d);
		gdn_trace_diff_compute(&d, &s, &s);
		doc = gdn_trace_diff_json(&d, 3);
		gdn_trace_xprof_payload(doc, &s, &s, 2, seed & 0x20, 10.0);
		json_decref(doc);
		gdn_trace_diff_release(&d);
	} else if (strchr(err.msg, '\n')) {
		BUG("multi-line error: %s", err.msg);
	}
	if (fails && (!ret || !strstr(err.msg, fails)))
		BUG("expected an error with '%s', got %s", fails, ret ? err.msg : "a summary");
	gdn_err_clear(&err);
	sbuf_release(&out);
	gdn_trace_summary_release(&s);
	return 0;
}
