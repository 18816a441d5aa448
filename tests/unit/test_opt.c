/* Unit tests for options-as-data: parsing, validation and help text. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/enumtab.h"
#include "gdnctl/err.h"
#include "gdnctl/opt.h"
#include "gdnctl/optdoc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/suggest.h"

static const char *const scopes[] = {"last-entry", "all", NULL};
static const struct opt_usage usage = {"gdnctl demo [options] [--] [ARGS...]", "Try options.",
				       "Extra text."};

struct vals {
	int flag, neg;
	long n, dur;
	double f;
	const char *s, *choice;
	struct strvec list, kv, rest;
};

static int parse(struct vals *v, int flags, struct sbuf *help, struct gdn_err *err, int argc,
		 const char **argv)
{
	struct opt opts[] = {
	    OPT_GROUP_("Main options"),
	    OPT_BOOL_('f', "flag", &v->flag, "a flag"),
	    OPT_BOOL_F(0, "sync", &v->neg, "sync first", OPT_NEGATABLE),
	    OPT_INT_('n', "num", &v->n, "N", "a number", "3", 1, 10),
	    OPT_FLOAT_(0, "ratio", &v->f, "X", "a ratio", "0.25"),
	    OPT_DURATION_(0, "timeout", &v->dur, "how long", "2h"),
	    OPT_STRING_('o', "output", &v->s, "PATH", "where", NULL),
	    OPT_CHOICE_(0, "scope", &v->choice, scopes, "which part", "last-entry"),
	    OPT_LIST_(0, "field", &v->list, "NAME", "a field"),
	    OPT_KV_('e', "env", &v->kv, "an environment variable"),
	    OPT_END_(),
	};
	return opt_parse(opts, &usage, argc, argv, flags, &v->rest, help, err);
}

static void init_vals(struct vals *v)
{
	memset(v, 0, sizeof(*v));
	v->neg = 1;
	strvec_init(&v->list);
	strvec_init(&v->kv);
	strvec_init(&v->rest);
}

static void free_vals(struct vals *v)
{
	strvec_clear(&v->list);
	strvec_clear(&v->kv);
	strvec_clear(&v->rest);
}

static void parses_every_type(void **state)
{
	struct vals v;
	struct sbuf help = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *argv[] = {"demo",
			      "-f",
			      "--no-sync",
			      "--num=7",
			      "--ratio",
			      "0.5",
			      "--timeout",
			      "1h30m",
			      "-oout.txt",
			      "--scope",
			      "all",
			      "pos1",
			      "--field",
			      "Date",
			      "--field=Commit",
			      "-e",
			      "A_B=c=d",
			      "--",
			      "--not-an-option",
			      NULL};

	init_vals(&v);
	assert_int_equal(parse(&v, 0, &help, &err, 19, argv), 0);
	assert_int_equal(v.flag, 1);
	assert_int_equal(v.neg, 0);
	assert_int_equal(v.n, 7);
	assert_true(v.f == 0.5);
	assert_int_equal(v.dur, 90L * 60 * 1000);
	assert_string_equal(v.s, "out.txt");
	assert_string_equal(v.choice, "all");
	assert_int_equal(v.list.nr, 2);
	assert_string_equal(v.list.v[1], "Commit");
	assert_string_equal(v.kv.v[0], "A_B=c=d");
	assert_int_equal(v.rest.nr, 2);
	assert_string_equal(v.rest.v[0], "pos1");
	assert_string_equal(v.rest.v[1], "--not-an-option");
	free_vals(&v);
	sbuf_release(&help);
}

static void expect_usage_error(const char *const *argv, int argc, const char *needle)
{
	struct vals v;
	struct sbuf help = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	init_vals(&v);
	assert_int_equal(parse(&v, OPT_PARSE_NO_POSITIONAL, &help, &err, argc, (const char **)argv),
			 GDN_EUSAGE);
	if (!strstr(err.msg, needle))
		fail_msg("message '%s' lacks '%s'", err.msg, needle);
	assert_null(strchr(err.msg, '\n'));
	free_vals(&v);
	sbuf_release(&help);
}

static void rejects_bad_values(void **state)
{
	const char *a1[] = {"demo", "--num", "x"};
	const char *a2[] = {"demo", "--num", "11"};
	const char *a3[] = {"demo", "--scope", "some"};
	const char *a4[] = {"demo", "--timeout", "5 minutes"};
	const char *a5[] = {"demo", "--ratio", "nan"};
	const char *a6[] = {"demo", "-e", "1BAD=x"};
	const char *a7[] = {"demo", "-e", "NOEQUALS"};
	const char *a8[] = {"demo", "--unknown"};
	const char *a9[] = {"demo", "--output"};
	const char *a10[] = {"demo", "--flag=1"};
	const char *a11[] = {"demo", "positional"};
	const char *a12[] = {"demo", "--zzz", "3"};
	const char *a13[] = {"demo", "--no-flag"};

	expect_usage_error(a1, 3, "option '--num': expected an integer, got 'x'");
	expect_usage_error(a2, 3, "11 is out of range 1..10");
	expect_usage_error(a3, 3, "invalid choice 'some' (choose from last-entry, all)");
	expect_usage_error(a4, 3, "expected a duration");
	expect_usage_error(a5, 3, "expected a number");
	expect_usage_error(a6, 3, "expected KEY=VALUE");
	expect_usage_error(a7, 3, "expected KEY=VALUE");
	expect_usage_error(a8, 2, "unknown option '--unknown'");
	expect_usage_error(a9, 2, "option '--output' requires a value");
	expect_usage_error(a10, 2, "takes no value");
	expect_usage_error(a11, 2, "unexpected argument 'positional'");
	/* an unknown name: no "did you mean" when nothing is close */
	expect_usage_error(a12, 3, "unknown option '--zzz'");
	/* --no- only for negatable bools */
	expect_usage_error(a13, 2, "unknown option '--no-flag'");
}

