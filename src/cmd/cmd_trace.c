/*
 * gdnctl trace: summarise and compare profiler traces (per-op device time).
 *
 *   gdnctl trace summary [options] INPUT
 *   gdnctl trace diff [options] BEFORE AFTER
 *
 * INPUT is a trace file (gzip or plain JSON), "-" for standard input, a
 * profile directory, or a source spelling (gs://, wandb:, wandb-artifact:,
 * hf:, a W&B run URL) fetched into ~/.cache/gdnctl/traces first. Exit codes: 0 ok (also "no device
 * ops found" in a valid trace, said as a warning), 1 unreadable or invalid input, 2 usage.
 */
#include "gdnctl/compat.h"
#include <ftw.h>
#include <malloc.h>
#include "gdnctl/cmd.h"
#include "gdnctl/err.h"
#include "gdnctl/exitcode.h"
#include "gdnctl/file.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/proc.h"
#include "gdnctl/source.h"
#include "gdnctl/trace.h"
#include "gdnctl/trace_fetch.h"
#include "gdnctl/xalloc.h"

struct trace_args {
	long top, top_k;
	int by, format; /* enum gdn_trace_by, enum gdn_trace_format */
	const char *normalize;
	int json, single_thread, device_span, input, wide;
	struct strvec devices, threads, cats, rest;
};

static const struct opt_usage trace_usage = {
    "gdnctl trace summary [options] INPUT\ngdnctl trace diff [options] BEFORE AFTER",
    "Summarise and compare profiler traces: device time per op, category, source and device.",
    "Subcommands:\n"
    "    summary    the hotspots of one trace (see 'gdnctl trace summary -h')\n"
    "    diff       what changed between two traces (see 'gdnctl trace diff -h')\n"
    "\n"
    "INPUT is a perfetto_trace.json.gz, *.trace.json.gz or .json file, an XPlane\n"
    "(<host>.xplane.pb; several for several hosts), gzip or not (detected by content),\n"
    "'-' for standard input (JSON only), or a profile directory (the newest\n"
    "plugins/profile/<timestamp>/ run is read). INPUT may also be a source:\n"
    "gs://BUCKET/PREFIX, wandb:ENTITY/PROJECT/RUN_ID[@ALIAS], a W&B run URL,\n"
    "wandb-artifact:ENTITY/PROJECT/NAME:ALIAS or hf:ORG/REPO[/PATH] (see 'gdnctl\n"
    "download-trace -h'): it is downloaded to ~/.cache/gdnctl/traces/ (under\n"
    "$XDG_CACHE_HOME when set), keyed by source, then read. Exit status: 0 ok,\n"
    "1 unreadable or invalid input, 2 usage, 5 network, 130/143 interrupted."};

