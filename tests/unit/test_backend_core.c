/*
 * Unit tests for the backend core (src/backend/backend.c, jobdir.c,
 * local.c, the checks of ssh.c and slurm.c): opening backends from
 * configuration, configuration errors, following a log, the poll loop of
 * wait (states, progress events, retries, timeout), the echo with
 * secrets masked (also inside an ssh remote command string), and the
 * local backend end to end with real child processes (a few seconds).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/backend.h"
#include "gdnctl/config.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "../../src/backend/backend_impl.h"

/* ---- helpers ---- */

struct events {
	struct strvec all;   /* "SPAWN: text", "INFO: text", ... */
	struct strvec lines; /* on_line */
};

static const char *ev_name(enum gdn_backend_event ev)
{
	switch (ev) {
	case GDN_EV_SPAWN:
		return "SPAWN";
	case GDN_EV_WAITING:
		return "WAITING";
	case GDN_EV_INFO:
		return "INFO";
	case GDN_EV_POLL:
		return "POLL";
	}
	return "?";
}

static void on_event(enum gdn_backend_event ev, const char *text, void *payload)
{
	struct events *e = payload;

	strvec_pushf(&e->all, "%s: %s", ev_name(ev), text);
}

static int on_line(const char *line, size_t len, void *payload)
{
	struct events *e = payload;

	strvec_push(&e->lines, line);
	return 0;
}

static bool has_event(const struct events *e, const char *needle)
{
	for (size_t i = 0; i < e->all.nr; i++)
		if (strstr(e->all.v[i], needle))
			return true;
	return false;
}

static void events_release(struct events *e)
{
	strvec_clear(&e->all);
	strvec_clear(&e->lines);
}

static char tmpdir[64];

static int setup_tmp(void **state)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/gdnctl-test-backend.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	setenv("HOME", tmpdir, 1);
	return 0;
}

static int teardown_tmp(void **state)
{
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	p.argv = (const char *[]){"rm", "-rf", tmpdir, NULL};
	gdn_proc_run(&p, &err);
	gdn_proc_release(&p);
	return 0;
}

/* Load YAML into cfg (global schema) and open backend `name`. */
static int open_yaml(struct gdn_config *cfg, const char *yaml, const char *name,
		     struct gdn_backend **b, struct events *ev, struct gdn_err *err)
{
	int ret;

	gdn_config_init(cfg, NULL, 0);
	ret =
	    gdn_config_load_buffer(cfg, "gdnctl.yaml", yaml, strlen(yaml), GDN_SRC_REPO_FILE, err);
	if (ret)
		return ret;
	ret = gdn_backend_open(cfg, name, b, err);
	if (!ret && ev) {
		(*b)->on_event = on_event;
		(*b)->event_payload = ev;
	}
	return ret;
}

/* ---- opening ---- */

static void test_open_builtin_local(void **state)
{
	struct gdn_config cfg;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(open_yaml(&cfg, "{}", "local", &b, NULL, &err), 0);
	assert_string_equal(b->ops->type, "local");
	assert_string_equal(b->name, "local");
	gdn_backend_free(b);
	gdn_config_release(&cfg);
}

static void test_open_unknown(void **state)
{
	struct gdn_config cfg;
	struct gdn_backend *b = (void *)1;
	struct gdn_err err = GDN_ERR_INIT;
	const char *yaml = "backends:\n  box:\n    type: ssh\n    host: box\n";

	assert_int_equal(open_yaml(&cfg, yaml, "nope", &b, NULL, &err), GDN_ENOTFOUND);
	assert_null(b);
	assert_string_equal(err.msg,
			    "unknown backend 'nope' (known: box, local, ray, dev-tpu, iris)");
	gdn_config_release(&cfg);
	/* a type that is not built in by its own name */
	assert_int_equal(open_yaml(&cfg, "{}", "ssh", &b, NULL, &err), GDN_ENOTFOUND);
	gdn_config_release(&cfg);
	/* names that cannot be a section */
	assert_int_equal(open_yaml(&cfg, "{}", "a.b", &b, NULL, &err), GDN_EUSAGE);
	assert_int_equal(gdn_backend_open(&cfg, "--help", &b, &err), GDN_EUSAGE);
	assert_int_equal(gdn_backend_open(&cfg, "", &b, &err), GDN_EUSAGE);
	gdn_config_release(&cfg);
}

