/*
 * Streaming JSON tokenizer: a resumable state machine, fed chunks that may
 * split any token anywhere. Tokens that lie inside one chunk and need no
 * decoding are handed out in place; others are assembled in one reusable
 * buffer capped at token_max. Skipped values are validated but never
 * copied. No allocation per token.
 */
#include "gdnctl/compat.h"
#include "gdnctl/trace.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

enum state {
	ST_VALUE,     /* a value (top level, after ':', after ',' in an array) */
	ST_ARR_FIRST, /* after '[': a value or ']' */
	ST_OBJ_FIRST, /* after '{': a key or '}' */
	ST_KEY,	      /* after ',' in an object: a key */
	ST_COLON,     /* after a key */
	ST_AFTER,     /* after a value in a container: ',' or the closer */
	ST_STRING,
	ST_ESC,	 /* after a backslash */
	ST_UHEX, /* in \uXXXX */
	ST_NUMBER,
	ST_LITERAL,
	ST_DONE, /* the top-level value is complete */
	ST_FAILED,
};

enum num_state {
	NS_MINUS, /* after '-' */
	NS_ZERO,  /* integer part is "0" */
	NS_INT,
	NS_DOT, /* after '.' */
	NS_FRAC,
	NS_E,	  /* after 'e' */
	NS_ESIGN, /* after the exponent's sign */
	NS_EXP,
};

struct json_tok {
	json_tok_fn fn;
	void *ctx;
	size_t token_max;
	unsigned depth_max;
	unsigned char *stack; /* 1: object, 0: array */
	unsigned depth;
	enum state state;
	int fail_code;
	uint64_t base;	  /* stream offset of the current chunk */
	uint64_t tok_off; /* where the current token began */

	unsigned skip_depth; /* nonzero: emit nothing while depth >= skip_depth */
	bool skip_next;	     /* the next value is skipped */
	bool skip_scalar;    /* the current scalar is not emitted */

	bool is_key;
	bool copying; /* token text so far is in buf */
	size_t skipped_len;
	struct sbuf buf;
	unsigned utf8_need;
	unsigned char utf8_lo, utf8_hi;
	unsigned hex_n;
	uint32_t hex;
	uint32_t hi_surrogate;

	enum num_state num;
	const char *lit;
	unsigned lit_pos;
	enum json_tok_type lit_type;
};

