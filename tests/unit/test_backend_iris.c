/*
 * Unit tests for parsing what Marin's Iris job CLI prints
 * (src/backend/iris_parse.c). The strings are quoted from
 * ../shared/reference/iris-cli.md (lib/iris/src/iris/cli/job.py at commits
 * D and A, logs.py at D, the rigging log format).
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/iris.h"

static void expect_submit(const char *text, size_t len, const char *want)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *id = NULL;
	int ret = gdn_iris_parse_submit(text, len, &id, &err);

	if (!want) {
		assert_int_equal(ret, GDN_EPARSE);
		assert_null(id);
		assert_non_null(strstr(err.msg, "printed no job id"));
		return;
	}
	assert_int_equal(ret, 0);
	assert_string_equal(id, want);
	free(id);
}

#define SUBMIT(text, want) expect_submit(text, strlen(text), want)

static void submit_ids(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *id = NULL;

	(void)state;
	/* stdout: click.echo(str(job.job_id)); stderr: logger.info(f"Job submitted: {job_id}") */
	SUBMIT("I20260420 12:00:00 140001 iris.cli.job Establishing tunnel to controller...\n"
	       "I20260420 12:00:00 140001 iris.cli.job Job submitted: /alice/x\n"
	       "/alice/iris-run-job-20260425-184727\n",
	       "/alice/iris-run-job-20260425-184727");
	/* the last id line wins; streams may interleave */
	SUBMIT("/alice/a\nI20260420 12:00:00 1 iris.cli.job Job submitted: /alice/b\n/alice/b\n",
	       "/alice/b");
	/* the oldest CLI: the log line only */
	SUBMIT(
	    "I20260420 12:00:00 1 iris.cli.job Job submitted: /alice/hello_world-20260420-120000",
	    "/alice/hello_world-20260420-120000");
	/* CRLF and surrounding blanks */
	SUBMIT("  /u/j-1  \r\n", "/u/j-1");
	/* neither: an error quoting the first line */
	gdn_iris_parse_submit("Usage: iris job run\nError: boom\n", 30, &id, &err);
	assert_non_null(strstr(err.msg, ": Usage: iris job run"));
	SUBMIT("", NULL);
	SUBMIT("\n\n", NULL);
	SUBMIT("job submitted\n", NULL);
	SUBMIT("/alice\n", NULL);		  /* one component */
	SUBMIT("/alice/\n", NULL);		  /* empty name */
	SUBMIT("//x\n", NULL);			  /* empty user */
	SUBMIT("/a/b c\n", NULL);		  /* a space inside */
	SUBMIT("/a/b;rm -rf x\n", NULL);	  /* a shell character */
	SUBMIT("Job submitted: /a/$(x)\n", NULL); /* the fallback checks too */
	/* a NUL cuts the output: nothing after it counts */
	expect_submit("noise\n\0/alice/x\n", 16, NULL);
	expect_submit("/alice/y\n\0/alice/x\n", 19, "/alice/y");
	expect_submit("/ali\0ce/x\n", 10, NULL);
}

static void ids(void **state)
{
	char longid[200];

	(void)state;
	assert_true(gdn_iris_valid_id("/u/j", 4));
	assert_true(gdn_iris_valid_id("/u/j/0:1", 8));
	assert_false(gdn_iris_valid_id("u/j", 3));
	assert_false(gdn_iris_valid_id("/u/j/", 5));
	assert_false(gdn_iris_valid_id("/u//j", 5));
	memset(longid, 'a', sizeof(longid));
	longid[0] = '/';
	longid[5] = '/';
	assert_false(gdn_iris_valid_id(longid, sizeof(longid)));
	assert_true(gdn_iris_valid_id(longid, GDN_IRIS_ID_MAX));
}

