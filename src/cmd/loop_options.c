/*
 * The command line of `gdnctl loop` for its setup (cmd_loop_options.h): the
 * run's decision options as JSON and back into arguments (what --resume
 * parses again), the loop.* configuration keys of options not given, and
 * --until-time. The setup (src/loop/setup.c) sees the parsed values in
 * s->a and the names of the options given in s->given, never the table.
 */
#include "gdnctl/compat.h"
#include "gdnctl/cmd_loop_options.h"
#include "gdnctl/config.h"
#include "gdnctl/enumtab.h"
#include "gdnctl/journal.h"
#include "gdnctl/json.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/opt.h"
#include "gdnctl/xalloc.h"
#include <time.h>

/* The same, shown as a usage error whatever the module's code. */
static int failed_usage(struct gdn_loop_setup *s)
{
	s->style = GDN_SETUP_ERROR;
	s->err.code = GDN_EUSAGE;
	return -1;
}

static bool nonempty(const char *s)
{
	return s && *s;
}

/* ---- the run's decision options, and --resume ---- */

/* A duration in its largest exact unit ("90s", "30m", "1500ms"), as the parser reads it. */
static char *duration_str(long ms)
{
	static const struct {
		long ms;
		const char *unit;
	} units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};

	if (!ms)
		return xstrdup("0s");
	for (size_t i = 0; i < ARRAY_SIZE(units); i++)
		if (ms % units[i].ms == 0)
			return xstrfmt("%ld%s", ms / units[i].ms, units[i].unit);
	return xstrfmt("%ldms", ms);
}

/*
 * Repeatable options that were not always: given once, journaled as their
 * one value (as before), so that the journals of either version resume.
 */
static const char *const once_as_string[] = {"backend", NULL};

static bool is_once_as_string(const struct opt *o)
{
	for (size_t i = 0; o->long_name && once_as_string[i]; i++)
		if (!strcmp(o->long_name, once_as_string[i]))
			return o->type == OPT_LIST;
	return false;
}

static bool decision_row(const struct opt *o)
{
	return o->long_name && o->type != OPT_GROUP && !(o->flags & OPT_INVOCATION);
}

static const struct opt *find_row(const struct opt *opts, const char *name)
{
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && !strcmp(o->long_name, name))
			return o;
	return NULL;
}

json_t *gdn_loop_option_value(const struct opt *o)
{
	switch (o->type) {
	case OPT_BOOL:
		return json_boolean(*(const int *)o->value);
	case OPT_INT:
		return json_integer(*(const long *)o->value);
	case OPT_FLOAT:
	case OPT_SECONDS:
		return json_real(*(const double *)o->value);
	case OPT_DURATION: {
		long ms = *(const long *)o->value;
		char *d;
		json_t *v;

		if (ms < 0)
			return json_null(); /* a "not given" sentinel */
		d = duration_str(ms);
		v = json_string(d);
		free(d);
		return v;
	}
	case OPT_STRING:
	case OPT_CHOICE: {
		const char *v = *(const char *const *)o->value;

		return v ? json_string(v) : json_null();
	}
	case OPT_ENUM: {
		const char *n = gdn_enum_name(o->enums, *(const int *)o->value);

		return n ? json_string(n) : json_null();
	}
	case OPT_LIST:
	case OPT_KV: {
		const struct strvec *sv = o->value;
		json_t *a;

		if (sv->nr == 1 && is_once_as_string(o))
			return json_string(sv->v[0]);
		a = json_array();

		for (size_t i = 0; i < sv->nr; i++)
			json_array_append_new(a, json_string(sv->v[i]));
		return a;
	}
	default:
		return json_null();
	}
}

json_t *gdn_loop_options_json(const struct opt *opts)
{
	json_t *all = json_object();

	for (const struct opt *o = opts; o->type != OPT_END; o++) {
		json_t *v;

		if (!decision_row(o) || !o->seen)
			continue;
		v = gdn_loop_option_value(o);
		if (v && !json_is_null(v))
			json_object_set_new(all, o->long_name, v);
		else
			json_decref(v); /* NULL: a string that is not UTF-8 */
	}
	return all;
}

