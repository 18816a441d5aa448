/*
 * `gdnctl loop status`: a live view of a running loop, read from its
 * journal (<log dir>/loop.jsonl; src/loop/status.c): the iteration, the
 * phase and how long it has run, the champion, the last decisions, the
 * failures budget left and the agent's last output line. --watch redraws
 * it until the run ends or Ctrl-C. `gdnctl loop` hands its argv here when
 * its first argument is "status".
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/integrity.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/loop_status.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define JOURNAL_MAX ((size_t)1 << 30)

static const struct opt_usage status_usage = {
    "gdnctl loop status [--log-dir DIR] [--watch] [--json]",
    "Show a running loop, read from its journal: the iteration, its phase and elapsed\n"
    "time, the champion, the last decisions, the failures budget left and the agent's\n"
    "last output line.",
    "Reads <log-dir>/loop.jsonl (the last run) and the iteration's transcript\n"
    "(<log-dir>/iteration-NNN-transcript.log). The default log directory is the\n"
    "loop's. The elapsed time does not count the idle time before a --resume.\n"
    "--watch redraws every --interval until the run ends (its run_end event) or\n"
    "Ctrl-C. Exit status: 0 ok; 1 the journal is missing, unreadable or malformed;\n"
    "2 usage error; 130/143 when --watch is interrupted by SIGINT/SIGTERM."};

struct status_args {
	const char *log_dir;
	int watch, json;
	long interval_ms;
};

/* Read the journal and print the status once. Returns 0, or GDN_EXIT_FAILED after an error. */
static int show(const struct status_args *a, const char *log_dir, const char *journal, bool redraw)
{
	struct gdn_loop_status st;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf buf = SBUF_INIT, out = SBUF_INIT;
	struct strvec held = STRVEC_INIT;
	long long now = (long long)time(NULL) * 1000;
	struct timespec ts;
	int code = 0;

	gdn_loop_status_init(&st);
	if (sbuf_read_file(&buf, journal, JOURNAL_MAX, &err) ||
	    gdn_loop_status_load(&st, buf.buf, buf.len, journal, &err)) {
		gdn_error("%s", err.msg);
		code = GDN_EXIT_FAILED;
		goto out;
	}
	if (!clock_gettime(CLOCK_REALTIME, &ts))
		now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	gdn_loop_status_read_agent_line(&st, log_dir);
	gdn_integrity_held(buf.buf, buf.len, &held); /* integrity gate (issue 28) */
	if (a->json) {
		json_t *doc = gdn_loop_status_json(&st, now), *h = json_array();

		for (size_t i = 0; i < held.nr; i++)
			json_array_append_new(h, gdn_json_string_lossy(held.v[i]));
		json_object_set_new(doc, "held", h);
		json_object_set_new(doc, "journal", gdn_json_string_lossy(journal));
		if (gdn_json_print(doc))
			code = GDN_EXIT_FAILED;
		fflush(stdout);
		goto out;
	}
	gdn_loop_status_render_text(&st, now, &out);
	for (size_t i = 0; i < held.nr; i++)
		sbuf_addf(&out, "held for review: %s\n", held.v[i]);
	if (redraw && isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", stdout); /* a terminal: redraw in place */
	else if (redraw)
		fputc('\n', stdout);
	fwrite(out.buf, 1, out.len, stdout);
	fflush(stdout);
out:
	if (!code && a->watch && st.run_id && st.ended)
		code = -1; /* the run is over: stop watching */
	gdn_loop_status_release(&st);
	strvec_clear(&held);
	sbuf_release(&buf);
	sbuf_release(&out);
	return code;
}

static int loop_status(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct status_args a = {.interval_ms = 2000};
	struct opt opts[] = {
	    OPT_STRING_(0, "log-dir", &a.log_dir, "DIR", "the loop's log directory",
			"<repository>/.agents/logs/gdn_codex_loop"),
	    OPT_BOOL_(0, "watch", &a.watch, "redraw every --interval until the run ends or Ctrl-C"),
	    OPT_DURATION_(0, "interval", &a.interval_ms, "how often --watch redraws", "2s"),
	    OPT_BOOL_(0, "json", &a.json,
		      "print a JSON document (schema " GDN_LOOP_STATUS_SCHEMA ")"),
	    OPT_END_(),
	};
	struct gdn_err err = GDN_ERR_INIT;
	char *log_dir = NULL, *journal = NULL;
	int code = 0;

	if (!gdn_cmd_parse_opts(opts, &status_usage, argc, argv, OPT_PARSE_NO_POSITIONAL, NULL,
				&code))
		return code;
	if (a.interval_ms <= 0) {
		code = gdn_usage_error("loop status", "--interval must be positive");
		goto out;
	}
	log_dir = a.log_dir ? (a.log_dir[0] == '/' ? xstrdup(a.log_dir)
						   : xstrfmt("%s/%s", ctx->cwd, a.log_dir))
			    : gdn_cmd_loop_log_dir(ctx, &err);
	if (!log_dir) {
		code = gdn_die_err(&err);
		goto out;
	}
	journal = xstrfmt("%s/loop.jsonl", log_dir);
	for (bool first = true;; first = false) {
		code = show(&a, log_dir, journal, !first && a.watch);
		if (code || !a.watch)
			break;
		if (gdn_sleep_interruptible(a.interval_ms)) {
			int sig = gdn_proc_interrupted();

			code = GDN_EXIT_SIGNAL + (sig ? sig : SIGINT);
			break;
		}
	}
	if (code < 0)
		code = 0;
out:
	free(log_dir);
	free(journal);
	return code;
}

int cmd_loop_status(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct opt none[] = {OPT_END_()};
	struct strvec rest = STRVEC_INIT, sub = STRVEC_INIT;
	int code = 0;

	/*
	 * `loop` dispatches here on "status": parse as a dispatcher first, so
	 * that help and completion describe the subcommand's own table.
	 */
	if (!gdn_cmd_parse_opts(none, &status_usage, argc, argv, OPT_PARSE_STOP_AT_NON_OPTION,
				&rest, &code))
		goto out;
	strvec_push(&sub, "loop status");
	for (size_t i = 1; i < rest.nr; i++)
		strvec_push(&sub, rest.v[i]);
	code = loop_status((int)sub.nr, sub.v, ctx);
out:
	strvec_clear(&rest);
	strvec_clear(&sub);
	return code;
}
