#include "gdnctl/compat.h"
#include "gdnctl/opt.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/suggest.h"

int opt_parse_long(const char *s, long *out)
{
	char *end;
	long v;

	if (!s || !*s || isspace((unsigned char)*s))
		return GDN_EUSAGE;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end)
		return GDN_EUSAGE;
	*out = v;
	return 0;
}

int opt_parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)*s))
		return GDN_EUSAGE;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || v != v || v > 1e308 || v < -1e308)
		return GDN_EUSAGE;
	*out = v;
	return 0;
}

/*
 * "90" (seconds), "1500ms", "90s", "15m", "2h", "1d", sums like "1h30m",
 * and decimal fractions of each ("1.5h", "0.25s", "1.5"), rounded to the
 * millisecond.
 */
int opt_parse_duration_ms(const char *s, long *out_ms)
{
	long long total = 0;
	bool any = false;

	if (!s || !*s)
		return GDN_EUSAGE;
	while (*s) {
		long long n = 0, frac = 0, den = 1, mult;
		bool digits = false;

		while (isdigit((unsigned char)*s)) {
			n = n * 10 + (*s++ - '0');
			digits = true;
			if (n > 1000000000LL)
				return GDN_EUSAGE;
		}
		if (*s == '.') {
			s++;
			if (!isdigit((unsigned char)*s))
				return GDN_EUSAGE;
			for (; isdigit((unsigned char)*s); s++) {
				if (den < 1000000000LL) { /* finer than a nanounit: dropped */
					frac = frac * 10 + (*s - '0');
					den *= 10;
				}
			}
			digits = true;
		}
		if (!digits)
			return GDN_EUSAGE;
		if (!strncmp(s, "ms", 2)) {
			mult = 1;
			s += 2;
		} else if (*s == 's') {
			mult = 1000;
			s++;
		} else if (*s == 'm') {
			mult = 60 * 1000;
			s++;
		} else if (*s == 'h') {
			mult = 3600 * 1000;
			s++;
		} else if (*s == 'd') {
			mult = 86400LL * 1000;
			s++;
		} else if (!*s && !any) {
			mult =
			    1000; /* a bare number is seconds, as the original's *-seconds flags */
		} else {
			return GDN_EUSAGE;
		}
		total += n * mult + (frac * mult + den / 2) / den;
		if (total > LONG_MAX / 2)
			return GDN_EUSAGE;
		any = true;
	}
	*out_ms = (long)total;
	return 0;
}

int opt_parse_seconds(const char *s, long unit_s, double *out)
{
	double d;
	long ms;

	if (unit_s <= 0)
		unit_s = 1;
	if (!opt_parse_double(s, &d)) {
		*out = d;
		return 0;
	}
	if (opt_parse_duration_ms(s, &ms))
		return GDN_EUSAGE;
	*out = (double)ms / 1000.0 / (double)unit_s;
	return 0;
}

