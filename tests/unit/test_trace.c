/*
 * Unit tests of the trace engine: the tokenizer (every chunk size, every
 * error), the gzip stage, exact time parsing, and the aggregation rules
 * (nesting, partial overlap, B/E pairs, late metadata, selection, steps).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include <zlib.h>
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/trace.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

/* ---- tokenizer ---- */

struct collect {
	struct sbuf out;
	const char *skip_key; /* return JSON_TOK_SKIP on this key */
	bool skip_objects;    /* return JSON_TOK_SKIP on every nested OBJ_BEGIN */
};

static int collect_cb(void *ctx, const struct json_token *tok, struct gdn_err *err)
{
	struct collect *c = ctx;
	static const char *const names[] = {"{", "}", "[", "]", "K", "S", "N", "T", "F", "0"};

	sbuf_addf(&c->out, "%s", names[tok->type]);
	if (tok->str) {
		sbuf_addch(&c->out, '(');
		sbuf_add(&c->out, tok->str, tok->len);
		sbuf_addch(&c->out, ')');
	}
	sbuf_addf(&c->out, "@%llu/%u ", (unsigned long long)tok->offset, tok->depth);
	if (tok->type == JT_KEY && c->skip_key && strlen(c->skip_key) == tok->len &&
	    !memcmp(tok->str, c->skip_key, tok->len))
		return JSON_TOK_SKIP;
	if (tok->type == JT_OBJ_BEGIN && tok->depth && c->skip_objects)
		return JSON_TOK_SKIP;
	return 0;
}

/* Tokenise `in` in chunks of `chunk` bytes; the token list or "ERR <msg>" goes to out. */
static int tokenize(const char *in, size_t len, size_t chunk, struct collect *c, size_t tmax,
		    unsigned dmax)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct json_tok *t = json_tok_new(collect_cb, c, tmax, dmax);
	int ret = 0;

	sbuf_reset(&c->out);
	for (size_t off = 0; off < len && !ret; off += chunk) {
		size_t n = len - off < chunk ? len - off : chunk;
		char *copy = xmalloc(n ? n : 1);

		/* a private copy, so that reading past the chunk is caught by ASan */
		memcpy(copy, in + off, n);
		ret = json_tok_feed(t, copy, n, &err);
		free(copy);
	}
	if (!ret)
		ret = json_tok_finish(t, &err);
	if (ret) {
		sbuf_reset(&c->out);
		sbuf_addf(&c->out, "ERR %s", err.msg);
	}
	json_tok_free(t);
	return ret;
}

/* The same tokens (or error) for every chunk size. */
static void expect_tokens(const char *in, const char *want, const char *skip_key, bool skip_obj)
{
	struct collect c = {SBUF_INIT, skip_key, skip_obj};
	size_t len = strlen(in);

	for (size_t chunk = 1; chunk <= len + 1; chunk++) {
		tokenize(in, len, chunk, &c, 64, 8);
		sbuf_rtrim(&c.out);
		if (strcmp(c.out.buf, want))
			fail_msg("input %s, chunk %zu:\n got: %s\nwant: %s", in, chunk, c.out.buf,
				 want);
	}
	sbuf_release(&c.out);
}

static void tok_basic(void **state)
{
	expect_tokens("{\"a\": [1, -2.5e+3, true, false, null, \"x\"]}",
		      "{@0/0 K(a)@1/1 [@6/1 N(1)@7/2 N(-2.5e+3)@10/2 T@19/2 F@25/2 0@32/2 "
		      "S(x)@38/2 ]@41/1 }@42/0",
		      NULL, false);
	expect_tokens(" 0 ", "N(0)@1/0", NULL, false);
	expect_tokens("-0.0e0", "N(-0.0e0)@0/0", NULL, false);
	expect_tokens("[]", "[@0/0 ]@1/0", NULL, false);
	expect_tokens("{}", "{@0/0 }@1/0", NULL, false);
	expect_tokens("\"\"", "S()@0/0", NULL, false);
	expect_tokens("[[[]],{}]", "[@0/0 [@1/1 [@2/2 ]@3/2 ]@4/1 {@6/1 }@7/1 ]@8/0", NULL, false);
}

static void tok_escapes(void **state)
{
	expect_tokens("\"a\\n\\\"\\\\\\/\\b\\f\\r\\t\"", "S(a\n\"\\/\b\f\r\t)@0/0", NULL, false);
	/* BMP, a surrogate pair (U+1F600), lone surrogates become U+FFFD */
	expect_tokens("\"\\u00e9\\u20AC\\ud83d\\ude00\"",
		      "S(\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80)@0/0", NULL, false);
	expect_tokens("\"\\ud83dx\\ude00\\ud83d\"", "S(\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd)@0/0",
		      NULL, false);
	expect_tokens("\"\\ud83d\\n\"", "S(\xef\xbf\xbd\n)@0/0", NULL, false);
	expect_tokens("\"\\ud83d\\ud83d\\ude00\"", "S(\xef\xbf\xbd\xf0\x9f\x98\x80)@0/0", NULL,
		      false);
	/* raw UTF-8 passes through */
	expect_tokens("\"\xc3\xa9\xf0\x9f\x98\x80\"", "S(\xc3\xa9\xf0\x9f\x98\x80)@0/0", NULL,
		      false);
}

static void tok_skip(void **state)
{
	expect_tokens("{\"a\": {\"b\": [1, {\"c\": \"\\u0041\"}]}, \"d\": 2}",
		      "{@0/0 K(a)@1/1 K(d)@35/1 N(2)@40/1 }@41/0", "a", false);
	expect_tokens("{\"a\": \"long\", \"b\": 1}", "{@0/0 K(a)@1/1 K(b)@14/1 N(1)@19/1 }@20/0",
		      "a", false);
	expect_tokens("[{\"x\": [1]}, 2]", "[@0/0 {@1/1 N(2)@13/1 ]@14/0", NULL, true);
	/* skipped values are still validated */
	expect_tokens("{\"a\": [1, }",
		      "ERR invalid JSON at byte offset 10: unexpected '}', "
		      "expected a value",
		      "a", false);
	expect_tokens("{\"a\": \"\\q\"}",
		      "ERR invalid JSON at byte offset 7: invalid escape '\\' followed by 'q'", "a",
		      false);
}

