/*
 * `gdnctl report`: a picture of a night of iterations. Reads the loop's
 * journal (loop.jsonl) and performance state (perf_state.json), writes
 * one self-contained HTML file atomically and prints a plain-text summary
 * (or, with --json, a JSON document). The model and renderers live in
 * src/report/; see docs/gdnctl-report.md.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/file.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/opt.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/report.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

#define JOURNAL_MAX ((size_t)1 << 30)
#define STATE_MAX   ((size_t)256 << 20)

static const struct opt_usage usage = {
    "gdnctl report [options]",
    "Report on a loop run: an HTML page with the metric per iteration, the champion line,\n"
    "each decision and the top trace deltas, and a plain-text summary (--format text),\n"
    "a JSON document (--format json, or --json) or the page itself on standard output\n"
    "(--format html: no file written; its trace links are absolute paths).\n"
    "A run of 'gdnctl loop --workers N' adds one lane per worker (agent, validation, idle),\n"
    "the busy fractions of each worker and its accelerator, and the promotions in order.",
    "Reads <log-dir>/loop.jsonl (the last run unless --run) and the performance state\n"
    "(<log-dir>/perf_state.json unless --perf-state-file; optional when absent). The\n"
    "default log directory is the loop's: <git common dir>/gdnctl/<branch>.\n"
    "Commit subjects come from the run's repository when it is still there. The HTML is\n"
    "self-contained (inline CSS and SVG, no script, no network) and written atomically.\n"
    "Exit status: 0 ok; 1 the journal is missing, unreadable or malformed (the error\n"
    "names the line), the state is malformed (or a --perf-state-file is missing), the\n"
    "run is not in the journal, or the HTML cannot be written; 2 usage error.\n"
    "--watch writes the report again each time the journal grows, until the run ends\n"
    "(its run_end event) or Ctrl-C (exit 130, 143 on SIGTERM)."};

struct report_args {
	const char *log_dir, *state_file, *output, *run;
	int json, watch, format; /* format: enum gdn_report_format */
	long interval_ms;
};

static char *abspath(const char *base, const char *p)
{
	return p[0] == '/' ? xstrdup(p) : xstrfmt("%s/%s", base, p);
}

/* The files of one report. */
struct report_paths {
	char *log_dir, *journal, *state, *output;
};

/* <log dir>/verify.json (`gdnctl loop verify`), when there is one. Returns 0 or -1 (said). */
static int add_verify(struct gdn_report *r, const char *log_dir)
{
	char *path = log_dir ? xstrfmt("%s/verify.json", log_dir) : NULL;
	struct sbuf buf = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int ret = 0;

	if (path && !sbuf_read_file(&buf, path, STATE_MAX, &err) &&
	    gdn_report_add_verify(r, buf.buf, buf.len, path, &err)) {
		gdn_error("%s", err.msg);
		ret = -1;
	}
	sbuf_release(&buf);
	free(path);
	return ret;
}

/*
 * Build the report once and write it; print the summary (or, with
 * `brief`, one line with the headline). *ended: the run has ended.
 * Returns an exit code.
 */
static int report_once(const struct report_args *a, const struct report_paths *p, bool brief,
		       bool *ended)
{
	struct gdn_report r = GDN_REPORT_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf buf = SBUF_INIT, out = SBUF_INIT;
	json_t *doc = NULL;
	int code = 0;

	gdn_report_init(&r);
	if (sbuf_read_file(&buf, p->journal, JOURNAL_MAX, &err) ||
	    gdn_report_load_journal(&r, buf.buf, buf.len, a->run, p->journal, &err)) {
		gdn_error("%s", err.msg);
		code = GDN_EXIT_FAILED;
		goto out;
	}
	*ended = r.end_reason != NULL;
	if (r.torn_last_line && !a->watch)
		gdn_warn("journal '%s': ignored an incomplete last line", p->journal);
	sbuf_reset(&buf);
	if (sbuf_read_file(&buf, p->state, STATE_MAX, &err)) {
		if (err.code != GDN_ENOTFOUND || a->state_file) {
			gdn_error("%s", err.msg);
			code = GDN_EXIT_FAILED;
			goto out;
		}
		gdn_err_clear(&err);
	} else if (gdn_report_add_state(&r, buf.buf, buf.len, p->state, &err)) {
		gdn_error("%s", err.msg);
		code = GDN_EXIT_FAILED;
		goto out;
	}
	gdn_report_add_hypotheses(&r, NULL, p->log_dir);
	if (add_verify(&r, p->log_dir)) { /* integrity gate (issue 28): loop verify's table */
		code = GDN_EXIT_FAILED;
		goto out;
	}
	gdn_report_set_link_base(&r, p->log_dir, p->output);

	gdn_report_render_html(&r, &out);
	if (!p->output) { /* --format html: the page is the output */
		if (fwrite(out.buf, 1, out.len, stdout) != out.len)
			code = GDN_EXIT_FAILED;
		goto out;
	}
	if (gdn_write_file_atomic(p->output, out.buf, out.len, &err)) {
		gdn_error("%s", err.msg);
		code = GDN_EXIT_FAILED;
		goto out;
	}
	if (a->json) {
		doc = gdn_report_json(&r);
		json_object_set_new(doc, "output", gdn_json_string_lossy(p->output));
		json_object_set_new(doc, "journal", gdn_json_string_lossy(p->journal));
		if (gdn_json_print(doc))
			code = GDN_EXIT_FAILED;
		doc = NULL;
		goto out;
	}
	sbuf_reset(&out);
	if (brief) {
		gdn_report_headline(&r, &out);
		gdn_say("report written to %s: %s", p->output, out.buf);
		goto out;
	}
	gdn_report_render_text(&r, &out);
	fwrite(out.buf, 1, out.len, stdout);
	gdn_say("report written to %s", p->output);
out:
	fflush(stdout);
	json_decref(doc);
	gdn_report_release(&r);
	sbuf_release(&buf);
	sbuf_release(&out);
	return code;
}

