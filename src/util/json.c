#include "gdnctl/compat.h"
#include <locale.h>
#include <math.h>
#include "gdnctl/json.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

json_t *gdn_json_string_lossy(const char *s)
{
	json_t *j;
	char *copy;

	if (!s)
		return json_null();
	j = json_string(s);
	if (j)
		return j;
	copy = xstrdup(s);
	for (unsigned char *p = (unsigned char *)copy; *p; p++)
		if (*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

json_t *gdn_json_doc(const char *schema)
{
	json_t *doc = json_object();

	json_object_set_new(doc, "schema", json_string(schema));
	return doc;
}

static int dump_cb(const char *buffer, size_t size, void *data)
{
	sbuf_add(data, buffer, size);
	return 0;
}

/*
 * The documents are written here, byte for byte as jansson 2.14's
 * json_dump_callback writes them with JSON_INDENT(2) | JSON_PRESERVE_ORDER |
 * JSON_REAL_PRECISION(digits), but without its costs (a snprintf("%p") and a
 * hash table entry per container for loop detection, a callback per token):
 * the dump of a big trace summary took longer than reading the trace.
 * Whatever this writer does not handle the way jansson would (text that is
 * not UTF-8, a top level that is not a container, a locale's decimal comma,
 * nesting past JW_DEPTH, which is also how a loop ends) is written by
 * jansson instead, so the bytes are jansson's in every case.
 */
#define JW_DEPTH 2048

struct jw {
	struct sbuf *out;
	int digits;
	bool ok;
	size_t n;
	char buf[8192];
};

static void jw_flush(struct jw *w)
{
	if (w->n)
		sbuf_add(w->out, w->buf, w->n);
	w->n = 0;
}

static void jw_add(struct jw *w, const char *s, size_t len)
{
	if (len > sizeof(w->buf) - w->n) {
		jw_flush(w);
		if (len > sizeof(w->buf)) {
			sbuf_add(w->out, s, len);
			return;
		}
	}
	memcpy(w->buf + w->n, s, len);
	w->n += len;
}

static void jw_indent(struct jw *w, int depth)
{
	static const char spaces[] = "                                ";
	size_t k = (size_t)depth * 2;

	jw_add(w, "\n", 1);
	while (k) {
		size_t c = k < sizeof(spaces) - 1 ? k : sizeof(spaces) - 1;

		jw_add(w, spaces, c);
		k -= c;
	}
}

/* Length of the UTF-8 sequence at s (jansson's utf8_iterate), or 0 when invalid. */
static size_t jw_utf8(const unsigned char *s, size_t left)
{
	unsigned char u = s[0];
	size_t count;
	int32_t v;

	if (u >= 0xC2 && u <= 0xDF)
		count = 2, v = u & 0x1F;
	else if (u >= 0xE0 && u <= 0xEF)
		count = 3, v = u & 0xF;
	else if (u >= 0xF0 && u <= 0xF4)
		count = 4, v = u & 0x7;
	else
		return 0;
	if (count > left)
		return 0;
	for (size_t i = 1; i < count; i++) {
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
		v = (v << 6) + (s[i] & 0x3F);
	}
	if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF) || (count == 2 && v < 0x80) ||
	    (count == 3 && v < 0x800) || (count == 4 && v < 0x10000))
		return 0;
	return count;
}

static void jw_string(struct jw *w, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str, *run = s, *end = s + len;

	jw_add(w, "\"", 1);
	while (s < end) {
		unsigned char c = *s;
		char esc[8];
		size_t k;

		if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
			s++;
			continue;
		}
		if (c >= 0x80) {
			k = jw_utf8(s, (size_t)(end - s));
			if (!k) {
				w->ok = false;
				return;
			}
			s += k;
			continue;
		}
		jw_add(w, (const char *)run, (size_t)(s - run));
		esc[0] = '\\';
		esc[1] = c == '"'    ? '"'
			 : c == '\\' ? '\\'
			 : c == '\b' ? 'b'
			 : c == '\f' ? 'f'
			 : c == '\n' ? 'n'
			 : c == '\r' ? 'r'
			 : c == '\t' ? 't'
				     : 'u';
		k = 2;
		if (esc[1] == 'u') {
			static const char hex[] = "0123456789ABCDEF";

			esc[2] = '0';
			esc[3] = '0';
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			k = 6;
		}
		jw_add(w, esc, k);
		run = ++s;
	}
	jw_add(w, (const char *)run, (size_t)(s - run));
	jw_add(w, "\"", 1);
}

/*
 * "%.15g" of v without printf when v is the double nearest to k / 1e9 (k an
 * integer of at most 15 significant digits: what gdn_json_round_reals makes)
 * and 1e-4 <= |v| < 9e6: those digits are k's, as the 15-digit rounding of v
 * is k / 1e9 itself (v is within half an ulp of it, far less than half a unit
 * of the 15th digit). 0 when v is not such a value.
 */
static size_t fmt_g15(double v, char *b)
{
	double a = fabs(v);
	long long k, t, ip, fp;
	int nd = 0, fd = 9;
	size_t len = 0;
	char tmp[24];

	if (!(a >= 1e-4 && a < 9e6))
		return 0;
	k = llround(a * 1e9);
	if ((double)k / 1e9 != a)
		return 0;
	for (t = k; t && t % 10 == 0; t /= 10)
		;
	for (; t; t /= 10)
		nd++;
	if (nd > 15)
		return 0;
	if (v < 0)
		b[len++] = '-';
	ip = k / 1000000000LL;
	fp = k % 1000000000LL;
	nd = 0;
	do {
		tmp[nd++] = (char)('0' + ip % 10);
		ip /= 10;
	} while (ip);
	while (nd)
		b[len++] = tmp[--nd];
	if (fp) {
		while (fp % 10 == 0) {
			fp /= 10;
			fd--;
		}
		b[len++] = '.';
		for (int i = fd - 1; i >= 0; i--) {
			b[len + (size_t)i] = (char)('0' + fp % 10);
			fp /= 10;
		}
		len += (size_t)fd;
	}
	b[len] = '\0';
	return len;
}

