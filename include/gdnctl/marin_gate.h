/*
 * The Marin validation defaults of `gdnctl loop` (src/loop/marin_gate.c):
 * when the configuration has no project.test_command / profile_command
 * and the loop validates on Marin targets (the held dev TPU, Ray fallback
 * clusters), the phases run the original codex-loop's commands, built
 * with marin.h: REMOTE_TEST_CMD with the test environment, and
 * PROFILE_CMD with PROFILE_ENV (run name <prefix>_iter<NNN>, MARIN_PREFIX
 * on a dev TPU). Pure: nothing here runs a program, prints or exits.
 */
#ifndef GDNCTL_MARIN_GATE_H
#define GDNCTL_MARIN_GATE_H

#include "gdnctl/compat.h"
#include "gdnctl/loop.h"
#include "gdnctl/targets.h"
#include "gdnctl/marin.h"

/* The original's defaults for the loop's profile (--validation-profile-*). */
#define GDN_MARIN_GATE_RUN_NAME_PREFIX "gdn_loopgate"
#define GDN_MARIN_GATE_CE_IMPL	       "pallas_tpu"

struct gdn_marin_gate {
	bool tests, profile;	    /* the phases that use the defaults */
	const char *test_selection; /* kernels, layer, both */
	const char *pytest_args;    /* or NULL */
	struct gdn_marin_profile p; /* run_name_prefix: the base; extra: --validation-profile-env */
	const char *marin_prefix;   /* dev TPU; NULL: gdn_marin_default_prefix(cluster, repo) */
	const char *repo;	    /* the working tree (infra/marin-*.yaml) */
	bool dry_run;		    /* --dry_run true to the profile script */
};
/* The original codex-loop's defaults (both phases off). */
void gdn_marin_gate_init(struct gdn_marin_gate *m);
/*
 * The startup checks: every command and environment is built once.
 * GDN_EUSAGE with the original's message (a bad --validation-profile-env
 * item, CE implementation or backward mode, test selection).
 */
int gdn_marin_gate_check(const struct gdn_marin_gate *m, struct gdn_err *err);
/* The W&B discovery prefix: <prefix>_iter{iteration} (measure.h expands it); new string. */
char *gdn_marin_gate_wandb_prefix(const struct gdn_marin_gate *m);
/* The Ray variant of a phase's command (the gate's test/profile command); new string. */
char *gdn_marin_gate_command(const struct gdn_marin_gate *m, const char *phase);
/*
 * A gdn_phase_command_fn (payload: struct gdn_marin_gate): for a phase
 * that uses the defaults, the command and environment on that target:
 *   tests   REMOTE_TEST_CMD; EQX_ON_ERROR=nan WANDB_MODE=offline
 *   profile PROFILE_CMD (dev TPU: full uv sync, else plain uv sync);
 *           PROFILE_ENV with the iteration's run name, then on a dev TPU
 *           MARIN_PREFIX (given, else the held cluster's default)
 */
int gdn_marin_gate_phase(void *payload, const struct gdn_loop_iter *it, const char *phase, bool dev,
			 const char *cluster, struct sbuf *command, struct strvec *env,
			 struct gdn_err *err);

#endif