static void states(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;

	(void)state;
	assert_true(gdn_iris_state("running", 7, &st));
	assert_int_equal(st.state, GDN_JOB_RUNNING);
	assert_false(st.final);
	assert_true(gdn_iris_state("building", 8, &st));
	assert_int_equal(st.state, GDN_JOB_PENDING);
	assert_string_equal(st.native, "BUILDING");
	assert_true(gdn_iris_state("JOB_STATE_SUCCEEDED", 19, &st));
	assert_int_equal(st.state, GDN_JOB_SUCCEEDED);
	assert_true(st.final);
	assert_true(gdn_iris_state("5", 1, &st));
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_false(gdn_iris_infrastructure(&st));
	/* infrastructure: never the command's failure */
	assert_true(gdn_iris_state("worker_failed", 13, &st));
	assert_int_equal(st.state, GDN_JOB_STOPPED);
	assert_string_equal(st.native, "WORKER_FAILED");
	assert_true(gdn_iris_infrastructure(&st));
	assert_non_null(strstr(st.message, "infrastructure"));
	assert_true(gdn_iris_state("JOB_STATE_UNSCHEDULABLE", 23, &st));
	assert_true(gdn_iris_infrastructure(&st));
	assert_true(gdn_iris_state("killed", 6, &st));
	assert_true(gdn_iris_infrastructure(&st));
	assert_false(gdn_iris_state("preempted", 9, &st)); /* a task state, not a job's */
	assert_false(gdn_iris_state("9", 1, &st));
	assert_false(gdn_iris_state("", 0, &st));
	assert_false(gdn_iris_state("JOB_STATE_", 10, &st));
}

static void describe(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *text = "Job: /alice/x (x)\n"
			   "State: failed  exit=3  failures=1  preemptions=2\n"
			   "Tasks: 1/1 completed  failed=1\n"
			   "Error: Exit code 3\n\n"
			   "TASK STATE EXIT DURATION PEAK MEM CUR MEM DIAGNOSTIC\n";
	long pre = -1;

	(void)state;
	assert_int_equal(gdn_iris_parse_describe(text, strlen(text), &st, &pre, &err), 0);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_int_equal(st.exit_code, 3);
	assert_int_equal(pre, 2);
	text = "State: running  exit=-  failures=0  preemptions=0\n";
	assert_int_equal(gdn_iris_parse_describe(text, strlen(text), &st, NULL, &err), 0);
	assert_int_equal(st.state, GDN_JOB_RUNNING);
	assert_int_equal(st.exit_code, -1);
	text = "State: worker_failed  exit=0  failures=0  preemptions=101";
	assert_int_equal(gdn_iris_parse_describe(text, strlen(text), &st, &pre, &err), 0);
	assert_true(gdn_iris_infrastructure(&st));
	assert_int_equal(pre, 101);
	text = "Error: Could not connect to controller: refused\n";
	assert_int_equal(gdn_iris_parse_describe(text, strlen(text), &st, NULL, &err), GDN_EPARSE);
	assert_non_null(strstr(err.msg, "Could not connect"));
	text = "State: weird  exit=0\n";
	assert_int_equal(gdn_iris_parse_describe(text, strlen(text), &st, NULL, &err), GDN_EPARSE);
}

static void list_json(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	const char *text =
	    "W20260420 12:00:00 1 iris.cli.job a warning\n"
	    "[{\"job_id\": \"/u/j/child\", \"state\": \"JOB_STATE_RUNNING\"},\n"
	    " {\"job_id\": \"/u/j\", \"state\": \"JOB_STATE_FAILED\", \"exit_code\": 7,\n"
	    "  \"error\": \"Exit code 7\", \"preemption_count\": \"2\",\n"
	    "  \"submitted_at\": {\"epoch_ms\": \"1745150400000\"}}]\n";
	long pre = -1;

	(void)state;
	assert_int_equal(gdn_iris_parse_list_json(text, strlen(text), "/u/j", &st, &pre, &err), 0);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_int_equal(st.exit_code, 7);
	assert_string_equal(st.message, "Exit code 7");
	assert_int_equal(pre, 2);
	/* default-valued fields are left out: a finished job without exit_code exited 0 */
	text = "[{\"job_id\": \"/u/j\", \"state\": \"JOB_STATE_SUCCEEDED\"}]";
	assert_int_equal(gdn_iris_parse_list_json(text, strlen(text), "/u/j", &st, &pre, &err), 0);
	assert_int_equal(st.exit_code, 0);
	assert_int_equal(pre, 0);
	text = "[{\"job_id\": \"/u/j\", \"state\": 7}]";
	assert_int_equal(gdn_iris_parse_list_json(text, strlen(text), "/u/j", &st, NULL, &err), 0);
	assert_string_equal(st.native, "WORKER_FAILED");
	assert_int_equal(gdn_iris_parse_list_json(text, strlen(text), "/u/k", &st, NULL, &err),
			 GDN_ENOTFOUND);
	text = "[]";
	assert_int_equal(gdn_iris_parse_list_json(text, strlen(text), "/u/j", &st, NULL, &err),
			 GDN_ENOTFOUND);
	text = "No jobs found.";
	assert_int_equal(gdn_iris_parse_list_json(text, strlen(text), "/u/j", &st, NULL, &err),
			 GDN_EPARSE);
	text = "[{\"job_id\": \"/u/j\", \"state\": \"JOB_STATE_BOGUS\"}]";
	assert_int_equal(gdn_iris_parse_list_json(text, strlen(text), "/u/j", &st, NULL, &err),
			 GDN_EPARSE);
}

