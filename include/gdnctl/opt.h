/*
 * Command-line options declared as data. One static-shaped table per
 * command parses argv, validates each value's type, and prints the help
 * text, so the three can never disagree.
 *
 * Value pointers by type:
 *   OPT_BOOL      int *         (1 when given; "--no-NAME" sets 0 with OPT_NEGATABLE)
 *   OPT_INT       long *        (range checked against min..max when max > min)
 *   OPT_FLOAT     double *      (finite)
 *   OPT_DURATION  long *        milliseconds; "90", "90s", "1500ms", "15m", "1.5h", "1h30m"
 *   OPT_SECONDS   double *      a time in seconds (OPT_MINUTES_: in minutes): a plain number
 *                               ("5", "0.5") in that unit, or a duration ("90s", "5m", "1.5h")
 *   OPT_STRING    const char ** (borrowed from argv)
 *   OPT_CHOICE    const char ** one of `choices` (borrowed from the table): a string
 *                               passed on as is, with no enum behind it
 *   OPT_ENUM      int *         the value of the row of `enums` (the owning module's
 *                               struct gdn_enum table, enumtab.h) the name given names
 *   OPT_LIST      struct strvec * repeatable; each use appends one value
 *   OPT_KV        struct strvec * repeatable KEY=VALUE, KEY a shell variable name
 *   OPT_GROUP     no value: a heading in the help text
 */
#ifndef GDNCTL_OPT_H
#define GDNCTL_OPT_H

#include "gdnctl/compat.h"

struct sbuf;
struct strvec;
struct gdn_err;
struct gdn_enum;

enum opt_type {
	OPT_END = 0,
	OPT_GROUP,
	OPT_BOOL,
	OPT_INT,
	OPT_FLOAT,
	OPT_DURATION,
	OPT_STRING,
	OPT_CHOICE,
	OPT_LIST,
	OPT_KV,
	OPT_ENUM,
	OPT_SECONDS,
};

enum opt_flags {
	OPT_NEGATABLE = 1 << 0, /* --no-NAME accepted for a bool */
	OPT_HIDDEN = 1 << 1,	/* parsed, not shown in help */
	OPT_REQUIRED = 1 << 2,	/* must be given */
	/* this invocation's only, not one of the settings of what it starts (loop --resume) */
	OPT_INVOCATION = 1 << 3,
};

struct opt {
	enum opt_type type;
	char short_name;
	const char *long_name;
	void *value;
	const char *argh;	    /* argument name in help: "N", "PATH" */
	const char *help;	    /* one line */
	const char *const *choices; /* OPT_CHOICE: NULL-terminated */
	const char *defval;	    /* shown as "(default: X)"; not applied */
	int flags;
	long min, max;		      /* OPT_INT range when max > min */
	int seen;		      /* set by the parser: times given */
	const struct gdn_enum *enums; /* OPT_ENUM: the owning module's table */
	long unit_s;		      /* OPT_SECONDS: seconds per unit of the value (1, 60) */
};

/*
 * Table rows. Each OPT_X_(...) has an OPT_X_F(..., flags) twin that also
 * sets enum opt_flags (OPT_HIDDEN, OPT_NEGATABLE, OPT_REQUIRED, OPT_INVOCATION) in the row.
 */
#define OPT_ROW_(t, s, l, v, a, h, c, e, d, f, lo, hi)                                       \
	{                                                                                    \
		.type = (t), .short_name = (s), .long_name = (l), .value = (v), .argh = (a), \
		.help = (h), .choices = (c), .enums = (e), .defval = (d), .flags = (f),      \
		.min = (lo), .max = (hi)                                                     \
	}
#define OPT_END_() OPT_ROW_(OPT_END, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, 0, 0)
#define OPT_GROUP_(title) \
	OPT_ROW_(OPT_GROUP, 0, NULL, NULL, NULL, (title), NULL, NULL, NULL, 0, 0, 0)
