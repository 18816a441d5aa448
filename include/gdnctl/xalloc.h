/* Allocation that never returns NULL: failure aborts with a message. */
#ifndef GDNCTL_XALLOC_H
#define GDNCTL_XALLOC_H

#include "gdnctl/compat.h"

void *xmalloc(size_t size);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *ptr, size_t size);
/* Returned strings belong to the caller. */
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xstrfmt(const char *fmt, ...) GDN_PRINTF(1, 2);

/* size_t multiplication/addition that aborts on overflow. */
size_t st_mult(size_t a, size_t b);
size_t st_add(size_t a, size_t b);

#define FREE_AND_NULL(p)    \
	do {                \
		free(p);    \
		(p) = NULL; \
	} while (0)

/* Grow array `x` (with `alloc` slots) so that it holds at least `nr` items. */
#define ALLOC_GROW(x, nr, alloc)                                           \
	do {                                                               \
		if ((nr) > (alloc)) {                                      \
			size_t want_ = (alloc) < 8 ? 8 : (alloc)*2;        \
			if (want_ < (nr))                                  \
				want_ = (nr);                              \
			(x) = xrealloc((x), st_mult(sizeof(*(x)), want_)); \
			(alloc) = want_;                                   \
		}                                                          \
	} while (0)

#endif
