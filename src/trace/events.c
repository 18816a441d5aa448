/*
 * Event assembler and the pipeline object. The assembler follows the
 * tokens of a trace document (an object with "traceEvents", or a bare
 * array), keeps the few fields of each event object that the aggregator
 * needs, and skips everything else without copying it.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

/* ---- numbers ---- */

#define PS_MAX (((gdn_ps)1 << 126) - 1 + ((gdn_ps)1 << 126))

int gdn_ps_parse_us(const char *s, size_t len, gdn_ps *out)
{
	const char *p = s, *end = s + len;
	unsigned __int128 m = 0;
	int nd = 0, digits = 0;
	long exp10 = 6, e = 0;
	bool neg = false, eneg = false;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p == end || !isdigit((unsigned char)*p))
		return -1;
	if (*p == '0' && p + 1 < end && isdigit((unsigned char)p[1]))
		return -1;
	for (; p < end && isdigit((unsigned char)*p); p++, digits++) {
		if (nd < 36) {
			m = m * 10 + (unsigned)(*p - '0');
			nd += m != 0;
		} else {
			exp10++;
		}
	}
	if (p < end && *p == '.') {
		p++;
		if (p == end || !isdigit((unsigned char)*p))
			return -1;
		for (; p < end && isdigit((unsigned char)*p); p++) {
			if (nd < 36) {
				m = m * 10 + (unsigned)(*p - '0');
				nd += m != 0;
				exp10--;
			}
		}
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			eneg = *p++ == '-';
		if (p == end || !isdigit((unsigned char)*p))
			return -1;
		for (; p < end && isdigit((unsigned char)*p); p++)
			if (e < 1000000)
				e = e * 10 + (*p - '0');
	}
	if (p != end)
		return -1;
	exp10 += eneg ? -e : e;
	if (!m) {
		*out = 0;
		return 0;
	}
	if (exp10 >= 0) {
		for (; exp10 > 0; exp10--) {
			if (m > (unsigned __int128)PS_MAX / 10)
				return -1;
			m *= 10;
		}
		if (m > (unsigned __int128)PS_MAX)
			return -1;
	} else if (exp10 < -38) {
		m = 0;
	} else {
		unsigned __int128 div = 1, r;

		for (; exp10 < 0; exp10++)
			div *= 10;
		r = m % div;
		m /= div;
		if (r * 2 >= div)
			m++; /* half away from zero (on the magnitude) */
	}
	*out = neg ? -(gdn_ps)m : (gdn_ps)m;
	return 0;
}

