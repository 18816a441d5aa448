#include "gdnctl/compat.h"
#include "gdnctl/xalloc.h"

static GDN_NORETURN void die_oom(size_t size)
{
	fprintf(stderr, "[gdnctl] fatal: out of memory allocating %zu bytes\n", size);
	abort();
}

void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		die_oom(size);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		die_oom(st_mult(nmemb, size));
	return p;
}

void *xrealloc(void *ptr, size_t size)
{
	void *p = realloc(ptr, size ? size : 1);
	if (!p)
		die_oom(size);
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(st_add(len, 1));
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

char *xstrfmt(const char *fmt, ...)
{
	va_list ap, ap2;
	int n;
	char *p;

	va_start(ap, fmt);
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		BUG("vsnprintf failed for format '%s'", fmt);
	p = xmalloc((size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap2);
	va_end(ap2);
	return p;
}

size_t st_mult(size_t a, size_t b)
{
	if (b && a > SIZE_MAX / b)
		BUG("size_t overflow: %zu * %zu", a, b);
	return a * b;
}

size_t st_add(size_t a, size_t b)
{
	if (a > SIZE_MAX - b)
		BUG("size_t overflow: %zu + %zu", a, b);
	return a + b;
}

void gdn_bug(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "[gdnctl] BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

int64_t gdn_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t gdn_days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}
