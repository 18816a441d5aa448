/*
 * Unit tests for the child-process API (src/util/proc.c) and secret
 * masking (src/util/secret.c). Children are sh one-liners; timeouts are
 * a few hundred milliseconds so the whole file runs in a few seconds.
 *
 * main() makes this process a child subreaper, so grandchildren orphaned
 * by a killed child are re-parented to us and gdn_proc_run can reap them
 * deterministically, and ignores SIGPIPE, so the tests also show that the
 * child gets SIGPIPE back at its default.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

/* ---- helpers ---- */

struct collect {
	struct strvec lines;
	const char *stop_at;  /* return 1 on this line */
	const char *raise_at; /* raise(SIGINT) on this line */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool ready; /* some line arrived */
};

static void collect_init(struct collect *c)
{
	memset(c, 0, sizeof(*c));
	strvec_init(&c->lines);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
}

static void collect_release(struct collect *c)
{
	strvec_clear(&c->lines);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv);
}

/* No cmocka asserts here: it may run on another thread. */
static int collect_line(const char *line, size_t len, void *payload)
{
	struct collect *c = payload;
	int stop = 0;

	pthread_mutex_lock(&c->mu);
	if (line[len] != '\0' || strlen(line) != len)
		strvec_push(&c->lines, "<bad line termination>");
	else
		strvec_push(&c->lines, line);
	c->ready = true;
	pthread_cond_broadcast(&c->cv);
	if (c->stop_at && !strcmp(line, c->stop_at))
		stop = 1;
	pthread_mutex_unlock(&c->mu);
	if (c->raise_at && !strcmp(line, c->raise_at))
		raise(SIGINT);
	return stop;
}

static void proc_for(struct gdn_proc *p, const char *const *argv, struct collect *c)
{
	*p = (struct gdn_proc)GDN_PROC_INIT;
	p->argv = argv;
	p->kill_grace_ms = 200;
	p->timeout_ms = 20000; /* a safety net: no test may hang */
	p->capture = true;
	if (c) {
		p->on_line = collect_line;
		p->payload = c;
	}
}

static char *make_tmpdir(void)
{
	char *dir = xstrdup("/tmp/gdnctl-test-proc.XXXXXX");

	assert_non_null(mkdtemp(dir));
	return dir;
}

static char *path_in(const char *dir, const char *name)
{
	return xstrfmt("%s/%s", dir, name);
}

static bool pid_gone(pid_t pid)
{
	return kill(pid, 0) < 0 && errno == ESRCH;
}

/* ---- exit status, signals, dispositions ---- */

