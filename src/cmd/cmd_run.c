/*
 * `gdnctl run`, `wait`, `logs` and `stop`: run work on a backend (local,
 * ssh, slurm, ...), wait for a job, show its output, stop it. The
 * backends (src/backend/) do the work; this file parses options, echoes
 * what the backend runs (`[gdnctl] $ ARGV`, secrets masked), prints the
 * work's output as it comes, and picks the exit code. See
 * docs/gdnctl-run.md, -wait.md, -logs.md and -stop.md.
 */
#include "gdnctl/compat.h"
#include "gdnctl/backend.h"
#include "gdnctl/cmd.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define RUN_SCHEMA  "gdnctl.run.v1"
#define WAIT_SCHEMA "gdnctl.wait.v1"

/*
 * ---- output: echoes, progress and the work's lines ----
 * Standard output carries the work's output only (the JSON document with
 * --json, which sends the work's output to stderr). Echoes and status go to
 * stderr (not at all under -q), except with --dry-run, where the echoed
 * commands are the answer: they go to stdout.
 */

struct ui {
	bool json;	     /* the work's lines go to stderr: stdout is the JSON document */
	bool dry_run;	     /* echoes are the plan: stdout */
	bool tty;	     /* progress lines overwrite each other (on stderr) */
	bool line_open;	     /* a progress line without its newline is on the terminal */
	struct strvec polls; /* poll commands already echoed */
};
#define UI_INIT                                         \
	{                                               \
		false, false, false, false, STRVEC_INIT \
	}

/* Where echoes and status lines go: NULL under -q. */
static FILE *ui_status(const struct ui *u)
{
	return u->dry_run ? stdout : gdn_status_file();
}

static void ui_close_line(struct ui *u)
{
	if (u->line_open) {
		fputc('\n', stderr);
		u->line_open = false;
	}
}

static void ui_say(struct ui *u, const char *fmt, ...) GDN_PRINTF(2, 3);
static void ui_say(struct ui *u, const char *fmt, ...)
{
	struct sbuf sb = SBUF_INIT;
	FILE *f = ui_status(u);
	va_list ap;

	if (!f)
		return;
	ui_close_line(u);
	sbuf_adds(&sb, "[gdnctl] ");
	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	gdn_secret_mask(&sb);
	sbuf_addch(&sb, '\n');
	fwrite(sb.buf, 1, sb.len, f);
	fflush(f);
	sbuf_release(&sb);
}

static void on_event(enum gdn_backend_event ev, const char *text, void *payload)
{
	struct ui *u = payload;

	switch (ev) {
	case GDN_EV_POLL:
		if (strvec_contains(&u->polls, text))
			return;
		strvec_push(&u->polls, text);
		/* fall through */
	case GDN_EV_SPAWN:
		ui_say(u, "$ %s", text);
		break;
	case GDN_EV_WAITING:
		if (u->tty) {
			fprintf(stderr, "\r\033[K[gdnctl] %s", text);
			fflush(stderr);
			u->line_open = true;
		} else {
			ui_say(u, "%s", text);
		}
		break;
	case GDN_EV_INFO:
		ui_say(u, "%s", text);
		break;
	}
}

static int on_line(const char *line, size_t len, void *payload)
{
	struct ui *u = payload;
	FILE *f = u->json ? stderr : stdout;

	ui_close_line(u);
	fwrite(line, 1, len, f);
	fputc('\n', f);
	fflush(f);
	return 0;
}

/* Set up the ui for a command's options. */
static void ui_setup(struct ui *u, bool json, bool dry_run)
{
	u->json = json;
	u->dry_run = dry_run;
	u->tty = !json && !dry_run && gdn_status_file() && isatty(STDERR_FILENO);
}

static void ui_release(struct ui *u)
{
	ui_close_line(u);
	strvec_clear(&u->polls);
}

/* ---- shared ---- */

/* Open --backend (or the configured default); 0 or the exit code to use. */
static int open_backend(struct gdn_ctx *ctx, const char *name, bool dry_run, struct ui *u,
			struct gdn_backend **out)
{
	struct gdn_err err = GDN_ERR_INIT;
	const char *cfg_name = gdn_config_str(&ctx->config, "backend");
	int ret;

