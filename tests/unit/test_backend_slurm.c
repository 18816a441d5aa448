/*
 * Unit tests for the Slurm output parsers (src/backend/slurm.c): sbatch
 * --parsable, job ids given by users, squeue, sacct and scontrol output,
 * every state class, "CANCELLED by 0", ExitCode "3:0" and "0:15".
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/sbuf.h"

/* The parsers take the output's length; these read C strings. */
static int parse_sbatch(const char *out, struct gdn_slurm_job *job, struct gdn_err *err)
{
	return gdn_slurm_parse_sbatch(out, strlen(out), job, err);
}

static int parse_squeue(const char *out, struct gdn_job_status *st, struct gdn_err *err)
{
	return gdn_slurm_parse_squeue(out, strlen(out), st, err);
}

static int parse_sacct(const char *out, const char *id, struct gdn_job_status *st)
{
	return gdn_slurm_parse_sacct(out, strlen(out), id, st);
}

static int parse_scontrol(const char *out, struct gdn_job_status *st, struct sbuf *path)
{
	return gdn_slurm_parse_scontrol(out, strlen(out), st, path);
}

static void test_sbatch_plain(void **state)
{
	struct gdn_slurm_job job;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(parse_sbatch("12\n", &job, &err), 0);
	assert_string_equal(job.id, "12");
	assert_string_equal(job.cluster, "");
	assert_int_equal(parse_sbatch("  12345  ", &job, &err), 0);
	assert_string_equal(job.id, "12345");
}

static void test_sbatch_cluster(void **state)
{
	struct gdn_slurm_job job;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;

	assert_int_equal(parse_sbatch("12;cluster\n", &job, &err), 0);
	assert_string_equal(job.id, "12");
	assert_string_equal(job.cluster, "cluster");
	gdn_slurm_format_job_id(&job, &sb);
	assert_string_equal(sb.buf, "12@cluster");
	sbuf_release(&sb);
}

static void test_sbatch_warnings_first(void **state)
{
	struct gdn_slurm_job job;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(parse_sbatch("sbatch: warning: can't honor --mem\n77\n", &job, &err), 0);
	assert_string_equal(job.id, "77");
}

static void test_sbatch_garbage(void **state)
{
	static const char *const bad[] = {
	    "",
	    "\n\n",
	    "Submitted batch job 12\n",
	    "sbatch: error: Batch job submission failed: Invalid partition name specified\n",
	    "12;\n",
	    "12;-x\n",
	    "12;a b\n",
	    "-12\n",
	    "12abc\n",
	    "1234567890123456789012345678901234567890\n",
	    "12;$(touch pwned)\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct gdn_slurm_job job;
		struct gdn_err err = GDN_ERR_INIT;

		assert_int_equal(parse_sbatch(bad[i], &job, &err), GDN_EPARSE);
		assert_non_null(strstr(err.msg, "sbatch printed no job id"));
		assert_null(strchr(err.msg, '\n'));
	}
}

static void test_job_id(void **state)
{
	struct gdn_slurm_job job;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_slurm_parse_job_id("12", &job, &err), 0);
	assert_string_equal(job.id, "12");
	assert_int_equal(gdn_slurm_parse_job_id("12_3", &job, &err), 0);
	assert_string_equal(job.id, "12_3");
	assert_int_equal(gdn_slurm_parse_job_id("12@hpc", &job, &err), 0);
	assert_string_equal(job.cluster, "hpc");
	assert_int_equal(gdn_slurm_parse_job_id("12;hpc", &job, &err), 0);
	assert_string_equal(job.cluster, "hpc");
	static const char *const bad[] = {"",	    "--help", "; rm -rf x", "$(touch pwned)",
					  "`id`",   "a b",    "12 13",	    "12\n13",
					  "12@",    "12@-M",  "_3",	    "12_",
					  "12@a;b", "12@a b"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(gdn_slurm_parse_job_id(bad[i], &job, &err), GDN_EUSAGE);
		assert_non_null(strstr(err.msg, "invalid Slurm job id"));
		assert_null(strchr(err.msg, '\n'));
	}
}

static void check_state(const char *name, const char *code, enum gdn_job_state want, bool final,
			const char *native, int exit_code)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;

	assert_true(gdn_slurm_state(name, strlen(name), code, code ? strlen(code) : 0, &st));
	assert_int_equal(st.state, want);
	assert_int_equal(st.final, final);
	assert_string_equal(st.native, native);
	assert_int_equal(st.exit_code, exit_code);
}

