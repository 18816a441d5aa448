/* Unit tests for the loop journal: writing, and rebuilding the resume state. */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/journal.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/xalloc.h"

static int parse(const char *text, struct gdn_loop_state *st, struct gdn_err *err)
{
	return gdn_journal_parse(text, strlen(text), st, err);
}

static void test_write_and_read_back(void **unused)
{
	char dir[] = "/tmp/gdnctl-test-journal-XXXXXX";
	struct gdn_journal j = GDN_JOURNAL_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct sbuf sb = SBUF_INIT;
	json_t *ev;

	(void)unused;
	assert_non_null(mkdtemp(dir));
	assert_int_equal(gdn_journal_open(&j, dir, "run-1", &err), 0);
	assert_int_equal(gdn_journal_write(&j, "run_start",
					   json_pack("{sI}", "iterations", (json_int_t)5), &err),
			 0);
	ev = json_pack("{sIsIsIsssI}", "iteration", (json_int_t)1, "commits", (json_int_t)2,
		       "failures", (json_int_t)0, "failure", "agent", "consecutive", (json_int_t)0);
	assert_int_equal(gdn_journal_write(&j, "decision", ev, &err), 0);
	assert_int_equal(gdn_journal_write(&j, "iteration_end", NULL, &err), 0);
	gdn_journal_close(&j);

	{
		char *path = xstrfmt("%s/loop.jsonl", dir);

		assert_int_equal(sbuf_read_file(&sb, path, 1 << 20, &err), 0);
		unlink(path);
		free(path);
	}
	rmdir(dir);
	/* one object per line, each with ts, run and event first */
	assert_true(sbuf_starts_with(&sb, "{\"ts\":\""));
	assert_non_null(
	    strstr(sb.buf, "\"run\":\"run-1\",\"event\":\"run_start\",\"iterations\":5}\n"));
	assert_int_equal(parse(sb.buf, &st, &err), 0);
	assert_string_equal(st.run_id, "run-1");
	assert_int_equal(st.iterations, 5);
	assert_int_equal(st.last_done, 1);
	assert_int_equal(st.commits, 2);
	assert_int_equal(st.fail_kinds[GDN_FAIL_AGENT], 1);
	assert_int_equal(st.iterations_run, 1);
	gdn_loop_state_release(&st);
	sbuf_release(&sb);
}

/*
 * The log dir vanishes under the run (an agent's `rm -rf`, `git clean
 * -fdx`): the next write makes it again, with every line written so far.
 * The stopped processes an agent left are an event of their own.
 */