static int bad_option(const char *name, const char *why, struct gdn_err *err)
{
	return gdn_err_set(err, GDN_EPARSE, "option '--%s' of the run %s", name, why);
}

int gdn_loop_options_argv(const struct opt *opts, json_t *options, struct strvec *argv,
			  struct gdn_err *err)
{
	const char *name;
	json_t *v, *item;
	size_t i;

	json_object_foreach(options, name, v)
	{
		const struct opt *o = find_row(opts, name);

		if (!o || !decision_row(o))
			return bad_option(name, "is not an option a run keeps", err);
		if (json_is_null(v))
			continue;
		if (o->type == OPT_BOOL) {
			if (!json_is_boolean(v))
				return bad_option(name, "is not true or false", err);
			if (json_is_true(v))
				strvec_pushf(argv, "--%s", name);
			else if (o->flags & OPT_NEGATABLE)
				strvec_pushf(argv, "--no-%s", name);
			continue;
		}
		if ((o->type == OPT_LIST || o->type == OPT_KV) &&
		    !(json_is_string(v) && is_once_as_string(o))) {
			if (!json_is_array(v))
				return bad_option(name, "is not a list", err);
			json_array_foreach(v, i, item)
			{
				if (!json_is_string(item))
					return bad_option(name, "is not a list of strings", err);
				strvec_pushf(argv, "--%s", name);
				strvec_push(argv, json_string_value(item));
			}
			continue;
		}
		if (json_is_string(v)) {
			strvec_pushf(argv, "--%s", name);
			strvec_push(argv, json_string_value(v));
		} else if (json_is_integer(v)) {
			strvec_pushf(argv, "--%s", name);
			strvec_pushf(argv, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		} else if (json_is_real(v)) {
			strvec_pushf(argv, "--%s", name);
			strvec_pushf(argv, "%.17g", json_real_value(v));
		} else {
			return bad_option(name, "is not a value", err);
		}
	}
	return 0;
}

/* The setup from its defaults again, before the table is parsed again. */
static void restart(struct gdn_loop_setup *s)
{
	const char *cwd = s->cwd, *root = s->repo_root;
	struct gdn_config *cfg = s->cfg;

	gdn_loop_setup_release(s);
	gdn_loop_setup_init(s, cwd, root, cfg);
}

/* Parse the table from argv (after restart). */
static int parse_again(struct gdn_loop_setup *s, struct opt *opts, const struct strvec *argv)
{
	static const struct opt_usage none = {"gdnctl loop", NULL, NULL};
	struct strvec rest = STRVEC_INIT;
	struct sbuf help = SBUF_INIT;
	int ret;

	restart(s);
	ret = opt_parse(opts, &none, (int)argv->nr, argv->v, OPT_PARSE_NO_POSITIONAL, &rest, &help,
			&s->err);
	if (ret == OPT_HELP_REQUESTED)
		ret = gdn_err_set(&s->err, GDN_EUSAGE, "the run's options ask for help");
	strvec_clear(&rest);
	sbuf_release(&help);
	return ret;
}

/* "--NAME VALUE" as the command line would give the value v of row o; "" for none. */
static void option_text(struct sbuf *out, const struct opt *o, json_t *v)
{
	json_t *item;
	size_t i;

	if (json_is_boolean(v)) {
		if (json_is_true(v) || (o->flags & OPT_NEGATABLE))
			sbuf_addf(out, "--%s%s", json_is_true(v) ? "" : "no-", o->long_name);
		return;
	}
	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
		{
			sbuf_addf(out, "%s--%s ", i ? " " : "", o->long_name);
			sbuf_add_shell_quoted(out, json_string_value(item));
		}
		return;
	}
	if (json_is_null(v))
		return;
	sbuf_addf(out, "--%s ", o->long_name);
	if (json_is_string(v))
		sbuf_add_shell_quoted(out, json_string_value(v));
	else if (json_is_integer(v))
		sbuf_addf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	else
		sbuf_addf(out, "%.17g", json_real_value(v));
}

