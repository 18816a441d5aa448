/*
 * Trace engine: summarise and compare profiler traces (Chrome trace-event
 * JSON as written by JAX/XLA/TSL and by PyTorch Kineto).
 *
 * A push pipeline in bounded memory:
 *
 *   bytes -> gdn_gz (gzip by magic bytes, multi-member; plain passes through)
 *         -> json_tok (streaming tokenizer: chunk boundaries anywhere, every
 *            token capped, depth capped, byte offsets in errors)
 *         -> event assembler (keeps only the fields it needs)
 *         -> aggregator (interned strings; per-track self time)
 *         -> struct gdn_trace_summary -> renderers (table, markdown, JSON)
 *
 * Memory grows with the number of distinct tracks and ops, never with the
 * number of events. Nothing here prints or exits.
 *
 * Time is kept exactly as signed 128-bit picoseconds (gdn_ps): trace `ts`
 * and `dur` are decimal microseconds, so they are parsed by hand, digit by
 * digit, and rounded to the nearest picosecond (half away from zero) only
 * when they carry more than six decimals. Sums are exact.
 */
#ifndef GDNCTL_TRACE_H
#define GDNCTL_TRACE_H

#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/json.h"
#include "gdnctl/strvec.h"

struct sbuf;
struct gdn_err;
struct gdn_trace_work; /* trace_work.h */

/* Signed picoseconds. */
typedef __int128 gdn_ps;

#define GDN_PS_PER_US ((gdn_ps)1000000)

/* Defaults of the caps (struct gdn_trace_opts fields set to 0 use them). */
#define GDN_TRACE_TOKEN_MAX	((size_t)16 << 20) /* bytes in one string or number */
#define GDN_TRACE_DEPTH_MAX	512u		   /* JSON nesting */
#define GDN_TRACE_WINDOW	4096u		   /* reorder window per track, in events */
#define GDN_TRACE_WINDOW_BUDGET ((size_t)1 << 19)  /* events in all windows together */
#define GDN_TRACE_NEST_MAX	4096u		   /* open nested events per track */
#define GDN_TRACE_NEST_BUDGET	((size_t)1 << 18)  /* open nested events, all tracks together */
#define GDN_TRACE_FIELD_MAX	((size_t)64 << 10) /* longest kept name/source/tf_op */
#define GDN_TRACE_TRACK_MAX	16384u /* distinct tracks (pid, tid) and processes kept */
#define GDN_TRACE_STEP_LOG	((size_t)1 << 21) /* device ops kept for per-step figures */
#define GDN_TRACE_STEP_MAX	100000u		  /* distinct host step annotations kept */
#define GDN_TRACE_EVENT_CAP1	1000000u	  /* the TSL converter's default event cap */
#define GDN_TRACE_EVENT_CAP2	5000000u

/* ---------------------------------------------------------------------- */
/* Stage 1: gzip (detected by the magic bytes 1f 8b) or plain bytes. */

/* Receives uncompressed bytes; returns 0 or a negative gdn_errcode. */
typedef int (*gdn_bytes_fn)(void *ctx, const char *data, size_t len, struct gdn_err *err);

struct gdn_gz;
struct gdn_gz *gdn_gz_new(gdn_bytes_fn sink, void *ctx);
/* Feed raw bytes; errors name the compressed byte offset. */
int gdn_gz_feed(struct gdn_gz *gz, const void *data, size_t len, struct gdn_err *err);
/* End of input: a gzip stream that stopped inside a member is "truncated". */
int gdn_gz_finish(struct gdn_gz *gz, struct gdn_err *err);
void gdn_gz_free(struct gdn_gz *gz);

/* ---------------------------------------------------------------------- */
/* Stage 2: streaming JSON tokenizer (RFC 8259, UTF-8 validated). */

enum json_tok_type {
	JT_OBJ_BEGIN,
	JT_OBJ_END,
	JT_ARR_BEGIN,
	JT_ARR_END,
	JT_KEY,
	JT_STRING,
	JT_NUMBER,
	JT_TRUE,
	JT_FALSE,
	JT_NULL,
};

