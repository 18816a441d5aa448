/* jansson helpers for --json output. Every document carries a "schema" key. */
#ifndef GDNCTL_JSON_H
#define GDNCTL_JSON_H

#include <jansson.h>
#include "gdnctl/compat.h"

struct sbuf;

/*
 * New reference: a JSON string of s; bytes that are not valid UTF-8 (a
 * path or a server's text may hold any) become '?'. NULL gives null.
 */
json_t *gdn_json_string_lossy(const char *s);
/* New reference: an object {"schema": schema}. */
json_t *gdn_json_doc(const char *schema);
/* Append the document (indented, keys in insertion order, trailing newline) to out. */
void gdn_json_dump(struct sbuf *out, const json_t *doc);
/* The same with `digits` significant digits for reals (jansson's precision; 17 round-trips). */
void gdn_json_dump_precision(struct sbuf *out, const json_t *doc, int digits);
/*
 * Round every real in v (recursively) to `decimals` places, so that a
 * document of measured values carries only the digits that matter
 * (792.606317, not 792.60631699999999) once dumped with 15 digits.
 */
void gdn_json_round_reals(json_t *v, int decimals);

#endif
