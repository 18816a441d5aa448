/*
 * Unit tests for the loop's run options (loop_setup.h): the decision
 * options of an option table journaled as JSON, and turned back into the
 * arguments that give the same values (what --resume parses).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/cmd_loop_options.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/loop_setup.h"
#include "gdnctl/opt.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static const char *const colours[] = {"red", "green", NULL};

struct vals {
	int flag, neg, isolation, resume;
	long n, ms, grace_ms;
	double x, secs, mins;
	const char *s, *colour, *log_dir;
	struct strvec list, kv;
};

static void vals_init(struct vals *v)
{
	memset(v, 0, sizeof(*v));
	v->neg = 1;
	v->n = 7;
	v->ms = -1; /* not given */
	v->grace_ms = 10000;
	v->secs = 5.0;
	v->isolation = GDN_ISOLATION_WORKTREE;
	strvec_init(&v->list);
	strvec_init(&v->kv);
}

static void vals_release(struct vals *v)
{
	strvec_clear(&v->list);
	strvec_clear(&v->kv);
}

/* One row of each type, and two per-invocation rows. */
static void table(struct opt *o, struct vals *v)
{
	struct opt rows[] = {
	    OPT_GROUP_("Group"),
	    OPT_BOOL_(0, "flag", &v->flag, "a flag"),
	    OPT_NEGBOOL_(0, "neg", &v->neg, "a negatable flag", "on"),
	    OPT_INT_(0, "n", &v->n, "N", "an int", "7", 0, 0),
	    OPT_FLOAT_(0, "x", &v->x, "X", "a float", NULL),
	    OPT_SECONDS_(0, "secs", &v->secs, "S", "seconds", "5.0"),
	    OPT_MINUTES_(0, "mins", &v->mins, "M", "minutes", "0"),
	    OPT_DURATION_(0, "timeout", &v->ms, "a duration", NULL),
	    OPT_DURATION_(0, "grace", &v->grace_ms, "a duration", "10s"),
	    OPT_STRING_(0, "s", &v->s, "S", "a string", NULL),
	    OPT_CHOICE_(0, "colour", &v->colour, colours, "a choice", NULL),
	    OPT_ENUM_(0, "isolation", &v->isolation, gdn_isolation_enum, "an enum", "worktree"),
	    OPT_LIST_(0, "item", &v->list, "T", "a list"),
	    OPT_KV_(0, "env", &v->kv, "an env"),
	    OPT_BOOL_F(0, "resume", &v->resume, "per invocation", OPT_INVOCATION),
	    OPT_STRING_F(0, "log-dir", &v->log_dir, "P", "per invocation", NULL, OPT_INVOCATION),
	    OPT_END_(),
	};

	memcpy(o, rows, sizeof(rows));
}
#define ROWS 17

static const struct opt_usage usage = {"test", NULL, NULL};

static void parse(struct opt *o, int argc, const char **argv)
{
	struct strvec rest = STRVEC_INIT;
	struct sbuf help = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(
	    opt_parse(o, &usage, argc, argv, OPT_PARSE_NO_POSITIONAL, &rest, &help, &err), 0);
	strvec_clear(&rest);
	sbuf_release(&help);
}

static char *dump(json_t *j)
{
	return json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII);
}

