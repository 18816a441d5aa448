/*
 * `gdnctl loop` (alias `codex-loop`): the unattended hill-climb. Parses
 * the original codex-loop's options (same names, defaults and messages),
 * loads the prompt and the session directives, opens the agent driver and
 * runs the loop (src/loop/run.c; docs/loop-map.md), printing its progress with the
 * "[gdnctl] " prefix and a summary at the end.
 */
#include "gdnctl/compat.h"
#include "gdnctl/agent.h"
#include "gdnctl/cmd.h"
#include "gdnctl/cmd_loop_options.h"
#include "gdnctl/backend.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/prompt.h"
#include "gdnctl/loop.h"
#include "gdnctl/gate.h"
#include "gdnctl/hold.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/marin.h"
#include "gdnctl/marin_gate.h"
#include "gdnctl/measure.h"
#include "gdnctl/perf.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#include <stdarg.h>
#include <time.h>

static const struct opt_usage loop_usage = {
    "gdnctl loop --iterations N [options]\n"
    "gdnctl loop --resume [options]\n"
    "gdnctl loop status [options]\n"
    "gdnctl loop verify [options]",
    "Run a coding agent in a loop, one iteration at a time, without losing work.",
    "Each iteration: stash a dirty tree (--dirty-policy stash), optionally merge a remote\n"
    "branch, run the agent with the prompt, detect its commits, run the post-checks and\n"
    "apply the policies, then restore the stash by its commit id. Every transition is\n"
    "journaled in <log dir>/loop.jsonl; --resume continues the last run after a crash,\n"
    "with the run's options: one given with another value is refused unless\n"
    "--resume-override (the per-invocation ones excepted: --iterations, --workdir,\n"
    "--log-dir, --json, --dry-run, --show-file-updates, --dev-tpu-verbose).\n"
    "Exit status (gdnctl --help): 0; 1 when a failed iteration stopped the run; 2 usage\n"
    "(also a dirty tree without --allow-dirty); 3 configuration; 4 when the agent failed or\n"
    "is missing; 124 on a timeout; 128+N when interrupted. codex-loop keeps the original's:\n"
    "the agent's or a check's exit code, 2 for an iteration error, 3 for no commit.\n"
    "See docs/gdnctl-loop.md.",
};

/* --agent's choices are the driver table's names (agent.h), bound before parsing. */
static void bind_agent_choices(struct opt *opts)
{
	for (struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, "agent"))
			o->choices = gdn_agent_names();
}

struct printer {
	bool json; /* progress to stderr: stdout is the summary document */
};

/* "[gdnctl 02:14:07]": every line of the loop carries the (local) time, for a run read later */
static const char *tag(char buf[32])
{
	time_t now = time(NULL);
	struct tm tm;

	if (!localtime_r(&now, &tm) || !strftime(buf, 32, "[gdnctl %H:%M:%S]", &tm))
		snprintf(buf, 32, "[gdnctl]");
	return buf;
}

static void on_say(enum gdn_loop_level level, const char *msg, void *payload)
{
	struct printer *pr = payload;
	FILE *info = pr->json ? stderr : stdout;
	char t[32];

	switch (level) {
	case GDN_LOOP_HEADING:
		fprintf(info, "\n%s %s\n", tag(t), msg);
		fflush(info);
		break;
	case GDN_LOOP_INFO:
		fprintf(info, "%s %s\n", tag(t), msg);
		fflush(info);
		break;
	case GDN_LOOP_NOTE:
		fprintf(stderr, "%s %s\n", tag(t), msg);
		break;
	case GDN_LOOP_WARN:
		fprintf(stderr, "%s WARNING: %s\n", tag(t), msg);
		break;
	}
}

static int on_agent_line(const char *line, size_t len, void *payload)
{
	struct printer *pr = payload;
	FILE *f = pr->json ? stderr : stdout;

	fwrite(line, 1, len, f);
	fputc('\n', f);
	fflush(f);
	return 0;
}

static int agent_run(void *agent, const struct gdn_agent_request *req, struct gdn_agent_result *res,
		     struct gdn_err *err)
{
	return gdn_agent_run(agent, req, res, err);
}

static void on_backend_event(enum gdn_backend_event ev, const char *text, void *payload)
{
	struct sbuf sb = SBUF_INIT;

	if (ev == GDN_EV_SPAWN || ev == GDN_EV_POLL)
		sbuf_addf(&sb, "$ %s", text);
	else
		sbuf_adds(&sb, text);
	on_say(GDN_LOOP_INFO, sb.buf, payload);
	sbuf_release(&sb);
}

