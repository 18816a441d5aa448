/*
 * Text helpers for the running-log rules: UTF-8 validation, line
 * splitting, and the numbered-heading matcher.
 */
#include "gdnctl/compat.h"
#include "gdnctl/lint.h"

#define HI_BITS	 0x8080808080808080ULL
#define LO_BYTES 0x0101010101010101ULL

enum lint_utf8_status lint_utf8_check(const char *buf, size_t len, size_t *offset)
{
	const unsigned char *s = (const unsigned char *)buf;
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		unsigned char lo = 0x80, hi = 0xBF;
		size_t need;

		/* ASCII fast path: eight bytes at a time while none is NUL or >= 0x80. */
		while (i + 8 <= len) {
			uint64_t v;

			memcpy(&v, s + i, 8);
			if ((v & HI_BITS) || ((v - LO_BYTES) & ~v & HI_BITS))
				break;
			i += 8;
		}
		if (i >= len)
			break;
		c = s[i];
		if (c < 0x80) {
			if (!c) {
				*offset = i;
				return LINT_UTF8_NUL;
			}
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			need = 1;
		} else if (c >= 0xE0 && c <= 0xEF) {
			need = 2;
			if (c == 0xE0)
				lo = 0xA0; /* overlong */
			else if (c == 0xED)
				hi = 0x9F; /* surrogates */
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3;
			if (c == 0xF0)
				lo = 0x90; /* overlong */
			else if (c == 0xF4)
				hi = 0x8F; /* > U+10FFFF */
		} else {
			*offset = i; /* continuation byte, C0/C1 overlong lead, F5..FF */
			return LINT_UTF8_INVALID;
		}
		if (len - i <= need) {
			*offset = i;
			return LINT_UTF8_INVALID;
		}
		if (s[i + 1] < lo || s[i + 1] > hi) {
			*offset = i;
			return LINT_UTF8_INVALID;
		}
		for (size_t k = 2; k <= need; k++) {
			if (s[i + k] < 0x80 || s[i + k] > 0xBF) {
				*offset = i;
				return LINT_UTF8_INVALID;
			}
		}
		i += need + 1;
	}
	return LINT_UTF8_OK;
}

static size_t find_cr(const char *buf, size_t len, size_t from)
{
	const char *cr = from < len ? memchr(buf + from, '\r', len - from) : NULL;

	return cr ? (size_t)(cr - buf) : len;
}

void lint_lines_init(struct lint_lines *it, const char *buf, size_t len)
{
	it->buf = buf;
	it->len = len;
	it->pos = 0;
	it->lineno = 0;
	it->next_cr = find_cr(buf, len, 0);
}

/* memchr() for '\n', with the next '\r' cached: two fast scans instead of a byte loop. */
bool lint_lines_next(struct lint_lines *it, const char **line, size_t *len)
{
	const char *nl;
	size_t start = it->pos, end;

	if (start >= it->len)
		return false;
	if (it->next_cr < start)
		it->next_cr = find_cr(it->buf, it->len, start);
	nl = memchr(it->buf + start, '\n', it->next_cr - start);
	end = nl ? (size_t)(nl - it->buf) : it->next_cr;
	*line = it->buf + start;
	*len = end - start;
	if (end < it->len) {
		if (it->buf[end] == '\r' && end + 1 < it->len && it->buf[end + 1] == '\n')
			end++;
		end++;
	}
	it->pos = end;
	it->lineno++;
	return true;
}

/*
 * Non-ASCII code points that Python's `\w` does not match (so `\b` holds
 * before them), exact for Latin-1, the punctuation, symbol, arrow, box and
 * shape blocks, CJK punctuation, the fullwidth ASCII punctuation and the
 * emoji planes (generated from Python 3.11's re module). Every other
 * non-ASCII code point counts as a word character: letters and digits of
 * any script, the common case.
 */
