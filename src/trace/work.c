/*
 * Work figures of a trace (trace_work.h). Trace-event JSON: a second, small
 * reader over the same tokenizer as the trace pipeline, keeping per op name
 * the sums of the cost-analysis args XLA writes on device ops. An XPlane
 * goes to the XPlane reader (xplane.c). Both hand each event's figures to
 * gdn_trace_work_add (work_sum.c).
 */
#include "gdnctl/compat.h"
#include <fcntl.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/trace_work.h"
#include "gdnctl/xalloc.h"

#define WORK_NAME_MAX 1024 /* longer op names are cut (they still count) */

enum pending { P_NONE = 0, P_NAME, P_FLOPS, P_BYTES, P_ARGS, P_DUR };

struct reader {
	struct gdn_trace_work *w;
	unsigned ev_depth; /* depth of the event objects (0: not in traceEvents yet) */
	bool want_events;  /* the root key traceEvents was just read */
	bool in_event, in_args;
	enum pending pending;
	struct sbuf name;
	double flops, bytes, dur;
	bool has_flops, has_bytes, has_dur;
};

/* A figure: a number, or a string holding one; finite and >= 0. */
static bool figure(const struct json_token *tok, double *out)
{
	char buf[64];
	char *end;
	double d;

	if ((tok->type != JT_NUMBER && tok->type != JT_STRING) || !tok->len ||
	    tok->len >= sizeof(buf))
		return false;
	memcpy(buf, tok->str, tok->len);
	buf[tok->len] = '\0';
	errno = 0;
	d = strtod(buf, &end);
	if (*end || end == buf || errno || !isfinite(d) || d < 0)
		return false;
	*out = d;
	return true;
}

static void end_event(struct reader *r)
{
	struct gdn_trace_work_event ev = {
	    .name = r->name.buf,
	    .flops = r->flops,
	    .bytes = r->bytes,
	    .dur_us = r->dur,
	    .has_flops = r->has_flops,
	    .has_bytes = r->has_bytes,
	    .has_dur = r->has_dur,
	};

	gdn_trace_work_add(r->w, &ev);
}

static int on_key(struct reader *r, const struct json_token *tok)
{
	unsigned d = tok->depth;

#define KEY_IS(s) (tok->len == strlen(s) && !memcmp(tok->str, s, tok->len))
	r->pending = P_NONE;
	if (!r->ev_depth && d == 1) {
		r->want_events = KEY_IS("traceEvents");
		return r->want_events ? 0 : JSON_TOK_SKIP;
	}
	if (r->in_event && d == r->ev_depth + 1) {
		if (KEY_IS("name"))
			r->pending = P_NAME;
		else if (KEY_IS("dur"))
			r->pending = P_DUR;
		else if (KEY_IS("args"))
			r->pending = P_ARGS;
		return r->pending ? 0 : JSON_TOK_SKIP;
	}
	if (r->in_args && d == r->ev_depth + 2) {
		if (KEY_IS("model_flops") || KEY_IS("flops"))
			r->pending = P_FLOPS;
		else if (KEY_IS("bytes_accessed"))
			r->pending = P_BYTES;
		return r->pending ? 0 : JSON_TOK_SKIP;
	}
	return JSON_TOK_SKIP;
#undef KEY_IS
}