static const struct opt_usage summary_usage = {
    "gdnctl trace summary [options] INPUT\ngdnctl trace summary [options] HOST.xplane.pb...",
    "Summarise one trace: self and total device time per op, category, source or device.",
    "Selection, unless told otherwise, the same in the XPlane and its JSON twins: the\n"
    "'Stream #N' threads (lines) of '/device:GPU' processes; the 'XLA Ops' and 'Sparse\n"
    "Core Ops' threads of the other '/device:' processes (TPU); when the trace has no\n"
    "such threads, events with cat kernel, gpu_memcpy or gpu_memset (Kineto).\n"
    "Steps: a device 'Steps' thread; else the host's step annotations (events with a\n"
    "step_num, e.g. jax.profiler.StepTraceAnnotation); else the dominant XLA module.\n"
    "A profile directory with an XPlane is read from the XPlane (--input-format).\n"
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

/*
 * --json reals: rounded to 9 decimals (picoseconds of the _ms fields, below
 * the resolution of the _us ones), so no 792.60631699999999.
 */
#define TRACE_JSON_DECIMALS 9

#define SELECTION_OPTS(a)                                                                        \
	OPT_GROUP_("Selection"),                                                                 \
	    OPT_LIST_(0, "device", &(a)->devices, "NAME",                                        \
		      "only this device: TPU:0, a pid, or part of the process name"),            \
	    OPT_LIST_(0, "thread", &(a)->threads, "NAME",                                        \
		      "events of threads with this exact name (instead of 'XLA Ops')"),          \
	    OPT_LIST_(0, "cat", &(a)->cats, "NAME", "events with this exact category ('cat')"),  \
	    OPT_ENUM_(0, "input-format", &(a)->input, gdn_trace_input_enum,                      \
		      "a profile directory: read its XPlane or its JSON", "auto"),               \
	    OPT_BOOL_(0, "device-span", &(a)->device_span,                                       \
		      "XPlane: time events by their device_offset_ps/device_duration_ps stats"), \
	    OPT_BOOL_F(0, "single-thread", &(a)->single_thread,                                  \
		       "inflate on the main thread (for benchmarks)", OPT_HIDDEN)

#define OUTPUT_OPTS(a)                                                                             \
	OPT_GROUP_("Output"),                                                                      \
	    OPT_INT_(0, "top", &(a)->top, "N", "show the first N rows (0: all)", "20", 0,          \
		     LONG_MAX),                                                                    \
	    OPT_ENUM_(0, "format", &(a)->format, gdn_trace_format_enum, "output format", "table"), \
	    OPT_BOOL_(0, "json", &(a)->json, "same as --format json"),                             \
	    OPT_BOOL_(0, "wide", &(a)->wide,                                                       \
		      "never shorten names to fit the terminal (they are whole when piped)")

static void args_init(struct trace_args *a)
{
	memset(a, 0, sizeof(*a));
	a->top = 20;
	a->top_k = 20;
	a->by = GDN_TRACE_BY_FAMILY;
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
	o->device_span = a->device_span;
	o->input = a->input;
}

static bool top_seen(const struct opt *opts)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, "top"))
			return o->seen > 0;
	return false;
}

static void have_list(const char *what, const struct gdn_trace_rows *rows)
{
	struct sbuf sb = SBUF_INIT;

	for (size_t i = 0; i < rows->nr && i < 10; i++) {
		sbuf_addf(&sb, "%s'%s' (", i ? ", " : "", rows->v[i].key);
		gdn_ps_fmt_ms(&sb, rows->v[i].total);
		sbuf_adds(&sb, " ms)");
	}
	if (rows->nr > 10)
		sbuf_addf(&sb, ", and %zu more", rows->nr - 10);
	fprintf(stderr, "[gdnctl]   %s: %s\n", what, rows->nr ? sb.buf : "(none)");
	sbuf_release(&sb);
}

/* An explicit --device/--thread/--cat that selected nothing: say what there is. */
static int nothing_matched(const char *path, const struct gdn_trace_opts *o,
			   const struct gdn_trace_summary *s)
{
	struct sbuf what = SBUF_INIT;
	const char *const *lists[] = {o->devices, o->threads, o->cats};
	const char *names[] = {"--device", "--thread", "--cat"};

	for (int i = 0; i < 3; i++)
		for (const char *const *v = lists[i]; v && *v; v++)
			sbuf_addf(&what, "%s%s '%s'", what.len ? ", " : "", names[i], *v);
	gdn_error("nothing in '%s' matches %s; the trace has (top 10 by time):", path, what.buf);
	have_list("devices", &s->have_devices);
	have_list("threads", &s->have_threads);
	have_list("categories", &s->have_cats);
	sbuf_release(&what);
	return GDN_EXIT_FAILED;
}

/*
 * Resolve and read the inputs: one file, "-" or profile directory, or several
 * XPlane files (one per host). Returns 0 or an exit code (the error is printed).
 */
/* What a source fetch means for the exit status (the error is printed). */
static int fetch_failed(int ret, const struct gdn_err *err)
{
	if (ret == GDN_EINTR && gdn_proc_interrupted()) {
		gdn_error("%s", err->msg);
		return GDN_EXIT_SIGNAL + gdn_proc_interrupted();
	}
	return gdn_die_err(err);
}

/* Before a fetch downloads: say what it waits for. */
static void fetch_listed(void *ctx, const struct gdn_fetch_result *r)
{
	(void)ctx;
	if (r->files.nr)
		fprintf(stderr,
			"[gdnctl] %s: fetching %zu file%s (or finding them verified) in %s\n",
			r->source, r->files.nr, r->files.nr == 1 ? "" : "s", r->dest_dir);
}