/* A table where names are prefixes of others, as lint-log's and ray-test's. */
struct abbr {
	const char *log, *log_file;
	int field, fields, check, no_wait;
	long tail;
	double sleep, minutes;
	struct strvec rest;
};

static int parse_abbr(struct abbr *a, struct sbuf *help, struct gdn_err *err, int argc,
		      const char **argv)
{
	struct opt opts[] = {
	    OPT_STRING_(0, "log", &a->log, "PATH", "a log", NULL),
	    OPT_STRING_(0, "log-file", &a->log_file, "PATH", "a log file", NULL),
	    OPT_BOOL_(0, "require-field", &a->field, "one field"),
	    OPT_BOOL_(0, "require-fields", &a->fields, "the fields"),
	    OPT_NEGBOOL_(0, "check-commits", &a->check, "check", "on"),
	    OPT_BOOL_(0, "no-wait", &a->no_wait, "submit and return"),
	    OPT_INT_(0, "tail", &a->tail, "N", "lines", "200", 0, 0),
	    OPT_SECONDS_(0, "sleep-seconds", &a->sleep, "S", "sleep", "5.0"),
	    OPT_MINUTES_(0, "max-agent-minutes", &a->minutes, "M", "minutes", "0"),
	    OPT_BOOL_F(0, "secret", &a->no_wait, "hidden", OPT_HIDDEN),
	    OPT_END_(),
	};

	return opt_parse(opts, &usage, argc, argv, 0, &a->rest, help, err);
}

/* Parse argv (NULL-terminated) into a fresh struct abbr; returns opt_parse's result. */
static int abbr_run(struct abbr *a, struct gdn_err *err, const char **argv)
{
	struct sbuf help = SBUF_INIT;
	int argc = 0, ret;

	while (argv[argc])
		argc++;
	memset(a, 0, sizeof(*a));
	a->check = 1;
	a->tail = 200;
	strvec_init(&a->rest);
	gdn_err_clear(err);
	ret = parse_abbr(a, &help, err, argc, argv);
	sbuf_release(&help);
	strvec_clear(&a->rest);
	return ret;
}

static void abbr_error(const char **argv, const char *want)
{
	struct abbr a;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(abbr_run(&a, &err, argv), GDN_EUSAGE);
	assert_string_equal(err.msg, want);
}