static void test_round_trip(void **unused)
{
	const char *argv[] = {
	    "test",	 "--flag", "--no-neg", "--n",	   "-3",	"--x",	       "0.1",
	    "--secs",	 "1.5m",   "--mins",   "1h",	   "--timeout", "90",	       "--grace",
	    "1500ms",	 "--s",	   "a 'b' c",  "--colour", "green",	"--isolation", "in-place",
	    "--item",	 "one",	   "--item",   "-two",	   "--env",	"K=V",	       "--resume",
	    "--log-dir", "/tmp/x", "--s",      "é last"};
	struct opt o1[ROWS], o2[ROWS];
	struct vals v1, v2;
	struct strvec back = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	json_t *j;
	char *text;

	(void)unused;
	vals_init(&v1);
	vals_init(&v2);
	table(o1, &v1);
	table(o2, &v2);
	parse(o1, (int)ARRAY_SIZE(argv), argv);
	j = gdn_loop_options_json(o1);
	text = dump(j);
	assert_string_equal(text, "{\"flag\":true,\"neg\":false,\"n\":-3,\"x\":0.10000000000000001,"
				  "\"secs\":90.0,\"mins\":60.0,\"timeout\":\"90s\",\"grace\":"
				  "\"1500ms\",\"s\":\"\\u00E9 last\",\"colour\":\"green\","
				  "\"isolation\":\"in-place\",\"item\":[\"one\",\"-two\"],\"env\":"
				  "[\"K=V\"]}");
	free(text);
	/* back to arguments, parsed into a fresh table: the same values */
	strvec_push(&back, "test");
	assert_int_equal(gdn_loop_options_argv(o2, j, &back, &err), 0);
	parse(o2, (int)back.nr, back.v);
	for (int i = 0; o1[i].type != OPT_END; i++) {
		json_t *a, *b;

		if (o1[i].type == OPT_GROUP || (o1[i].flags & OPT_INVOCATION))
			continue;
		a = gdn_loop_option_value(&o1[i]);
		b = gdn_loop_option_value(&o2[i]);
		assert_true(json_equal(a, b));
		json_decref(a);
		json_decref(b);
	}
	assert_int_equal(v2.resume, 0);
	assert_null(v2.log_dir);
	assert_float_equal(v2.x, 0.1, 0);
	assert_int_equal(v2.ms, 90000);
	assert_int_equal(v2.grace_ms, 1500);
	assert_string_equal(v2.s, "é last");
	json_decref(j);
	strvec_clear(&back);
	vals_release(&v1);
	vals_release(&v2);
}

static void test_only_given_decision_options(void **unused)
{
	const char *argv[] = {"test", "--resume", "--log-dir", "d", "--n", "7"};
	struct opt o[ROWS];
	struct vals v;
	json_t *j, *dv;
	char *text;

	(void)unused;
	vals_init(&v);
	table(o, &v);
	parse(o, (int)ARRAY_SIZE(argv), argv);
	j = gdn_loop_options_json(o);
	text = dump(j);
	assert_string_equal(text, "{\"n\":7}"); /* given, even with the default value */
	free(text);
	json_decref(j);
	/* a row's value whether given or not: defaults, and null for none */
	dv = gdn_loop_option_value(&o[7]); /* --timeout, not given: the -1 sentinel */
	assert_true(json_is_null(dv));
	json_decref(dv);
	dv = gdn_loop_option_value(&o[8]); /* --grace 10s */
	assert_string_equal(json_string_value(dv), "10s");
	json_decref(dv);
	dv = gdn_loop_option_value(&o[9]); /* --s */
	assert_true(json_is_null(dv));
	json_decref(dv);
	vals_release(&v);
}

static void test_argv_errors(void **unused)
{
	static const char *const bad[] = {
	    "{\"nope\":1}",	  /* no such option */
	    "{\"resume\":true}",  /* per invocation */
	    "{\"flag\":\"yes\"}", /* a bool that is not one */
	    "{\"item\":\"one\"}", /* a list that is not one */
	    "{\"item\":[1]}",	  /* a list of non-strings */
	    "{\"n\":{}}",	  /* no value */
	};
	struct opt o[ROWS];
	struct vals v;

	(void)unused;
	vals_init(&v);
	table(o, &v);
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strvec argv = STRVEC_INIT;
		struct gdn_err err = GDN_ERR_INIT;
		json_t *j = json_loads(bad[i], 0, NULL);

		assert_non_null(j);
		assert_int_equal(gdn_loop_options_argv(o, j, &argv, &err), GDN_EPARSE);
		assert_non_null(strstr(err.msg, "option '--"));
		json_decref(j);
		strvec_clear(&argv);
	}
	{
		/* null values, and false for a bool without --no-: nothing */
		struct strvec argv = STRVEC_INIT;
		struct gdn_err err = GDN_ERR_INIT;
		json_t *j = json_loads("{\"s\":null,\"flag\":false,\"neg\":true,\"n\":2}", 0, NULL);

		assert_int_equal(gdn_loop_options_argv(o, j, &argv, &err), 0);
		assert_int_equal(argv.nr, 3);
		assert_string_equal(argv.v[0], "--neg");
		assert_string_equal(argv.v[1], "--n");
		assert_string_equal(argv.v[2], "2");
		json_decref(j);
		strvec_clear(&argv);
	}
	vals_release(&v);
}

