/*
 * Unit tests for the Marin builders (src/backend/marin.c): the exact
 * remote command strings and environment order of the original
 * scripts/gdn/gdnctl.py (v3), --profile-env validation with its messages
 * (tests/test_gdnctl_profile_env.py), the MARIN_PREFIX default, the CE
 * normalisers, the argv of Marin's wrappers, and name checks.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/marin.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

/* The v3 REMOTE_TEST_CMD for --tests both, quoted from the reference. */
static const char remote_test_both[] =
    "cd lib/levanter && if [ -n \"${VIRTUAL_ENV:-}\" ] && [ -x \"$VIRTUAL_ENV/bin/python\" ]; "
    "then uv sync --active --extra=tpu --group test && uv pip install --python "
    "\"$VIRTUAL_ENV/bin/python\" --index-url https://download.pytorch.org/whl/cpu "
    "--force-reinstall torch==2.9.0+cpu && uv pip install --python \"$VIRTUAL_ENV/bin/python\" "
    "transformers && EQX_ON_ERROR=nan WANDB_MODE=offline uv run --active pytest "
    "tests/test_gdn_kernels.py tests/test_gdn_layer.py -v; else uv sync --extra=tpu --group "
    "test && uv pip install --python ../../.venv/bin/python --index-url "
    "https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && uv pip install "
    "--python ../../.venv/bin/python transformers && EQX_ON_ERROR=nan WANDB_MODE=offline uv run "
    "pytest tests/test_gdn_kernels.py tests/test_gdn_layer.py -v; fi";

/* The v3 PROFILE_CMD on a dev TPU, no dry run, quoted from the reference. */
static const char profile_dev[] =
    "set -e && if [ -n \"${VIRTUAL_ENV:-}\" ] && [ -x \"$VIRTUAL_ENV/bin/python\" ]; then uv "
    "sync --all-packages --extra=tpu --python=3.11 --active && uv pip install --python "
    "\"$VIRTUAL_ENV/bin/python\" --index-url https://download.pytorch.org/whl/cpu "
    "--force-reinstall torch==2.9.0+cpu && (uv pip uninstall --python "
    "\"$VIRTUAL_ENV/bin/python\" torchvision || true) && \"$VIRTUAL_ENV/bin/python\" -m "
    "experiments.speedrun.hackable_transformer_gdn.tiny_profile --force_run_failed true; else "
    "uv sync --all-packages --extra=tpu --python=3.11 && uv pip install --python "
    ".venv/bin/python --index-url https://download.pytorch.org/whl/cpu --force-reinstall "
    "torch==2.9.0+cpu && (uv pip uninstall --python .venv/bin/python torchvision || true) && "
    ".venv/bin/python -m experiments.speedrun.hackable_transformer_gdn.tiny_profile "
    "--force_run_failed true; fi";

/* Replace every occurrence of `from` in s by `to`. Returns a new string. */
static char *replace_all(const char *s, const char *from, const char *to)
{
	struct sbuf sb = SBUF_INIT;
	const char *p;

	while ((p = strstr(s, from))) {
		sbuf_add(&sb, s, (size_t)(p - s));
		sbuf_adds(&sb, to);
		s = p + strlen(from);
	}
	sbuf_adds(&sb, s);
	return sbuf_detach(&sb, NULL);
}

static void test_command_both_is_exact(void **state)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_marin_test_command(&sb, "both", NULL, &err), 0);
	assert_string_equal(sb.buf, remote_test_both);
	sbuf_release(&sb);
}

static void test_command_selection_and_pytest_args(void **state)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *want;

	assert_int_equal(gdn_marin_test_command(&sb, "kernels", "  -k chunk -x \n", &err), 0);
	want = replace_all(remote_test_both, "tests/test_gdn_kernels.py tests/test_gdn_layer.py -v",
			   "tests/test_gdn_kernels.py -v -k chunk -x");
	assert_string_equal(sb.buf, want);
	free(want);

	sbuf_reset(&sb);
	assert_int_equal(gdn_marin_test_command(&sb, "layer", "   ", &err), 0);
	want = replace_all(remote_test_both, "tests/test_gdn_kernels.py tests/test_gdn_layer.py -v",
			   "tests/test_gdn_layer.py -v");
	assert_string_equal(sb.buf, want);
	free(want);

	assert_int_equal(gdn_marin_test_command(&sb, "all", NULL, &err), GDN_EUSAGE);
	assert_string_equal(err.msg,
			    "invalid test selection 'all': expected kernels, layer or both");
	sbuf_release(&sb);
}