/*
 * A source spelling: fetch it (into dest_dir, NULL: the cache) and choose
 * what to read: *path, and xplanes when the traces are XPlane files.
 * `resolved` (may be NULL) gets what the source resolved to. 0 or the exit
 * code (printed).
 */
static int fetch_input(const char *spec, const struct gdn_fetch_opts *base, const char *dest_dir,
		       bool xplane_first, char **path, struct strvec *xplanes, char **resolved)
{
	struct gdn_fetch_opts o = *base;
	struct gdn_fetch_result res;
	struct gdn_err err = GDN_ERR_INIT;
	int ret, code = 0;

	gdn_fetch_result_init(&res);
	o.include_xplane = true;
	o.on_listed = fetch_listed;
	ret = gdn_trace_fetch_ex(spec, dest_dir, &o, &res, NULL, &err);
	if (ret) {
		code = fetch_failed(ret, &err);
		goto out;
	}
	fprintf(stderr, "[gdnctl] %s%s%s: %zu file%s in %s\n", spec, res.resolved ? " -> " : "",
		res.resolved ? res.resolved : "", res.local_paths.nr,
		res.local_paths.nr == 1 ? "" : "s", res.dest_dir ? res.dest_dir : "?");
	if (resolved && res.resolved)
		*resolved = xstrdup(res.resolved);
	if (xplane_first) {
		/* The original xprof-compare-runs: the first *.xplane.pb, sorted. */
		const char *first = NULL;

		for (size_t i = 0; i < res.local_paths.nr; i++) {
			const char *p = res.local_paths.v[i];
			size_t len = strlen(p);

			if (len >= 10 && !strcmp(p + len - 10, ".xplane.pb") &&
			    (!first || strcmp(p, first) < 0))
				first = p;
		}
		if (first) {
			*path = xstrdup(first);
			goto out;
		}
	}
	if (gdn_trace_fetch_pick(&res.local_paths, path, xplanes, &err)) {
		gdn_error("'%s': %s", spec, err.msg);
		code = GDN_EXIT_FAILED;
	}
out:
	gdn_fetch_result_release(&res);
	return code;
}

static int load(const char *const *args, size_t nargs, const struct gdn_trace_opts *o,
		struct gdn_trace_summary *s);

/* load(), for an argument that may be a source spelling. */
static int load_any(const char *arg, const struct gdn_fetch_opts *fo,
		    const struct gdn_trace_opts *o, struct gdn_trace_summary *s)
{
	struct strvec xplanes = STRVEC_INIT;
	char *path = NULL;
	int code;

	if (!strcmp(arg, "-") || !gdn_fetch_source_find(arg, fo) || !access(arg, F_OK))
		return load(&arg, 1, o, s);
	code = fetch_input(arg, fo, NULL, false, &path, &xplanes, NULL);
	if (!code && xplanes.nr > 1)
		code = load(xplanes.v, xplanes.nr, o, s);
	else if (!code)
		code = load((const char *const *)&path, 1, o, s);
	strvec_clear(&xplanes);
	free(path);
	return code;
}

static int load(const char *const *args, size_t nargs, const struct gdn_trace_opts *o,
		struct gdn_trace_summary *s)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct strvec xplanes = STRVEC_INIT;
	char *path = NULL;
	bool from_dir = false;
	int code = 0;

	if (nargs > 1) {
		for (size_t i = 0; i < nargs; i++) {
			bool xp = false;

			if (gdn_xplane_sniff_file(args[i], &xp, &err) || !xp) {
				code = gdn_usage_error("trace summary",
						       "trace summary takes one INPUT, or several "
						       "XPlane files (one per host): '%s' is not "
						       "one%s%s",
						       args[i], err.msg[0] ? ": " : "", err.msg);
				goto out;
			}
			strvec_push(&xplanes, args[i]);
		}
		path = xstrdup(args[0]);
	} else if (gdn_trace_resolve_inputs(args[0], (enum gdn_trace_input)o->input, &path,
					    &xplanes, &from_dir, &err)) {
		code = gdn_die_err(&err);
		goto out;
	}
	if (xplanes.nr) {
		if (from_dir)
			fprintf(stderr, "[gdnctl] reading %zu XPlane file%s: %s%s\n", xplanes.nr,
				xplanes.nr == 1 ? "" : "s", xplanes.v[0],
				xplanes.nr > 1 ? " ..." : "");
		if (gdn_xplane_summarize_files(xplanes.v, xplanes.nr, o, s, &err)) {
			code = gdn_die_err(&err);
			goto out;
		}
	} else {
		if (from_dir)
			fprintf(stderr, "[gdnctl] reading %s\n", path);
		if (gdn_trace_summarize_file(path, o, s, &err)) {
			code = gdn_die_err(&err);
			goto out;
		}
	}
	for (size_t i = 0; i < s->warnings.nr; i++)
		gdn_warn("'%s': %s", path, s->warnings.v[i]);
	if (!s->events_selected && ((o->devices && o->devices[0]) ||
				    (o->threads && o->threads[0]) || (o->cats && o->cats[0]))) {
		code = nothing_matched(path, o, s);
		goto out;
	}
	if (!s->events_selected)
		gdn_warn("no device ops found in '%s' (%llu complete events; choose events with "
			 "--thread or --cat)",
			 path, (unsigned long long)s->events_complete);