static void abbreviations(void **state)
{
	struct abbr a;
	struct gdn_err err = GDN_ERR_INIT;
	const char *a1[] = {"x", "--log", "L", "--log-f", "F", "--require-field", "--ta=7", NULL};
	const char *a2[] = {"x", "--no-w", "--no-ch", "--require-fields", NULL};
	const char *a3[] = {"x", "--log-file=F", "--ch", "--t", "3", NULL};
	const char *a4[] = {"x", "--he", NULL};
	const char *a5[] = {"x", "--lo", "x", NULL};
	const char *a6[] = {"x", "--require-fi", NULL};
	const char *a7[] = {"x", "--no", NULL};
	const char *a8[] = {"x", "--no-ch=1", NULL};
	const char *a9[] = {"x", "--log-fiel", "x", NULL};
	const char *a10[] = {"x", "--sleep-secs", "1", NULL};
	const char *a11[] = {"x", "--requre-fields", NULL};
	const char *a12[] = {"x", "--secre", NULL};
	const char *a13[] = {"x", "--he=1", NULL};
	const char *a14[] = {"x", "--=1", NULL};

	/* an exact name wins over the longer names it starts */
	assert_int_equal(abbr_run(&a, &err, a1), 0);
	assert_string_equal(a.log, "L");
	assert_string_equal(a.log_file, "F");
	assert_int_equal(a.field, 1);
	assert_int_equal(a.fields, 0);
	assert_int_equal(a.tail, 7);
	/* a unique prefix of a name or of its --no- form, as argparse */
	assert_int_equal(abbr_run(&a, &err, a2), 0);
	assert_int_equal(a.no_wait, 1);
	assert_int_equal(a.check, 0);
	assert_int_equal(a.fields, 1);
	assert_int_equal(a.field, 0);
	assert_int_equal(abbr_run(&a, &err, a3), 0);
	assert_string_equal(a.log_file, "F");
	assert_int_equal(a.check, 1);
	assert_int_equal(a.tail, 3);
	/* --help abbreviates too */
	assert_int_equal(abbr_run(&a, &err, a4), OPT_HELP_REQUESTED);
	/* hidden options parse, abbreviated or not */
	assert_int_equal(abbr_run(&a, &err, a12), 0);
	assert_int_equal(a.no_wait, 1);
	/* ambiguous: every candidate, one line */
	abbr_error(a5, "ambiguous option '--lo': could be --log, --log-file");
	abbr_error(a6,
		   "ambiguous option '--require-fi': could be --require-field, --require-fields");
	abbr_error(a7, "ambiguous option '--no': could be --no-check-commits, --no-wait");
	/* "--=1": an empty name is no prefix of anything */
	abbr_error(a14, "unknown option '--'");
	abbr_error(a8, "option '--check-commits' takes no value");
	abbr_error(a13, "option '--help' takes no value");
	/* unknown: did you mean, when close */
	abbr_error(a9, "unknown option '--log-fiel'; did you mean '--log-file'?");
	abbr_error(a10, "unknown option '--sleep-secs'");
	abbr_error(a11, "unknown option '--requre-fields'; did you mean '--require-fields'?");
}

static void seconds_options(void **state)
{
	struct abbr a;
	struct gdn_err err = GDN_ERR_INIT;
	const char *a1[] = {"x", "--sleep-seconds", "5m", "--max-agent-minutes", "90s", NULL};
	const char *a2[] = {"x", "--sleep-seconds=0.5", "--max-agent-minutes", "1.5h", NULL};
	const char *a3[] = {"x", "--sleep-seconds", "1.5h", "--max-agent-minutes=2", NULL};
	const char *a4[] = {"x", "--sleep-seconds", "5 minutes", NULL};
	const char *a5[] = {"x", "--max-agent-minutes", "soon", NULL};
	double d;

	assert_int_equal(abbr_run(&a, &err, a1), 0);
	assert_true(a.sleep == 300.0);
	assert_true(a.minutes == 1.5);
	assert_int_equal(abbr_run(&a, &err, a2), 0);
	assert_true(a.sleep == 0.5);
	assert_true(a.minutes == 90.0);
	assert_int_equal(abbr_run(&a, &err, a3), 0);
	assert_true(a.sleep == 5400.0);
	assert_true(a.minutes == 2.0);
	abbr_error(a4, "option '--sleep-seconds': expected seconds or a duration like 90s, 15m or "
		       "1.5h, got '5 minutes'");
	abbr_error(a5, "option '--max-agent-minutes': expected minutes or a duration like 90s, 15m "
		       "or 1.5h, got 'soon'");
	/* a plain number keeps the float parser's forms */
	assert_int_equal(opt_parse_seconds("2.5e1", 1, &d), 0);
	assert_true(d == 25.0);
	assert_int_equal(opt_parse_seconds("-1", 1, &d), 0);
	assert_true(d == -1.0);
	assert_int_equal(opt_parse_seconds("1h30m", 60, &d), 0);
	assert_true(d == 90.0);
	assert_int_equal(opt_parse_seconds("", 1, &d), GDN_EUSAGE);
}