struct json_token {
	enum json_tok_type type;
	/*
	 * KEY and STRING: the decoded UTF-8 text; NUMBER: the number as written.
	 * Borrowed, valid during the callback only, not NUL-terminated.
	 */
	const char *str;
	size_t len;
	uint64_t offset; /* byte offset of the token's first byte in the stream */
	unsigned depth;	 /* containers around the token (a BEGIN/END is outside its own) */
};

/*
 * Callback result: 0 to go on; JSON_TOK_SKIP on a KEY skips its value, on an
 * OBJ_BEGIN or ARR_BEGIN skips the contents and the END (skipped values are
 * still validated, never copied); a negative gdn_errcode (with err filled)
 * stops the tokenizer.
 */
#define JSON_TOK_SKIP 1
typedef int (*json_tok_fn)(void *ctx, const struct json_token *tok, struct gdn_err *err);

struct json_tok;
/* token_max and depth_max of 0 mean the defaults above. */
struct json_tok *json_tok_new(json_tok_fn fn, void *ctx, size_t token_max, unsigned depth_max);
/*
 * Feed the next bytes of the document. Errors read
 * "invalid JSON at byte offset N: <what>" (N counts from the first byte fed).
 */
int json_tok_feed(struct json_tok *t, const char *data, size_t len, struct gdn_err *err);
/* End of input: the document must be complete. */
int json_tok_finish(struct json_tok *t, struct gdn_err *err);
void json_tok_free(struct json_tok *t);

/* ---------------------------------------------------------------------- */
/* Stages 3-4: the trace pipeline and its result. */

struct gdn_trace_opts {
	/* Selection; NULL or empty (NULL-terminated) lists mean automatic. */
	const char *const *devices; /* "TPU:0": device label, pid, or part of the process name */
	const char *const *threads; /* exact thread names */
	const char *const *cats;    /* exact event categories ("cat") */
	size_t token_max;	    /* 0: GDN_TRACE_TOKEN_MAX */
	unsigned depth_max;	    /* 0: GDN_TRACE_DEPTH_MAX */
	unsigned window;	    /* 0: GDN_TRACE_WINDOW */
	bool no_thread;		    /* gdn_trace_summarize_file: inflate on the calling thread */
	/*
	 * XPlane: time events by their device_offset_ps/device_duration_ps stats
	 * when both are present (xprof's device timespan) instead of the line
	 * timestamp + offset_ps and duration_ps (what the trace viewer shows).
	 */
	bool device_span;
	/* A profile directory with both: which to read (enum gdn_trace_input). */
	int input;
	/*
	 * XPlane: also fill this with the work figures (trace_work.h) in the
	 * same read; emptied first; on error it may hold part of them. Not
	 * filled from trace-event JSON (gdn_trace_work_file reads those).
	 */
	struct gdn_trace_work *work;
};
#define GDN_TRACE_OPTS_INIT                                      \
	{                                                        \
		NULL, NULL, NULL, 0, 0, 0, false, false, 0, NULL \
	}

/* --input-format: "auto" (the XPlane when there is one), "xplane", "json". */
enum gdn_trace_input {
	GDN_TRACE_INPUT_AUTO = 0,
	GDN_TRACE_INPUT_XPLANE,
	GDN_TRACE_INPUT_JSON,
};
extern const struct gdn_enum gdn_trace_input_enum[];

/* One aggregated row. Strings are borrowed from the summary. */
struct gdn_trace_row {
	const char *key;      /* op name, category, source, or device label */
	const char *category; /* ops: most common category */
	const char *source;   /* ops: most common source ("" when none) */
	const char *tf_op;    /* ops: most common tf_op ("" when none) */
	uint64_t count;
	gdn_ps total; /* sum of durations */
	gdn_ps self;  /* sum of self (exclusive) times */
};

