/*
 * Secret masking for echoed command lines (--dry-run, GDNCTL_TRACE) and
 * other text shown to people. Two kinds of knowledge: names that look
 * secret (HF_TOKEN, --api-key) and literal values registered at run time
 * (a token read from the configuration). Masking works on a byte map of
 * the original text, so overlapping matches merge into one "***".
 */
#include "gdnctl/compat.h"
#include "gdnctl/proc.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static pthread_mutex_t secret_lock = PTHREAD_MUTEX_INITIALIZER;
static struct strvec secret_names = STRVEC_INIT;
static struct strvec secret_values = STRVEC_INIT;

static const char *const secret_words[] = {"TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD"};

#define MASK "***"

bool gdn_secret_name(const char *name, size_t len)
{
	bool found = false;
	size_t i, w;

	/* A word not followed by a letter: "HF_TOKEN", "apiKey", not "tokenizer". */
	for (i = 0; i < len; i++) {
		for (w = 0; w < ARRAY_SIZE(secret_words); w++) {
			size_t wl = strlen(secret_words[w]);

			if (wl > len - i || strncasecmp(name + i, secret_words[w], wl))
				continue;
			if (i + wl == len || !isalpha((unsigned char)name[i + wl]))
				return true;
		}
	}
	pthread_mutex_lock(&secret_lock);
	for (i = 0; i < secret_names.nr && !found; i++)
		found =
		    strlen(secret_names.v[i]) == len && !strncasecmp(secret_names.v[i], name, len);
	pthread_mutex_unlock(&secret_lock);
	return found;
}

void gdn_secret_add_name(const char *name)
{
	if (!name || !*name)
		return;
	pthread_mutex_lock(&secret_lock);
	if (!strvec_contains(&secret_names, name))
		strvec_push(&secret_names, name);
	pthread_mutex_unlock(&secret_lock);
}

void gdn_secret_add_value(const char *value)
{
	if (!value || !*value)
		return;
	pthread_mutex_lock(&secret_lock);
	if (!strvec_contains(&secret_values, value))
		strvec_push(&secret_values, value);
	pthread_mutex_unlock(&secret_lock);
}

static void mark(char *m, size_t from, size_t to)
{
	if (to > from)
		memset(m + from, 1, to - from);
}

/* Mark every occurrence of a registered value in s[0..len). */
static void mark_values(const char *s, size_t len, char *m)
{
	size_t i;

	pthread_mutex_lock(&secret_lock);
	for (i = 0; i < secret_values.nr; i++) {
		const char *v = secret_values.v[i];
		size_t vl = strlen(v), off = 0;
		const char *hit;

		while (off < len && (hit = memmem(s + off, len - off, v, vl))) {
			size_t at = (size_t)(hit - s);

			mark(m, at, at + vl);
			off = at + 1;
		}
	}
	pthread_mutex_unlock(&secret_lock);
}

static bool name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.';
}

/*
 * s[0..len) is one word. If it is [-[-]]NAME=VALUE with a secret NAME, or
 * nests one in its value ("--env=HF_TOKEN=abc"), return the offset of the
 * secret value; else len.
 */
static size_t secret_value_at(const char *s, size_t len)
{
	size_t pos = 0;

	while (pos < len) {
		size_t i = pos, n;

		while (i < len && i - pos < 2 && s[i] == '-')
			i++;
		for (n = i; n < len && name_char(s[n]); n++)
			;
		if (n == i || n >= len || s[n] != '=')
			break;
		if (gdn_secret_name(s + i, n - i))
			return n + 1;
		pos = n + 1;
	}
	return len;
}

/* Whether s[0..len) is an option "-NAME"/"--NAME" (no value) with a secret NAME. */
static bool secret_option(const char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len && i < 2 && s[i] == '-')
		i++;
	if (!i || i == len)
		return false;
	for (n = i; n < len && name_char(s[n]); n++)
		;
	return n == len && gdn_secret_name(s + i, n - i);
}

static bool shell_separator(char c)
{
	return isspace((unsigned char)c) || strchr(";&|()<>`", c);
}

/*
 * A shell command string ("export HF_TOKEN=abc; run --token xyz"): split it
 * into words roughly as a shell would (quotes, backslashes, operators) and
 * mask secret assignments and the word after a secret option.
 */
static void mark_command_string(const char *s, size_t len, char *m)
{
	bool mask_next = false;
	size_t i = 0;

	while (i < len) {
		size_t start, v;
		char q = 0;

		while (i < len && shell_separator(s[i]))
			i++;
		if (i >= len)
			break;
		start = i;
		for (; i < len; i++) {
			if (q) {
				if (s[i] == q)
					q = 0;
				else if (q == '"' && s[i] == '\\' && i + 1 < len)
					i++;
			} else if (s[i] == '\'' || s[i] == '"') {
				q = s[i];
			} else if (s[i] == '\\' && i + 1 < len) {
				i++;
			} else if (shell_separator(s[i])) {
				break;
			}
		}
		if (mask_next) {
			mark(m, start, i);
			mask_next = false;
			continue;
		}
		v = secret_value_at(s + start, i - start);
		if (start + v < i)
			mark(m, start + v, i);
		else
			mask_next = secret_option(s + start, i - start);
	}
}

/* Append s[0..len) with the marked runs replaced by MASK, quoting the rest if asked. */
static void emit(struct sbuf *out, const char *s, size_t len, const char *m, bool quote)
{
	size_t i = 0;

	if (!len && quote)
		sbuf_add_shell_quoted(out, "");
	while (i < len) {
		size_t j = i;

		if (m[i]) {
			while (j < len && m[j])
				j++;
			sbuf_adds(out, MASK);
		} else {
			while (j < len && !m[j])
				j++;
			if (quote) {
				char *part = xstrndup(s + i, j - i);

				sbuf_add_shell_quoted(out, part);
				free(part);
			} else {
				sbuf_add(out, s + i, j - i);
			}
		}
		i = j;
	}
}

void gdn_argv_format(struct sbuf *out, const char *const *argv)
{
	bool mask_next = false;
	size_t i;

	for (i = 0; argv && argv[i]; i++) {
		const char *a = argv[i];
		size_t len = strlen(a), v;
		char *m = xcalloc(len + 1, 1);

		if (i)
			sbuf_addch(out, ' ');
		if (mask_next) {
			mark(m, 0, len);
			mask_next = false;
		} else if ((v = secret_value_at(a, len)) < len) {
			/* The whole rest is the value, spaces and all ("-e PASSWORD=a b"). */
			mark(m, v, len);
		} else {
			mask_next = secret_option(a, len);
			mark_command_string(a, len, m);
		}
		mark_values(a, len, m);
		emit(out, a, len, m, true);
		free(m);
	}
}

void gdn_secret_mask(struct sbuf *sb)
{
	struct sbuf tmp = SBUF_INIT;
	char *m = xcalloc(sb->len + 1, 1);

	mark_values(sb->buf, sb->len, m);
	if (memchr(m, 1, sb->len)) {
		emit(&tmp, sb->buf, sb->len, m, false);
		sbuf_reset(sb);
		sbuf_add(sb, tmp.buf, tmp.len);
	}
	sbuf_release(&tmp);
	free(m);
}
