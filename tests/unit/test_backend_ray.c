/*
 * Unit tests for parsing what the Ray job CLI and Marin's wrappers print
 * (src/backend/marin.c). The lines are the tools' own, quoted from
 * ray-project/ray python/ray/dashboard/modules/job/cli.py and Marin's
 * lib/marin/src/marin/run/ray_run.py and scripts/ray/cluster.py.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/marin.h"

static char *parse_id(const char *text)
{
	return gdn_ray_parse_submission_id(text, strlen(text));
}

static void expect_id(const char *text, const char *want)
{
	char *id = parse_id(text);

	if (!want) {
		assert_null(id);
		return;
	}
	assert_non_null(id);
	assert_string_equal(id, want);
	free(id);
}

static void submission_ids(void **state)
{
	/* Marin ray_run.py: logger.info(f"Job submitted with ID: {submission_id}") */
	expect_id("2025-01-01 00:00:00,000 - INFO - Job submitted with ID: ray-run-demo\n",
		  "ray-run-demo");
	expect_id("Job submitted with ID: ray-run-demo", "ray-run-demo");
	/* \s* may cross lines, [^\s]+ stops at any white space */
	expect_id("Job submitted with ID:\n\t raysubmit_X1\r\nnext", "raysubmit_X1");
	expect_id("Job submitted with ID:   \n", NULL);
	/* the first match wins */
	expect_id("Job submitted with ID: a\nJob submitted with ID: b\n", "a");
	/* ray job submit: _log_big_success_msg(f"Job '{job_id}' submitted successfully") */
	expect_id("Job submission server address: http://127.0.0.1:8265\n"
		  "-------------------------------------------------------\n"
		  "Job 'raysubmit_4LamXRuQpYdSMg7J' submitted successfully\n"
		  "-------------------------------------------------------\n",
		  "raysubmit_4LamXRuQpYdSMg7J");
	expect_id("2024-01-01 00:00:00,000\tSUCC cli.py:60 -- Job 'raysubmit_a' submitted "
		  "successfully",
		  "raysubmit_a");
	/* Marin's form is preferred */
	expect_id("Job 'x' submitted successfully\nJob submitted with ID: y\n", "y");
	expect_id("Job '' submitted successfully\nJob 'ok' submitted successfully", "ok");
	expect_id("Job 'x' submitted", NULL);
	expect_id("Job 'x", NULL);
	expect_id("nothing here", NULL);
	expect_id("", NULL);
}

static void long_ids_are_refused(void **state)
{
	char text[600];

	memcpy(text, "Job submitted with ID: ", 23);
	memset(text + 23, 'a', 400);
	text[423] = '\0';
	assert_null(parse_id(text));
}

/* A NUL byte where the id is: no id, never an empty or a cut one (fuzz_ray found it). */
static void nul_in_ids_is_no_id(void **state)
{
	static const char crash[] = "JobJob submitted with ID:\0  ";
	static const char cut[] = "Job submitted with ID: ray\0run\n";
	static const char plain[] = "Job '\0' submitted successfully\n";
	static const char plain_cut[] = "Job 'ray\0x' submitted successfully\n";

	assert_null(gdn_ray_parse_submission_id(crash, sizeof(crash) - 1));
	assert_null(gdn_ray_parse_submission_id(cut, sizeof(cut) - 1));
	assert_null(gdn_ray_parse_submission_id(plain, sizeof(plain) - 1));
	assert_null(gdn_ray_parse_submission_id(plain_cut, sizeof(plain_cut) - 1));
}

static void states_by_name(void **state)
{
	enum gdn_job_state s;

	assert_true(gdn_ray_state_from_name("PENDING", 7, &s));
	assert_int_equal(s, GDN_JOB_PENDING);
	assert_true(gdn_ray_state_from_name("RUNNING", 7, &s));
	assert_int_equal(s, GDN_JOB_RUNNING);
	assert_true(gdn_ray_state_from_name("STOPPED", 7, &s));
	assert_int_equal(s, GDN_JOB_STOPPED);
	assert_true(gdn_ray_state_from_name("SUCCEEDED", 9, &s));
	assert_int_equal(s, GDN_JOB_SUCCEEDED);
	assert_true(gdn_ray_state_from_name("FAILED", 6, &s));
	assert_int_equal(s, GDN_JOB_FAILED);
	assert_false(gdn_ray_state_from_name("running", 7, &s));
	assert_false(gdn_ray_state_from_name("FAILEDX", 7, &s));
	assert_false(gdn_ray_state_from_name("", 0, &s));
}

static bool status_line(const char *line, const char *id, struct gdn_job_status *st)
{
	return gdn_ray_parse_status_line(line, strlen(line), id, st);
}