/* Bytes that may stay in a string without a closer look. */
static unsigned char str_plain[256];
static unsigned char is_ws[256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void init_tables(void)
{
	for (int c = 0x20; c < 0x80; c++)
		str_plain[c] = c != '"' && c != '\\';
	is_ws[' '] = is_ws['\t'] = is_ws['\n'] = is_ws['\r'] = 1;
}

struct json_tok *json_tok_new(json_tok_fn fn, void *ctx, size_t token_max, unsigned depth_max)
{
	struct json_tok *t = xcalloc(1, sizeof(*t));

	pthread_once(&tables_once, init_tables);
	t->fn = fn;
	t->ctx = ctx;
	t->token_max = token_max ? token_max : GDN_TRACE_TOKEN_MAX;
	t->depth_max = depth_max ? depth_max : GDN_TRACE_DEPTH_MAX;
	t->stack = xmalloc(t->depth_max + 1);
	sbuf_init(&t->buf, 0);
	t->state = ST_VALUE;
	return t;
}

void json_tok_free(struct json_tok *t)
{
	if (!t)
		return;
	free(t->stack);
	sbuf_release(&t->buf);
	free(t);
}

static int fail(struct json_tok *t, struct gdn_err *err, uint64_t off, const char *fmt, ...)
    GDN_PRINTF(4, 5);

static int fail(struct json_tok *t, struct gdn_err *err, uint64_t off, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	t->state = ST_FAILED;
	t->fail_code = GDN_EPARSE;
	return gdn_err_set(err, GDN_EPARSE, "invalid JSON at byte offset %llu: %s",
			   (unsigned long long)off, what);
}

static const char *show_char(unsigned char c, char *buf, size_t size)
{
	if (c >= 0x20 && c < 0x7f && c != '\'')
		snprintf(buf, size, "'%c'", c);
	else
		snprintf(buf, size, "byte 0x%02x", c);
	return buf;
}

static int unexpected(struct json_tok *t, struct gdn_err *err, uint64_t off, unsigned char c,
		      const char *expected)
{
	char cbuf[16];

	return fail(t, err, off, "unexpected %s, expected %s", show_char(c, cbuf, sizeof(cbuf)),
		    expected);
}

/* Call the consumer; a negative result stops the tokenizer. */
static int emit(struct json_tok *t, enum json_tok_type type, const char *s, size_t len,
		uint64_t off, struct gdn_err *err)
{
	struct json_token tok = {type, s, len, off, t->depth};
	int ret = t->fn(t->ctx, &tok, err);

	if (ret < 0) {
		t->state = ST_FAILED;
		t->fail_code = ret;
	}
	return ret;
}

static bool emitting(const struct json_tok *t)
{
	return !t->skip_depth && !t->skip_scalar;
}

/* After a value ended: what comes next depends on the container. */
static void value_done(struct json_tok *t)
{
	t->skip_scalar = false;
	t->state = t->depth ? ST_AFTER : ST_DONE;
}

static int open_container(struct json_tok *t, bool object, struct gdn_err *err)
{
	uint64_t off = t->tok_off;
	bool skip = t->skip_next;
	int ret;

	t->skip_next = false;
	if (t->depth >= t->depth_max)
		return fail(t, err, off, "nesting deeper than %u levels", t->depth_max);
	if (!t->skip_depth && !skip) {
		ret = emit(t, object ? JT_OBJ_BEGIN : JT_ARR_BEGIN, NULL, 0, off, err);
		if (ret < 0)
			return ret;
		skip = ret == JSON_TOK_SKIP;
	}
	t->stack[t->depth++] = object;
	if (skip && !t->skip_depth)
		t->skip_depth = t->depth;
	t->state = object ? ST_OBJ_FIRST : ST_ARR_FIRST;
	return 0;
}

static int close_container(struct json_tok *t, bool object, uint64_t off, struct gdn_err *err)
{
	bool was_skip_root = t->skip_depth && t->skip_depth == t->depth;
	int ret;

	t->depth--;
	if (was_skip_root) {
		t->skip_depth = 0;
	} else if (!t->skip_depth) {
		ret = emit(t, object ? JT_OBJ_END : JT_ARR_END, NULL, 0, off, err);
		if (ret < 0)
			return ret;
	}
	value_done(t);
	return 0;
}

/* Start a scalar or container value at byte c (already known not to be whitespace). */
static int begin_value(struct json_tok *t, unsigned char c, uint64_t off, struct gdn_err *err)
{
	t->tok_off = off;
	if (c == '{' || c == '[')
		return open_container(t, c == '{', err);
	t->skip_scalar = t->skip_next;
	t->skip_next = false;
	switch (c) {
	case '"':
		t->is_key = false;
		t->copying = false;
		t->skipped_len = 0;
		t->utf8_need = 0;
		t->hi_surrogate = 0;
		t->state = ST_STRING;
		return 0;
	case '-':
		t->num = NS_MINUS;
		break;
	case '0':
		t->num = NS_ZERO;
		break;
	case 't':
		t->lit = "true";
		t->lit_type = JT_TRUE;
		break;
	case 'f':
		t->lit = "false";
		t->lit_type = JT_FALSE;
		break;
	case 'n':
		t->lit = "null";
		t->lit_type = JT_NULL;
		break;
	default:
		if (c < '1' || c > '9')
			return unexpected(t, err, off, c, "a value");
		t->num = NS_INT;
		break;
	}
	t->copying = false;
	t->skipped_len = 0;
	if (c == 't' || c == 'f' || c == 'n') {
		t->lit_pos = 1;
		t->state = ST_LITERAL;
	} else {
		t->state = ST_NUMBER;
	}
	return 0;
}

/* Append [s, e) of the current token to buf, honouring the cap. */
static int take(struct json_tok *t, const char *s, const char *e, struct gdn_err *err)
{
	size_t n = (size_t)(e - s);

	if (!emitting(t)) {
		t->skipped_len += n;
		if (t->skipped_len > t->token_max)
			goto too_long;
		return 0;
	}
	if (!t->copying) {
		sbuf_reset(&t->buf);
		t->copying = true;
	}
	if (t->buf.len + n > t->token_max)
		goto too_long;
	sbuf_add(&t->buf, s, n);
	return 0;
too_long:
	return fail(t, err, t->tok_off, "%s longer than the %zu-byte token cap",
		    t->state == ST_NUMBER ? "number" : "string", t->token_max);
}

static int add_utf8(struct json_tok *t, uint32_t cp, struct gdn_err *err)
{
	char u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | (cp >> 6));
		u[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | (cp >> 12));
		u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (char)(0xf0 | (cp >> 18));
		u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return take(t, u, u + n, err);
}

