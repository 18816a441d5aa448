/*
 * Fuzz the performance policy's parsers with one input: the state-file
 * reader (then a decision on the parsed state and a save-free round trip
 * through json_dumps), the profile-output metric parser (last match) for
 * the default metrics, and the gate rule parser line by line.
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/perf.h"
#include "gdnctl/xalloc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const metrics[] = {"throughput/mfu", "throughput/tokens_per_second",
				      "throughput/duration", "e"};

static void fuzz_state(const char *text, size_t size)
{
	struct gdn_perf_state st = GDN_PERF_STATE_INIT;
	struct gdn_perf_config c;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_perf_verdict v = GDN_PERF_VERDICT_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	gdn_perf_config_init(&c);
	gdn_perf_gates_add_defaults(&c.gates);
	c.min_confidence = 1;
	gdn_perf_state_init(&st, NULL);
	if (gdn_perf_state_parse(&st, text, size, "fuzz", &err)) {
		if (!err.msg[0])
			BUG("perf state error without a message");
		goto out;
	}
	gdn_perf_sample_set_value(gdn_perf_measurement_add(&m), "cli", 4.0);
	gdn_perf_sample_set_value(gdn_perf_measurement_add(&m), "cli", 4.5);
	if (gdn_perf_decide(&c, &st, "fuzz", &m, &v, &err))
		BUG("decide failed: %s", err.msg);
	if (!gdn_perf_state_champion(&st) && v.decision != GDN_PERF_UNSCORED)
		BUG("no champion after %s", gdn_perf_decision_name(v.decision));
	gdn_perf_champion_add_samples(&c, &st, &m, &err);
out:
	gdn_perf_verdict_release(&v);
	gdn_perf_measurement_release(&m);
	gdn_perf_state_release(&st);
	gdn_perf_config_release(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct gdn_perf_gates g = GDN_PERF_GATES_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	size_t i, off = 0;
	double v;

	fuzz_state(text, size);
	for (i = 0; i < ARRAY_SIZE(metrics); i++)
		if (!gdn_perf_parse_cli_metric(text, size, metrics[i], &v) && !isfinite(v))
			BUG("non-finite metric");
	while (off < size) {
		const char *nl = memchr(text + off, '\n', size - off);
		size_t len = nl ? (size_t)(nl - (text + off)) : size - off;
		char *line = xstrndup(text + off, len);

		if (gdn_perf_gate_parse(&g, line, &err) && !err.msg[0])
			BUG("gate error without a message");
		free(line);
		off += len + 1;
	}
	gdn_perf_gates_release(&g);
	return 0;
}