/* --backend, repeatable since --workers: journaled as a string when given once. */
static void test_backend_once_as_string(void **unused)
{
	struct strvec backends = STRVEC_INIT, back = STRVEC_INIT;
	struct opt o[] = {
	    OPT_LIST_(0, "backend", &backends, "NAME", "where"),
	    OPT_END_(),
	};
	const char *once[] = {"test", "--backend", "box"};
	const char *twice[] = {"test", "--backend", "a", "--backend", "b"};
	struct gdn_err err = GDN_ERR_INIT;
	json_t *j;
	char *text;

	(void)unused;
	parse(o, (int)ARRAY_SIZE(once), once);
	j = gdn_loop_options_json(o);
	text = dump(j);
	assert_string_equal(text, "{\"backend\":\"box\"}");
	free(text);
	/* and back (a journal of either version) */
	assert_int_equal(gdn_loop_options_argv(o, j, &back, &err), 0);
	assert_int_equal(back.nr, 2);
	assert_string_equal(back.v[1], "box");
	json_decref(j);
	strvec_clear(&backends);
	parse(o, (int)ARRAY_SIZE(twice), twice);
	j = gdn_loop_options_json(o);
	text = dump(j);
	assert_string_equal(text, "{\"backend\":[\"a\",\"b\"]}");
	free(text);
	json_decref(j);
	strvec_clear(&backends);
	strvec_clear(&back);
}

/* --workers: a path under the agent's worktree moved to a worker's. */
static void test_worker_path(void **unused)
{
	static const struct {
		const char *path, *from, *to, *want;
	} cases[] = {
	    {"/l/worktree/a/log.md", "/l/worktree", "/l/workers/w2", "/l/workers/w2/a/log.md"},
	    {"/l/worktree/a/log.md", "/l/worktree/", "/w/w1", "/w/w1/a/log.md"},
	    {"/l/worktree", "/l/worktree", "/w/w1", NULL},	   /* the tree itself */
	    {"/l/worktree2/log.md", "/l/worktree", "/w/w1", NULL}, /* a sibling */
	    {"/elsewhere/log.md", "/l/worktree", "/w/w1", NULL},
	    {"/l/log.md", "/l/worktree", "/w/w1", NULL},
	};

	(void)unused;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char *got = gdn_loop_worker_path(cases[i].path, cases[i].from, cases[i].to);

		if (cases[i].want)
			assert_string_equal(got, cases[i].want);
		else
			assert_null(got);
		free(got);
	}
	assert_null(gdn_loop_worker_path(NULL, "/a", "/b"));
}