static void tok_errors(void **state)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
	    {"", "ERR invalid JSON at byte offset 0: unexpected end of input (empty document)"},
	    {"   ", "ERR invalid JSON at byte offset 3: unexpected end of input"},
	    {"[1,]", "ERR invalid JSON at byte offset 3: unexpected ']', expected a value"},
	    {"{\"a\":1,}",
	     "ERR invalid JSON at byte offset 7: unexpected '}', expected a string key"},
	    {"{1:2}",
	     "ERR invalid JSON at byte offset 1: unexpected '1', expected a string key or '}'"},
	    {"{\"a\" 1}", "ERR invalid JSON at byte offset 5: unexpected '1', expected ':'"},
	    {"[1 2]", "ERR invalid JSON at byte offset 3: unexpected '2', expected ',' or ']'"},
	    {"{\"a\":1]", "ERR invalid JSON at byte offset 6: unexpected ']', expected ',' or '}'"},
	    {"01", "ERR invalid JSON at byte offset 1: unexpected data after the top-level value"},
	    {"-", "ERR invalid JSON at byte offset 1: unexpected end of input, expected a digit "
		  "after '-'"},
	    {"1.", "ERR invalid JSON at byte offset 2: unexpected end of input, expected a digit "
		   "after '.'"},
	    {"[1.e5]", "ERR invalid JSON at byte offset 3: unexpected 'e', expected a digit after "
		       "'.'"},
	    {"[1e]", "ERR invalid JSON at byte offset 3: unexpected ']', expected a digit or sign "
		     "in the exponent"},
	    {"[+1]", "ERR invalid JSON at byte offset 1: unexpected '+', expected a value"},
	    {"[tru]", "ERR invalid JSON at byte offset 4: unexpected ']', expected 'e' of 'true'"},
	    {"nul", "ERR invalid JSON at byte offset 3: unexpected end of input"},
	    {"[NaN]", "ERR invalid JSON at byte offset 1: unexpected 'N', expected a value"},
	    {"\"abc", "ERR invalid JSON at byte offset 4: unexpected end of input"},
	    {"\"a\tb\"", "ERR invalid JSON at byte offset 2: control character 0x09 in string"},
	    {"\"\\u12g4\"", "ERR invalid JSON at byte offset 5: invalid \\u escape: 'g' is not a "
			    "hex digit"},
	    {"\"\xff\"", "ERR invalid JSON at byte offset 1: invalid UTF-8 in string"},
	    {"\"\xc3\"", "ERR invalid JSON at byte offset 2: invalid UTF-8 in string"},
	    {"\"\xe0\x80\x80\"", "ERR invalid JSON at byte offset 2: invalid UTF-8 in string"},
	    {"\"\xed\xa0\x80\"", "ERR invalid JSON at byte offset 2: invalid UTF-8 in string"},
	    {"\xef\xbb\xbf{}",
	     "ERR invalid JSON at byte offset 0: unexpected byte 0xef, expected a "
	     "value"},
	    {"{} {}",
	     "ERR invalid JSON at byte offset 3: unexpected data after the top-level value"},
	    {"[[[[[[[[[1]]]]]]]]]",
	     "ERR invalid JSON at byte offset 8: nesting deeper than 8 levels"},
	    {"\"0123456789012345678901234567890123456789012345678901234567890123456789\"",
	     "ERR invalid JSON at byte offset 0: string longer than the 64-byte token cap"},
	    {"[12345678901234567890123456789012345678901234567890123456789012345678901]",
	     "ERR invalid JSON at byte offset 1: number longer than the 64-byte token cap"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		expect_tokens(cases[i].in, cases[i].want, NULL, false);
}

/* Every prefix of a valid document is an error at its end; no byte is misread. */
static void tok_every_prefix(void **state)
{
	const char *doc = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\\u00e9\",\"ts\":1.5e0,"
			  "\"dur\":-0,\"args\":{\"k\":[true,false,null]}}],\"x\":{}}";
	size_t len = strlen(doc);
	struct collect c = {SBUF_INIT, NULL, false};
	struct sbuf want = SBUF_INIT;

	for (size_t cut = 0; cut < len; cut++) {
		tokenize(doc, cut, 3, &c, 0, 0);
		sbuf_reset(&want);
		sbuf_addf(&want, "ERR invalid JSON at byte offset %zu: unexpected end of input",
			  cut);
		if (strncmp(c.out.buf, want.buf, want.len))
			fail_msg("prefix %zu: %s", cut, c.out.buf);
	}
	assert_int_equal(tokenize(doc, len, 1, &c, 0, 0), 0);
	sbuf_release(&c.out);
	sbuf_release(&want);
}

/* A huge skipped string fails on the cap without being kept. */
static void tok_cap_skipped(void **state)
{
	struct collect c = {SBUF_INIT, "big", false};
	struct gdn_err err = GDN_ERR_INIT;
	struct json_tok *t = json_tok_new(collect_cb, &c, 1000, 0);
	char chunk[256];
	int ret;

	memset(chunk, 'x', sizeof(chunk));
	ret = json_tok_feed(t, "{\"big\": \"", 9, &err);
	for (int i = 0; i < 100 && !ret; i++)
		ret = json_tok_feed(t, chunk, sizeof(chunk), &err);
	assert_int_equal(ret, GDN_EPARSE);
	assert_string_equal(
	    err.msg, "invalid JSON at byte offset 8: string longer than the 1000-byte token cap");
	/* after an error, the tokenizer stays failed */
	assert_int_equal(json_tok_feed(t, "\"}", 2, &err), GDN_EPARSE);
	json_tok_free(t);
	sbuf_release(&c.out);
}

/* ---- time parsing ---- */

static void ps_parse(void **state)
{
	static const struct {
		const char *in;
		long long ps;
	} ok[] = {
	    {"0", 0},
	    {"1", 1000000},
	    {"-2", -2000000},
	    {"24.482443", 24482443},
	    {"903466.93900000001", 903466939000LL},
	    {"9.9999999999999995e-07", 1},
	    {"1e-06", 1},
	    {"4e-07", 0},
	    {"5e-07", 1},
	    {"-5e-07", -1},
	    {"1.5E+3", 1500000000},
	    {"0.0000005", 1},
	    {"1145562.984519", 1145562984519LL},
	    {"1712195495.4067528", 1712195495406753LL},
	};
	gdn_ps v;

	for (size_t i = 0; i < ARRAY_SIZE(ok); i++) {
		if (gdn_ps_parse_us(ok[i].in, strlen(ok[i].in), &v))
			fail_msg("'%s' did not parse", ok[i].in);
		if (v != (gdn_ps)ok[i].ps)
			fail_msg("'%s' gave %lld, want %lld", ok[i].in, (long long)v, ok[i].ps);
	}
	/* Kineto absolute ts with ns fractions: exact beyond a double */
	assert_int_equal(gdn_ps_parse_us("1712195495406752.8", 18, &v), 0);
	assert_true(v / 1000000 == (gdn_ps)1712195495406752LL && v % 1000000 == 800000);
	/* not numbers */
	assert_int_equal(gdn_ps_parse_us("", 0, &v), -1);
	assert_int_equal(gdn_ps_parse_us("abc", 3, &v), -1);
	assert_int_equal(gdn_ps_parse_us("1.", 2, &v), -1);
	assert_int_equal(gdn_ps_parse_us("01", 2, &v), -1);
	assert_int_equal(gdn_ps_parse_us("1e", 2, &v), -1);
	assert_int_equal(gdn_ps_parse_us("1e999", 5, &v), -1);
	/* huge exponents of tiny mantissas do not hang */
	assert_int_equal(gdn_ps_parse_us("1e-99999999999", 14, &v), 0);
	assert_true(v == 0);
}