static void test_vanished_dir_is_recreated(void **unused)
{
	char base[] = "/tmp/gdnctl-test-journal-XXXXXX";
	struct gdn_journal j = GDN_JOURNAL_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct gdn_proc_leftover procs[] = {{4242, (char *)"sleep"}, {4243, (char *)"node"}};
	struct gdn_proc_leftovers left = {procs, 2, 2};
	struct sbuf sb = SBUF_INIT;
	char *dir, *path;

	(void)unused;
	assert_non_null(mkdtemp(base));
	dir = xstrfmt("%s/logs", base);
	path = xstrfmt("%s/loop.jsonl", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(gdn_journal_open(&j, dir, "run-1", &err), 0);
	assert_int_equal(gdn_journal_write(&j, "run_start",
					   json_pack("{sI}", "iterations", (json_int_t)3), &err),
			 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(gdn_journal_write(&j, "iteration_start", gdn_journal_iteration(1), &err),
			 0);
	assert_int_equal(
	    gdn_journal_write(&j, "agent_leftovers", gdn_journal_leftovers(1, 2, &left), &err), 0);
	gdn_journal_close(&j);

	assert_int_equal(sbuf_read_file(&sb, path, 1 << 20, &err), 0);
	assert_non_null(strstr(sb.buf, "\"event\":\"run_start\",\"iterations\":3}\n"));
	assert_non_null(strstr(sb.buf, "\"event\":\"iteration_start\",\"iteration\":1}\n"));
	assert_non_null(strstr(sb.buf, "\"event\":\"agent_leftovers\",\"iteration\":1,"
				       "\"attempt\":2,\"processes\":[{\"pid\":4242,\"argv0\":"
				       "\"sleep\"},{\"pid\":4243,\"argv0\":\"node\"}]}\n"));
	assert_int_equal(parse(sb.buf, &st, &err), 0);
	assert_string_equal(st.run_id, "run-1");
	assert_int_equal(st.iterations, 3);
	assert_int_equal(st.open_iter, 1);
	unlink(path);
	rmdir(dir);
	rmdir(base);
	free(path);
	free(dir);
	gdn_loop_state_release(&st);
	sbuf_release(&sb);
}

#define R(ev, rest) "{\"run\":\"r1\",\"event\":\"" ev "\"" rest "}\n"

static void test_open_iteration_and_pending_stash(void **unused)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *j = R("run_start", ",\"iterations\":3")
	    R("iteration_start", ",\"iteration\":1,\"head\":\"aaa\"")
		R("decision", ",\"iteration\":1,\"commits\":1,\"failures\":0,\"consecutive\":0")
		    R("iteration_end", ",\"iteration\":1") R("iteration_start",
							     ",\"iteration\":2,\"head\":\"bbb\"")
			R("stash_saving", ",\"iteration\":2,\"message\":\"m2\",\"kind\":\"user\"")
			    R("stash_saved", ",\"iteration\":2,\"sha\":\"s2\",\"message\":\"m2\"")
				R("agent_start", ",\"iteration\":2,\"attempt\":1")
				    R("agent_end", ",\"iteration\":2,\"duration_ms\":1500");

	(void)unused;
	assert_int_equal(parse(j, &st, &err), 0);
	assert_int_equal(st.last_done, 1);
	assert_int_equal(st.open_iter, 2);
	assert_string_equal(st.open_head, "bbb");
	assert_true(st.open_agent);
	assert_false(st.open_decided);
	assert_string_equal(st.stash_msg, "m2");
	assert_string_equal(st.stash_sha, "s2");
	assert_false(st.stash_restoring);
	assert_int_equal(st.agent_ms, 1500);
	assert_false(st.ended);
	gdn_loop_state_release(&st);
}

static void test_stash_lifecycle(void **unused)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *restoring = R("run_start", ",\"iterations\":1")
	    R("stash_saving", ",\"iteration\":1,\"message\":\"m\"")
		R("stash_restoring", ",\"iteration\":1,\"sha\":\"s\"");
	const char *saving_only = R("run_start", ",\"iterations\":1")
	    R("stash_saving", ",\"iteration\":1,\"message\":\"m\"");
	const char *restored = R("run_start", ",\"iterations\":1")
	    R("stash_saved", ",\"iteration\":1,\"sha\":\"s\",\"message\":\"m\"")
		R("stash_restored", ",\"iteration\":1,\"sha\":\"s\"");
	const char *kept = R("run_start", ",\"iterations\":1")
	    R("stash_saved", ",\"iteration\":1,\"sha\":\"s\",\"message\":\"m\"")
		R("stash_kept", ",\"iteration\":1,\"sha\":\"s\",\"message\":\"m\"");
	const char *leftovers = R("run_start", ",\"iterations\":1")
	    R("stash_saved", ",\"iteration\":1,\"sha\":\"u\",\"message\":\"user\"")
		R("stash_saving", ",\"iteration\":1,\"message\":\"lo\",\"kind\":\"leftovers\"");

	(void)unused;
	assert_int_equal(parse(restoring, &st, &err), 0);
	assert_true(st.stash_restoring);
	assert_string_equal(st.stash_msg, "m");
	gdn_loop_state_release(&st);

	assert_int_equal(parse(saving_only, &st, &err), 0);
	assert_string_equal(st.stash_msg, "m");
	assert_null(st.stash_sha);
	gdn_loop_state_release(&st);

	assert_int_equal(parse(restored, &st, &err), 0);
	assert_null(st.stash_msg);
	gdn_loop_state_release(&st);

	assert_int_equal(parse(kept, &st, &err), 0);
	assert_null(st.stash_msg);
	assert_int_equal(st.kept.nr, 1);
	assert_string_equal(st.kept.v[0], "s m");
	gdn_loop_state_release(&st);

	/* an interrupted agent's work being stashed never replaces the user's stash */
	assert_int_equal(parse(leftovers, &st, &err), 0);
	assert_string_equal(st.stash_msg, "user");
	assert_string_equal(st.stash_sha, "u");
	assert_string_equal(st.leftover_msg, "lo");
	gdn_loop_state_release(&st);
}