static void did_you_mean(void **state)
{
	struct gdn_suggest sg = GDN_SUGGEST_INIT("lodp");
	struct sbuf out = SBUF_INIT;
	const char *const cmds[] = {"loop", "logs", "lint-log", "demo", "doctor"};

	assert_int_equal(gdn_edit_distance("lodp", "loop"), 1);
	assert_int_equal(gdn_edit_distance("ab", "ba"), 1);
	assert_int_equal(gdn_edit_distance("kitten", "sitting"), 3);
	assert_int_equal(gdn_edit_distance("", "abc"), 3);
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++)
		gdn_suggest_add(&sg, cmds[i]);
	assert_true(gdn_suggest_format(&sg, NULL, &out));
	assert_string_equal(out.buf, "; did you mean 'loop'?");
	gdn_suggest_release(&sg);

	/* ties: all of them, at most three */
	sbuf_reset(&out);
	sg = (struct gdn_suggest)GDN_SUGGEST_INIT("tesc");
	gdn_suggest_add(&sg, "test");
	gdn_suggest_add(&sg, "desc");
	gdn_suggest_add(&sg, "test");
	assert_true(gdn_suggest_format(&sg, "--", &out));
	assert_string_equal(out.buf, "; did you mean '--test' or '--desc'?");
	gdn_suggest_release(&sg);

	/* nothing close: nothing; a short name never turns into any other */
	sbuf_reset(&out);
	sg = (struct gdn_suggest)GDN_SUGGEST_INIT("frob");
	gdn_suggest_add(&sg, "from-x");
	gdn_suggest_add(&sg, "f");
	assert_false(gdn_suggest_format(&sg, NULL, &out));
	assert_string_equal(out.buf, "");
	gdn_suggest_release(&sg);
	sg = (struct gdn_suggest)GDN_SUGGEST_INIT("x");
	gdn_suggest_add(&sg, "y");
	assert_false(gdn_suggest_format(&sg, NULL, &out));
	gdn_suggest_release(&sg);
	/* words both names start with do not count */
	sg = (struct gdn_suggest)GDN_SUGGEST_INIT("deep.er.x");
	gdn_suggest_add(&sg, "deep.er.key");
	assert_false(gdn_suggest_format(&sg, NULL, &out));
	gdn_suggest_release(&sg);
	sbuf_release(&out);
}

static void help_lists_every_option(void **state)
{
	struct vals v;
	struct sbuf help = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *argv[] = {"demo", "--num", "2", "-h"};
	const char *want[] = {"usage: gdnctl demo [options] [--] [ARGS...]",
			      "Try options.",
			      "Main options",
			      "-f, --flag",
			      "--[no-]sync",
			      "-n, --num N",
			      "(default: 3)",
			      "--ratio X",
			      "--timeout DURATION",
			      "-o, --output PATH",
			      "--scope {last-entry|all}",
			      "--field NAME",
			      "(repeatable)",
			      "-e, --env KEY=VALUE",
			      "-h, --help",
			      "Extra text."};

	init_vals(&v);
	assert_int_equal(parse(&v, 0, &help, &err, 4, argv), OPT_HELP_REQUESTED);
	for (size_t i = 0; i < ARRAY_SIZE(want); i++)
		if (!strstr(help.buf, want[i]))
			fail_msg("help lacks '%s':\n%s", want[i], help.buf);
	free_vals(&v);
	sbuf_release(&help);
}