static void test_env_order(void **state)
{
	struct strvec env = STRVEC_INIT;

	gdn_marin_test_env(&env);
	assert_int_equal(env.nr, 2);
	assert_string_equal(env.v[0], "EQX_ON_ERROR=nan");
	assert_string_equal(env.v[1], "WANDB_MODE=offline");
	strvec_clear(&env);
}

static void profile_command_variants(void **state)
{
	struct sbuf sb = SBUF_INIT;
	char *want;

	gdn_marin_profile_command(&sb, true, false);
	assert_string_equal(sb.buf, profile_dev);

	sbuf_reset(&sb);
	gdn_marin_profile_command(&sb, false, false);
	want =
	    replace_all(profile_dev, "uv sync --all-packages --extra=tpu --python=3.11", "uv sync");
	assert_string_equal(sb.buf, want);
	assert_non_null(strstr(sb.buf, "then uv sync --active && "));
	assert_non_null(strstr(sb.buf, "else uv sync && "));
	free(want);

	sbuf_reset(&sb);
	gdn_marin_profile_command(&sb, true, true);
	want = replace_all(profile_dev, "--force_run_failed true",
			   "--force_run_failed true --dry_run true");
	assert_string_equal(sb.buf, want);
	free(want);
	sbuf_release(&sb);
}

/* 1.3.1: items stripped, empties skipped, split at the first '=', values verbatim. */
static void profile_env_parses_pairs(void **state)
{
	const char *items[] = {"GDN_TRIANGULAR_SOLVE_PROBE=identity",
			       "WANDB_MODE=offline",
			       "EMPTY_VALUE=",
			       "  ",
			       " SPACED = a=b ",
			       NULL};
	struct strvec pairs = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_marin_parse_profile_env(items, &pairs, &err), 0);
	assert_int_equal(pairs.nr, 4);
	assert_string_equal(pairs.v[0], "GDN_TRIANGULAR_SOLVE_PROBE=identity");
	assert_string_equal(pairs.v[1], "WANDB_MODE=offline");
	assert_string_equal(pairs.v[2], "EMPTY_VALUE=");
	assert_string_equal(pairs.v[3], "SPACED= a=b");
	strvec_clear(&pairs);
}

static void expect_profile_env_error(const char *item, const char *msg)
{
	const char *items[] = {"OK=1", item, NULL};
	struct strvec pairs = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_marin_parse_profile_env(items, &pairs, &err), GDN_EUSAGE);
	assert_string_equal(err.msg, msg);
	strvec_clear(&pairs);
}

/* 1.3.2: the three rejected entries and their exact messages. */
static void profile_env_rejects(void **state)
{
	expect_profile_env_error(
	    "MISSING_EQUALS", "invalid --profile-env entry (expected KEY=VALUE): 'MISSING_EQUALS'");
	expect_profile_env_error(
	    "1BAD=value", "invalid --profile-env key '1BAD'; expected [A-Za-z_][A-Za-z0-9_]*");
	expect_profile_env_error("=value",
				 "invalid --profile-env key ''; expected [A-Za-z_][A-Za-z0-9_]*");
	/* Python's repr: the raw item (not stripped), double quotes around a single quote */
	expect_profile_env_error(" it's ",
				 "invalid --profile-env entry (expected KEY=VALUE): \" it's \"");
	expect_profile_env_error(
	    "A-B=1", "invalid --profile-env key 'A-B'; expected [A-Za-z_][A-Za-z0-9_]*");
	expect_profile_env_error("NL\nX", "invalid --profile-env entry (expected KEY=VALUE): "
					  "'NL\\nX'");
}

static struct gdn_marin_profile base_profile(void)
{
	struct gdn_marin_profile p = GDN_MARIN_PROFILE_INIT;

	p.run_name_prefix = "demo";
	return p;
}

static bool has_item(const struct strvec *sv, const char *s)
{
	return strvec_contains(sv, s);
}

static bool has_prefix(const struct strvec *sv, const char *prefix)
{
	for (size_t i = 0; i < sv->nr; i++)
		if (!strncmp(sv->v[i], prefix, strlen(prefix)))
			return true;
	return false;
}

