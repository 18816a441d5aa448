/* NULL-terminated vector of owned strings, for argv and env lists. */
#ifndef GDNCTL_STRVEC_H
#define GDNCTL_STRVEC_H

#include "gdnctl/compat.h"

struct strvec {
	const char **v; /* always NULL-terminated, never NULL */
	size_t nr;
	size_t alloc;
};

extern const char *strvec_empty[];
#define STRVEC_INIT                \
	{                          \
		strvec_empty, 0, 0 \
	}

void strvec_init(struct strvec *sv);
/* Each push copies its argument; returns the stored copy (borrowed). */
const char *strvec_push(struct strvec *sv, const char *s);
const char *strvec_pushf(struct strvec *sv, const char *fmt, ...) GDN_PRINTF(2, 3);
void strvec_pushl(struct strvec *sv, ...); /* NULL-terminated list */
void strvec_pushv(struct strvec *sv, const char *const *items);
void strvec_pop(struct strvec *sv);
/* Remove (and free) item i (< nr), keeping the order of the others. */
void strvec_remove(struct strvec *sv, size_t i);
/* Split `s` at each `sep`, skipping empty items after trimming spaces. */
void strvec_split(struct strvec *sv, const char *s, char sep);
bool strvec_contains(const struct strvec *sv, const char *s);
void strvec_clear(struct strvec *sv);
/* Hand the array to the caller (free each string, then the array). */
const char **strvec_detach(struct strvec *sv);

#endif