struct gdn_trace_rows {
	struct gdn_trace_row *v; /* sorted by self desc, total desc, key */
	size_t nr, alloc;
};

enum gdn_trace_mode {
	GDN_TRACE_MODE_NONE = 0, /* nothing selected */
	GDN_TRACE_MODE_XLA,	 /* "XLA Ops" threads of "/device:" processes */
	GDN_TRACE_MODE_KINETO,	 /* cat kernel, gpu_memcpy, gpu_memset */
	GDN_TRACE_MODE_CUSTOM,	 /* --thread / --cat */
};

/*
 * One step of a trace with steps: the selected device ops that start in its
 * window (from its start to the next step's start; the last one open-ended).
 */
struct gdn_trace_step {
	uint64_t number; /* the annotation's step_num; else the step's ordinal */
	gdn_ps start;	 /* as the file gives it */
	gdn_ps self;	 /* self time of the device ops that start in the window */
	uint64_t ops;
};

struct gdn_trace_summary {
	char *path; /* what was read (owned) */
	enum gdn_trace_mode mode;
	uint64_t events_total;	  /* elements of traceEvents (including {} and non-objects) */
	uint64_t events_complete; /* X events plus matched B/E pairs */
	uint64_t events_selected;
	uint64_t events_metadata;
	uint64_t events_invalid;   /* X/B/E events without a usable ts or dur */
	uint64_t events_unmatched; /* E without B, B without E */
	uint64_t events_late;	   /* selected, out of time order beyond the window: self time 0 */
	uint64_t events_deep;	/* selected, nested deeper than GDN_TRACE_NEST_MAX: self time 0 */
	uint64_t events_capped; /* on tracks beyond GDN_TRACE_TRACK_MAX: ignored */
	uint64_t tracks_selected;
	gdn_ps total, self;
	uint64_t steps; /* 0: no steps found */
	/*
	 * Where the steps come from (borrowed), or "": a device "Steps" line
	 * ("Steps"); else the host's step annotations, events with a step_num
	 * (`host step annotations "train"`); else the dominant XLA module
	 * ("XLA Modules <name>"), as xprof finds them.
	 */
	const char *steps_from;
	bool truncated; /* looks cut by the profiler's 1,000,000-event cap */
	struct gdn_trace_rows ops, categories, sources, devices;
	/* op families (deduplicated_name, else the name without ".N"); tf_op */
	struct gdn_trace_rows families, framework_ops;
	/*
	 * Only when nothing was selected: what the trace has (all complete
	 * events, by total time): device labels, thread names, categories.
	 */
	struct gdn_trace_rows have_devices, have_threads, have_cats;
	struct strvec warnings; /* one line each, for the command to print */
	const char *format;	/* NULL: trace-event JSON; "xplane" */
	struct strvec hosts;	/* xplane: one hostname per file read */
	void *priv;		/* owns the strings the rows point to */
	/*
	 * Per step, in time order (step_nr 0: not known, e.g. more device ops
	 * than GDN_TRACE_STEP_LOG); ops before the first step are in no step.
	 */
	struct gdn_trace_step *step_v;
	size_t step_nr;
};
#define GDN_TRACE_SUMMARY_INIT \
	{                      \
		0              \
	}

void gdn_trace_summary_init(struct gdn_trace_summary *s);
void gdn_trace_summary_release(struct gdn_trace_summary *s);

struct gdn_trace;
struct gdn_trace *gdn_trace_new(const struct gdn_trace_opts *opts);
/* Raw bytes (gzip or plain JSON) in chunks of any size. */
int gdn_trace_feed(struct gdn_trace *t, const void *data, size_t len, struct gdn_err *err);
/* Already uncompressed JSON bytes (bypasses the gzip stage). */
int gdn_trace_feed_json(struct gdn_trace *t, const void *data, size_t len, struct gdn_err *err);
/* End of input; fills out (which must be initialised). Errors name no file. */
int gdn_trace_finish(struct gdn_trace *t, struct gdn_trace_summary *out, struct gdn_err *err);
void gdn_trace_free(struct gdn_trace *t);