static int parse_int64(const char *s, size_t len, int64_t *out)
{
	const char *p = s, *end = s + len;
	bool neg = false;
	uint64_t v = 0, lim;

	if (p < end && *p == '-') {
		neg = true;
		p++;
	}
	if (p == end)
		return -1;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; p < end; p++) {
		if (!isdigit((unsigned char)*p))
			return -1;
		if (v > (lim - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

/* ---- the assembler ---- */

enum where {
	W_TOP,	  /* before the top-level value */
	W_TOPOBJ, /* in the top-level object */
	W_EVENTS, /* in the traceEvents array */
	W_EVENT,  /* in one event object */
	W_ARGS,	  /* in its args object */
	W_END,	  /* after the top-level value */
};

enum field {
	F_NONE,
	F_TRACE_EVENTS,
	F_PH,
	F_NAME,
	F_CAT,
	F_PID,
	F_TID,
	F_TS,
	F_DUR,
	F_ARGS,
	F_A_NAME,
	F_A_HLO,
	F_A_SOURCE,
	F_A_TFOP,
	F_A_DEDUP,
	F_A_DEVOFF,
	F_A_DEVDUR,
	F_A_STEPNUM,
};

struct field_buf {
	struct sbuf sb;
	bool set;
};

struct gdn_trace {
	struct gdn_gz *gz;
	struct json_tok *tok;
	struct gdn_trace_agg *agg;
	enum where where;
	enum field pending;
	unsigned events_depth; /* depth of the elements of traceEvents */
	bool saw_events;
	struct gdn_trace_event ev;
	struct field_buf name, cat, hlo, src, tfop, meta, pid, tid, dedup;
};

static void fb_init(struct field_buf *f)
{
	f->sb.limit = GDN_TRACE_FIELD_MAX;
	sbuf_init(&f->sb, 0);
	f->set = false;
}

static void fb_set(struct field_buf *f, const char *s, size_t len)
{
	sbuf_reset(&f->sb);
	sbuf_add(&f->sb, s, len); /* longer values are cut at GDN_TRACE_FIELD_MAX */
	f->set = true;
}

static const char *fb_get(const struct field_buf *f, size_t *len)
{
	*len = f->set ? f->sb.len : 0;
	return f->set ? f->sb.buf : NULL;
}

static enum field event_field(const char *k, size_t n)
{
	switch (n) {
	case 2:
		if (!memcmp(k, "ph", 2))
			return F_PH;
		if (!memcmp(k, "ts", 2))
			return F_TS;
		break;
	case 3:
		if (!memcmp(k, "pid", 3))
			return F_PID;
		if (!memcmp(k, "tid", 3))
			return F_TID;
		if (!memcmp(k, "dur", 3))
			return F_DUR;
		if (!memcmp(k, "cat", 3))
			return F_CAT;
		break;
	case 4:
		if (!memcmp(k, "name", 4))
			return F_NAME;
		if (!memcmp(k, "args", 4))
			return F_ARGS;
		break;
	}
	return F_NONE;
}

static enum field arg_field(const char *k, size_t n)
{
	switch (n) {
	case 4:
		if (!memcmp(k, "name", 4))
			return F_A_NAME;
		break;
	case 5:
		if (!memcmp(k, "tf_op", 5))
			return F_A_TFOP;
		break;
	case 6:
		if (!memcmp(k, "source", 6))
			return F_A_SOURCE;
		break;
	case 12:
		if (!memcmp(k, "hlo_category", 12))
			return F_A_HLO;
		break;
	case 8:
		if (!memcmp(k, "step_num", 8))
			return F_A_STEPNUM;
		break;
	case 16:
		if (!memcmp(k, "device_offset_ps", 16))
			return F_A_DEVOFF;
		break;
	case 17:
		if (!memcmp(k, "deduplicated_name", 17))
			return F_A_DEDUP;
		break;
	case 18:
		if (!memcmp(k, "device_duration_ps", 18))
			return F_A_DEVDUR;
		break;
	}
	return F_NONE;
}

static void start_event(struct gdn_trace *t)
{
	memset(&t->ev, 0, sizeof(t->ev));
	t->name.set = t->cat.set = t->hlo.set = t->src.set = false;
	t->tfop.set = t->meta.set = t->pid.set = t->tid.set = t->dedup.set = false;
}

static void set_id(struct gdn_trace_id *id, struct field_buf *fb, const struct json_token *tok)
{
	if (!parse_int64(tok->str, tok->len, &id->num)) {
		id->str = NULL;
		fb->set = false;
		return;
	}
	fb_set(fb, tok->str, tok->len);
	id->num = 0;
	id->str = fb->sb.buf;
	id->len = fb->sb.len;
}

static void end_event(struct gdn_trace *t)
{
	struct gdn_trace_event *ev = &t->ev;

	ev->name = fb_get(&t->name, &ev->name_len);
	ev->cat = fb_get(&t->cat, &ev->cat_len);
	ev->hlo_category = fb_get(&t->hlo, &ev->hlo_category_len);
	ev->source = fb_get(&t->src, &ev->source_len);
	ev->tf_op = fb_get(&t->tfop, &ev->tf_op_len);
	ev->dedup = fb_get(&t->dedup, &ev->dedup_len);
	ev->meta_name = fb_get(&t->meta, &ev->meta_name_len);
	ev->has_meta_name = t->meta.set;
	if (t->pid.set) {
		ev->pid.str = t->pid.sb.buf;
		ev->pid.len = t->pid.sb.len;
	}
	if (t->tid.set) {
		ev->tid.str = t->tid.sb.buf;
		ev->tid.len = t->tid.sb.len;
	}
	gdn_trace_agg_event(t->agg, ev);
}

static bool is_scalar(enum json_tok_type type)
{
	return type == JT_STRING || type == JT_NUMBER || type == JT_TRUE || type == JT_FALSE ||
	       type == JT_NULL;
}

static const char *type_name(enum json_tok_type type)
{
	switch (type) {
	case JT_STRING:
		return "a string";
	case JT_NUMBER:
		return "a number";
	case JT_TRUE:
	case JT_FALSE:
		return "a boolean";
	case JT_NULL:
		return "null";
	case JT_OBJ_BEGIN:
		return "an object";
	default:
		return "an array";
	}
}

/* A value inside an event object (the key was remembered in t->pending). */
static int event_value(struct gdn_trace *t, const struct json_token *tok)
{
	struct gdn_trace_event *ev = &t->ev;
	bool text = tok->type == JT_STRING || tok->type == JT_NUMBER;
	enum field f = t->pending;

	t->pending = F_NONE;
	if (tok->type == JT_OBJ_BEGIN && f == F_ARGS) {
		t->where = W_ARGS;
		return 0;
	}
	if (!is_scalar(tok->type))
		return JSON_TOK_SKIP;
	if (!text)
		return 0;
	switch (f) {
	case F_PH:
		ev->ph = tok->type == JT_STRING && tok->len == 1 ? tok->str[0] : 0;
		break;
	case F_NAME:
		if (tok->type == JT_STRING)
			fb_set(&t->name, tok->str, tok->len);
		break;
	case F_CAT:
		if (tok->type == JT_STRING)
			fb_set(&t->cat, tok->str, tok->len);
		break;
	case F_PID:
		set_id(&ev->pid, &t->pid, tok);
		break;
	case F_TID:
		set_id(&ev->tid, &t->tid, tok);
		break;
	case F_TS:
		ev->has_ts = !gdn_ps_parse_us(tok->str, tok->len, &ev->ts);
		break;
	case F_DUR:
		ev->has_dur = !gdn_ps_parse_us(tok->str, tok->len, &ev->dur);
		break;
	default:
		break;
	}
	return 0;
}

static int arg_value(struct gdn_trace *t, const struct json_token *tok)
{
	enum field f = t->pending;
	struct field_buf *fb = NULL;

	t->pending = F_NONE;
	if (!is_scalar(tok->type))
		return JSON_TOK_SKIP;
	if (tok->type != JT_STRING && tok->type != JT_NUMBER)
		return 0;
	switch (f) {
	case F_A_NAME:
		fb = &t->meta;
		break;
	case F_A_HLO:
		fb = &t->hlo;
		break;
	case F_A_SOURCE:
		fb = &t->src;
		break;
	case F_A_TFOP:
		fb = &t->tfop;
		break;
	case F_A_DEDUP:
		fb = &t->dedup;
		break;
	case F_A_DEVOFF:
	case F_A_DEVDUR:
	case F_A_STEPNUM: {
		int64_t v;

		if (parse_int64(tok->str, tok->len, &v) || v < 0)
			return 0;
		if (f == F_A_STEPNUM) {
			/* a host step annotation (StepTraceAnnotation): "step_num": "3" */
			t->ev.step_num = (uint64_t)v;
			t->ev.has_step_num = true;
		} else if (f == F_A_DEVOFF) {
			t->ev.dev_ts = v;
			t->ev.has_dev_ts = true;
		} else {
			t->ev.dev_dur = v;
			t->ev.has_dev_dur = true;
		}
		return 0;
	}
	default:
		return 0;
	}
	fb_set(fb, tok->str, tok->len);
	return 0;
}

static int on_token(void *ctx, const struct json_token *tok, struct gdn_err *err)
{
	struct gdn_trace *t = ctx;

	switch (t->where) {
	case W_TOP:
		if (tok->type == JT_OBJ_BEGIN) {
			t->where = W_TOPOBJ;
			return 0;
		}
		if (tok->type == JT_ARR_BEGIN) {
			t->where = W_EVENTS;
			t->events_depth = 1;
			t->saw_events = true;
			return 0;
		}
		return gdn_err_set(err, GDN_EPARSE,
				   "not a trace: the top-level value is %s, not an object with "
				   "\"traceEvents\" or an array of events",
				   type_name(tok->type));
	case W_TOPOBJ:
		if (tok->type == JT_KEY) {
			if (tok->len == 11 && !memcmp(tok->str, "traceEvents", 11)) {
				t->pending = F_TRACE_EVENTS;
				return 0;
			}
			return JSON_TOK_SKIP;
		}
		if (tok->type == JT_OBJ_END) {
			t->where = W_END;
			return 0;
		}
		if (tok->type == JT_ARR_BEGIN) {
			t->where = W_EVENTS;
			t->events_depth = 2;
			t->saw_events = true;
			t->pending = F_NONE;
			return 0;
		}
		return gdn_err_set(err, GDN_EPARSE,
				   "not a trace: \"traceEvents\" at byte offset %llu is %s, not an "
				   "array",
				   (unsigned long long)tok->offset, type_name(tok->type));
	case W_EVENTS:
		if (tok->type == JT_ARR_END) {
			t->where = t->events_depth == 1 ? W_END : W_TOPOBJ;
			return 0;
		}
		gdn_trace_agg_count_element(t->agg);
		if (tok->type == JT_OBJ_BEGIN) {
			start_event(t);
			t->where = W_EVENT;
			return 0;
		}
		return tok->type == JT_ARR_BEGIN ? JSON_TOK_SKIP : 0;
	case W_EVENT:
		if (tok->type == JT_KEY) {
			t->pending = event_field(tok->str, tok->len);
			return t->pending == F_NONE ? JSON_TOK_SKIP : 0;
		}
		if (tok->type == JT_OBJ_END) {
			end_event(t);
			t->where = W_EVENTS;
			return 0;
		}
		return event_value(t, tok);
	case W_ARGS:
		if (tok->type == JT_KEY) {
			t->pending = arg_field(tok->str, tok->len);
			return t->pending == F_NONE ? JSON_TOK_SKIP : 0;
		}
		if (tok->type == JT_OBJ_END) {
			t->where = W_EVENT;
			return 0;
		}
		return arg_value(t, tok);
	case W_END:
		break;
	}
	BUG("trace assembler: token after the end");
}

static int to_tokenizer(void *ctx, const char *data, size_t len, struct gdn_err *err)
{
	struct gdn_trace *t = ctx;

	return json_tok_feed(t->tok, data, len, err);
}

struct gdn_trace *gdn_trace_new(const struct gdn_trace_opts *opts)
{
	struct gdn_trace *t = xcalloc(1, sizeof(*t));

	t->gz = gdn_gz_new(to_tokenizer, t);
	t->tok = json_tok_new(on_token, t, opts ? opts->token_max : 0, opts ? opts->depth_max : 0);
	t->agg = gdn_trace_agg_new(opts);
	fb_init(&t->name);
	fb_init(&t->cat);
	fb_init(&t->hlo);
	fb_init(&t->src);
	fb_init(&t->tfop);
	fb_init(&t->meta);
	fb_init(&t->pid);
	fb_init(&t->tid);
	fb_init(&t->dedup);
	return t;
}

void gdn_trace_free(struct gdn_trace *t)
{
	if (!t)
		return;
	gdn_gz_free(t->gz);
	json_tok_free(t->tok);
	gdn_trace_agg_free(t->agg);
	sbuf_release(&t->name.sb);
	sbuf_release(&t->cat.sb);
	sbuf_release(&t->hlo.sb);
	sbuf_release(&t->src.sb);
	sbuf_release(&t->tfop.sb);
	sbuf_release(&t->meta.sb);
	sbuf_release(&t->pid.sb);
	sbuf_release(&t->tid.sb);
	sbuf_release(&t->dedup.sb);
	free(t);
}

int gdn_trace_feed(struct gdn_trace *t, const void *data, size_t len, struct gdn_err *err)
{
	return gdn_gz_feed(t->gz, data, len, err);
}

int gdn_trace_feed_json(struct gdn_trace *t, const void *data, size_t len, struct gdn_err *err)
{
	return json_tok_feed(t->tok, data, len, err);
}

int gdn_trace_finish(struct gdn_trace *t, struct gdn_trace_summary *out, struct gdn_err *err)
{
	int ret = gdn_gz_finish(t->gz, err);

	if (!ret)
		ret = json_tok_finish(t->tok, err);
	if (!ret && !t->saw_events)
		ret = gdn_err_set(err, GDN_EPARSE,
				  "not a trace: the top-level object has no \"traceEvents\" array");
	if (!ret)
		ret = gdn_trace_agg_finish(t->agg, out, err);
	return ret;
}
