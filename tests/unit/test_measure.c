/* Unit tests for the loop's metric source helpers (src/loop/measure.c). */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static char *find_url(const char *out, const char *base, char **url)
{
	return gdn_measure_find_run_url(out, strlen(out), base, url);
}

static void run_url_last_match(void **state)
{
	const char *out = "wandb: View run at https://wandb.ai/ent/proj/runs/old1\n"
			  "wandb: View run at: https://wandb.ai/my-ent/my_proj/runs/ab_c-9?nw=1#x\n"
			  "done\n";
	char *url = NULL, *ref = find_url(out, NULL, &url);

	(void)state;
	assert_string_equal(ref, "my-ent/my_proj/ab_c-9");
	assert_string_equal(url, "https://wandb.ai/my-ent/my_proj/runs/ab_c-9");
	free(ref);
	free(url);
}

static void run_url_none(void **state)
{
	const char *bad[] = {
	    "no url here",
	    "https://wandb.ai/ent/proj/run/x", /* not /runs/ */
	    "https://wandb.ai/ent/proj/runs/", /* no id */
	    "https://wandb.ai/ent//runs/x",    /* empty project */
	    "http://wandb.ai/ent/proj/runs/x", /* not https */
	    "https://wandb.aix/ent/proj/runs/x" /* another host */,
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *url = (char *)"untouched";
		char *ref = find_url(bad[i], NULL, &url);

		assert_null(ref);
		assert_null(url);
	}
}

static void run_url_base_host(void **state)
{
	const char *out = "see http://127.0.0.1:8080/e/p/runs/r1 and https://wandb.ai/e/p/runs/r0\n"
			  "then http://127.0.0.1:8080/e/p/runs/r2 end";
	char *url = NULL, *ref = find_url(out, "http://127.0.0.1:8080/", &url);

	(void)state;
	assert_string_equal(ref, "e/p/r2");
	assert_string_equal(url, "http://127.0.0.1:8080/e/p/runs/r2");
	free(ref);
	free(url);
	/* without the base URL only wandb.ai counts */
	ref = find_url(out, NULL, &url);
	assert_string_equal(ref, "e/p/r0");
	free(ref);
	free(url);
}

static void run_name(void **state)
{
	const char *out = "wandb: Syncing run first-name\n"
			  "other: Syncing run not-this\n"
			  "  wandb: 🚀 View run gdn_iter001_x at: https://wandb.ai/e/p/runs/abc\n"
			  "wandb: View project at https://wandb.ai/e/p\n";
	char *n = gdn_measure_find_run_name(out, strlen(out));

	(void)state;
	assert_string_equal(n, "gdn_iter001_x");
	free(n);
	n = gdn_measure_find_run_name("x\nwandb: Syncing run only\n", 25);
	assert_string_equal(n, "only");
	free(n);
	assert_null(gdn_measure_find_run_name("nothing\n", 8));
	assert_null(gdn_measure_find_run_name("wandb: View run x\n", 18));
}

/* A NUL byte that cuts a run id or a run name: no run, never a cut one. */
static void run_nul_cut(void **state)
{
	static const char url[] = "wandb: View run at https://wandb.ai/e/p/runs/ab\0cd\n";
	static const char name[] = "wandb: Syncing run gdn\0_iter001\n";
	static const char name_at[] = "wandb: View run gdn\0x at: https://h/e/p\n";
	char *u = NULL, *ref = gdn_measure_find_run_url(url, sizeof(url) - 1, NULL, &u);

	(void)state;
	assert_null(ref);
	assert_null(u);
	assert_null(gdn_measure_find_run_name(name, sizeof(name) - 1));
	assert_null(gdn_measure_find_run_name(name_at, sizeof(name_at) - 1));
}

static void source_parse(void **state)
{
	int s;

	(void)state;
	assert_int_equal(gdn_enum_parse(gdn_measure_source_enum, "wandb", &s), 0);
	assert_int_equal(s, GDN_MEASURE_WANDB);
	assert_int_equal(gdn_enum_parse(gdn_measure_source_enum, "auto", &s), 0);
	assert_int_equal(s, GDN_MEASURE_AUTO);
	assert_int_equal(gdn_enum_parse(gdn_measure_source_enum, "trace", &s), 0);
	assert_int_equal(s, GDN_MEASURE_TRACE);
	assert_int_equal(gdn_enum_parse(gdn_measure_source_enum, "Wandb", &s), -1);
}

static void warn_into(const char *line, void *payload)
{
	strvec_push(payload, line);
}

