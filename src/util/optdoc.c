/* Documents generated from option tables: JSON, roff, subcommand names. */
#include "gdnctl/compat.h"
#include "gdnctl/optdoc.h"
#include "gdnctl/json.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

/*
 * "bool", "int", "float", "duration", "seconds" (OPT_SECONDS; "minutes" for
 * OPT_MINUTES_), "string", "choice" (also OPT_ENUM), "list", "kv".
 */
static const char *opt_type_name(const struct opt *o)
{
	int type = o->type;
	static const char *const names[] = {
	    [OPT_END] = "end",	     [OPT_GROUP] = "group",   [OPT_BOOL] = "bool",
	    [OPT_INT] = "int",	     [OPT_FLOAT] = "float",   [OPT_DURATION] = "duration",
	    [OPT_STRING] = "string", [OPT_CHOICE] = "choice", [OPT_LIST] = "list",
	    [OPT_KV] = "kv",	     [OPT_ENUM] = "choice",   [OPT_SECONDS] = "seconds",
	};

	if (type == OPT_SECONDS && o->unit_s == 60)
		return "minutes";
	if (type < 0 || (size_t)type >= sizeof(names) / sizeof(names[0]) || !names[type])
		return "unknown";
	return names[type];
}

static json_t *str_or_null(const char *s)
{
	return s ? gdn_json_string_lossy(s) : json_null();
}

static json_t *lines_json(const char *s)
{
	json_t *a = json_array();

	while (s && *s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		char *line = xstrndup(s, len);

		json_array_append_new(a, gdn_json_string_lossy(line));
		free(line);
		s = nl ? nl + 1 : NULL;
	}
	return a;
}

static json_t *option_json(const struct opt *o, const char *group)
{
	json_t *j = json_object(), *choices = json_null(), *choice_help = NULL;
	char sh[2] = {o->short_name, 0};

	if (opt_has_choices(o)) {
		size_t n = opt_choice_count(o);

		choices = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(choices,
					      gdn_json_string_lossy(opt_choice_name(o, i)));
	}
	if (o->type == OPT_ENUM) {
		size_t n = opt_choice_count(o);

		choice_help = json_object();
		for (size_t i = 0; i < n; i++)
			if (opt_choice_help(o, i))
				json_object_set_new(choice_help, opt_choice_name(o, i),
						    gdn_json_string_lossy(opt_choice_help(o, i)));
	}
	json_object_set_new(j, "long", str_or_null(o->long_name));
	json_object_set_new(j, "short", o->short_name ? json_string(sh) : json_null());
	json_object_set_new(j, "type", json_string(opt_type_name(o)));
	json_object_set_new(j, "arg", str_or_null(opt_arg_name(o)));
	json_object_set_new(j, "help", str_or_null(o->help));
	json_object_set_new(j, "choices", choices);
	if (choice_help)
		json_object_set_new(j, "choice_help", choice_help);
	json_object_set_new(j, "default", str_or_null(o->defval));
	json_object_set_new(j, "negatable", json_boolean(o->flags & OPT_NEGATABLE));
	json_object_set_new(j, "hidden", json_boolean(o->flags & OPT_HIDDEN));
	json_object_set_new(j, "required", json_boolean(o->flags & OPT_REQUIRED));
	json_object_set_new(j, "repeatable",
			    json_boolean(o->type == OPT_LIST || o->type == OPT_KV));
	json_object_set_new(j, "group", str_or_null(group));
	if (o->type == OPT_INT && o->max > o->min) {
		json_object_set_new(j, "min", json_integer(o->min));
		json_object_set_new(j, "max", json_integer(o->max));
	}
	return j;
}

json_t *opt_doc_json(const struct opt *opts, const struct opt_usage *u, int parse_flags)
{
	json_t *j = json_object(), *options = json_array();
	const char *group = NULL;

	for (const struct opt *o = opts; o->type != OPT_END; o++) {
		if (o->type == OPT_GROUP)
			group = o->help;
		else
			json_array_append_new(options, option_json(o, group));
	}
	json_object_set_new(j, "usage", lines_json(u->usage));
	json_object_set_new(j, "description", str_or_null(u->summary));
	json_object_set_new(j, "extra", str_or_null(u->extra));
	json_object_set_new(j, "positional",
			    json_boolean(!(parse_flags & OPT_PARSE_NO_POSITIONAL)));
	json_object_set_new(j, "options", options);
	return j;
}

static bool is_word(const char *s, size_t len)
{
	if (!len || !islower((unsigned char)s[0]))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
			return false;
	return true;
}

void opt_doc_subcommands(const struct opt_usage *u, const char *name, struct strvec *out)
{
	const char *line = u->usage;
	size_t nlen = strlen(name);

	while (line && *line) {
		const char *nl = strchr(line, '\n'), *w = line;
		const char *end = nl ? nl : line + strlen(line);
		size_t len;

		line = nl ? nl + 1 : NULL;
		if (strncmp(w, "gdnctl ", 7) || strncmp(w + 7, name, nlen) || w[7 + nlen] != ' ')
			continue;
		w += 8 + nlen;
		len = strcspn(w, " ");
		if (w + len > end)
			len = (size_t)(end - w);
		if (len > 2 && w[0] == '[' && w[len - 1] == ']') {
			w++;
			len -= 2;
		}
		/* "[options]" is the usual placeholder, not a subcommand */
		if (is_word(w, len) && !(len == 7 && !strncmp(w, "options", 7))) {
			char *word = xstrndup(w, len);

			if (!strvec_contains(out, word))
				strvec_push(out, word);
			free(word);
		}
	}
}