static void test_torn_and_malformed_lines(void **unused)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *torn = R("run_start", ",\"iterations\":2") "{\"run\":\"r1\",\"event\":\"deci";
	const char *bad = R("run_start", ",\"iterations\":2") "\n[1,2]\n";
	const char *garbage = R("run_start", "") "not json\n";

	(void)unused;
	assert_int_equal(parse(torn, &st, &err), 0);
	assert_string_equal(st.run_id, "r1");
	gdn_loop_state_release(&st);
	assert_int_equal(parse(bad, &st, &err), GDN_EPARSE);
	assert_string_equal(err.msg, "journal line 3: not an event object");
	gdn_loop_state_release(&st);
	assert_int_equal(parse(garbage, &st, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, "journal line 2: "));
	gdn_loop_state_release(&st);
}

static void test_last_run_wins_and_resume(void **unused)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *j = R("run_start", ",\"iterations\":9")
	    R("decision", ",\"iteration\":4,\"commits\":3,\"failures\":2,\"consecutive\":1") R(
		"run_end",
		",\"reason\":\"failure\"") "{\"run\":\"r2\",\"event\":\"run_start\",\"iterations\":"
					   "4}\n"
					   "{\"run\":\"r1\",\"event\":\"decision\",\"iteration\":7,"
					   "\"commits\":1}\n"
					   "{\"run\":\"r2\",\"event\":\"decision\",\"iteration\":1,"
					   "\"commits\":1,"
					   "\"failures\":1,\"consecutive\":1,\"failure\":\"no_"
					   "commit\"}\n"
					   "{\"run\":\"r2\",\"event\":\"run_end\",\"reason\":"
					   "\"interrupted\"}\n"
					   "{\"run\":\"r2\",\"event\":\"run_resume\","
					   "\"iterations\":6}\n"
					   "{\"run\":\"r2\",\"event\":\"failure\",\"iteration\":1,"
					   "\"failure\":\"iteration_error\",\"failures\":2,"
					   "\"consecutive\":2}\n";

	(void)unused;
	assert_int_equal(parse(j, &st, &err), 0);
	assert_string_equal(st.run_id, "r2");
	assert_int_equal(st.iterations, 6);
	assert_int_equal(st.last_done, 1);
	assert_int_equal(st.commits, 1);
	assert_int_equal(st.failures, 2);
	assert_int_equal(st.consecutive, 2);
	assert_int_equal(st.fail_kinds[GDN_FAIL_NO_COMMIT], 1);
	assert_int_equal(st.fail_kinds[GDN_FAIL_ITERATION_ERROR], 1);
	assert_false(st.ended);
	gdn_loop_state_release(&st);
}

/* Untrusted figures: sums saturate, counts are clamped, a pgid that is no pid_t is none. */
static void test_huge_figures(void **unused)
{
	struct gdn_loop_state st = GDN_LOOP_STATE_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *j = R("run_start", ",\"iterations\":9223372036854775807")
	    R("iteration_start", ",\"iteration\":9223372036854775807")
		R("agent_pid", ",\"iteration\":9223372036854775807,\"pgid\":4294967301")
		    R("agent_end", ",\"iteration\":1,\"duration_ms\":9223372036854775807")
			R("agent_end", ",\"iteration\":1,\"duration_ms\":9223372036854775807")
			    R("decision", ",\"iteration\":9223372036854775807,\"commits\":"
					  "9223372036854775807")
				R("decision", ",\"iteration\":3,\"commits\":9223372036854775807,"
					      "\"failures\":9223372036854775807,"
					      "\"consecutive\":-9223372036854775807");

	(void)unused;
	assert_int_equal(parse(j, &st, &err), 0);
	assert_true(st.agent_ms == INT64_MAX);
	assert_true(st.commits == LONG_MAX);
	assert_true(st.iterations == (long)1 << 62);
	assert_true(st.last_done == (long)1 << 62);
	assert_true(st.failures == (long)1 << 62);
	assert_true(st.consecutive == -((long)1 << 62));
	assert_int_equal(st.agent_pgid, 0);
	gdn_loop_state_release(&st);
	assert_int_equal(parse(R("run_start", "") R("iteration_start", ",\"iteration\":2")
				   R("agent_pid", ",\"iteration\":2,\"pgid\":4321,\"started\":7"),
			       &st, &err),
			 0);
	assert_int_equal(st.agent_pgid, 4321);
	assert_int_equal(st.agent_started, 7);
	gdn_loop_state_release(&st);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_write_and_read_back),
	    cmocka_unit_test(test_open_iteration_and_pending_stash),
	    cmocka_unit_test(test_stash_lifecycle),
	    cmocka_unit_test(test_torn_and_malformed_lines),
	    cmocka_unit_test(test_last_run_wins_and_resume),
	    cmocka_unit_test(test_huge_figures),
	    cmocka_unit_test(test_vanished_dir_is_recreated),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