out:
	strvec_clear(&xplanes);
	free(path);
	return code;
}

static int parse_ms(const char *s, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out) || *out < 0) {
		gdn_error(
		    "--normalize-positive-deltas-ms: '%s' is not a number of milliseconds >= 0", s);
		return -1;
	}
	return 0;
}

static const char *kind(const struct gdn_trace_summary *s)
{
	switch (s->mode) {
	case GDN_TRACE_MODE_XLA:
		return "an XLA trace";
	case GDN_TRACE_MODE_KINETO:
		return "a Kineto trace";
	default:
		return NULL;
	}
}

/* An XLA trace against a Kineto one: the ops are not comparable. */
static void warn_unlike(const struct gdn_trace_summary *b, const struct gdn_trace_summary *a)
{
	const char *kb = kind(b), *ka = kind(a);

	if (kb && ka && strcmp(kb, ka))
		gdn_warn("BEFORE ('%s') is %s and AFTER ('%s') is %s: their ops, categories "
			 "and sources are not comparable",
			 b->path ? b->path : "-", kb, a->path ? a->path : "-", ka);
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
	    OPT_ENUM_(0, "by", &a.by, gdn_trace_by_enum,
		      "group rows by (family: ops without their .N, or deduplicated_name)",
		      "family"),
	    OPT_END_(),
	};
	struct gdn_trace_summary s;
	struct gdn_trace_opts o;
	struct sbuf out = SBUF_INIT;
	enum gdn_trace_by by;
	int code = GDN_EXIT_OK;

	/*
	 * A summary allocates and frees tens of thousands of small blocks (the
	 * JSON document): no fast bins (malloc would merge them all at once at
	 * the next big request), and a heap that keeps 16 MB at its top instead
	 * of giving pages back to the kernel and faulting them in again.
	 */
	mallopt(M_MXFAST, 0);
	mallopt(M_TOP_PAD, 16 << 20);
	args_init(&a);
	gdn_trace_summary_init(&s);
	if (!gdn_cmd_parse_opts(opts, &summary_usage, argc, argv, 0, &a.rest, &code))
		goto out;
	if (!a.rest.nr) {
		code = gdn_usage_error("trace summary", "trace summary needs an INPUT");
		goto out;
	}
	trace_opts(&a, &o);
	if (a.rest.nr == 1) {
		struct gdn_fetch_opts fo = GDN_FETCH_OPTS_INIT;

		code = load_any(a.rest.v[0], &fo, &o, &s);
	} else {
		code = load(a.rest.v, a.rest.nr, &o, &s);
	}
	if (code)
		goto out;
	by = (enum gdn_trace_by)a.by;
	if (a.json || a.format == GDN_TRACE_JSON) {
		/* new reference, handed to gdn_json_print_rounded */
		json_t *doc = gdn_trace_summary_json(&s, top_seen(opts) ? (size_t)a.top : 0);

		code = gdn_json_print_rounded(doc, TRACE_JSON_DECIMALS) ? GDN_EXIT_FAILED
									: GDN_EXIT_OK;
		goto out;
	}
	if (a.format == GDN_TRACE_MARKDOWN)
		gdn_trace_render_markdown(&s, by, (size_t)a.top, &out);
	else
		gdn_trace_render_table_width(&s, by, (size_t)a.top,
					     a.wide ? 0 : gdn_cmd_term_width(), &out);
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
	    OPT_ENUM_(0, "by", &a.by, gdn_trace_diff_by_enum,
		      "the op rows of the table: family (renumbered ops match), op, framework-op; "
		      "or only category or source",
		      "family"),
	    OPT_GROUP_("xprof-compare payload (--json)"),
	    OPT_INT_(0, "top-k", &a.top_k, "N", "rows of each delta list (0: all)", "20", 0,
		     LONG_MAX),
	    OPT_STRING_(0, "normalize-positive-deltas-ms", &a.normalize, "MS",
			"rescale the positive deltas so they sum to MS", NULL),
	    OPT_END_(),
	};
	struct gdn_trace_summary before, after;
	double normalize_ms = 0;
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
		code = gdn_usage_error("trace diff",
				       "trace diff takes two inputs, BEFORE and AFTER, got %zu",
				       a.rest.nr);
		goto out;
	}
	if (!strcmp(a.rest.v[0], "-") && !strcmp(a.rest.v[1], "-")) {
		gdn_error("only one of BEFORE and AFTER can be '-' (standard input)");
		code = GDN_EXIT_USAGE;
		goto out;
	}
	if (a.normalize && parse_ms(a.normalize, &normalize_ms)) {
		code = GDN_EXIT_USAGE;
		goto out;
	}
	trace_opts(&a, &o);
	{
		struct gdn_fetch_opts fo = GDN_FETCH_OPTS_INIT;

		code = load_any(a.rest.v[0], &fo, &o, &before);
		if (!code)
			code = load_any(a.rest.v[1], &fo, &o, &after);
	}
	if (code)
		goto out;
	warn_unlike(&before, &after);
	d.by = (enum gdn_trace_by)a.by;
	gdn_trace_diff_compute(&d, &before, &after);
	if (a.json || a.format == GDN_TRACE_JSON) {
		/* new reference, handed to gdn_json_print_rounded */
		json_t *doc = gdn_trace_diff_json(&d, top_seen(opts) ? (size_t)a.top : 0);

		gdn_trace_xprof_payload(doc, &before, &after, (size_t)a.top_k, a.normalize != NULL,
					normalize_ms);
		code = gdn_json_print_rounded(doc, TRACE_JSON_DECIMALS) ? GDN_EXIT_FAILED
									: GDN_EXIT_OK;
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

static const struct opt_usage xprof_usage = {
    "gdnctl xprof-compare --before-xplane FILE --after-xplane FILE [options]",
    "Compare two XPlane profiles: the original gdnctl.py xprof-compare, run locally.",
    "Prints the original payload (framework_op_stats, op_profile_category,\n"
    "derived_metrics; milliseconds of self time) as JSON with sorted keys. The same\n"
    "payload is part of 'gdnctl trace diff --json'. The files may be XPlane (.xplane.pb,\n"
    "plain or gzip) or trace-event JSON. No dev TPU, ssh or scp is used: --cluster,\n"
    "--tpu-name, --remote-stage-dir, --sync-repo and --keep-remote are accepted and\n"
    "ignored. Exit status: 0 ok, 1 missing or invalid input, 2 usage."};

int cmd_xprof_compare(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *before_path = NULL, *after_path = NULL, *output = NULL, *normalize = NULL;
	const char *cluster = NULL, *tpu_name = NULL, *stage = NULL;
	int sync_repo = 0, keep_remote = 0;
	long top_k = 20;
	struct opt opts[] = {
	    OPT_STRING_(0, "before-xplane", &before_path, "FILE", "the profile before (required)",
			NULL),
	    OPT_STRING_(0, "after-xplane", &after_path, "FILE", "the profile after (required)",
			NULL),
	    OPT_INT_(0, "top-k", &top_k, "N", "rows of each delta list (0: all)", "20", 0,
		     LONG_MAX),
	    OPT_STRING_(0, "normalize-positive-deltas-ms", &normalize, "MS",
			"rescale the positive deltas so they sum to MS", NULL),
	    OPT_STRING_(0, "output", &output, "FILE", "write the JSON there and print the path",
			NULL),
	    OPT_GROUP_("No longer needed (accepted, ignored: the comparison runs locally)"),
	    OPT_STRING_(0, "cluster", &cluster, "ZONE", "was: the dev TPU's cluster", NULL),
	    OPT_STRING_(0, "tpu-name", &tpu_name, "NAME", "was: the held dev TPU", NULL),
	    OPT_STRING_(0, "remote-stage-dir", &stage, "DIR", "was: the remote staging directory",
			NULL),
	    OPT_BOOL_(0, "sync-repo", &sync_repo, "was: sync the repository to the dev TPU first"),
	    OPT_BOOL_(0, "keep-remote", &keep_remote, "was: keep the remote staging directory"),
	    OPT_END_(),
	};
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary before, after;
	struct strvec rest = STRVEC_INIT;
	double normalize_ms = 0;
	json_t *doc = NULL;
	char *text = NULL;
	int code = GDN_EXIT_OK;

	(void)ctx;
	gdn_trace_summary_init(&before);
	gdn_trace_summary_init(&after);
	if (!gdn_cmd_parse_opts(opts, &xprof_usage, argc, argv, 0, &rest, &code))
		goto out;
	if (rest.nr) {
		code = gdn_usage_error("xprof-compare",
				       "xprof-compare takes no arguments, got '%s'", rest.v[0]);
		goto out;
	}
	for (const struct opt *op = opts; op->type != OPT_END; op++)
		if (op->seen && op->long_name &&
		    (!strcmp(op->long_name, "cluster") || !strcmp(op->long_name, "tpu-name") ||
		     !strcmp(op->long_name, "remote-stage-dir") ||
		     !strcmp(op->long_name, "sync-repo") || !strcmp(op->long_name, "keep-remote")))
			gdn_warn("--%s is no longer needed: xprof-compare reads the files locally "
				 "(no dev TPU)",
				 op->long_name);
	if (!before_path || !after_path) {
		code = gdn_usage_error("xprof-compare",
				       "xprof-compare needs --before-xplane and --after-xplane");
		goto out;
	}
	if (normalize && parse_ms(normalize, &normalize_ms)) {
		code = GDN_EXIT_USAGE;
		goto out;
	}
	for (int i = 0; i < 2; i++) {
		const char *p = i ? after_path : before_path;

		if (access(p, R_OK)) {
			gdn_error("Missing --%s-xplane file: %s", i ? "after" : "before", p);
			code = GDN_EXIT_FAILED;
			goto out;
		}
	}
	code = load(&before_path, 1, &o, &before);
	if (!code)
		code = load(&after_path, 1, &o, &after);
	if (code)
		goto out;
	doc = json_object();
	gdn_trace_xprof_payload(doc, &before, &after, (size_t)top_k, normalize != NULL,
				normalize_ms);
	text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
	if (!text) {
		code = GDN_EXIT_FAILED;
		goto out;
	}
	if (output) {
		struct gdn_err err = GDN_ERR_INIT;
		struct sbuf sb = SBUF_INIT;

		sbuf_addf(&sb, "%s\n", text);
		if (gdn_write_file_atomic(output, sb.buf, sb.len, &err))
			code = gdn_die_err(&err);
		else
			printf("%s\n", output);
		sbuf_release(&sb);
	} else {
		printf("%s\n", text);
	}
out:
	free(text);
	json_decref(doc);
	strvec_clear(&rest);
	gdn_trace_summary_release(&before);
	gdn_trace_summary_release(&after);
	return code;
}

static const struct opt_usage xprof_runs_usage = {
    "gdnctl xprof-compare-runs --before-run-target RUN --after-run-target RUN [options]",
    "Compare the profiles of two W&B runs: the original gdnctl.py xprof-compare-runs,\n"
    "run locally (the same as 'gdnctl trace diff wandb:E/P/A wandb:E/P/B --json').",
    "RUN is a run id (with --entity and --project), ENTITY/PROJECT/RUN_ID, a W&B run\n"
    "URL, or any source spelling of 'gdnctl download-trace' (gs://..., wandb:...).\n"
    "Each run's jax_profile artifact (the one with --alias, else the most recently\n"
    "updated) is downloaded to --download-root/before and --download-root/after\n"
    "(emptied first); the first *.xplane.pb (sorted) of each is read, else its\n"
    "trace-event JSON. Prints the xprof-compare payload with before_run_target,\n"
    "after_run_target, before_artifact_ref, after_artifact_ref, before_xplane_local and\n"
    "after_xplane_local, as JSON with sorted keys. W&B: WANDB_API_KEY or ~/.netrc,\n"
    "WANDB_BASE_URL. No dev TPU, ssh or scp is used: --cluster, --tpu-name,\n"
    "--remote-stage-dir, --sync-repo and --keep-remote are accepted and ignored.\n"
    "Exit status: 0 ok, 1 missing or invalid input, 2 usage, 5 network."};

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) && errno != ENOENT ? -1 : 0;
}