#define OPT_BOOL_F(s, l, v, h, f) OPT_ROW_(OPT_BOOL, s, l, v, NULL, h, NULL, NULL, NULL, f, 0, 0)
#define OPT_BOOL_(s, l, v, h)	  OPT_BOOL_F(s, l, v, h, 0)
/* A bool with --no-NAME; `d` is the documented default ("on"). */
#define OPT_NEGBOOL_(s, l, v, h, d) \
	OPT_ROW_(OPT_BOOL, s, l, v, NULL, h, NULL, NULL, d, OPT_NEGATABLE, 0, 0)
#define OPT_INT_F(s, l, v, a, h, d, lo, hi, f) \
	OPT_ROW_(OPT_INT, s, l, v, a, h, NULL, NULL, d, f, lo, hi)
#define OPT_INT_(s, l, v, a, h, d, lo, hi) OPT_INT_F(s, l, v, a, h, d, lo, hi, 0)
#define OPT_FLOAT_F(s, l, v, a, h, d, f)   OPT_ROW_(OPT_FLOAT, s, l, v, a, h, NULL, NULL, d, f, 0, 0)
#define OPT_FLOAT_(s, l, v, a, h, d)	   OPT_FLOAT_F(s, l, v, a, h, d, 0)
#define OPT_DURATION_F(s, l, v, h, d, f) \
	OPT_ROW_(OPT_DURATION, s, l, v, "DURATION", h, NULL, NULL, d, f, 0, 0)
#define OPT_DURATION_(s, l, v, h, d) OPT_DURATION_F(s, l, v, h, d, 0)
/* A time as a double, in seconds (OPT_MINUTES_: minutes); durations accepted too. */
#define OPT_TIME_ROW_(s, l, v, a, h, d, f, unit)                                        \
	{                                                                               \
		.type = OPT_SECONDS, .short_name = (s), .long_name = (l), .value = (v), \
		.argh = (a), .help = (h), .defval = (d), .flags = (f), .unit_s = (unit) \
	}
#define OPT_SECONDS_F(s, l, v, a, h, d, f) OPT_TIME_ROW_(s, l, v, a, h, d, f, 1)
#define OPT_SECONDS_(s, l, v, a, h, d)	   OPT_SECONDS_F(s, l, v, a, h, d, 0)
#define OPT_MINUTES_(s, l, v, a, h, d)	   OPT_TIME_ROW_(s, l, v, a, h, d, 0, 60)
#define OPT_STRING_F(s, l, v, a, h, d, f) \
	OPT_ROW_(OPT_STRING, s, l, v, a, h, NULL, NULL, d, f, 0, 0)
#define OPT_STRING_(s, l, v, a, h, d) OPT_STRING_F(s, l, v, a, h, d, 0)
#define OPT_CHOICE_F(s, l, v, c, h, d, f) \
	OPT_ROW_(OPT_CHOICE, s, l, v, NULL, h, c, NULL, d, f, 0, 0)
#define OPT_CHOICE_(s, l, v, c, h, d) OPT_CHOICE_F(s, l, v, c, h, d, 0)
/* `t`: the owning module's struct gdn_enum table; `v`: int *. */
#define OPT_ENUM_F(s, l, v, t, h, d, f) OPT_ROW_(OPT_ENUM, s, l, v, NULL, h, NULL, t, d, f, 0, 0)
#define OPT_ENUM_(s, l, v, t, h, d)	OPT_ENUM_F(s, l, v, t, h, d, 0)
#define OPT_LIST_F(s, l, v, a, h, f)	OPT_ROW_(OPT_LIST, s, l, v, a, h, NULL, NULL, NULL, f, 0, 0)
#define OPT_LIST_(s, l, v, a, h)	OPT_LIST_F(s, l, v, a, h, 0)
#define OPT_KV_F(s, l, v, h, f)		OPT_ROW_(OPT_KV, s, l, v, "KEY=VALUE", h, NULL, NULL, NULL, f, 0, 0)
#define OPT_KV_(s, l, v, h)		OPT_KV_F(s, l, v, h, 0)

/* What a command is, for its help text. */
struct opt_usage {
	const char *usage;   /* "gdnctl lint-log [options]" (one or more lines, \n separated) */
	const char *summary; /* one line */
	const char *extra;   /* paragraphs printed after the options, or NULL */
};