static const char *plural(long long n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void print_summary(const struct gdn_loop_summary *s, const char *perf_champion)
{
	struct sbuf kinds = SBUF_INIT;
	long failed = 0;
	char t[32];

	/* the original's five kinds always; those gdnctl added when they happened */
	for (int k = 0; k < GDN_FAIL_NR; k++) {
		failed += s->fail_kinds[k];
		if (k <= GDN_FAIL_ITERATION_ERROR || s->fail_kinds[k])
			sbuf_addf(&kinds, "%s%s=%ld", k ? ", " : "", gdn_loop_failure_name(k),
				  s->fail_kinds[k]);
	}
	/* failed iterations by kind, and how many of them the policies counted */
	printf("%s loop summary: run %s: %ld %s, %ld %s, %ld failed %s (%ld counted; %s), "
	       "%.3fs in the agent; stopped: %s (exit %d)\n",
	       tag(t), s->run_id, s->iterations_run,
	       plural(s->iterations_run, "iteration", "iterations"), s->commits,
	       plural(s->commits, "commit", "commits"), failed,
	       plural(failed, "iteration", "iterations"), s->failures, kinds.buf,
	       (double)s->agent_ms / 1000.0, s->stop_reason ? s->stop_reason : "unknown",
	       s->exit_code);
	if (s->usage_iterations > 0) {
		long long tokens = (long long)gdn_loop_usage_tokens(&s->usage);

		printf("[gdnctl] agent usage: %lld %s (input %lld, output %lld) in %ld %s", tokens,
		       plural(tokens, "token", "tokens"),
		       (long long)(s->usage.input_tokens > 0 ? s->usage.input_tokens : 0),
		       (long long)(s->usage.output_tokens > 0 ? s->usage.output_tokens : 0),
		       s->usage_iterations, plural(s->usage_iterations, "iteration", "iterations"));
		if (s->usage.cost_usd > 0)
			printf(", $%.4f", s->usage.cost_usd);
		printf("\n");
	}
	for (size_t i = 0; i < s->stashes_kept.nr; i++) {
		const char *sp = strchr(s->stashes_kept.v[i], ' ');

		printf("%s stash kept for manual recovery: %.*s (%s)\n", tag(t),
		       (int)(sp ? sp - s->stashes_kept.v[i] : (long)strlen(s->stashes_kept.v[i])),
		       s->stashes_kept.v[i], sp ? sp + 1 : "");
	}
	for (size_t i = 0; i < s->refs_kept.nr; i++) {
		const char *sp = strchrnul(s->refs_kept.v[i], ' ');

		printf("%s set aside: %.*s (%s)\n", tag(t), (int)(sp - s->refs_kept.v[i]),
		       s->refs_kept.v[i], *sp ? sp + 1 : "");
	}
	if (s->champion && s->champion_parked)
		printf("%s the champion %.12s is at %s; bring it in with `git merge --ff-only "
		       "%s`\n",
		       tag(t), s->champion, s->champion_ref, s->champion_ref);
	else if (s->champion)
		printf("%s champion: %.12s\n", tag(t), s->champion);
	else if (perf_champion) /* --isolation in-place: the performance policy's */
		printf("%s champion: %.12s\n", tag(t), perf_champion);
	printf("%s journal: %s\n", tag(t), s->journal ? s->journal : "(none)");
	sbuf_release(&kinds);
}

/*
 * The next step, said after the summary: the report and the status of this
 * run, and after SIGINT/SIGTERM the exact command that resumes it. The
 * log dir and the working tree are named when the run was given them (the
 * commands would not find them from here by default). To `f`.
 */
static void print_next_steps(FILE *f, const struct gdn_loop_setup *s,
			     const struct gdn_loop_summary *sum)
{
	struct sbuf where = SBUF_INIT, resume = SBUF_INIT;
	char t[32];

	if (s->log_dir && (s->a.log_dir || s->a.workdir)) {
		sbuf_adds(&where, " --log-dir ");
		sbuf_add_shell_quoted(&where, s->log_dir);
	}
	fprintf(f,
		"%s next: `gdnctl report%s` (an HTML report and a summary of the run), "
		"`gdnctl loop status%s`\n",
		tag(t), where.buf, where.buf);
	if (sum->exit_code > GDN_EXIT_SIGNAL && sum->exit_code < GDN_EXIT_SIGNAL + 32) {
		sbuf_adds(&resume, "gdnctl loop --resume");
		if (s->a.workdir && s->workdir) {
			sbuf_adds(&resume, " --workdir ");
			sbuf_add_shell_quoted(&resume, s->workdir);
		}
		if (s->a.log_dir && s->log_dir) {
			sbuf_adds(&resume, " --log-dir ");
			sbuf_add_shell_quoted(&resume, s->log_dir);
		}
		fprintf(f, "%s interrupted: resume this run with `%s`\n", tag(t), resume.buf);
	}
	fflush(f);
	sbuf_release(&where);
	sbuf_release(&resume);
}

/* The banner's agent: the driver, and for --agent command the program's name. */
static char *banner_agent(const struct gdn_loop_args *a)
{
	const char *p = a->agent_cmd, *end, *base;

	if (!p || strcmp(a->agent, "command"))
		return xstrdup(a->agent);
	p += strspn(p, " \t");
	end = p + strcspn(p, " \t");
	for (base = p; p < end; p++)
		if (*p == '/')
			base = p + 1;
	return xstrfmt("%.*s", (int)(end - base), base);
}

/* The plan's lines: "[gdnctl HH:MM:SS] dry run: ...". */
static void plan(const char *fmt, ...) GDN_PRINTF(1, 2);
static void plan(const char *fmt, ...)
{
	char t[32];
	va_list ap;

	printf("%s dry run: ", tag(t));
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

static const char *policy(int p)
{
	return gdn_loop_policy_name((enum gdn_loop_policy)p);
}

/* --workers N > 1: each worker's worktree, and where it validates. */
static void workers_plan(const struct gdn_loop_setup *s, const char *shared)
{
	const struct gdn_loop_args *a = &s->a;
	bool gate = s->gate.mode != GDN_GATE_OFF || a->perf_on;

	plan("workers: %ld, each in a worktree of its own; backend: %s", a->workers,
	     !gate		  ? "none (no validation)"
	     : a->backends.nr > 1 ? "one per worker"
				  : "shared (concurrent jobs, each from its worker's worktree)");
	for (long k = 1; k <= a->workers; k++) {
		char *dir = gdn_loop_setup_worker_dir(s, k);
		const char *tpu = s->w.wv ? s->w.wv[k - 1].tpu_name : NULL;

		if (gate)
			plan("  worker %ld: worktree %s; backend %s%s%s", k, dir,
			     a->backends.nr > 1 ? a->backends.v[k - 1] : shared,
			     tpu ? "; holds dev TPU " : "", tpu ? tpu : "");
		else
			plan("  worker %ld: worktree %s", k, dir);
		free(dir);
	}
}

/* Where the validation mode came from, in words. */
static const char *gate_from(const struct gdn_loop_setup *s)
{
	const char *from = json_string_value(json_object_get(s->from, "validation-mode"));

	if (!from)
		return "default";
	if (!strcmp(from, "project.test_command"))
		return "project.test_command is set; --validation-mode off to skip";
	return from;
}

/*
 * The run's plan in a few lines before iteration 1 (not for codex-loop,
 * which prints the original's): the gate, the ruler and its direction, the
 * running log.
 */
static void banner(const struct gdn_loop_setup *s, struct printer *pr)
{
	struct sbuf sb = SBUF_INIT;

	if (s->original)
		return;
	if (s->gate.mode != GDN_GATE_OFF)
		sbuf_addf(&sb, "validation: %s (%s)",
			  gdn_enum_name(gdn_gate_mode_enum, (int)s->gate.mode), gate_from(s));
	else
		sbuf_addf(&sb, "validation: off (%s)", gate_from(s));
	on_say(GDN_LOOP_INFO, sb.buf, pr);
	sbuf_reset(&sb);
	if (s->a.perf_on) {
		sbuf_adds(&sb, "metric: ");
		gdn_loop_setup_ruler(s, &sb);
		on_say(GDN_LOOP_INFO, sb.buf, pr);
		sbuf_reset(&sb);
	}
	if (s->hlog)
		sbuf_addf(&sb, "running log: %s", s->hlog);
	else
		sbuf_addf(&sb,
			  "no running log (%s): set log_file in gdnctl.yaml or pass "
			  "--hillclimb-log-file to keep one",
			  s->hlog_why ? s->hlog_why : "not configured");
	on_say(GDN_LOOP_INFO, sb.buf, pr);
	sbuf_release(&sb);
}

/* The pre-flight's plan: what a real run with these options would do. */
static void dry_run_plan(const struct gdn_loop_setup *s)
{
	const struct gdn_loop_args *a = &s->a;
	const struct gdn_loop_opts *lo = &s->lo;
	const char *bname = a->backend ? a->backend : gdn_config_str(s->cfg, "loop.backend");

	plan("agent: %s%s%s", a->agent, a->agent_cmd ? ": " : "", a->agent_cmd ? a->agent_cmd : "");
	if (s->gate.mode == GDN_GATE_OFF && !a->perf_on) {
		plan("validation: off (--validation-mode off, --perf-mode off)%s",
		     gdn_config_str(s->cfg, "project.test_command") ? ""
								    : "; no project.test_command");
	} else {
		const char *from = gate_from(s);
		bool given = !strcmp(from, "--validation-mode");

		/* where the mode came from, unless the command line gave it */
		plan("validation: %s%s%s%s, on backend %s (%s)",
		     gdn_enum_name(gdn_gate_mode_enum, (int)s->gate.mode), given ? "" : " (",
		     given ? "" : from, given ? "" : ")", bname && *bname ? bname : "local",
		     s->w.h || s->w.hold ? "a held dev TPU first" : "no hold");
		if (s->gate.test_command || gdn_config_str(s->cfg, "project.test_command"))
			plan("  tests: %s", s->gate.test_command
						? s->gate.test_command
						: gdn_config_str(s->cfg, "project.test_command"));
		if (s->gate.profile_command || gdn_config_str(s->cfg, "project.profile_command"))
			plan("  profile: %s",
			     s->gate.profile_command
				 ? s->gate.profile_command
				 : gdn_config_str(s->cfg, "project.profile_command"));
	}
	if (a->perf_on) {
		struct sbuf ruler = SBUF_INIT;

		plan("ruler: %s (%s)", s->pc.metric, s->ruler_why ? s->ruler_why : "configured");
		gdn_loop_setup_ruler(s, &ruler);
		plan("metric: %s; promote at >= %g%%, regression at >= %g%% (%s), %ld repeat%s",
		     ruler.buf, a->perf_min_improvement, a->perf_max_regression,
		     gdn_enum_name(gdn_perf_policy_enum, a->perf_policy), a->perf_repeats,
		     a->perf_repeats == 1 ? "" : "s");
		sbuf_release(&ruler);
	} else {
		plan("metric: none (--perf-mode off)");
	}
	plan("isolation: %s; loop branch: %s", gdn_enum_name(gdn_isolation_enum, a->isolation),
	     a->loop_branch ? a->loop_branch : "the checkout's branch");
	if (a->workers > 1)
		workers_plan(s, bname && *bname ? bname : "local");
	plan("log dir: %s (journal loop.jsonl)", s->log_dir);
	if (a->workers > 1 && s->hlog) { /* each worker's own */
		char *w1 = gdn_loop_setup_worker_dir(s, 1);
		char *p = gdn_loop_worker_path(s->hlog, s->agent_dir, w1);

		plan("hill-climb log: %s%s", p ? p : s->hlog,
		     p ? " (worker 1's; each worker's own)" : "");
		free(p);
		free(w1);
	} else if (s->hlog) {
		plan("hill-climb log: %s", s->hlog);
	} else {
		plan("hill-climb log: none (%s)", s->hlog_why ? s->hlog_why : "not configured");
	}
	plan("stop: after %ld iteration%s; --max-failures %ld (-1: unlimited); "
	     "--stop-after-failures %ld (0: never)%s%s%s",
	     a->iterations, a->iterations == 1 ? "" : "s", lo->max_failures,
	     lo->stop_after_failures, a->until_time ? "; --until-time " : "",
	     a->until_time ? a->until_time : "",
	     a->max_agent_minutes > 0 ? "; --max-agent-minutes set" : "");
	plan("policies: no commit %s, post-check %s, iteration error %s, validation %s",
	     policy(a->no_commit_policy), policy(a->post_check_policy),
	     policy(a->iteration_error_policy), policy(a->validation_policy));
}

/*
 * `--dry-run --json`: the plan as one document (gdnctl.loop_dry_run.v1): the
 * gate, the ruler and its direction, the running log (gdn_loop_setup_plan),
 * where the run works and stops, the prompt and the agent's argv of
 * iteration 1. A new reference.
 */
static json_t *dry_run_json(const struct gdn_loop_setup *s, const struct sbuf *prompt,
			    const char *pfile, const char *agent_dir, const struct strvec *argv,
			    const char *agent_missing)
{
	const struct gdn_loop_args *a = &s->a;
	const struct gdn_loop_opts *lo = &s->lo;
	json_t *doc = gdn_json_doc("gdnctl.loop_dry_run.v1");
	json_t *agent = json_object(), *av = json_array();

	json_object_set_new(doc, "iterations", json_integer(a->iterations));
	json_object_update(doc, s->plan);
	json_object_set_new(agent, "driver", json_string(a->agent));
	json_object_set_new(agent, "workdir", gdn_json_string_lossy(agent_dir));
	for (size_t i = 0; argv && i < argv->nr; i++)
		json_array_append_new(av, gdn_json_string_lossy(argv->v[i]));
	json_object_set_new(agent, "argv", argv ? av : json_null());
	if (!argv)
		json_decref(av);
	json_object_set_new(agent, "missing", gdn_json_string_lossy(agent_missing));
	json_object_set_new(doc, "agent", agent);
	json_object_set_new(doc, "isolation",
			    json_string(gdn_enum_name(gdn_isolation_enum, a->isolation)));
	json_object_set_new(doc, "loop_branch", gdn_json_string_lossy(a->loop_branch));
	json_object_set_new(doc, "workers", json_integer(a->workers));
	json_object_set_new(doc, "log_dir", gdn_json_string_lossy(s->log_dir));
	json_object_set_new(doc, "stop",
			    json_pack("{s:I, s:I, s:o}", "max_failures",
				      (json_int_t)lo->max_failures, "stop_after_failures",
				      (json_int_t)lo->stop_after_failures, "until_time",
				      gdn_json_string_lossy(a->until_time)));
	json_object_set_new(doc, "prompt",
			    json_pack("{s:o, s:o}", "file", gdn_json_string_lossy(pfile), "text",
				      gdn_json_string_lossy(prompt->buf)));
	return doc;
}

static int dry_run(const struct gdn_loop_setup *s, const char *agent_missing, struct gdn_err *err)
{
	const struct gdn_loop_opts *lo = &s->lo;
	struct sbuf prompt = SBUF_INIT, line = SBUF_INIT;
	struct strvec argv = STRVEC_INIT;
	char *head = NULL, *branch = NULL, *pfile = NULL, *mfile = NULL, *tfile = NULL, *w1 = NULL;
	struct gdn_prompt_vars v = {1, lo->iterations, NULL, NULL, NULL, NULL, NULL};
	struct gdn_agent_request req = {0};
	char t[32];
	int ret;

	if (!s->a.json)
		dry_run_plan(s);
	/* with --isolation worktree the agent's worktree does not exist yet: the checkout's HEAD */
	ret = gdn_repo_head_at(lo->user_workdir ? lo->user_workdir : lo->workdir, &head, &branch,
			       err);
	if (ret)
		goto out;
	if (lo->isolation == GDN_ISOLATION_WORKTREE && lo->branch) {
		free(branch);
		branch = xstrdup(lo->branch);
	}
	v.head_sha = head;
	v.branch = branch;
	v.log_file = gdn_prompt_log_file(lo->hillclimb_log, lo->workdir);
	gdn_prompt_render(lo->prompt_template, &v, lo->directives, &prompt);
	pfile = xstrfmt("%s/iteration-001-prompt.txt", lo->log_dir);
	mfile = xstrfmt("%s/iteration-001-last-message.txt", lo->log_dir);
	tfile = xstrfmt("%s/iteration-001-transcript.log", lo->log_dir);
	req = (struct gdn_agent_request){.workdir = lo->workdir,
					 .prompt = prompt.buf,
					 .prompt_file = pfile,
					 .last_message_file = mfile,
					 .transcript_file = tfile};
	if (lo->workers > 1) /* worker 1's */
		req.workdir = w1 = gdn_loop_setup_worker_dir(s, 1);
	if (s->agent)
		gdn_agent_argv(s->agent, &req, &argv);
	if (s->a.json) {
		ret = gdn_json_print(dry_run_json(s, &prompt, pfile, req.workdir,
						  s->agent ? &argv : NULL, agent_missing))
			  ? gdn_err_set(err, GDN_EIO, "cannot write the dry run's JSON")
			  : 0;
		goto out;
	}
	printf("%s dry run: the prompt of iteration 1 (%s):\n", tag(t), pfile);
	fwrite(prompt.buf, 1, prompt.len, stdout);
	if (prompt.len && prompt.buf[prompt.len - 1] != '\n')
		putchar('\n');
	if (s->agent) {
		gdn_argv_format(&line, argv.v);
		printf("%s dry run: the agent command (in %s):\n%s $ %s\n", tag(t), req.workdir,
		       tag(t), line.buf);
	} else {
		printf("%s dry run: the agent command (in %s): not available (%s)\n", tag(t),
		       req.workdir, agent_missing);
	}
out:
	free(head);
	free(branch);
	free(pfile);
	free(mfile);
	free(tfile);
	free(w1);
	strvec_clear(&argv);
	sbuf_release(&prompt);
	sbuf_release(&line);
	return ret;
}

/*
 * The values the options write, and the option table over them: the
 * original codex-loop's options, with its names, defaults and messages.
 * The command runs once per process.
 */
static struct gdn_loop_setup setup;
static struct opt loop_opts[] = {
    OPT_GROUP_("Loop"),
    OPT_INT_F(0, "iterations", &setup.a.iterations, "N",
	      "number of iterations (required unless --resume)", NULL, 0, 0, OPT_INVOCATION),
    OPT_STRING_(0, "prompt-file", &setup.a.prompt_file, "PATH",
		"prompt template ({{ITERATION}}, {{TOTAL_ITERATIONS}}, {{HEAD_SHA}}, "
		"{{BRANCH}}, {{LOG_TAIL}})",
		"project.prompt_file, else <repo>/scripts/gdn/codex_iteration_prompt.md, else "
		"<repo>/prompts/iteration.md, else the installed one"),
    OPT_STRING_F(0, "workdir", &setup.a.workdir, "PATH",
		 "repository where the agent runs and git operations happen", "the repository root",
		 OPT_INVOCATION),
    OPT_STRING_F(0, "log-dir", &setup.a.log_dir, "PATH",
		 "prompts, transcripts, last messages and the journal loop.jsonl",
		 "<git common dir>/gdnctl/<branch>", OPT_INVOCATION),
    OPT_STRING_(0, "hillclimb-log-file", &setup.a.hillclimb_log, "PATH",
		"running log: {{LOG_TAIL}}, {{LOG_FILE}} and commit stamping",
		"config log_file, under --workdir; unset outside a Marin checkout: none"),
    OPT_SECONDS_(0, "sleep-seconds", &setup.a.sleep_seconds, "S",
		 "sleep after a successful iteration (not after the last)", "5.0"),
    OPT_BOOL_F(0, "resume", &setup.a.resume,
	       "continue the last run journaled in the log dir after a crash or kill, with "
	       "the run's options (those not given take the run's values)",
	       OPT_INVOCATION),
    OPT_BOOL_F(0, "resume-override", &setup.a.resume_override,
	       "with --resume: accept options that differ from the run's (journaled)",
	       OPT_INVOCATION),
    OPT_BOOL_F(0, "dry-run", &setup.a.dry_run,
	       "pre-flight: every check of a real run, the plan, the prompt and the agent "
	       "command of iteration 1; start nothing",
	       OPT_INVOCATION),
    OPT_DURATION_F(0, "heartbeat", &setup.a.heartbeat_ms,
		   "print `still running` this often while the agent is silent (0: off)", "60s",
		   OPT_INVOCATION),
    OPT_BOOL_F(0, "json", &setup.a.json,
	       "print the summary as JSON (gdnctl.loop_summary.v1; with --dry-run the plan, "
	       "gdnctl.loop_dry_run.v1); progress goes to stderr",
	       OPT_INVOCATION),
    OPT_GROUP_("Stop conditions"),
    OPT_STRING_(0, "until-time", &setup.a.until_time, "TIME",
		"start no iteration after TIME (2026-11-21T18:00:00Z, UTC) or +DURATION", NULL),
    OPT_MINUTES_(0, "max-agent-minutes", &setup.a.max_agent_minutes, "M",
		 "start no iteration once the agent has run this long in total (0: no limit)", "0"),
    OPT_INT_(0, "max-tokens", &setup.a.max_tokens, "N",
	     "start no iteration once the agent has used N tokens in total (0: no limit)", "0", 0,
	     LONG_MAX),
    OPT_INT_(0, "max-tokens-per-hour", &setup.a.max_tokens_per_hour, "N",
	     "start no iteration once the agent has used N tokens in the last hour (0: no limit)",
	     "0", 0, LONG_MAX),
    OPT_FLOAT_(0, "max-cost-usd", &setup.a.max_cost_usd, "X",
	       "start no iteration once the agent has cost X US dollars in total (0: no limit)",
	       "0"),
    OPT_INT_(0, "stop-after-failures", &setup.a.stop_after_failures, "N",
	     "stop (exit 1) after N consecutive failed iterations (0: never)", "0", 0, 0),
    OPT_INT_(0, "max-failures", &setup.a.max_failures, "N",
	     "abort when counted failures exceed N; -1 unlimited", "0", 0, 0),
    OPT_GROUP_("Agent"),
    OPT_CHOICE_(0, "agent", &setup.a.agent, NULL, "the agent driver", GDN_AGENT_DEFAULT),
    OPT_STRING_(
	0, "agent-cmd", &setup.a.agent_cmd, "CMD",
	"your agent: 'prog arg {prompt_file}' (prompt also on stdin); implies --agent command",
	NULL),
    OPT_STRING_(0, "codex-bin", &setup.a.codex_bin, "PATH", "explicit agent binary", NULL),
    OPT_STRING_(0, "model", &setup.a.model, "NAME", "model (-m)", "gpt-5.4 for codex"),
    OPT_STRING_(0, "reasoning-effort", &setup.a.reasoning_effort, "LEVEL",
		"reasoning effort (codex -c model_reasoning_effort)", "xhigh for codex"),
    OPT_STRING_(0, "codex-profile", &setup.a.codex_profile, "NAME", "codex profile (-p)", NULL),
    OPT_NEGBOOL_(0, "codex-ephemeral", &setup.a.ephemeral, "codex --ephemeral", "on"),
    OPT_BOOL_(0, "search", &setup.a.search, "codex --search (when the binary supports it)"),
    OPT_BOOL_F(0, "show-file-updates", &setup.a.show_file_updates,
	       "show the agent's file-update and diff blocks on the terminal", OPT_INVOCATION),
    OPT_INT_(0, "codex-retries", &setup.a.codex_retries, "N", "extra agent attempts per iteration",
	     "0", 0, 0),
    OPT_SECONDS_(0, "codex-timeout-seconds", &setup.a.codex_timeout, "S",
		 "wall-clock limit per agent attempt (any agent)", "7200"),
    OPT_SECONDS_(0, "codex-idle-timeout-seconds", &setup.a.codex_idle_timeout, "S",
		 "no-output limit per agent attempt (any agent)", "900"),
    OPT_DURATION_(0, "agent-timeout", &setup.a.agent_timeout_ms,
		  "same as --codex-timeout-seconds, as a duration (0: none)", NULL),
    OPT_DURATION_(0, "agent-idle-timeout", &setup.a.agent_idle_timeout_ms,
		  "same as --codex-idle-timeout-seconds, as a duration (0: none)", NULL),
    OPT_DURATION_(0, "agent-kill-grace", &setup.a.kill_grace_ms,
		  "between SIGINT, SIGTERM and SIGKILL to the agent's process group", "10s"),
    OPT_SECONDS_(0, "retry-sleep-seconds", &setup.a.retry_sleep, "S",
		 "sleep between agent and post-check retries", "20.0"),
    OPT_GROUP_("Prompt and session directives"),
    OPT_LIST_(0, "protect", &setup.a.protect, "GLOB",
	      "a path the agent may not change (repeatable; replaces project.protected_paths)"),
    OPT_LIST_(0, "directive", &setup.a.directives, "TEXT", "an inline session directive"),
    OPT_LIST_(0, "directive-file", &setup.a.directive_files, "PATH",
	      "a directive from a file (relative to the repository)"),
    OPT_LIST_(0, "directive-preset", &setup.a.presets, "NAME",
	      "NAME.md in project.directives_dir, scripts/gdn/session_directives, "
	      "session_directives or the installed ones (the first that has it)"),
    OPT_GROUP_("Working tree"),
    OPT_ENUM_(0, "isolation", &setup.a.isolation, gdn_isolation_enum, "where the agent works",
	      "worktree"),
    OPT_INT_(0, "workers", &setup.a.workers, "N",
	     "N agents at once, each in a worktree of its own (--isolation worktree)",
	     "config loop.workers, else 1", 0, 0),
    OPT_INT_(0, "targets", &setup.a.targets, "M",
	     "with --workers N: M validation targets apart from the N agents (a queue hands a "
	     "ready candidate to a free target, and the agent goes on to its next idea); N + M "
	     "worktrees",
	     "N: each worker validates on its own", 0, 0),
    OPT_STRING_(0, "worktree-dir", &setup.a.worktree_dir, "DIR",
		"--workers N > 1: worker K works in DIR/w<K>", "<log dir>/workers"),
    OPT_STRING_(0, "branch", &setup.a.loop_branch, "B",
		"the loop branch that promotions move (default: the checkout's branch)", NULL),
    OPT_ENUM_(0, "agent-failure-commits", &setup.a.agent_failure_commits,
	      gdn_agent_failure_commits_enum, "commits made by an agent attempt that failed",
	      "discard"),
    OPT_BOOL_(0, "allow-dirty", &setup.a.allow_dirty,
	      "skip the clean-tree requirement (--isolation in-place)"),
    OPT_ENUM_(0, "dirty-policy", &setup.a.dirty_policy, gdn_dirty_policy_enum,
	      "a dirty tree before an iteration (--isolation in-place)", "fail"),
    OPT_ENUM_(0, "stash-restore-policy", &setup.a.restore_policy, gdn_restore_policy_enum,
	      "when the stash cannot be restored", "warn-keep"),
    OPT_BOOL_(0, "allow-no-commit", &setup.a.allow_no_commit, "do not require a new commit"),
    OPT_ENUM_(0, "no-commit-policy", &setup.a.no_commit_policy, gdn_loop_policy_enum,
	      "an iteration without a new commit", "fail"),
    OPT_ENUM_(0, "iteration-error-policy", &setup.a.iteration_error_policy, gdn_loop_policy_enum,
	      "an unexpected error in an iteration", "fail"),
    OPT_BOOL_(0, "resilient", &setup.a.resilient,
	      "tolerant preset: unlimited failures, stash, count-failure, retries"),
    OPT_GROUP_("Post-checks"),
    OPT_LIST_(0, "post-check", &setup.a.post_checks, "CMD",
	      "run with bash -c in the working tree after each iteration"),
    OPT_ENUM_(0, "post-check-policy", &setup.a.post_check_policy, gdn_loop_policy_enum,
	      "a failing post-check", "fail"),
    OPT_INT_(0, "post-check-retries", &setup.a.post_check_retries, "N",
	     "extra attempts per post-check", "0", 0, 0),
    OPT_GROUP_("Sync with a remote branch"),
    OPT_ENUM_(0, "sync-main-policy", &setup.a.sync_policy, gdn_sync_policy_enum,
	      "merge the remote branch before iterations", "off"),
    OPT_STRING_(0, "sync-main-remote", &setup.a.sync_remote, "NAME", "remote", "origin"),
    OPT_STRING_(0, "sync-main-branch", &setup.a.sync_branch, "NAME", "branch", "main"),
    OPT_ENUM_(0, "sync-main-conflict-policy", &setup.a.sync_conflict, gdn_sync_conflict_enum,
	      "a merge conflict", "fail"),
    OPT_GROUP_("Validation gate"),
    OPT_ENUM_(0, "validation-mode", &setup.a.validation_mode, gdn_gate_mode_enum,
	      "after an iteration with commits: project.test_command then "
	      "project.profile_command (required), the profile only, or nothing",
	      "loop.validation_mode, else required with project.test_command, else off"),
    OPT_ENUM_(0, "validation-policy", &setup.a.validation_policy, gdn_loop_policy_enum,
	      "a failed validation (its commits are reverted first)", "count-failure"),
    OPT_DURATION_(0, "validation-timeout", &setup.a.validation_timeout_ms,
		  "per validation phase (0: none)", "30m"),
    /* a list with a default (OPT_LIST_ has none): once, or once per worker */
    OPT_ROW_(OPT_LIST, 0, "backend", &setup.a.backends, "NAME",
	     "where the validation commands run (backends.NAME, or local); with --workers N: "
	     "once (shared), or N times (worker K: the K-th)",
	     NULL, NULL, "config loop.backend, else local", 0, 0, 0),
    OPT_INT_(0, "validation-retries", &setup.a.validation_retries, "N",
	     "run a phase again when it could not run (backend error, job stopped), "
	     "--retry-sleep-seconds apart; never for a failed command",
	     "0", 0, 1000),
    OPT_GROUP_("Where validation runs (docs/gdnctl-loop.md)"),
    OPT_INT_(0, "validation-attempts", &setup.w.validation_attempts, "N",
	     "passes over the targets per phase", "1", 0, 0),
    OPT_SECONDS_(0, "validation-retry-sleep", &setup.w.validation_retry_sleep, "S",
		 "sleep between passes", "120.0"),
    OPT_INT_(0, "validation-max-attempts", &setup.w.max_attempts, "N",
	     "the original's name of --validation-attempts; -1: until a pass succeeds", NULL, 0, 0),
    OPT_SECONDS_(0, "validation-ray-test-timeout", &setup.w.ray_test_timeout, "S",
		 "timeout of a Ray fallback tests job (overrides --validation-timeout)", NULL),
    OPT_SECONDS_(0, "validation-ray-profile-timeout", &setup.w.ray_profile_timeout, "S",
		 "timeout of a Ray fallback profile job (overrides --validation-timeout)", NULL),
    OPT_INT_(0, "validation-ray-log-tail", &setup.w.ray_log_tail, "N",
	     "show (and parse) only the last N lines of a Ray fallback job's output", "all", 0, 0),
    OPT_LIST_(0, "validation-ray-cluster", &setup.w.clusters, "C",
	      "a Ray fallback cluster, tried in order"),
    OPT_BOOL_(0, "validation-ray-cluster-auto", &setup.w.auto_clusters,
	      "Ray fallback clusters from <workdir>/infra/marin-*.yaml"),
    OPT_LIST_(0, "validation-ray-cluster-exclude", &setup.w.excludes, "S",
	      "skip discovered clusters whose name contains S (added to vllm, big-run)"),
    OPT_BOOL_(0, "validation-cross-tpu-test-fallback", &setup.w.cross_tpu,
	      "discovered test clusters: any v5p, v5e or v6e slice"),
    OPT_STRING_(0, "validation-ray-tpu", &setup.w.ray_tpu, "T", "--tpu of Ray test jobs",
		"the ray backend's, auto"),
    OPT_STRING_(0, "validation-profile-tpu", &setup.w.profile_tpu, "T",
		"--tpu of Ray profile jobs, and the discovery filter", "v5p-8"),
    OPT_BOOL_(0, "hold-dev-tpu", &setup.w.hold,
	      "allocate a dev TPU before the loop, validate on it first, release at the end"),
    OPT_ENUM_(0, "hold-dev-tpu-policy", &setup.w.hold_required, gdn_hold_policy_enum,
	      "when the allocation fails: abort (exit 1) or continue without it", "required"),
    OPT_STRING_(0, "dev-tpu-backend", &setup.w.backend, "NAME",
		"a configured dev-tpu backend (the flags below override its keys)", "dev-tpu"),
    OPT_STRING_(0, "dev-tpu-name", &setup.w.name, "N", "the dev TPU's name (required to hold)",
		"backends.NAME.tpu_name"),
    OPT_STRING_(0, "dev-tpu-cluster", &setup.w.cluster, "C", "the first cluster to allocate on",
		"us-central1"),
    OPT_LIST_(0, "dev-tpu-fallback-cluster", &setup.w.fallbacks, "C",
	      "allocate here when the cluster fails, in order"),
    OPT_STRING_(0, "dev-tpu-type", &setup.w.type, "T", "dev_tpu.py allocate --tpu-type", NULL),
    OPT_STRING_(0, "dev-tpu-sync-path", &setup.w.sync_path, "P",
		"the sync path of the allocation (dev_tpu.py)", "."),
    OPT_SECONDS_(0, "dev-tpu-ready-timeout", &setup.w.ready_timeout, "S",
		 "give a cluster up when not active after S seconds", "900.0"),
    OPT_INT_(0, "dev-tpu-allocate-attempts", &setup.w.attempts, "N",
	     "passes over the cluster and its fallbacks", "1", 0, 0),
    OPT_SECONDS_(0, "dev-tpu-allocate-retry-sleep", &setup.w.retry_sleep, "S",
		 "sleep between allocation passes", "30.0"),
    OPT_SECONDS_(0, "dev-tpu-stop-timeout", &setup.w.stop_timeout, "S",
		 "release: SIGINT, then SIGTERM after S seconds", "120.0"),
    OPT_STRING_(0, "dev-tpu-allocate-log", &setup.w.alloc_log, "PATH", "the allocation's output",
		"<log-dir>/dev_tpu_allocate.log"),
    OPT_BOOL_F(0, "dev-tpu-verbose", &setup.w.verbose, "verbose dev_tpu.py output", OPT_INVOCATION),
    OPT_DURATION_(0, "dev-tpu-reacquire-interval", &setup.w.reacquire_ms,
		  "at most one re-acquire of a lost or failing dev TPU this often", "5m"),
    OPT_GROUP_("Marin validation defaults: without project.test_command/profile_command"),
    OPT_CHOICE_(0, "validation-tests", &setup.w.mg.test_selection, gdn_marin_test_choices,
		"which GDN tests (REMOTE_TEST_CMD)", "both"),
    OPT_STRING_(0, "validation-pytest-args", &setup.w.mg.pytest_args, "ARGS",
		"appended to the pytest command", NULL),
    OPT_BOOL_(0, "validation-dev-no-sync", &setup.w.dev_no_sync,
	      "dev_tpu.py execute --no-sync on the held dev TPU"),
    OPT_CHOICE_(0, "validation-profile-size", &setup.w.mg.p.size, gdn_marin_size_choices,
		"GDN_PROFILE_SIZE", "130m"),
    OPT_INT_(0, "validation-profile-num-steps", &setup.w.mg.p.num_steps, "N",
	     "GDN_PROFILE_NUM_STEPS", "20", 0, 0),
    OPT_INT_(0, "validation-profile-start-step", &setup.w.mg.p.profile_start_step, "N",
	     "GDN_PROFILE_PROFILE_START_STEP", "2", 0, 0),
    OPT_INT_(0, "validation-profile-num-steps-window", &setup.w.mg.p.profile_num_steps, "N",
	     "GDN_PROFILE_PROFILE_NUM_STEPS", "6", 0, 0),
    OPT_INT_(0, "validation-profile-batch-size", &setup.w.mg.p.batch_size, "N",
	     "GDN_PROFILE_BATCH_SIZE", "8", 0, 0),
    OPT_INT_(0, "validation-profile-chunk-size", &setup.w.mg.p.chunk_size, "N",
	     "GDN_PROFILE_CHUNK_SIZE", NULL, 0, 0),
    OPT_INT_(0, "validation-profile-segment-size", &setup.w.mg.p.segment_size, "N",
	     "GDN_PROFILE_SEGMENT_SIZE", NULL, 0, 0),
    OPT_INT_(0, "validation-profile-gdn-layers-per-block", &setup.w.mg.p.layers_per_block, "N",
	     "GDN_PROFILE_GDN_LAYERS_PER_BLOCK", NULL, 0, 0),
    OPT_INT_(0, "validation-profile-gdn-block-size", &setup.w.mg.p.block_size, "N",
	     "GDN_PROFILE_GDN_BLOCK_SIZE", NULL, 0, 0),
    OPT_BOOL_(0, "validation-profile-all-transformer", &setup.w.all_transformer,
	      "GDN_PROFILE_ALL_TRANSFORMER=1 (attention-only control)"),
    OPT_LIST_(0, "validation-profile-env", &setup.w.profile_env, "KEY=VALUE",
	      "an extra environment variable of the profile"),
    OPT_STRING_(0, "validation-profile-ce-implementation", &setup.w.mg.p.ce_impl, "IMPL",
		"fused CE: auto, xla, reference, pallas_tpu or pallas_gpu", GDN_MARIN_GATE_CE_IMPL),
    OPT_STRING_(0, "validation-profile-ce-bwd-mode", &setup.w.mg.p.ce_bwd, "MODE",
		"CE backward: pallas or xla_streaming", "pallas"),
    OPT_STRING_(0, "validation-profile-run-name-prefix", &setup.w.mg.p.run_name_prefix, "P",
		"runs are named P_iterNNN (GDN_PROFILE_RUN_NAME_PREFIX); the W&B prefix",
		GDN_MARIN_GATE_RUN_NAME_PREFIX),
    OPT_CHOICE_(0, "validation-profile-wandb-mode", &setup.w.mg.p.wandb_mode,
		gdn_marin_wandb_choices, "WANDB_MODE; the metric comes from W&B only online",
		"online"),
    OPT_STRING_(0, "validation-profile-marin-prefix", &setup.w.mg.marin_prefix, "URL",
		"MARIN_PREFIX on the dev TPU", "gs://BUCKET of the held cluster"),
    OPT_BOOL_(0, "validation-profile-dry-run", &setup.w.profile_dry_run,
	      "pass --dry_run true to the profile script"),
    OPT_GROUP_("Performance policy (docs/performance-policy.md)"),
    OPT_ENUM_(0, "perf-mode", &setup.a.perf_on, gdn_perf_mode_enum,
	      "measure each iteration with project.profile_command and keep, promote or "
	      "revert it (required: same as on)",
	      "loop.perf.mode, else off"),
    OPT_STRING_(0, "perf-metric", &setup.a.perf_metric, "NAME",
		"the metric (profile output, or trace/step_ms, trace/category/NAME_ms, "
		"trace/op/NAME_ms; default: trace/step_ms when the profile leaves a trace "
		"outside Marin, else throughput/mfu)",
		"loop.perf.metric, else auto"),
    OPT_ENUM_(0, "perf-direction", &setup.a.perf_direction, gdn_perf_direction_enum,
	      "which way is better (auto: from the metric's name; a name that says neither is "
	      "refused)",
	      "loop.perf.direction, else auto"),
    OPT_FLOAT_(0, "perf-min-improvement-pct", &setup.a.perf_min_improvement, "PCT",
	       "promote at an improvement of at least PCT",
	       "loop.perf.min_improvement_pct, else 0.25"),
    OPT_FLOAT_(0, "perf-max-regression-pct", &setup.a.perf_max_regression, "PCT",
	       "a regression at a loss of at least PCT", "loop.perf.max_regression_pct, else 1.0"),
    OPT_ENUM_(0, "perf-regression-policy", &setup.a.perf_policy, gdn_perf_policy_enum,
	      "a regression, a gate rejection or a missing metric", "revert-count-failure"),
    OPT_ENUM_(0, "perf-within-threshold-policy", &setup.a.perf_within, gdn_perf_within_enum,
	      "a change within the thresholds (neither promoted nor a regression)", "keep"),
    OPT_ENUM_(0, "perf-repeat-stat", &setup.a.perf_stat, gdn_perf_stat_enum,
	      "one figure of a commit's --perf-repeats samples: their median, or the best "
	      "(for noise that only slows down)",
	      "median"),
    OPT_LIST_(0, "perf-gate", &setup.a.perf_gates, "RULE",
	      "a trace gate rule (repeatable; none: the defaults)"),
    OPT_FLOAT_(0, "perf-min-confidence", &setup.a.perf_min_confidence, "Z",
	       "z of the noise rule (0: off)", "0"),
    OPT_INT_(0, "perf-repeats", &setup.a.perf_repeats, "K", "profile runs per commit",
	     "loop.perf.repeats, else 1", 1, 1000),
    OPT_NEGBOOL_(0, "perf-ab", &setup.a.perf_ab,
		 "profile the champion (from its own worktree) and the candidate alternately "
		 "and decide on the paired interval",
		 "on when --perf-repeats > 1"),
    OPT_INT_(0, "perf-max-repeats", &setup.a.perf_max_repeats, "K",
	     "--perf-ab: add pairs up to K while the interval is inconclusive (0: 4 x "
	     "--perf-repeats)",
	     "0", 0, 10000),
    OPT_FLOAT_(0, "perf-confidence", &setup.a.perf_confidence, "P",
	       "--perf-ab: confidence of the interval", "0.95"),
    OPT_STRING_(0, "perf-state-file", &setup.a.perf_state_file, "PATH", "champion and history",
		"<log-dir>/perf_state.json"),
    OPT_ENUM_(0, "perf-source", &setup.a.perf_source, gdn_measure_source_enum,
	      "where the metric comes from (auto: W&B when the profile names a run or "
	      "one is found by prefix, else the profile output)",
	      "auto"),
    OPT_ENUM_(0, "perf-aggregation", &setup.a.perf_history, gdn_measure_aggregation_enum,
	      "W&B: aggregate a history window, or read the run summary", "history-window"),
    OPT_ENUM_(0, "perf-history-aggregation", &setup.a.perf_history_agg, gdn_agg_enum,
	      "W&B history window aggregate", "median"),
    OPT_INT_(0, "perf-history-step-start", &setup.a.perf_step_start, "N",
	     "W&B history window: first step (inclusive)", "10", 0, 0),
    OPT_INT_(0, "perf-history-step-end", &setup.a.perf_step_end, "N",
	     "W&B history window: last step (inclusive)", "18", 0, 0),
    OPT_INT_(0, "perf-history-min-points", &setup.a.perf_min_points, "N",
	     "W&B history window: finite points needed, else unscored", "5", 1, 1000000),
    OPT_STRING_(0, "perf-wandb-entity", &setup.a.perf_wandb_entity, "E",
		"W&B entity for a run name or prefix", "marin-community"),
    OPT_STRING_(0, "perf-wandb-project", &setup.a.perf_wandb_project, "P",
		"W&B project for a run name or prefix", "marin"),
    OPT_STRING_(0, "perf-wandb-run-prefix", &setup.a.perf_wandb_prefix, "PREFIX",
		"find the newest run named PREFIX_* ({iteration}: the iteration, 001)", NULL),
    OPT_INT_(0, "perf-wandb-retries", &setup.a.perf_wandb_retries, "N", "retries per W&B request",
	     "4", 0, 100),
    OPT_DURATION_(0, "perf-wandb-timeout", &setup.a.perf_wandb_timeout_ms,
		  "W&B requests of one profile run, in total (0: none)", "2m"),
    OPT_BOOL_(0, "log-measurements", &setup.a.log_measurements,
	      "add the measured figures to a kept iteration's running-log entry (committed)"),
    OPT_END_(),
};

/*
 * Print a failed setup step; the exit code (exitcode.h). codex-loop prints
 * the original's startup messages as the original did, exit 1.
 */
static int setup_failed(const struct gdn_loop_setup *s)
{
	switch (s->style) {
	case GDN_SETUP_PLAIN:
		if (!s->original)
			return gdn_die_err(&s->err);
		fprintf(stderr, "[gdnctl] %s\n", s->err.msg);
		return GDN_EXIT_FAILED;
	case GDN_SETUP_SIGNAL:
		gdn_error("%s", s->err.msg);
		return GDN_EXIT_SIGNAL + gdn_proc_interrupted();
	default:
		return gdn_die_err(&s->err);
	}
}

/* The loop itself, the hold's release, and the summary. */
static int run(struct gdn_loop_setup *s, struct printer *pr)
{
	struct gdn_loop_agent la = {agent_run, gdn_agent_result_release, s->agent};
	struct gdn_loop_summary sum = GDN_LOOP_SUMMARY_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *warning = NULL;
	int code = GDN_EXIT_OK;

	if (gdn_loop_run(&s->lo, &la, gdn_loop_setup_hooks(s), &sum, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	gdn_loop_setup_end(s, sum.run_id, &warning);
	if (warning)
		gdn_warn("%s", warning);
	if (pr->json) {
		if (gdn_json_print(gdn_loop_summary_json(&sum)))
			code = GDN_EXIT_FAILED;
	} else {
		json_t *champ = s->a.perf_on ? gdn_perf_state_champion(&s->ps) : NULL;

		print_summary(&sum, json_string_value(json_object_get(champ, "commit")));
	}
	if (!s->original && sum.run_id) /* codex-loop keeps the original's last lines */
		print_next_steps(pr->json ? stderr : stdout, s, &sum);
	if (!code)
		code = sum.exit_code;
out:
	free(warning);
	gdn_loop_summary_release(&sum);
	return code;
}

int cmd_loop(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct gdn_loop_setup *const s = &setup;
	struct opt *opts = loop_opts;
	struct printer pr = {false};
	struct strvec rest = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *agent_missing = NULL, *agent_name = NULL;
	int code = GDN_EXIT_OK;

	if (argc > 1 && !strcmp(argv[1], "status")) /* src/cmd/cmd_loop_status.c */
		return cmd_loop_status(argc, argv, ctx);
	/* integrity gate (issue 28): `loop verify`, src/cmd/cmd_loop_verify.c */
	if (argc > 1 && !strcmp(argv[1], "verify"))
		return cmd_loop_verify(argc, argv, ctx);
	gdn_loop_setup_init(s, ctx->cwd, ctx->repo_root, &ctx->config);
	s->original = ctx->name && !strcmp(ctx->name, "codex-loop");
	bind_agent_choices(opts);
	if (!gdn_cmd_parse_opts(opts, &loop_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest,
				&code))
		goto out;
	if (gdn_loop_setup_resume(s, opts, argc, argv))
		goto failed;
	pr.json = s->a.json;
	s->say = on_say;
	s->on_line = on_agent_line;
	s->on_event = on_backend_event;
	s->payload = &pr;
	if (gdn_loop_setup_check(s, opts) || gdn_loop_setup_paths(s))
		goto failed;
	if (s->a.resilient)
		on_say(GDN_LOOP_INFO,
		       "resilient mode active: unlimited failures, stash dirty handling, "
		       "best-effort dev TPU hold, and retry-enabled command paths.",
		       &pr);
	if (gdn_loop_setup_agent(s)) {
		/* the pre-flight warns of a missing agent: the plan is still worth reading */
		if (!s->a.dry_run || s->err.code != GDN_EBACKEND || s->agent)
			goto failed;
		gdn_warn("%s (a real run stops here)", s->err.msg);
		agent_missing = xstrdup(s->err.msg);
		gdn_err_clear(&s->err);
	}
	for (size_t i = 0; i < s->warnings.nr; i++)
		gdn_warn("%s", s->warnings.v[i]);
	if (s->directives.nr) {
		char line[64];

		snprintf(line, sizeof(line), "session directives: %zu loaded", s->directives.nr);
		on_say(GDN_LOOP_INFO, line, &pr);
	}
	if (gdn_loop_setup_perf(s))
		goto failed;
	gdn_loop_setup_opts(s);
	if (!s->original) /* the banner's agent; codex-loop keeps the original's */
		s->lo.agent_name = agent_name = banner_agent(&s->a);
	/* with --dry-run: the gate's checks, nothing started (no hold, no targets) */
	if (gdn_loop_setup_gate(s))
		goto failed;
	if (s->a.dry_run) {
		if (dry_run(s, agent_missing, &err))
			code = gdn_die_err(&err);
		goto out;
	}
	if (gdn_loop_setup_journal_override(s))
		goto failed;
	if (!s->a.resume)
		banner(s, &pr);
	code = run(s, &pr);
	goto out;
failed:
	code = setup_failed(s);
out:
	free(agent_missing);
	free(agent_name);
	gdn_loop_setup_release(s);
	strvec_clear(&rest);
	return code;
}
