#include "gdnctl/compat.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

const char *strvec_empty[] = {NULL};

void strvec_init(struct strvec *sv)
{
	sv->v = strvec_empty;
	sv->nr = 0;
	sv->alloc = 0;
}

static const char *push_owned(struct strvec *sv, char *s)
{
	if (sv->v == strvec_empty)
		sv->v = NULL;
	ALLOC_GROW(sv->v, sv->nr + 2, sv->alloc);
	sv->v[sv->nr++] = s;
	sv->v[sv->nr] = NULL;
	return s;
}

const char *strvec_push(struct strvec *sv, const char *s)
{
	return push_owned(sv, xstrdup(s));
}

const char *strvec_pushf(struct strvec *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		BUG("vasprintf failed");
	return push_owned(sv, s);
}

void strvec_pushl(struct strvec *sv, ...)
{
	va_list ap;
	const char *s;

	va_start(ap, sv);
	while ((s = va_arg(ap, const char *)))
		strvec_push(sv, s);
	va_end(ap);
}

void strvec_pushv(struct strvec *sv, const char *const *items)
{
	for (; items && *items; items++)
		strvec_push(sv, *items);
}

void strvec_pop(struct strvec *sv)
{
	if (!sv->nr)
		return;
	free((char *)sv->v[--sv->nr]);
	sv->v[sv->nr] = NULL;
}

void strvec_split(struct strvec *sv, const char *s, char sep)
{
	while (s && *s) {
		const char *end = strchr(s, sep);
		size_t len = end ? (size_t)(end - s) : strlen(s);
		const char *b = s, *e = s + len;

		while (b < e && isspace((unsigned char)*b))
			b++;
		while (e > b && isspace((unsigned char)e[-1]))
			e--;
		if (e > b)
			push_owned(sv, xstrndup(b, (size_t)(e - b)));
		s = end ? end + 1 : NULL;
	}
}

bool strvec_contains(const struct strvec *sv, const char *s)
{
	for (size_t i = 0; i < sv->nr; i++)
		if (!strcmp(sv->v[i], s))
			return true;
	return false;
}

void strvec_remove(struct strvec *sv, size_t i)
{
	if (i >= sv->nr)
		BUG("strvec_remove: index %zu of %zu", i, sv->nr);
	free((char *)sv->v[i]);
	memmove(sv->v + i, sv->v + i + 1, (sv->nr - i) * sizeof(*sv->v)); /* with the NULL */
	sv->nr--;
}

void strvec_clear(struct strvec *sv)
{
	if (sv->v != strvec_empty) {
		for (size_t i = 0; i < sv->nr; i++)
			free((char *)sv->v[i]);
		free(sv->v);
	}
	strvec_init(sv);
}

const char **strvec_detach(struct strvec *sv)
{
	const char **ret;

	if (sv->v == strvec_empty)
		return xcalloc(1, sizeof(const char *));
	ret = sv->v;
	strvec_init(sv);
	return ret;
}