static void test_open_config_errors(void **state)
{
	static const struct {
		const char *yaml, *msg;
	} cases[] = {
	    {"backends:\n  box:\n    host: x\n", "'backends.box.type' is not set"},
	    {"backends:\n  box:\n    type: ssh\n", "'backends.box.host' is not set"},
	    {"backends:\n  box:\n    type: ssh\n    host: \"-oProxyCommand=touch pwned\"\n",
	     "gdnctl.yaml:4:11: invalid backends.box.host '-oProxyCommand=touch pwned': it starts "
	     "with '-'"},
	    {"backends:\n  box:\n    type: ssh\n    host: \"a b\"\n", "invalid backends.box.host"},
	    {"backends:\n  box:\n    type: ssh\n    host: \"$(touch pwned)\"\n",
	     "invalid backends.box.host '$(touch pwned)'"},
	    {"backends:\n  box:\n    type: ssh\n    host: h\n    user: \"-lroot\"\n",
	     "invalid backends.box.user"},
	    {"backends:\n  box:\n    type: ssh\n    host: h\n    user: \"`id`\"\n",
	     "invalid backends.box.user '`id`'"},
	    {"backends:\n  box:\n    type: ssh\n    host: h\n    workdir: \"a\\nb\"\n",
	     "invalid backends.box.workdir 'a\\nb': it contains a newline"},
	    {"backends:\n  box:\n    type: ssh\n    host: h\n    port: 70000\n",
	     "'backends.box.port' must be 1 to 65535"},
	    {"backends:\n  box:\n    type: ssh\n    host: h\n    sync: rsync\n",
	     "'backends.box.sync' needs backends.box.workdir"},
	    {"backends:\n  hpc:\n    type: slurm\n    partition: \"a b\"\n",
	     "'backends.hpc.partition' must not contain"},
	    {"backends:\n  hpc:\n    type: slurm\n    job_name: \"x\\n#SBATCH --uid=0\"\n",
	     "'backends.hpc.job_name' must not contain a newline"},
	    {"backends:\n  hpc:\n    type: slurm\n    jobdir: /tmp/%u\n",
	     "'backends.hpc.jobdir' must not contain any of '%'"},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct gdn_config cfg;
		struct gdn_backend *b = NULL;
		struct gdn_err err = GDN_ERR_INIT;
		const char *name = strstr(cases[i].yaml, "hpc") ? "hpc" : "box";

		assert_int_equal(open_yaml(&cfg, cases[i].yaml, name, &b, NULL, &err), GDN_ECONFIG);
		if (!strstr(err.msg, cases[i].msg))
			fail_msg("case %zu: '%s' does not contain '%s'", i, err.msg, cases[i].msg);
		assert_null(strchr(err.msg, '\n'));
		assert_null(b);
		gdn_config_release(&cfg);
	}
}

static void test_config_lookups(void **state)
{
	struct gdn_config cfg;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	const char *yaml = "backends:\n  l:\n    type: local\n    poll: 250ms\n";

	assert_int_equal(open_yaml(&cfg, yaml, "l", &b, NULL, &err), 0);
	assert_int_equal(gdn_backend_int(b, "poll", 0), 250);
	/* schema defaults for keys not set */
	assert_int_equal(gdn_backend_int(b, "kill_grace", 0), 5000);
	assert_string_equal(gdn_backend_str(b, "jobdir"), "~/.cache/gdnctl/jobs");
	assert_null(gdn_backend_str(b, "workdir"));
	assert_int_equal(gdn_backend_list(b, "ssh_options")->nr, 0);
	assert_string_equal(gdn_backend_program(b, "ssh", "x"), "ssh");
	assert_string_equal(gdn_backend_program(b, "nosuch", "fallback"), "fallback");
	gdn_backend_free(b);
	gdn_config_release(&cfg);
}