/* Empty and create a directory (the original wipes its download roots). 0 or the exit code. */
static int fresh_dir(const char *dir)
{
	struct gdn_err err = GDN_ERR_INIT;

	if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT) {
		gdn_error("cannot empty '%s': %s", dir, strerror(errno));
		return GDN_EXIT_FAILED;
	}
	if (gdn_mkdir_p(dir, 0777, &err))
		return gdn_die_err(&err);
	return 0;
}

/* A run target as a source spelling (a new string). */
static char *run_spelling(const char *target, const struct gdn_fetch_opts *fo)
{
	if (gdn_fetch_source_find(target, fo))
		return xstrdup(target);
	return xstrfmt("wandb:%s", target);
}

int cmd_xprof_compare_runs(int argc, const char **argv, struct gdn_ctx *ctx)
{
	const char *before_t = NULL, *after_t = NULL, *entity = NULL, *project = NULL;
	const char *alias = "latest", *root = ".profiles/xprof_compare", *output = NULL;
	const char *normalize = NULL, *cluster = NULL, *tpu_name = NULL, *stage = NULL;
	int sync_repo = 0, keep_remote = 0;
	long top_k = 20;
	struct opt opts[] = {
	    OPT_STRING_(0, "before-run-target", &before_t, "RUN",
			"the run before: id, ENTITY/PROJECT/ID or URL (required)", NULL),
	    OPT_STRING_(0, "after-run-target", &after_t, "RUN",
			"the run after: id, ENTITY/PROJECT/ID or URL (required)", NULL),
	    OPT_STRING_(0, "entity", &entity, "ENTITY", "W&B entity for bare run ids", NULL),
	    OPT_STRING_(0, "project", &project, "PROJECT", "W&B project for bare run ids", NULL),
	    OPT_STRING_(0, "alias", &alias, "ALIAS",
			"the artifact alias to prefer (else the most recently updated)", "latest"),
	    OPT_STRING_(0, "download-root", &root, "DIR",
			"where the artifacts go (before/ and after/, emptied first)",
			".profiles/xprof_compare"),
	    OPT_INT_(0, "top-k", &top_k, "N", "rows of each delta list (0: all)", "20", 0,
		     LONG_MAX),
	    OPT_STRING_(0, "normalize-positive-deltas-ms", &normalize, "MS",
			"rescale the positive deltas so they sum to MS", NULL),
	    OPT_STRING_(0, "output", &output, "FILE", "write the JSON there and print the path",
			NULL),
	    OPT_GROUP_("No longer needed (accepted, ignored: the comparison runs locally)"),
	    OPT_STRING_(0, "cluster", &cluster, "ZONE", "was: the dev TPU's cluster", NULL),
	    OPT_STRING_(0, "tpu-name", &tpu_name, "NAME", "was: the held dev TPU", NULL),
	    OPT_STRING_(0, "remote-stage-dir", &stage, "DIR", "was: the remote staging directory",
			NULL),
	    OPT_BOOL_(0, "sync-repo", &sync_repo, "was: sync the repository to the dev TPU first"),
	    OPT_BOOL_(0, "keep-remote", &keep_remote, "was: keep the remote staging directory"),
	    OPT_END_(),
	};
	struct gdn_fetch_opts fo = GDN_FETCH_OPTS_INIT;
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary sums[2];
	struct strvec rest = STRVEC_INIT, xplanes[2] = {STRVEC_INIT, STRVEC_INIT};
	char *spell[2] = {NULL, NULL}, *dirs[2] = {NULL, NULL}, *paths[2] = {NULL, NULL};
	char *refs[2] = {NULL, NULL};
	double normalize_ms = 0;
	json_t *doc = NULL;
	char *text = NULL;
	int code = GDN_EXIT_OK;

	gdn_trace_summary_init(&sums[0]);
	gdn_trace_summary_init(&sums[1]);
	if (!gdn_cmd_parse_opts(opts, &xprof_runs_usage, argc, argv, 0, &rest, &code))
		goto out;
	if (rest.nr) {
		code =
		    gdn_usage_error("xprof-compare-runs",
				    "xprof-compare-runs takes no arguments, got '%s'", rest.v[0]);
		goto out;
	}
	for (const struct opt *op = opts; op->type != OPT_END; op++)
		if (op->seen && op->long_name &&
		    (!strcmp(op->long_name, "cluster") || !strcmp(op->long_name, "tpu-name") ||
		     !strcmp(op->long_name, "remote-stage-dir") ||
		     !strcmp(op->long_name, "sync-repo") || !strcmp(op->long_name, "keep-remote")))
			gdn_warn("--%s is no longer needed: xprof-compare-runs reads the profiles "
				 "locally (no dev TPU)",
				 op->long_name);
	if (!before_t || !after_t) {
		code = gdn_usage_error(
		    "xprof-compare-runs",
		    "xprof-compare-runs needs --before-run-target and --after-run-target");
		goto out;
	}
	if (normalize && parse_ms(normalize, &normalize_ms)) {
		code = GDN_EXIT_USAGE;
		goto out;
	}
	fo.wandb_entity = entity;
	fo.wandb_project = project;
	fo.wandb_alias = alias;
	for (int i = 0; i < 2 && !code; i++) {
		const char *target = i ? after_t : before_t;

		spell[i] = run_spelling(target, &fo);
		dirs[i] = root[0] == '/' || !ctx->cwd
			      ? xstrfmt("%s/%s", root, i ? "after" : "before")
			      : xstrfmt("%s/%s/%s", ctx->cwd, root, i ? "after" : "before");
		code = fresh_dir(dirs[i]);
		if (!code)
			code = fetch_input(spell[i], &fo, dirs[i], true, &paths[i], &xplanes[i],
					   &refs[i]);
		if (code == GDN_EXIT_FAILED && !paths[i])
			gdn_error("no .xplane.pb file found under downloaded profile artifact: %s",
				  dirs[i]);
	}
	if (code)
		goto out;
	for (int i = 0; i < 2 && !code; i++)
		code = xplanes[i].nr > 1 ? load(xplanes[i].v, xplanes[i].nr, &o, &sums[i])
					 : load((const char *const *)&paths[i], 1, &o, &sums[i]);
	if (code)
		goto out;
	doc = json_object();
	gdn_trace_xprof_payload(doc, &sums[0], &sums[1], (size_t)top_k, normalize != NULL,
				normalize_ms);
	json_object_set_new(doc, "before_run_target", gdn_json_string_lossy(before_t));
	json_object_set_new(doc, "after_run_target", gdn_json_string_lossy(after_t));
	json_object_set_new(doc, "before_artifact_ref",
			    refs[0] ? gdn_json_string_lossy(refs[0]) : json_null());
	json_object_set_new(doc, "after_artifact_ref",
			    refs[1] ? gdn_json_string_lossy(refs[1]) : json_null());
	json_object_set_new(doc, "before_xplane_local", gdn_json_string_lossy(paths[0]));
	json_object_set_new(doc, "after_xplane_local", gdn_json_string_lossy(paths[1]));
	text = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
	if (!text) {
		code = GDN_EXIT_FAILED;
		goto out;
	}
	if (output) {
		struct gdn_err err = GDN_ERR_INIT;
		struct sbuf sb = SBUF_INIT;

		sbuf_addf(&sb, "%s\n", text);
		if (gdn_write_file_atomic(output, sb.buf, sb.len, &err))
			code = gdn_die_err(&err);
		else
			printf("%s\n", output);
		sbuf_release(&sb);
	} else {
		printf("%s\n", text);
	}
out:
	free(text);
	json_decref(doc);
	for (int i = 0; i < 2; i++) {
		free(spell[i]);
		free(dirs[i]);
		free(paths[i]);
		free(refs[i]);
		strvec_clear(&xplanes[i]);
		gdn_trace_summary_release(&sums[i]);
	}
	strvec_clear(&rest);
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
