/*
 * Small parsers for the hub clients: URL encoding, Link and Retry-After
 * header values, .netrc files and URL hosts. Pure functions over
 * untrusted text (fuzzed by tests/fuzz/fuzz_hub.c).
 */
#include "gdnctl/compat.h"
#include "gdnctl/hub_text.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

void gdn_url_encode(struct sbuf *out, const char *s, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";

	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
		    (keep_slash && *p == '/')) {
			sbuf_addch(out, *p);
		} else {
			sbuf_addch(out, '%');
			sbuf_addch(out, hex[*p >> 4]);
			sbuf_addch(out, hex[*p & 15]);
		}
	}
}

static const char *skip_ows(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* Whether the rel value (a space-separated list of types) names "next". */
static bool rel_has_next(const char *v, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t start;

		while (i < len && (v[i] == ' ' || v[i] == '\t'))
			i++;
		start = i;
		while (i < len && v[i] != ' ' && v[i] != '\t')
			i++;
		if (i - start == 4 && !strncasecmp(v + start, "next", 4))
			return true;
	}
	return false;
}

/*
 * Read a parameter value at p: a token or a quoted string. Sets *val and
 * *len (the raw bytes between the quotes; escapes are kept, which is fine
 * for rel types). Returns the position after the value.
 */
static const char *param_value(const char *p, const char **val, size_t *len)
{
	if (*p == '"') {
		const char *start = ++p;

		while (*p && *p != '"') {
			if (*p == '\\' && p[1])
				p++;
			p++;
		}
		*val = start;
		*len = (size_t)(p - start);
		return *p ? p + 1 : p;
	}
	*val = p;
	while (*p && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
		p++;
	*len = (size_t)(p - *val);
	return p;
}

char *gdn_link_next(const char *value)
{
	const char *p = value;

	while (p && *p) {
		const char *uri, *uri_end;
		bool next = false;

		p = skip_ows(p);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p != '<')
			return NULL; /* malformed: give up rather than guess */
		uri = ++p;
		uri_end = strchr(p, '>');
		if (!uri_end)
			return NULL;
		p = uri_end + 1;
		/* Parameters up to the next ',' outside quotes. */
		for (;;) {
			const char *name, *val;
			size_t name_len, val_len = 0;

			p = skip_ows(p);
			if (*p != ';')
				break;
			p = skip_ows(p + 1);
			name = p;
			while (*p && *p != '=' && *p != ';' && *p != ',' && *p != ' ' && *p != '\t')
				p++;
			name_len = (size_t)(p - name);
			p = skip_ows(p);
			val = p;
			if (*p == '=')
				p = param_value(skip_ows(p + 1), &val, &val_len);
			if (name_len == 3 && !strncasecmp(name, "rel", 3) &&
			    rel_has_next(val, val_len))
				next = true;
		}
		if (next && uri_end > uri)
			return xstrndup(uri, (size_t)(uri_end - uri));
		/* Skip to the next link (tolerating junk). */
		while (*p && *p != ',') {
			if (*p == '"') {
				p++;
				while (*p && *p != '"')
					p += (*p == '\\' && p[1]) ? 2 : 1;
				if (*p)
					p++;
			} else {
				p++;
			}
		}
	}
	return NULL;
}

static int month_index(const char *s)
{
	static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

	for (int i = 0; i < 12; i++)
		if (!strncasecmp(s, months[i], 3))
			return i;
	return -1;
}

/* Parse the HTTP-date forms of RFC 9110 5.6.7 into seconds since the epoch; -1 if invalid. */
static int64_t parse_http_date(const char *s)
{
	char wk[16] = "", mon[4] = "";
	int d = 0, y = 0, hh = 0, mm = 0, ss = 0, n = 0;
	int m;

	s = skip_ows(s);
	/* IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT */
	if (sscanf(s, "%15[A-Za-z], %2d %3s %4d %2d:%2d:%2d GMT%n", wk, &d, mon, &y, &hh, &mm, &ss,
		   &n) == 7 &&
	    n) {
		;
	} else if (sscanf(s, "%15[A-Za-z], %2d-%3s-%2d %2d:%2d:%2d GMT%n", wk, &d, mon, &y, &hh,
			  &mm, &ss, &n) == 7 &&
		   n) {
		/* RFC 850: Sunday, 06-Nov-94 08:49:37 GMT (two-digit year) */
		y += y < 70 ? 2000 : 1900;
	} else if (sscanf(s, "%15[A-Za-z] %3s %2d %2d:%2d:%2d %4d%n", wk, mon, &d, &hh, &mm, &ss,
			  &y, &n) == 7 &&
		   n) {
		/* asctime: Sun Nov  6 08:49:37 1994 */
	} else {
		return -1;
	}
	m = month_index(mon);
	if (m < 0 || d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60 || y < 1970 || hh < 0 ||
	    mm < 0 || ss < 0)
		return -1;
	return gdn_days_from_civil(y, m + 1, d) * 86400 + hh * 3600 + mm * 60 + ss;
}