/* 1.3.3: the exact order, and the CE override only when requested. */
static void profile_env_order_and_ce(void **state)
{
	static const char *const want[] = {
	    "EQX_ON_ERROR=nan",
	    "WANDB_MODE=online",
	    "GDN_PROFILE_SIZE=130m",
	    "GDN_PROFILE_NUM_STEPS=20",
	    "GDN_PROFILE_PROFILE_START_STEP=2",
	    "GDN_PROFILE_PROFILE_NUM_STEPS=6",
	    "GDN_PROFILE_RUN_NAME_PREFIX=demo",
	    "GDN_PROFILE_TPU_VARIANT=v5p-8",
	    "GDN_PROFILE_BATCH_SIZE=8",
	    "LEVANTER_FUSED_CE_IMPLEMENTATION=pallas_tpu",
	    "LEVANTER_PALLAS_TPU_BWD_USE_XLA_STREAMING_BENCH=0",
	    "X=1",
	};
	const char *extra[] = {"X=1", NULL};
	struct gdn_marin_profile p = base_profile();
	struct strvec env = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	p.ce_impl = "pallas_tpu";
	p.extra = extra;
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), 0);
	assert_int_equal(env.nr, ARRAY_SIZE(want));
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		assert_string_equal(env.v[i], want[i]);

	strvec_clear(&env);
	p.ce_impl = "auto";
	p.extra = NULL;
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), 0);
	assert_false(has_prefix(&env, "LEVANTER_FUSED_CE_IMPLEMENTATION="));
	assert_true(has_item(&env, "LEVANTER_PALLAS_TPU_BWD_USE_XLA_STREAMING_BENCH=0"));
	strvec_clear(&env);
}

/* 1.3.4-1.3.6: xla_streaming backward, model-boundary overrides, attention-only. */
static void profile_env_options(void **state)
{
	struct gdn_marin_profile p = base_profile();
	struct strvec env = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	p.ce_impl = "pallas_tpu";
	p.ce_bwd = "xla_streaming";
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), 0);
	assert_true(has_item(&env, "LEVANTER_PALLAS_TPU_BWD_USE_XLA_STREAMING_BENCH=1"));
	assert_true(has_item(&env, "LEVANTER_FUSED_CE_IMPLEMENTATION=pallas_tpu"));
	strvec_clear(&env);

	p = base_profile();
	p.chunk_size = 128;
	p.segment_size = 16;
	p.layers_per_block = 1;
	p.block_size = 4;
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), 0);
	assert_string_equal(env.v[8], "GDN_PROFILE_BATCH_SIZE=8");
	assert_string_equal(env.v[9], "GDN_PROFILE_CHUNK_SIZE=128");
	assert_string_equal(env.v[10], "GDN_PROFILE_SEGMENT_SIZE=16");
	assert_string_equal(env.v[11], "GDN_PROFILE_GDN_LAYERS_PER_BLOCK=1");
	assert_string_equal(env.v[12], "GDN_PROFILE_GDN_BLOCK_SIZE=4");
	assert_false(has_item(&env, "GDN_PROFILE_ALL_TRANSFORMER=1"));
	strvec_clear(&env);

	p = base_profile();
	p.all_transformer = true;
	p.batch_size = GDN_MARIN_UNSET;
	p.ce_bwd = "XLA";
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), 0);
	assert_true(has_item(&env, "GDN_PROFILE_ALL_TRANSFORMER=1"));
	assert_false(has_prefix(&env, "GDN_PROFILE_BATCH_SIZE="));
	assert_string_equal(env.v[env.nr - 1], "LEVANTER_PALLAS_TPU_BWD_USE_XLA_STREAMING_BENCH=1");
	strvec_clear(&env);
}

