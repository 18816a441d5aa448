/*
 * `gdnctl loop verify`: measure every kept commit of a loop run again
 * against the run's baseline, in fresh interleaved A/B runs, and print the
 * verified speed-up beside the claimed one (src/loop/verify.c; issue 28).
 */
#include "gdnctl/compat.h"
#include <math.h>
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/opt.h"
#include "gdnctl/strvec.h"
#include "gdnctl/verify.h"
#include "gdnctl/xalloc.h"

static const struct opt_usage verify_usage = {
    "gdnctl loop verify [--log-dir DIR] [--pairs N] [--json]",
    "Measure every commit a loop run kept again, cold, against the run's baseline, and\n"
    "show the verified speed-up with its interval beside the claimed one.",
    "Reads <log-dir>/perf_state.json: its last baseline and the commits promoted after\n"
    "it. Each kept commit and the baseline are checked out in worktrees of their own under\n"
    "<log-dir>/verify/ and profiled alternately (baseline, kept, baseline, kept...)\n"
    "--pairs times with project.profile_command (else the command the state recorded),\n"
    "on this machine; the metric is the run's (a trace/... metric reads the newest\n"
    "project.trace_glob file of each run). The estimate is the paired ratio of\n"
    "abstat (geometric mean, 95% bootstrap interval). `reproduced` says whether the\n"
    "claimed improvement lies in the interval. The table is written to\n"
    "<log-dir>/verify.json, which `gdnctl report` shows beside the claims.\n"
    "Exit status: 0 every kept commit is faster than the baseline (its interval above\n"
    "0); 1 one is not, or a run failed; 2 usage; 3 configuration.",
};

static void on_say(const char *line, void *payload)
{
	(void)payload;
	gdn_status("%s", line);
}

static void print_table(const struct gdn_verify_result *r)
{
	gdn_say("%-9s  %-12s  %9s  %9s  %-21s  %s", "iteration", "commit", "claimed", "verified",
		"interval", "reproduced");
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_verify_row *x = &r->v[i];

		gdn_say("%-9ld  %.12s  %+8.2f%%  %+8.2f%%  [%+7.2f%%, %+7.2f%%]  %s", x->iteration,
			x->commit, x->claimed_pct, x->verified_pct, x->lo_pct, x->hi_pct,
			x->reproduced ? "yes" : (x->faster ? "no (faster, another size)" : "no"));
	}
}

struct verify_args {
	const char *log_dir;
	long pairs;
	long timeout_ms;
	bool json;
};

static int loop_verify(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct verify_args a = {.pairs = 5};
	struct opt opts[] = {
	    OPT_STRING_(0, "log-dir", &a.log_dir, "DIR", "the loop's log directory",
			"<repository>/.agents/logs/gdn_codex_loop"),
	    OPT_INT_(0, "pairs", &a.pairs, "N", "A/B pairs per kept commit", "5", 2, 1000),
	    OPT_DURATION_(0, "timeout", &a.timeout_ms, "each profile run's limit (0: none)", "0"),
	    OPT_BOOL_(0, "json", &a.json, "print a JSON document (schema " GDN_VERIFY_SCHEMA ")"),
	    OPT_END_(),
	};
	struct gdn_verify_opts o = {0};
	struct gdn_verify_result res = {0};
	struct gdn_err err = GDN_ERR_INIT;
	char *log_dir = NULL;
	int code = 0;

	if (!gdn_cmd_parse_opts(opts, &verify_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, NULL,
				&code))
		return code;
	log_dir = a.log_dir ? (a.log_dir[0] == '/' ? xstrdup(a.log_dir)
						   : xstrfmt("%s/%s", ctx->cwd, a.log_dir))
			    : gdn_cmd_loop_log_dir(ctx, &err);
	if (!log_dir)
		return gdn_die_err(&err);
	o.log_dir = log_dir;
	o.repo = ctx->repo_root ? ctx->repo_root : ctx->cwd;
	o.command = gdn_config_str(&ctx->config, "project.profile_command");
	o.trace_glob = gdn_config_str(&ctx->config, "project.trace_glob");
	o.pairs = a.pairs;
	o.confidence = 0.95;
	o.timeout_ms = a.timeout_ms;
	o.say = on_say;
	if (gdn_verify_run(&o, &res, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	if (a.json)
		code = gdn_json_print(gdn_verify_json(&res)) ? GDN_EXIT_FAILED : 0;
	else
		print_table(&res);
	for (size_t i = 0; !code && i < res.nr; i++)
		if (!res.v[i].faster)
			code = GDN_EXIT_FAILED;
out:
	gdn_verify_result_release(&res);
	free(log_dir);
	return code;
}

int cmd_loop_verify(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct opt none[] = {OPT_END_()};
	struct strvec rest = STRVEC_INIT, sub = STRVEC_INIT;
	int code = 0;

	/* `loop` dispatches here on "verify" (as for `loop status`) */
	if (!gdn_cmd_parse_opts(none, &verify_usage, argc, argv, OPT_PARSE_STOP_AT_NON_OPTION,
				&rest, &code))
		goto out;
	strvec_push(&sub, "loop verify");
	for (size_t i = 1; i < rest.nr; i++)
		strvec_push(&sub, rest.v[i]);
	code = loop_verify((int)sub.nr, sub.v, ctx);
out:
	strvec_clear(&rest);
	strvec_clear(&sub);
	return code;
}