static int on_token(void *ctx, const struct json_token *tok, struct gdn_err *err)
{
	struct reader *r = ctx;
	unsigned d = tok->depth;
	enum pending p = r->pending;

	(void)err;
	if (tok->type == JT_KEY)
		return on_key(r, tok);
	r->pending = P_NONE;
	switch (tok->type) {
	case JT_ARR_BEGIN:
		if (!r->ev_depth && (d == 0 || (d == 1 && r->want_events)))
			r->ev_depth = d + 1;
		else if (r->ev_depth && d >= r->ev_depth)
			return JSON_TOK_SKIP;
		return 0;
	case JT_OBJ_BEGIN:
		if (r->ev_depth && d == r->ev_depth) {
			r->in_event = true;
			r->has_flops = r->has_bytes = r->has_dur = false;
			sbuf_reset(&r->name);
		} else if (r->in_event && d == r->ev_depth + 1 && p == P_ARGS) {
			r->in_args = true;
		} else if (r->ev_depth && d > r->ev_depth) {
			return JSON_TOK_SKIP;
		}
		return 0;
	case JT_OBJ_END:
		if (r->in_args && d == r->ev_depth + 1) {
			r->in_args = false;
		} else if (r->in_event && d == r->ev_depth) {
			end_event(r);
			r->in_event = false;
		}
		return 0;
	case JT_ARR_END:
		if (r->ev_depth && d + 1 == r->ev_depth)
			r->ev_depth = 0; /* traceEvents ended; a second one is read too */
		return 0;
	default:
		break;
	}
	if (p == P_NAME && tok->type == JT_STRING)
		sbuf_add(&r->name, tok->str, tok->len < WORK_NAME_MAX ? tok->len : WORK_NAME_MAX);
	else if (p == P_FLOPS)
		r->has_flops = figure(tok, &r->flops);
	else if (p == P_BYTES)
		r->has_bytes = figure(tok, &r->bytes);
	else if (p == P_DUR)
		r->has_dur = figure(tok, &r->dur);
	return 0;
}

static int to_tok(void *ctx, const char *data, size_t len, struct gdn_err *err)
{
	return json_tok_feed(ctx, data, len, err);
}

/* The reader over out; *tok and *gz made (freed by the caller). */
static void reader_start(struct reader *r, struct gdn_trace_work *out, struct json_tok **tok,
			 struct gdn_gz **gz)
{
	memset(r, 0, sizeof(*r));
	r->w = out;
	sbuf_init(&r->name, 0);
	*tok = json_tok_new(on_token, r, 0, 0);
	*gz = gdn_gz_new(to_tok, *tok);
}

int gdn_trace_work_mem(const void *data, size_t len, struct gdn_trace_work *out,
		       struct gdn_err *err)
{
	struct reader r;
	struct json_tok *tok;
	struct gdn_gz *gz;
	int ret;

	if (gdn_xplane_sniff_raw(data, len))
		return gdn_xplane_work_mem(data, len, out, err);
	reader_start(&r, out, &tok, &gz);
	ret = gdn_gz_feed(gz, data, len, err);
	if (!ret)
		ret = gdn_gz_finish(gz, err);
	if (!ret)
		ret = json_tok_finish(tok, err);
	gdn_gz_free(gz);
	json_tok_free(tok);
	sbuf_release(&r.name);
	return ret;
}

int gdn_trace_work_file(const char *path, struct gdn_trace_work *out, struct gdn_err *err)
{
	struct reader r;
	struct json_tok *tok = NULL;
	struct gdn_gz *gz = NULL;
	char *buf = NULL;
	bool xplane = false;
	int fd = -1, ret;

	ret = gdn_xplane_sniff_file(path, &xplane, err);
	if (ret || xplane)
		return ret ? ret : gdn_xplane_work_file(path, out, err);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return gdn_err_errno(err, GDN_EIO, "cannot open '%s'", path);
	reader_start(&r, out, &tok, &gz);
	buf = xmalloc(1 << 16);
	for (;;) {
		ssize_t n = read(fd, buf, 1 << 16);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = gdn_err_errno(err, GDN_EIO, "cannot read '%s'", path);
			break;
		}
		ret = n ? gdn_gz_feed(gz, buf, (size_t)n, err) : gdn_gz_finish(gz, err);
		if (!ret && !n)
			ret = json_tok_finish(tok, err);
		if (ret || !n)
			break;
	}
	if (ret == GDN_EPARSE)
		gdn_err_prefix(err, "'%s'", path);
	close(fd);
	free(buf);
	gdn_gz_free(gz);
	json_tok_free(tok);
	sbuf_release(&r.name);
	return ret;
}