static void profile_env_bad_values(void **state)
{
	const char *extra[] = {"1BAD=value", NULL};
	struct gdn_marin_profile p = base_profile();
	struct strvec env = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	p.extra = extra;
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), GDN_EUSAGE);
	assert_string_equal(err.msg,
			    "invalid --profile-env key '1BAD'; expected [A-Za-z_][A-Za-z0-9_]*");
	assert_int_equal(env.nr, 0);

	p.extra = NULL;
	p.ce_impl = "cuda";
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), GDN_EUSAGE);
	assert_string_equal(err.msg,
			    "invalid CE implementation 'cuda'; expected one of: auto, xla, "
			    "reference, pallas_tpu, pallas_gpu");
	p.ce_impl = "auto";
	p.ce_bwd = "fast";
	assert_int_equal(gdn_marin_profile_env(&p, &env, &err), GDN_EUSAGE);
	assert_string_equal(err.msg, "unsupported CE backward mode 'fast'; expected one of pallas, "
				     "xla_streaming");
	assert_int_equal(env.nr, 0);
}

static void ce_normalisers(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;
	const char *out = NULL;

	assert_int_equal(gdn_marin_ce_implementation(NULL, &out, &err), 0);
	assert_string_equal(out, "auto");
	assert_int_equal(gdn_marin_ce_implementation("", &out, &err), 0);
	assert_string_equal(out, "auto");
	assert_int_equal(gdn_marin_ce_implementation(" Pallas_TPU ", &out, &err), 0);
	assert_string_equal(out, "pallas_tpu");
	assert_int_equal(gdn_marin_ce_implementation("  ", &out, &err), GDN_EUSAGE);
	assert_string_equal(err.msg, "invalid CE implementation '  '; expected one of: auto, xla, "
				     "reference, pallas_tpu, pallas_gpu");

	assert_int_equal(gdn_marin_ce_bwd_mode(NULL, &out, &err), 0);
	assert_string_equal(out, "pallas");
	assert_int_equal(gdn_marin_ce_bwd_mode("", &out, &err), 0);
	assert_string_equal(out, "pallas");
	assert_int_equal(gdn_marin_ce_bwd_mode("Default", &out, &err), 0);
	assert_string_equal(out, "pallas");
	assert_int_equal(gdn_marin_ce_bwd_mode("xla", &out, &err), 0);
	assert_string_equal(out, "xla_streaming");
	assert_int_equal(gdn_marin_ce_bwd_mode("XLA-Streaming", &out, &err), 0);
	assert_string_equal(out, "xla_streaming");
	assert_int_equal(gdn_marin_ce_bwd_mode("off", &out, &err), GDN_EUSAGE);
	assert_string_equal(err.msg, "unsupported CE backward mode 'off'; expected one of pallas, "
				     "xla_streaming");
}

static void expect_prefix(const char *cluster, const char *root, const char *want)
{
	char *got = gdn_marin_default_prefix(cluster, root);

	assert_string_equal(got, want);
	free(got);
}

/* 1.3.7: the three tested cases, without and with infra/marin-*.yaml files. */
static void marin_prefix_default(void **state)
{
	char tmpl[] = "/tmp/gdnctl-marin-XXXXXX";
	char *root = mkdtemp(tmpl), *infra, *path;

	expect_prefix("us-east5-a", NULL, "gs://marin-us-east5");
	expect_prefix("us-east5", NULL, "gs://marin-us-east5");
	expect_prefix("marin-us-central1", NULL, "gs://marin-us-central1");
	expect_prefix("us-central1", NULL, "gs://marin-us-central1");
	expect_prefix("nowhere-1", NULL, "gs://marin-nowhere-1");
	expect_prefix("marin-nowhere-1", NULL, "gs://marin-marin-nowhere-1");

	assert_non_null(root);
	infra = xstrfmt("%s/infra", root);
	assert_int_equal(mkdir(infra, 0700), 0);
	/* a generated config names its bucket; the file beats the built-in table */
	path = xstrfmt("%s/marin-us-east5-a.yaml", infra);
	unit_write_file(NULL, path,
			"setup_commands:\n"
			"  - echo 'export MARIN_PREFIX=\"gs://marin-us-east5\"' >> $HOME/.bashrc\n"
			"  - echo 'export BUCKET=\"my-east5-bucket\"' >> $HOME/.bashrc\n",
			0644);
	expect_prefix("us-east5-a", root, "gs://my-east5-bucket");
	expect_prefix("marin-us-east5-a", root, "gs://my-east5-bucket");
	unlink(path);
	free(path);
	/* found by region: us-west9 -> infra/marin-us-west9-b.yaml */
	path = xstrfmt("%s/marin-us-west9-b.yaml", infra);
	unit_write_file(NULL, path,
			"  - echo 'export BUCKET=\"marin-us-west9\"' >> $HOME/.bashrc\n", 0644);
	expect_prefix("us-west9", root, "gs://marin-us-west9");
	/* without a BUCKET line: the stem */
	unit_write_file(NULL, path, "cluster_name: marin-us-west9-b\n", 0644);
	expect_prefix("us-west9", root, "gs://marin-us-west9-b");
	unlink(path);
	free(path);
	/* the tested cases still hold with an infra/ directory that lacks them */
	expect_prefix("us-east5-a", root, "gs://marin-us-east5");
	expect_prefix("marin-us-central1", root, "gs://marin-us-central1");
	rmdir(infra);
	rmdir(root);
	free(infra);
}