	if (!name)
		name = cfg_name && *cfg_name ? cfg_name : "local";
	ret = gdn_backend_open(&ctx->config, name, out, &err);
	if (ret == GDN_ENOTFOUND || ret == GDN_EUSAGE) {
		gdn_error("%s", err.msg);
		return GDN_EXIT_USAGE;
	}
	if (ret)
		return gdn_die_err(&err);
	(*out)->on_event = on_event;
	(*out)->event_payload = u;
	(*out)->repo_root = ctx->repo_root;
	(*out)->dry_run = dry_run;
	return 0;
}

/* An error line, with registered secret values masked (a message may quote output). */
static void say_error(struct ui *u, const char *msg)
{
	struct sbuf sb = SBUF_INIT;

	ui_close_line(u);
	sbuf_adds(&sb, msg);
	gdn_secret_mask(&sb);
	gdn_error("%s", sb.buf);
	sbuf_release(&sb);
}

/* The exit code for an op's error: 128+signal when interrupted, 4 for a missing job. */
static int op_failed(struct ui *u, const struct gdn_err *err, int ret)
{
	if (ret == GDN_EINTR || gdn_proc_interrupted()) {
		say_error(u, err->msg[0] ? err->msg : "interrupted");
		return GDN_EXIT_SIGNAL + (gdn_proc_interrupted() ? gdn_proc_interrupted() : SIGINT);
	}
	say_error(u, err->msg[0] ? err->msg : "unknown error");
	if (ret == GDN_ENOTFOUND)
		return GDN_EXIT_BACKEND;
	return gdn_exit_for_error(ret);
}

/* "FAILED (exit 3)", "TIMEOUT", "CANCELLED (cancelled by uid 0)". */
static void describe(const struct gdn_job_status *st, struct sbuf *out)
{
	sbuf_adds(out, st->native[0] ? st->native : "UNKNOWN");
	if (st->state == GDN_JOB_FAILED && !strcmp(st->native, "FAILED") && st->exit_code > 0)
		sbuf_addf(out, " (exit %d%s%s)", st->exit_code, st->message[0] ? ", " : "",
			  st->message);
	else if (st->message[0])
		sbuf_addf(out, " (%s)", st->message);
}

static json_t *status_json(const char *schema, const char *backend, const char *job_id,
			   const struct gdn_job_status *st)
{
	json_t *doc = gdn_json_doc(schema); /* new */

	json_object_set_new(doc, "backend", json_string(backend));
	json_object_set_new(doc, "job_id", job_id && *job_id ? json_string(job_id) : json_null());
	json_object_set_new(doc, "state", json_string(gdn_job_state_name(st->state)));
	json_object_set_new(doc, "native", json_string(st->native));
	json_object_set_new(doc, "final", json_boolean(st->final));
	json_object_set_new(doc, "exit_code",
			    st->exit_code >= 0 ? json_integer(st->exit_code) : json_null());
	json_object_set_new(doc, "message", json_string(st->message));
	return doc;
}

/* ---- run ---- */

static const struct opt_usage run_usage = {
    "gdnctl run [--backend NAME] [--env K=V]... [--no-wait] [--timeout D] [--dry-run] [--json] "
    "-- CMD [ARG]...\n"
    "gdnctl run [--backend NAME] [options] --shell STRING",
    "Run a command on a backend (local, ssh, slurm, ...) and wait for it.",
    "CMD ARG... is an argv: run as given locally, every word quoted for the remote\n"
    "shell over ssh and in Slurm batch scripts. --shell STRING runs STRING with\n"
    "'bash -c' locally (your environment as it is) and 'bash -lc' on remote hosts\n"
    "instead. Every program gdnctl starts is echoed first as\n"
    "'[gdnctl] $ ARGV' (secrets masked) on stderr, with the status lines (none\n"
    "with -q); standard output carries the command's output only. --dry-run only\n"
    "echoes, on standard output.\n"
    "Exit status: the command's (0 success); 124 when --timeout stopped it; 1 when\n"
    "the job failed without an exit status of its own (Slurm TIMEOUT, OUT_OF_MEMORY,\n"
    "CANCELLED...); 2 usage; 3 configuration; 4 backend error; 130/143 on SIGINT/\n"
    "SIGTERM (what was started is stopped first). With --no-wait the last line of\n"
    "standard output is the job id, for 'gdnctl wait/logs/stop --backend NAME JOB'.",
};

