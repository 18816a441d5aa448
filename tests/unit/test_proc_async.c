/*
 * Unit tests for children that run while the caller works
 * (src/util/proc_async.c): start, poll, stop one child's whole group with
 * the SIGINT -> SIGTERM -> SIGKILL escalation, and finish.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/proc.h"

struct seen {
	int lines;
	bool ready;
};

static int on_line(const char *line, size_t len, void *payload)
{
	struct seen *s = payload;

	s->lines++;
	if (!strcmp(line, "ready"))
		s->ready = true;
	(void)len;
	return 0;
}

static void runs_to_the_end(void **state)
{
	const char *argv[] = {"sh", "-c", "echo one; echo ready; exit 3", NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_proc_async *a = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct seen seen = {0};

	p.argv = argv;
	p.on_line = on_line;
	p.payload = &seen;
	assert_int_equal(gdn_proc_start(&p, &a, &err), 0);
	while (!gdn_proc_poll(a, 1000))
		;
	assert_int_equal(gdn_proc_finish(a, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 3);
	assert_int_equal(seen.lines, 2);
	assert_true(seen.ready);
	assert_ptr_equal(p.payload, &seen); /* given back */
	gdn_proc_release(&p);
}

static bool group_alive(pid_t pg)
{
	return !(kill(-pg, 0) < 0 && errno == ESRCH);
}

/* SIGINT is ignored, so the stop goes on to SIGTERM; a grandchild dies too. */
static void stop_escalates_over_the_group(void **state)
{
	const char *argv[] = {
	    "sh", "-c", "trap '' INT; sleep 30 & echo ready; while :; do sleep 0.05; done", NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_proc_async *a = NULL;
	struct gdn_err err = GDN_ERR_INIT;
	struct seen seen = {0};
	int64_t t0;

	p.argv = argv;
	p.on_line = on_line;
	p.payload = &seen;
	assert_int_equal(gdn_proc_start(&p, &a, &err), 0);
	t0 = gdn_now_ms();
	while (!seen.ready && gdn_now_ms() - t0 < 5000)
		gdn_proc_poll(a, 20);
	assert_false(gdn_proc_poll(a, 0));
	t0 = gdn_now_ms();
	gdn_proc_stop(a, 300, 2000);
	assert_true(gdn_proc_poll(a, 0));
	assert_true(gdn_now_ms() - t0 >= 250);
	assert_int_equal(gdn_proc_finish(a, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_SIGNALED);
	assert_int_equal(p.signo, SIGTERM);
	assert_false(group_alive(p.pid));
	gdn_proc_release(&p);
}

/* A child that printed nothing yet is found too. */
static void stop_before_any_output(void **state)
{
	const char *argv[] = {"sleep", "30", NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_proc_async *a = NULL;
	struct gdn_err err = GDN_ERR_INIT;

	p.argv = argv;
	assert_int_equal(gdn_proc_start(&p, &a, &err), 0);
	gdn_proc_stop(a, 2000, 2000);
	assert_true(gdn_proc_poll(a, 0));
	assert_int_equal(gdn_proc_finish(a, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_SIGNALED);
	assert_int_equal(p.signo, SIGINT);
	gdn_proc_release(&p);
}

static void exec_failure_is_reported_at_finish(void **state)
{
	const char *argv[] = {"/nonexistent/gdnctl-prog", NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_proc_async *a = NULL;
	struct gdn_err err = GDN_ERR_INIT;

	p.argv = argv;
	assert_int_equal(gdn_proc_start(&p, &a, &err), 0);
	/* ended (a stop before the thread tried the exec would spare it) */
	assert_true(gdn_proc_poll(a, 10000));
	gdn_proc_stop(a, 100, 100); /* harmless once it has ended */
	assert_int_equal(gdn_proc_finish(a, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "gdnctl-prog"));
	gdn_proc_release(&p);
}

/* In a fork: start `sleep 30`, SIGINT to ourselves at once, stop, finish; 0 when all went right. */
static int signal_right_after_start(void)
{
	const char *argv[] = {"sleep", "30", NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_proc_async *a = NULL;
	struct gdn_err err = GDN_ERR_INIT;

	p.argv = argv;
	gdn_proc_install_signal_handlers();
	if (gdn_proc_start(&p, &a, &err))
		return 1;
	raise(SIGINT); /* often before the thread's gdn_proc_run has begun */
	gdn_proc_stop(a, 2000, 2000);
	if (gdn_proc_finish(a, &err) || p.stop_on_any_signal)
		return 2;
	if (p.pid > 0 && p.status_kind != GDN_PROC_STOPPED)
		return 3;
	return 0;
}

/*
 * A SIGINT to gdnctl between gdn_proc_start() and the moment its thread
 * begins the run still stops the child: gdn_proc_stop() leaves it to the
 * run and used to wait forever (gdnctl allocate hung on an early Ctrl-C).
 * Each round in a fork of its own (the signal stays recorded); 10 s each.
 */
static void signal_before_the_thread_runs(void **state)
{
	(void)state;
	for (int i = 0; i < 20; i++) {
		int64_t until;
		int status = 0;
		pid_t pid = fork(), got = 0;

		assert_true(pid >= 0);
		if (pid == 0)
			_exit(signal_right_after_start());
		until = gdn_now_ms() + 10000;
		while ((got = waitpid(pid, &status, WNOHANG)) == 0 && gdn_now_ms() < until)
			poll(NULL, 0, 10);
		if (!got) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			fail_msg("round %d: the stop after an early SIGINT hung", i);
		}
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(runs_to_the_end),
	    cmocka_unit_test(stop_escalates_over_the_group),
	    cmocka_unit_test(stop_before_any_output),
	    cmocka_unit_test(exec_failure_is_reported_at_finish),
	    cmocka_unit_test(signal_before_the_thread_runs),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