/* The worker hook re-points what points at the agent's worktree, in worker K's process. */
static void test_worker_hook(void **unused)
{
	struct gdn_loop_setup s;
	struct gdn_backend *shared = xcalloc(1, sizeof(*shared));
	struct gdn_backend *own = xcalloc(1, sizeof(*own));
	struct gdn_err err = GDN_ERR_INIT;
	char *dir;

	(void)unused;
	gdn_loop_setup_init(&s, "/cwd", "/repo", NULL);
	s.log_dir = xstrdup("/l");
	s.workdir = xstrdup("/repo");
	s.agent_dir = xstrdup("/l/worktree");
	s.hlog = xstrdup("/l/worktree/docs/log.md");
	s.lo.hillclimb_log = s.hlog;
	s.mo.log_file = s.hlog;
	s.backend = shared;
	s.gate.backend = shared;
	s.gate.workdir = s.agent_dir;
	s.ts.workdir = s.agent_dir;
	s.w.mg.repo = s.agent_dir;
	strvec_push(&s.directives, "base");
	s.a.workers = s.w.workers = 2;
	s.w.wv = xcalloc(2, sizeof(*s.w.wv));
	for (int k = 0; k < 2; k++) {
		s.w.wv[k].champion_name = xstrfmt("champion-w%d", k + 1);
		strvec_init(&s.w.wv[k].directives);
	}
	s.w.wv[1].backend = own;
	strvec_push(&s.w.wv[1].directives, "dev TPU me-w2");

	/* the worktrees */
	dir = gdn_loop_setup_worker_dir(&s, 2);
	assert_string_equal(dir, "/l/workers/w2");
	free(dir);
	s.worktree_dir = xstrdup("/wt");
	dir = gdn_loop_setup_worker_dir(&s, 1);
	assert_string_equal(dir, "/wt/w1");
	free(dir);

	/* no such worker */
	assert_int_equal(gdn_loop_setup_worker(&s.gate, 3, "/wt/w3", &err), GDN_EUSAGE);
	assert_int_equal(gdn_loop_setup_worker(&s.gate, 0, "/wt/w0", &err), GDN_EUSAGE);
	assert_string_equal(s.gate.workdir, "/l/worktree");

	/* in the process that opened the holds: they stay its own */
	s.w.pid = getpid();
	assert_int_equal(gdn_loop_setup_worker(&s.gate, 1, "/wt/w1", &err), 0);
	assert_false(s.w.forked);
	assert_string_equal(s.gate.workdir, "/wt/w1");
	assert_ptr_equal(s.gate.backend, shared);
	s.w.pid = 1; /* a forked process: the holds are the parent's */
	assert_int_equal(gdn_loop_setup_worker(&s.gate, 2, "/wt/w2", &err), 0);
	assert_true(s.w.forked);
	assert_string_equal(s.worker_dir, "/wt/w2");
	assert_string_equal(s.gate.workdir, "/wt/w2");
	assert_string_equal(s.hlog, "/wt/w2/docs/log.md");
	assert_ptr_equal(s.lo.hillclimb_log, s.hlog);
	assert_ptr_equal(s.mo.log_file, s.hlog);
	assert_ptr_equal(s.gate.backend, own);
	assert_string_equal(own->repo_root, "/wt/w2");
	assert_string_equal(shared->repo_root, "/wt/w2");
	assert_string_equal(s.gate.champion_name, "champion-w2");
	assert_string_equal(s.ts.workdir, "/wt/w2");
	assert_ptr_equal(s.ts.backend, own);
	assert_string_equal(s.w.mg.repo, "/wt/w2");
	assert_null(s.gate.targets);
	assert_int_equal(s.directives.nr, 2);
	assert_string_equal(s.directives.v[0], "base");
	assert_string_equal(s.directives.v[1], "dev TPU me-w2");
	/* again (a re-validation), then in another tree: the same, nothing twice */
	assert_int_equal(gdn_loop_setup_worker(&s.gate, 2, "/wt/w2", &err), 0);
	assert_int_equal(gdn_loop_setup_worker(&s.gate, 2, "/wt/again", &err), 0);
	assert_string_equal(s.hlog, "/wt/again/docs/log.md");
	assert_string_equal(s.gate.workdir, "/wt/again");
	assert_string_equal(own->repo_root, "/wt/again");
	assert_int_equal(s.directives.nr, 2);
	assert_string_equal(s.directives.v[1], "dev TPU me-w2");

	/* the hooks the engine takes: the worker hook alone without a gate */
	s.worker_hooks.worker = gdn_loop_setup_worker;
	assert_ptr_equal(gdn_loop_setup_hooks(&s), &s.worker_hooks);
	assert_ptr_equal(gdn_loop_setup_hooks(&s)->payload, &s.gate);
	s.gate_on = true;
	assert_ptr_equal(gdn_loop_setup_hooks(&s), &s.hooks);
	s.gate_on = false;
	s.worker_hooks.worker = NULL;
	assert_null(gdn_loop_setup_hooks(&s));
	gdn_loop_setup_release(&s);
}

/* The rows of gdnctl loop's table that the loop.* keys and the checks read. */
static void loop_table(struct opt *o, struct gdn_loop_setup *s)
{
	struct opt rows[] = {
	    OPT_INT_F(0, "iterations", &s->a.iterations, "N", "n", NULL, 0, 0, OPT_INVOCATION),
	    OPT_STRING_(0, "agent-cmd", &s->a.agent_cmd, "CMD", "agent", NULL),
	    OPT_ENUM_(0, "validation-mode", &s->a.validation_mode, gdn_gate_mode_enum, "v", "off"),
	    OPT_ENUM_(0, "perf-mode", &s->a.perf_on, gdn_perf_mode_enum, "p", "off"),
	    OPT_STRING_(0, "perf-metric", &s->a.perf_metric, "NAME", "m", NULL),
	    OPT_ENUM_(0, "perf-direction", &s->a.perf_direction, gdn_perf_direction_enum, "d",
		      "auto"),
	    OPT_FLOAT_(0, "perf-min-improvement-pct", &s->a.perf_min_improvement, "P", "i", NULL),
	    OPT_FLOAT_(0, "perf-max-regression-pct", &s->a.perf_max_regression, "P", "r", NULL),
	    OPT_INT_(0, "perf-repeats", &s->a.perf_repeats, "K", "k", "1", 1, 1000),
	    OPT_END_(),
	};

	memcpy(o, rows, sizeof(rows));
}