/* A spec opens a backend without writing into the configuration. */
static void test_open_spec(void **state)
{
	struct gdn_config cfg;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	/* configured keys for the same name still apply where the spec says nothing */
	const char *yaml = "backends:\n  v-0:\n    type: ssh\n    poll: 250ms\n";
	const struct gdn_backend_option opts[] = {
	    {"cluster", "us-central2", NULL}, {"tpu", NULL, NULL}, {"kill_grace", "2s", "--grace"}};
	struct gdn_backend_spec spec = {"v-0", "ray", opts, ARRAY_SIZE(opts), "--flag"};
	const struct gdn_backend_option bad_opts[] = {{"cluster", "a b", NULL}};
	const struct gdn_backend_option bad_value[] = {{"kill_grace", "soon", "--grace"}};
	size_t nr;

	(void)state;
	gdn_config_init(&cfg, NULL, 0);
	assert_int_equal(gdn_config_load_buffer(&cfg, "gdnctl.yaml", yaml, strlen(yaml),
						GDN_SRC_REPO_FILE, &err),
			 0);
	nr = cfg.nr;
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), 0);
	assert_string_equal(b->ops->type, "ray");
	assert_string_equal(b->name, "v-0");
	assert_string_equal(gdn_backend_str(b, "cluster"), "us-central2");
	assert_string_equal(gdn_backend_origin(b, "cluster"), "--flag");
	assert_int_equal(gdn_backend_int(b, "kill_grace", 0), 2000);
	assert_string_equal(gdn_backend_origin(b, "kill_grace"), "--grace");
	assert_int_equal(gdn_backend_int(b, "poll", 0), 250);			/* from cfg */
	assert_string_equal(gdn_backend_origin(b, "poll"), "gdnctl.yaml:4:11"); /* from cfg */
	assert_null(gdn_backend_str(b, "tpu")); /* a NULL value is left out */
	assert_int_equal(cfg.nr, nr);		/* the configuration is untouched */
	assert_null(gdn_config_get(&cfg, "backends.v-0.cluster"));
	assert_string_equal(gdn_config_str(&cfg, "backends.v-0.type"), "ssh");
	gdn_backend_free(b);
	b = NULL;

	/* the type's own checks see the spec's values, with the spec's origin */
	spec.options = bad_opts;
	spec.options_nr = ARRAY_SIZE(bad_opts);
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "--flag"));
	assert_non_null(strstr(err.msg, "'a b'"));
	assert_null(b);
	/* values are checked like configuration */
	spec.options = bad_value;
	spec.options_nr = ARRAY_SIZE(bad_value);
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), GDN_EUSAGE);
	assert_non_null(strstr(err.msg, "--grace"));
	assert_int_equal(err.code, GDN_EUSAGE);
	assert_null(b);
	/* no type: the name's, as gdn_backend_open (configured here as ssh without a host) */
	spec.options_nr = 0;
	spec.type = NULL;
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "'backends.v-0.host' is not set"));
	spec.name = "local";
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), 0);
	assert_string_equal(b->ops->type, "local");
	gdn_backend_free(b);
	b = NULL;
	spec.name = "nope";
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), GDN_ENOTFOUND);
	spec.name = "v-0";
	/* a type that does not exist, a name that cannot be one */
	spec.options_nr = 0;
	spec.type = "nosuch";
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), GDN_ECONFIG);
	assert_string_equal(
	    err.msg, "--flag: backend type 'nosuch' of 'v-0' is not available in this build");
	spec.type = "local";
	spec.name = "a.b";
	assert_int_equal(gdn_backend_open_spec(&cfg, &spec, &b, &err), GDN_EUSAGE);
	assert_null(b);
	assert_int_equal(cfg.nr, nr);
	gdn_config_release(&cfg);
}

/* ---- small helpers ---- */