static void durations(void **state)
{
	long ms;

	assert_int_equal(opt_parse_duration_ms("90", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(opt_parse_duration_ms("90s", &ms), 0);
	assert_int_equal(ms, 90000);
	assert_int_equal(opt_parse_duration_ms("1500ms", &ms), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(opt_parse_duration_ms("15m", &ms), 0);
	assert_int_equal(ms, 900000);
	assert_int_equal(opt_parse_duration_ms("2h", &ms), 0);
	assert_int_equal(ms, 7200000);
	assert_int_equal(opt_parse_duration_ms("1d2h", &ms), 0);
	assert_int_equal(ms, 93600000);
	assert_int_equal(opt_parse_duration_ms("0", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(opt_parse_duration_ms("", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms("h", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms("5x", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms("-5s", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms("1h30", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms("99999999999999s", &ms), GDN_EUSAGE);
	/* decimal fractions, rounded to the millisecond */
	assert_int_equal(opt_parse_duration_ms("1.5h", &ms), 0);
	assert_int_equal(ms, 5400000);
	assert_int_equal(opt_parse_duration_ms("0.25s", &ms), 0);
	assert_int_equal(ms, 250);
	assert_int_equal(opt_parse_duration_ms("1.5", &ms), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(opt_parse_duration_ms("1h0.5m", &ms), 0);
	assert_int_equal(ms, 3630000);
	assert_int_equal(opt_parse_duration_ms(".5m", &ms), 0);
	assert_int_equal(ms, 30000);
	assert_int_equal(opt_parse_duration_ms("0.0004s", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(opt_parse_duration_ms("0.1234567890123d", &ms), 0);
	assert_int_equal(ms, 10666667);
	assert_int_equal(opt_parse_duration_ms("1.h", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms(".", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms("1.5.5s", &ms), GDN_EUSAGE);
	assert_int_equal(opt_parse_duration_ms("1,5h", &ms), GDN_EUSAGE);
}

static void numbers_and_names(void **state)
{
	long n;
	double d;
	size_t klen;

	assert_int_equal(opt_parse_long("-12", &n), 0);
	assert_int_equal(n, -12);
	assert_int_equal(opt_parse_long(" 1", &n), GDN_EUSAGE);
	assert_int_equal(opt_parse_long("1e3", &n), GDN_EUSAGE);
	assert_int_equal(opt_parse_long("99999999999999999999999", &n), GDN_EUSAGE);
	assert_int_equal(opt_parse_double("2.5e-1", &d), 0);
	assert_true(d == 0.25);
	assert_int_equal(opt_parse_double("inf", &d), GDN_EUSAGE);
	assert_int_equal(opt_parse_kv("EMPTY=", &klen), 0);
	assert_int_equal(klen, 5);
	assert_true(opt_is_env_name("_A1", 3));
	assert_false(opt_is_env_name("A-B", 3));
	assert_false(opt_is_env_name("", 0));
}

static void roff(const char *in, const char *want)
{
	struct sbuf out = SBUF_INIT;

	roff_escape(&out, in);
	assert_string_equal(out.buf, want);
	sbuf_release(&out);
}

static void roff_escaping(void **state)
{
	struct sbuf out = SBUF_INIT;

	roff("--log-file", "\\-\\-log\\-file");
	roff("a\\b", "a\\eb");
	roff(".start", "\\&.start");
	roff("'quote", "\\&'quote");
	roff("x.y 'z'", "x.y 'z'");
	roff("one\n.two\n'three", "one\n\\&.two\n\\&'three");
	roff("say \"hi\"", "say \\(dqhi\\(dq");
	roff("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80", "caf\\[u00E9] \\[u2014] \\[u1F600]");
	roff("bad \xc3 \xff byte", "bad ? ? byte");
	roff("ctl\x01", "ctl?");
	/* a '.' is only escaped at the start of a line of the output */
	sbuf_adds(&out, "text ");
	roff_escape(&out, ".x");
	assert_string_equal(out.buf, "text .x");
	sbuf_reset(&out);
	roff_escape_len(&out, "-abc", 2);
	assert_string_equal(out.buf, "\\-a");
	sbuf_release(&out);
}

static const char *const modes[] = {"off", "on", NULL};

static void roff_options(void **state)
{
	int b = 0, neg = 0;
	long n = 0;
	const char *mode = NULL, *path = NULL;
	struct strvec list = STRVEC_INIT;
	struct opt opts[] = {
	    OPT_GROUP_("Main"),
	    OPT_BOOL_('f', "flag", &b, "a flag"),
	    OPT_BOOL_F(0, "sync", &neg, "sync first", OPT_NEGATABLE),
	    OPT_INT_('n', "num", &n, "N", "a number", "3", 1, 10),
	    OPT_CHOICE_(0, "mode", &mode, modes, "the mode", "off"),
	    OPT_STRING_(0, "out", &path, "PATH", ".hidden-looking help", NULL),
	    OPT_LIST_(0, "field", &list, "NAME", "a field"),
	    OPT_STRING_F(0, "secret", &path, "S", "not shown", NULL, OPT_HIDDEN),
	    OPT_END_(),
	};
	struct sbuf out = SBUF_INIT;

	opt_doc_roff_options(&out, opts);
	assert_non_null(strstr(out.buf, ".SS Main\n"));
	assert_non_null(strstr(out.buf, ".TP\n\\fB\\-f\\fR, \\fB\\-\\-flag\\fR\na flag\n"));
	assert_non_null(strstr(out.buf, "\\fB\\-\\-sync\\fR, \\fB\\-\\-no\\-sync\\fR\n"));
	assert_non_null(strstr(out.buf, "\\fB\\-\\-num\\fR \\fIN\\fR\na number (default: 3)\n"));
	assert_non_null(strstr(out.buf, "\\fB\\-\\-mode\\fR {off|on}\nthe mode (default: off)\n"));
	assert_non_null(strstr(out.buf, "\\fIPATH\\fR\n\\&.hidden\\-looking help\n"));
	assert_non_null(strstr(out.buf, "a field (repeatable)\n"));
	assert_null(strstr(out.buf, "secret"));
	assert_non_null(strstr(out.buf, "\\fB\\-h\\fR, \\fB\\-\\-help\\fR\n"));
	sbuf_release(&out);
	strvec_clear(&list);
}

static void json_description(void **state)
{
	int b = 0;
	long n = 0;
	const char *mode = NULL;
	struct strvec kv = STRVEC_INIT;
	struct opt opts[] = {
	    OPT_BOOL_('f', "flag", &b, "a flag"),
	    OPT_GROUP_("Tuning"),
	    OPT_INT_(0, "num", &n, "N", "a number", "3", 1, 10),
	    OPT_CHOICE_F(0, "mode", &mode, modes, "the mode", "off", OPT_REQUIRED),
	    OPT_KV_('e', "env", &kv, "a variable"),
	    OPT_END_(),
	};
	json_t *j = opt_doc_json(opts, &usage, OPT_PARSE_NO_POSITIONAL), *o;

	assert_string_equal(json_string_value(json_array_get(json_object_get(j, "usage"), 0)),
			    "gdnctl demo [options] [--] [ARGS...]");
	assert_string_equal(json_string_value(json_object_get(j, "description")), "Try options.");
	assert_string_equal(json_string_value(json_object_get(j, "extra")), "Extra text.");
	assert_true(json_is_false(json_object_get(j, "positional")));
	assert_int_equal(json_array_size(json_object_get(j, "options")), 4);
	o = json_array_get(json_object_get(j, "options"), 0);
	assert_string_equal(json_string_value(json_object_get(o, "long")), "flag");
	assert_string_equal(json_string_value(json_object_get(o, "short")), "f");
	assert_string_equal(json_string_value(json_object_get(o, "type")), "bool");
	assert_true(json_is_null(json_object_get(o, "arg")));
	assert_true(json_is_null(json_object_get(o, "group")));
	o = json_array_get(json_object_get(j, "options"), 1);
	assert_string_equal(json_string_value(json_object_get(o, "group")), "Tuning");
	assert_string_equal(json_string_value(json_object_get(o, "arg")), "N");
	assert_string_equal(json_string_value(json_object_get(o, "default")), "3");
	assert_int_equal(json_integer_value(json_object_get(o, "min")), 1);
	assert_int_equal(json_integer_value(json_object_get(o, "max")), 10);
	o = json_array_get(json_object_get(j, "options"), 2);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "choice");
	assert_int_equal(json_array_size(json_object_get(o, "choices")), 2);
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "choices"), 1)),
			    "on");
	assert_true(json_is_true(json_object_get(o, "required")));
	o = json_array_get(json_object_get(j, "options"), 3);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "kv");
	assert_string_equal(json_string_value(json_object_get(o, "arg")), "KEY=VALUE");
	assert_true(json_is_true(json_object_get(o, "repeatable")));
	json_decref(j);
	strvec_clear(&kv);
}

static void subcommands_from_usage(void **state)
{
	static const struct opt_usage trace = {
	    "gdnctl trace summary [options] INPUT\ngdnctl trace diff [options] BEFORE AFTER", NULL,
	    NULL};
	static const struct opt_usage config = {
	    "gdnctl config [show] [--json]\ngdnctl config get KEY\ngdnctl config keys\n"
	    "gdnctl config show --origin",
	    NULL, NULL};
	static const struct opt_usage plain = {
	    "gdnctl run [options] -- CMD...\ngdnctl run [options] --shell STRING\n"
	    "gdnctl loop [options]\ngdnctl runner x",
	    NULL, NULL};
	struct strvec subs = STRVEC_INIT;

	opt_doc_subcommands(&trace, "trace", &subs);
	assert_int_equal(subs.nr, 2);
	assert_string_equal(subs.v[0], "summary");
	assert_string_equal(subs.v[1], "diff");
	strvec_clear(&subs);
	opt_doc_subcommands(&config, "config", &subs);
	assert_int_equal(subs.nr, 3);
	assert_string_equal(subs.v[0], "show");
	assert_string_equal(subs.v[2], "keys");
	strvec_clear(&subs);
	opt_doc_subcommands(&plain, "run", &subs);
	assert_int_equal(subs.nr, 0);
	strvec_clear(&subs);
}

struct seen {
	int calls, flags;
	const char *first;
};

static void record(const struct opt *opts, const struct opt_usage *u, int parse_flags, void *data)
{
	struct seen *s = data;

	s->calls++;
	s->flags = parse_flags;
	s->first = opts[0].long_name;
}

static void describe_mode(void **state)
{
	struct opt top[] = {OPT_END_()};
	struct opt sub[] = {OPT_BOOL_(0, "deep", NULL, "x"), OPT_END_()};
	struct seen s = {0};
	bool taken = true;

	/* off: nothing is taken */
	assert_false(opt_describe_take(sub, &usage, 0));
	opt_describe_begin(record, &s, NULL);
	assert_true(opt_describe_take(sub, &usage, OPT_PARSE_NO_POSITIONAL));
	assert_int_equal(opt_describe_end(&taken), 1);
	assert_false(taken);
	assert_int_equal(s.calls, 1);
	assert_int_equal(s.flags, OPT_PARSE_NO_POSITIONAL);
	assert_string_equal(s.first, "deep");
	assert_false(opt_describe_take(sub, &usage, 0));

	/* a dispatcher lets the subcommand through once; the subcommand's table is described */
	memset(&s, 0, sizeof(s));
	opt_describe_begin(record, &s, "summary");
	assert_false(opt_describe_take(top, &usage, OPT_PARSE_STOP_AT_NON_OPTION));
	assert_true(opt_describe_take(sub, &usage, 0));
	assert_int_equal(opt_describe_end(&taken), 1);
	assert_true(taken);
	assert_string_equal(s.first, "deep");

	/* a command that parses without stopping at its subcommand is described itself */
	memset(&s, 0, sizeof(s));
	opt_describe_begin(record, &s, "show");
	assert_true(opt_describe_take(top, &usage, 0));
	assert_int_equal(opt_describe_end(&taken), 1);
	assert_false(taken);
	assert_null(s.first);
}

/* ---- enum tables and OPT_ENUM ---- */

enum colour { RED = 3, GREEN = 7, BLUE = -1 };
static const struct gdn_enum colours[] = {
    {"red", RED, "the first"},
    {"green", GREEN, NULL},
    {"blue", BLUE, "the last"},
    {"verdant", GREEN, "an alias of green"},
    GDN_ENUM_END,
};

static void enum_table(void **state)
{
	struct sbuf sb = SBUF_INIT;
	int v = 42;

	assert_int_equal(gdn_enum_parse(colours, "green", &v), 0);
	assert_int_equal(v, GREEN);
	assert_int_equal(gdn_enum_parse(colours, "blue", &v), 0);
	assert_int_equal(v, BLUE);
	assert_int_equal(gdn_enum_parse(colours, "verdant", &v), 0);
	assert_int_equal(v, GREEN);
	v = 42;
	assert_int_equal(gdn_enum_parse(colours, "Red", &v), -1);
	assert_int_equal(gdn_enum_parse(colours, "", &v), -1);
	assert_int_equal(gdn_enum_parse(colours, NULL, &v), -1);
	assert_int_equal(v, 42); /* untouched on failure */
	/* the first row with a value names it (an alias never does) */
	assert_string_equal(gdn_enum_name(colours, GREEN), "green");
	assert_string_equal(gdn_enum_name(colours, BLUE), "blue");
	assert_string_equal(gdn_enum_name(colours, 99), "?");
	assert_int_equal(gdn_enum_count(colours), 4);
	assert_non_null(gdn_enum_find(colours, "red"));
	assert_string_equal(gdn_enum_find(colours, "red")->help, "the first");
	assert_null(gdn_enum_find(colours, "pink"));
	gdn_enum_join(colours, "|", &sb);
	assert_string_equal(sb.buf, "red|green|blue|verdant");
	sbuf_release(&sb);
}

static int parse_colour(int *c, int argc, const char **argv, struct sbuf *help, struct gdn_err *err)
{
	struct strvec rest = STRVEC_INIT;
	struct opt opts[] = {
	    OPT_ENUM_(0, "colour", c, colours, "the colour", "red"),
	    OPT_ENUM_F('k', "kind", c, colours, "hidden twin", NULL, OPT_HIDDEN),
	    OPT_END_(),
	};
	int ret = opt_parse(opts, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, help, err);

	strvec_clear(&rest);
	return ret;
}

static void enum_options(void **state)
{
	const char *a1[] = {"demo", "--colour", "blue"};
	const char *a2[] = {"demo", "--colour=verdant"};
	const char *a3[] = {"demo", "--colour", "pink"};
	const char *a4[] = {"demo", "-kgreen"};
	const char *a5[] = {"demo", "-h"};
	struct sbuf help = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int c = RED;

	assert_int_equal(parse_colour(&c, 3, a1, &help, &err), 0);
	assert_int_equal(c, BLUE);
	assert_int_equal(parse_colour(&c, 2, a2, &help, &err), 0);
	assert_int_equal(c, GREEN);
	c = RED;
	assert_int_equal(parse_colour(&c, 2, a4, &help, &err), 0);
	assert_int_equal(c, GREEN);
	c = RED;
	assert_int_equal(parse_colour(&c, 3, a3, &help, &err), GDN_EUSAGE);
	assert_string_equal(err.msg, "option '--colour': invalid choice 'pink' (choose from red, "
				     "green, blue, verdant)");
	assert_int_equal(c, RED);
	/* help: the choices from the table, like OPT_CHOICE; the hidden row not shown */
	assert_int_equal(parse_colour(&c, 2, a5, &help, &err), OPT_HELP_REQUESTED);
	assert_non_null(strstr(help.buf, "    --colour {red|green|blue|verdant}"));
	assert_non_null(strstr(help.buf, "the colour (default: red)\n"));
	assert_null(strstr(help.buf, "hidden twin"));
	sbuf_release(&help);
}

static void enum_docs(void **state)
{
	int c = RED;
	struct opt opts[] = {
	    OPT_ENUM_(0, "colour", &c, colours, "the colour", "red"),
	    OPT_END_(),
	};
	json_t *j = opt_doc_json(opts, &usage, 0), *o, *ch;
	struct sbuf out = SBUF_INIT;

	assert_true(opt_has_choices(&opts[0]));
	assert_int_equal(opt_choice_count(&opts[0]), 4);
	assert_string_equal(opt_choice_name(&opts[0], 2), "blue");
	assert_null(opt_choice_help(&opts[0], 1));
	assert_null(opt_arg_name(&opts[0]));
	o = json_array_get(json_object_get(j, "options"), 0);
	assert_string_equal(json_string_value(json_object_get(o, "type")), "choice");
	assert_int_equal(json_array_size(json_object_get(o, "choices")), 4);
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "choices"), 3)),
			    "verdant");
	ch = json_object_get(o, "choice_help");
	assert_string_equal(json_string_value(json_object_get(ch, "red")), "the first");
	assert_null(json_object_get(ch, "green"));
	json_decref(j);
	opt_doc_roff_options(&out, opts);
	assert_non_null(strstr(out.buf, "\\fB\\-\\-colour\\fR {red|green|blue|verdant}\n"));
	assert_non_null(strstr(out.buf, ".RS\n.TP\n\\fBred\\fR\nthe first\n"));
	assert_non_null(strstr(out.buf, ".TP\n\\fBgreen\\fR\n\n"));
	assert_non_null(strstr(out.buf, ".RE\n"));
	sbuf_release(&out);
}

static void option_flags(void **state)
{
	int b = 0;
	const char *s = NULL;
	struct opt opts[] = {
	    OPT_BOOL_F(0, "quiet", &b, "q", OPT_HIDDEN | OPT_NEGATABLE),
	    OPT_STRING_F(0, "name", &s, "N", "n", NULL, OPT_REQUIRED),
	    OPT_NEGBOOL_(0, "sync", &b, "s", "on"),
	    OPT_END_(),
	};

	assert_int_equal(opts[0].flags, OPT_HIDDEN | OPT_NEGATABLE);
	assert_int_equal(opts[1].flags, OPT_REQUIRED);
	assert_int_equal(opts[2].flags, OPT_NEGATABLE);
	assert_string_equal(opts[2].defval, "on");
	assert_null(opts[1].enums);
	assert_false(opt_seen(opts, "quiet"));
	assert_false(opt_seen(opts, "nonesuch"));
	opts[0].seen = 1;
	assert_true(opt_seen(opts, "quiet"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(parses_every_type), cmocka_unit_test(rejects_bad_values),
	    cmocka_unit_test(abbreviations),	 cmocka_unit_test(seconds_options),
	    cmocka_unit_test(did_you_mean),	 cmocka_unit_test(help_lists_every_option),
	    cmocka_unit_test(durations),	 cmocka_unit_test(numbers_and_names),
	    cmocka_unit_test(roff_escaping),	 cmocka_unit_test(roff_options),
	    cmocka_unit_test(json_description),	 cmocka_unit_test(subcommands_from_usage),
	    cmocka_unit_test(describe_mode),	 cmocka_unit_test(enum_table),
	    cmocka_unit_test(enum_options),	 cmocka_unit_test(enum_docs),
	    cmocka_unit_test(option_flags),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
