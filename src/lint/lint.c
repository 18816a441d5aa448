/*
 * The running-log rules. One pass over the lines finds everything (a
 * cheap first pass finds the scope and, when needed, the Entry Template
 * fields); no allocation per line, only per finding.
 */
#include "gdnctl/compat.h"
#include "gdnctl/lint.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static const struct {
	const char *name;
	const char *title;
	int group;
} rules[LINT_RULE_NR] = {
    [LINT_PENDING] = {"pending", "unresolved `Commit: (pending)` entries", 0},
    [LINT_THIS_COMMIT] = {"this-commit", "unresolved `Commit: this commit` entries", 1},
    [LINT_NON_MONOTONIC] = {"non-monotonic", "non-monotonic iteration headings", 2},
    [LINT_MISSING_FIELDS] = {"missing-fields", "entries missing required fields", 3},
    [LINT_UNKNOWN_COMMIT] = {"unknown-commit", "bad `Commit:` references", 4},
    [LINT_BAD_COMMIT] = {"bad-commit", "bad `Commit:` references", 4},
};
#define LINT_GROUP_NR 5

const struct gdn_enum lint_scope_enum[] = {
    {"last-entry", LINT_SCOPE_LAST_ENTRY, "the last numbered entry"},
    {"all", LINT_SCOPE_ALL, "the whole file"},
    GDN_ENUM_END,
};

const char *lint_rule_name(enum lint_rule rule)
{
	if ((unsigned)rule >= LINT_RULE_NR)
		BUG("bad lint rule %d", (int)rule);
	return rules[rule].name;
}

const char *lint_rule_title(enum lint_rule rule)
{
	if ((unsigned)rule >= LINT_RULE_NR)
		BUG("bad lint rule %d", (int)rule);
	return rules[rule].title;
}

int lint_rule_group(enum lint_rule rule)
{
	if ((unsigned)rule >= LINT_RULE_NR)
		BUG("bad lint rule %d", (int)rule);
	return rules[rule].group;
}

const char *lint_scope_name(enum lint_scope scope)
{
	const char *name = gdn_enum_name(lint_scope_enum, (int)scope);

	if (!strcmp(name, "?"))
		BUG("bad lint scope %d", (int)scope);
	return name;
}

/* ---- small string helpers over (pointer, length) spans ---- */

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r' || c == '\n';
}