/* The sources are a table: the option's choices, which metric each gives, the sample order. */
static void source_table(void **state)
{
	static const char *const want[] = {"auto", "cli", "wandb", "trace", NULL};
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_perf_sample *s;
	struct strvec warnings = STRVEC_INIT;
	const struct gdn_measure_sink sink = {warn_into, NULL, NULL, &warnings};
	struct gdn_measure_input in = {0};
	size_t i;

	(void)state;
	for (i = 0; want[i]; i++) {
		int id;

		assert_non_null(gdn_measure_source_enum[i].name);
		assert_string_equal(gdn_measure_source_enum[i].name, want[i]);
		assert_int_equal(gdn_enum_parse(gdn_measure_source_enum, want[i], &id), 0);
	}
	assert_null(gdn_measure_source_enum[i].name);
	assert_true(gdn_measure_source_takes(GDN_MEASURE_AUTO, "trace/step_ms"));
	assert_true(gdn_measure_source_takes(GDN_MEASURE_AUTO, "throughput/mfu"));
	assert_true(gdn_measure_source_takes(GDN_MEASURE_CLI, "throughput/mfu"));
	assert_false(gdn_measure_source_takes(GDN_MEASURE_CLI, "trace/step_ms"));
	assert_true(gdn_measure_source_takes(GDN_MEASURE_WANDB, "throughput/mfu"));
	assert_false(gdn_measure_source_takes(GDN_MEASURE_WANDB, "trace/step_ms"));
	assert_true(gdn_measure_source_takes(GDN_MEASURE_TRACE, "trace/step_ms"));
	assert_false(gdn_measure_source_takes(GDN_MEASURE_TRACE, "throughput/mfu"));

	/* without source options only the output (and a trace, none here) is read */
	in.metric = "throughput/mfu";
	in.out = "step 10\nthroughput/mfu: 41.5\n";
	in.len = strlen(in.out);
	s = gdn_perf_measurement_add(&m);
	gdn_measure_sample(NULL, &in, s, &sink);
	assert_true(s->has_value);
	assert_true(s->value == 41.5);
	assert_string_equal(s->source, "cli");
	assert_int_equal(warnings.nr, 0);
	/* a trace that cannot be read is a warning; the output's value stands */
	in.trace = "/nonexistent/trace.json.gz";
	s = gdn_perf_measurement_add(&m);
	gdn_measure_sample(NULL, &in, s, &sink);
	assert_true(s->has_value);
	assert_int_equal(warnings.nr, 1);
	assert_non_null(
	    strstr(warnings.v[0], "trace '/nonexistent/trace.json.gz' gives no figures"));
	strvec_clear(&warnings);
	gdn_perf_measurement_release(&m);
}

static void trace_deltas(void **state)
{
	json_t *before = json_pack("{s:f, s:{s:f, s:f}, s:{s:f}}", "step_ms", 30.0, "categories",
				   "while", 10.0, "convolution", 20.0, "ops", "while.1", 10.0);
	json_t *after =
	    json_pack("{s:f, s:{s:f, s:f, s:f}, s:{s:f}}", "step_ms", 25.0, "categories", "while",
		      2.0, "convolution", 20.5, "conditional", 3.0, "ops", "while.1", 2.0);
	struct strvec out = STRVEC_INIT;

	(void)state;
	gdn_measure_trace_deltas(before, after, 2, &out);
	assert_int_equal(out.nr, 3);
	assert_string_equal(out.v[0], "- Trace step: `30.000 ms -> 25.000 ms`");
	/* |-8| twice (category, op: name order), then conditional +3 is cut by max */
	assert_string_equal(out.v[1], "- Trace category `while`: `10.000 ms -> 2.000 ms`");
	assert_string_equal(out.v[2], "- Trace op `while.1`: `10.000 ms -> 2.000 ms`");
	strvec_clear(&out);
	gdn_measure_trace_deltas(before, after, 10, &out);
	assert_int_equal(out.nr, 5);
	assert_string_equal(out.v[3], "- Trace category `conditional`: `0.000 ms -> 3.000 ms`");
	assert_string_equal(out.v[4], "- Trace category `convolution`: `20.000 ms -> 20.500 ms`");
	strvec_clear(&out);
	gdn_measure_trace_deltas(NULL, after, 3, &out);
	assert_int_equal(out.nr, 0);
	json_decref(before);
	json_decref(after);
}

static void trace_metric_is_not_wandb(void **state)
{
	struct gdn_measure_opts o;
	struct gdn_perf_measurement m = GDN_PERF_MEASUREMENT_INIT;
	struct gdn_perf_sample *s = gdn_perf_measurement_add(&m);
	struct strvec warnings = STRVEC_INIT;
	const char *out = "https://wandb.ai/e/p/runs/r\n";
	char *url = NULL;
	json_t *detail = NULL;
	bool used = true;

	(void)state;
	gdn_measure_opts_init(&o);
	o.source = GDN_MEASURE_WANDB;
	/* a trace metric never goes to W&B: no network, nothing changed */
	gdn_measure_wandb(&o, "trace/step_ms", 1, out, strlen(out), s, &used, &url, &warnings,
			  &detail);
	assert_false(used);
	assert_null(url);
	assert_null(detail);
	assert_int_equal(warnings.nr, 0);
	assert_false(s->has_value);
	/* auto without URL, run name or prefix: nothing to fetch */
	o.source = GDN_MEASURE_AUTO;
	gdn_perf_sample_set_value(s, "cli", 4.0);
	gdn_measure_wandb(&o, "throughput/mfu", 1, "throughput/mfu=4\n", 17, s, &used, &url,
			  &warnings, &detail);
	assert_false(used);
	assert_true(s->has_value);
	assert_string_equal(s->source, "cli");
	/* --perf-source wandb with nothing naming a run: unscored, one warning */
	o.source = GDN_MEASURE_WANDB;
	gdn_measure_wandb(&o, "throughput/mfu", 1, "throughput/mfu=4\n", 17, s, &used, &url,
			  &warnings, &detail);
	assert_true(used);
	assert_false(s->has_value);
	assert_int_equal(warnings.nr, 1);
	assert_non_null(strstr(warnings.v[0], "--perf-wandb-run-prefix is not set"));
	assert_string_equal(json_string_value(json_object_get(detail, "status")), "no-run");
	json_decref(detail);
	strvec_clear(&warnings);
	gdn_perf_measurement_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(run_url_last_match),
	    cmocka_unit_test(source_table),
	    cmocka_unit_test(run_url_none),
	    cmocka_unit_test(run_url_base_host),
	    cmocka_unit_test(run_name),
	    cmocka_unit_test(run_nul_cut),
	    cmocka_unit_test(source_parse),
	    cmocka_unit_test(trace_deltas),
	    cmocka_unit_test(trace_metric_is_not_wandb),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
