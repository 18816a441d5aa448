/* Enum <-> name tables (include/gdnctl/enumtab.h). */
#include "gdnctl/compat.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/sbuf.h"

const struct gdn_enum *gdn_enum_find(const struct gdn_enum *t, const char *s)
{
	for (; t && t->name; t++)
		if (s && !strcmp(t->name, s))
			return t;
	return NULL;
}

int gdn_enum_parse(const struct gdn_enum *t, const char *s, int *value)
{
	const struct gdn_enum *e = gdn_enum_find(t, s);

	if (!e)
		return -1;
	*value = e->value;
	return 0;
}

const char *gdn_enum_name(const struct gdn_enum *t, int value)
{
	for (; t && t->name; t++)
		if (t->value == value)
			return t->name;
	return "?";
}

size_t gdn_enum_count(const struct gdn_enum *t)
{
	size_t n = 0;

	while (t && t[n].name)
		n++;
	return n;
}

void gdn_enum_join(const struct gdn_enum *t, const char *sep, struct sbuf *out)
{
	for (size_t i = 0; t && t[i].name; i++)
		sbuf_addf(out, "%s%s", i ? sep : "", t[i].name);
}