static void ray_status_lines(void **state)
{
	struct gdn_job_status st = {0};

	assert_true(status_line("Status for job 'raysubmit_a': RUNNING", "raysubmit_a", &st));
	assert_int_equal(st.state, GDN_JOB_RUNNING);
	assert_false(st.final);
	assert_string_equal(st.native, "RUNNING");
	assert_false(status_line("Status message: Job is currently running.", NULL, &st));
	assert_string_equal(st.message, "Job is currently running.");

	assert_true(status_line("Status for job 'raysubmit_a': PENDING", NULL, &st));
	assert_int_equal(st.state, GDN_JOB_PENDING);

	assert_true(status_line("Job 'raysubmit_a' succeeded", "raysubmit_a", &st));
	assert_int_equal(st.state, GDN_JOB_SUCCEEDED);
	assert_true(st.final);
	assert_string_equal(st.native, "SUCCEEDED");

	/* STOPPED is final and not success */
	assert_true(status_line("Job 'raysubmit_a' was stopped", "raysubmit_a", &st));
	assert_int_equal(st.state, GDN_JOB_STOPPED);
	assert_true(st.final);

	assert_true(status_line("Job 'raysubmit_a' failed", "raysubmit_a", &st));
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_true(st.final);

	/* a record-style prefix is fine */
	assert_true(status_line("2024-01-01 00:00:00,000\tERR cli.py:1 -- Job 'raysubmit_a' failed",
				"raysubmit_a", &st));
	assert_int_equal(st.state, GDN_JOB_FAILED);

	/* ray job stop, while waiting */
	assert_true(status_line("Job has not exited yet. Status: RUNNING", NULL, &st));
	assert_int_equal(st.state, GDN_JOB_RUNNING);

	/* another job, unknown words, lookalikes */
	memset(&st, 0, sizeof(st));
	assert_false(status_line("Job 'other' succeeded", "raysubmit_a", &st));
	assert_false(status_line("Status for job 'raysubmit_a': BOGUS", "raysubmit_a", &st));
	assert_false(status_line("Job 'raysubmit_a' failedover", "raysubmit_a", &st));
	assert_false(status_line("Job 'raysubmit_a' submitted successfully", "raysubmit_a", &st));
	assert_false(status_line("Job '' failed", NULL, &st));
	assert_int_equal(st.state, GDN_JOB_UNKNOWN);
}

static void long_messages_are_cut(void **state)
{
	struct gdn_job_status st = {0};
	char line[1000];

	memcpy(line, "Status message: ", 16);
	memset(line + 16, 'm', 900);
	line[916] = '\0';
	status_line(line, NULL, &st);
	assert_int_equal(strlen(st.message), sizeof(st.message) - 1);
}

static void marin_wait_lines(void **state)
{
	struct gdn_job_status st = {0};
	const char *l;

	/* cluster.py wait-job: print(f"[{ts}] {submission_id} status={status} {message}") */
	l = "[2025-01-01 12:00:00] ray-run-demo status=RUNNING Job is currently running.";
	assert_true(gdn_marin_parse_wait_line(l, strlen(l), "ray-run-demo", &st));
	assert_int_equal(st.state, GDN_JOB_RUNNING);
	assert_false(st.final);
	assert_string_equal(st.message, "Job is currently running.");
	l = "[2025-01-01 12:00:05] ray-run-demo status=FAILED";
	assert_true(gdn_marin_parse_wait_line(l, strlen(l), NULL, &st));
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_true(st.final);
	assert_string_equal(st.message, "");
	l = "[2025-01-01 12:00:05] other status=SUCCEEDED done";
	assert_false(gdn_marin_parse_wait_line(l, strlen(l), "ray-run-demo", &st));
	l = "Timeout reached while waiting for job completion.";
	assert_false(gdn_marin_parse_wait_line(l, strlen(l), NULL, &st));
	l = "[x] y status=";
	assert_false(gdn_marin_parse_wait_line(l, strlen(l), NULL, &st));
	assert_false(gdn_marin_parse_wait_line("[", 1, NULL, &st));
}

static void marin_job_list(void **state)
{
	static const char list[] =
	    "2025-01-01 - INFO - connecting\n"
	    "[\n"
	    "  {\"submission_id\": \"ray-run-a\", \"status\": \"RUNNING\", \"message\": \"m\"},\n"
	    "  {\"submission_id\": \"ray-run-b\", \"status\": \"FAILED\", \"message\": "
	    "\"Job failed.\", \"driver_exit_code\": 3},\n"
	    "  {\"submission_id\": null}\n"
	    "]\n";
	struct gdn_job_status st = {.exit_code = -1};
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_ray_parse_job_list(list, strlen(list), "ray-run-b", &st, &err), 0);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_true(st.final);
	assert_int_equal(st.exit_code, 3);
	assert_string_equal(st.message, "Job failed.");
	assert_int_equal(gdn_ray_parse_job_list(list, strlen(list), "ray-run-a", &st, &err), 0);
	assert_int_equal(st.state, GDN_JOB_RUNNING);
	assert_int_equal(gdn_ray_parse_job_list(list, strlen(list), "nope", &st, &err),
			 GDN_ENOTFOUND);
	assert_string_equal(err.msg, "job 'nope' is not in the list of jobs");
	assert_int_equal(gdn_ray_parse_job_list("{}", 2, "a", &st, &err), GDN_EPARSE);
	assert_int_equal(gdn_ray_parse_job_list("[1,", 3, "a", &st, &err), GDN_EPARSE);
	assert_int_equal(gdn_ray_parse_job_list("", 0, "a", &st, &err), GDN_EPARSE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(submission_ids),	   cmocka_unit_test(long_ids_are_refused),
	    cmocka_unit_test(nul_in_ids_is_no_id), cmocka_unit_test(states_by_name),
	    cmocka_unit_test(ray_status_lines),	   cmocka_unit_test(long_messages_are_cut),
	    cmocka_unit_test(marin_wait_lines),	   cmocka_unit_test(marin_job_list),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