/* A setup over `yaml` (the repository's gdnctl.yaml), checked with argv. */
static int checked(struct gdn_loop_setup *s, struct gdn_config *cfg, struct opt *o,
		   const char *yaml, bool original, int argc, const char **argv)
{
	struct gdn_err err = GDN_ERR_INIT;

	gdn_config_init(cfg, NULL, 0);
	assert_int_equal(
	    gdn_config_load_buffer(cfg, "gdnctl.yaml", yaml, strlen(yaml), GDN_SRC_REPO_FILE, &err),
	    0);
	gdn_loop_setup_init(s, "/cwd", "/repo", cfg);
	s->original = original;
	loop_table(o, s);
	parse(o, argc, argv);
	return gdn_loop_setup_check(s, o);
}

static const char *from(const struct gdn_loop_setup *s, const char *option)
{
	return json_string_value(json_object_get(s->from, option));
}

/*
 * The loop.* keys give the options not given (the command line wins) and
 * are journaled; with project.test_command validation is on, except for
 * codex-loop; a bad value names its origin.
 */
static void test_config_options(void **unused)
{
	static const char *yaml = "project:\n"
				  "  test_command: ./check.sh\n"
				  "loop:\n"
				  "  perf:\n"
				  "    mode: on\n"
				  "    metric: throughput/duration_ms\n"
				  "    repeats: 3\n"
				  "    min_improvement_pct: 2.5\n";
	const char *argv[] = {"loop", "--iterations",	"1", "--agent-cmd",
			      "x",    "--perf-repeats", "2"};
	struct gdn_loop_setup s;
	struct gdn_config cfg;
	struct opt o[10];

	(void)unused;
	assert_int_equal(checked(&s, &cfg, o, yaml, false, 7, argv), 0);
	assert_int_equal(s.a.perf_on, 1);
	assert_string_equal(s.a.perf_metric, "throughput/duration_ms");
	assert_true(s.a.perf_min_improvement == 2.5);
	assert_int_equal(s.a.perf_repeats, 2); /* the command line's */
	assert_int_equal(s.a.validation_mode, GDN_GATE_REQUIRED);
	assert_string_equal(from(&s, "perf-metric"), "gdnctl.yaml:6:13");
	assert_string_equal(from(&s, "perf-repeats"), "--perf-repeats");
	assert_string_equal(from(&s, "validation-mode"), "project.test_command");
	assert_null(from(&s, "perf-direction"));
	/* journaled: a resumed run keeps them */
	assert_string_equal(json_string_value(json_object_get(s.options, "perf-metric")),
			    "throughput/duration_ms");
	assert_string_equal(json_string_value(json_object_get(s.options, "validation-mode")),
			    "required");
	assert_int_equal(json_integer_value(json_object_get(s.options, "perf-repeats")), 2);
	gdn_loop_setup_release(&s);
	gdn_config_release(&cfg);

	/* codex-loop keeps the original's default: no validation unless asked */
	assert_int_equal(checked(&s, &cfg, o, yaml, true, 5, argv), 0);
	assert_int_equal(s.a.validation_mode, GDN_GATE_OFF);
	assert_null(json_object_get(s.options, "validation-mode"));
	gdn_loop_setup_release(&s);
	gdn_config_release(&cfg);

	/* no test command: off; loop.validation_mode and the command line decide over it */
	assert_int_equal(checked(&s, &cfg, o, "loop: {perf: {mode: off}}\n", false, 5, argv), 0);
	assert_int_equal(s.a.validation_mode, GDN_GATE_OFF);
	gdn_loop_setup_release(&s);
	gdn_config_release(&cfg);
	assert_int_equal(
	    checked(&s, &cfg, o,
		    "project: {test_command: t}\nloop: {validation_mode: profile-only}\n", false, 5,
		    argv),
	    0);
	assert_int_equal(s.a.validation_mode, GDN_GATE_PROFILE_ONLY);
	gdn_loop_setup_release(&s);
	gdn_config_release(&cfg);
	{
		const char *off[] = {"loop", "--iterations", "1", "--validation-mode", "off"};

		assert_int_equal(checked(&s, &cfg, o, yaml, false, 5, off), 0);
		assert_int_equal(s.a.validation_mode, GDN_GATE_OFF);
		assert_string_equal(from(&s, "validation-mode"), "--validation-mode");
		gdn_loop_setup_release(&s);
		gdn_config_release(&cfg);
	}

	/* a value the option refuses: a configuration error naming where it was set */
	assert_int_equal(checked(&s, &cfg, o, "loop:\n  perf:\n    repeats: 0\n", false, 5, argv),
			 -1);
	assert_int_equal(s.err.code, GDN_ECONFIG);
	assert_non_null(strstr(s.err.msg, "gdnctl.yaml:3:14: loop.perf.repeats: "));
	assert_non_null(strstr(s.err.msg, "out of range"));
	gdn_loop_setup_release(&s);
	gdn_config_release(&cfg);
}

