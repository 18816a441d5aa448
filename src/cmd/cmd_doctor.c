/*
 * `gdnctl doctor`: check the environment for the configured backends and
 * the agent, and say what to fix. The checks live in src/doctor/; this
 * file parses the options and prints one line per check (and a "fix:"
 * line under each one that is not ok). Exit status: 0 when nothing
 * FAILed (warnings are fine), 1 when a check FAILed, 2 usage, 130/143
 * interrupted.
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/cmd.h"
#include "gdnctl/doctor.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

static const struct opt_usage usage = {
    "gdnctl doctor [options]",
    "Check the environment for the configured backends and the agent, and say what to fix.",
    "Checks, in order: git and the repository (found, HEAD, clean); the configuration\n"
    "loads; each backend (--backend, else every configured one and local): it opens,\n"
    "its programs are in PATH (ssh, rsync; sbatch, squeue, sacct, scancel, scontrol;\n"
    "uv or ray), an ssh host answers 'ssh -o BatchMode=yes ... true', a Slurm\n"
    "controller answers 'scontrol ping'; the agent (--agent, else loop.agent, else\n"
    "codex): its binary runs '--version' and a login is present (API key variable or\n"
    "auth file; a missing binary is a warning when no agent was named); the\n"
    "Hugging Face token and the W&B key are present (their values are never shown);\n"
    "free disk space in the loop's log directory and in $TMPDIR or /tmp; a C compiler\n"
    "(for gdnctl demo). Every external check stops after --timeout.\n"
    "Output: 'ok', 'warn', 'FAIL' or 'skip', the check, the detail; under each check\n"
    "that is not ok, 'fix: ...'. --json prints schema gdnctl.doctor.v1.\n"
    "Exit status: 0 no check failed (warnings allowed), 1 a check failed, 2 usage."};

static int print_text(const struct gdn_doctor_report *r)
{
	struct sbuf out = SBUF_INIT;
	size_t width = 0;
	int ret;

	for (size_t i = 0; i < r->nr; i++)
		if (strlen(r->v[i].name) > width)
			width = strlen(r->v[i].name);
	for (size_t i = 0; i < r->nr; i++) {
		const struct gdn_doctor_result *res = &r->v[i];

		sbuf_addf(&out, "%-5s %-*s  %s\n", gdn_doctor_status_name(res->status), (int)width,
			  res->name, res->detail);
		if (res->fix && res->status != GDN_DOCTOR_OK)
			sbuf_addf(&out, "      fix: %s\n", res->fix);
	}
	ret = fwrite(out.buf, 1, out.len, stdout) == out.len ? 0 : GDN_EXIT_FAILED;
	sbuf_release(&out);
	return ret;
}

int cmd_doctor(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct gdn_doctor_opts o = {0};
	struct gdn_doctor_report r = GDN_DOCTOR_REPORT_INIT;
	struct strvec backends = STRVEC_INIT, rest = STRVEC_INIT;
	const char *min_free = NULL;
	int json = 0, no_agent = 0, code = 0;
	long timeout_ms = 10000;
	size_t fails;
	struct opt opts[] = {
	    OPT_GROUP_("What to check"),
	    OPT_LIST_('b', "backend", &backends, "NAME",
		      "check this backend (default: every configured one and local)"),
	    OPT_CHOICE_(0, "agent", &o.agent, gdn_agent_names(), "the agent driver to check",
			GDN_AGENT_DEFAULT),
	    OPT_STRING_(0, "agent-bin", &o.agent_bin, "PATH", "explicit agent binary", NULL),
	    OPT_STRING_(0, "codex-bin", &o.agent_bin, "PATH",
			"the same as --agent-bin (the name gdnctl loop takes)", NULL),
	    OPT_STRING_(0, "agent-cmd", &o.agent_cmd, "CMD",
			"command driver: the command line, as given to loop", NULL),
	    OPT_BOOL_(0, "no-agent", &no_agent, "leave the agent checks out"),
	    OPT_STRING_(0, "log-dir", &o.log_dir, "PATH", "the loop's log directory (disk space)",
			"<git common dir>/gdnctl/<branch>"),
	    OPT_STRING_(0, "min-free", &min_free, "SIZE",
			"warn when less disk space is free (500M, 2G; bare number: bytes)", "1G"),
	    OPT_DURATION_(0, "timeout", &timeout_ms, "time limit of each external check", "10s"),
	    OPT_GROUP_("Output"),
	    OPT_BOOL_(0, "json", &json, "print JSON (schema gdnctl.doctor.v1)"),
	    OPT_END_(),
	};

	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &code))
		goto out;
	if (min_free && gdn_doctor_parse_size(min_free, &o.min_free)) {
		gdn_error("option '--min-free': invalid size '%s' (examples: 500M, 2G)", min_free);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (timeout_ms <= 0) {
		gdn_error("option '--timeout': must be more than 0");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	o.cwd = ctx->cwd;
	o.cfg_overrides = ctx->cfg_overrides.v;
	o.backends = backends.v;
	o.timeout_ms = timeout_ms;
	o.skip_agent = no_agent;
	if (!json)
		gdn_status("checking the environment (each external check stops after its "
			   "timeout)");
	gdn_doctor_run(&o, &r);
	fails = gdn_doctor_count(&r, GDN_DOCTOR_FAIL);
	if (json) {
		if (gdn_json_print(gdn_doctor_report_json(&r)))
			code = GDN_EXIT_FAILED;
	} else {
		code = print_text(&r);
		gdn_say("%zu ok, %zu warning%s, %zu failed, %zu skipped",
			gdn_doctor_count(&r, GDN_DOCTOR_OK), gdn_doctor_count(&r, GDN_DOCTOR_WARN),
			gdn_doctor_count(&r, GDN_DOCTOR_WARN) == 1 ? "" : "s", fails,
			gdn_doctor_count(&r, GDN_DOCTOR_SKIP));
	}
	if (fails)
		code = GDN_EXIT_FAILED;
	if (gdn_proc_interrupted())
		code = GDN_EXIT_SIGNAL + gdn_proc_interrupted();
out:
	gdn_doctor_report_release(&r);
	strvec_clear(&backends);
	strvec_clear(&rest);
	return code;
}