/* "--X a contradicts the run's --X b" (or "..., which had no --X") to msg. */
static void contradiction(struct sbuf *msg, const struct opt *o, json_t *mine, json_t *theirs)
{
	struct sbuf t = SBUF_INIT;

	if (msg->len)
		sbuf_adds(msg, "; ");
	option_text(msg, o, mine);
	option_text(&t, o, theirs);
	if (t.len)
		sbuf_addf(msg, " contradicts the run's %s", t.buf);
	else
		sbuf_addf(msg, " contradicts the run, which had no --%s", o->long_name);
	sbuf_release(&t);
}

int gdn_loop_setup_resume(struct gdn_loop_setup *s, struct opt *opts, int argc, const char **argv)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct strvec jargv = STRVEC_INIT, merged = STRVEC_INIT;
	struct sbuf msg = SBUF_INIT;
	json_t *mine = json_object(), *was = json_object(), *keep = NULL, *v;
	const char *name;
	bool override = s->a.resume_override;
	int ret = 0;

	if (!s->a.resume)
		goto out;
	ret = gdn_loop_setup_read_run(s, &st);
	if (ret <= 0)
		goto out;
	ret = 0;
	if (!st.options) {
		strvec_pushf(&s->warnings,
			     "run %s journaled no options (an older gdnctl): it resumes with the "
			     "options of this command line",
			     st.run_id);
		goto out;
	}
	/* what this command line gives, then what the run had for the same options */
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (decision_row(o) && o->seen)
			json_object_set_new(mine, o->long_name, gdn_loop_option_value(o));
	strvec_push(&jargv, argv[0]);
	ret = gdn_loop_options_argv(opts, st.options, &jargv, &s->err);
	if (!ret)
		ret = parse_again(s, opts, &jargv);
	if (ret) {
		char *why = xstrdup(s->err.msg);

		gdn_err_set(&s->err, GDN_EUSAGE, "cannot resume run %s: %s", st.run_id, why);
		free(why);
		ret = failed_usage(s);
		goto out;
	}
	json_object_foreach(mine, name, v)
	{
		const struct opt *o = find_row(opts, name);
		json_t *theirs = gdn_loop_option_value(o);

		if (!json_equal(v, theirs)) {
			contradiction(&msg, o, v, theirs);
			json_object_set(was, name, theirs);
		}
		json_decref(theirs);
	}
	if (msg.len && !override) {
		ret = gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_EUSAGE,
					  "%s (use --resume-override to change it)", msg.buf);
		goto out;
	}
	/* the run's options but those given, then the command line */
	keep = json_deep_copy(st.options);
	json_object_foreach(mine, name, v) json_object_del(keep, name);
	strvec_push(&merged, argv[0]);
	ret = gdn_loop_options_argv(opts, keep, &merged, &s->err);
	for (int i = 1; i < argc; i++)
		strvec_push(&merged, argv[i]);
	if (!ret)
		ret = parse_again(s, opts, &merged);
	if (ret) {
		ret = failed_usage(s);
		goto out;
	}
	s->resume_argv = merged;
	strvec_init(&merged);
	s->resume_run = xstrdup(st.run_id);
	ret = gdn_loop_setup_project_file(s, &st);
	if (ret)
		goto out;
	if (json_object_size(was)) {
		s->overridden = json_pack("{sO}", "was", was);
	}
out:
	gdn_loop_state_release(&st);
	strvec_clear(&jargv);
	strvec_clear(&merged);
	sbuf_release(&msg);
	json_decref(mine);
	json_decref(was);
	json_decref(keep);
	return ret;
}

/* ---- check ---- */

/* "2026-11-21T18:00:00Z" (UTC) or "+DURATION" from now. Returns 0 or -1. */
static int parse_until(const char *s, time_t *out)
{
	struct tm tm = {0};
	const char *end;
	long ms;

	if (s[0] == '+') {
		if (opt_parse_duration_ms(s + 1, &ms))
			return -1;
		*out = time(NULL) + ms / 1000;
		return 0;
	}
	end = strptime(s, "%Y-%m-%dT%H:%M", &tm);
	if (end && *end == ':')
		end = strptime(end, ":%S", &tm);
	if (!end || strcmp(end, "Z"))
		return -1;
	*out = timegm(&tm);
	return 0;
}