int cmd_run(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *backend = NULL, *shell = NULL, *name = NULL;
	int no_wait = 0, dry_run = 0, json = 0, code = GDN_EXIT_OK, ret;
	long timeout_ms = 0;
	struct strvec env = STRVEC_INIT, rest = STRVEC_INIT;
	struct ui u = UI_INIT;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_run_spec spec = {0};
	struct sbuf what = SBUF_INIT;
	char *job_id = NULL;
	struct opt opts[] = {
	    OPT_STRING_('b', "backend", &backend, "NAME",
			"where to run (backends.NAME in the configuration, or local)",
			"the backend key, else local"),
	    OPT_KV_('e', "env", &env, "set an environment variable for the command"),
	    OPT_STRING_(0, "shell", &shell, "STRING",
			"run STRING with bash -c (bash -lc on remote hosts) instead of an argv",
			NULL),
	    OPT_STRING_(0, "name", &name, "NAME", "job name (Slurm --job-name)", NULL),
	    OPT_BOOL_(0, "no-wait", &no_wait, "submit, print the job id and return"),
	    OPT_DURATION_(0, "timeout", &timeout_ms, "stop the command after this long (exit 124)",
			  NULL),
	    OPT_BOOL_('n', "dry-run", &dry_run, "print the commands that would run; run nothing"),
	    OPT_BOOL_(0, "json", &json, "print a JSON document (schema " RUN_SCHEMA ")"),
	    OPT_END_(),
	};

	if (!gdn_cmd_parse_opts(opts, &run_usage, argc, argv, OPT_PARSE_STOP_AT_NON_OPTION, &rest,
				&code))
		goto out;
	if (shell && rest.nr) {
		code = gdn_usage_error("run", "give either --shell STRING or CMD ARG..., not both");
		goto out;
	}
	if (!shell && !rest.nr) {
		code =
		    gdn_usage_error("run", "nothing to run: give -- CMD ARG... or --shell STRING");
		goto out;
	}
	if (shell && !*shell) {
		code = gdn_usage_error("run", "--shell needs a command string");
		goto out;
	}
	if (no_wait && timeout_ms) {
		code =
		    gdn_usage_error("run", "--timeout applies to a run that waits, not --no-wait "
					   "(use 'gdnctl wait --timeout')");
		goto out;
	}
	ui_setup(&u, json, dry_run);
	code = open_backend(ctx, backend, dry_run, &u, &b);
	if (code)
		goto out;

	spec.argv = shell ? NULL : rest.v;
	spec.shell = shell;
	spec.env = env.v;
	spec.name = name;
	spec.timeout_ms = timeout_ms;
	spec.dry_run = dry_run;
	spec.on_line = on_line;
	spec.payload = &u;

	if (no_wait) {
		if (!b->ops->submit) {
			gdn_error("backend '%s' (%s) cannot run a job without waiting", b->name,
				  b->ops->type);
			code = GDN_EXIT_USAGE;
			goto out;
		}
		ret = b->ops->submit(b, &spec, &job_id, &err);
		if (ret) {
			code = op_failed(&u, &err, ret);
			goto out;
		}
		if (dry_run || !job_id)
			goto out;
		ui_close_line(&u);
		if (json) {
			json_t *doc = gdn_json_doc(RUN_SCHEMA); /* new, stolen by print */

			json_object_set_new(doc, "backend", json_string(b->name));
			json_object_set_new(doc, "job_id", json_string(job_id));
			code = gdn_json_print(doc) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
		} else {
			printf("%s\n", job_id);
		}
		goto out;
	}

	ret = b->ops->run(b, &spec, &st, &err);
	if (ret) {
		code = op_failed(&u, &err, ret);
		goto out;
	}
	if (dry_run)
		goto out;
	code = gdn_job_exit_code(&st);
	describe(&st, &what);
	if (st.job_id[0] && (code || !json))
		ui_say(&u, "job %s on %s finished: %s", st.job_id, b->name, what.buf);
	else if (code)
		ui_say(&u, "command on %s finished: %s", b->name, what.buf);
	if (json && gdn_json_print(status_json(RUN_SCHEMA, b->name, st.job_id, &st)))
		code = code ? code : GDN_EXIT_FAILED;
out:
	ui_release(&u);
	gdn_backend_free(b);
	strvec_clear(&env);
	strvec_clear(&rest);
	sbuf_release(&what);
	free(job_id);
	return code;
}