static void strip(const char **s, size_t *len)
{
	while (*len && is_space(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len && is_space((*s)[*len - 1]))
		(*len)--;
}

static bool span_eq(const char *s, size_t len, const char *lit)
{
	size_t n = strlen(lit);

	return len == n && !memcmp(s, lit, n);
}

static bool span_starts(const char *s, size_t len, const char *lit)
{
	size_t n = strlen(lit);

	return len >= n && !memcmp(s, lit, n);
}

static bool is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Markdown ATX heading level of a stripped line (1-6), or 0. */
static int heading_level(const char *s, size_t len)
{
	size_t n = 0;

	while (n < len && n < 7 && s[n] == '#')
		n++;
	if (!n || n > 6 || (n < len && s[n] != ' ' && s[n] != '\t'))
		return 0;
	return (int)n;
}

/* Fenced code blocks: ``` or ~~~ (three or more) opens; the same run, at least as long, closes. */
struct fence {
	bool open;
	char ch;
	size_t n;
};

static size_t run_of(const char *s, size_t len, char ch)
{
	size_t n = 0;

	while (n < len && s[n] == ch)
		n++;
	return n;
}

/* Feed a stripped line; returns true when the line is a fence line or inside a fence. */
static bool fence_feed(struct fence *f, const char *s, size_t len)
{
	size_t n;

	if (f->open) {
		n = run_of(s, len, f->ch);
		if (n >= f->n && n == len)
			f->open = false;
		return true;
	}
	if (!len || (s[0] != '`' && s[0] != '~'))
		return false;
	n = run_of(s, len, s[0]);
	if (n < 3)
		return false;
	f->open = true;
	f->ch = s[0];
	f->n = n;
	return true;
}

/* ---- findings ---- */

static void add_finding(struct lint_result *res, enum lint_rule rule, size_t line, const char *fmt,
			...) GDN_PRINTF(4, 5);

static void add_finding(struct lint_result *res, enum lint_rule rule, size_t line, const char *fmt,
			...)
{
	struct sbuf sb = SBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sbuf_vaddf(&sb, fmt, ap);
	va_end(ap);
	ALLOC_GROW(res->findings, res->nr + 1, res->alloc);
	res->findings[res->nr].rule = rule;
	res->findings[res->nr].line = line;
	res->findings[res->nr].message = sbuf_detach(&sb, NULL);
	res->nr++;
}

/* Stable sort by report group; within a group findings are already in line order. */
static void sort_findings(struct lint_result *res)
{
	struct lint_finding *sorted;
	size_t k = 0;

	if (res->nr < 2)
		return;
	sorted = xmalloc(st_mult(res->nr, sizeof(*sorted)));
	for (int g = 0; g < LINT_GROUP_NR; g++)
		for (size_t i = 0; i < res->nr; i++)
			if (rules[res->findings[i].rule].group == g)
				sorted[k++] = res->findings[i];
	if (k != res->nr)
		BUG("lint findings lost in sorting");
	free(res->findings);
	res->findings = sorted;
	res->alloc = res->nr;
}

void lint_result_release(struct lint_result *res)
{
	for (size_t i = 0; i < res->nr; i++)
		free(res->findings[i].message);
	free(res->findings);
	res->findings = NULL;
	res->nr = res->alloc = 0;
	res->lines = res->scope_line = res->entries = 0;
	strvec_clear(&res->fields);
}

/* ---- the Entry Template ---- */

static bool has_field(const struct strvec *sv, const char *name, size_t len)
{
	for (size_t i = 0; i < sv->nr; i++)
		if (strlen(sv->v[i]) == len && !strncasecmp(sv->v[i], name, len))
			return true;
	return false;
}

/*
 * The unindented "- Name:" lines of the first "## Entry Template" section
 * (fenced or not), up to the next level-1 or level-2 heading outside a
 * fence. A trailing " (qualifier)" is not part of the name.
 */
static void template_fields(const char *buf, size_t len, struct strvec *out)
{
	struct lint_lines it;
	struct fence fence = {false, 0, 0};
	const char *line;
	size_t llen;
	bool in_section = false;

	lint_lines_init(&it, buf, len);
	while (lint_lines_next(&it, &line, &llen)) {
		const char *s = line, *name, *colon, *paren;
		size_t slen = llen, nlen;
		int level;

		strip(&s, &slen);
		if (!fence_feed(&fence, s, slen)) {
			level = heading_level(s, slen);
			if (level == 1 || level == 2) {
				const char *t = s + level;
				size_t tlen = slen - (size_t)level;

				if (in_section)
					break;
				strip(&t, &tlen);
				in_section = tlen >= 14 && !strncasecmp(t, "Entry Template", 14);
				continue;
			}
		}
		if (!in_section || llen < 3 || line[0] != '-' || line[1] != ' ')
			continue;
		name = line + 2;
		colon = memchr(name, ':', llen - 2);
		if (!colon)
			continue;
		nlen = (size_t)(colon - name);
		paren = nlen > 1 ? memmem(name, nlen, " (", 2) : NULL;
		if (paren)
			nlen = (size_t)(paren - name);
		strip(&name, &nlen);
		if (nlen && !has_field(out, name, nlen)) {
			char *copy = xstrndup(name, nlen);

			strvec_push(out, copy);
			free(copy);
		}
	}
}

/* ---- the main pass ---- */

struct entry {
	bool open;	  /* a numbered entry in scope is being read */
	bool check;	  /* ... and its fields are checked (number >= since) */
	size_t line;	  /* heading line */
	const char *head; /* stripped heading */
	size_t head_len;
};

struct state {
	const struct lint_opts *o;
	struct lint_result *res;
	struct gdn_err *err;
	bool *have;	   /* per required field: seen in the current entry */
	size_t *field_len; /* per required field: strlen */
	char since[32];
	size_t since_len;
	struct entry e;
	/* the previous numbered heading, for the monotonic rule */
	bool prev_set;
	size_t prev_line;
	const char *prev_text;
	size_t prev_text_len;
	struct lint_heading prev;
};

static void end_entry(struct state *st)
{
	struct sbuf missing = SBUF_INIT;

	if (!st->e.open || !st->e.check)
		goto out;
	for (size_t i = 0; i < st->res->fields.nr; i++)
		if (!st->have[i])
			sbuf_addf(&missing, "%s%s", missing.len ? ", " : "", st->res->fields.v[i]);
	if (missing.len)
		add_finding(st->res, LINT_MISSING_FIELDS, st->e.line, "line %zu `%.*s`: missing %s",
			    st->e.line, (int)st->e.head_len, st->e.head, missing.buf);
out:
	st->e.open = false;
	sbuf_release(&missing);
}

static void start_entry(struct state *st, size_t line, const char *s, size_t len,
			const struct lint_heading *h)
{
	st->res->entries++;
	st->e.open = true;
	st->e.line = line;
	st->e.head = s;
	st->e.head_len = len;
	st->e.check =
	    st->o->require_fields &&
	    (!st->since_len || lint_num_cmp(h->num, h->num_len, st->since, st->since_len) >= 0);
	if (st->e.check)
		memset(st->have, 0, st->res->fields.nr * sizeof(*st->have));
}

static void check_monotonic(struct state *st, size_t line, const char *s, size_t len,
			    const struct lint_heading *h)
{
	const char *reason = NULL;

	if (st->prev_set) {
		int c = lint_num_cmp(h->num, h->num_len, st->prev.num, st->prev.num_len);

		if (c < 0) {
			reason = "iteration number decreased";
		} else if (!c && !h->suffix_len && !st->prev.suffix_len) {
			reason = "duplicate iteration number";
		} else if (!c && !h->suffix_len) {
			reason = "sub-iteration returned to base number";
		} else if (!c && st->prev.suffix_len) {
			size_t n = h->suffix_len < st->prev.suffix_len ? h->suffix_len
								       : st->prev.suffix_len;
			int sc = memcmp(h->suffix, st->prev.suffix, n);

			if (sc < 0 || (!sc && h->suffix_len <= st->prev.suffix_len))
				reason = "sub-iteration suffix is not increasing";
		}
	}
	if (reason)
		add_finding(st->res, LINT_NON_MONOTONIC, line,
			    "%s: line %zu `%.*s` -> line %zu `%.*s`", reason, st->prev_line,
			    (int)st->prev_text_len, st->prev_text, line, (int)len, s);
	st->prev_set = true;
	st->prev_line = line;
	st->prev_text = s;
	st->prev_text_len = len;
	st->prev = *h;
}

static void check_fields(struct state *st, const char *s, size_t len)
{
	if (len < 3 || s[0] != '-' || s[1] != ' ')
		return;
	for (size_t i = 0; i < st->res->fields.nr; i++) {
		const char *f = st->res->fields.v[i];
		size_t n = st->field_len[i];

		if (st->have[i] || len < 3 + n ||
		    tolower((unsigned char)s[2]) != tolower((unsigned char)f[0]) ||
		    strncasecmp(s + 2, f, n))
			continue;
		if (s[2 + n] == ':' || (s[2 + n] == ' ' && len > 3 + n && s[3 + n] == '('))
			st->have[i] = true;
	}
}

static bool starts_none(const char *s, size_t len)
{
	return len >= 4 && !strncasecmp(s, "none", 4) &&
	       (len == 4 || !(isalnum((unsigned char)s[4]) || s[4] == '_'));
}

/*
 * A `- Commit:` line in a numbered entry in scope. Accepted values: the
 * placeholders (their own rules), `none...`, and a 7-40 digit hex id,
 * bare or in backticks, optionally followed by a parenthesised note; the
 * whole value may be wrapped in backticks.
 */
static int check_commit(struct state *st, size_t line, const char *s, size_t len)
{
	const char *v = s + 9, *w, *p, *end, *idp;
	size_t vlen = len - 9, wlen, n;
	bool tick = false, ok;
	char id[41];
	int exists = 0, ret = 0;
	struct gdn_err cerr = GDN_ERR_INIT;

	strip(&v, &vlen);
	if (span_eq(v, vlen, "(pending)") || span_eq(v, vlen, "this commit"))
		goto out;
	w = v;
	wlen = vlen;
	while (wlen >= 2 && w[0] == '`' && w[wlen - 1] == '`') {
		w++;
		wlen -= 2;
		strip(&w, &wlen);
	}
	p = w;
	end = w + wlen;
	if (p < end && *p == '`') {
		tick = true;
		p++;
	}
	if (starts_none(p, (size_t)(end - p)))
		goto out;
	idp = p;
	for (n = 0; p + n < end && is_hex(p[n]); n++)
		;
	ok = n >= 7 && n <= 40;
	for (size_t i = 0; ok && i < n; i++)
		id[i] = (char)tolower((unsigned char)p[i]);
	p += n;
	if (ok && tick)
		ok = p < end && *p++ == '`';
	if (ok && p < end) {
		ok = is_space(*p);
		while (p < end && is_space(*p))
			p++;
		ok = ok && p < end && *p == '(';
	}
	if (!ok) {
		if (vlen)
			add_finding(st->res, LINT_BAD_COMMIT, line,
				    "line %zu: not a commit id or none (`%.*s`)", line, (int)vlen,
				    v);
		else
			add_finding(st->res, LINT_BAD_COMMIT, line,
				    "line %zu: not a commit id or none (empty)", line);
		goto out;
	}
	id[n] = '\0';
	ret = st->o->commit_exists(id, &exists, st->o->payload, &cerr);
	if (ret) {
		ret = gdn_err_set(st->err, ret, "line %zu: %s", line,
				  cerr.msg[0] ? cerr.msg : "commit lookup failed");
		goto out;
	}
	if (!exists)
		add_finding(st->res, LINT_UNKNOWN_COMMIT, line,
			    "line %zu: commit %.*s not found in %s", line, (int)n, idp,
			    st->o->repo_name ? st->o->repo_name : "the repository");
out:
	return ret;
}

static size_t find_scope_line(const char *buf, size_t len, enum lint_scope scope, size_t *lines)
{
	struct lint_lines it;
	const char *line;
	size_t llen, found = 0;

	lint_lines_init(&it, buf, len);
	while (lint_lines_next(&it, &line, &llen))
		if (span_starts(line, llen, "### Iteration "))
			found = it.lineno;
	*lines = it.lineno;
	if (scope == LINT_SCOPE_ALL)
		return it.lineno ? 1 : 0;
	return found;
}

int lint_log_buffer(const char *buf, size_t len, const struct lint_opts *o, struct lint_result *res,
		    struct gdn_err *err)
{
	struct state st;
	struct lint_lines it;
	struct fence fence = {false, 0, 0};
	const char *line;
	size_t off = 0, llen;
	int ret = 0;

	memset(&st, 0, sizeof(st));
	st.o = o;
	st.res = res;
	st.err = err;
	switch (lint_utf8_check(buf, len, &off)) {
	case LINT_UTF8_OK:
		break;
	case LINT_UTF8_NUL:
		ret = gdn_err_set(err, GDN_EPARSE, "NUL byte at byte offset %zu", off);
		goto out;
	case LINT_UTF8_INVALID:
		ret = gdn_err_set(err, GDN_EPARSE, "invalid UTF-8 at byte offset %zu", off);
		goto out;
	}
	if (len >= 3 && !memcmp(buf, "\xEF\xBB\xBF", 3)) {
		buf += 3;
		len -= 3;
	}
	res->scope_line = find_scope_line(buf, len, o->scope, &res->lines);
	if (o->require_fields) {
		if (o->fields && o->fields->nr)
			strvec_pushv(&res->fields, o->fields->v);
		else
			template_fields(buf, len, &res->fields);
		if (!res->fields.nr) {
			ret =
			    gdn_err_set(err, GDN_ENOTFOUND,
					"no \"## Entry Template\" section with \"- Name:\" fields "
					"to take the required fields from");
			goto out;
		}
		st.have = xcalloc(res->fields.nr, sizeof(*st.have));
		st.field_len = xcalloc(res->fields.nr, sizeof(*st.field_len));
		for (size_t i = 0; i < res->fields.nr; i++)
			st.field_len[i] = strlen(res->fields.v[i]);
	}
	if (o->since > 0) {
		snprintf(st.since, sizeof(st.since), "%ld", o->since);
		st.since_len = strlen(st.since);
	}

	lint_lines_init(&it, buf, len);
	while (lint_lines_next(&it, &line, &llen)) {
		size_t lineno = it.lineno, slen = llen;
		const char *s = line;
		struct lint_heading h;
		bool numbered;
		int level;

		strip(&s, &slen);
		if (res->scope_line && lineno >= res->scope_line) {
			if (!o->allow_pending && span_eq(s, slen, "- Commit: (pending)"))
				add_finding(res, LINT_PENDING, lineno, "line %zu", lineno);
			else if (!o->allow_this_commit && span_eq(s, slen, "- Commit: this commit"))
				add_finding(res, LINT_THIS_COMMIT, lineno, "line %zu", lineno);
		}
		numbered = slen > 14 && s[0] == '#' && lint_parse_heading(s, slen, &h);
		if (numbered && !o->allow_non_monotonic)
			check_monotonic(&st, lineno, s, slen, &h);

		if (fence_feed(&fence, s, slen))
			continue;
		level = heading_level(s, slen);
		if (level >= 1 && level <= 3) {
			end_entry(&st);
			if (numbered && res->scope_line && lineno >= res->scope_line)
				start_entry(&st, lineno, s, slen, &h);
			continue;
		}
		if (!st.e.open)
			continue;
		if (st.e.check)
			check_fields(&st, s, slen);
		if (o->commit_exists && span_starts(s, slen, "- Commit:")) {
			ret = check_commit(&st, lineno, s, slen);
			if (ret)
				goto out;
		}
	}
	end_entry(&st);
out:
	sort_findings(res);
	free(st.have);
	free(st.field_len);
	return ret;
}