static void ps_format(void **state)
{
	struct sbuf sb = SBUF_INIT;

	gdn_ps_fmt_ms(&sb, (gdn_ps)218985000000LL);
	assert_string_equal(sb.buf, "218.985");
	sbuf_reset(&sb);
	gdn_ps_fmt_ms(&sb, (gdn_ps)499999);
	assert_string_equal(sb.buf, "0.000");
	sbuf_reset(&sb);
	gdn_ps_fmt_ms(&sb, (gdn_ps)500000);
	assert_string_equal(sb.buf, "0.001");
	sbuf_reset(&sb);
	gdn_ps_fmt_ms(&sb, -(gdn_ps)1751883000000LL);
	assert_string_equal(sb.buf, "-1751.883");
	sbuf_reset(&sb);
	gdn_ps_fmt_ms(&sb, -(gdn_ps)1);
	assert_string_equal(sb.buf, "0.000");
	sbuf_release(&sb);
}

/* ---- gzip stage ---- */

static int gz_collect(void *ctx, const char *data, size_t len, struct gdn_err *err)
{
	sbuf_add(ctx, data, len);
	return 0;
}

static void gzip_member(struct sbuf *out, const char *s, size_t len)
{
	z_stream zs;
	unsigned char buf[4096];
	int zret;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
			 Z_OK);
	zs.next_in = (unsigned char *)s;
	zs.avail_in = (uInt)len;
	do {
		zs.next_out = buf;
		zs.avail_out = sizeof(buf);
		zret = deflate(&zs, Z_FINISH);
		sbuf_add(out, buf, sizeof(buf) - zs.avail_out);
	} while (zret == Z_OK);
	assert_int_equal(zret, Z_STREAM_END);
	deflateEnd(&zs);
}

static int gz_run(const struct sbuf *in, size_t chunk, struct sbuf *out, struct gdn_err *err)
{
	struct gdn_gz *gz = gdn_gz_new(gz_collect, out);
	int ret = 0;

	sbuf_reset(out);
	for (size_t off = 0; off < in->len && !ret; off += chunk)
		ret = gdn_gz_feed(gz, in->buf + off, in->len - off < chunk ? in->len - off : chunk,
				  err);
	if (!ret)
		ret = gdn_gz_finish(gz, err);
	gdn_gz_free(gz);
	return ret;
}

static void gz_members(void **state)
{
	struct sbuf in = SBUF_INIT, out = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	size_t chunks[] = {1, 2, 3, 17, 4096, 1 << 20};

	gzip_member(&in, "{\"traceEvents\":", 15);
	gzip_member(&in, "", 0);
	gzip_member(&in, "[]}", 3);
	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
		assert_int_equal(gz_run(&in, chunks[i], &out, &err), 0);
		assert_string_equal(out.buf, "{\"traceEvents\":[]}");
	}
	/* plain input passes through, also a single byte */
	sbuf_reset(&in);
	sbuf_adds(&in, "[1]");
	assert_int_equal(gz_run(&in, 1, &out, &err), 0);
	assert_string_equal(out.buf, "[1]");
	sbuf_reset(&in);
	sbuf_adds(&in, "7");
	assert_int_equal(gz_run(&in, 1, &out, &err), 0);
	assert_string_equal(out.buf, "7");
	sbuf_release(&in);
	sbuf_release(&out);
}

static void gz_bad(void **state)
{
	struct sbuf in = SBUF_INIT, out = SBUF_INIT, cut = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *doc = "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":2}]}";

	gzip_member(&in, doc, strlen(doc));
	/* truncated anywhere inside: an error, never a crash */
	for (size_t n = 2; n < in.len; n++) {
		sbuf_reset(&cut);
		sbuf_add(&cut, in.buf, n);
		assert_int_equal(gz_run(&cut, 5, &out, &err), GDN_EPARSE);
		if (!strstr(err.msg, "truncated gzip data") && !strstr(err.msg, "corrupt gzip"))
			fail_msg("cut %zu: %s", n, err.msg);
	}
	assert_int_equal(gz_run(&cut, 5, &out, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, "truncated gzip data: the input ends inside member 1"));
	/* a corrupt header */
	sbuf_reset(&cut);
	sbuf_add(&cut, in.buf, in.len);
	cut.buf[2] = 7; /* compression method */
	assert_int_equal(gz_run(&cut, 1, &out, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, "corrupt gzip data at compressed byte offset "));
	assert_non_null(strstr(err.msg, ": unknown compression method"));
	/* a corrupt trailer (CRC) */
	sbuf_reset(&cut);
	sbuf_add(&cut, in.buf, in.len);
	cut.buf[in.len - 6] ^= 0x55;
	assert_int_equal(gz_run(&cut, 4096, &out, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, "incorrect data check"));
	sbuf_release(&in);
	sbuf_release(&out);
	sbuf_release(&cut);
}

/* ---- aggregation ---- */

static int summarize(const char *json, size_t chunk, const struct gdn_trace_opts *o,
		     struct gdn_trace_summary *s, struct gdn_err *err)
{
	struct gdn_trace *t = gdn_trace_new(o);
	size_t len = strlen(json);
	int ret = 0;

	gdn_trace_summary_release(s);
	for (size_t off = 0; off < len && !ret; off += chunk)
		ret = gdn_trace_feed(t, json + off, len - off < chunk ? len - off : chunk, err);
	if (!ret)
		ret = gdn_trace_finish(t, s, err);
	gdn_trace_free(t);
	return ret;
}

static const struct gdn_trace_row *find_row(const struct gdn_trace_rows *rows, const char *key)
{
	for (size_t i = 0; i < rows->nr; i++)
		if (!strcmp(rows->v[i].key, key))
			return &rows->v[i];
	fail_msg("no row '%s'", key);
	return NULL;
}

#define US(x) ((gdn_ps)(x)*GDN_PS_PER_US)

static void expect_op(const struct gdn_trace_summary *s, const char *name, uint64_t count,
		      gdn_ps total, gdn_ps self)
{
	const struct gdn_trace_row *r = find_row(&s->ops, name);

	if (r->count != count || r->total != total || r->self != self)
		fail_msg("op %s: count %llu total %lld self %lld; want %llu %lld %lld", name,
			 (unsigned long long)r->count, (long long)r->total, (long long)r->self,
			 (unsigned long long)count, (long long)total, (long long)self);
}