static void py_float_formats(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
	    {5.0, "5.0"},
	    {0.25, "0.25"},
	    {123.0, "123.0"},
	    {0.1, "0.1"},
	    {2.5, "2.5"},
	    {1e16, "1e+16"},
	    {1e15, "1000000000000000.0"},
	    {1.5e-05, "1.5e-05"},
	    {0.0001, "0.0001"},
	    {-0.0, "-0.0"},
	    {1800.0, "1800.0"},
	    {1.0 / 3, "0.3333333333333333"},
	};
	struct sbuf sb = SBUF_INIT;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		sbuf_reset(&sb);
		gdn_py_float(&sb, cases[i].v);
		assert_string_equal(sb.buf, cases[i].want);
	}
	sbuf_release(&sb);
}

static void py_repr_quotes(void **state)
{
	struct sbuf sb = SBUF_INIT;

	gdn_py_repr(&sb, "plain");
	assert_string_equal(sb.buf, "'plain'");
	sbuf_reset(&sb);
	gdn_py_repr(&sb, "it's");
	assert_string_equal(sb.buf, "\"it's\"");
	sbuf_reset(&sb);
	gdn_py_repr(&sb, "a'b\"c\\\n\x01");
	assert_string_equal(sb.buf, "'a\\'b\"c\\\\\\n\\x01'");
	sbuf_release(&sb);
}

static void assert_argv(const struct strvec *argv, const char *const *want)
{
	size_t n = 0;

	while (want[n])
		n++;
	for (size_t i = 0; i < n && i < argv->nr; i++)
		assert_string_equal(argv->v[i], want[i]);
	assert_int_equal(argv->nr, n);
}

static void wrapper_argv(void **state)
{
	const char *env[] = {"EQX_ON_ERROR=nan", "WANDB_MODE=offline", NULL};
	const char *cmd[] = {"bash", "-lc", "true", NULL};
	struct strvec argv = STRVEC_INIT;

	gdn_marin_ray_run_argv(&argv, "us-central1", "auto", env, NULL, true, cmd);
	assert_argv(&argv, (const char *[]){"lib/marin/src/marin/run/ray_run.py", "--cluster",
					    "us-central1", "--tpu", "auto", "-e",
					    "EQX_ON_ERROR=nan", "-e", "WANDB_MODE=offline",
					    "--no_wait", "--", "bash", "-lc", "true", NULL});
	strvec_clear(&argv);

	gdn_marin_wait_job_argv(&argv, "us-east5-a", "ray-run-demo", 5.0, -1, false, 200, NULL);
	assert_argv(&argv, (const char *[]){"scripts/ray/cluster.py", "--cluster", "us-east5-a",
					    "wait-job", "ray-run-demo", "--poll", "5.0", "--tail",
					    "200", NULL});
	strvec_clear(&argv);
	gdn_marin_wait_job_argv(&argv, "c", "j", 2.5, 123, true, 77, "loss");
	assert_argv(&argv, (const char *[]){"scripts/ray/cluster.py", "--cluster", "c", "wait-job",
					    "j", "--poll", "2.5", "--timeout", "123.0",
					    "--show-logs", "--tail", "77", "--grep", "loss", NULL});
	strvec_clear(&argv);

	gdn_marin_job_logs_argv(&argv, "c", "j", 400, "mfu");
	assert_argv(&argv, (const char *[]){"scripts/ray/cluster.py", "--cluster", "c", "job-logs",
					    "-n", "400", "-g", "mfu", "j", NULL});
	strvec_clear(&argv);
	gdn_marin_stop_job_argv(&argv, "c", "j");
	assert_argv(&argv, (const char *[]){"scripts/ray/cluster.py", "--cluster", "c", "stop-job",
					    "j", NULL});
	strvec_clear(&argv);

	gdn_marin_allocate_argv(&argv, "c", "me", false, NULL, NULL);
	assert_argv(&argv, (const char *[]){"scripts/ray/dev_tpu.py", "--cluster", "c",
					    "--tpu-name", "me", "allocate", NULL});
	strvec_clear(&argv);
	gdn_marin_allocate_argv(&argv, "c", "me", true, ".", "v5p-8");
	assert_argv(&argv, (const char *[]){"scripts/ray/dev_tpu.py", "--cluster", "c",
					    "--tpu-name", "me", "--verbose", "allocate",
					    "--sync-path", ".", "--tpu-type", "v5p-8", NULL});
	strvec_clear(&argv);

	gdn_marin_execute_argv(&argv, "c", "me", env, true, "echo hi");
	assert_argv(&argv,
		    (const char *[]){"scripts/ray/dev_tpu.py", "--cluster", "c", "--tpu-name", "me",
				     "execute", "-e", "EQX_ON_ERROR=nan", "-e",
				     "WANDB_MODE=offline", "--no-sync", "--", "echo hi", NULL});
	strvec_clear(&argv);
}