/*
 * Read and summarise a file ("-": standard input), inflating on a second
 * thread. Errors start with the file name in quotes.
 */
int gdn_trace_summarize_file(const char *path, const struct gdn_trace_opts *opts,
			     struct gdn_trace_summary *out, struct gdn_err *err);

/*
 * Resolve a command-line input: a file, "-", or a profile directory
 * (<dir>/plugins/profile/<newest timestamp>/, a plugins/profile directory,
 * or a run directory). In a directory the XPlane files (*.xplane.pb,
 * *.xplane.pb.gz; faster to read, and complete) win as JAX writes them
 * (input AUTO or XPLANE): every one of them is put in xplanes (one per host;
 * sorted) and *path is the first. Else (JSON, or no XPlane, or xplanes
 * NULL) the trace-event JSON: perfetto_trace.json.gz, then *.trace.json.gz,
 * then *.trace.json, then *.json. *path (owned by the caller) is what to
 * read; *from_dir tells whether a directory was searched. GDN_ENOTFOUND when
 * the directory has nothing of the kind asked for.
 */
int gdn_trace_resolve_inputs(const char *arg, enum gdn_trace_input input, char **path,
			     struct strvec *xplanes, bool *from_dir, struct gdn_err *err);

/* ---------------------------------------------------------------------- */
/*
 * XPlane (a serialized XSpace protobuf, <host>.xplane.pb, plain or gzip):
 * read in three passes in bounded memory (src/trace/xplane.c). Events of
 * each plane's lines go to the same aggregator (pid = plane, tid = line);
 * the selection follows xprof: the "XLA Ops" and "Sparse Core Ops" lines of
 * /device: planes, and the "Stream #N(...)" lines of /device:GPU planes.
 */

/* Whether the first bytes (already uncompressed) look like an XSpace. */
bool gdn_xplane_sniff(const void *data, size_t len);
/* The same for bytes as they are in a file or in memory: plain or gzip. */
bool gdn_xplane_sniff_raw(const void *data, size_t len);
/* Whether a file (plain or gzip) holds an XSpace, by its first bytes. */
int gdn_xplane_sniff_file(const char *path, bool *is_xplane, struct gdn_err *err);
/* Summarise n XPlane files (one per host) into one summary. */
int gdn_xplane_summarize_files(const char *const *paths, size_t n,
			       const struct gdn_trace_opts *opts, struct gdn_trace_summary *out,
			       struct gdn_err *err);
/* Summarise an XSpace held in memory (plain or gzip); for tests and fuzzing. */
int gdn_xplane_summarize_mem(const void *data, size_t len, const struct gdn_trace_opts *opts,
			     struct gdn_trace_summary *out, struct gdn_err *err);
/*
 * Only the work figures (trace_work.h) of an XPlane file or XSpace in
 * memory (plain or gzip): the same three passes, no aggregation. out is
 * added to; on error it may hold part of the figures (the caller drops them).
 */
int gdn_xplane_work_file(const char *path, struct gdn_trace_work *out, struct gdn_err *err);
int gdn_xplane_work_mem(const void *data, size_t len, struct gdn_trace_work *out,
			struct gdn_err *err);

/* ---------------------------------------------------------------------- */
/*
 * Internal stages, exposed for the pipeline's own files and unit tests:
 * the event assembler hands each event object to the aggregator.
 */

/* A pid or tid: an integer, or a string that is not one (Kineto's "Spans"). */
struct gdn_trace_id {
	int64_t num;
	const char *str; /* NULL for an integer; else borrowed text */
	size_t len;
};

