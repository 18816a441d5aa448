/*
 * Fuzz the integrity gate's readers with one input: the trace work reader
 * (src/trace/work.c: cost-analysis args of a trace-event JSON document, or
 * the stats of an XSpace; plain or gzip), then the peaks override parser
 * line by line, and the
 * rules on figures made from the input (no NaN may reach a reason).
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/trace_work.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_work(const uint8_t *data, size_t size)
{
	struct gdn_trace_work w = GDN_TRACE_WORK_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	double flops = 0;

	if (gdn_trace_work_mem(data, size, &w, &err) && !err.msg[0])
		BUG("trace work error without a message");
	for (size_t i = 0; i < w.nr; i++) {
		if (gdn_trace_work_find(&w, w.v[i].name) != &w.v[i])
			BUG("op '%s' not found by its name", w.v[i].name);
		flops += w.v[i].flops;
	}
	if (w.nr && flops > w.flops * (1 + 1e-9) + 1e-9)
		BUG("the ops' flops exceed the total");
	gdn_trace_work_release(&w);
}

static void fuzz_peaks_and_rules(const char *text)
{
	struct gdn_integrity_config c;
	struct gdn_integrity_findings f = {0};
	struct gdn_err err = GDN_ERR_INIT;
	double steps[4] = {1, 2, 3, 4}, cand[4];
	struct gdn_integrity_input in = {0};
	char *copy = xstrdup(text), *save = NULL;

	gdn_integrity_config_init(&c);
	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (gdn_peaks_parse(&c.peaks, l, &err) && !err.msg[0])
			BUG("peaks error without a message");
	for (size_t i = 0; i < c.peaks.nr; i++) {
		const struct gdn_peak *p = &c.peaks.v[i];

		if (!(p->flops >= 0) || !(p->bytes >= 0) || !p->kind[0])
			BUG("a bad peaks row was kept");
		cand[i % 4] = p->flops > 0 ? 1 / p->flops : 1;
	}
	for (size_t i = c.peaks.nr; i < 4; i++)
		cand[i] = (double)(strlen(text) % 7 + 1);
	in.metric_ratio = (double)(strlen(text) % 13);
	in.dev_champion = steps;
	in.n_champion = 4;
	in.dev_candidate = cand;
	in.n_candidate = 4;
	gdn_integrity_check_rulers(&c, &in, &f);
	for (size_t i = 0; i < f.nr; i++)
		if (strstr(f.v[i].reason, "nan"))
			BUG("a reason with nan: %s", f.v[i].reason);
	gdn_integrity_findings_release(&f);
	gdn_integrity_config_release(&c);
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);

	fuzz_work(data, size);
	fuzz_peaks_and_rules(text);
	free(text);
	return 0;
}