static void names(void **state)
{
	static const char *const bad[] = {
	    "; rm -rf x", "$(touch pwned)", "`id`", "--help", "a b", "-x", "",
	    "a'b",	  "a\"b",	    "a\nb", "a\\b",   "x;y"};
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_marin_check_name(GDN_NAME_CLUSTER, "us-central1", &err), 0);
	assert_int_equal(gdn_marin_check_name(GDN_NAME_CLUSTER, "infra/marin-x.yaml", &err), 0);
	assert_int_equal(gdn_marin_check_name(GDN_NAME_TPU, "v5p-8", &err), 0);
	assert_int_equal(gdn_marin_check_name(GDN_NAME_TPU_NAME, "calvinxu-gdn", &err), 0);
	assert_int_equal(gdn_marin_check_name(GDN_NAME_JOB, "raysubmit_4LamXRuQpYdSMg7J", &err), 0);
	assert_int_equal(
	    gdn_marin_check_name(GDN_NAME_JOB, "ray-run-me-bash-20250101-000000", &err), 0);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(gdn_marin_check_name(GDN_NAME_CLUSTER, bad[i], &err), GDN_EUSAGE);
		assert_int_equal(gdn_marin_check_name(GDN_NAME_JOB, bad[i], &err), GDN_EUSAGE);
		assert_null(strchr(err.msg, '\n'));
	}
	assert_int_equal(gdn_marin_check_name(GDN_NAME_TPU_NAME, "a/b", &err), GDN_EUSAGE);
	gdn_marin_check_name(GDN_NAME_CLUSTER, "; rm -rf x", &err);
	assert_string_equal(err.msg, "invalid cluster '; rm -rf x': use only letters, digits, '.', "
				     "'_', '-' and '/'");
	gdn_marin_check_name(GDN_NAME_TPU_NAME, "--help", &err);
	assert_string_equal(err.msg, "invalid TPU name '--help': it starts with '-'");
	gdn_marin_check_name(GDN_NAME_JOB, "a\nb", &err);
	assert_string_equal(err.msg, "invalid job id 'a\\nb': use only letters, digits, '.', '_', "
				     "'-', ':', '@' and '+'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_command_both_is_exact),
	    cmocka_unit_test(test_command_selection_and_pytest_args),
	    cmocka_unit_test(test_env_order),
	    cmocka_unit_test(profile_command_variants),
	    cmocka_unit_test(profile_env_parses_pairs),
	    cmocka_unit_test(profile_env_rejects),
	    cmocka_unit_test(profile_env_order_and_ce),
	    cmocka_unit_test(profile_env_options),
	    cmocka_unit_test(profile_env_bad_values),
	    cmocka_unit_test(ce_normalisers),
	    cmocka_unit_test(marin_prefix_default),
	    cmocka_unit_test(py_float_formats),
	    cmocka_unit_test(py_repr_quotes),
	    cmocka_unit_test(wrapper_argv),
	    cmocka_unit_test(names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
