/*
 * gdnctl trace: summarise and compare profiler traces (per-op device time).
 *
 *   gdnctl trace summary [options] INPUT
 *   gdnctl trace diff [options] BEFORE AFTER
 *
 * INPUT is a trace file (gzip or plain JSON), "-" for standard input, or a
 * profile directory. Exit codes: 0 ok (also "no device ops found" in a
 * valid trace, said as a warning), 1 unreadable or invalid input, 2 usage.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"

struct trace_args {
	long top;
	int by, format; /* enum gdn_trace_by, enum gdn_trace_format */
	int json, single_thread;
	struct strvec devices, threads, cats, rest;
};

static const struct opt_usage trace_usage = {
    "gdnctl trace summary [options] INPUT\ngdnctl trace diff [options] BEFORE AFTER",
    "Summarise and compare profiler traces: device time per op, category, source and device.",
    "Subcommands:\n"
    "    summary    the hotspots of one trace (see 'gdnctl trace summary -h')\n"
    "    diff       what changed between two traces (see 'gdnctl trace diff -h')\n"
    "\n"
    "INPUT is a perfetto_trace.json.gz, *.trace.json.gz or .json file (gzip is detected\n"
    "by its magic bytes), '-' for standard input, or a profile directory (the newest\n"
    "plugins/profile/<timestamp>/ run is read). Exit status: 0 ok, 1 unreadable or\n"
    "invalid input, 2 usage."};

static const struct opt_usage summary_usage = {
    "gdnctl trace summary [options] INPUT",
    "Summarise one trace: self and total device time per op, category, source or device.",
    "Selection, unless told otherwise: complete events on threads named 'XLA Ops' of\n"
    "processes whose name contains '/device:' (JAX/XLA on TPU and GPU); when the trace\n"
    "has no such threads, events with cat kernel, gpu_memcpy or gpu_memset (Kineto).\n"
    "Self time is the duration minus the time of nested or later overlapping events\n"
    "on the same track. --json is the same as --format json (schema\n"
    "gdnctl.trace_summary.v1); --top limits JSON arrays only when given."};

static const struct opt_usage diff_usage = {
    "gdnctl trace diff [options] BEFORE AFTER",
    "Compare two traces: self time per op, category and source, before and after.",
    "Values are per step when both traces have steps (a 'Steps' thread, else the count\n"
    "of the dominant 'XLA Modules' module). Rows are sorted by the size of the change;\n"
    "ops that appeared or vanished are marked. --json is the same as --format json\n"
    "(schema gdnctl.trace_diff.v1)."};

#define SELECTION_OPTS(a)                                                                       \
	OPT_GROUP_("Selection"),                                                                \
	    OPT_LIST_(0, "device", &(a)->devices, "NAME",                                       \
		      "only this device: TPU:0, a pid, or part of the process name"),           \
	    OPT_LIST_(0, "thread", &(a)->threads, "NAME",                                       \
		      "events of threads with this exact name (instead of 'XLA Ops')"),         \
	    OPT_LIST_(0, "cat", &(a)->cats, "NAME", "events with this exact category ('cat')"), \
	    OPT_BOOL_F(0, "single-thread", &(a)->single_thread,                                 \
		       "inflate on the main thread (for benchmarks)", OPT_HIDDEN)

#define OUTPUT_OPTS(a)                                                                             \
	OPT_GROUP_("Output"),                                                                      \
	    OPT_INT_(0, "top", &(a)->top, "N", "show the first N rows (0: all)", "20", 0,          \
		     LONG_MAX),                                                                    \
	    OPT_ENUM_(0, "format", &(a)->format, gdn_trace_format_enum, "output format", "table"), \
	    OPT_BOOL_(0, "json", &(a)->json, "same as --format json")

static void args_init(struct trace_args *a)
{
	memset(a, 0, sizeof(*a));
	a->top = 20;
	a->by = GDN_TRACE_BY_OP;
	a->format = GDN_TRACE_TABLE;
	strvec_init(&a->devices);
	strvec_init(&a->threads);
	strvec_init(&a->cats);
	strvec_init(&a->rest);
}

static void args_release(struct trace_args *a)
{
	strvec_clear(&a->devices);
	strvec_clear(&a->threads);
	strvec_clear(&a->cats);
	strvec_clear(&a->rest);
}

static void trace_opts(const struct trace_args *a, struct gdn_trace_opts *o)
{
	*o = (struct gdn_trace_opts)GDN_TRACE_OPTS_INIT;
	o->devices = a->devices.v;
	o->threads = a->threads.v;
	o->cats = a->cats.v;
	o->no_thread = a->single_thread;
}

static bool top_seen(const struct opt *opts)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, "top"))
			return o->seen > 0;
	return false;
}