#define META_XLA                                                                               \
	"{\"ph\":\"M\",\"pid\":3,\"name\":\"process_name\",\"args\":{\"name\":\"/"             \
	"device:TPU:0\"}},"                                                                    \
	"{\"ph\":\"M\",\"pid\":3,\"tid\":3,\"name\":\"thread_name\",\"args\":{\"name\":\"XLA " \
	"Ops\"}}"

static void agg_nesting(void **state)
{
	/* while.1 [0,100) contains fusion.1 [10,30) and fusion.2 [40,50) which contains copy
	 * [42,44) */
	const char *doc =
	    "{\"traceEvents\":[" META_XLA ","
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":0,\"dur\":100,\"name\":\"while.1\","
	    "\"args\":{\"hlo_category\":\"while\"}},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":10,\"dur\":20,\"name\":\"fusion.1\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":40,\"dur\":10,\"name\":\"fusion.2\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":42,\"dur\":2,\"name\":\"copy.3\"},"
	    "{}]}";
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	size_t chunks[] = {1, 2, 5, 64, 100000};

	gdn_trace_summary_init(&s);
	for (size_t i = 0; i < ARRAY_SIZE(chunks); i++) {
		assert_int_equal(summarize(doc, chunks[i], NULL, &s, &err), 0);
		assert_int_equal(s.mode, GDN_TRACE_MODE_XLA);
		assert_int_equal(s.events_total, 7);
		assert_int_equal(s.events_complete, 4);
		assert_int_equal(s.events_selected, 4);
		assert_true(s.total == US(132));
		assert_true(s.self == US(100));
		expect_op(&s, "while.1", 1, US(100), US(70));
		expect_op(&s, "fusion.1", 1, US(20), US(20));
		expect_op(&s, "fusion.2", 1, US(10), US(8));
		expect_op(&s, "copy.3", 1, US(2), US(2));
		/* categories: hlo_category, else the name without ".N" */
		assert_true(find_row(&s.categories, "while")->self == US(70));
		assert_true(find_row(&s.categories, "fusion")->self == US(28));
		assert_true(find_row(&s.categories, "copy")->count == 1);
		assert_string_equal(s.ops.v[0].key, "while.1");
		assert_string_equal(s.devices.v[0].key, "TPU:0");
	}
	gdn_trace_summary_release(&s);
}

static void agg_partial_overlap(void **state)
{
	/* Kineto: a [0,10), b [5,15) partly overlapping, c [12,13) inside b, d [20,20) */
	const char *doc = "[{\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":0,\"dur\":"
			  "10,\"name\":\"a\"},"
			  "{\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":5,\"dur\":"
			  "10,\"name\":\"b\"},"
			  "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"pid\":0,\"tid\":7,\"ts\":12,"
			  "\"dur\":1,\"name\":\"c\"},"
			  "{\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":20,\"dur\":"
			  "0,\"name\":\"d\"},"
			  "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"pid\":0,\"tid\":7,\"ts\":0,\"dur\":"
			  "100,\"name\":\"cpu\"},"
			  "{\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":1,\"tid\":7,\"ts\":0,\"dur\":3,"
			  "\"name\":\"a\"}]";
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	gdn_trace_summary_init(&s);
	assert_int_equal(summarize(doc, 3, NULL, &s, &err), 0);
	assert_int_equal(s.mode, GDN_TRACE_MODE_KINETO);
	assert_int_equal(s.events_selected, 5);
	/* the union of pid 0's intervals is 15, plus 3 on pid 1; nothing counted twice */
	assert_true(s.self == US(18));
	assert_true(s.total == US(24));
	expect_op(&s, "a", 2, US(13), US(8));
	expect_op(&s, "b", 1, US(10), US(9));
	expect_op(&s, "c", 1, US(1), US(1));
	expect_op(&s, "d", 1, 0, 0);
	assert_true(find_row(&s.categories, "kernel")->self == US(17));
	assert_int_equal(s.devices.nr, 2);
	assert_string_equal(s.devices.v[0].key, "pid 0");
	gdn_trace_summary_release(&s);
}

static void agg_out_of_order(void **state)
{
	/* events listed child first, parent last (as Kineto and B/E can) */
	const char *doc =
	    "{\"traceEvents\":[" META_XLA ","
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":30,\"dur\":5,\"name\":\"c2\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":10,\"dur\":5,\"name\":\"c1\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":10,\"dur\":40,\"name\":\"p\"}]}";
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;

	gdn_trace_summary_init(&s);
	assert_int_equal(summarize(doc, 1000, NULL, &s, &err), 0);
	expect_op(&s, "p", 1, US(40), US(30));
	expect_op(&s, "c1", 1, US(5), US(5));
	assert_int_equal(s.events_late, 0);
	/* with a window of 1 event, the parent comes too late: self 0, and said so */
	o.window = 1;
	assert_int_equal(summarize(doc, 1000, &o, &s, &err), 0);
	assert_int_equal(s.events_late, 2);
	assert_true(s.self <= US(40));
	assert_int_equal(s.warnings.nr, 1);
	assert_non_null(strstr(s.warnings.v[0], "out of time order"));
	gdn_trace_summary_release(&s);
}

static void agg_begin_end(void **state)
{
	const char *doc = "{\"traceEvents\":["
			  "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":0,\"name\":\"outer\"},"
			  "{\"ph\":\"B\",\"pid\":1,\"tid\":1,\"ts\":2,\"name\":\"inner\"},"
			  "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":5},"
			  "{\"ph\":\"X\",\"pid\":1,\"tid\":1,\"ts\":6,\"dur\":1,\"name\":\"x\"},"
			  "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":10},"
			  "{\"ph\":\"E\",\"pid\":1,\"tid\":1,\"ts\":11},"
			  "{\"ph\":\"B\",\"pid\":1,\"tid\":2,\"ts\":0,\"name\":\"open\"},"
			  "{\"ph\":\"M\",\"pid\":1,\"tid\":1,\"name\":\"thread_name\","
			  "\"args\":{\"name\":\"threadA\"}}]}";
	const char *threads[] = {"threadA", NULL};
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	o.threads = threads;
	gdn_trace_summary_init(&s);
	assert_int_equal(summarize(doc, 2, &o, &s, &err), 0);
	assert_int_equal(s.mode, GDN_TRACE_MODE_CUSTOM);
	assert_int_equal(s.events_complete, 3);
	assert_int_equal(s.events_unmatched, 2); /* a stray E, and B "open" never closed */
	expect_op(&s, "outer", 1, US(10), US(6));
	expect_op(&s, "inner", 1, US(3), US(3));
	expect_op(&s, "x", 1, US(1), US(1));
	assert_true(s.self == US(10));
	gdn_trace_summary_release(&s);
}