enum opt_parse_flags {
	OPT_PARSE_STOP_AT_NON_OPTION = 1 << 0, /* first positional ends option parsing */
	OPT_PARSE_NO_POSITIONAL = 1 << 1,      /* positional arguments are a usage error */
};

/* Returned by opt_parse when -h/--help was given (help text in `help`). */
#define OPT_HELP_REQUESTED 1

/*
 * Parse argv[0..argc) (argv[0] is the command name and is skipped).
 * A long option may be abbreviated to any unique prefix of its name, of its
 * "--no-NAME" form or of "--help", as argparse does ("--allow-p",
 * "--no-w", "--log=x"); an exact name always wins, and an ambiguous prefix
 * is an error that lists the candidates. An unknown name gets a "did you
 * mean" when one is close (gdnctl/suggest.h).
 * Positional arguments (and everything after "--") are appended to `rest`.
 * Returns 0, OPT_HELP_REQUESTED (the help text is appended to `help`), or
 * GDN_EUSAGE with a one-line message in err.
 */
int opt_parse(struct opt *opts, const struct opt_usage *u, int argc, const char **argv, int flags,
	      struct strvec *rest, struct sbuf *help, struct gdn_err *err);

/* The argument name shown in help ("N", "PATH", "KEY=VALUE"); NULL for a bool or a choice. */
const char *opt_arg_name(const struct opt *o);

/* Whether the option takes one of a fixed set of names (OPT_CHOICE, OPT_ENUM). */
bool opt_has_choices(const struct opt *o);
/* Its number of choices, and the name and one-line help (NULL: none) of choice i. */
size_t opt_choice_count(const struct opt *o);
const char *opt_choice_name(const struct opt *o, size_t i);
const char *opt_choice_help(const struct opt *o, size_t i);

/*
 * Set the value of the option named `long_name` (not a bool) from text, as
 * the command line would (same checks and messages; a string is borrowed),
 * without counting it as given (opt_seen). 0 or GDN_EUSAGE. For defaults
 * that come from elsewhere, such as the configuration.
 */
int opt_set(const struct opt *opts, const char *long_name, const char *value, struct gdn_err *err);
/* Whether the option named `long_name` was given in the last opt_parse() of the table. */
bool opt_seen(const struct opt *opts, const char *long_name);

/* Append the help text of a command to out. */
void opt_help(const struct opt *opts, const struct opt_usage *u, struct sbuf *out);

/*
 * Describe mode (process-wide): while it is on, the front end that parses a
 * command's options (gdn_cmd_parse_opts) hands the table to `fn` and stops
 * the command before it parses argv or does anything, so tools such as
 * `gdnctl help --json` and `gdnctl completion` read every command's table
 * from the code that parses it. With `sub` set, the first table parsed with
 * OPT_PARSE_STOP_AT_NON_OPTION (a dispatcher such as `trace`) is parsed
 * normally once, so that the subcommand named in argv describes its own.
 */
typedef void (*opt_describe_fn)(const struct opt *opts, const struct opt_usage *u, int parse_flags,
				void *data);
void opt_describe_begin(opt_describe_fn fn, void *data, const char *sub);
/* End describe mode. Returns the number of tables described; *sub_taken whether a dispatcher
 * passed `sub` on (may be NULL). */
int opt_describe_end(bool *sub_taken);
/* For the parsing front end: true when the table was described (do not run the command). */
bool opt_describe_take(const struct opt *opts, const struct opt_usage *u, int parse_flags);

/* Value parsers shared with configuration loading. Each returns 0 or GDN_EUSAGE. */
int opt_parse_long(const char *s, long *out);
int opt_parse_double(const char *s, double *out);
int opt_parse_duration_ms(const char *s, long *out_ms);
/* A time for OPT_SECONDS: a plain number in units of `unit_s` seconds, or a duration. */
int opt_parse_seconds(const char *s, long unit_s, double *out);
int opt_parse_kv(const char *s, size_t *key_len);
/* Whether `s` is a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*). */
bool opt_is_env_name(const char *s, size_t len);

#endif