const struct gdn_loop_config_option gdn_loop_config_options[] = {
    {"loop.validation_mode", "validation-mode"},
    {"loop.perf.mode", "perf-mode"},
    {"loop.perf.metric", "perf-metric"},
    {"loop.perf.direction", "perf-direction"},
    {"loop.perf.min_improvement_pct", "perf-min-improvement-pct"},
    {"loop.perf.max_regression_pct", "perf-max-regression-pct"},
    {"loop.perf.repeats", "perf-repeats"},
    {NULL, NULL},
};

static void set_from(struct gdn_loop_setup *s, const char *option, const char *why)
{
	json_object_set_new(s->from, option, json_string(why));
}

/*
 * The loop.* keys (gdnctl.yaml, the user's file, GDNCTL_LOOP_*, -c) for the
 * options argv does not give, journaled with the run's options; then the
 * validation gate's default: on with a test command (not for codex-loop,
 * which keeps the original's defaults). A resumed run keeps its options.
 */
static int apply_config(struct gdn_loop_setup *s, const struct opt *opts)
{
	const struct gdn_loop_config_option *c;

	for (c = gdn_loop_config_options; c->key; c++) {
		const struct gdn_cfg_value *v = gdn_config_get(s->cfg, c->key);
		const struct opt *o = find_row(opts, c->option);
		struct gdn_err e = GDN_ERR_INIT;
		char *given;

		if (!o)
			BUG("no option '--%s' for %s", c->option, c->key);
		if (o->seen) {
			given = xstrfmt("--%s", c->option);
			set_from(s, c->option, given);
			free(given);
			continue;
		}
		if (s->resume_run || !v || v->source == GDN_SRC_DEFAULT || !v->str)
			continue;
		if (opt_set(opts, c->option, v->str, &e))
			return gdn_loop_setup_fail(s, GDN_SETUP_ERROR, GDN_ECONFIG, "%s: %s: %s",
						   v->origin ? v->origin : "config", c->key, e.msg);
		set_from(s, c->option, v->origin ? v->origin : c->key);
		json_object_set_new(s->options, c->option, gdn_loop_option_value(o));
	}
	if (!json_object_get(s->from, "validation-mode") && !s->original && !s->resume_run &&
	    nonempty(gdn_config_str(s->cfg, "project.test_command"))) {
		s->a.validation_mode = GDN_GATE_REQUIRED;
		set_from(s, "validation-mode", "project.test_command");
		json_object_set_new(s->options, "validation-mode", json_string("required"));
	}
	return 0;
}

/*
 * The long names of the options the last parse of the table saw (the
 * command line, or with --resume the run's options and then it) into
 * s->given, for the setup's checks.
 */
static void given(struct gdn_loop_setup *s, const struct opt *opts)
{
	strvec_clear(&s->given);
	for (const struct opt *o = opts; o->type != OPT_END; o++)
		if (o->long_name && o->seen)
			strvec_push(&s->given, o->long_name);
}

int gdn_loop_setup_check(struct gdn_loop_setup *s, const struct opt *opts)
{
	struct gdn_loop_args *a = &s->a;

	json_decref(s->options);
	s->options = gdn_loop_options_json(opts);
	json_object_clear(s->from);
	if (apply_config(s, opts))
		return -1;
	given(s, opts);
	if (gdn_loop_setup_validate(s))
		return -1;
	s->lo.until_time = 0;
	if (a->until_time && parse_until(a->until_time, &s->lo.until_time))
		return gdn_loop_setup_fail(
		    s, GDN_SETUP_ERROR, GDN_EUSAGE,
		    "--until-time: expected YYYY-MM-DDTHH:MM[:SS]Z or +DURATION, got '%s'",
		    a->until_time);
	if (a->until_time && a->until_time[0] == '+') {
		/* the run keeps the time it stops at, not a time from when it resumes */
		char when[32];
		struct tm tm;

		gmtime_r(&s->lo.until_time, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		json_object_set_new(s->options, "until-time", json_string(when));
	}
	return 0;
}