/* The journal's size and modification time, to see it grow (0 when it cannot be read). */
static long long journal_stamp(const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return 0;
	return (long long)st.st_size * 1000003LL + (long long)st.st_mtim.tv_sec * 1000LL +
	       st.st_mtim.tv_nsec / 1000000;
}

int cmd_report(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct report_args a = {.interval_ms = 2000};
	struct opt opts[] = {
	    OPT_STRING_(0, "log-dir", &a.log_dir, "DIR", "the loop's log directory",
			"<git common dir>/gdnctl/<branch>"),
	    OPT_STRING_(0, "perf-state-file", &a.state_file, "PATH", "the performance state file",
			"<log-dir>/perf_state.json"),
	    OPT_STRING_('o', "output", &a.output, "FILE", "where to write the HTML report",
			"<log-dir>/report.html"),
	    OPT_STRING_(0, "run", &a.run, "ID", "report on this run of the journal",
			"the last run"),
	    OPT_ENUM_(0, "format", &a.format, gdn_report_format_enum,
		      "what to print: the text summary, the HTML page (no file) or JSON", "text"),
	    OPT_BOOL_(0, "json", &a.json,
		      "same as --format json (a JSON document, schema gdnctl.report.v1)"),
	    OPT_BOOL_(0, "watch", &a.watch,
		      "write the report again as the journal grows, until the run ends"),
	    OPT_DURATION_(0, "interval", &a.interval_ms, "how often --watch looks at the journal",
			  "2s"),
	    OPT_END_(),
	};
	struct gdn_err err = GDN_ERR_INIT;
	struct report_paths p = {0};
	bool ended = false;
	long long stamp;
	int code = 0;

	if (!gdn_cmd_parse_opts(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, NULL, &code))
		return code;
	if (a.interval_ms <= 0)
		return gdn_usage_error("report", "--interval must be positive");
	if (a.json && a.format != GDN_REPORT_FORMAT_TEXT && a.format != GDN_REPORT_FORMAT_JSON)
		return gdn_usage_error("report", "--json contradicts --format %s",
				       gdn_enum_name(gdn_report_format_enum, a.format));
	if (a.json)
		a.format = GDN_REPORT_FORMAT_JSON;
	a.json = a.format == GDN_REPORT_FORMAT_JSON;
	if (a.format == GDN_REPORT_FORMAT_HTML && (a.output || a.watch))
		return gdn_usage_error(
		    "report", "--format html prints the page on standard output: drop %s",
		    a.output ? "--output (it writes the page to a file)" : "--watch");
	p.log_dir = a.log_dir ? abspath(ctx->cwd, a.log_dir) : gdn_cmd_loop_log_dir(ctx, &err);
	if (!p.log_dir) {
		code = gdn_die_err(&err);
		goto out;
	}
	p.journal = xstrfmt("%s/loop.jsonl", p.log_dir);
	p.state = a.state_file ? abspath(ctx->cwd, a.state_file)
			       : xstrfmt("%s/perf_state.json", p.log_dir);
	if (a.format != GDN_REPORT_FORMAT_HTML)
		p.output =
		    a.output ? abspath(ctx->cwd, a.output) : xstrfmt("%s/report.html", p.log_dir);

	stamp = journal_stamp(p.journal);
	code = report_once(&a, &p, false, &ended);
	while (!code && a.watch && !ended) {
		long long now;

		if (gdn_sleep_interruptible(a.interval_ms)) {
			int sig = gdn_proc_interrupted();

			code = GDN_EXIT_SIGNAL + (sig ? sig : SIGINT);
			break;
		}
		now = journal_stamp(p.journal);
		if (now == stamp)
			continue;
		stamp = now;
		code = report_once(&a, &p, !a.json, &ended);
	}
out:
	free(p.log_dir);
	free(p.journal);
	free(p.state);
	free(p.output);
	return code;
}
