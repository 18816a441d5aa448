/*
 * The Marin validation defaults of `gdnctl loop` (include/gdnctl/marin_gate.h):
 * the original codex-loop's test and profile commands on each target,
 * built with the Marin conventions module (src/backend/marin.c).
 */
#include "gdnctl/compat.h"
#include "gdnctl/err.h"
#include "gdnctl/marin_gate.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

void gdn_marin_gate_init(struct gdn_marin_gate *m)
{
	struct gdn_marin_profile p = GDN_MARIN_PROFILE_INIT;

	memset(m, 0, sizeof(*m));
	m->test_selection = "both";
	m->p = p;
	m->p.run_name_prefix = GDN_MARIN_GATE_RUN_NAME_PREFIX;
	m->p.ce_impl = GDN_MARIN_GATE_CE_IMPL;
}

/* The run name prefix of an iteration: <prefix>_iter<NNN> (gdn_loopgate_iter007). */
static void gate_run_name(const struct gdn_marin_gate *m, long iteration, struct sbuf *out)
{
	sbuf_addf(out, "%s_iter%03ld", m->p.run_name_prefix, iteration);
}

char *gdn_marin_gate_wandb_prefix(const struct gdn_marin_gate *m)
{
	return xstrfmt("%s_iter{iteration}", m->p.run_name_prefix);
}

/* PROFILE_ENV of iteration `iteration`, then MARIN_PREFIX on a dev TPU (cluster non-NULL). */
static int profile_env(const struct gdn_marin_gate *m, long iteration, const char *dev_cluster,
		       struct strvec *env, struct gdn_err *err)
{
	struct gdn_marin_profile p = m->p;
	struct sbuf name = SBUF_INIT;
	int ret;

	gate_run_name(m, iteration, &name);
	p.run_name_prefix = name.buf;
	ret = gdn_marin_profile_env(&p, env, err);
	if (!ret && dev_cluster)
		gdn_marin_prefix_env(env, m->marin_prefix, dev_cluster, m->repo);
	sbuf_release(&name);
	return ret;
}

int gdn_marin_gate_check(const struct gdn_marin_gate *m, struct gdn_err *err)
{
	struct sbuf cmd = SBUF_INIT;
	struct strvec env = STRVEC_INIT;
	int ret = 0;

	if (m->tests)
		ret = gdn_marin_test_command(&cmd, m->test_selection, m->pytest_args, err);
	if (!ret && m->profile)
		ret = profile_env(m, 1, NULL, &env, err);
	sbuf_release(&cmd);
	strvec_clear(&env);
	return ret;
}

char *gdn_marin_gate_command(const struct gdn_marin_gate *m, const char *phase)
{
	struct sbuf cmd = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (!strcmp(phase, "tests"))
		gdn_marin_test_command(&cmd, m->test_selection, m->pytest_args, &err);
	else
		gdn_marin_profile_command(&cmd, false, m->dry_run);
	return sbuf_detach(&cmd, NULL);
}

int gdn_marin_gate_phase(void *payload, const struct gdn_loop_iter *it, const char *phase, bool dev,
			 const char *cluster, struct sbuf *command, struct strvec *env,
			 struct gdn_err *err)
{
	const struct gdn_marin_gate *m = payload;
	int ret = 0;

	if (!strcmp(phase, "tests") && m->tests) {
		ret = gdn_marin_test_command(command, m->test_selection, m->pytest_args, err);
		if (!ret)
			gdn_marin_test_env(env);
	} else if (!strcmp(phase, "profile") && m->profile) {
		ret = profile_env(m, it->iteration, dev ? cluster : NULL, env, err);
		if (!ret)
			gdn_marin_profile_command(command, dev, m->dry_run);
	}
	return ret;
}
