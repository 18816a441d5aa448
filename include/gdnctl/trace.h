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

/* Signed picoseconds. */
typedef __int128 gdn_ps;

#define GDN_PS_PER_US ((gdn_ps)1000000)

/* Defaults of the caps (struct gdn_trace_opts fields set to 0 use them). */
#define GDN_TRACE_TOKEN_MAX  ((size_t)16 << 20) /* bytes in one string or number */
#define GDN_TRACE_DEPTH_MAX  512u		/* JSON nesting */
#define GDN_TRACE_WINDOW     4096u		/* reorder window per track, in events */
#define GDN_TRACE_NEST_MAX   4096u		/* open nested events per track */
#define GDN_TRACE_FIELD_MAX  ((size_t)64 << 10) /* longest kept name/source/tf_op */
#define GDN_TRACE_EVENT_CAP1 1000000u		/* the TSL converter's default event cap */
#define GDN_TRACE_EVENT_CAP2 5000000u

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
bool gdn_gz_is_gzip(const struct gdn_gz *gz);
uint64_t gdn_gz_members(const struct gdn_gz *gz);
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
uint64_t json_tok_offset(const struct json_tok *t);
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
};
#define GDN_TRACE_OPTS_INIT                      \
	{                                        \
		NULL, NULL, NULL, 0, 0, 0, false \
	}

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
	uint64_t events_deep; /* selected, nested deeper than GDN_TRACE_NEST_MAX: self time 0 */
	uint64_t tracks_selected;
	gdn_ps total, self;
	uint64_t steps;		/* 0: no steps found */
	const char *steps_from; /* "Steps" or "XLA Modules <name>" (borrowed), or "" */
	bool truncated;		/* looks cut by the profiler's 1,000,000-event cap */
	struct gdn_trace_rows ops, categories, sources, devices;
	struct strvec warnings; /* one line each, for the command to print */
	void *priv;		/* owns the strings the rows point to */
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
 * or a run directory), preferring perfetto_trace.json.gz, then
 * *.trace.json.gz, then *.trace.json, then *.json. *path (owned by the
 * caller) is what to read; *from_dir tells whether a directory was searched.
 */
int gdn_trace_resolve_input(const char *arg, char **path, bool *from_dir, struct gdn_err *err);

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
	const char *name, *cat, *hlo_category, *source, *tf_op, *meta_name;
	size_t name_len, cat_len, hlo_category_len, source_len, tf_op_len, meta_name_len;
	struct gdn_trace_id pid, tid;
	gdn_ps ts, dur;
	bool has_ts, has_dur, has_meta_name;
};

struct gdn_trace_agg;
struct gdn_trace_agg *gdn_trace_agg_new(const struct gdn_trace_opts *opts);
void gdn_trace_agg_event(struct gdn_trace_agg *a, const struct gdn_trace_event *ev);
/* Counted by the assembler: every element of traceEvents. */
void gdn_trace_agg_count_element(struct gdn_trace_agg *a);
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
};
/* "op", "category", "source", "device" (--by). */
extern const struct gdn_enum gdn_trace_by_enum[];

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

const struct gdn_trace_rows *gdn_trace_rows_by(const struct gdn_trace_summary *s,
					       enum gdn_trace_by by);

/* Aligned table for people; top of 0 means all rows. */
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
	struct gdn_trace_diff_rows ops, categories, sources;
};

void gdn_trace_diff_init(struct gdn_trace_diff *d);
void gdn_trace_diff_compute(struct gdn_trace_diff *d, const struct gdn_trace_summary *before,
			    const struct gdn_trace_summary *after);
void gdn_trace_diff_release(struct gdn_trace_diff *d);
void gdn_trace_diff_render_table(const struct gdn_trace_diff *d, size_t top, struct sbuf *out);
void gdn_trace_diff_render_markdown(const struct gdn_trace_diff *d, size_t top, struct sbuf *out);
/* New reference: the "gdnctl.trace_diff.v1" document (top of 0: all rows). */
json_t *gdn_trace_diff_json(const struct gdn_trace_diff *d, size_t top);

#endif