/* A high surrogate not followed by a low one becomes U+FFFD. */
static int flush_surrogate(struct json_tok *t, struct gdn_err *err)
{
	if (!t->hi_surrogate)
		return 0;
	t->hi_surrogate = 0;
	return add_utf8(t, 0xfffd, err);
}

/* Validate one byte >= 0x80 of a string (UTF-8, RFC 3629). */
static int utf8_byte(struct json_tok *t, unsigned char c, uint64_t off, struct gdn_err *err)
{
	if (t->utf8_need) {
		if (c < t->utf8_lo || c > t->utf8_hi)
			return fail(t, err, off, "invalid UTF-8 in string");
		t->utf8_need--;
		t->utf8_lo = 0x80;
		t->utf8_hi = 0xbf;
		return 0;
	}
	t->utf8_lo = 0x80;
	t->utf8_hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		t->utf8_need = 1;
	} else if (c >= 0xe0 && c <= 0xef) {
		t->utf8_need = 2;
		if (c == 0xe0)
			t->utf8_lo = 0xa0;
		else if (c == 0xed)
			t->utf8_hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		t->utf8_need = 3;
		if (c == 0xf0)
			t->utf8_lo = 0x90;
		else if (c == 0xf4)
			t->utf8_hi = 0x8f;
	} else {
		return fail(t, err, off, "invalid UTF-8 in string");
	}
	return 0;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int finish_scalar(struct json_tok *t, enum json_tok_type type, const char *seg,
			 const char *p, struct gdn_err *err)
{
	int ret = 0;

	if (emitting(t)) {
		if (t->copying) {
			ret = take(t, seg, p, err);
			if (ret)
				return ret;
			seg = t->buf.buf;
			p = seg + t->buf.len;
		} else if ((size_t)(p - seg) > t->token_max) {
			return take(t, seg, p, err);
		}
		ret = emit(t, type, seg, (size_t)(p - seg), t->tok_off, err);
		if (ret < 0)
			return ret;
		if (type == JT_KEY && ret == JSON_TOK_SKIP)
			t->skip_next = true;
	} else {
		ret = take(t, seg, p, err);
		if (ret)
			return ret;
	}
	if (type == JT_KEY) {
		t->skip_scalar = false;
		t->state = ST_COLON;
	} else {
		value_done(t);
	}
	return 0;
}

static const char *number_end_state(enum num_state ns)
{
	switch (ns) {
	case NS_MINUS:
		return "a digit after '-'";
	case NS_DOT:
		return "a digit after '.'";
	case NS_E:
		return "a digit or sign in the exponent";
	case NS_ESIGN:
		return "a digit in the exponent";
	default:
		return NULL;
	}
}