/* Decode one UTF-8 sequence at s (len bytes left); returns its length, 0 when invalid. */
static size_t utf8_decode(const unsigned char *s, size_t len, unsigned *cp)
{
	size_t n;
	unsigned c;

	if (s[0] < 0xc2 || s[0] > 0xf4)
		return 0;
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	if (len < n)
		return 0;
	c = s[0] & (0x3f >> (n - 1));
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return n;
}

void roff_escape_len(struct sbuf *out, const char *s, size_t len)
{
	bool bol = !out->len || out->buf[out->len - 1] == '\n';

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (bol && (c == '.' || c == '\''))
			sbuf_adds(out, "\\&");
		if (c == '\\') {
			sbuf_adds(out, "\\e");
		} else if (c == '"') {
			sbuf_adds(out, "\\(dq");
		} else if (c == '-') {
			sbuf_adds(out, "\\-");
		} else if (c >= 0x80) {
			unsigned cp;
			size_t n = utf8_decode((const unsigned char *)s + i, len - i, &cp);

			if (n) {
				sbuf_addf(out, "\\[u%04X]", cp);
				i += n - 1;
			} else {
				sbuf_addch(out, '?');
			}
		} else if (c < 0x20 && c != '\n' && c != '\t') {
			sbuf_addch(out, '?');
		} else {
			sbuf_addch(out, c);
		}
		bol = c == '\n';
	}
}

void roff_escape(struct sbuf *out, const char *s)
{
	roff_escape_len(out, s, strlen(s));
}

static void roff_option_names(struct sbuf *out, const struct opt *o)
{
	const char *arg = opt_arg_name(o);

	if (o->short_name) {
		char sh[3] = {'-', o->short_name, 0};

		sbuf_adds(out, "\\fB");
		roff_escape(out, sh);
		sbuf_adds(out, "\\fR");
		if (o->long_name)
			sbuf_adds(out, ", ");
	}
	if (o->long_name) {
		sbuf_adds(out, "\\fB\\-\\-");
		roff_escape(out, o->long_name);
		sbuf_adds(out, "\\fR");
		if (o->flags & OPT_NEGATABLE) {
			sbuf_adds(out, ", \\fB\\-\\-no\\-");
			roff_escape(out, o->long_name);
			sbuf_adds(out, "\\fR");
		}
	}
	if (opt_has_choices(o)) {
		size_t n = opt_choice_count(o);

		sbuf_adds(out, " {");
		for (size_t i = 0; i < n; i++) {
			sbuf_adds(out, i ? "|" : "");
			roff_escape(out, opt_choice_name(o, i));
		}
		sbuf_adds(out, "}");
	} else if (arg) {
		sbuf_adds(out, " \\fI");
		roff_escape(out, arg);
		sbuf_adds(out, "\\fR");
	}
}

/* An OPT_ENUM's rows with their one-line help, indented under the option. */
static void roff_choice_help(struct sbuf *out, const struct opt *o)
{
	size_t n = opt_choice_count(o);
	bool any = false;

	for (size_t i = 0; i < n && o->type == OPT_ENUM; i++)
		any = any || opt_choice_help(o, i);
	if (!any)
		return;
	sbuf_adds(out, ".RS\n");
	for (size_t i = 0; i < n; i++) {
		sbuf_adds(out, ".TP\n\\fB");
		roff_escape(out, opt_choice_name(o, i));
		sbuf_adds(out, "\\fR\n");
		roff_escape(out, opt_choice_help(o, i) ? opt_choice_help(o, i) : "");
		sbuf_addch(out, '\n');
	}
	sbuf_adds(out, ".RE\n");
}

void opt_doc_roff_options(struct sbuf *out, const struct opt *opts)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++) {
		if (o->flags & OPT_HIDDEN)
			continue;
		if (o->type == OPT_GROUP) {
			sbuf_adds(out, ".SS ");
			roff_escape(out, o->help ? o->help : "");
			sbuf_addch(out, '\n');
			continue;
		}
		sbuf_adds(out, ".TP\n");
		roff_option_names(out, o);
		sbuf_addch(out, '\n');
		roff_escape(out, o->help ? o->help : "");
		if (o->type == OPT_LIST || o->type == OPT_KV)
			sbuf_adds(out, " (repeatable)");
		if (o->flags & OPT_REQUIRED)
			sbuf_adds(out, " (required)");
		if (o->defval) {
			sbuf_adds(out, " (default: ");
			roff_escape(out, o->defval);
			sbuf_adds(out, ")");
		}
		sbuf_addch(out, '\n');
		roff_choice_help(out, o);
	}
	sbuf_adds(out, ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nshow the help\n");
}