/* ---- wait ---- */

static const struct opt_usage wait_usage = {
    "gdnctl wait [--backend NAME] [--timeout D] [--poll D] [--show-logs] [--tail N] [--json] "
    "JOB",
    "Wait for a job to finish and report how it ended.",
    "Prints what it waits for and for how long: on a terminal one line that is\n"
    "updated every poll, otherwise a line when the state changes and every minute.\n"
    "SIGINT/SIGTERM stop the waiting, not the job (use 'gdnctl stop').\n"
    "Exit status: 0 the job succeeded; 1 it failed (its state is shown, e.g.\n"
    "'[gdnctl] job 12 finished: TIMEOUT'); 124 --timeout passed first; 2 usage;\n"
    "3 configuration; 4 backend error or unknown job; 130/143 interrupted.",
};

int cmd_wait(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *backend = NULL;
	int show_logs = 0, dry_run = 0, json = 0, code = GDN_EXIT_OK, ret;
	long timeout_ms = 0, poll_ms = 0, tail = 0;
	struct strvec rest = STRVEC_INIT;
	struct ui u = UI_INIT;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_wait_spec w = {0};
	struct sbuf what = SBUF_INIT;
	struct opt opts[] = {
	    OPT_STRING_('b', "backend", &backend, "NAME", "the backend the job runs on",
			"the backend key, else local"),
	    OPT_DURATION_(0, "timeout", &timeout_ms, "give up after this long (exit 124)",
			  "wait forever"),
	    OPT_DURATION_(0, "poll", &poll_ms, "how often to ask for the job's state",
			  "the backend's poll key"),
	    OPT_BOOL_(0, "show-logs", &show_logs, "print the job's output while waiting"),
	    OPT_INT_(0, "tail", &tail, "N", "print the last N lines of output at the end", "0", 0,
		     1000000000),
	    OPT_BOOL_('n', "dry-run", &dry_run, "print the commands that would run; run nothing"),
	    OPT_BOOL_(0, "json", &json, "print a JSON document (schema " WAIT_SCHEMA ")"),
	    OPT_END_(),
	};

	if (!gdn_cmd_parse_opts(opts, &wait_usage, argc, argv, 0, &rest, &code))
		goto out;
	if (rest.nr != 1) {
		code = gdn_usage_error("wait",
				       rest.nr ? "expected one job id, got %zu arguments"
					       : "which job? usage: gdnctl wait [options] JOB",
				       rest.nr);
		goto out;
	}
	if (opts[2].seen && poll_ms < 100) {
		code = gdn_usage_error("wait", "--poll must be at least 100ms");
		goto out;
	}
	ui_setup(&u, json, dry_run);
	code = open_backend(ctx, backend, dry_run, &u, &b);
	if (code)
		goto out;
	w.timeout_ms = timeout_ms;
	w.poll_ms = poll_ms;
	w.progress_ms = u.tty ? 1 : 0;
	w.show_logs = show_logs;
	w.tail = tail;
	w.on_line = on_line;
	w.payload = &u;
	ret = b->ops->wait(b, rest.v[0], &w, &st, &err);
	if (dry_run && !ret)
		goto out;
	if (ret == GDN_ETIMEOUT) {
		say_error(&u, err.msg);
		code = GDN_EXIT_TIMEOUT;
		if (json)
			gdn_json_print(status_json(WAIT_SCHEMA, b->name, rest.v[0], &st));
		goto out;
	}
	if (ret) {
		code = op_failed(&u, &err, ret);
		goto out;
	}
	describe(&st, &what);
	ui_say(&u, "job %s finished: %s", rest.v[0], what.buf);
	code = st.state == GDN_JOB_SUCCEEDED ? GDN_EXIT_OK : GDN_EXIT_FAILED;
	if (json && gdn_json_print(status_json(WAIT_SCHEMA, b->name, rest.v[0], &st)))
		code = code ? code : GDN_EXIT_FAILED;
out:
	ui_release(&u);
	gdn_backend_free(b);
	strvec_clear(&rest);
	sbuf_release(&what);
	return code;
}