static void agg_ids_and_late_metadata(void **state)
{
	/* string pids, 64-bit and negative tids, metadata after the events */
	const char *doc =
	    "{\"schemaVersion\":1,\"traceEvents\":["
	    "{\"ph\":\"X\",\"pid\":\"Spans\",\"tid\":-247463936,\"ts\":\"1\",\"dur\":\"2\","
	    "\"name\":\"s\"},"
	    "{\"ph\":\"X\",\"pid\":4,\"tid\":3911698747,\"ts\":1,\"dur\":2,\"name\":\"t\"},"
	    "{\"ph\":\"X\",\"pid\":4,\"tid\":3911698747,\"ts\":1,\"dur\":2,\"name\":\"t\"},"
	    "{\"ph\":\"X\",\"pid\":4,\"tid\":-1,\"ts\":1,\"dur\":3,\"name\":\"u\"},"
	    "{\"ph\":\"X\",\"pid\":\"4\",\"tid\":3911698747,\"ts\":1e1,\"dur\":1,\"name\":\"t\"},"
	    "{\"ph\":\"M\",\"pid\":4,\"tid\":3911698747,\"name\":\"thread_name\","
	    "\"args\":{\"name\":\"XLA Ops\"}},"
	    "{\"ph\":\"M\",\"pid\":4,\"name\":\"process_name\",\"args\":{\"name\":\"h "
	    "/device:TPU:1\"}},"
	    "{\"ph\":\"M\",\"pid\":\"Spans\",\"tid\":-247463936,\"name\":\"thread_name\","
	    "\"args\":{\"name\":\"XLA Ops\"}}],"
	    "\"big\":{\"a\":[1,2,{\"b\":\"c\"}]}}";
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	gdn_trace_summary_init(&s);
	assert_int_equal(summarize(doc, 1, NULL, &s, &err), 0);
	assert_int_equal(s.mode, GDN_TRACE_MODE_XLA);
	/* "Spans" is not a /device: process; tid -1 has no name */
	assert_int_equal(s.tracks_selected, 1);
	expect_op(&s, "t", 3, US(5), US(3));
	assert_string_equal(s.devices.v[0].key, "TPU:1");
	gdn_trace_summary_release(&s);
}

static void agg_selection(void **state)
{
	const char *doc =
	    "{\"traceEvents\":["
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":0,\"dur\":4,\"name\":\"a.1\","
	    "\"args\":{\"source\":\"/x/m.py:10\",\"tf_op\":\"jit(f)/dot:\",\"long_name\":\"%a\"}},"
	    "{\"ph\":\"X\",\"pid\":4,\"tid\":3,\"ts\":0,\"dur\":6,\"name\":\"a.1\","
	    "\"args\":{\"source\":\"/x/m.py:10\"}},"
	    "{\"ph\":\"X\",\"pid\":4,\"tid\":3,\"ts\":10,\"dur\":1,\"name\":\"a.1\","
	    "\"args\":{\"source\":\"/x/m.py:12\"}},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":2,\"ts\":0,\"dur\":50,\"name\":\"jit_f(1)\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":2,\"ts\":60,\"dur\":50,\"name\":\"jit_f(1)\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":2,\"ts\":120,\"dur\":5,\"name\":\"jit_g(2)\"},"
	    "{\"ph\":\"M\",\"pid\":3,\"name\":\"process_name\",\"args\":{\"name\":\"/"
	    "device:TPU:0\"}},"
	    "{\"ph\":\"M\",\"pid\":4,\"name\":\"process_name\",\"args\":{\"name\":\"/"
	    "device:TPU:1\"}},"
	    "{\"ph\":\"M\",\"pid\":3,\"tid\":3,\"name\":\"thread_name\",\"args\":{\"name\":\"XLA "
	    "Ops\"}},"
	    "{\"ph\":\"M\",\"pid\":4,\"tid\":3,\"name\":\"thread_name\",\"args\":{\"name\":\"XLA "
	    "Ops\"}},"
	    "{\"ph\":\"M\",\"pid\":3,\"tid\":2,\"name\":\"thread_name\","
	    "\"args\":{\"name\":\"XLA Modules\"}}]}";
	const char *dev1[] = {"TPU:1", NULL}, *thr[] = {"XLA Modules", NULL};
	struct gdn_trace_opts o = GDN_TRACE_OPTS_INIT;
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	const struct gdn_trace_row *r;

	gdn_trace_summary_init(&s);
	assert_int_equal(summarize(doc, 7, NULL, &s, &err), 0);
	assert_int_equal(s.events_selected, 3);
	r = find_row(&s.ops, "a.1");
	assert_int_equal(r->count, 3);
	assert_string_equal(r->source, "/x/m.py:10"); /* the most common */
	assert_string_equal(r->tf_op, "jit(f)/dot:");
	assert_true(find_row(&s.sources, "/x/m.py:12")->self == US(1));
	assert_int_equal(s.steps, 2); /* the dominant XLA Modules module ran twice */
	assert_string_equal(s.steps_from, "XLA Modules jit_f(1)");
	/* --device TPU:1 */
	o.devices = dev1;
	assert_int_equal(summarize(doc, 7, &o, &s, &err), 0);
	assert_true(s.self == US(7));
	assert_int_equal(s.devices.nr, 1);
	assert_int_equal(s.steps, 0); /* TPU:1 has no XLA Modules events */
	/* --thread picks other threads */
	o.devices = NULL;
	o.threads = thr;
	assert_int_equal(summarize(doc, 7, &o, &s, &err), 0);
	assert_true(s.self == US(105));
	assert_string_equal(s.ops.v[0].key, "jit_f(1)");
	gdn_trace_summary_release(&s);
}

static void agg_steps_thread(void **state)
{
	const char *doc = "{\"traceEvents\":[" META_XLA ","
			  "{\"ph\":\"M\",\"pid\":3,\"tid\":1,\"name\":\"thread_name\","
			  "\"args\":{\"name\":\"Steps\"}},"
			  "{\"ph\":\"X\",\"pid\":3,\"tid\":1,\"ts\":0,\"dur\":10,\"name\":\"1\"},"
			  "{\"ph\":\"X\",\"pid\":3,\"tid\":1,\"ts\":10,\"dur\":10,\"name\":\"2\"},"
			  "{\"ph\":\"X\",\"pid\":3,\"tid\":1,\"ts\":20,\"dur\":10,\"name\":\"3\"},"
			  "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":0,\"dur\":6,\"name\":\"op\"}]}";
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT;

	gdn_trace_summary_init(&s);
	assert_int_equal(summarize(doc, 4, NULL, &s, &err), 0);
	assert_int_equal(s.steps, 3);
	assert_string_equal(s.steps_from, "Steps");
	gdn_trace_render_table(&s, GDN_TRACE_BY_OP, 10, &out);
	assert_non_null(strstr(out.buf, "3 steps (Steps): self 2.000 us per step"));
	sbuf_reset(&out);
	gdn_trace_render_markdown(&s, GDN_TRACE_BY_CATEGORY, 10, &out);
	assert_non_null(
	    strstr(out.buf, "  - `op`: `0.006 ms` (100.0%, 1 event, `0.002 ms` per step"));
	sbuf_release(&out);
	gdn_trace_summary_release(&s);
}