/* clang-format off */
static const uint32_t nonword[][2] = {
	{ 0x0080, 0x00A9 }, { 0x00AB, 0x00B1 }, { 0x00B4, 0x00B4 }, { 0x00B6, 0x00B8 },
	{ 0x00BB, 0x00BB }, { 0x00BF, 0x00BF }, { 0x00D7, 0x00D7 }, { 0x00F7, 0x00F7 },
	{ 0x2000, 0x206F }, { 0x2072, 0x2073 }, { 0x207A, 0x207E }, { 0x208A, 0x208F },
	{ 0x209D, 0x2101 }, { 0x2103, 0x2106 }, { 0x2108, 0x2109 }, { 0x2114, 0x2114 },
	{ 0x2116, 0x2118 }, { 0x211E, 0x2123 }, { 0x2125, 0x2125 }, { 0x2127, 0x2127 },
	{ 0x2129, 0x2129 }, { 0x212E, 0x212E }, { 0x213A, 0x213B }, { 0x2140, 0x2144 },
	{ 0x214A, 0x214D }, { 0x214F, 0x214F }, { 0x218A, 0x245F }, { 0x249C, 0x24E9 },
	{ 0x2500, 0x2775 }, { 0x2794, 0x2BFF }, { 0x2E00, 0x2E2E }, { 0x2E30, 0x2E7F },
	{ 0x3000, 0x3004 }, { 0x3008, 0x3020 }, { 0x302A, 0x3030 }, { 0x3036, 0x3037 },
	{ 0x303D, 0x303F }, { 0xFE30, 0xFE4F }, { 0xFF00, 0xFF0F }, { 0xFF1A, 0xFF20 },
	{ 0xFF3B, 0xFF40 }, { 0xFF5B, 0xFF65 }, { 0x1F000, 0x1F0FF }, { 0x1F10D, 0x1FAFF },
};
/* clang-format on */

/* Decode one code point of valid-or-not UTF-8; returns 0xFFFD on anything odd. */
static uint32_t decode_cp(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t need;

	if (s[0] < 0x80)
		return s[0];
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		cp = s[0] & 0x1F;
		need = 1;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		cp = s[0] & 0x0F;
		need = 2;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		cp = s[0] & 0x07;
		need = 3;
	} else {
		return 0xFFFD;
	}
	if (len <= need)
		return 0xFFFD;
	for (size_t k = 1; k <= need; k++) {
		if ((s[k] & 0xC0) != 0x80)
			return 0xFFFD;
		cp = (cp << 6) | (s[k] & 0x3F);
	}
	return cp;
}

static bool is_word_at(const char *s, size_t len)
{
	unsigned char c = (unsigned char)s[0];
	uint32_t cp;

	if (c < 0x80)
		return isalnum(c) || c == '_';
	cp = decode_cp((const unsigned char *)s, len);
	for (size_t i = 0; i < ARRAY_SIZE(nonword); i++) {
		if (cp < nonword[i][0])
			break;
		if (cp <= nonword[i][1])
			return false;
	}
	return true;
}

#define HEADING_PREFIX "### Iteration "

bool lint_parse_heading(const char *s, size_t len, struct lint_heading *h)
{
	size_t plen = sizeof(HEADING_PREFIX) - 1, i, d0, s0;

	if (len <= plen || memcmp(s, HEADING_PREFIX, plen))
		return false;
	i = d0 = plen;
	while (i < len && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == d0)
		return false;
	s0 = i;
	while (i < len && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
		i++;
	/*
	 * The greedy match is the only candidate: backtracking would leave a
	 * digit or letter (a word character) right after the match.
	 */
	if (i < len && is_word_at(s + i, len - i))
		return false;
	while (d0 + 1 < s0 && s[d0] == '0')
		d0++;
	h->num = s + d0;
	h->num_len = s0 - d0;
	if (h->num_len == 1 && h->num[0] == '0')
		h->num_len = 0;
	h->suffix = s + s0;
	h->suffix_len = i - s0;
	return true;
}

int lint_num_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c;

	if (alen != blen)
		return alen < blen ? -1 : 1;
	c = alen ? memcmp(a, b, alen) : 0;
	return c < 0 ? -1 : c > 0;
}