/* ---- logs ---- */

static const struct opt_usage logs_usage = {
    "gdnctl logs [--backend NAME] [--tail N] [--dry-run] JOB",
    "Print the output of a job (all of it, or the last N lines).",
    "Exit status: 0 printed; 2 usage; 3 configuration; 4 backend error or unknown job.",
};

int cmd_logs(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *backend = NULL;
	int dry_run = 0, code = GDN_EXIT_OK, ret;
	long tail = 0;
	struct strvec rest = STRVEC_INIT;
	struct ui u = UI_INIT;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct opt opts[] = {
	    OPT_STRING_('b', "backend", &backend, "NAME", "the backend the job runs on",
			"the backend key, else local"),
	    OPT_INT_(0, "tail", &tail, "N", "only the last N lines", "all", 0, 1000000000),
	    OPT_BOOL_('n', "dry-run", &dry_run, "print the commands that would run; run nothing"),
	    OPT_END_(),
	};

	if (!gdn_cmd_parse_opts(opts, &logs_usage, argc, argv, 0, &rest, &code))
		goto out;
	if (rest.nr != 1) {
		code = gdn_usage_error("logs", "expected one job id");
		goto out;
	}
	ui_setup(&u, false, dry_run);
	code = open_backend(ctx, backend, dry_run, &u, &b);
	if (code)
		goto out;
	ret = b->ops->logs(b, rest.v[0], tail, on_line, &u, &err);
	if (ret)
		code = op_failed(&u, &err, ret);
out:
	ui_release(&u);
	gdn_backend_free(b);
	strvec_clear(&rest);
	return code;
}

/* ---- stop ---- */

static const struct opt_usage stop_usage = {
    "gdnctl stop [--backend NAME] [--dry-run] JOB",
    "Stop a job: its whole process group on the host (local, ssh), scancel (slurm).",
    "A job that had already finished is left as it is (exit 0).\n"
    "Exit status: 0 stopped or already finished; 2 usage; 3 configuration;\n"
    "4 backend error or unknown job.",
};

int cmd_stop(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *backend = NULL;
	int dry_run = 0, code = GDN_EXIT_OK, ret;
	struct strvec rest = STRVEC_INIT;
	struct ui u = UI_INIT;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct opt opts[] = {
	    OPT_STRING_('b', "backend", &backend, "NAME", "the backend the job runs on",
			"the backend key, else local"),
	    OPT_BOOL_('n', "dry-run", &dry_run, "print the commands that would run; run nothing"),
	    OPT_END_(),
	};

	if (!gdn_cmd_parse_opts(opts, &stop_usage, argc, argv, 0, &rest, &code))
		goto out;
	if (rest.nr != 1) {
		code = gdn_usage_error("stop", "expected one job id");
		goto out;
	}
	ui_setup(&u, false, dry_run);
	code = open_backend(ctx, backend, dry_run, &u, &b);
	if (code)
		goto out;
	ret = b->ops->stop(b, rest.v[0], &err);
	if (ret)
		code = op_failed(&u, &err, ret);
out:
	ui_release(&u);
	gdn_backend_free(b);
	strvec_clear(&rest);
	return code;
}