/* jansson's jsonp_dtostr: "%.*g", ".0" when it would read as an integer, a short exponent */
static void jw_real(struct jw *w, double v)
{
	char b[100], *start, *end;
	int r;
	size_t len;

	if (!isfinite(v)) {
		w->ok = false;
		return;
	}
	len = w->digits == 15 ? fmt_g15(v, b) : 0;
	if (len) {
		if (!strchr(b, '.')) {
			b[len++] = '.';
			b[len++] = '0';
		}
		jw_add(w, b, len);
		return;
	}
	r = snprintf(b, sizeof(b), "%.*g", w->digits, v);
	if (r < 0 || (size_t)r >= sizeof(b) - 3) {
		w->ok = false;
		return;
	}
	len = (size_t)r;
	if (!strchr(b, '.') && !strchr(b, 'e')) {
		b[len++] = '.';
		b[len++] = '0';
		b[len] = '\0';
	}
	start = strchr(b, 'e');
	if (start) {
		start++;
		end = start + 1;
		if (*start == '-')
			start++;
		while (*end == '0')
			end++;
		if (end != start) {
			memmove(start, end, len - (size_t)(end - b));
			len -= (size_t)(end - start);
		}
	}
	jw_add(w, b, len);
}

static void jw_int(struct jw *w, json_int_t v)
{
	char b[24], *p = b + sizeof(b);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;

	do
		*--p = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		*--p = '-';
	jw_add(w, p, (size_t)(b + sizeof(b) - p));
}

static void jw_value(struct jw *w, json_t *v, int depth)
{
	if (!w->ok)
		return;
	if (depth >= JW_DEPTH) {
		w->ok = false;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		void *it = json_object_iter(v);

		jw_add(w, "{", 1);
		if (!it) {
			jw_add(w, "}", 1);
			return;
		}
		jw_indent(w, depth + 1);
		while (it && w->ok) {
			void *next = json_object_iter_next(v, it);

			jw_string(w, json_object_iter_key(it), json_object_iter_key_len(it));
			jw_add(w, ": ", 2);
			jw_value(w, json_object_iter_value(it), depth + 1);
			if (next) {
				jw_add(w, ",", 1);
				jw_indent(w, depth + 1);
			} else {
				jw_indent(w, depth);
			}
			it = next;
		}
		jw_add(w, "}", 1);
		return;
	}
	case JSON_ARRAY: {
		size_t n = json_array_size(v);

		jw_add(w, "[", 1);
		if (!n) {
			jw_add(w, "]", 1);
			return;
		}
		jw_indent(w, depth + 1);
		for (size_t i = 0; i < n && w->ok; i++) {
			jw_value(w, json_array_get(v, i), depth + 1);
			if (i + 1 < n) {
				jw_add(w, ",", 1);
				jw_indent(w, depth + 1);
			} else {
				jw_indent(w, depth);
			}
		}
		jw_add(w, "]", 1);
		return;
	}
	case JSON_STRING:
		jw_string(w, json_string_value(v), json_string_length(v));
		return;
	case JSON_INTEGER:
		jw_int(w, json_integer_value(v));
		return;
	case JSON_REAL:
		jw_real(w, json_real_value(v));
		return;
	case JSON_TRUE:
		jw_add(w, "true", 4);
		return;
	case JSON_FALSE:
		jw_add(w, "false", 5);
		return;
	case JSON_NULL:
		jw_add(w, "null", 4);
		return;
	}
	w->ok = false;
}

void gdn_json_dump_precision(struct sbuf *out, const json_t *doc, int digits)
{
	size_t start = out->len;
	struct jw *w = NULL;
	const char *point = localeconv()->decimal_point;

	if ((json_is_object(doc) || json_is_array(doc)) && point && !strcmp(point, ".")) {
		w = xmalloc(sizeof(*w));
		w->out = out;
		w->digits = digits & 0x1F ? digits & 0x1F : 17;
		w->ok = true;
		w->n = 0;
		jw_value(w, (json_t *)doc, 0);
		jw_flush(w);
	}
	if (!w || !w->ok) {
		sbuf_setlen(out, start);
		json_dump_callback(doc, dump_cb, out,
				   JSON_INDENT(2) | JSON_PRESERVE_ORDER |
				       JSON_REAL_PRECISION(digits));
	}
	free(w);
	sbuf_addch(out, '\n');
}

void gdn_json_dump(struct sbuf *out, const json_t *doc)
{
	gdn_json_dump_precision(out, doc, 17);
}

static void round_reals(json_t *v, double scale)
{
	const char *key;
	json_t *item;
	size_t i;
	double x;

	if (json_is_object(v)) {
		json_object_foreach(v, key, item) round_reals(item, scale);
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) round_reals(item, scale);
	} else if (json_is_real(v)) {
		x = json_real_value(v);
		/* past 1e9 the decimals are below a double's precision anyway */
		if (isfinite(x) && fabs(x) < 1e9)
			json_real_set(v, round(x * scale) / scale);
	}
}

void gdn_json_round_reals(json_t *v, int decimals)
{
	round_reals(v, pow(10.0, decimals)); /* once, not per node */
}