/* A JAX GPU profile's shape: host "train" annotations with step_num, ops on a Stream thread. */
#define GPU_META                                                                   \
	"{\"ph\":\"M\",\"pid\":1,\"name\":\"process_name\",\"args\":{\"name\":\"/" \
	"device:GPU:0\"}},"                                                        \
	"{\"ph\":\"M\",\"pid\":1,\"tid\":14,\"name\":\"thread_name\","             \
	"\"args\":{\"name\":\"Stream #14(Compute,Memset)\"}},"                     \
	"{\"ph\":\"M\",\"pid\":1,\"tid\":15,\"name\":\"thread_name\","             \
	"\"args\":{\"name\":\"XLA Ops\"}},"                                        \
	"{\"ph\":\"M\",\"pid\":701,\"name\":\"process_name\",\"args\":{\"name\":\"/host:CPU\"}}"

static void agg_host_step_annotations(void **state)
{
	/* steps 7 and 8 (the second "7" is the same step), an op before the first */
	const char *doc =
	    "{\"traceEvents\":[" GPU_META ","
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":14,\"ts\":5,\"dur\":1,\"name\":\"Memset 0\"},"
	    "{\"ph\":\"X\",\"pid\":701,\"tid\":9,\"ts\":10,\"dur\":5,\"name\":\"train\","
	    "\"args\":{\"step_num\":\"7\"}},"
	    "{\"ph\":\"X\",\"pid\":701,\"tid\":9,\"ts\":12,\"dur\":1,\"name\":\"train\","
	    "\"args\":{\"step_num\":7}},"
	    "{\"ph\":\"X\",\"pid\":701,\"tid\":9,\"ts\":30,\"dur\":5,\"name\":\"train\","
	    "\"args\":{\"step_num\":\"8\"}},"
	    "{\"ph\":\"X\",\"pid\":701,\"tid\":9,\"ts\":31,\"dur\":1,\"name\":\"other\","
	    "\"args\":{\"step_num\":\"x\"}},"
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":14,\"ts\":20,\"dur\":4,\"name\":\"gemm\"},"
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":14,\"ts\":29,\"dur\":2,\"name\":\"fusion_1\"},"
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":14,\"ts\":40,\"dur\":3,\"name\":\"gemm\"},"
	    "{\"ph\":\"X\",\"pid\":1,\"tid\":15,\"ts\":40,\"dur\":3,\"name\":\"not-a-stream\"}]}";
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	gdn_trace_summary_init(&s);
	for (size_t chunk = 1; chunk < 64; chunk += 21) {
		assert_int_equal(summarize(doc, chunk, NULL, &s, &err), 0);
		/* the GPU stream only: not the XLA Ops thread of a GPU process with streams */
		assert_int_equal(s.mode, GDN_TRACE_MODE_XLA);
		assert_int_equal(s.events_selected, 4);
		assert_true(s.self == 10 * GDN_PS_PER_US);
		assert_int_equal(s.steps, 2);
		assert_string_equal(s.steps_from, "host step annotations \"train\"");
		assert_int_equal(s.step_nr, 2);
		assert_int_equal(s.step_v[0].number, 7);
		assert_true(s.step_v[0].start == 10 * GDN_PS_PER_US);
		assert_int_equal(s.step_v[0].ops, 2);
		assert_true(s.step_v[0].self == 6 * GDN_PS_PER_US);
		assert_int_equal(s.step_v[1].number, 8);
		assert_int_equal(s.step_v[1].ops, 1);
		assert_true(s.step_v[1].self == 3 * GDN_PS_PER_US);
		/* Kineto's category for a GPU op without one */
		assert_non_null(find_row(&s.categories, "kernel"));
		assert_non_null(find_row(&s.categories, "gpu_memset"));
	}
	gdn_trace_summary_release(&s);
}

static void agg_steps_windows(void **state)
{
	/* a device Steps line wins over annotations; its events are the windows */
	const char *doc =
	    "{\"traceEvents\":[" META_XLA ","
	    "{\"ph\":\"M\",\"pid\":3,\"tid\":1,\"name\":\"thread_name\","
	    "\"args\":{\"name\":\"Steps\"}},"
	    "{\"ph\":\"X\",\"pid\":9,\"tid\":1,\"ts\":0,\"dur\":10,\"name\":\"s\","
	    "\"args\":{\"step_num\":1}},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":1,\"ts\":0,\"dur\":10,\"name\":\"1\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":1,\"ts\":10,\"dur\":10,\"name\":\"2\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":1,\"dur\":6,\"name\":\"op\"},"
	    "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":12,\"dur\":2,\"name\":\"op\"}]}";
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;
	json_t *j;

	(void)state;
	gdn_trace_summary_init(&s);
	assert_int_equal(summarize(doc, 7, NULL, &s, &err), 0);
	assert_string_equal(s.steps_from, "Steps");
	assert_int_equal(s.step_nr, 2);
	assert_true(s.step_v[0].self == 6 * GDN_PS_PER_US);
	assert_true(s.step_v[1].self == 2 * GDN_PS_PER_US);
	j = gdn_trace_summary_json(&s, 0);
	assert_int_equal(json_array_size(json_object_get(j, "per_step")), 2);
	json_decref(j);
	gdn_trace_summary_release(&s);
}

static void agg_not_traces(void **state)
{
	static const struct {
		const char *doc, *err;
	} bad[] = {
	    {"{\"a\":1}", "not a trace: the top-level object has no \"traceEvents\" array"},
	    {"{\"traceEvents\":{}}", "not a trace: \"traceEvents\" at byte offset 15 is an object, "
				     "not an array"},
	    {"42", "not a trace: the top-level value is a number, not an object with "
		   "\"traceEvents\" or an array of events"},
	    {"\"x\"", "not a trace: the top-level value is a string, not an object with "
		      "\"traceEvents\" or an array of events"},
	};
	static const char *const empty[] = {
	    "[]", "[1,\"a\",[],null,{}]", "{\"traceEvents\":[]}",
	    "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":\"x\",\"dur\":1}]}"};
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	gdn_trace_summary_init(&s);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(summarize(bad[i].doc, 1, NULL, &s, &err), GDN_EPARSE);
		assert_string_equal(err.msg, bad[i].err);
	}
	for (size_t i = 0; i < ARRAY_SIZE(empty); i++) {
		assert_int_equal(summarize(empty[i], 1, NULL, &s, &err), 0);
		assert_int_equal(s.events_selected, 0);
		assert_int_equal(s.mode, GDN_TRACE_MODE_NONE);
	}
	assert_int_equal(s.events_invalid, 1);
	gdn_trace_summary_release(&s);
}

