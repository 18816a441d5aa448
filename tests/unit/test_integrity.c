/*
 * Unit tests for the integrity gate (integrity.h): two rulers, work
 * conserved, the physics floor, the peaks table, the suspicious-diff
 * patterns and the work figures of a real TPU trace.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <math.h>
#include <cmocka.h>
#include <unistd.h>
#include <zlib.h>
#include "gdnctl/err.h"
#include "gdnctl/integrity.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/trace_work.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

static void config(struct gdn_integrity_config *c)
{
	gdn_integrity_config_init(c);
	c->on = true;
}

static const char *only_reason(const struct gdn_integrity_findings *f, enum gdn_integrity_rule r)
{
	assert_int_equal(f->nr, 1);
	assert_int_equal(f->v[0].rule, r);
	return f->v[0].reason;
}

static void test_rulers(void **unused)
{
	/* steps of 10 ms around the champion; the candidate's about the same */
	double a[] = {10.0, 10.2, 9.9, 10.1, 10.0, 9.8, 10.3, 10.1};
	double same[] = {10.1, 9.9, 10.0, 10.2, 9.9, 10.0, 10.1, 10.0};
	double faster[] = {7.0, 7.1, 6.9, 7.2, 7.0, 6.8, 7.1, 7.0};
	struct gdn_integrity_input in = {2.0, a, same, 8, 8, NULL, NULL};
	struct gdn_integrity_config c;
	struct gdn_integrity_findings f = {0};

	(void)unused;
	config(&c);
	/* the metric claims x2, the device shows x1: disagree */
	gdn_integrity_check_rulers(&c, &in, &f);
	assert_non_null(strstr(only_reason(&f, GDN_RULE_RULERS),
			       "device time disagrees: the metric claims x2, the device time per "
			       "step shows x"));
	assert_int_equal(f.v[0].policy, GDN_INTEGRITY_REVERT);
	gdn_integrity_findings_release(&f);
	/* x1.4 claimed, x1.43 on the device: agree */
	in.metric_ratio = 1.4;
	in.dev_candidate = faster;
	gdn_integrity_check_rulers(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	/* claims x2, shows x1.43: needs x1.5 at the default share (0.5) */
	in.metric_ratio = 2.0;
	gdn_integrity_check_rulers(&c, &in, &f);
	assert_int_equal(f.nr, 1);
	gdn_integrity_findings_release(&f);
	c.rulers_share = 0.4; /* needs x1.4 */
	gdn_integrity_check_rulers(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	/* no second ruler (a trace metric), no claimed gain, or the rule off: nothing */
	in.dev_candidate = same;
	in.metric_ratio = NAN;
	gdn_integrity_check_rulers(&c, &in, &f);
	in.metric_ratio = 0.9;
	gdn_integrity_check_rulers(&c, &in, &f);
	in.metric_ratio = 3;
	c.policy[GDN_RULE_RULERS] = GDN_INTEGRITY_OFF;
	gdn_integrity_check_rulers(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	gdn_integrity_config_release(&c);
}

static void test_work(void **unused)
{
	json_t *a = json_pack("{sfsfsfsf}", "flops", 1.92e9, "bytes", 4e6, "ops", 12.0,
			      "custom_calls", 2.0);
	json_t *b = json_pack("{sfsfsfsf}", "flops", 0.71e9, "bytes", 4e6, "ops", 12.0,
			      "custom_calls", 2.0);
	struct gdn_integrity_input in = {NAN, NULL, NULL, 0, 0, a, b};
	struct gdn_integrity_config c;
	struct gdn_integrity_findings f = {0};

	(void)unused;
	config(&c);
	gdn_integrity_check_work(&c, &in, &f);
	assert_non_null(
	    strstr(only_reason(&f, GDN_RULE_WORK), "work per step fell 63 %: 1.92 -> 0.71 GFLOP"));
	gdn_integrity_findings_release(&f);
	/* allowed to fall, or within the share: nothing */
	strvec_push(&c.work_allow, "flops");
	gdn_integrity_check_work(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	strvec_clear(&c.work_allow);
	c.work_max_drop_pct = 70;
	gdn_integrity_check_work(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	/* ops count too (a hack that skips an op) */
	c.work_max_drop_pct = 50;
	json_object_set_new(b, "flops", json_real(1.9e9));
	json_object_set_new(b, "ops", json_real(4.0));
	gdn_integrity_check_work(&c, &in, &f);
	assert_non_null(strstr(only_reason(&f, GDN_RULE_WORK), "fell 67 %: 12 -> 4 ops"));
	gdn_integrity_findings_release(&f);
	/* more work is never a finding */
	json_object_set_new(b, "ops", json_real(40.0));
	gdn_integrity_check_work(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	json_decref(a);
	json_decref(b);
	gdn_integrity_config_release(&c);
}

static void test_physics(void **unused)
{
	json_t *w =
	    json_pack("{sfsfs{sssfsf}}", "flops_per_s", 50e12, "bytes_per_s", 1e11, "peak_op",
		      "name", "fusion.1", "flops_per_s", 300e12, "bytes_per_s", 1e9);
	struct gdn_integrity_input in = {NAN, NULL, NULL, 0, 0, NULL, w};
	struct gdn_integrity_config c;
	struct gdn_integrity_findings f = {0};
	struct gdn_err err = GDN_ERR_INIT;

	(void)unused;
	config(&c);
	/* no device kind: no floor */
	gdn_integrity_check_physics(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	c.device = xstrdup("tpu-v5e"); /* 393 TOPs int8: 300T is possible */
	gdn_integrity_check_physics(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	free(c.device);
	c.device = xstrdup("TPU-V4"); /* 275 TFLOPs */
	gdn_integrity_check_physics(&c, &in, &f);
	assert_non_null(strstr(only_reason(&f, GDN_RULE_PHYSICS),
			       "above the device's peak: 300 TFLOP/s implied by op 'fusion.1' > "
			       "275 TFLOP/s of tpu-v4 (https://cloud.google.com/tpu/docs/v4"));
	gdn_integrity_findings_release(&f);
	/* overridden in the configuration */
	assert_int_equal(gdn_peaks_parse(&c.peaks, "tpu-v4 flops=400T bytes=2e12", &err), 0);
	gdn_integrity_check_physics(&c, &in, &f);
	assert_int_equal(f.nr, 0);
	assert_int_equal(gdn_peaks_parse(&c.peaks, "cpu flops=10G", &err), 0);
	free(c.device);
	c.device = xstrdup("cpu");
	gdn_integrity_check_physics(&c, &in, &f);
	assert_non_null(strstr(only_reason(&f, GDN_RULE_PHYSICS), "of cpu (configuration"));
	gdn_integrity_findings_release(&f);
	assert_int_equal(gdn_peaks_parse(&c.peaks, "cpu flops=-1", &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "integrity.peaks: 'cpu flops=-1': expected 'KIND flops=N "
				     "bytes=N' (N > 0, e.g. 197T or 8e12)");
	assert_int_equal(gdn_peaks_parse(&c.peaks, "cpu", &err), GDN_ECONFIG);
	assert_int_equal(gdn_peaks_parse(&c.peaks, "flops=1T", &err), GDN_ECONFIG);
	json_decref(w);
	gdn_integrity_config_release(&c);
}

static void test_peaks_table(void **unused)
{
	static const char *const kinds[] = {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e",
					    "h100",   "h200",	 "b200",    "mi300x"};
	size_t nr;
	const struct gdn_peak *t = gdn_peaks_builtin(&nr);

	(void)unused;
	assert_int_equal(nr, ARRAY_SIZE(kinds));
	for (size_t i = 0; i < nr; i++) {
		assert_string_equal(t[i].kind, kinds[i]);
		assert_true(t[i].flops > 1e14 && t[i].bytes > 5e11);
		assert_non_null(strstr(t[i].source, "https://"));
	}
}

/* The first match of the default patterns on a one-file diff, or NULL. */
static char *scan_one(const char *file, const char *side_lines)
{
	struct gdn_diffpats p = {0};
	struct strvec m = STRVEC_INIT;
	char *diff = xstrfmt("diff --git a/%s b/%s\nindex 1..2 100644\n--- a/%s\n+++ b/%s\n@@ -1,2 "
			     "+1,2 @@\n%s\n",
			     file, file, file, file, side_lines);
	char *r;

	gdn_diffpats_add_defaults(&p);
	gdn_diffpat_scan(&p, diff, strlen(diff), &m);
	r = m.nr ? xstrdup(m.v[0]) : NULL;
	strvec_clear(&m);
	gdn_diffpats_release(&p);
	free(diff);
	return r;
}

static void expect_scan(const char *file, const char *lines, const char *want)
{
	char *got = scan_one(file, lines);

	if (!want) {
		if (got)
			fail_msg("'%s' matched: %s", lines, got);
		return;
	}
	if (!got || strncmp(got, want, strlen(want)))
		fail_msg("'%s': got %s, want %s...", lines, got ? got : "nothing", want);
	free(got);
}

static void test_diff_defaults(void **unused)
{
	(void)unused;
	/* JAX */
	expect_scan("k.py", "-    out.block_until_ready()", "sync-removed in k.py: out.block_");
	expect_scan("k.py", "+@functools.lru_cache(maxsize=None)", "cached-results in k.py");
	expect_scan("k.py", "+_RESULTS = {}", "cached-results in k.py: _RESULTS = {}");
	expect_scan("k.py", "+    y = jax.pure_callback(f, spec, x)", "host-callback in k.py");
	expect_scan("k.py", "+    x = x.astype(jnp.bfloat16)", "precision-narrowed in k.py");
	expect_scan("k.py", "+    precision=jax.lax.Precision.DEFAULT,", "precision-narrowed");
	expect_scan("bench.py", "+time.perf_counter = lambda: 0.0", "timer-patched in bench.py");
	/* PyTorch */
	expect_scan("m.py", "-    torch.cuda.synchronize()", "sync-removed in m.py");
	expect_scan("m.py", "+torch.backends.cuda.matmul.allow_tf32 = True", "precision-narrowed");
	expect_scan("m.py", "+    x = x.half()", "precision-narrowed in m.py");
	/* Triton */
	expect_scan("t.py", "+        acc += tl.dot(a, b, input_precision=\"tf32\")",
		    "precision-narrowed in t.py");
	expect_scan("t.py", "+triton.testing.do_bench = fake", "timer-patched in t.py");
	/* CUDA and C */
	expect_scan("k.cu", "-    cudaDeviceSynchronize();", "sync-removed in k.cu");
	expect_scan("k.cu", "-    __syncthreads();", "sync-removed in k.cu");
	expect_scan("k.cu", "+    cudaLaunchHostFunc(s, cb, p);", "host-callback in k.cu");
	expect_scan("k.cu", "+    __half h = __float2half(x);", "precision-narrowed in k.cu");
	expect_scan("k.c", "+static float *result_cache;", "cached-results in k.c");
	expect_scan("k.c", "+int clock_gettime(clockid_t id, struct timespec *t)",
		    "timer-patched in k.c");
	expect_scan("k.c", "+#pragma GCC optimize(\"Ofast\")", "precision-narrowed in k.c");
	/* benign changes */
	expect_scan("k.py", "+    acc = jnp.dot(a, b, preferred_element_type=jnp.float32)", NULL);
	expect_scan("k.py", "+    out.block_until_ready()", NULL);
	expect_scan("k.py", "+    cache_key = (m, n)", NULL);
	expect_scan("k.c", "+static inline float dot4(const float *a, const float *b)", NULL);
	expect_scan("k.c", "+\tfor (int k = 0; k < n; k++) /* half of the rows */", NULL);
	expect_scan("notes.md", "+We cache the results with lru_cache and bfloat16.", NULL);
	expect_scan("k.c", "-\tstatic float *result_cache;", NULL);
}

static void test_diff_headers_and_parse(void **unused)
{
	const char *diff = "diff --git a/t.c b/t.c\nnew file mode 120000\nindex 0..1\n--- "
			   "/dev/null\n+++ b/t.c\n@@ -0,0 +1 @@\n+test_matmul.c\n";
	struct gdn_diffpats p = {0};
	struct strvec m = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	(void)unused;
	gdn_diffpats_add_defaults(&p);
	gdn_diffpat_scan(&p, diff, strlen(diff), &m);
	assert_int_equal(m.nr, 1);
	assert_string_equal(m.v[0], "symlink-added in t.c: new file mode 120000");
	strvec_clear(&m);
	assert_int_equal(gdn_diffpat_parse(&p, "mine:+:*.rs,*.go:unsafe[[:space:]]*\\{", &err), 0);
	assert_string_equal(p.v[p.nr - 1].globs.v[1], "*.go");
	assert_int_equal(gdn_diffpat_parse(&p, "any:-::TODO: keep", &err), 0);
	assert_int_equal(p.v[p.nr - 1].globs.nr, 0);
	assert_string_equal(p.v[p.nr - 1].regex, "TODO: keep");
	assert_int_equal(gdn_diffpat_parse(&p, "bad:x:*.c:a", &err), GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "expected NAME:SIDE:GLOB"));
	assert_int_equal(gdn_diffpat_parse(&p, "bad:+:*.c:a(", &err), GDN_ECONFIG);
	assert_int_equal(gdn_diffpat_parse(&p, ":+:*.c:a", &err), GDN_ECONFIG);
	assert_int_equal(gdn_diffpat_parse(&p, "n:+:*.c:", &err), GDN_ECONFIG);
	gdn_diffpats_release(&p);
}

static void test_decisive(void **unused)
{
	struct gdn_integrity_config c;
	struct gdn_integrity_findings f = {0};

	(void)unused;
	config(&c);
	assert_null(gdn_integrity_decisive(&f));
	c.policy[GDN_RULE_DIFF] = GDN_INTEGRITY_FLAG;
	gdn_integrity_add(&f, &c, GDN_RULE_DIFF, "suspicious diff: %s", "x");
	assert_int_equal(gdn_integrity_decisive(&f)->rule, GDN_RULE_DIFF);
	gdn_integrity_add(&f, &c, GDN_RULE_WORK, "work per step fell");
	assert_int_equal(gdn_integrity_decisive(&f)->rule, GDN_RULE_WORK);
	gdn_integrity_findings_release(&f);
	gdn_integrity_config_release(&c);
}

static void test_work_json(void **unused)
{
	static const char doc[] =
	    "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"fusion.1\",\"args\":{\"model_flops\":"
	    "\"6144\",\"bytes_accessed\":\"5120\",\"long_name\":\"x\"}},{\"ph\":\"X\",\"name\":"
	    "\"fusion.1\",\"args\":{\"model_flops\":100,\"other\":{\"flops\":7}}},{\"name\":"
	    "\"copy\",\"args\":{\"bytes_accessed\":\"8\"}},{\"name\":\"n\",\"args\":{\"flops\":"
	    "\"-1\"}},{\"args\":[1,2]}],\"flops\":9}";
	struct gdn_trace_work w = GDN_TRACE_WORK_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const struct gdn_trace_work_op *op;

	(void)unused;
	assert_int_equal(gdn_trace_work_mem(doc, sizeof(doc) - 1, &w, &err), 0);
	assert_true(w.has_flops && w.has_bytes);
	assert_true(w.flops == 6244 && w.bytes == 5128);
	assert_int_equal(w.events, 3);
	op = gdn_trace_work_find(&w, "fusion.1");
	assert_non_null(op);
	assert_true(op->flops == 6244 && op->count == 2);
	assert_null(gdn_trace_work_find(&w, "n"));
	gdn_trace_work_release(&w);
	assert_int_equal(gdn_trace_work_mem("{\"traceEvents\":[", 16, &w, &err), GDN_EPARSE);
	gdn_trace_work_release(&w);
}

/* A real TPU trace: XLA's cost analysis on each op, below the peak of any TPU. */
static void test_real_tpu_trace(void **unused)
{
	const char *shared = getenv("GDNCTL_SHARED_DIR");
	struct gdn_trace_work w = GDN_TRACE_WORK_INIT;
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary s = GDN_TRACE_SUMMARY_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	json_t *fig, *op;
	char *path;

	(void)unused;
	if (!shared || !*shared)
		skip();
	path = xstrfmt(
	    "%s/traces/tpu-inference_2026_01_11_21_26_41_t1v-n-9eb622fc-w-0.trace.json.gz", shared);
	if (access(path, R_OK)) {
		free(path);
		skip();
	}
	assert_int_equal(gdn_trace_work_file(path, &w, &err), 0);
	assert_true(w.has_flops && w.has_bytes && w.flops > 1e9 && w.events > 1000);
	assert_int_equal(gdn_trace_summarize_file(path, &o, &s, &err), 0);
	fig = gdn_integrity_work_figures(&s, &w);
	assert_non_null(fig);
	op = json_object_get(fig, "peak_op");
	/* 6908 ops per step (the trace is one step), 388 custom calls */
	assert_true(json_number_value(json_object_get(fig, "ops")) == 6908);
	assert_true(json_number_value(json_object_get(fig, "custom_calls")) == 388);
	assert_true(fabs(json_number_value(json_object_get(fig, "flops")) - 6.396e13) < 1e11);
	/* the fastest op, a convolution fusion: 841 TFLOP/s (the async copy-starts are skipped) */
	assert_string_equal(json_string_value(json_object_get(op, "name")),
			    "convolution_bitcast_fusion");
	assert_true(fabs(json_number_value(json_object_get(op, "flops_per_s")) - 841.5e12) < 1e12);
	/* possible on a v5p or v6e; not on a v5e (393 TOPs) nor a v4 (275 TFLOPs) */
	{
		struct gdn_integrity_input in = {NAN, NULL, NULL, 0, 0, NULL, fig};
		struct gdn_integrity_config c;
		struct gdn_integrity_findings f = {0};

		config(&c);
		c.device = xstrdup("tpu-v6e");
		gdn_integrity_check_physics(&c, &in, &f);
		assert_int_equal(f.nr, 0);
		free(c.device);
		c.device = xstrdup("tpu-v5e");
		gdn_integrity_check_physics(&c, &in, &f);
		assert_non_null(
		    strstr(only_reason(&f, GDN_RULE_PHYSICS),
			   "842 TFLOP/s implied by op 'convolution_bitcast_fusion' > 393 "
			   "TFLOP/s of tpu-v5e"));
		gdn_integrity_findings_release(&f);
		gdn_integrity_config_release(&c);
	}
	json_decref(fig);
	gdn_trace_summary_release(&s);
	gdn_trace_work_release(&w);
	free(path);
}

/* Two real H200 traces of one attention: v1 fuses v0's 132 ops per step into 4. */
static void test_real_gpu_fusion(void **unused)
{
	const char *shared = getenv("GDNCTL_SHARED_DIR");
	const char *names[] = {"REAL_jax-gpu-h200_attention-v0_vm.xplane.pb",
			       "REAL_jax-gpu-h200_attention-v1_vm.xplane.pb"};
	json_t *fig[2] = {NULL, NULL};
	struct gdn_integrity_config c;
	struct gdn_integrity_findings f = {0};

	(void)unused;
	if (!shared || !*shared)
		skip();
	for (int i = 0; i < 2; i++) {
		struct gdn_trace_work w = GDN_TRACE_WORK_INIT;
		struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
		struct gdn_trace_summary s = GDN_TRACE_SUMMARY_INIT;
		struct gdn_err err = GDN_ERR_INIT;
		char *path = xstrfmt("%s/traces/%s", shared, names[i]);

		if (access(path, R_OK)) {
			free(path);
			skip();
		}
		/* an XPlane: no cost-analysis figures are read, the ops are */
		assert_int_equal(gdn_trace_work_file(path, &w, &err), 0);
		assert_false(w.has_flops || w.has_bytes);
		assert_int_equal(gdn_trace_summarize_file(path, &o, &s, &err), 0);
		fig[i] = gdn_integrity_work_figures(&s, &w);
		assert_non_null(fig[i]);
		assert_null(json_object_get(fig[i], "flops"));
		gdn_trace_summary_release(&s);
		gdn_trace_work_release(&w);
		free(path);
	}
	config(&c);
	{
		struct gdn_integrity_input in = {NAN, NULL, NULL, 0, 0, fig[0], fig[1]};

		gdn_integrity_check_work(&c, &in, &f);
		assert_string_equal(
		    only_reason(&f, GDN_RULE_WORK),
		    "work per step fell 97 %: 132 -> 4 ops (ops per step; at most 50 % "
		    "allowed, integrity.work_allow lists none for it)");
		gdn_integrity_findings_release(&f);
		/* a fusion: `ops` allowed to fall */
		strvec_push(&c.work_allow, "ops");
		gdn_integrity_check_work(&c, &in, &f);
		assert_int_equal(f.nr, 0);
	}
	json_decref(fig[0]);
	json_decref(fig[1]);
	gdn_integrity_config_release(&c);
}

/* An XPlane's work figures equal its JSON twin's: op by op, and per step. */
static void expect_same_work(const struct gdn_trace_work *j, const struct gdn_trace_work *x)
{
	assert_true(x->has_flops && x->has_bytes);
	assert_int_equal(x->events, j->events);
	assert_int_equal(x->nr, j->nr);
	assert_true(fabs(x->flops - j->flops) <= 1e-9 * j->flops);
	assert_true(fabs(x->bytes - j->bytes) <= 1e-9 * j->bytes);
	for (size_t i = 0; i < j->nr; i++) {
		const struct gdn_trace_work_op *o = gdn_trace_work_find(x, j->v[i].name);

		assert_non_null(o);
		assert_int_equal(o->count, j->v[i].count);
		assert_true(fabs(o->flops - j->v[i].flops) <= 1e-9 * j->v[i].flops);
		assert_true(fabs(o->bytes - j->v[i].bytes) <= 1e-9 * j->v[i].bytes);
	}
	assert_string_equal(x->peak_name, j->peak_name);
	assert_true(x->peak_flops == j->peak_flops);
	/* durations: JSON microseconds with 6 decimals, XPlane whole picoseconds */
	assert_true(fabs(x->peak_us - j->peak_us) <= 1e-6);
}

static void test_real_tpu_xplane_twins(void **unused)
{
	static const char *const stamps[] = {"2026_01_11_21_26_41", "2026_01_12_00_26_20",
					     "2026_01_12_01_08_50"};
	const char *shared = getenv("GDNCTL_SHARED_DIR");

	(void)unused;
	if (!shared || !*shared)
		skip();
	for (size_t i = 0; i < sizeof(stamps) / sizeof(stamps[0]); i++) {
		struct gdn_trace_work wj = GDN_TRACE_WORK_INIT, wx = GDN_TRACE_WORK_INIT;
		struct gdn_trace_work ws = GDN_TRACE_WORK_INIT;
		struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
		struct gdn_trace_summary sj = GDN_TRACE_SUMMARY_INIT, sx = GDN_TRACE_SUMMARY_INIT;
		struct gdn_err err = GDN_ERR_INIT;
		char *json = xstrfmt("%s/traces/tpu-inference_%s_t1v-n-9eb622fc-w-0.trace.json.gz",
				     shared, stamps[i]);
		char *xpb =
		    xstrfmt("%s/traces/DERIVED_tpu-inference_%s_t1v-n-9eb622fc-w-0.xplane.pb",
			    shared, stamps[i]);
		json_t *fj, *fx;

		if (access(json, R_OK) || access(xpb, R_OK)) {
			free(json);
			free(xpb);
			skip();
		}
		assert_int_equal(gdn_trace_work_file(json, &wj, &err), 0);
		assert_int_equal(gdn_trace_work_file(xpb, &wx, &err), 0);
		expect_same_work(&wj, &wx);
		/* the summary's read fills the same figures (one read for the gate) */
		o.work = &ws;
		assert_int_equal(gdn_trace_summarize_file(xpb, &o, &sx, &err), 0);
		expect_same_work(&wj, &ws);
		o.work = NULL;
		assert_int_equal(gdn_trace_summarize_file(json, &o, &sj, &err), 0);
		fj = gdn_integrity_work_figures(&sj, &wj);
		fx = gdn_integrity_work_figures(&sx, &ws);
		assert_non_null(fj);
		assert_non_null(fx);
		{
			static const char *const keys[] = {"ops",   "custom_calls", "flops",
							   "bytes", "flops_per_s",  "bytes_per_s"};

			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
				double a = json_number_value(json_object_get(fj, keys[k]));
				double b = json_number_value(json_object_get(fx, keys[k]));

				assert_non_null(json_object_get(fx, keys[k]));
				assert_true(fabs(a - b) <= 1e-6 * a);
			}
		}
		json_decref(fj);
		json_decref(fx);
		gdn_trace_summary_release(&sj);
		gdn_trace_summary_release(&sx);
		gdn_trace_work_release(&wj);
		gdn_trace_work_release(&wx);
		gdn_trace_work_release(&ws);
		free(json);
		free(xpb);
	}
}

/* ---- hand-made XSpaces (testlib.h's protobuf writers) ---- */

/* An XStat: stat metadata id, and value as field (3 uint64, 4 int64, 5 str, 2 double). */
static void pb_stat(struct sbuf *to, unsigned field, uint64_t id, unsigned vfield, uint64_t v,
		    const char *str, double d)
{
	struct sbuf st = SBUF_INIT;

	pb_uint(&st, 1, id);
	if (vfield == 5)
		pb_bytes(&st, 5, str, strlen(str));
	else if (vfield == 2)
		pb_double(&st, 2, d);
	else
		pb_uint(&st, vfield, v);
	pb_msg(to, field, &st);
	sbuf_release(&st);
}

/*
 * One TPU plane, its cost analysis in every value kind: stat metadata 1
 * model_flops, 2 flops, 3 bytes_accessed; ops fusion.1 (model_flops "6144"
 * as text, flops 9999: model_flops wins; bytes 5120.0 as a double),
 * copy-start.2 (int64 flops 100, uint64 bytes 8), neg.3 (int64 flops -1:
 * not a figure), plain.4 (none). Events: fusion.1 for 1 us, fusion.1 for 2
 * us whose own flops stat (100) wins, copy-start.2 for 1 ns, neg.3, plain.4,
 * and an aggregate of fusion.1 (not a timeline event).
 */
static void make_work_space(struct sbuf *space)
{
	static const char *const names[] = {"", "fusion.1", "copy-start.2", "neg.3", "plain.4"};
	static const char *const stats[] = {"", "model_flops", "flops", "bytes_accessed"};
	struct sbuf plane = SBUF_INIT, line = SBUF_INIT, ev = SBUF_INIT, ent = SBUF_INIT;
	struct sbuf md = SBUF_INIT;
	static const uint64_t evs[][3] = {{1, 0, 1000000},
					  {1, 2000000, 2000000},
					  {2, 5000000, 1000},
					  {3, 6000000, 1000},
					  {4, 7000000, 1000}};

	pb_uint(&plane, 1, 1);
	pb_bytes(&plane, 2, "/device:TPU:0", 13);
	pb_uint(&line, 1, 1);
	pb_bytes(&line, 2, "XLA Ops", 7);
	pb_uint(&line, 3, 1000);
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		pb_uint(&ev, 1, evs[i][0]);
		pb_uint(&ev, 2, evs[i][1]);
		pb_uint(&ev, 3, evs[i][2]);
		if (i == 1)
			pb_stat(&ev, 4, 2, 3, 100, NULL, 0);
		pb_msg(&line, 4, &ev);
	}
	pb_uint(&ev, 1, 1);
	pb_uint(&ev, 5, 3); /* num_occurrences */
	pb_uint(&ev, 3, 1000);
	pb_msg(&line, 4, &ev);
	pb_msg(&plane, 3, &line);
	for (uint64_t i = 1; i <= 4; i++) {
		pb_uint(&md, 1, i);
		pb_bytes(&md, 2, names[i], strlen(names[i]));
		if (i == 1) {
			pb_stat(&md, 5, 2, 3, 9999, NULL, 0);
			pb_stat(&md, 5, 1, 5, 0, "6144", 0);
			pb_stat(&md, 5, 3, 2, 0, NULL, 5120.0);
		} else if (i == 2) {
			pb_stat(&md, 5, 2, 4, 100, NULL, 0);
			pb_stat(&md, 5, 3, 3, 8, NULL, 0);
		} else if (i == 3) {
			pb_stat(&md, 5, 2, 4, (uint64_t)-1, NULL, 0);
		}
		pb_uint(&ent, 1, i);
		pb_msg(&ent, 2, &md);
		pb_msg(&plane, 4, &ent);
	}
	for (uint64_t i = 1; i <= 3; i++) {
		pb_uint(&md, 1, i);
		pb_bytes(&md, 2, stats[i], strlen(stats[i]));
		pb_uint(&ent, 1, i);
		pb_msg(&ent, 2, &md);
		pb_msg(&plane, 5, &ent);
	}
	pb_msg(space, 1, &plane);
	sbuf_release(&plane);
	sbuf_release(&line);
	sbuf_release(&ev);
	sbuf_release(&ent);
	sbuf_release(&md);
}

static void expect_work_space(const struct gdn_trace_work *w)
{
	const struct gdn_trace_work_op *op = gdn_trace_work_find(w, "fusion.1");

	assert_true(w->has_flops && w->has_bytes);
	assert_true(w->flops == 6144 + 100 + 100);
	assert_true(w->bytes == 5120 + 5120 + 8);
	assert_int_equal(w->events, 3);
	assert_non_null(op);
	assert_true(op->flops == 6244 && op->bytes == 10240 && op->count == 2);
	assert_null(gdn_trace_work_find(w, "neg.3"));
	assert_null(gdn_trace_work_find(w, "plain.4"));
	/* the fastest: fusion.1's first event (6144 FLOP in 1 us); copy-start.2 is left out */
	assert_string_equal(w->peak_name, "fusion.1");
	assert_true(w->peak_flops == 6144 && w->peak_us == 1);
}

static void test_work_xplane(void **unused)
{
	struct sbuf space = SBUF_INIT, gz = SBUF_INIT;
	struct gdn_trace_work w = GDN_TRACE_WORK_INIT;
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary s = GDN_TRACE_SUMMARY_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	z_stream zs;

	(void)unused;
	make_work_space(&space);
	assert_true(gdn_xplane_sniff_raw(space.buf, space.len));
	assert_int_equal(gdn_trace_work_mem(space.buf, space.len, &w, &err), 0);
	expect_work_space(&w);
	gdn_trace_work_release(&w);
	/* gzip: sniffed through the inflated head */
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
	sbuf_grow(&gz, deflateBound(&zs, space.len));
	zs.next_in = (unsigned char *)space.buf;
	zs.avail_in = (uInt)space.len;
	zs.next_out = (unsigned char *)gz.buf;
	zs.avail_out = (uInt)(gz.alloc - 1);
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	sbuf_setlen(&gz, zs.total_out);
	deflateEnd(&zs);
	assert_true(gdn_xplane_sniff_raw(gz.buf, gz.len));
	assert_int_equal(gdn_trace_work_mem(gz.buf, gz.len, &w, &err), 0);
	expect_work_space(&w);
	/* the summary's read: the same figures, the old ones dropped first */
	o.work = &w;
	assert_int_equal(gdn_xplane_summarize_mem(space.buf, space.len, &o, &s, &err), 0);
	expect_work_space(&w);
	assert_int_equal(s.events_selected, 5);
	gdn_trace_summary_release(&s);
	gdn_trace_work_release(&w);
	/* cut short: an error, whatever was read */
	assert_int_equal(gdn_trace_work_mem(space.buf, space.len - 3, &w, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, "XPlane"));
	gdn_trace_work_release(&w);
	sbuf_release(&gz);
	sbuf_release(&space);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rulers),	   cmocka_unit_test(test_work),
	    cmocka_unit_test(test_physics),	   cmocka_unit_test(test_peaks_table),
	    cmocka_unit_test(test_diff_defaults),  cmocka_unit_test(test_diff_headers_and_parse),
	    cmocka_unit_test(test_decisive),	   cmocka_unit_test(test_work_json),
	    cmocka_unit_test(test_real_tpu_trace), cmocka_unit_test(test_real_gpu_fusion),
	    cmocka_unit_test(test_work_xplane),	   cmocka_unit_test(test_real_tpu_xplane_twins),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
