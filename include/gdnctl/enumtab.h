/*
 * One table per enum: the names of an enum's values, as written on the
 * command line, in the configuration, the journal and the reports, with a
 * one-line help each. The owning module defines the table next to the enum;
 * options (OPT_ENUM), the configuration schema, help, man pages and
 * completion read the same rows, so a new value is one new row.
 *
 * A table is an array terminated by a row with a NULL name. Rows are listed
 * in the order help shows them; two rows may share a value (an alias: the
 * first row with a value is its name).
 */
#ifndef GDNCTL_ENUMTAB_H
#define GDNCTL_ENUMTAB_H

#include "gdnctl/compat.h"

struct sbuf;

struct gdn_enum {
	const char *name;
	int value;
	const char *help; /* one line, or NULL */
};

#define GDN_ENUM_END          \
	{                     \
		NULL, 0, NULL \
	}

/* The value named `s` in *value. Returns 0, or -1 when no row has that name. */
int gdn_enum_parse(const struct gdn_enum *t, const char *s, int *value);
/* The name of `value` (the first row with it; borrowed), or "?" when none has it. */
const char *gdn_enum_name(const struct gdn_enum *t, int value);
/* The row named `s`, or NULL. */
const struct gdn_enum *gdn_enum_find(const struct gdn_enum *t, const char *s);
/* Number of rows. */
size_t gdn_enum_count(const struct gdn_enum *t);
/* Append the names, `sep` between them ("a|b|c"). */
void gdn_enum_join(const struct gdn_enum *t, const char *sep, struct sbuf *out);

#endif
