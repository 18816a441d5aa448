/*
 * What of the agent's output is shown: file-update and diff blocks are
 * hidden unless show_file_updates. The transcript always gets everything;
 * this only decides what the user sees, and proc.h's idle timer is reset
 * by the child's output whatever is shown.
 *
 * Codex prints a change as a section header ("file update", or "file
 * update:" before a whole turn diff), then per file an "M path" / "A path"
 * / "D path" line followed by a unified diff (M) or the raw content (A, D),
 * or a git diff. The original hid every line starting with a space, '+' or
 * '-' after a header, so an indented line or a "- bullet" after a diff
 * vanished. Here a hunk is hidden by its own line counts ("@@ -a,b +c,d
 * @@"), and raw content until codex's next section marker.
 */
#include "gdnctl/compat.h"
#include "gdnctl/sbuf.h"
#include "agent_impl.h"

void agent_filter_release(struct agent_filter *f)
{
	sbuf_release(&f->scratch);
	f->state = FILTER_NORMAL;
	f->old_left = f->new_left = 0;
}

static bool starts(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

/* Copy the line without ANSI CSI/OSC escapes and without a trailing CR. */
static const char *plain_line(struct agent_filter *f, const char *line, size_t len)
{
	size_t i = 0;

	sbuf_reset(&f->scratch);
	while (i < len) {
		unsigned char c = line[i];

		if (c == 0x1b && i + 1 < len && line[i + 1] == '[') {
			i += 2;
			while (i < len && !((unsigned char)line[i] >= 0x40 && line[i] <= 0x7e))
				i++;
			i++;
			continue;
		}
		if (c == 0x1b && i + 1 < len && line[i + 1] == ']') {
			i += 2;
			while (i < len && line[i] != '\a' && line[i] != 0x1b)
				i++;
			i += (i < len && line[i] == 0x1b) ? 2 : 1;
			continue;
		}
		sbuf_addch(&f->scratch, c ? c : ' ');
		i++;
	}
	if (f->scratch.len && f->scratch.buf[f->scratch.len - 1] == '\r')
		sbuf_setlen(&f->scratch, f->scratch.len - 1);
	return f->scratch.buf;
}

static bool blank(const char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	return !*s;
}

/* "file update", "file update:", "file create: x" ... (after leading blanks). */
static bool is_update_header(const char *s)
{
	static const char *const verbs[] = {"update", "create", "add", "delete", "rename"};
	size_t i, n;

	while (*s == ' ' || *s == '\t')
		s++;
	if (!starts(s, "file "))
		return false;
	s += 5;
	for (i = 0; i < ARRAY_SIZE(verbs); i++) {
		n = strlen(verbs[i]);
		if (!strncmp(s, verbs[i], n) && (s[n] == ':' || s[n] == '\0' || blank(s + n)))
			return true;
	}
	return false;
}

/* git diff metadata lines (the part of CODEX_DIFF_LINE_RE that was right). */
static bool is_diff_meta(const char *s)
{
	static const char *const prefixes[] = {
	    "diff --git ",
	    "--- ",
	    "+++ ",
	    "new file mode ",
	    "deleted file mode ",
	    "similarity index ",
	    "dissimilarity index ",
	    "rename from ",
	    "rename to ",
	    "copy from ",
	    "copy to ",
	    "old mode ",
	    "new mode ",
	    "Binary files ",
	    "GIT binary patch",
	};
	size_t i;

	if (!strcmp(s, "\\ No newline at end of file"))
		return true;
	if (starts(s, "index ")) {
		const char *p = s + 6;
		size_t a = strspn(p, "0123456789abcdef");

		return a && p[a] == '.' && p[a + 1] == '.' && strspn(p + a + 2, "0123456789abcdef");
	}
	for (i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (starts(s, prefixes[i]))
			return true;
	return false;
}

/* "M path", "A path", "D path" (codex's per-file line in a "file update" section). */
static char file_change_kind(const char *s)
{
	if ((s[0] == 'M' || s[0] == 'A' || s[0] == 'D') && s[1] == ' ' && s[2] && s[2] != ' ')
		return s[0];
	return 0;
}

/* Codex's section markers: the line that starts the next event after a change. */
static bool is_codex_marker(const char *s)
{
	static const char *const words[] = {"codex",	   "exec",	  "thinking", "user",
					    "tokens used", "Plan update", "tool",     "collab"};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(words); i++)
		if (!strcmp(s, words[i]))
			return true;
	return starts(s, "apply_patch(") || starts(s, "ERROR: ") || starts(s, "warning: ") ||
	       starts(s, "tokens used") || is_update_header(s);
}

static long parse_count(const char **p)
{
	long v = 0;

	if (!isdigit((unsigned char)**p))
		return -1;
	while (isdigit((unsigned char)**p)) {
		if (v < 100000000)
			v = v * 10 + (**p - '0');
		(*p)++;
	}
	return v;
}

/* "@@ -a[,b] +c[,d] @@..." -> counts b and d (1 when omitted). */
static bool parse_hunk(const char *s, long *old_n, long *new_n)
{
	const char *p = s + 3;

	*old_n = *new_n = 1;
	if (*p++ != '-' || parse_count(&p) < 0)
		return false;
	if (*p == ',') {
		p++;
		if ((*old_n = parse_count(&p)) < 0)
			return false;
	}
	if (*p++ != ' ' || *p++ != '+' || parse_count(&p) < 0)
		return false;
	if (*p == ',') {
		p++;
		if ((*new_n = parse_count(&p)) < 0)
			return false;
	}
	return starts(p, " @@");
}

/* A line in FILTER_BLOCK: hidden (true) or the block has ended (false). */
static bool block_line(struct agent_filter *f, const char *s)
{
	char kind;

	if (blank(s) || is_diff_meta(s))
		return true;
	if (starts(s, "@@")) {
		if (parse_hunk(s, &f->old_left, &f->new_left)) {
			f->state = (f->old_left || f->new_left) ? FILTER_HUNK : FILTER_BLOCK;
		} else {
			f->state = FILTER_LOOSE;
		}
		return true;
	}
	kind = file_change_kind(s);
	if (kind) {
		f->state = kind == 'M' ? FILTER_BLOCK : FILTER_RAW;
		return true;
	}
	return false;
}

bool agent_filter_show(struct agent_filter *f, const char *line, size_t len)
{
	const char *s;

	if (f->show_all)
		return true;
	s = plain_line(f, line, len);
	for (;;) {
		switch (f->state) {
		case FILTER_NORMAL:
			if (is_update_header(s)) {
				f->state = FILTER_BLOCK;
				return false;
			}
			return true;
		case FILTER_BLOCK:
			if (block_line(f, s))
				return false;
			f->state = FILTER_NORMAL;
			continue;
		case FILTER_HUNK:
			if (s[0] == ' ' && f->old_left > 0 && f->new_left > 0) {
				f->old_left--;
				f->new_left--;
			} else if (s[0] == '\0' && f->old_left > 0 && f->new_left > 0) {
				/* a context line whose single space was stripped */
				f->old_left--;
				f->new_left--;
			} else if (s[0] == '-' && f->old_left > 0) {
				f->old_left--;
			} else if (s[0] == '+' && f->new_left > 0) {
				f->new_left--;
			} else if (s[0] == '\\') {
				/* "\ No newline at end of file" */
			} else {
				f->state = FILTER_BLOCK;
				continue;
			}
			if (!f->old_left && !f->new_left)
				f->state = FILTER_BLOCK;
			return false;
		case FILTER_LOOSE:
			if (s[0] == ' ' || s[0] == '+' || s[0] == '-' || s[0] == '\\')
				return false;
			f->state = FILTER_BLOCK;
			continue;
		case FILTER_RAW:
			if (!is_codex_marker(s))
				return false;
			f->state = FILTER_NORMAL;
			continue;
		}
		BUG("bad filter state %d", (int)f->state);
	}
}