/* Exactly 1,000,000 complete events: the profiler's cap. Fed to the aggregator directly. */
static void agg_truncation(void **state)
{
	struct gdn_trace_agg *a = gdn_trace_agg_new(NULL);
	struct gdn_trace_event ev;
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	memset(&ev, 0, sizeof(ev));
	ev.ph = 'X';
	ev.name = "op";
	ev.name_len = 2;
	ev.cat = "kernel";
	ev.cat_len = 6;
	ev.has_ts = ev.has_dur = true;
	ev.dur = 1;
	for (uint32_t i = 0; i < GDN_TRACE_EVENT_CAP1; i++) {
		ev.ts = i;
		gdn_trace_agg_event(a, &ev);
	}
	gdn_trace_summary_init(&s);
	assert_int_equal(gdn_trace_agg_finish(a, &s, &err), 0);
	assert_true(s.truncated);
	assert_true(s.self == (gdn_ps)GDN_TRACE_EVENT_CAP1);
	assert_non_null(strstr(s.warnings.v[0], "looks truncated"));
	gdn_trace_summary_release(&s);
	gdn_trace_agg_free(a);
}

/* Every byte of a trace replaced by bytes that matter: an answer or one line, never a crash. */
static void every_byte_corrupted(void **state)
{
	const char *doc = "{\"traceEvents\":[" META_XLA ","
			  "{\"ph\":\"X\",\"pid\":3,\"tid\":3,\"ts\":0,\"dur\":100,\"name\":\"w.1\","
			  "\"args\":{\"hlo_category\":\"while\",\"source\":\"a.py:1\"}},"
			  "{\"ph\":\"B\",\"pid\":3,\"tid\":3,\"ts\":1,\"name\":\"b\"},"
			  "{\"ph\":\"E\",\"pid\":3,\"tid\":3,\"ts\":2.5e0},{}]}";
	static const char repl[] = {'\0', '"', '\\', '{', '}',	  '[',	  ']', ',',
				    ':',  '0', '-',  'e', '\x80', '\xff', ' '};
	size_t len = strlen(doc);
	char *buf = xmalloc(len + 1);
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	gdn_trace_summary_init(&s);
	for (size_t pos = 0; pos < len; pos++) {
		for (size_t r = 0; r < sizeof(repl); r++) {
			struct gdn_trace *t = gdn_trace_new(NULL);
			int ret;

			memcpy(buf, doc, len);
			buf[pos] = repl[r];
			gdn_trace_summary_release(&s);
			ret = gdn_trace_feed(t, buf, pos + 1, &err);
			if (!ret)
				ret = gdn_trace_feed(t, buf + pos + 1, len - pos - 1, &err);
			if (!ret)
				ret = gdn_trace_finish(t, &s, &err);
			if (ret && (ret != GDN_EPARSE || strchr(err.msg, '\n') || !err.msg[0]))
				fail_msg("pos %zu: %d %s", pos, ret, err.msg);
			if (ret == GDN_EPARSE && !strncmp(err.msg, "invalid JSON", 12) &&
			    !strstr(err.msg, "byte offset"))
				fail_msg("pos %zu: %s", pos, err.msg);
			gdn_trace_free(t);
		}
	}
	gdn_trace_summary_release(&s);
	free(buf);
}

static void diff_basic(void **state)
{
	const char *before =
	    "[{\"ph\":\"X\",\"cat\":\"kernel\",\"ts\":0,\"dur\":10,\"name\":\"while.1\"},"
	    "{\"ph\":\"X\",\"cat\":\"kernel\",\"ts\":10,\"dur\":5,\"name\":\"f.2\"}]";
	const char *after =
	    "[{\"ph\":\"X\",\"cat\":\"kernel\",\"ts\":0,\"dur\":7,\"name\":\"f.2\"},"
	    "{\"ph\":\"X\",\"cat\":\"kernel\",\"ts\":7,\"dur\":1,\"name\":\"g.3\"}]";
	struct gdn_trace_summary b, a;
	struct gdn_trace_diff d;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf out = SBUF_INIT;
	json_t *doc;

	gdn_trace_summary_init(&b);
	gdn_trace_summary_init(&a);
	gdn_trace_diff_init(&d);
	assert_int_equal(summarize(before, 5, NULL, &b, &err), 0);
	assert_int_equal(summarize(after, 5, NULL, &a, &err), 0);
	gdn_trace_diff_compute(&d, &b, &a);
	assert_false(d.per_step);
	assert_int_equal(d.ops.nr, 3);
	assert_string_equal(d.ops.v[0].key, "while.1");
	assert_int_equal(d.ops.v[0].status, GDN_TRACE_DIFF_VANISHED);
	assert_string_equal(d.ops.v[1].key, "f.2");
	assert_true(d.ops.v[1].after - d.ops.v[1].before == US(2));
	assert_int_equal(d.ops.v[2].status, GDN_TRACE_DIFF_APPEARED);
	gdn_trace_diff_render_markdown(&d, 10, &out);
	assert_non_null(strstr(out.buf, "    - `while.1`: `0.010 ms -> 0.000 ms` (`-100.00%`, "
					"vanished).\n"));
	assert_non_null(
	    strstr(out.buf, "    - `g.3`: `0.000 ms -> 0.001 ms` (`new`, appeared).\n"));
	sbuf_reset(&out);
	gdn_trace_diff_render_table(&d, 10, &out);
	assert_non_null(strstr(out.buf, "-100.00%  while.1 (vanished)"));
	doc = gdn_trace_diff_json(&d, 0);
	assert_string_equal(json_string_value(json_object_get(doc, "schema")),
			    "gdnctl.trace_diff.v1");
	assert_int_equal(json_array_size(json_object_get(doc, "ops")), 3);
	json_decref(doc);
	sbuf_release(&out);
	gdn_trace_diff_release(&d);
	gdn_trace_summary_release(&b);
	gdn_trace_summary_release(&a);
}

/* ---- XPlane ---- */