/* One event object, with only the fields the aggregator needs (all borrowed). */
struct gdn_trace_event {
	char ph; /* 'X', 'B', 'E', 'M', ...; 0 when absent or longer than one byte */
	const char *name, *cat, *hlo_category, *source, *tf_op, *meta_name, *dedup;
	size_t name_len, cat_len, hlo_category_len, source_len, tf_op_len, meta_name_len, dedup_len;
	struct gdn_trace_id pid, tid;
	gdn_ps ts, dur;
	gdn_ps dev_ts, dev_dur; /* args device_offset_ps, device_duration_ps */
	uint64_t step_num;	/* arg step_num: a host step annotation */
	bool has_ts, has_dur, has_meta_name, has_dev_ts, has_dev_dur, has_step_num;
};

struct gdn_trace_agg;
struct gdn_trace_agg *gdn_trace_agg_new(const struct gdn_trace_opts *opts);
void gdn_trace_agg_event(struct gdn_trace_agg *a, const struct gdn_trace_event *ev);
/*
 * The same for readers that see the same op and track many times (XPlane):
 * intern an event's strings once (its tuple), find a track once, then hand
 * complete events (no category) by ids.
 */
uint32_t gdn_trace_agg_tuple(struct gdn_trace_agg *a, const struct gdn_trace_event *ev);
uint32_t gdn_trace_agg_track(struct gdn_trace_agg *a, const struct gdn_trace_id *pid,
			     const struct gdn_trace_id *tid);
void gdn_trace_agg_complete(struct gdn_trace_agg *a, uint32_t track, uint32_t tuple, gdn_ps ts,
			    gdn_ps dur);
/*
 * A host step annotation (an event with a step_num stat or arg) named by
 * the tuple's name, starting at ts (the XPlane reader; the JSON reader's
 * events go through gdn_trace_agg_event).
 */
void gdn_trace_agg_step(struct gdn_trace_agg *a, uint32_t tuple, uint64_t step_num, gdn_ps ts);
/* Counted by the assembler: every element of traceEvents. */
void gdn_trace_agg_count_element(struct gdn_trace_agg *a);
/* n elements at once (the XPlane reader counts its XEvents itself). */
void gdn_trace_agg_count_elements(struct gdn_trace_agg *a, uint64_t n);
/*
 * XPlane input: select xprof's lines; several hosts: device labels carry the
 * host (process names are "<host> /device:...").
 */
void gdn_trace_agg_set_xplane(struct gdn_trace_agg *a, bool multi_host);
/* Flush, select, aggregate; out must be initialised. */
int gdn_trace_agg_finish(struct gdn_trace_agg *a, struct gdn_trace_summary *out,
			 struct gdn_err *err);
void gdn_trace_agg_free(struct gdn_trace_agg *a);

/* ---------------------------------------------------------------------- */
/* Renderers. */

enum gdn_trace_by {
	GDN_TRACE_BY_OP,
	GDN_TRACE_BY_CATEGORY,
	GDN_TRACE_BY_SOURCE,
	GDN_TRACE_BY_DEVICE,
	GDN_TRACE_BY_FAMILY,	   /* op families (see struct gdn_trace_summary) */
	GDN_TRACE_BY_FRAMEWORK_OP, /* tf_op */
};
/* "family", "op", "framework-op", "category", "source", "device" (summary --by). */
extern const struct gdn_enum gdn_trace_by_enum[];
/* "family", "op", "framework-op", "category", "source" (diff --by). */
extern const struct gdn_enum gdn_trace_diff_by_enum[];

/* The renderers' output formats (--format): "table", "markdown", "json". */
enum gdn_trace_format {
	GDN_TRACE_TABLE,
	GDN_TRACE_MARKDOWN,
	GDN_TRACE_JSON,
};
extern const struct gdn_enum gdn_trace_format_enum[];

/* "12.345": ps as milliseconds with 3 decimals, rounded half away from zero. */
void gdn_ps_fmt_ms(struct sbuf *out, gdn_ps v);
/* ps as (double) microseconds, for JSON. */
double gdn_ps_to_us(gdn_ps v);
/* Parse a JSON number (or numeric string) in microseconds into ps; 0 or -1. */
int gdn_ps_parse_us(const char *s, size_t len, gdn_ps *out);