/* setup_perf over a configuration and argv: 0, or -1 with s->err (the setup is released). */
static int perf_setup(const char *yaml, int argc, const char **argv, struct sbuf *ruler,
		      struct gdn_err *out)
{
	struct gdn_loop_setup s;
	struct gdn_config cfg;
	struct opt o[10];
	int ret = checked(&s, &cfg, o, yaml, false, argc, argv);

	assert_int_equal(ret, 0);
	s.log_dir = xstrdup("/nonexistent/gdnctl-test-log-dir");
	s.workdir = xstrdup("/nonexistent/gdnctl-test-repo");
	s.agent_dir = xstrdup(s.workdir);
	ret = gdn_loop_setup_perf(&s);
	if (ret)
		*out = s.err;
	else
		gdn_loop_setup_ruler(&s, ruler);
	gdn_loop_setup_release(&s);
	gdn_config_release(&cfg);
	return ret;
}

/*
 * --perf-direction auto: the name resolves (and the ruler says how), or
 * the run is refused naming --perf-direction; a trace metric needs a trace.
 */
static void test_perf_direction_and_trace(void **unused)
{
	static const char *yaml = "project: {profile_command: ./bench.sh}\n";
	const char *score[] = {"loop",		"--iterations",	   "1", "--perf-mode", "on",
			       "--perf-metric", "throughput/score"};
	const char *dur[] = {"loop",	      "--iterations",	       "1", "--perf-mode", "on",
			     "--perf-metric", "throughput/duration_ms"};
	const char *higher[] = {"loop",
				"--iterations",
				"1",
				"--perf-mode",
				"on",
				"--perf-metric",
				"throughput/score",
				"--perf-direction",
				"higher"};
	const char *trace[] = {"loop",		"--iterations", "1", "--perf-mode", "on",
			       "--perf-metric", "trace/step_ms"};
	struct sbuf ruler = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	(void)unused;
	assert_int_equal(perf_setup(yaml, 7, score, &ruler, &err), -1);
	assert_int_equal(err.code, GDN_EUSAGE);
	assert_non_null(strstr(err.msg, "'throughput/score'"));
	assert_non_null(strstr(err.msg, "--perf-direction higher"));

	assert_int_equal(perf_setup(yaml, 7, dur, &ruler, &err), 0);
	assert_string_equal(
	    ruler.buf, "throughput/duration_ms, lower is better (auto: its name reads as a time)");
	sbuf_reset(&ruler);
	assert_int_equal(perf_setup(yaml, 9, higher, &ruler, &err), 0);
	assert_string_equal(ruler.buf, "throughput/score, higher is better (--perf-direction)");
	sbuf_reset(&ruler);
	assert_int_equal(
	    perf_setup("project: {profile_command: b}\nloop: {perf: {direction: lower}}\n", 7,
		       score, &ruler, &err),
	    0);
	assert_string_equal(ruler.buf, "throughput/score, lower is better (gdnctl.yaml:2:26)");
	sbuf_reset(&ruler);

	/* no way to the trace: refused before anything runs */
	assert_int_equal(perf_setup(yaml, 7, trace, &ruler, &err), -1);
	assert_int_equal(err.code, GDN_EUSAGE);
	assert_non_null(strstr(err.msg, "no project.trace_glob"));
	assert_int_equal(perf_setup("project: {profile_command: b, trace_glob: 't/*.json'}\n", 7,
				    trace, &ruler, &err),
			 0);
	sbuf_reset(&ruler);
	assert_int_equal(perf_setup("project: {profile_command: b, trace_source: gcs}\n", 7, trace,
				    &ruler, &err),
			 0);
	sbuf_reset(&ruler);
	assert_int_equal(perf_setup("project: {profile_command: b, trace_glob: 't/*.json', "
				    "trace_source: none}\n",
				    7, trace, &ruler, &err),
			 -1);
	assert_non_null(strstr(err.msg, "project.trace_source is none"));
	sbuf_release(&ruler);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_only_given_decision_options),
	    cmocka_unit_test(test_argv_errors),
	    cmocka_unit_test(test_backend_once_as_string),
	    cmocka_unit_test(test_worker_path),
	    cmocka_unit_test(test_worker_hook),
	    cmocka_unit_test(test_config_options),
	    cmocka_unit_test(test_perf_direction_and_trace),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
