#include "gdnctl/compat.h"
#include "gdnctl/suggest.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

/* Longer names are never a typo of a command, option or key. */
#define SUGGEST_MAX_LEN 256

size_t gdn_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), d;
	size_t *row0, *row1, *row2; /* rows i-2, i-1, i */

	if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN)
		return SIZE_MAX;
	row0 = xcalloc(lb + 1, sizeof(*row0));
	row1 = xcalloc(lb + 1, sizeof(*row1));
	row2 = xcalloc(lb + 1, sizeof(*row2));
	for (size_t j = 0; j <= lb; j++)
		row1[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *t;

		row2[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cost = a[i - 1] != b[j - 1];
			size_t v = row1[j - 1] + cost;

			if (row1[j] + 1 < v)
				v = row1[j] + 1;
			if (row2[j - 1] + 1 < v)
				v = row2[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    row0[j - 2] + 1 < v)
				v = row0[j - 2] + 1;
			row2[j] = v;
		}
		t = row0;
		row0 = row1;
		row1 = row2;
		row2 = t;
	}
	d = row1[lb];
	free(row0);
	free(row1);
	free(row2);
	return d;
}

/* How far a candidate may be from a typed name of `len` characters. */
static size_t max_distance(size_t len)
{
	size_t m = len / 3;

	return m < 1 ? 1 : m > 3 ? 3 : m;
}

static bool is_sep(char c)
{
	return c == '.' || c == '-' || c == '_';
}

void gdn_suggest_add(struct gdn_suggest *s, const char *candidate)
{
	const char *t = s->typed, *c = candidate;
	size_t d, len, i;

	if (!t || !c || !*c)
		return;
	/* whole words both start with do not count: "deep.er.x" is not near "deep.er.key" */
	for (i = 0; s->typed[i] && s->typed[i] == candidate[i]; i++)
		if (is_sep(s->typed[i])) {
			t = s->typed + i + 1;
			c = candidate + i + 1;
		}
	len = strlen(t);
	d = gdn_edit_distance(t, c);
	if (d == SIZE_MAX || d == 0 || d > max_distance(len) || d >= len || d >= strlen(c) ||
	    d > s->best)
		return;
	if (d < s->best) {
		strvec_clear(&s->hits);
		s->best = d;
	}
	if (!strvec_contains(&s->hits, candidate))
		strvec_push(&s->hits, candidate);
}

bool gdn_suggest_format(const struct gdn_suggest *s, const char *prefix, struct sbuf *out)
{
	size_t n = s->hits.nr < 3 ? s->hits.nr : 3;

	if (!n)
		return false;
	sbuf_adds(out, "; did you mean ");
	for (size_t i = 0; i < n; i++)
		sbuf_addf(out, "%s'%s%s'", i ? (i + 1 == n ? " or " : ", ") : "",
			  prefix ? prefix : "", s->hits.v[i]);
	sbuf_adds(out, "?");
	return true;
}

void gdn_suggest_release(struct gdn_suggest *s)
{
	strvec_clear(&s->hits);
	s->best = SIZE_MAX;
}
