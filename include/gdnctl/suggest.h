/*
 * "Did you mean": the names closest to a mistyped one, by edit distance
 * (insertions, deletions, substitutions and swaps of two neighbours), for
 * unknown commands, options and configuration keys. A name is offered only
 * when it is close: past the whole words ('.', '-' or '_' separated) both
 * names start with, at most a third of the rest of the typed name away (at
 * least 1, at most 3), and never when every character would change.
 */
#ifndef GDNCTL_SUGGEST_H
#define GDNCTL_SUGGEST_H

#include "gdnctl/compat.h"
#include "gdnctl/strvec.h"

struct sbuf;

/* The optimal-string-alignment distance between a and b (SIZE_MAX when one is very long). */
size_t gdn_edit_distance(const char *a, const char *b);

/* The candidates seen so far at the smallest distance from `typed`. */
struct gdn_suggest {
	const char *typed; /* borrowed */
	size_t best;	   /* SIZE_MAX: none close enough yet */
	struct strvec hits;
};
#define GDN_SUGGEST_INIT(typed)                \
	{                                      \
		(typed), SIZE_MAX, STRVEC_INIT \
	}

/* Offer one candidate (copied when kept; duplicates are ignored). */
void gdn_suggest_add(struct gdn_suggest *s, const char *candidate);
/*
 * Append "; did you mean 'X'?" (or "'X' or 'Y'", at most three), each name
 * after `prefix` ("--" for options; may be NULL), to out when a candidate was
 * close enough; nothing otherwise. Returns whether it appended.
 */
bool gdn_suggest_format(const struct gdn_suggest *s, const char *prefix, struct sbuf *out);
void gdn_suggest_release(struct gdn_suggest *s);

#endif