/*
 * Aligned table for people; top of 0 means all rows. Names are printed
 * whole; gdn_trace_render_table_width() fits the table to `width`
 * columns (0: no limit) by shortening the name column in the middle
 * (never below 16 columns), so that two different names never print the
 * same: names that would are shortened around where they differ
 * ("nvj...168x1...TNN"), or printed whole.
 */
void gdn_trace_render_table_width(const struct gdn_trace_summary *s, enum gdn_trace_by by,
				  size_t top, size_t width, struct sbuf *out);
void gdn_trace_render_table(const struct gdn_trace_summary *s, enum gdn_trace_by by, size_t top,
			    struct sbuf *out);
/* Markdown bullets for a running log's "Hotspots observed" section. */
void gdn_trace_render_markdown(const struct gdn_trace_summary *s, enum gdn_trace_by by, size_t top,
			       struct sbuf *out);
/* New reference: the "gdnctl.trace_summary.v1" document (top of 0: all rows). */
json_t *gdn_trace_summary_json(const struct gdn_trace_summary *s, size_t top);

/* ---------------------------------------------------------------------- */
/* Diff of two summaries. */

enum gdn_trace_diff_status {
	GDN_TRACE_DIFF_BOTH,
	GDN_TRACE_DIFF_APPEARED, /* only in AFTER */
	GDN_TRACE_DIFF_VANISHED, /* only in BEFORE */
};

struct gdn_trace_diff_row {
	const char *key; /* borrowed from one of the summaries */
	enum gdn_trace_diff_status status;
	uint64_t count_before, count_after;
	gdn_ps before, after; /* self time; per step when the diff is per step */
};

struct gdn_trace_diff_rows {
	struct gdn_trace_diff_row *v; /* sorted by |after - before| desc, then key */
	size_t nr, alloc;
};

struct gdn_trace_diff {
	const struct gdn_trace_summary *before, *after; /* borrowed */
	bool per_step;					/* both have steps */
	gdn_ps total_before, total_after;		/* self time (per step when per_step) */
	struct gdn_trace_diff_rows ops, categories, sources, families, framework_ops;
	/*
	 * What the table and markdown show (set after init; init: BY_OP):
	 * categories, the ops grouped by op, family or framework op, and
	 * sources; or only categories or only sources.
	 */
	enum gdn_trace_by by;
};

void gdn_trace_diff_init(struct gdn_trace_diff *d);
void gdn_trace_diff_compute(struct gdn_trace_diff *d, const struct gdn_trace_summary *before,
			    const struct gdn_trace_summary *after);
void gdn_trace_diff_release(struct gdn_trace_diff *d);
void gdn_trace_diff_render_table(const struct gdn_trace_diff *d, size_t top, struct sbuf *out);
void gdn_trace_diff_render_markdown(const struct gdn_trace_diff *d, size_t top, struct sbuf *out);
/* New reference: the "gdnctl.trace_diff.v1" document (top of 0: all rows). */
json_t *gdn_trace_diff_json(const struct gdn_trace_diff *d, size_t top);

/*
 * Add the original xprof-compare payload to doc: before_xplane, after_xplane,
 * normalize_positive_deltas_ms, framework_op_stats and op_profile_category
 * ({positive_deltas, negative_deltas: [{name, before, after, delta,
 * normalized_ms}], positive_delta_total, negative_delta_total}; framework
 * rows add family and the section family_positive_deltas), derived_metrics.
 * Milliseconds of self time over the whole trace; top_k 0: every row; with
 * normalize the positive deltas are rescaled to sum to normalize_ms.
 */
void gdn_trace_xprof_payload(json_t *doc, const struct gdn_trace_summary *before,
			     const struct gdn_trace_summary *after, size_t top_k, bool normalize,
			     double normalize_ms);

#endif