bool opt_is_env_name(const char *s, size_t len)
{
	if (!len || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return false;
	return true;
}

int opt_parse_kv(const char *s, size_t *key_len)
{
	const char *eq = strchr(s, '=');

	if (!eq || !opt_is_env_name(s, (size_t)(eq - s)))
		return GDN_EUSAGE;
	if (key_len)
		*key_len = (size_t)(eq - s);
	return 0;
}

const char *opt_arg_name(const struct opt *o)
{
	if (o->type == OPT_BOOL || opt_has_choices(o) || o->type == OPT_GROUP || o->type == OPT_END)
		return NULL;
	if (o->argh)
		return o->argh;
	switch (o->type) {
	case OPT_INT:
		return "N";
	case OPT_FLOAT:
		return "X";
	case OPT_DURATION:
		return "DURATION";
	case OPT_SECONDS:
		return o->unit_s == 60 ? "M" : "S";
	case OPT_KV:
		return "KEY=VALUE";
	default:
		return "VALUE";
	}
}

bool opt_has_choices(const struct opt *o)
{
	return o->type == OPT_CHOICE || o->type == OPT_ENUM;
}

size_t opt_choice_count(const struct opt *o)
{
	size_t n = 0;

	if (o->type == OPT_ENUM)
		return gdn_enum_count(o->enums);
	while (o->type == OPT_CHOICE && o->choices && o->choices[n])
		n++;
	return n;
}

const char *opt_choice_name(const struct opt *o, size_t i)
{
	return o->type == OPT_ENUM ? o->enums[i].name : o->choices[i];
}

const char *opt_choice_help(const struct opt *o, size_t i)
{
	return o->type == OPT_ENUM ? o->enums[i].help : NULL;
}

static void choices_join(struct sbuf *sb, const struct opt *o, const char *sep)
{
	size_t n = opt_choice_count(o);

	for (size_t i = 0; i < n; i++)
		sbuf_addf(sb, "%s%s", i ? sep : "", opt_choice_name(o, i));
}

static int bad_choice(const struct opt *o, const char *v, struct gdn_err *err)
{
	struct sbuf sb = SBUF_INIT;
	int ret;

	choices_join(&sb, o, ", ");
	ret = gdn_err_set(err, GDN_EUSAGE, "option '--%s': invalid choice '%s' (choose from %s)",
			  o->long_name, v, sb.buf);
	sbuf_release(&sb);
	return ret;
}

static int bad_value(const struct opt *o, const char *v, const char *what, struct gdn_err *err)
{
	return gdn_err_set(err, GDN_EUSAGE, "option '--%s': %s, got '%s'", o->long_name, what, v);
}

static int set_value(const struct opt *o, const char *v, struct gdn_err *err)
{
	switch (o->type) {
	case OPT_INT: {
		long n;
		if (opt_parse_long(v, &n))
			return bad_value(o, v, "expected an integer", err);
		if (o->max > o->min && (n < o->min || n > o->max))
			return gdn_err_set(err, GDN_EUSAGE,
					   "option '--%s': %ld is out of range %ld..%ld",
					   o->long_name, n, o->min, o->max);
		*(long *)o->value = n;
		return 0;
	}
	case OPT_FLOAT: {
		double d;
		if (opt_parse_double(v, &d))
			return bad_value(o, v, "expected a number", err);
		*(double *)o->value = d;
		return 0;
	}
	case OPT_DURATION: {
		long ms;
		if (opt_parse_duration_ms(v, &ms))
			return bad_value(o, v, "expected a duration like 90s, 15m or 2h", err);
		*(long *)o->value = ms;
		return 0;
	}
	case OPT_SECONDS: {
		double d;
		if (opt_parse_seconds(v, o->unit_s, &d))
			return bad_value(
			    o, v,
			    o->unit_s == 60
				? "expected minutes or a duration like 90s, 15m or 1.5h"
				: "expected seconds or a duration like 90s, 15m or 1.5h",
			    err);
		*(double *)o->value = d;
		return 0;
	}
	case OPT_STRING:
		*(const char **)o->value = v;
		return 0;
	case OPT_CHOICE:
		for (size_t i = 0; o->choices && o->choices[i]; i++) {
			if (!strcmp(o->choices[i], v)) {
				*(const char **)o->value = o->choices[i];
				return 0;
			}
		}
		return bad_choice(o, v, err);
	case OPT_ENUM:
		if (gdn_enum_parse(o->enums, v, (int *)o->value))
			return bad_choice(o, v, err);
		return 0;
	case OPT_LIST:
		strvec_push(o->value, v);
		return 0;
	case OPT_KV:
		if (opt_parse_kv(v, NULL))
			return bad_value(o, v, "expected KEY=VALUE with KEY a variable name", err);
		strvec_push(o->value, v);
		return 0;
	default:
		BUG("option '--%s' has no value type", o->long_name);
	}
}

/* What a long option on the command line names. */
struct long_match {
	struct opt *o; /* NULL for --help */
	bool negated;  /* the --no-NAME form */
};

/* Whether `cand` (a long name, after `pre`) is `name` (len chars) or, when !exact, starts so. */
static bool long_is(const char *pre, const char *cand, const char *name, size_t len, bool exact)
{
	size_t lp = strlen(pre), lc = strlen(cand);

	if (exact && lp + lc != len)
		return false;
	if (len > lp + lc)
		return false;
	if (len <= lp)
		return !strncmp(pre, name, len);
	return !strncmp(pre, name, lp) && !strncmp(cand, name + lp, len - lp);
}

/* Candidates an "ambiguous option" error lists before "and N more". */
#define AMBIGUOUS_LISTED 8

/* Record a match: the first two in m, the first AMBIGUOUS_LISTED in list (when not NULL). */
static void add_match(struct long_match *m, size_t *nr, struct opt *o, bool negated,
		      const char *shown, struct sbuf *list)
{
	if (*nr < 2)
		m[*nr] = (struct long_match){o, negated};
	if (list && *nr < AMBIGUOUS_LISTED)
		sbuf_addf(list, "%s--%s%s", *nr ? ", " : "", negated ? "no-" : "", shown);
	(*nr)++;
}

/*
 * Each of a table's long names (and --help) that is `name`, or starts with it
 * when !exact; returns their number.
 */
static size_t match_long(struct opt *opts, const char *name, size_t len, bool exact,
			 struct long_match *m, struct sbuf *list)
{
	size_t nr = 0;

	for (struct opt *o = opts; o->type != OPT_END; o++) {
		if (!o->long_name)
			continue;
		if (long_is("", o->long_name, name, len, exact))
			add_match(m, &nr, o, false, o->long_name, list);
		if (o->type == OPT_BOOL && (o->flags & OPT_NEGATABLE) &&
		    long_is("no-", o->long_name, name, len, exact))
			add_match(m, &nr, o, true, o->long_name, list);
	}
	if (long_is("", "help", name, len, exact))
		add_match(m, &nr, NULL, false, "help", list);
	if (list && nr > AMBIGUOUS_LISTED)
		sbuf_addf(list, " and %zu more", nr - AMBIGUOUS_LISTED);
	return nr;
}

/*
 * Resolve "--NAME" (name: len chars, no "=VALUE") as argparse does: an exact
 * name, else the one long name it is a prefix of. Returns 0 with *out set,
 * or GDN_EUSAGE for an unknown or ambiguous name.
 */
static int find_long(struct opt *opts, const char *name, size_t len, struct long_match *out,
		     struct gdn_err *err)
{
	struct long_match m[2];
	struct sbuf list = SBUF_INIT, typed = SBUF_INIT;
	struct gdn_suggest sg;
	int ret = 0;

	if (match_long(opts, name, len, true, m, NULL) == 1 ||
	    (len && match_long(opts, name, len, false, m, NULL) == 1)) {
		*out = m[0];
		return 0;
	}
	sbuf_add(&typed, name, len);
	if (len && match_long(opts, name, len, false, m, &list) > 1) {
		ret = gdn_err_set(err, GDN_EUSAGE, "ambiguous option '--%s': could be %s",
				  typed.buf, list.buf);
		goto out;
	}
	sbuf_reset(&list);
	sg = (struct gdn_suggest)GDN_SUGGEST_INIT(typed.buf);
	for (const struct opt *o = opts; o->type != OPT_END; o++) {
		if (!o->long_name || (o->flags & OPT_HIDDEN))
			continue;
		gdn_suggest_add(&sg, o->long_name);
		if (o->type == OPT_BOOL && (o->flags & OPT_NEGATABLE)) {
			struct sbuf no = SBUF_INIT;

			sbuf_addf(&no, "no-%s", o->long_name);
			gdn_suggest_add(&sg, no.buf);
			sbuf_release(&no);
		}
	}
	gdn_suggest_format(&sg, "--", &list);
	gdn_suggest_release(&sg);
	ret = gdn_err_set(err, GDN_EUSAGE, "unknown option '--%s'%s", typed.buf, list.buf);
out:
	sbuf_release(&list);
	sbuf_release(&typed);
	return ret;
}

int opt_set(const struct opt *opts, const char *long_name, const char *value, struct gdn_err *err)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, long_name) && o->type != OPT_GROUP &&
		    o->type != OPT_BOOL)
			return set_value(o, value, err);
	BUG("no option '--%s' with a value to set", long_name);
}

