#include "gdnctl/compat.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/err.h"
#include "gdnctl/xalloc.h"

char sbuf_slopbuf[1];

void sbuf_init(struct sbuf *sb, size_t hint)
{
	size_t limit = sb->limit;

	sb->buf = sbuf_slopbuf;
	sb->len = 0;
	sb->alloc = 0;
	sb->limit = limit;
	if (hint)
		sbuf_grow(sb, hint);
}

void sbuf_release(struct sbuf *sb)
{
	if (sb->alloc)
		free(sb->buf);
	sb->buf = sbuf_slopbuf;
	sb->len = 0;
	sb->alloc = 0;
}

char *sbuf_detach(struct sbuf *sb, size_t *len)
{
	char *res;

	sbuf_grow(sb, 0);
	res = sb->buf;
	if (len)
		*len = sb->len;
	sb->buf = sbuf_slopbuf;
	sb->len = 0;
	sb->alloc = 0;
	return res;
}

void sbuf_grow(struct sbuf *sb, size_t extra)
{
	bool fresh = !sb->alloc;
	size_t want = st_add(st_add(sb->len, extra), 1);

	if (want <= sb->alloc)
		return;
	if (fresh)
		sb->buf = NULL;
	ALLOC_GROW(sb->buf, want, sb->alloc);
	if (fresh)
		sb->buf[0] = '\0';
}

void sbuf_setlen(struct sbuf *sb, size_t len)
{
	if (len > (sb->alloc ? sb->alloc - 1 : 0))
		BUG("sbuf_setlen beyond allocation (%zu)", len);
	sb->len = len;
	if (sb->alloc)
		sb->buf[len] = '\0';
}

/* How many of `len` bytes fit under the limit. */
static size_t room(const struct sbuf *sb, size_t len)
{
	if (!sb->limit)
		return len;
	if (sb->len >= sb->limit)
		return 0;
	return len < sb->limit - sb->len ? len : sb->limit - sb->len;
}

int sbuf_add(struct sbuf *sb, const void *data, size_t len)
{
	size_t n = room(sb, len);

	if (n) {
		sbuf_grow(sb, n);
		memcpy(sb->buf + sb->len, data, n);
		sbuf_setlen(sb, sb->len + n);
	}
	return n == len ? 0 : -1;
}

int sbuf_adds(struct sbuf *sb, const char *s)
{
	return sbuf_add(sb, s, strlen(s));
}

int sbuf_addch(struct sbuf *sb, int c)
{
	char ch = (char)c;
	return sbuf_add(sb, &ch, 1);
}

int sbuf_vaddf(struct sbuf *sb, const char *fmt, va_list ap)
{
	va_list cp;
	int n;
	size_t before = sb->len;

	va_copy(cp, ap);
	n = vsnprintf(sb->buf + sb->len, sb->alloc ? sb->alloc - sb->len : 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		BUG("vsnprintf failed for format '%s'", fmt);
	if ((size_t)n >= (sb->alloc ? sb->alloc - sb->len : 0)) {
		sbuf_grow(sb, (size_t)n);
		n = vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sbuf_setlen(sb, sb->len + (size_t)n);
	if (sb->limit && sb->len > sb->limit) {
		sbuf_setlen(sb, before > sb->limit ? before : sb->limit);
		return -1;
	}
	return 0;
}

int sbuf_addf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return ret;
}

static bool shell_safe(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("@%+=:,./_-", *s))
			return false;
	return true;
}

void sbuf_add_shell_quoted(struct sbuf *sb, const char *s)
{
	if (shell_safe(s)) {
		sbuf_adds(sb, s);
		return;
	}
	sbuf_addch(sb, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			sbuf_adds(sb, "'\\''");
		else
			sbuf_addch(sb, *s);
	}
	sbuf_addch(sb, '\'');
}

void sbuf_rtrim(struct sbuf *sb)
{
	while (sb->len > 0 && isspace((unsigned char)sb->buf[sb->len - 1]))
		sb->len--;
	if (sb->alloc)
		sb->buf[sb->len] = '\0';
}

void sbuf_ltrim(struct sbuf *sb)
{
	size_t i = 0;

	while (i < sb->len && isspace((unsigned char)sb->buf[i]))
		i++;
	if (!i)
		return;
	memmove(sb->buf, sb->buf + i, sb->len - i);
	sbuf_setlen(sb, sb->len - i);
}

bool sbuf_starts_with(const struct sbuf *sb, const char *prefix)
{
	size_t n = strlen(prefix);
	return sb->len >= n && !memcmp(sb->buf, prefix, n);
}