static void help(void **state)
{
	struct gdn_iris_cli cli;
	struct gdn_err err = GDN_ERR_INIT;
	const char *d = "Usage: iris job [OPTIONS] COMMAND [ARGS]...\n\n"
			"Options:\n  --help  Show this message and exit.\n\n"
			"Commands:\n  cancel    Cancel.\n  describe  Describe.\n  list  L\n"
			"  logs  L\n  run       Run.\n  wait      Wait.\n";
	const char *a = "Commands:\n  kill  K\n  list  L\n  logs  L\n  run  R\n  stop  S\n";
	const char *bad = "Commands:\n  list  L\n  logs  L\n  run  R\n";
	const char *norun = "Commands:\n  list  L\n  logs  L\n  stop  S\nOptions:\n  run\n";

	(void)state;
	assert_int_equal(gdn_iris_parse_help(d, strlen(d), &cli, &err), GDN_IRIS_GEN_CANCEL);
	assert_true(cli.wait);
	assert_int_equal(gdn_iris_parse_help(a, strlen(a), &cli, &err), GDN_IRIS_GEN_STOP);
	assert_false(cli.cancel);
	assert_int_equal(gdn_iris_parse_help(bad, strlen(bad), &cli, &err), GDN_IRIS_GEN_UNKNOWN);
	assert_non_null(strstr(err.msg, "missing: cancel, describe, stop)"));
	assert_int_equal(gdn_iris_parse_help(norun, strlen(norun), &cli, &err),
			 GDN_IRIS_GEN_UNKNOWN);
	assert_non_null(strstr(err.msg, "no 'job run'"));
	assert_int_equal(gdn_iris_parse_help("", 0, &cli, &err), GDN_IRIS_GEN_UNKNOWN);
}

static void expect_log(const char *line, const char *want)
{
	const char *data;
	size_t n;
	bool ok = gdn_iris_log_data(line, strlen(line), &data, &n);

	if (!want) {
		assert_false(ok);
		assert_ptr_equal(data, line);
		return;
	}
	assert_true(ok);
	assert_int_equal(n, strlen(want));
	assert_memory_equal(data, want, n);
}

static void log_lines(void **state)
{
	(void)state;
	expect_log("[12:00:00 UTC] task=/u/j/0 attempt=0 | tokens/s 123", "tokens/s 123");
	expect_log("[12:00:00] task=/u/j/0 | a | b", "a | b");
	expect_log("[12:00:00] worker=w1 task=/u/j/0 | x", "x");
	expect_log("[12:00:00] task=/u/j/0 attempt=1 |", "");
	expect_log("plain line", NULL);
	expect_log("[12:00:00] something | else", NULL);
	expect_log("[12:00:00", NULL);
	expect_log("[", NULL);
}

static void job_names(void **state)
{
	char *n = gdn_iris_job_name("My Run/x");

	(void)state;
	assert_memory_equal(n, "my-run-x-", 9);
	for (const char *p = n; *p; p++)
		assert_true(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-');
	free(n);
	n = gdn_iris_job_name(NULL);
	assert_memory_equal(n, "gdnctl-", 7);
	free(n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(submit_ids), cmocka_unit_test(ids),       cmocka_unit_test(states),
	    cmocka_unit_test(describe),	  cmocka_unit_test(list_json), cmocka_unit_test(help),
	    cmocka_unit_test(log_lines),  cmocka_unit_test(job_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