bool opt_seen(const struct opt *opts, const char *long_name)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, long_name))
			return o->seen > 0;
	return false;
}

static struct opt *find_short(struct opt *opts, char c)
{
	for (struct opt *o = opts; o->type != OPT_END; o++)
		if (o->short_name && o->short_name == c)
			return o;
	return NULL;
}

static const char *opt_display(const struct opt *o, struct sbuf *tmp)
{
	sbuf_reset(tmp);
	if (o->long_name)
		sbuf_addf(tmp, "--%s", o->long_name);
	else
		sbuf_addf(tmp, "-%c", o->short_name);
	return tmp->buf;
}

int opt_parse(struct opt *opts, const struct opt_usage *u, int argc, const char **argv, int flags,
	      struct strvec *rest, struct sbuf *help, struct gdn_err *err)
{
	struct sbuf tmp = SBUF_INIT;
	int ret = 0, i;

	for (struct opt *o = opts; o->type != OPT_END; o++)
		o->seen = 0;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		struct opt *o = NULL;
		const char *val = NULL;
		bool negated = false, has_inline = false;

		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			opt_help(opts, u, help);
			ret = OPT_HELP_REQUESTED;
			goto out;
		}
		if (arg[0] != '-' || !arg[1]) {
			if (flags & OPT_PARSE_NO_POSITIONAL) {
				ret = gdn_err_set(err, GDN_EUSAGE, "unexpected argument '%s'", arg);
				goto out;
			}
			if (flags & OPT_PARSE_STOP_AT_NON_OPTION)
				break;
			strvec_push(rest, arg);
			continue;
		}
		if (arg[1] == '-') {
			const char *name = arg + 2, *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			struct long_match m = {0};

			ret = find_long(opts, name, len, &m, err);
			if (ret)
				goto out;
			if (!m.o) {
				if (eq) {
					ret = gdn_err_set(err, GDN_EUSAGE,
							  "option '--help' takes no value");
					goto out;
				}
				opt_help(opts, u, help);
				ret = OPT_HELP_REQUESTED;
				goto out;
			}
			o = m.o;
			negated = m.negated;
			if (eq) {
				val = eq + 1;
				has_inline = true;
			}
		} else {
			o = find_short(opts, arg[1]);
			if (!o) {
				ret = gdn_err_set(err, GDN_EUSAGE, "unknown option '-%c'", arg[1]);
				goto out;
			}
			if (arg[2]) {
				val = arg + 2;
				has_inline = true;
			}
		}
		o->seen++;
		if (o->type == OPT_BOOL) {
			if (has_inline) {
				ret = gdn_err_set(err, GDN_EUSAGE, "option '%s' takes no value",
						  opt_display(o, &tmp));
				goto out;
			}
			*(int *)o->value = negated ? 0 : 1;
			continue;
		}
		if (!has_inline) {
			if (i + 1 >= argc) {
				ret = gdn_err_set(err, GDN_EUSAGE, "option '%s' requires a value",
						  opt_display(o, &tmp));
				goto out;
			}
			val = argv[++i];
		}
		ret = set_value(o, val, err);
		if (ret)
			goto out;
	}
	for (; i < argc; i++)
		strvec_push(rest, argv[i]);

	for (struct opt *o = opts; o->type != OPT_END; o++) {
		if ((o->flags & OPT_REQUIRED) && !o->seen) {
			ret = gdn_err_set(err, GDN_EUSAGE, "option '%s' is required",
					  opt_display(o, &tmp));
			goto out;
		}
	}