static void test_states(void **state)
{
	check_state("PENDING", NULL, GDN_JOB_PENDING, false, "PENDING", -1);
	check_state("CONFIGURING", NULL, GDN_JOB_PENDING, false, "CONFIGURING", -1);
	check_state("REQUEUED", NULL, GDN_JOB_PENDING, false, "REQUEUED", -1);
	check_state("RUNNING", NULL, GDN_JOB_RUNNING, false, "RUNNING", -1);
	check_state("COMPLETING", NULL, GDN_JOB_RUNNING, false, "COMPLETING", -1);
	check_state("SUSPENDED", NULL, GDN_JOB_RUNNING, false, "SUSPENDED", -1);
	check_state("COMPLETED", "0:0", GDN_JOB_SUCCEEDED, true, "COMPLETED", 0);
	check_state("FAILED", "3:0", GDN_JOB_FAILED, true, "FAILED", 3);
	check_state("FAILED", "0:9", GDN_JOB_FAILED, true, "FAILED", 137);
	check_state("TIMEOUT", "0:15", GDN_JOB_FAILED, true, "TIMEOUT", 143);
	check_state("OUT_OF_MEMORY", "0:125", GDN_JOB_FAILED, true, "OUT_OF_MEMORY", 253);
	check_state("NODE_FAIL", "0:0", GDN_JOB_FAILED, true, "NODE_FAIL", 0);
	check_state("PREEMPTED", NULL, GDN_JOB_FAILED, true, "PREEMPTED", -1);
	check_state("BOOT_FAIL", NULL, GDN_JOB_FAILED, true, "BOOT_FAIL", -1);
	check_state("DEADLINE", NULL, GDN_JOB_FAILED, true, "DEADLINE", -1);
	check_state("CANCELLED", "0:15", GDN_JOB_STOPPED, true, "CANCELLED", 143);
	check_state("CANCELLED+", "0:0", GDN_JOB_STOPPED, true, "CANCELLED", 0);
	check_state("  RUNNING \n", NULL, GDN_JOB_RUNNING, false, "RUNNING", -1);
	check_state("FAILED", "garbage", GDN_JOB_FAILED, true, "FAILED", -1);
	check_state("FAILED", "1:", GDN_JOB_FAILED, true, "FAILED", -1);
	check_state("FAILED", "999:0", GDN_JOB_FAILED, true, "FAILED", -1);
}

static void test_cancelled_by(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	const char *s = "CANCELLED by 0";

	assert_true(gdn_slurm_state(s, strlen(s), "0:15", 4, &st));
	assert_int_equal(st.state, GDN_JOB_STOPPED);
	assert_true(st.final);
	assert_string_equal(st.native, "CANCELLED");
	assert_string_equal(st.message, "cancelled by uid 0");
	/* a COMPLETED with a non-zero code is not success */
	assert_true(gdn_slurm_state("COMPLETED", 9, "2:0", 3, &st));
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_int_equal(st.exit_code, 2);
}

static void test_not_states(void **state)
{
	static const char *const bad[] = {
	    "", "running", "slurm_load_jobs error", "DONE", "PENDING2", "COMPLETEDX", "+", "by 0"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct gdn_job_status st = GDN_JOB_STATUS_INIT;

		assert_false(gdn_slurm_state(bad[i], strlen(bad[i]), NULL, 0, &st));
	}
}

static void test_squeue(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(parse_squeue("RUNNING\n", &st, &err), 1);
	assert_int_equal(st.state, GDN_JOB_RUNNING);
	assert_int_equal(parse_squeue("\nPENDING\n", &st, &err), 1);
	assert_int_equal(st.state, GDN_JOB_PENDING);
	/* empty: not in the queue (never success by itself) */
	assert_int_equal(parse_squeue("", &st, &err), 0);
	assert_int_equal(parse_squeue("\n", &st, &err), 0);
	assert_int_equal(
	    parse_squeue("slurm_load_jobs error: Invalid job id specified\n", &st, &err), 0);
	assert_int_equal(parse_squeue("squeue: error: Unable to contact slurm controller "
				      "(connect failure)\n",
				      &st, &err),
			 GDN_EPARSE);
	assert_non_null(strstr(err.msg, "unexpected output from squeue"));
}

static void test_sacct(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;

	assert_int_equal(parse_sacct("12|FAILED|1:0\n", "12", &st), 1);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_int_equal(st.exit_code, 1);
	assert_int_equal(parse_sacct("12|CANCELLED by 0|0:15\n", "12", &st), 1);
	assert_int_equal(st.state, GDN_JOB_STOPPED);
	assert_string_equal(st.message, "cancelled by uid 0");
	assert_int_equal(parse_sacct("12|TIMEOUT|0:15|00:01:02|\n", "12", &st), 1);
	assert_string_equal(st.native, "TIMEOUT");
	assert_int_equal(parse_sacct("12|COMPLETED|0:0\n", "12", &st), 1);
	assert_int_equal(st.state, GDN_JOB_SUCCEEDED);
	/* a requeued job: the last line wins; other ids are ignored */
	assert_int_equal(parse_sacct("12|NODE_FAIL|0:0\n123|COMPLETED|0:0\n"
				     "12|OUT_OF_MEMORY|0:125\n",
				     "12", &st),
			 1);
	assert_string_equal(st.native, "OUT_OF_MEMORY");
	/* accounting disabled, or nothing */
	st = (struct gdn_job_status)GDN_JOB_STATUS_INIT;
	assert_int_equal(parse_sacct("Slurm accounting storage is disabled\n", "12", &st), 0);
	assert_int_equal(st.state, GDN_JOB_UNKNOWN);
	assert_int_equal(parse_sacct("", "12", &st), 0);
	assert_int_equal(parse_sacct("12|WEIRD|0:0\n", "12", &st), 0);
	assert_int_equal(parse_sacct("12|FAILED\n", "12", &st), 0);
	assert_int_equal(parse_sacct("1|FAILED|1:0\n", "12", &st), 0);
}

