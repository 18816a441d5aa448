/*
 * Unit tests for the loop's Marin validation defaults (src/loop/marin_gate.c):
 * the phase commands and environments on a dev TPU and on a Ray cluster
 * equal what the marin.h builders give for the same values (the original's
 * REMOTE_TEST_CMD, PROFILE_ENV, PROFILE_CMD, MARIN_PREFIX), the run name
 * <prefix>_iter<NNN>, phases left to their project command, and the
 * startup checks with the original's messages.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/marin_gate.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

static const char *env_get(const struct strvec *env, const char *key)
{
	size_t n = strlen(key);

	for (size_t i = 0; i < env->nr; i++)
		if (!strncmp(env->v[i], key, n) && env->v[i][n] == '=')
			return env->v[i] + n + 1;
	return NULL;
}

static void test_defaults(void **state)
{
	struct gdn_marin_gate m;
	struct gdn_loop_iter it = {0};
	struct sbuf cmd = SBUF_INIT, want = SBUF_INIT;
	struct strvec env = STRVEC_INIT, want_env = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *s;

	(void)state;
	gdn_marin_gate_init(&m);
	assert_false(m.tests || m.profile);
	assert_string_equal(m.test_selection, "both");
	assert_string_equal(m.p.run_name_prefix, "gdn_loopgate");
	assert_string_equal(m.p.ce_impl, "pallas_tpu");
	assert_string_equal(m.p.ce_bwd, "pallas");
	it.iteration = 7;
	/* neither phase uses the defaults: nothing is given */
	assert_int_equal(gdn_marin_gate_phase(&m, &it, "tests", true, "c1", &cmd, &env, &err), 0);
	assert_int_equal(gdn_marin_gate_phase(&m, &it, "profile", false, "r1", &cmd, &env, &err),
			 0);
	assert_int_equal(cmd.len, 0);
	assert_int_equal(env.nr, 0);
	m.tests = true;
	m.pytest_args = "-k x";
	assert_int_equal(gdn_marin_gate_phase(&m, &it, "tests", false, "r1", &cmd, &env, &err), 0);
	assert_int_equal(gdn_marin_test_command(&want, "both", "-k x", &err), 0);
	assert_string_equal(cmd.buf, want.buf);
	gdn_marin_test_env(&want_env);
	assert_int_equal(env.nr, want_env.nr);
	assert_string_equal(env.v[0], "EQX_ON_ERROR=nan");
	assert_string_equal(env.v[1], "WANDB_MODE=offline");
	s = gdn_marin_gate_command(&m, "tests");
	assert_string_equal(s, want.buf);
	free(s);
	s = gdn_marin_gate_wandb_prefix(&m);
	assert_string_equal(s, "gdn_loopgate_iter{iteration}");
	free(s);
	sbuf_release(&cmd);
	sbuf_release(&want);
	strvec_clear(&env);
	strvec_clear(&want_env);
}

static void test_profile(void **state)
{
	struct gdn_marin_gate m;
	struct gdn_loop_iter it = {0};
	struct sbuf cmd = SBUF_INIT, want = SBUF_INIT;
	struct strvec env = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	static const char *const extra[] = {"FOO=a b", NULL};

	(void)state;
	gdn_marin_gate_init(&m);
	m.profile = true;
	m.p.run_name_prefix = "gp";
	m.p.extra = extra;
	it.iteration = 12;
	/* dev TPU: full sync, the run name, then MARIN_PREFIX of the held cluster */
	assert_int_equal(
	    gdn_marin_gate_phase(&m, &it, "profile", true, "us-east5-a", &cmd, &env, &err), 0);
	gdn_marin_profile_command(&want, true, false);
	assert_string_equal(cmd.buf, want.buf);
	assert_string_equal(env_get(&env, "GDN_PROFILE_RUN_NAME_PREFIX"), "gp_iter012");
	assert_string_equal(env_get(&env, "LEVANTER_FUSED_CE_IMPLEMENTATION"), "pallas_tpu");
	assert_string_equal(env.v[env.nr - 2], "FOO=a b");
	assert_string_equal(env.v[env.nr - 1], "MARIN_PREFIX=gs://marin-us-east5");
	/* an explicit prefix wins */
	sbuf_reset(&cmd);
	strvec_clear(&env);
	m.marin_prefix = "gs://mine";
	assert_int_equal(gdn_marin_gate_phase(&m, &it, "profile", true, "c2", &cmd, &env, &err), 0);
	assert_string_equal(env.v[env.nr - 1], "MARIN_PREFIX=gs://mine");
	/* Ray: plain uv sync, no MARIN_PREFIX; dry run */
	sbuf_reset(&cmd);
	sbuf_reset(&want);
	strvec_clear(&env);
	m.dry_run = true;
	it.iteration = 0;
	assert_int_equal(gdn_marin_gate_phase(&m, &it, "profile", false, "r1", &cmd, &env, &err),
			 0);
	gdn_marin_profile_command(&want, false, true);
	assert_string_equal(cmd.buf, want.buf);
	assert_null(env_get(&env, "MARIN_PREFIX"));
	assert_string_equal(env_get(&env, "GDN_PROFILE_RUN_NAME_PREFIX"), "gp_iter000");
	/* the tests phase is not defaulted here */
	sbuf_reset(&cmd);
	strvec_clear(&env);
	assert_int_equal(gdn_marin_gate_phase(&m, &it, "tests", false, "r1", &cmd, &env, &err), 0);
	assert_int_equal(cmd.len, 0);
	sbuf_release(&cmd);
	sbuf_release(&want);
	strvec_clear(&env);
}

static void test_check(void **state)
{
	struct gdn_marin_gate m;
	struct gdn_err err = GDN_ERR_INIT;
	static const char *const bad_env[] = {"1BAD=x", NULL};

	(void)state;
	gdn_marin_gate_init(&m);
	m.tests = m.profile = true;
	assert_int_equal(gdn_marin_gate_check(&m, &err), 0);
	m.p.ce_impl = "fast";
	assert_int_equal(gdn_marin_gate_check(&m, &err), GDN_EUSAGE);
	assert_string_equal(err.msg, "invalid CE implementation 'fast'; expected one of: auto, "
				     "xla, reference, pallas_tpu, pallas_gpu");
	gdn_err_clear(&err);
	m.p.ce_impl = "auto";
	m.p.extra = bad_env;
	assert_int_equal(gdn_marin_gate_check(&m, &err), GDN_EUSAGE);
	assert_string_equal(err.msg,
			    "invalid --profile-env key '1BAD'; expected [A-Za-z_][A-Za-z0-9_]*");
	gdn_err_clear(&err);
	m.p.extra = NULL;
	m.test_selection = "unit";
	assert_int_equal(gdn_marin_gate_check(&m, &err), GDN_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_profile),
	    cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