long gdn_retry_after_ms(const char *value, time_t now)
{
	const char *p;
	int64_t secs = 0, when;

	if (!value)
		return -1;
	p = skip_ows(value);
	if (isdigit((unsigned char)*p)) {
		for (; isdigit((unsigned char)*p); p++) {
			secs = secs * 10 + (*p - '0');
			if (secs > 86400 * 365)
				secs = 86400 * 365; /* absurd: cap, the deadline decides */
		}
		p = skip_ows(p);
		if (*p && *p != '\r' && *p != '\n')
			return -1;
		return (long)(secs * 1000);
	}
	when = parse_http_date(p);
	if (when < 0)
		return -1;
	if (when <= (int64_t)now)
		return 0;
	secs = when - (int64_t)now;
	if (secs > 86400 * 365)
		secs = 86400 * 365;
	return (long)(secs * 1000);
}

/* ---- .netrc ---- */

struct netrc_lexer {
	const char *p, *end;
	struct sbuf tok;
};

/* The next token into lx->tok; false at the end. */
static bool netrc_next(struct netrc_lexer *lx)
{
	sbuf_reset(&lx->tok);
	while (lx->p < lx->end && isspace((unsigned char)*lx->p))
		lx->p++;
	if (lx->p >= lx->end)
		return false;
	if (*lx->p == '"') {
		lx->p++;
		while (lx->p < lx->end && *lx->p != '"') {
			if (*lx->p == '\\' && lx->p + 1 < lx->end)
				lx->p++;
			sbuf_addch(&lx->tok, *lx->p++);
		}
		if (lx->p < lx->end)
			lx->p++;
		return true;
	}
	while (lx->p < lx->end && !isspace((unsigned char)*lx->p)) {
		if (*lx->p == '\\' && lx->p + 1 < lx->end)
			lx->p++;
		sbuf_addch(&lx->tok, *lx->p++);
	}
	return true;
}

/* Skip a macdef body: everything up to an empty line (or the end). */
static void netrc_skip_macdef(struct netrc_lexer *lx)
{
	/* The rest of the macdef line is the macro's name: skip it. */
	while (lx->p < lx->end && *lx->p != '\n')
		lx->p++;
	while (lx->p < lx->end) {
		const char *nl;

		lx->p++; /* the '\n' */
		nl = memchr(lx->p, '\n', (size_t)(lx->end - lx->p));
		if (!nl) {
			lx->p = lx->end;
			return;
		}
		if (nl == lx->p || (nl == lx->p + 1 && *lx->p == '\r')) {
			lx->p = nl;
			return;
		}
		lx->p = nl;
	}
}

int gdn_netrc_lookup(const char *text, size_t len, const char *host, char **login, char **password)
{
	struct netrc_lexer lx = {text, text + len, SBUF_INIT};
	/* Current entry: 0 none, 1 the host's machine, 2 another machine, 3 default. */
	int cur = 0, found = 0;
	char *l = NULL, *pw = NULL, *dl = NULL, *dpw = NULL;
	bool have_default = false;

	lx.tok.limit = 64 << 10;
	while (!found && netrc_next(&lx)) {
		const char *t = lx.tok.buf;

		if (!strcmp(t, "machine")) {
			if (cur == 1) {
				found = 1;
				break;
			}
			cur = netrc_next(&lx) && !memchr(lx.tok.buf, '\0', lx.tok.len) &&
				      !strcasecmp(lx.tok.buf, host)
				  ? 1
				  : 2;
		} else if (!strcmp(t, "default")) {
			if (cur == 1) {
				found = 1;
				break;
			}
			cur = 3;
			have_default = true;
		} else if (!strcmp(t, "login") || !strcmp(t, "password") || !strcmp(t, "account")) {
			char which = t[0];
			char **dst = NULL;

			if (!netrc_next(&lx))
				break;
			if (cur == 1)
				dst = which == 'l' ? &l : which == 'p' ? &pw : NULL;
			else if (cur == 3)
				dst = which == 'l' ? &dl : which == 'p' ? &dpw : NULL;
			/* an empty value, or one a NUL byte cuts short, is no value */
			if (dst && !*dst && lx.tok.len && !memchr(lx.tok.buf, '\0', lx.tok.len))
				*dst = xstrdup(lx.tok.buf);
		} else if (!strcmp(t, "macdef")) {
			netrc_skip_macdef(&lx);
		}
		/* Anything else: an unknown token, ignored. */
	}
	if (cur == 1)
		found = 1;
	if (found) {
		*login = l;
		*password = pw;
		l = pw = NULL;
	} else if (have_default) {
		found = 1;
		*login = dl;
		*password = dpw;
		dl = dpw = NULL;
	}
	free(l);
	free(pw);
	free(dl);
	free(dpw);
	sbuf_release(&lx.tok);
	return found;
}

char *gdn_one_line(const char *s, size_t max)
{
	size_t len = strlen(s);
	char *out = xstrfmt("%.*s%s", (int)(len > max ? max : len), s, len > max ? "..." : "");

	for (char *p = out; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	return out;
}

char *gdn_url_host(const char *url)
{
	const char *p = strstr(url, "://"), *end;

	if (!p)
		return NULL;
	p += 3;
	end = p + strcspn(p, "/?#");
	/* Drop user info and the port ([v6] literals keep their brackets). */
	for (const char *at = p; at < end; at++)
		if (*at == '@')
			p = at + 1;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close)
			return NULL;
		end = close + 1;
	} else {
		const char *colon = memchr(p, ':', (size_t)(end - p));

		if (colon)
			end = colon;
	}
	if (end == p)
		return NULL;
	return xstrndup(p, (size_t)(end - p));
}
