/*
 * Fuzz the report's loaders and renderers: the input is a journal, or a
 * journal and a performance state separated by a NUL byte. Whatever the
 * bytes (torn lines, wrong types, huge numbers, NaN-producing values,
 * events out of order), loading succeeds or fails with a message, and the
 * text, JSON and HTML renderers run on every model without crashing.
 * The same journal goes through `loop status` (src/loop/status.c) too.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/report.h"
#include "gdnctl/sbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data, *nul = memchr(data, '\0', size);
	size_t jlen = nul ? (size_t)(nul - text) : size;
	struct gdn_report r = GDN_REPORT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT, html = SBUF_INIT;
	struct gdn_loop_status st;
	json_t *doc;

	gdn_loop_status_init(&st);
	if (gdn_loop_status_load(&st, text, jlen, "fuzz", &err)) {
		if (!err.msg[0])
			BUG("status journal error without a message");
		gdn_err_clear(&err);
	} else {
		gdn_loop_status_render_text(&st, 1800000000000LL, &out);
		doc = gdn_loop_status_json(&st, 1800000000000LL);
		if (!doc)
			BUG("no status document");
		json_decref(doc);
		sbuf_reset(&out);
	}
	gdn_loop_status_release(&st);
	gdn_report_init(&r);
	if (gdn_report_load_journal(&r, text, jlen, NULL, "fuzz", &err)) {
		if (!err.msg[0])
			BUG("report journal error without a message");
		goto out;
	}
	if (nul && gdn_report_add_state(&r, nul + 1, size - jlen - 1, "fuzz", &err) && !err.msg[0])
		BUG("report state error without a message");
	gdn_report_render_text(&r, &out);
	gdn_report_headline(&r, &out);
	gdn_report_render_html(&r, &html);
	if (strstr(html.buf, "<script"))
		BUG("unescaped markup in the HTML report");
	doc = gdn_report_json(&r);
	if (!doc)
		BUG("no report document");
	json_decref(doc);
out:
	sbuf_release(&out);
	sbuf_release(&html);
	gdn_report_release(&r);
	return 0;
}