static void test_format_duration(void **state)
{
	struct sbuf sb = SBUF_INIT;
	static const struct {
		long long ms;
		const char *text, *elapsed;
	} cases[] = {
	    {0, "0s", "0s"},
	    {50, "0.05s", "0s"},
	    {999, "0.999s", "0s"},
	    {1500, "1.5s", "1s"},
	    {45000, "45s", "45s"},
	    {59999, "59.999s", "59s"},
	    {90000, "1m30s", "1m30s"},
	    {90500, "1m30s", "1m30s"},
	    {600000, "10m00s", "10m00s"},
	    {3600000, "1h00m", "1h00m"},
	    {7530000, "2h05m", "2h05m"},
	    {-5, "0s", "0s"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		sbuf_reset(&sb);
		sbuf_adds(&sb, "after ");
		gdn_format_duration(cases[i].ms, &sb);
		assert_string_equal(sb.buf + 6, cases[i].text);
		sbuf_reset(&sb);
		gdn_format_elapsed(cases[i].ms, &sb);
		assert_string_equal(sb.buf, cases[i].elapsed);
	}
	sbuf_release(&sb);
}

static void test_follow(void **state)
{
	struct events e = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_follow f = GDN_FOLLOW_INIT;

	f.on_line = on_line;
	f.payload = &e;
	gdn_follow_feed(&f, "one\ntw", 6);
	assert_int_equal(e.lines.nr, 1);
	gdn_follow_feed(&f, "o\n\nthree", 8);
	assert_int_equal(f.offset, 14);
	assert_int_equal(e.lines.nr, 3);
	assert_string_equal(e.lines.v[1], "two");
	assert_string_equal(e.lines.v[2], "");
	gdn_follow_flush(&f);
	assert_int_equal(e.lines.nr, 4);
	assert_string_equal(e.lines.v[3], "three");
	gdn_follow_flush(&f);
	assert_int_equal(e.lines.nr, 4);
	gdn_follow_release(&f);
	events_release(&e);
}

static void test_emit_lines(void **state)
{
	struct events e = {STRVEC_INIT, STRVEC_INIT};
	const char *text = "a\nb\nc\nd\n";

	gdn_emit_lines(text, strlen(text), 2, on_line, &e);
	assert_int_equal(e.lines.nr, 2);
	assert_string_equal(e.lines.v[0], "c");
	assert_string_equal(e.lines.v[1], "d");
	strvec_clear(&e.lines);
	gdn_emit_lines(text, strlen(text), 0, on_line, &e);
	assert_int_equal(e.lines.nr, 4);
	strvec_clear(&e.lines);
	gdn_emit_lines("x\ny", 3, 10, on_line, &e);
	assert_int_equal(e.lines.nr, 2);
	assert_string_equal(e.lines.v[1], "y");
	strvec_clear(&e.lines);
	gdn_emit_lines("", 0, 3, on_line, &e);
	assert_int_equal(e.lines.nr, 0);
	events_release(&e);
}

/* ---- the poll loop ---- */

struct script {
	const char *const *states; /* one per poll; the last repeats */
	int n, polls, fail_first;
};

static int scripted_poll(struct gdn_backend *b, void *ctx, const char *job_id, struct gdn_follow *f,
			 struct gdn_job_status *st, struct gdn_err *err)
{
	struct script *s = ctx;
	const char *name = s->states[s->polls < s->n ? s->polls : s->n - 1];

	s->polls++;
	if (s->polls <= s->fail_first)
		return gdn_err_set(err, GDN_EBACKEND, "connection refused");
	if (!strcmp(name, "DONE"))
		gdn_job_status_set(st, GDN_JOB_SUCCEEDED, "COMPLETED", 0);
	else if (!strcmp(name, "FAIL"))
		gdn_job_status_set(st, GDN_JOB_FAILED, "TIMEOUT", 143);
	else
		gdn_job_status_set(st, GDN_JOB_RUNNING, name, -1);
	if (f) {
		char line[32];

		snprintf(line, sizeof(line), "poll %d\n", s->polls);
		gdn_follow_feed(f, line, strlen(line));
	}
	return 0;
}

static void test_poll_wait(void **state)
{
	static const char *const states[] = {"PENDING", "PENDING", "RUNNING", "RUNNING", "DONE"};
	struct script s = {states, 5, 0, 0};
	struct gdn_backend b = {.name = (char *)"hpc"};
	struct events e = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_wait_spec w = {.poll_ms = 10, .show_logs = true};
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	b.on_event = on_event;
	b.event_payload = &e;
	w.on_line = on_line;
	w.payload = &e;
	assert_int_equal(gdn_backend_poll_wait(&b, "12", &w, 1000, scripted_poll, &s, &st, &err),
			 0);
	assert_int_equal(st.state, GDN_JOB_SUCCEEDED);
	assert_int_equal(s.polls, 5);
	/* one WAITING per state (the state changes; progress_ms is a minute) */
	assert_int_equal(e.all.nr, 2);
	assert_string_equal(e.all.v[0], "WAITING: waiting for job 12 on hpc (PENDING) for 0s");
	assert_true(has_event(&e, "(RUNNING)"));
	assert_int_equal(e.lines.nr, 5);
	assert_string_equal(e.lines.v[4], "poll 5");
	assert_false(b.quiet_polls);
	events_release(&e);
}

static void test_poll_wait_progress_and_retry(void **state)
{
	static const char *const states[] = {"RUNNING", "RUNNING", "RUNNING", "FAIL"};
	struct script s = {states, 4, 0, 2};
	struct gdn_backend b = {.name = (char *)"hpc"};
	struct events e = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_wait_spec w = {.poll_ms = 10, .progress_ms = 1};
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	b.on_event = on_event;
	b.event_payload = &e;
	assert_int_equal(gdn_backend_poll_wait(&b, "12", &w, 1000, scripted_poll, &s, &st, &err),
			 0);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_string_equal(st.native, "TIMEOUT");
	assert_string_equal(e.all.v[0],
			    "INFO: polling job 12 failed (connection refused); retrying");
	assert_string_equal(e.all.v[1],
			    "INFO: polling job 12 failed (connection refused); retrying");
	/* progress every poll: polls 3 and 4 were RUNNING... */
	assert_true(has_event(&e, "WAITING: waiting for job 12 on hpc (RUNNING)"));
	events_release(&e);

	/* four failures in a row: the error */
	s = (struct script){states, 4, 0, 4};
	assert_int_equal(gdn_backend_poll_wait(&b, "12", &w, 1000, scripted_poll, &s, &st, &err),
			 GDN_EBACKEND);
	assert_string_equal(err.msg, "connection refused");
	events_release(&e);
}

static void test_poll_wait_timeout(void **state)
{
	static const char *const states[] = {"RUNNING"};
	struct script s = {states, 1, 0, 0};
	struct gdn_backend b = {.name = (char *)"hpc"};
	struct gdn_wait_spec w = {.poll_ms = 20, .timeout_ms = 100};
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	int64_t t0 = gdn_now_ms();

	assert_int_equal(gdn_backend_poll_wait(&b, "12", &w, 1000, scripted_poll, &s, &st, &err),
			 GDN_ETIMEOUT);
	assert_true(gdn_now_ms() - t0 < 2000);
	assert_string_equal(err.msg, "timed out after 0.1s waiting for job 12 on hpc (RUNNING)");
	assert_int_equal(st.state, GDN_JOB_RUNNING);
}

/* ---- echo and secrets ---- */

static void test_echo_masks_secrets(void **state)
{
	struct gdn_config cfg;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct events e = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	const char *env[] = {"HF_TOKEN=hf_s3cr3t", "MY_PASSWORD=it's a secret", "PLAIN=visible",
			     NULL};
	const char *argv[] = {"echo", "hi", NULL};
	struct gdn_run_spec spec = {.argv = argv, .env = env, .dry_run = true};
	const char *yaml = "backends:\n  box:\n    type: ssh\n    host: box.example.com\n"
			   "    user: alice\n    port: 2222\n    workdir: ~/marin\n";

	assert_int_equal(open_yaml(&cfg, yaml, "box", &b, &e, &err), 0);
	assert_int_equal(b->ops->run(b, &spec, &st, &err), 0);
	assert_int_equal(e.all.nr, 1);
	assert_non_null(strstr(e.all.v[0], "SPAWN: ssh -o BatchMode=yes -p 2222 -l alice "
					   "box.example.com -- 'cd -- \"$HOME\"/marin && env "));
	assert_non_null(strstr(e.all.v[0], "PLAIN=visible"));
	assert_null(strstr(e.all.v[0], "s3cr3t"));
	assert_null(strstr(e.all.v[0], "secret"));
	assert_non_null(strstr(e.all.v[0], "***"));
	assert_int_equal(st.state, GDN_JOB_UNKNOWN);
	gdn_backend_free(b);
	gdn_config_release(&cfg);
	events_release(&e);
}

/* A second tree (--perf-ab's champion): ssh copies it to, and runs it in, WORKDIR + suffix. */
static void test_ssh_second_tree(void **state)
{
	static const struct {
		const char *workdir, *mkdir, *dest, *cd;
	} cases[] = {
	    {"~/marin", "mkdir -p -- \"$HOME\"/marin.gdnctl-champion",
	     "box.example.com:marin.gdnctl-champion/", "cd -- \"$HOME\"/marin.gdnctl-champion &&"},
	    {"~", "mkdir -p -- \"$HOME\"/.gdnctl-champion", "box.example.com:.gdnctl-champion/",
	     "cd -- \"$HOME\"/.gdnctl-champion &&"},
	    {"/srv/wd/", "mkdir -p -- /srv/wd.gdnctl-champion",
	     "box.example.com:/srv/wd.gdnctl-champion/", "cd -- /srv/wd.gdnctl-champion &&"},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct gdn_config cfg;
		struct gdn_backend *b = NULL;
		struct gdn_err err = GDN_ERR_INIT;
		struct events e = {STRVEC_INIT, STRVEC_INIT};
		struct gdn_job_status st = GDN_JOB_STATUS_INIT;
		const char *argv[] = {"true", NULL};
		struct gdn_run_spec spec = {.argv = argv, .dry_run = true};
		char *yaml = xstrfmt("backends:\n  box:\n    type: ssh\n    host: box.example.com\n"
				     "    sync: rsync\n    workdir: \"%s\"\n",
				     cases[i].workdir);

		assert_int_equal(open_yaml(&cfg, yaml, "box", &b, &e, &err), 0);
		assert_null(gdn_backend_second_tree_refusal(b));
		b->repo_root = "/repo/champion";
		b->copy_suffix = ".gdnctl-champion";
		assert_int_equal(b->ops->run(b, &spec, &st, &err), 0);
		assert_int_equal(e.all.nr, 3);
		assert_non_null(strstr(e.all.v[0], cases[i].mkdir));
		assert_non_null(strstr(e.all.v[1], " /repo/champion/ "));
		assert_non_null(strstr(e.all.v[1], cases[i].dest));
		assert_non_null(strstr(e.all.v[2], cases[i].cd));
		/* without the suffix: the workdir itself */
		b->copy_suffix = NULL;
		assert_int_equal(b->ops->run(b, &spec, &st, &err), 0);
		assert_null(strstr(e.all.v[e.all.nr - 1], "gdnctl-champion"));
		gdn_backend_free(b);
		gdn_config_release(&cfg);
		events_release(&e);
		free(yaml);
	}
}

/* Which backends can run a second tree apart from the first. */
static void test_second_tree_refusal(void **state)
{
	static const struct {
		const char *yaml;
		bool ok;
	} cases[] = {
	    {"{}", true}, /* local */
	    {"backends:\n  x:\n    type: ssh\n    host: h\n", false},
	    {"backends:\n  x:\n    type: ssh\n    host: h\n    sync: rsync\n    workdir: w\n",
	     true},
	    {"backends:\n  x:\n    type: slurm\n", false},
	    {"backends:\n  x:\n    type: slurm\n    workdir: .\n", true},
	    {"backends:\n  x:\n    type: slurm\n    workdir: /scratch/wd\n", false},
	    {"backends:\n  x:\n    type: slurm\n    workdir: ~/wd\n", false},
	    {"backends:\n  x:\n    type: ray\n", true},
	    {"backends:\n  x:\n    type: ray\n    cli: ray\n", false},
	    {"backends:\n  x:\n    type: dev-tpu\n    tpu_name: me\n", false},
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct gdn_config cfg;
		struct gdn_backend *b = NULL;
		struct gdn_err err = GDN_ERR_INIT;
		const char *why;

		assert_int_equal(open_yaml(&cfg, cases[i].yaml, i ? "x" : "local", &b, NULL, &err),
				 0);
		why = gdn_backend_second_tree_refusal(b);
		if (cases[i].ok)
			assert_null(why);
		else
			assert_true(why && *why);
		gdn_backend_free(b);
		gdn_config_release(&cfg);
	}
}

/* ---- the local backend, for real ---- */

static void test_local_run(void **state)
{
	struct gdn_config cfg;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct events e = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	const char *env[] = {"GREETING=hello there", NULL};
	struct gdn_run_spec spec = {.shell = "echo \"$GREETING\"; exit 3", .env = env};

	spec.on_line = on_line;
	spec.payload = &e;
	assert_int_equal(open_yaml(&cfg, "{}", "local", &b, &e, &err), 0);
	assert_int_equal(b->ops->run(b, &spec, &st, &err), 0);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_int_equal(st.exit_code, 3);
	assert_int_equal(gdn_job_exit_code(&st), 3);
	assert_string_equal(e.lines.v[0], "hello there");
	assert_string_equal(e.all.v[0], "SPAWN: env 'GREETING=hello there' bash -c 'echo "
					"\"$GREETING\"; exit 3'");

	spec =
	    (struct gdn_run_spec){.argv = (const char *[]){"sleep", "10", NULL}, .timeout_ms = 200};
	assert_int_equal(b->ops->run(b, &spec, &st, &err), 0);
	assert_int_equal(st.state, GDN_JOB_TIMEOUT);
	assert_int_equal(gdn_job_exit_code(&st), 124);

	spec = (struct gdn_run_spec){.argv = (const char *[]){"/nonexistent/prog", NULL}};
	assert_int_equal(b->ops->run(b, &spec, &st, &err), 0);
	assert_int_equal(st.exit_code, 127);
	gdn_backend_free(b);
	gdn_config_release(&cfg);
	events_release(&e);
}

static void test_local_jobs(void **state)
{
	struct gdn_config cfg;
	struct gdn_backend *b = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct events e = {STRVEC_INIT, STRVEC_INIT};
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	const char *argv[] = {"sh", "-c", "echo first; sleep 0.3; echo second; exit 4", NULL};
	struct gdn_run_spec spec = {.argv = argv};
	struct gdn_wait_spec w = {.poll_ms = 100, .show_logs = true};
	char *id = NULL;

	w.on_line = on_line;
	w.payload = &e;
	assert_int_equal(open_yaml(&cfg, "{}", "local", &b, &e, &err), 0);
	assert_int_equal(b->ops->submit(b, &spec, &id, &err), 0);
	assert_non_null(id);
	assert_int_equal(gdn_check_job_id(id, GDN_EUSAGE, &err), 0);
	assert_int_equal(b->ops->wait(b, id, &w, &st, &err), 0);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_int_equal(st.exit_code, 4);
	assert_int_equal(e.lines.nr, 2);
	assert_string_equal(e.lines.v[1], "second");
	strvec_clear(&e.lines);
	assert_int_equal(b->ops->logs(b, id, 1, on_line, &e, &err), 0);
	assert_int_equal(e.lines.nr, 1);
	assert_string_equal(e.lines.v[0], "second");
	free(id);
	id = NULL;

	/* stop: the whole process group goes, the state says so */
	spec.argv = (const char *[]){"sh", "-c", "sleep 30 & sleep 31; echo never", NULL};
	assert_int_equal(b->ops->submit(b, &spec, &id, &err), 0);
	assert_int_equal(b->ops->status(b, id, &st, &err), 0);
	assert_false(st.final);
	assert_int_equal(b->ops->stop(b, id, &err), 0);
	assert_int_equal(b->ops->status(b, id, &st, &err), 0);
	assert_int_equal(st.state, GDN_JOB_STOPPED);
	assert_true(has_event(&e, "INFO: stopped job"));
	assert_int_equal(b->ops->stop(b, id, &err), 0);
	assert_true(has_event(&e, "had already finished: STOPPED"));
	free(id);

	/* unknown and malformed ids */
	assert_int_equal(b->ops->status(b, "nosuch", &st, &err), GDN_ENOTFOUND);
	assert_int_equal(b->ops->stop(b, "nosuch", &err), GDN_ENOTFOUND);
	assert_int_equal(b->ops->logs(b, "../x", 0, on_line, &e, &err), GDN_EUSAGE);
	gdn_backend_free(b);
	gdn_config_release(&cfg);
	events_release(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_open_builtin_local),
	    cmocka_unit_test(test_open_unknown),
	    cmocka_unit_test(test_open_config_errors),
	    cmocka_unit_test(test_config_lookups),
	    cmocka_unit_test(test_open_spec),
	    cmocka_unit_test(test_format_duration),
	    cmocka_unit_test(test_follow),
	    cmocka_unit_test(test_emit_lines),
	    cmocka_unit_test(test_poll_wait),
	    cmocka_unit_test(test_poll_wait_progress_and_retry),
	    cmocka_unit_test(test_poll_wait_timeout),
	    cmocka_unit_test(test_echo_masks_secrets),
	    cmocka_unit_test(test_ssh_second_tree),
	    cmocka_unit_test(test_second_tree_refusal),
	    cmocka_unit_test(test_local_run),
	    cmocka_unit_test(test_local_jobs),
	};

	return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