/* One TPU plane: two nested ops on "XLA Ops", metadata after the lines. */
static void make_space(struct sbuf *space)
{
	struct sbuf plane = SBUF_INIT, line = SBUF_INIT, ev = SBUF_INIT, st = SBUF_INIT;
	struct sbuf ent = SBUF_INIT, md = SBUF_INIT;

	pb_uint(&plane, 1, 3);
	pb_bytes(&plane, 2, "/device:TPU:0", 13);
	pb_uint(&line, 1, 3);
	pb_bytes(&line, 2, "XLA Ops", 7);
	pb_uint(&line, 3, 1000); /* ns */
	pb_uint(&ev, 1, 1);	 /* while.5: [1us, 1us + 10us) */
	pb_uint(&ev, 2, 0);
	pb_uint(&ev, 3, 10000000);
	pb_msg(&line, 4, &ev);
	pb_uint(&ev, 1, 2); /* fusion.7 inside: 4 us, its own hlo_category stat wins */
	pb_uint(&ev, 2, 2000000);
	pb_uint(&ev, 3, 4000000);
	pb_uint(&st, 1, 1);
	pb_bytes(&st, 5, "custom", 6);
	pb_msg(&ev, 4, &st);
	pb_msg(&line, 4, &ev);
	pb_uint(&ev, 1, 2); /* an aggregate: not counted */
	pb_uint(&ev, 5, 7);
	pb_uint(&ev, 3, 99);
	pb_msg(&line, 4, &ev);
	pb_msg(&plane, 3, &line);
	for (int i = 1; i <= 2; i++) {
		pb_uint(&md, 1, (uint64_t)i);
		pb_bytes(&md, 2, i == 1 ? "while.5" : "fusion.7", i == 1 ? 7 : 8);
		pb_uint(&st, 1, 1);
		pb_uint(&st, 7, 9); /* ref_value: the name of stat metadata 9 */
		pb_msg(&md, 5, &st);
		pb_uint(&ent, 1, (uint64_t)i);
		pb_msg(&ent, 2, &md);
		pb_msg(&plane, 4, &ent);
	}
	for (int i = 0; i < 2; i++) {
		pb_uint(&md, 1, i ? 9 : 1);
		pb_bytes(&md, 2, i ? "loop" : "hlo_category", i ? 4 : 12);
		pb_uint(&ent, 1, i ? 9 : 1);
		pb_msg(&ent, 2, &md);
		pb_msg(&plane, 5, &ent);
	}
	pb_msg(space, 1, &plane);
	pb_bytes(space, 4, "host-a", 6);
	sbuf_release(&plane);
	sbuf_release(&line);
	sbuf_release(&ev);
	sbuf_release(&st);
	sbuf_release(&ent);
	sbuf_release(&md);
}

static void xplane_basic(void **state)
{
	struct sbuf space = SBUF_INIT;
	struct gdn_trace_summary s;
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	make_space(&space);
	assert_true(gdn_xplane_sniff(space.buf, space.len));
	assert_false(gdn_xplane_sniff("\n{\"traceEvents\":[]}", 19));
	assert_false(gdn_xplane_sniff("{}", 2));
	assert_false(gdn_xplane_sniff("", 0));
	gdn_trace_summary_init(&s);
	assert_int_equal(gdn_xplane_summarize_mem(space.buf, space.len, NULL, &s, &err), 0);
	assert_string_equal(s.format, "xplane");
	assert_int_equal(s.hosts.nr, 1);
	assert_string_equal(s.hosts.v[0], "host-a");
	assert_int_equal(s.events_selected, 2);
	assert_true(s.total == US(14));
	assert_true(s.self == US(10));
	assert_int_equal(s.ops.nr, 2);
	assert_string_equal(s.ops.v[0].key, "while.5");
	assert_string_equal(s.ops.v[0].category, "loop");
	assert_true(s.ops.v[0].self == US(6));
	assert_string_equal(s.ops.v[1].category, "custom");
	assert_string_equal(s.families.v[0].key, "while");
	assert_string_equal(s.devices.v[0].key, "TPU:0");
	assert_int_equal(s.warnings.nr, 1); /* the aggregate */
	gdn_trace_summary_release(&s);
	sbuf_release(&space);
}

static void xplane_errors(void **state)
{
	struct sbuf space = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_trace_summary s;
	static const struct {
		const char *data;
		size_t len;
		const char *msg;
	} bad[] = {
	    {"", 0, "byte offset 0: empty input"},
	    {"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12, "longer than"},
	    {"\x0b\x00", 2, "wire type 3/4"},
	    {"\x0c\x00", 2, "wire type 3/4"},
	    {"\x0e\x00", 2, "invalid wire type 6"},
	    {"\x0f\x00", 2, "invalid wire type 7"},
	    {"\x0a\x7f\x08\x01", 4, "goes past the end"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		gdn_trace_summary_init(&s);
		gdn_err_clear(&err);
		assert_int_equal(gdn_xplane_summarize_mem(bad[i].data, bad[i].len, NULL, &s, &err),
				 GDN_EPARSE);
		if (!strstr(err.msg, bad[i].msg))
			fail_msg("case %zu: %s", i, err.msg);
		gdn_trace_summary_release(&s);
	}
	/* every cut inside the plane fails */
	make_space(&space);
	for (size_t cut = 1; cut < space.len - 8; cut++) {
		gdn_trace_summary_init(&s);
		gdn_err_clear(&err);
		if (gdn_xplane_summarize_mem(space.buf, cut, NULL, &s, &err) != GDN_EPARSE)
			fail_msg("cut at %zu was accepted", cut);
		assert_non_null(strstr(err.msg, "byte offset"));
		assert_null(strchr(err.msg, '\n'));
		gdn_trace_summary_release(&s);
	}
	sbuf_release(&space);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(tok_basic),
	    cmocka_unit_test(tok_escapes),
	    cmocka_unit_test(tok_skip),
	    cmocka_unit_test(tok_errors),
	    cmocka_unit_test(tok_every_prefix),
	    cmocka_unit_test(tok_cap_skipped),
	    cmocka_unit_test(ps_parse),
	    cmocka_unit_test(ps_format),
	    cmocka_unit_test(gz_members),
	    cmocka_unit_test(gz_bad),
	    cmocka_unit_test(agg_nesting),
	    cmocka_unit_test(agg_partial_overlap),
	    cmocka_unit_test(agg_out_of_order),
	    cmocka_unit_test(agg_begin_end),
	    cmocka_unit_test(agg_ids_and_late_metadata),
	    cmocka_unit_test(agg_selection),
	    cmocka_unit_test(agg_steps_thread),
	    cmocka_unit_test(agg_host_step_annotations),
	    cmocka_unit_test(agg_steps_windows),
	    cmocka_unit_test(agg_not_traces),
	    cmocka_unit_test(agg_truncation),
	    cmocka_unit_test(every_byte_corrupted),
	    cmocka_unit_test(diff_basic),
	    cmocka_unit_test(xplane_basic),
	    cmocka_unit_test(xplane_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