static const char scontrol_failed[] =
    "JobId=1 JobName=my job\n"
    "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
    "   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)\n"
    "   Requeue=1 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=3:0\n"
    "   Command=/tmp/x/j1.sh\n"
    "   StdErr=/tmp/o d/slurm-1.out\n"
    "   StdIn=/dev/null\n"
    "   StdOut=/tmp/o d/slurm-1.out\n"
    "   Power=\n";

static void test_scontrol(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct sbuf path = SBUF_INIT;

	assert_int_equal(parse_scontrol(scontrol_failed, &st, &path), 1);
	assert_int_equal(st.state, GDN_JOB_FAILED);
	assert_int_equal(st.exit_code, 3);
	assert_string_equal(st.native, "FAILED");
	assert_string_equal(st.message, "reason: NonZeroExitCode");
	assert_string_equal(path.buf, "/tmp/o d/slurm-1.out");

	sbuf_reset(&path);
	assert_int_equal(parse_scontrol("JobId=5 JobName=x UserId=root(0) "
					"JobState=CANCELLED Reason=None Dependency=(null) "
					"ExitCode=0:15 StdIn=/dev/null "
					"StdOut=/a b/slurm-5.out Power=\n",
					&st, &path),
			 1);
	assert_int_equal(st.state, GDN_JOB_STOPPED);
	assert_int_equal(st.exit_code, 143);
	assert_string_equal(st.message, "");
	assert_string_equal(path.buf, "/a b/slurm-5.out");

	assert_int_equal(parse_scontrol("   JobState=TIMEOUT Reason=TimeLimit\n"
					"   ExitCode=0:15\n",
					&st, NULL),
			 1);
	assert_string_equal(st.native, "TIMEOUT");
	assert_string_equal(st.message, "reason: TimeLimit");
	assert_int_equal(parse_scontrol("   JobState=RUNNING Reason=None\n", &st, NULL), 1);
	assert_false(st.final);

	/* unknown job, garbage, a key inside another value */
	assert_int_equal(
	    parse_scontrol("slurm_load_jobs error: Invalid job id specified\n", &st, NULL), 0);
	assert_int_equal(parse_scontrol("", &st, NULL), 0);
	assert_int_equal(parse_scontrol("XJobState=FAILED\n", &st, NULL), 0);
	assert_int_equal(parse_scontrol("JobState=WHATEVER\n", &st, NULL), 0);
	sbuf_release(&path);
}

/* A NUL byte in a client's output: no value is read from it, never one it cut short. */
static void test_nul_bytes(void **state)
{
	static const char sbatch[] = "12\0;cluster\n", sbatch_cut[] = "1\0002\n";
	static const char squeue[] = "RUNNING\0\n";
	static const char sacct[] = "12|FAILED|1\0:0\n";
	static const char scontrol[] = "JobState=FAILED ExitCode=0:0\n StdOut=/tmp/a\0b\n";
	struct gdn_slurm_job job;
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf path = SBUF_INIT;

	assert_int_equal(gdn_slurm_parse_sbatch(sbatch, sizeof(sbatch) - 1, &job, &err),
			 GDN_EPARSE);
	assert_non_null(strstr(err.msg, "NUL byte"));
	assert_int_equal(gdn_slurm_parse_sbatch(sbatch_cut, sizeof(sbatch_cut) - 1, &job, &err),
			 GDN_EPARSE);
	assert_int_equal(gdn_slurm_parse_squeue(squeue, sizeof(squeue) - 1, &st, &err), GDN_EPARSE);
	assert_int_equal(gdn_slurm_parse_sacct(sacct, sizeof(sacct) - 1, "12", &st), 0);
	assert_int_equal(st.state, GDN_JOB_UNKNOWN);
	assert_int_equal(gdn_slurm_parse_scontrol(scontrol, sizeof(scontrol) - 1, &st, &path), 0);
	assert_int_equal(path.len, 0);
	/* the length is the end: nothing past it is read */
	assert_int_equal(gdn_slurm_parse_sbatch("12\n34", 3, &job, &err), 0);
	assert_string_equal(job.id, "12");
	sbuf_release(&path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sbatch_plain),
	    cmocka_unit_test(test_sbatch_cluster),
	    cmocka_unit_test(test_sbatch_warnings_first),
	    cmocka_unit_test(test_sbatch_garbage),
	    cmocka_unit_test(test_job_id),
	    cmocka_unit_test(test_states),
	    cmocka_unit_test(test_cancelled_by),
	    cmocka_unit_test(test_not_states),
	    cmocka_unit_test(test_squeue),
	    cmocka_unit_test(test_sacct),
	    cmocka_unit_test(test_scontrol),
	    cmocka_unit_test(test_nul_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