int json_tok_feed(struct json_tok *t, const char *data, size_t len, struct gdn_err *err)
{
	const char *p = data, *end = data + len;
	const char *seg = data; /* start of the current token's unsaved text */
	int ret = 0;

#define OFF(ptr) (t->base + (uint64_t)((ptr)-data))
	if (t->state == ST_FAILED)
		return t->fail_code ? t->fail_code : GDN_EPARSE;
	while (p < end) {
		unsigned char c = (unsigned char)*p;

		switch (t->state) {
		case ST_STRING:
			if (t->hi_surrogate && c != '\\') {
				ret = flush_surrogate(t, err);
				if (ret)
					goto out;
			}
			if (!t->utf8_need) {
				while (p < end && str_plain[(unsigned char)*p])
					p++;
				if (p == end)
					break;
				c = (unsigned char)*p;
			}
			if (c == '"' && !t->utf8_need) {
				ret = finish_scalar(t, t->is_key ? JT_KEY : JT_STRING, seg, p, err);
				if (ret)
					goto out;
				p++;
				break;
			}
			if (c >= 0x80) {
				ret = utf8_byte(t, c, OFF(p), err);
				if (ret)
					goto out;
				p++;
				break;
			}
			if (t->utf8_need) {
				ret = fail(t, err, OFF(p), "invalid UTF-8 in string");
				goto out;
			}
			if (c == '\\') {
				ret = take(t, seg, p, err);
				if (ret)
					goto out;
				p++;
				seg = p;
				t->state = ST_ESC;
				break;
			}
			ret = fail(t, err, OFF(p), "control character 0x%02x in string", c);
			goto out;
		case ST_ESC: {
			char ch = 0;

			switch (c) {
			case '"':
			case '\\':
			case '/':
				ch = (char)c;
				break;
			case 'b':
				ch = '\b';
				break;
			case 'f':
				ch = '\f';
				break;
			case 'n':
				ch = '\n';
				break;
			case 'r':
				ch = '\r';
				break;
			case 't':
				ch = '\t';
				break;
			case 'u':
				t->hex = 0;
				t->hex_n = 0;
				t->state = ST_UHEX;
				p++;
				seg = p;
				continue;
			default: {
				char cbuf[16];

				ret = fail(t, err, OFF(p) - 1, "invalid escape '\\' followed by %s",
					   show_char(c, cbuf, sizeof(cbuf)));
				goto out;
			}
			}
			ret = flush_surrogate(t, err);
			if (!ret)
				ret = take(t, &ch, &ch + 1, err);
			if (ret)
				goto out;
			p++;
			seg = p;
			t->state = ST_STRING;
			break;
		}
		case ST_UHEX: {
			int h = hexval(c);

			if (h < 0) {
				char cbuf[16];

				ret = fail(t, err, OFF(p),
					   "invalid \\u escape: %s is not a hex digit",
					   show_char(c, cbuf, sizeof(cbuf)));
				goto out;
			}
			t->hex = (t->hex << 4) | (uint32_t)h;
			p++;
			seg = p;
			if (++t->hex_n < 4)
				break;
			t->state = ST_STRING;
			if (t->hex >= 0xdc00 && t->hex <= 0xdfff && t->hi_surrogate) {
				uint32_t cp = 0x10000 + ((t->hi_surrogate - 0xd800) << 10) +
					      (t->hex - 0xdc00);

				t->hi_surrogate = 0;
				ret = add_utf8(t, cp, err);
			} else {
				ret = flush_surrogate(t, err);
				if (ret)
					goto out;
				if (t->hex >= 0xd800 && t->hex <= 0xdbff)
					t->hi_surrogate = t->hex;
				else if (t->hex >= 0xdc00 && t->hex <= 0xdfff)
					ret = add_utf8(t, 0xfffd, err);
				else
					ret = add_utf8(t, t->hex, err);
			}
			if (ret)
				goto out;
			break;
		}
		case ST_NUMBER: {
			const char *why;

			for (; p < end; p++) {
				c = (unsigned char)*p;
				if (c >= '0' && c <= '9') {
					switch (t->num) {
					case NS_MINUS:
						t->num = c == '0' ? NS_ZERO : NS_INT;
						continue;
					case NS_ZERO:
						goto num_end;
					case NS_DOT:
						t->num = NS_FRAC;
						continue;
					case NS_E:
					case NS_ESIGN:
						t->num = NS_EXP;
						continue;
					default:
						continue;
					}
				}
				if (c == '.' && (t->num == NS_ZERO || t->num == NS_INT)) {
					t->num = NS_DOT;
					continue;
				}
				if ((c == 'e' || c == 'E') &&
				    (t->num == NS_ZERO || t->num == NS_INT || t->num == NS_FRAC)) {
					t->num = NS_E;
					continue;
				}
				if ((c == '+' || c == '-') && t->num == NS_E) {
					t->num = NS_ESIGN;
					continue;
				}
				goto num_end;
			}
			break; /* chunk ended inside the number */
		num_end:
			why = number_end_state(t->num);
			if (why) {
				ret = unexpected(t, err, OFF(p), c, why);
				goto out;
			}
			ret = finish_scalar(t, JT_NUMBER, seg, p, err);
			if (ret)
				goto out;
			break; /* c is looked at again in the next state */
		}
		case ST_LITERAL:
			if (c != (unsigned char)t->lit[t->lit_pos]) {
				char what[32];

				snprintf(what, sizeof(what), "'%c' of '%s'", t->lit[t->lit_pos],
					 t->lit);
				ret = unexpected(t, err, OFF(p), c, what);
				goto out;
			}
			p++;
			if (!t->lit[++t->lit_pos]) {
				if (emitting(t)) {
					ret = emit(t, t->lit_type, NULL, 0, t->tok_off, err);
					if (ret < 0)
						goto out;
				}
				value_done(t);
			}
			break;
		case ST_AFTER:
			while (p < end && is_ws[(unsigned char)*p])
				p++;
			if (p == end)
				break;
			c = (unsigned char)*p;
			if (c == ',') {
				t->state = t->stack[t->depth - 1] ? ST_KEY : ST_VALUE;
			} else if (c == '}' && t->stack[t->depth - 1]) {
				ret = close_container(t, true, OFF(p), err);
			} else if (c == ']' && !t->stack[t->depth - 1]) {
				ret = close_container(t, false, OFF(p), err);
			} else {
				ret = unexpected(t, err, OFF(p), c,
						 t->stack[t->depth - 1] ? "',' or '}'"
									: "',' or ']'");
			}
			if (ret)
				goto out;
			p++;
			break;
		case ST_VALUE:
		case ST_ARR_FIRST:
			while (p < end && is_ws[(unsigned char)*p])
				p++;
			if (p == end)
				break;
			c = (unsigned char)*p;
			if (c == ']' && t->state == ST_ARR_FIRST)
				ret = close_container(t, false, OFF(p), err);
			else
				ret = begin_value(t, c, OFF(p), err);
			if (ret)
				goto out;
			seg = t->state == ST_NUMBER ? p : p + 1;
			p++;
			break;
		case ST_OBJ_FIRST:
		case ST_KEY:
			while (p < end && is_ws[(unsigned char)*p])
				p++;
			if (p == end)
				break;
			c = (unsigned char)*p;
			if (c == '"') {
				t->tok_off = OFF(p);
				t->is_key = true;
				t->copying = false;
				t->skipped_len = 0;
				t->utf8_need = 0;
				t->hi_surrogate = 0;
				t->skip_scalar = false;
				t->state = ST_STRING;
			} else if (c == '}' && t->state == ST_OBJ_FIRST) {
				ret = close_container(t, true, OFF(p), err);
			} else {
				ret = unexpected(t, err, OFF(p), c,
						 t->state == ST_OBJ_FIRST ? "a string key or '}'"
									  : "a string key");
			}
			if (ret)
				goto out;
			p++;
			seg = p;
			break;
		case ST_COLON:
			while (p < end && is_ws[(unsigned char)*p])
				p++;
			if (p == end)
				break;
			c = (unsigned char)*p;
			if (c != ':') {
				ret = unexpected(t, err, OFF(p), c, "':'");
				goto out;
			}
			t->state = ST_VALUE;
			p++;
			break;
		case ST_DONE:
			while (p < end && is_ws[(unsigned char)*p])
				p++;
			if (p == end)
				break;
			ret = fail(t, err, OFF(p), "unexpected data after the top-level value");
			goto out;
		case ST_FAILED:
			ret = t->fail_code;
			goto out;
		}
	}
	/* the chunk ends inside a token: save its text */
	if (t->state == ST_STRING || t->state == ST_NUMBER)
		ret = take(t, seg, end, err);
out:
	t->base += (uint64_t)(p - data);
	if (ret > 0)
		ret = 0;
	if (!ret && p != end)
		BUG("json tokenizer stopped early");
	return ret;
#undef OFF
}

int json_tok_finish(struct json_tok *t, struct gdn_err *err)
{
	const char *why;

	if (t->state == ST_FAILED)
		return t->fail_code ? t->fail_code : GDN_EPARSE;
	if (t->state == ST_NUMBER && !t->depth) {
		why = number_end_state(t->num);
		if (why)
			return fail(t, err, t->base, "unexpected end of input, expected %s", why);
		/* the text is already in buf (or skipped) */
		return finish_scalar(t, JT_NUMBER, t->buf.buf + t->buf.len, t->buf.buf + t->buf.len,
				     err);
	}
	if (t->state != ST_DONE)
		return fail(t, err, t->base, "unexpected end of input%s",
			    t->base ? "" : " (empty document)");
	return 0;
}