static void exit_code_is_reported(void **state)
{
	const char *argv[] = {"sh", "-c", "exit 7", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	proc_for(&p, argv, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 7);
	assert_int_equal(p.signo, 0);
	assert_int_equal(gdn_proc_exit_code(&p), 7);
	assert_true(p.pid > 0);
	assert_true(p.duration_ms >= 0 && p.duration_ms < 10000);
	assert_int_equal(gdn_proc_live_count(), 0);
	gdn_proc_release(&p);
}

static void signal_death_with_blocked_mask(void **state)
{
	const char *argv[] = {"sh", "-c", "kill -TERM $$; echo survived", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;
	sigset_t term, old;

	/* Our mask blocks SIGTERM; the child's must not. */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, &old);
	proc_for(&p, argv, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	assert_int_equal(p.status_kind, GDN_PROC_SIGNALED);
	assert_int_equal(p.signo, SIGTERM);
	assert_int_equal(gdn_proc_exit_code(&p), 128 + SIGTERM);
	assert_null(strstr(p.out.buf, "survived"));
	gdn_proc_release(&p);
}

static void ignored_signal_is_reset_in_child(void **state)
{
	/* A shell started with SIGINT ignored cannot un-ignore it: we must reset it. */
	const char *argv[] = {"sh", "-c", "kill -INT $$; echo survived", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	struct gdn_proc p;

	sigaction(SIGINT, &ign, &old);
	proc_for(&p, argv, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	sigaction(SIGINT, &old, NULL);
	assert_int_equal(p.status_kind, GDN_PROC_SIGNALED);
	assert_int_equal(p.signo, SIGINT);
	assert_null(strstr(p.out.buf, "survived"));
	gdn_proc_release(&p);
}

/* ---- timeouts ---- */

static void timeout_kills_group_and_grandchild(void **state)
{
	/* The shell and its background sleep ignore SIGINT and SIGTERM: only SIGKILL works. */
	char *dir = make_tmpdir(), *pidfile = path_in(dir, "pid");
	const char *argv[] = {
	    "sh", "-c",	   "trap '' INT TERM; sleep 100 & echo $! > \"$1\"; echo started; wait",
	    "sh", pidfile, NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf pidtext = SBUF_INIT;
	struct collect c;
	struct gdn_proc p;
	long grandchild;
	int i;

	collect_init(&c);
	proc_for(&p, argv, &c);
	p.timeout_ms = 300;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_TIMEOUT);
	assert_int_equal(gdn_proc_exit_code(&p), 124);
	assert_int_equal(p.signo, SIGKILL);
	/* SIGINT at 300 ms, SIGTERM at 500, SIGKILL at 700. */
	assert_true(p.duration_ms >= 650);
	assert_true(p.duration_ms < 5000);
	assert_int_equal(c.lines.nr, 1);
	assert_string_equal(c.lines.v[0], "started");

	assert_int_equal(sbuf_read_file(&pidtext, pidfile, 0, &err), 0);
	grandchild = strtol(pidtext.buf, NULL, 10);
	assert_true(grandchild > 1);
	/* gdn_proc_run waited for the group to be empty (and reaped what it re-parented). */
	for (i = 0; i < 100 && !pid_gone((pid_t)grandchild); i++) {
		waitpid((pid_t)grandchild, NULL, WNOHANG);
		poll(NULL, 0, 10);
	}
	assert_true(pid_gone((pid_t)grandchild));
	assert_int_equal(i, 0); /* gone at once, not after our own polling */
	assert_int_equal(gdn_proc_live_count(), 0);

	unlink(pidfile);
	rmdir(dir);
	free(pidfile);
	free(dir);
	sbuf_release(&pidtext);
	collect_release(&c);
	gdn_proc_release(&p);
}

static void group_signalled_until_empty(void **state)
{
	/*
	 * The shell dies at the first SIGINT, but its background sleep ignores
	 * SIGINT (as every async list of a non-interactive shell does): the
	 * group must get SIGTERM after the grace although the leader is gone.
	 */
	char *dir = make_tmpdir(), *pidfile = path_in(dir, "pid");
	const char *argv[] = {"sh", "-c",    "sleep 100 & echo $! > \"$1\"; echo started; wait",
			      "sh", pidfile, NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf pidtext = SBUF_INIT;
	struct gdn_proc p;
	long grandchild;

	proc_for(&p, argv, NULL);
	p.timeout_ms = 300;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_TIMEOUT);
	assert_int_equal(p.signo, SIGINT);
	assert_true(p.duration_ms >= 450); /* SIGTERM went out at 500 ms */
	assert_true(p.duration_ms < 5000);
	assert_string_equal(p.out.buf, "started\n");
	assert_int_equal(sbuf_read_file(&pidtext, pidfile, 0, &err), 0);
	grandchild = strtol(pidtext.buf, NULL, 10);
	assert_true(grandchild > 1);
	assert_true(pid_gone((pid_t)grandchild));

	unlink(pidfile);
	rmdir(dir);
	free(pidfile);
	free(dir);
	sbuf_release(&pidtext);
	gdn_proc_release(&p);
}

static void timeout_sigint_is_enough(void **state)
{
	const char *argv[] = {"sleep", "100", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	proc_for(&p, argv, NULL);
	p.timeout_ms = 200;
	p.kill_grace_ms = 3000;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_TIMEOUT);
	assert_int_equal(p.signo, SIGINT);
	assert_true(p.duration_ms >= 190 && p.duration_ms < 2500);
	gdn_proc_release(&p);
}

static void idle_timeout_after_a_line(void **state)
{
	const char *argv[] = {"sh", "-c", "echo hello; sleep 100", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	collect_init(&c);
	proc_for(&p, argv, &c);
	p.idle_timeout_ms = 300;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_IDLE);
	assert_int_equal(gdn_proc_exit_code(&p), 124);
	assert_true(p.duration_ms >= 290 && p.duration_ms < 5000);
	assert_int_equal(c.lines.nr, 1);
	assert_string_equal(c.lines.v[0], "hello");
	assert_string_equal(p.out.buf, "hello\n");
	collect_release(&c);
	gdn_proc_release(&p);
}

static void idle_timer_reset_by_output(void **state)
{
	/* 6 lines 100 ms apart: 600 ms in all, never 350 ms silent. */
	const char *argv[] = {"sh", "-c", "for i in 1 2 3 4 5 6; do echo $i; sleep 0.1; done",
			      NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	collect_init(&c);
	proc_for(&p, argv, &c);
	p.idle_timeout_ms = 350;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 0);
	assert_true(p.duration_ms >= 550);
	assert_int_equal(c.lines.nr, 6);
	assert_string_equal(c.lines.v[5], "6");
	collect_release(&c);
	gdn_proc_release(&p);
}

/* ---- I/O ---- */

struct line_count {
	size_t n, good;
	char last[64];
};

static int count_line(const char *line, size_t len, void *payload)
{
	struct line_count *cnt = payload;

	cnt->n++;
	if (len == 9 && !memcmp(line, "012345678", 9))
		cnt->good++;
	if (len < sizeof(cnt->last))
		memcpy(cnt->last, line, len + 1);
	return 0;
}

static void big_output_while_feeding_stdin(void **state)
{
	/*
	 * The child writes 10 MB before it reads any stdin; we must keep
	 * reading while our stdin writes would block, or both sides hang.
	 */
	const char *argv[] = {"sh", "-c", "yes 012345678 | head -c 10000000; wc -c", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	const size_t in_len = 1000000, out_len = 10000000;
	struct line_count cnt = {0};
	struct sbuf last = SBUF_INIT;
	char *input = xmalloc(in_len);
	struct gdn_proc p;

	memset(input, 'i', in_len);
	proc_for(&p, argv, NULL);
	p.on_line = count_line;
	p.payload = &cnt;
	p.stdin_text = input;
	p.stdin_len = in_len;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 0);
	assert_false(p.out_truncated);
	assert_true(p.out.len > out_len);
	assert_int_equal(memcmp(p.out.buf, "012345678\n", 10), 0);
	assert_null(strstr(p.out.buf + out_len, "Broken pipe"));
	sbuf_add(&last, p.out.buf + out_len, p.out.len - out_len);
	sbuf_trim(&last);
	assert_string_equal(last.buf, "1000000");
	assert_int_equal(cnt.n, out_len / 10 + 1);
	assert_int_equal(cnt.good, out_len / 10);
	assert_non_null(strstr(cnt.last, "1000000")); /* the wc line */
	sbuf_release(&last);
	free(input);
	gdn_proc_release(&p);
}

static void stdin_text_is_fed_and_closed(void **state)
{
	const char *argv[] = {"cat", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	collect_init(&c);
	proc_for(&p, argv, &c);
	p.stdin_text = "hello\nworld";
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_string_equal(p.out.buf, "hello\nworld");
	assert_int_equal(c.lines.nr, 2);
	assert_string_equal(c.lines.v[0], "hello");
	assert_string_equal(c.lines.v[1], "world");
	collect_release(&c);
	gdn_proc_release(&p);
}

static int nap_on_line(const char *line, size_t len, void *payload)
{
	poll(NULL, 0, 300);
	return 0;
}

static void unread_stdin_raises_no_sigpipe(void **state)
{
	/*
	 * While on_line naps, the child reads one pipe-full of our 1 MB stdin
	 * and exits: the pipe then has room and no reader, so our next write
	 * fails with EPIPE. SIGPIPE is at its default here and must not kill us.
	 */
	const char *argv[] = {"sh", "-c", "echo a; head -c 65536 >/dev/null", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	const size_t len = 1000000;
	char *input = xmalloc(len);
	sigset_t pending;
	struct gdn_proc p;
	int i;

	memset(input, 'i', len);
	signal(SIGPIPE, SIG_DFL);
	for (i = 0; i < 3; i++) {
		proc_for(&p, argv, NULL);
		p.on_line = nap_on_line;
		p.stdin_text = input;
		p.stdin_len = len;
		assert_int_equal(gdn_proc_run(&p, &err), 0);
		assert_int_equal(p.status_kind, GDN_PROC_EXITED);
		assert_int_equal(p.code, 0);
		assert_string_equal(p.out.buf, "a\n");
		gdn_proc_release(&p);
	}
	sigpending(&pending);
	assert_false(sigismember(&pending, SIGPIPE));
	signal(SIGPIPE, SIG_IGN);
	free(input);
}

static void stdin_defaults_to_dev_null(void **state)
{
	const char *argv[] = {"sh", "-c", "cat; echo done", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	proc_for(&p, argv, NULL);
	p.timeout_ms = 5000;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_string_equal(p.out.buf, "done\n");
	gdn_proc_release(&p);
}

static void lines_split_across_chunks(void **state)
{
	const char *argv[] = {
	    "sh", "-c", "printf ab; sleep 0.1; printf 'c\\nde'; sleep 0.1; printf 'f\\n\\nlast'",
	    NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	collect_init(&c);
	proc_for(&p, argv, &c);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(c.lines.nr, 4);
	assert_string_equal(c.lines.v[0], "abc");
	assert_string_equal(c.lines.v[1], "def");
	assert_string_equal(c.lines.v[2], "");
	assert_string_equal(c.lines.v[3], "last");
	assert_string_equal(p.out.buf, "abc\ndef\n\nlast");
	collect_release(&c);
	gdn_proc_release(&p);
}

static void stderr_is_merged(void **state)
{
	const char *argv[] = {"sh", "-c", "echo out; echo err >&2; echo out2", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	proc_for(&p, argv, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_string_equal(p.out.buf, "out\nerr\nout2\n");
	gdn_proc_release(&p);
}

static void capture_limit_truncates(void **state)
{
	const char *argv[] = {"sh", "-c",
			      "i=0; while [ $i -lt 50 ]; do echo 0123456789012345678; "
			      "i=$((i+1)); done",
			      NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	collect_init(&c);
	proc_for(&p, argv, &c);
	p.out.limit = 100;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.out.len, 100);
	assert_true(p.out_truncated);
	assert_int_equal(c.lines.nr, 50); /* streaming is not capped */
	gdn_proc_release(&p);

	/* Under the limit: not truncated. */
	strvec_clear(&c.lines);
	proc_for(&p, argv, &c);
	p.out.limit = 1000;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.out.len, 1000);
	assert_false(p.out_truncated);
	collect_release(&c);
	gdn_proc_release(&p);
}

static void long_line_is_delivered_in_pieces(void **state)
{
	/* 2.5 MiB without a newline, then "x\n". */
	const char *argv[] = {"sh", "-c", "head -c 2621440 /dev/zero | tr '\\0' a; echo x", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	collect_init(&c);
	proc_for(&p, argv, &c);
	p.capture = false;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.out.len, 0);
	assert_int_equal(c.lines.nr, 3);
	assert_int_equal(strlen(c.lines.v[0]), GDN_PROC_LINE_MAX);
	assert_int_equal(strlen(c.lines.v[1]), GDN_PROC_LINE_MAX);
	assert_int_equal(strlen(c.lines.v[2]), 2621440 - 2 * GDN_PROC_LINE_MAX + 1);
	assert_int_equal(c.lines.v[2][strlen(c.lines.v[2]) - 1], 'x');
	collect_release(&c);
	gdn_proc_release(&p);
}

/* ---- environment, directory, lookup ---- */

static void env_set_and_remove(void **state)
{
	const char *argv[] = {"sh", "-c",
			      "echo \"${GDN_TEST_NEW-unset}/${GDN_TEST_DROP-unset}/"
			      "${GDN_TEST_KEEP-unset}/${GDN_TEST_OVER-unset}\"",
			      NULL};
	const char *env[] = {"GDN_TEST_NEW=new", "GDN_TEST_DROP", "GDN_TEST_OVER=over=2", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	setenv("GDN_TEST_DROP", "drop", 1);
	setenv("GDN_TEST_KEEP", "keep", 1);
	setenv("GDN_TEST_OVER", "old", 1);
	proc_for(&p, argv, NULL);
	p.env = env;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_string_equal(p.out.buf, "new/unset/keep/over=2\n");
	/* Our own environment is untouched. */
	assert_string_equal(getenv("GDN_TEST_DROP"), "drop");
	assert_string_equal(getenv("GDN_TEST_OVER"), "old");
	assert_null(getenv("GDN_TEST_NEW"));
	unsetenv("GDN_TEST_DROP");
	unsetenv("GDN_TEST_KEEP");
	unsetenv("GDN_TEST_OVER");
	gdn_proc_release(&p);
}

static void working_directory(void **state)
{
	char *dir = make_tmpdir(), *real = realpath(dir, NULL), *expect;
	const char *argv[] = {"pwd", "-P", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	assert_non_null(real);
	expect = xstrfmt("%s\n", real);
	proc_for(&p, argv, NULL);
	p.dir = dir;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_string_equal(p.out.buf, expect);
	rmdir(dir);
	free(expect);
	free(real);
	free(dir);
	gdn_proc_release(&p);
}

static void path_lookup_uses_child_env(void **state)
{
	char *dir = make_tmpdir(), *fake = path_in(dir, "gdn-fake-prog"),
	     *plain = path_in(dir, "gdn-no-shebang"), *path;
	const char *argv1[] = {"gdn-fake-prog", "a b", NULL};
	const char *argv2[] = {"gdn-no-shebang", "arg", NULL};
	const char *env[] = {NULL, NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	unit_write_file(NULL, fake, "#!/bin/sh\necho \"fake:$1\"\n", 0755);
	unit_write_file(NULL, plain, "echo \"no shebang:$1\"\n", 0755);
	path = xstrfmt("PATH=/nonexistent-gdn:%s:/usr/bin:/bin", dir);
	env[0] = path;

	proc_for(&p, argv1, NULL);
	p.env = env;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_string_equal(p.out.buf, "fake:a b\n");
	gdn_proc_release(&p);

	/* A file without "#!" runs under /bin/sh, as with execvp. */
	proc_for(&p, argv2, NULL);
	p.env = env;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_string_equal(p.out.buf, "no shebang:arg\n");
	gdn_proc_release(&p);

	/* Not in our PATH: not found without the env change. */
	proc_for(&p, argv1, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), GDN_ENOTFOUND);
	gdn_proc_release(&p);

	unlink(fake);
	unlink(plain);
	rmdir(dir);
	free(fake);
	free(plain);
	free(path);
	free(dir);
}

static void missing_program(void **state)
{
	const char *argv1[] = {"gdnctl-no-such-program", "x", NULL};
	const char *argv2[] = {"/nonexistent-gdn/prog", NULL};
	const char *argv3[] = {"true", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	proc_for(&p, argv1, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), GDN_ENOTFOUND);
	assert_string_equal(err.msg,
			    "cannot run 'gdnctl-no-such-program': No such file or directory");
	assert_int_equal(p.status_kind, GDN_PROC_NOT_RUN);
	assert_int_equal(gdn_proc_exit_code(&p), 127);
	assert_int_equal(gdn_proc_live_count(), 0);
	gdn_proc_release(&p);

	proc_for(&p, argv2, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), GDN_ENOTFOUND);
	assert_string_equal(err.msg,
			    "cannot run '/nonexistent-gdn/prog': No such file or directory");
	gdn_proc_release(&p);

	proc_for(&p, argv3, NULL);
	p.dir = "/nonexistent-gdn";
	assert_int_equal(gdn_proc_run(&p, &err), GDN_ENOTFOUND);
	assert_string_equal(err.msg,
			    "cannot run 'true' in '/nonexistent-gdn': No such file or directory");
	gdn_proc_release(&p);
}

static void not_executable(void **state)
{
	char *dir = make_tmpdir(), *file = path_in(dir, "noexec");
	const char *argv[] = {file, NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;
	char *expect = xstrfmt("cannot run '%s': Permission denied", file);

	unit_write_file(NULL, file, "echo hi\n", 0644);
	proc_for(&p, argv, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), GDN_EIO);
	if (geteuid() != 0)
		assert_string_equal(err.msg, expect);
	assert_int_equal(p.status_kind, GDN_PROC_NOT_RUN);
	unlink(file);
	rmdir(dir);
	free(expect);
	free(file);
	free(dir);
	gdn_proc_release(&p);
}

static void bad_requests_are_rejected(void **state)
{
	const char *empty[] = {NULL};
	const char *argv[] = {"true", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc p;

	proc_for(&p, empty, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), GDN_EUSAGE);
	assert_non_null(strstr(err.msg, "empty argv"));

	proc_for(&p, argv, NULL);
	p.capture = false;
	p.inherit_output = true;
	p.idle_timeout_ms = 100;
	assert_int_equal(gdn_proc_run(&p, &err), GDN_EUSAGE);
	assert_non_null(strstr(err.msg, "'true'"));

	proc_for(&p, argv, NULL);
	p.inherit_output = true; /* with capture */
	assert_int_equal(gdn_proc_run(&p, &err), GDN_EUSAGE);

	/* inherit_output alone is fine. */
	proc_for(&p, argv, NULL);
	p.capture = false;
	p.inherit_output = true;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 0);
	assert_int_equal(gdn_proc_live_count(), 0);
	gdn_proc_release(&p);
}

/*
 * Descriptors this process got from whoever started it without
 * close-on-exec: a child may legitimately inherit those, and only those.
 * Recorded in main() before any gdn_proc call opens a pipe.
 */
static bool inheritable_at_start[1024];

static void record_inheritable_fds(void)
{
	int fd;

	for (fd = 0; fd < (int)ARRAY_SIZE(inheritable_at_start); fd++) {
		int flags = fcntl(fd, F_GETFD);

		inheritable_at_start[fd] = flags >= 0 && !(flags & FD_CLOEXEC);
	}
}

static void child_gets_no_other_fds(void **state)
{
	/* ls lists the shell's descriptors (not its own: it is a child of the shell). */
	const char *argv[] = {"sh", "-c", "ls /proc/$$/fd; exit 0", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;
	size_t i;

	if (access("/proc/self/fd", R_OK)) {
		skip();
		return;
	}
	gdn_proc_install_signal_handlers(); /* so the self-pipe exists too */
	collect_init(&c);
	proc_for(&p, argv, &c);
	p.stdin_text = "x";
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_true(c.lines.nr >= 3);
	for (i = 0; i < c.lines.nr; i++) {
		int fd = (int)strtol(c.lines.v[i], NULL, 10);

		if (fd > 2 &&
		    (fd >= (int)ARRAY_SIZE(inheritable_at_start) || !inheritable_at_start[fd]))
			fail_msg("the child inherited descriptor %d", fd);
	}
	collect_release(&c);
	gdn_proc_release(&p);
}

/* ---- stopping ---- */

static void on_line_stops_child(void **state)
{
	const char *argv[] = {"sh", "-c",
			      "i=0; while :; do echo line$i; i=$((i+1)); sleep 0.01; done", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	collect_init(&c);
	c.stop_at = "line3";
	proc_for(&p, argv, &c);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_STOPPED);
	assert_int_equal(p.stop_signal, 0);
	assert_int_equal(p.signo, SIGINT);
	assert_int_equal(gdn_proc_exit_code(&p), 128 + SIGINT);
	assert_int_equal(c.lines.nr, 4); /* not called again after the stop */
	assert_string_equal(c.lines.v[3], "line3");
	assert_true(p.duration_ms < 5000);
	collect_release(&c);
	gdn_proc_release(&p);
}

struct thread_run {
	struct gdn_proc p;
	struct collect c;
	int ret;
};

static void *run_thread(void *arg)
{
	struct thread_run *t = arg;
	struct gdn_err err = GDN_ERR_INIT;

	t->ret = gdn_proc_run(&t->p, &err);
	return NULL;
}

static void kill_all_stops_registered_child(void **state)
{
	/* Ignores SIGINT (so does its sleep): kill_all has to escalate. */
	const char *argv[] = {"sh", "-c", "trap '' INT; echo ready; sleep 100", NULL};
	struct thread_run *t = xcalloc(1, sizeof(*t));
	struct timespec until;
	pthread_t th;
	int64_t t0, took;

	collect_init(&t->c);
	proc_for(&t->p, argv, &t->c);
	t->p.kill_grace_ms = 200;
	assert_int_equal(pthread_create(&th, NULL, run_thread, t), 0);

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	pthread_mutex_lock(&t->c.mu);
	while (!t->c.ready)
		if (pthread_cond_timedwait(&t->c.cv, &t->c.mu, &until))
			break;
	pthread_mutex_unlock(&t->c.mu);
	assert_true(t->c.ready);
	assert_int_equal(gdn_proc_live_count(), 1);

	t0 = gdn_now_ms();
	gdn_proc_kill_all();
	took = gdn_now_ms() - t0;
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_int_equal(t->ret, 0);
	assert_int_equal(t->p.status_kind, GDN_PROC_STOPPED);
	assert_int_equal(t->p.stop_signal, 0);
	assert_int_equal(t->p.signo, SIGTERM);
	assert_true(took < 3000);
	assert_true(t->p.duration_ms < 5000);
	assert_int_equal(gdn_proc_live_count(), 0);
	gdn_proc_kill_all(); /* nothing registered: returns at once */
	collect_release(&t->c);
	gdn_proc_release(&t->p);
	free(t);
}

/* Last: it leaves the handlers installed and gdn_proc_interrupted() set. */
static void sigint_to_us_stops_child(void **state)
{
	const char *argv[] = {"sh", "-c", "echo ready; sleep 100", NULL};
	const char *argv2[] = {"sh", "-c", "exit 3", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;

	assert_int_equal(gdn_proc_interrupted(), 0);
	gdn_proc_install_signal_handlers();
	collect_init(&c);
	c.raise_at = "ready";
	proc_for(&p, argv, &c);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_STOPPED);
	assert_int_equal(p.stop_signal, SIGINT);
	assert_int_equal(gdn_proc_interrupted(), SIGINT);
	assert_int_equal(gdn_proc_exit_code(&p), 130);
	assert_true(p.duration_ms < 5000);
	gdn_proc_release(&p);

	/* Cleanups after the signal can still run programs. */
	proc_for(&p, argv2, NULL);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 3);
	collect_release(&c);
	gdn_proc_release(&p);
}

/* ---- trace ---- */

static void trace_masks_secrets(void **state)
{
	char *dir = make_tmpdir(), *log = path_in(dir, "trace"), *expect;
	const char *argv[] = {"sh", "-c", "exit 0", "x", "HF_TOKEN=abc", NULL};
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf got = SBUF_INIT;
	struct gdn_proc p;
	int fd, saved;

	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);

	setenv("GDNCTL_TRACE", "1", 1);
	proc_for(&p, argv, NULL);
	p.dir = dir;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	gdn_proc_release(&p);
	unsetenv("GDNCTL_TRACE");
	proc_for(&p, argv, NULL); /* not traced */
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	gdn_proc_release(&p);

	fflush(stderr);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	close(fd);
	assert_int_equal(sbuf_read_file(&got, log, 0, &err), 0);
	expect = xstrfmt("[gdnctl] trace: spawn: sh -c 'exit 0' x HF_TOKEN=*** (in %s)\n", dir);
	assert_string_equal(got.buf, expect);

	unlink(log);
	rmdir(dir);
	free(expect);
	free(log);
	free(dir);
	sbuf_release(&got);
}

/* ---- secrets ---- */

static void secret_names(void **state)
{
	static const char *const yes[] = {"HF_TOKEN",	   "token",	  "WANDB_API_KEY",
					  "apiKey",	   "api-key",	  "AWS_SECRET_ACCESS_KEY",
					  "client_secret", "DB_PASSWORD", "KEY",
					  "GITHUB_TOKEN_2"};
	static const char *const no[] = {
	    "PATH", "tokenizer", "max_tokens", "keyboard", "StrictHostKeyChecking", "HOME", ""};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(yes); i++)
		if (!gdn_secret_name(yes[i], strlen(yes[i])))
			fail_msg("'%s' should look secret", yes[i]);
	for (i = 0; i < ARRAY_SIZE(no); i++)
		if (gdn_secret_name(no[i], strlen(no[i])))
			fail_msg("'%s' should not look secret", no[i]);
	/* len is honoured: "HF_TOKEN" cut before TOKEN */
	assert_false(gdn_secret_name("HF_TOKEN", 3));

	assert_false(gdn_secret_name("GDN_TEST_CRED", 13));
	gdn_secret_add_name("gdn_test_cred");
	assert_true(gdn_secret_name("GDN_TEST_CRED", 13));
	assert_false(gdn_secret_name("GDN_TEST_CRED_X", 15)); /* registered names match whole */
}

static void expect_format(const char *const *argv, const char *expect)
{
	struct sbuf sb = SBUF_INIT;

	gdn_argv_format(&sb, argv);
	assert_string_equal(sb.buf, expect);
	sbuf_release(&sb);
}

static void argv_format_masks(void **state)
{
	const char *docker[] = {"docker", "run",     "-e",  "HF_TOKEN=abc",
				"-e",	  "PATH=/x", "img", NULL};
	const char *opts[] = {"cli", "--token", "abc", "--api-key=xyz", "--name", "n", NULL};
	const char *nested[] = {"run", "--env=HF_TOKEN=abc", "-e", "PASSWORD=a b", NULL};
	const char *shell[] = {"bash", "-lc",
			       "export WANDB_API_KEY=abc; python train.py --token t1", NULL};
	const char *plain[] = {
	    "ssh", "-o", "StrictHostKeyChecking=no", "--tokenizer=gpt2", "max_tokens=5", "it's",
	    "",	   NULL};
	const char *value[] = {"echo", "pre-gdn-s3cr3t-post", "gdn-s3cr3t", "--x=gdn-s3cr3t", NULL};
	const char *empty_value[] = {"env", "HF_TOKEN=", "ok", NULL};
	const char *registered[] = {"tool", "GDN_TEST_CRED2=v", NULL};

	expect_format(docker, "docker run -e HF_TOKEN=*** -e PATH=/x img");
	expect_format(opts, "cli --token *** --api-key=*** --name n");
	expect_format(nested, "run --env=HF_TOKEN=*** -e PASSWORD=***");
	expect_format(shell, "bash -lc 'export WANDB_API_KEY='***'; python train.py --token '***");
	expect_format(
	    plain, "ssh -o StrictHostKeyChecking=no --tokenizer=gpt2 max_tokens=5 'it'\\''s' ''");
	expect_format(empty_value, "env HF_TOKEN= ok");
	expect_format(registered, "tool GDN_TEST_CRED2=v");
	gdn_secret_add_name("GDN_TEST_CRED2");
	expect_format(registered, "tool GDN_TEST_CRED2=***");

	expect_format(value, "echo pre-gdn-s3cr3t-post gdn-s3cr3t --x=gdn-s3cr3t");
	gdn_secret_add_value("gdn-s3cr3t");
	gdn_secret_add_value(""); /* ignored */
	expect_format(value, "echo pre-***-post *** --x=***");
}

static void secret_mask_buffer(void **state)
{
	struct sbuf sb = SBUF_INIT;

	gdn_secret_add_value("hunter2-gdn");
	gdn_secret_add_value("hunter2-gdn-long"); /* overlaps: one mask */
	sbuf_adds(&sb, "a hunter2-gdn b hunter2-gdn-long c hunter2-gdnhunter2-gdn");
	gdn_secret_mask(&sb);
	assert_string_equal(sb.buf, "a *** b *** c ***");
	sbuf_reset(&sb);
	sbuf_adds(&sb, "nothing here");
	gdn_secret_mask(&sb);
	assert_string_equal(sb.buf, "nothing here");
	sbuf_release(&sb);
}

/*
 * A group we did not start (util/proc_scan.c and gdn_proc_stop_group): its
 * start time tells it from a stranger, it is found by name and directory,
 * and the escalation reaches SIGKILL when SIGINT and SIGTERM are ignored.
 */
static void foreign_group_found_and_stopped(void **state)
{
	static const char *const sleep_names[] = {"sleep", NULL};
	static const char *const other_names[] = {"no-such-program", NULL};
	char dir[] = "/tmp/gdnctl-proc-scan-XXXXXX";
	char real[PATH_MAX];
	long long started;
	int64_t until;
	int status = 0;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	assert_non_null(realpath(dir, real));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setpgid(0, 0);
		if (chdir(real))
			_exit(126);
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		execlp("sleep", "sleep", "60", (char *)NULL);
		_exit(127);
	}
	setpgid(pid, pid);
	until = gdn_now_ms() + 5000;
	while (!gdn_proc_running_in(sleep_names, real, NULL) && gdn_now_ms() < until)
		poll(NULL, 0, 10);
	assert_true(gdn_proc_running_in(sleep_names, real, NULL));
	assert_true(gdn_proc_running_in(sleep_names, "/nonexistent", "/tmp/gdnctl-proc-scan-"));
	assert_false(gdn_proc_running_in(other_names, real, NULL));
	assert_false(gdn_proc_running_in(sleep_names, "/nonexistent", NULL));
	started = gdn_proc_started(pid);
	assert_true(started >= 0);
	assert_int_equal(gdn_proc_started(getpid()) >= 0, 1);

	/* another start time: a stranger with the same number, left alone */
	gdn_proc_stop_group(pid, started + 1, 100);
	assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
	gdn_proc_stop_group(pid, started, 100);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGKILL);
	assert_int_equal(gdn_proc_started(pid), -1);
	rmdir(real);
}

/*
 * A group whose leader dies of the SIGINT while a member ignores it: the
 * member is the same group and gets the SIGTERM (it used to be left
 * running once the leader had ended, an orphan of a stopped agent).
 */
static void foreign_group_outlived_by_member(void **state)
{
	long long started;
	int64_t until;
	int fds[2], status = 0;
	pid_t pid, member = 0;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pid_t self;

		setpgid(0, 0);
		signal(SIGINT, SIG_DFL); /* a background shell may have us ignore it */
		close(fds[0]);
		if (fork() == 0) {
			signal(SIGINT, SIG_IGN);
			self = getpid();
			if (write(fds[1], &self, sizeof(self)) != (ssize_t)sizeof(self))
				_exit(126);
			execlp("sleep", "sleep", "60", (char *)NULL);
			_exit(127);
		}
		close(fds[1]);
		pause(); /* the leader: the SIGINT ends it */
		_exit(0);
	}
	setpgid(pid, pid);
	close(fds[1]);
	/* the member ignores SIGINT once it has said its pid */
	assert_int_equal(read(fds[0], &member, sizeof(member)), (ssize_t)sizeof(member));
	close(fds[0]);
	started = gdn_proc_started(pid);
	assert_true(started >= 0);

	gdn_proc_stop_group(pid, started, 300);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGINT);
	/* the member (re-parented, not ours to reap) is gone or a zombie */
	until = gdn_now_ms() + 2000;
	while (gdn_proc_started(member) >= 0 && gdn_now_ms() < until)
		poll(NULL, 0, 10);
	assert_int_equal(gdn_proc_started(member), -1);
	waitpid(member, NULL, WNOHANG); /* ours to reap when we are a subreaper */
}

/*
 * What a child leaves behind when it exits by itself (issue 13): a
 * background job stays in its process group; a `setsid` one leaves the
 * group and, its parent gone, is re-parented to us (main() made us a
 * subreaper). gdn_proc_stop_leftovers stops both, names them, and reaps
 * them: no orphan is left, not even a zombie.
 */
static long read_pid_line(const struct collect *c, const char *prefix)
{
	for (size_t i = 0; i < c->lines.nr; i++)
		if (!strncmp(c->lines.v[i], prefix, strlen(prefix)))
			return strtol(c->lines.v[i] + strlen(prefix), NULL, 10);
	return -1;
}

static bool leftover_has(const struct gdn_proc_leftovers *l, long pid, const char *argv0)
{
	for (size_t i = 0; i < l->nr; i++)
		if (l->v[i].pid == (pid_t)pid && !strcmp(l->v[i].argv0, argv0))
			return true;
	return false;
}

/* Wait until pid runs `sleep` (a forked shell has not exec'd yet right after `&`). */
static void wait_exec_sleep(long pid)
{
	int64_t until = gdn_now_ms() + 5000;
	char *name = NULL;

	while (gdn_now_ms() < until) {
		free(name);
		name = gdn_proc_argv0((pid_t)pid);
		if (name && !strcmp(name, "sleep"))
			break;
		poll(NULL, 0, 10);
	}
	assert_non_null(name);
	assert_string_equal(name, "sleep");
	free(name);
}

static void leftovers_in_group_and_setsid_are_stopped(void **state)
{
	char mark[64];
	const char *env[] = {mark, NULL};
	const char *argv[] = {
	    "sh", "-c", "sleep 1000 & echo group=$!; setsid sleep 1000 & echo session=$!", NULL};
	struct gdn_proc_leftovers killed = GDN_PROC_LEFTOVERS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct collect c;
	struct gdn_proc p;
	long in_group, in_session;
	long long not_before;
	int64_t t0;

	(void)state;
	snprintf(mark, sizeof(mark), "GDNCTL_TEST_MARK=%ld.leftovers", (long)getpid());
	collect_init(&c);
	proc_for(&p, argv, &c);
	p.env = env;
	not_before = gdn_proc_started_now();
	assert_true(not_before > 0);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 0);
	in_group = read_pid_line(&c, "group=");
	in_session = read_pid_line(&c, "session=");
	assert_true(in_group > 1 && in_session > 1);
	wait_exec_sleep(in_group);
	wait_exec_sleep(in_session);
	/* both outlived the shell: gdn_proc_run leaves a normal exit's leftovers alone */
	assert_false(pid_gone((pid_t)in_group));
	assert_false(pid_gone((pid_t)in_session));
	assert_true(gdn_proc_env_has((pid_t)in_session, mark));
	assert_false(gdn_proc_env_has((pid_t)in_session, "GDNCTL_TEST_MARK=other"));

	/* a process started before not_before is not looked for by the mark */
	assert_true(gdn_proc_started((pid_t)in_session) >= not_before);
	gdn_proc_stop_leftovers(0, mark, gdn_proc_started((pid_t)in_session) + 1, 2000, &killed);
	assert_int_equal(killed.nr, 0);
	assert_false(pid_gone((pid_t)in_session));

	t0 = gdn_now_ms();
	gdn_proc_stop_leftovers(p.pid, mark, not_before, 2000, &killed);
	assert_true(gdn_now_ms() - t0 < 1500); /* SIGTERM was enough: no wait for the grace */
	assert_int_equal(killed.nr, 2);
	assert_true(leftover_has(&killed, in_group, "sleep"));
	assert_true(leftover_has(&killed, in_session, "sleep"));
	/* gone, and reaped (they were ours): no zombie either */
	assert_true(pid_gone((pid_t)in_group));
	assert_true(pid_gone((pid_t)in_session));
	assert_int_equal(gdn_proc_live_count(), 0);

	/* nothing left: a second call finds nothing */
	gdn_proc_leftovers_release(&killed);
	gdn_proc_stop_leftovers(p.pid, mark, -1, 2000, &killed);
	assert_int_equal(killed.nr, 0);
	gdn_proc_leftovers_release(&killed);
	collect_release(&c);
	gdn_proc_release(&p);
}

/*
 * Without the mark only the group is searched: a setsid leftover is not
 * found that way (the mark is what finds it). A leftover that ignores
 * SIGTERM gets SIGKILL after the grace. A process of ours that is not the
 * child's (a live registered child) is never touched.
 */
static void leftovers_group_only_and_sigkill(void **state)
{
	const char *argv[] = {"sh", "-c",
			      "(trap '' TERM; exec sleep 1000) & echo group=$!; "
			      "setsid sleep 1000 & echo session=$!",
			      NULL};
	const char *bystander_argv[] = {"sleep", "1000", NULL};
	struct gdn_proc_leftovers killed = GDN_PROC_LEFTOVERS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_proc_async *a = NULL;
	struct gdn_proc bystander;
	struct collect c;
	struct gdn_proc p;
	long in_group, in_session;
	int64_t t0;

	(void)state;
	proc_for(&bystander, bystander_argv, NULL);
	bystander.timeout_ms = 0;
	assert_int_equal(gdn_proc_start(&bystander, &a, &err), 0);
	collect_init(&c);
	proc_for(&p, argv, &c);
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	in_group = read_pid_line(&c, "group=");
	in_session = read_pid_line(&c, "session=");
	assert_true(in_group > 1 && in_session > 1);
	wait_exec_sleep(in_group);
	wait_exec_sleep(in_session);

	t0 = gdn_now_ms();
	gdn_proc_stop_leftovers(p.pid, NULL, -1, 300, &killed);
	assert_true(gdn_now_ms() - t0 >= 250); /* it waited the grace, then SIGKILL */
	assert_int_equal(killed.nr, 1);
	assert_true(leftover_has(&killed, in_group, "sleep"));
	assert_true(pid_gone((pid_t)in_group));
	assert_false(pid_gone((pid_t)in_session));
	assert_false(gdn_proc_poll(a, 0)); /* the bystander still runs */
	gdn_proc_leftovers_release(&killed);

	/* clean up the setsid one by hand (it is our child: reap it) */
	kill((pid_t)in_session, SIGKILL);
	waitpid((pid_t)in_session, NULL, 0);
	gdn_proc_stop(a, 100, 100);
	assert_int_equal(gdn_proc_finish(a, &err), 0);
	collect_release(&c);
	gdn_proc_release(&p);
	gdn_proc_release(&bystander);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(exit_code_is_reported),
	    cmocka_unit_test(signal_death_with_blocked_mask),
	    cmocka_unit_test(ignored_signal_is_reset_in_child),
	    cmocka_unit_test(timeout_kills_group_and_grandchild),
	    cmocka_unit_test(group_signalled_until_empty),
	    cmocka_unit_test(timeout_sigint_is_enough),
	    cmocka_unit_test(idle_timeout_after_a_line),
	    cmocka_unit_test(idle_timer_reset_by_output),
	    cmocka_unit_test(big_output_while_feeding_stdin),
	    cmocka_unit_test(stdin_text_is_fed_and_closed),
	    cmocka_unit_test(unread_stdin_raises_no_sigpipe),
	    cmocka_unit_test(stdin_defaults_to_dev_null),
	    cmocka_unit_test(lines_split_across_chunks),
	    cmocka_unit_test(stderr_is_merged),
	    cmocka_unit_test(capture_limit_truncates),
	    cmocka_unit_test(long_line_is_delivered_in_pieces),
	    cmocka_unit_test(env_set_and_remove),
	    cmocka_unit_test(working_directory),
	    cmocka_unit_test(path_lookup_uses_child_env),
	    cmocka_unit_test(missing_program),
	    cmocka_unit_test(not_executable),
	    cmocka_unit_test(bad_requests_are_rejected),
	    cmocka_unit_test(secret_names),
	    cmocka_unit_test(argv_format_masks),
	    cmocka_unit_test(secret_mask_buffer),
	    cmocka_unit_test(trace_masks_secrets),
	    cmocka_unit_test(on_line_stops_child),
	    cmocka_unit_test(kill_all_stops_registered_child),
	    cmocka_unit_test(foreign_group_found_and_stopped),
	    cmocka_unit_test(foreign_group_outlived_by_member),
	    cmocka_unit_test(leftovers_in_group_and_setsid_are_stopped),
	    cmocka_unit_test(leftovers_group_only_and_sigkill),
	    cmocka_unit_test(child_gets_no_other_fds),
	    cmocka_unit_test(sigint_to_us_stops_child),
	};

	gdn_proc_set_subreaper();
	signal(SIGPIPE, SIG_IGN);
	record_inheritable_fds();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