out:
	sbuf_release(&tmp);
	return ret;
}

void opt_help(const struct opt *opts, const struct opt_usage *u, struct sbuf *out)
{
	struct sbuf left = SBUF_INIT;
	const char *line = u->usage;

	/* usage lines */
	for (int first = 1; line && *line; first = 0) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);

		sbuf_addf(out, "%s%.*s\n", first ? "usage: " : "   or: ", (int)len, line);
		line = nl ? nl + 1 : NULL;
	}
	if (u->summary)
		sbuf_addf(out, "\n%s\n", u->summary);
	sbuf_adds(out, "\n");

	for (const struct opt *o = opts; o->type != OPT_END; o++) {
		if (o->flags & OPT_HIDDEN)
			continue;
		if (o->type == OPT_GROUP) {
			sbuf_addf(out, "\n%s\n", o->help);
			continue;
		}
		sbuf_reset(&left);
		sbuf_adds(&left, "    ");
		if (o->short_name)
			sbuf_addf(&left, "-%c%s", o->short_name, o->long_name ? ", " : "");
		if (o->long_name)
			sbuf_addf(&left, "--%s%s", (o->flags & OPT_NEGATABLE) ? "[no-]" : "",
				  o->long_name);
		if (opt_has_choices(o)) {
			sbuf_adds(&left, " {");
			choices_join(&left, o, "|");
			sbuf_adds(&left, "}");
		} else if (o->type != OPT_BOOL) {
			sbuf_addf(&left, " %s", opt_arg_name(o));
		}
		sbuf_adds(out, left.buf);
		if (left.len >= 30)
			sbuf_addf(out, "\n%30s", "");
		else
			sbuf_addf(out, "%*s", (int)(30 - left.len), "");
		sbuf_addf(out, "  %s", o->help ? o->help : "");
		if (o->type == OPT_LIST || o->type == OPT_KV)
			sbuf_adds(out, " (repeatable)");
		if (o->flags & OPT_REQUIRED)
			sbuf_adds(out, " (required)");
		if (o->defval)
			sbuf_addf(out, " (default: %s)", o->defval);
		sbuf_addch(out, '\n');
	}
	sbuf_addf(out, "    -h, --help%16s  show this help\n", "");
	if (u->extra)
		sbuf_addf(out, "\n%s\n", u->extra);
	sbuf_release(&left);
}

static struct {
	opt_describe_fn fn;
	void *data;
	const char *sub;
	bool sub_taken;
	int described;
} describe;

void opt_describe_begin(opt_describe_fn fn, void *data, const char *sub)
{
	describe.fn = fn;
	describe.data = data;
	describe.sub = sub;
	describe.sub_taken = false;
	describe.described = 0;
}

int opt_describe_end(bool *sub_taken)
{
	int n = describe.described;

	if (sub_taken)
		*sub_taken = describe.sub_taken;
	memset(&describe, 0, sizeof(describe));
	return n;
}

bool opt_describe_take(const struct opt *opts, const struct opt_usage *u, int parse_flags)
{
	if (!describe.fn)
		return false;
	if (describe.sub && (parse_flags & OPT_PARSE_STOP_AT_NON_OPTION)) {
		describe.sub = NULL;
		describe.sub_taken = true;
		return false;
	}
	describe.fn(opts, u, parse_flags, describe.data);
	describe.described++;
	return true;
}
