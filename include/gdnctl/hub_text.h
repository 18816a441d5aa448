/*
 * Text helpers of the hub clients, src/hub/parse.c: pure functions, fuzzed.
 */
#ifndef GDNCTL_HUB_TEXT_H
#define GDNCTL_HUB_TEXT_H

#include "gdnctl/compat.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"

/*
 * Percent-encode s: unreserved characters (A-Z a-z 0-9 - . _ ~) are kept,
 * and '/' too when keep_slash (repository paths); everything else is %XX.
 */
void gdn_url_encode(struct sbuf *out, const char *s, bool keep_slash);
/*
 * The target of the rel="next" link in a Link header value (RFC 8288:
 * comma-separated `<URI>; param=value` items; rel may list several
 * space-separated types, quoted or not). Returns a new string or NULL.
 */
char *gdn_link_next(const char *value);
/*
 * A Retry-After value in milliseconds from `now`: delta-seconds or an
 * HTTP-date (IMF-fixdate, RFC 850, asctime); a date in the past is 0.
 * Returns -1 when it cannot be parsed.
 */
long gdn_retry_after_ms(const char *value, time_t now);
/*
 * Look `host` up in the text of a .netrc file: the first `machine HOST`
 * entry, else the `default` entry. Tokens are separated by white space;
 * "quoted strings" with backslash escapes are accepted; `macdef` bodies
 * (up to an empty line) are skipped. *login and *password (new strings, or
 * NULL when the entry lacks them) are set when it returns 1; 0: no entry.
 */
int gdn_netrc_lookup(const char *text, size_t len, const char *host, char **login, char **password);
/*
 * Untrusted text for a one-line message: control bytes become '?', and
 * more than `max` bytes end in "...". A new string.
 */
char *gdn_one_line(const char *s, size_t max);
/* The host part of an http(s) URL ("api.wandb.ai"); a new string or NULL. */
char *gdn_url_host(const char *url);

#endif