/* Resolve and read one input. Returns 0 or an exit code (the error is printed). */
static int load(const char *arg, const struct gdn_trace_opts *o, struct gdn_trace_summary *s)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *path = NULL;
	bool from_dir = false;
	int code = 0;

	if (gdn_trace_resolve_input(arg, &path, &from_dir, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	if (from_dir)
		fprintf(stderr, "[gdnctl] reading %s\n", path);
	if (gdn_trace_summarize_file(path, o, s, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	for (size_t i = 0; i < s->warnings.nr; i++)
		gdn_warn("'%s': %s", path, s->warnings.v[i]);
	if (!s->events_selected)
		gdn_warn("no device ops found in '%s' (%llu complete events; choose events with "
			 "--thread or --cat)",
			 path, (unsigned long long)s->events_complete);
out:
	free(path);
	return code;
}

static int print_out(struct sbuf *out)
{
	return fwrite(out->buf, 1, out->len, stdout) == out->len ? 0 : GDN_EXIT_FAILED;
}

static int cmd_trace_summary(int argc, const char **argv)
{
	struct trace_args a;
	struct opt opts[] = {
	    SELECTION_OPTS(&a),
	    OUTPUT_OPTS(&a),
	    OPT_ENUM_(0, "by", &a.by, gdn_trace_by_enum, "group rows by", "op"),
	    OPT_END_(),
	};
	struct gdn_trace_summary s;
	struct gdn_trace_opts o;
	struct sbuf out = SBUF_INIT;
	enum gdn_trace_by by;
	int code = GDN_EXIT_OK;

	args_init(&a);
	gdn_trace_summary_init(&s);
	if (!gdn_cmd_parse_opts(opts, &summary_usage, argc, argv, 0, &a.rest, &code))
		goto out;
	if (a.rest.nr != 1) {
		if (a.rest.nr)
			gdn_error("trace summary takes one INPUT, got %zu", a.rest.nr);
		else
			gdn_error("trace summary needs an INPUT");
		fprintf(stderr, "[gdnctl] see 'gdnctl trace summary -h'\n");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	trace_opts(&a, &o);
	code = load(a.rest.v[0], &o, &s);
	if (code)
		goto out;
	by = (enum gdn_trace_by)a.by;
	if (a.json || a.format == GDN_TRACE_JSON) {
		/* new reference, handed to gdn_json_print */
		json_t *doc = gdn_trace_summary_json(&s, top_seen(opts) ? (size_t)a.top : 0);

		code = gdn_json_print(doc) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
		goto out;
	}
	if (a.format == GDN_TRACE_MARKDOWN)
		gdn_trace_render_markdown(&s, by, (size_t)a.top, &out);
	else
		gdn_trace_render_table(&s, by, (size_t)a.top, &out);
	code = print_out(&out);
out:
	sbuf_release(&out);
	gdn_trace_summary_release(&s);
	args_release(&a);
	return code;
}

static int cmd_trace_diff(int argc, const char **argv)
{
	struct trace_args a;
	struct opt opts[] = {
	    SELECTION_OPTS(&a),
	    OUTPUT_OPTS(&a),
	    OPT_END_(),
	};
	struct gdn_trace_summary before, after;
	struct gdn_trace_diff d;
	struct gdn_trace_opts o;
	struct sbuf out = SBUF_INIT;
	int code = GDN_EXIT_OK;

	args_init(&a);
	gdn_trace_summary_init(&before);
	gdn_trace_summary_init(&after);
	gdn_trace_diff_init(&d);
	if (!gdn_cmd_parse_opts(opts, &diff_usage, argc, argv, 0, &a.rest, &code))
		goto out;
	if (a.rest.nr != 2) {
		gdn_error("trace diff takes two inputs, BEFORE and AFTER, got %zu", a.rest.nr);
		fprintf(stderr, "[gdnctl] see 'gdnctl trace diff -h'\n");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (!strcmp(a.rest.v[0], "-") && !strcmp(a.rest.v[1], "-")) {
		gdn_error("only one of BEFORE and AFTER can be '-' (standard input)");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	trace_opts(&a, &o);
	code = load(a.rest.v[0], &o, &before);
	if (!code)
		code = load(a.rest.v[1], &o, &after);
	if (code)
		goto out;
	gdn_trace_diff_compute(&d, &before, &after);
	if (a.json || a.format == GDN_TRACE_JSON) {
		/* new reference, handed to gdn_json_print */
		json_t *doc = gdn_trace_diff_json(&d, top_seen(opts) ? (size_t)a.top : 0);

		code = gdn_json_print(doc) ? GDN_EXIT_FAILED : GDN_EXIT_OK;
		goto out;
	}
	if (a.format == GDN_TRACE_MARKDOWN)
		gdn_trace_diff_render_markdown(&d, (size_t)a.top, &out);
	else
		gdn_trace_diff_render_table(&d, (size_t)a.top, &out);
	code = print_out(&out);
out:
	sbuf_release(&out);
	gdn_trace_diff_release(&d);
	gdn_trace_summary_release(&before);
	gdn_trace_summary_release(&after);
	args_release(&a);
	return code;
}

int cmd_trace(int argc, const char **argv, struct gdn_ctx *ctx)
{
	struct opt opts[] = {OPT_END_()};
	struct strvec rest = STRVEC_INIT;
	struct strvec sub = STRVEC_INIT;
	int code = GDN_EXIT_OK;

	(void)ctx;
	if (!gdn_cmd_parse_opts(opts, &trace_usage, argc, argv, OPT_PARSE_STOP_AT_NON_OPTION, &rest,
				&code))
		goto out;
	if (!rest.nr) {
		struct sbuf help = SBUF_INIT;

		opt_help(opts, &trace_usage, &help);
		fwrite(help.buf, 1, help.len, stderr);
		sbuf_release(&help);
		code = GDN_EXIT_USAGE;
		goto out;
	}
	strvec_pushf(&sub, "trace %s", rest.v[0]);
	for (size_t i = 1; i < rest.nr; i++)
		strvec_push(&sub, rest.v[i]);
	if (!strcmp(rest.v[0], "summary")) {
		code = cmd_trace_summary((int)sub.nr, sub.v);
	} else if (!strcmp(rest.v[0], "diff")) {
		code = cmd_trace_diff((int)sub.nr, sub.v);
	} else {
		gdn_error("'%s' is not a trace subcommand (summary, diff); see 'gdnctl trace -h'",
			  rest.v[0]);
		code = GDN_EXIT_USAGE;
	}
out:
	strvec_clear(&sub);
	strvec_clear(&rest);
	return code;
}
