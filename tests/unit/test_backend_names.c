/*
 * Unit tests for what reaches ssh and remote shells: name checks (hosts,
 * users, job ids, free text) with the nasty names, remote command
 * quoting, the job shim's status lines, and that a remote command string
 * built from the nasty names, run by a real `sh -c` as ssh's remote side
 * would, gives back exactly the words it was built from and runs nothing
 * else.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/backend.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"

static const char *const nasty[] = {
    "; rm -rf x", "$(touch pwned)", "`id`", "--help", "a b",  "it's", "\"dq\"", "a\\b",	 "*",
    "~user",	  "$HOME",	    "&&",   "|",      "x\ty", "-",    "!",	"{a,b}",
};

static void test_host(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_check_host("box.example.com", "host", GDN_ECONFIG, &err), 0);
	assert_int_equal(gdn_check_host("127.0.0.1", "host", GDN_ECONFIG, &err), 0);
	assert_int_equal(gdn_check_host("[::1]", "host", GDN_ECONFIG, &err), 0);
	assert_int_equal(gdn_check_host("fe80::1%eth0", "host", GDN_ECONFIG, &err), 0);
	for (size_t i = 0; i < ARRAY_SIZE(nasty); i++) {
		assert_int_equal(gdn_check_host(nasty[i], "host", GDN_ECONFIG, &err), GDN_ECONFIG);
		assert_null(strchr(err.msg, '\n'));
	}
	assert_int_equal(gdn_check_host("-oProxyCommand=x", "host", GDN_ECONFIG, &err),
			 GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "starts with '-'"));
	assert_int_equal(gdn_check_host("a\nb", "backends.x.host", GDN_ECONFIG, &err), GDN_ECONFIG);
	assert_string_equal(err.msg, "invalid backends.x.host 'a\\nb': a host is letters, digits "
				     "and . - _ : % [ ] only");
	assert_int_equal(gdn_check_host("", "host", GDN_EUSAGE, &err), GDN_EUSAGE);
}

static void test_user(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_check_user("alice", "user", GDN_ECONFIG, &err), 0);
	assert_int_equal(gdn_check_user("first.last-2_x", "user", GDN_ECONFIG, &err), 0);
	for (size_t i = 0; i < ARRAY_SIZE(nasty); i++)
		assert_int_equal(gdn_check_user(nasty[i], "user", GDN_ECONFIG, &err), GDN_ECONFIG);
	assert_int_equal(gdn_check_user("-lroot", "user", GDN_ECONFIG, &err), GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "starts with '-'"));
	assert_int_equal(gdn_check_user("a@b", "user", GDN_ECONFIG, &err), GDN_ECONFIG);
}

static void test_job_id(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;

	assert_int_equal(gdn_check_job_id("20250101-120000-a1b2c3", GDN_EUSAGE, &err), 0);
	assert_int_equal(gdn_check_job_id("_x.y", GDN_EUSAGE, &err), 0);
	for (size_t i = 0; i < ARRAY_SIZE(nasty); i++)
		assert_int_equal(gdn_check_job_id(nasty[i], GDN_EUSAGE, &err), GDN_EUSAGE);
	assert_int_equal(gdn_check_job_id("..", GDN_EUSAGE, &err), GDN_EUSAGE);
	assert_int_equal(gdn_check_job_id("../../etc", GDN_EUSAGE, &err), GDN_EUSAGE);
	assert_int_equal(gdn_check_job_id("a/b", GDN_EUSAGE, &err), GDN_EUSAGE);
	assert_int_equal(gdn_check_job_id("", GDN_EUSAGE, &err), GDN_EUSAGE);
	assert_int_equal(gdn_check_job_id("a\nb", GDN_EUSAGE, &err), GDN_EUSAGE);
	assert_string_equal(err.msg,
			    "invalid job id 'a\\nb': a job id is letters, digits and . _ - "
			    "only");
}

static void test_text(void **state)
{
	struct gdn_err err = GDN_ERR_INIT;
	char *longval = xcalloc(5000, 1);

	for (size_t i = 0; i < ARRAY_SIZE(nasty); i++)
		if (!strchr(nasty[i], '\t'))
			assert_int_equal(gdn_check_text(nasty[i], "workdir", GDN_ECONFIG, &err), 0);
	assert_int_equal(gdn_check_text("a\nb", "workdir", GDN_ECONFIG, &err), GDN_ECONFIG);
	assert_non_null(strstr(err.msg, "newline"));
	assert_int_equal(gdn_check_text("a\rb", "workdir", GDN_ECONFIG, &err), GDN_ECONFIG);
	memset(longval, 'a', 4999);
	assert_int_equal(gdn_check_text(longval, "workdir", GDN_ECONFIG, &err), GDN_ECONFIG);
	/* long values are cut in messages */
	assert_true(strlen(err.msg) < 200);
	free(longval);
}

static void test_sh_path(void **state)
{
	struct sbuf sb = SBUF_INIT;

	gdn_sh_add_path(&sb, "~/marin dir");
	assert_string_equal(sb.buf, "\"$HOME\"/'marin dir'");
	sbuf_reset(&sb);
	gdn_sh_add_path(&sb, "~");
	assert_string_equal(sb.buf, "\"$HOME\"");
	sbuf_reset(&sb);
	gdn_sh_add_path(&sb, "~/");
	assert_string_equal(sb.buf, "\"$HOME\"/");
	sbuf_reset(&sb);
	gdn_sh_add_path(&sb, "~user/x");
	assert_string_equal(sb.buf, "'~user/x'");
	sbuf_reset(&sb);
	gdn_sh_add_path(&sb, "/srv/$(touch pwned)");
	assert_string_equal(sb.buf, "'/srv/$(touch pwned)'");
	sbuf_release(&sb);
}

static void test_remote_command(void **state)
{
	struct sbuf sb = SBUF_INIT;
	const char *env[] = {"A=1", "HF_TOKEN=it's", NULL};
	const char *args[] = {"run", "~/.cache/gdnctl/jobs/x", "fg", "echo", "a b", NULL};

	gdn_ssh_remote_command(&sb, "/srv/wd", env, args);
	assert_string_equal(sb.buf, "cd -- /srv/wd && env A=1 'HF_TOKEN=it'\\''s' bash -s -- run "
				    "'~/.cache/gdnctl/jobs/x' fg echo 'a b'");
	sbuf_reset(&sb);
	gdn_ssh_remote_command(&sb, NULL, NULL, args);
	assert_string_equal(sb.buf, "bash -s -- run '~/.cache/gdnctl/jobs/x' fg echo 'a b'");
	sbuf_reset(&sb);
	gdn_ssh_remote_command(&sb, "-x", NULL, NULL);
	assert_string_equal(sb.buf, "cd -- -x && bash -s --");
	sbuf_release(&sb);
}

struct lines {
	struct strvec v;
};

static int collect(const char *line, size_t len, void *payload)
{
	strvec_push(&((struct lines *)payload)->v, line);
	return 0;
}

/*
 * What ssh's remote side does with the command string: `sh -c STRING`.
 * With every nasty word as an argument (and in the directory and the
 * environment), the words come back exactly, and nothing else runs.
 */
static void test_remote_command_roundtrip(void **state)
{
	char tmpl[] = "/tmp/gdnctl-test-remote.XXXXXX";
	char *dir = mkdtemp(tmpl);
	struct sbuf remote = SBUF_INIT, wd = SBUF_INIT, pwned = SBUF_INIT;
	struct strvec args = STRVEC_INIT;
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct lines out = {STRVEC_INIT};
	const char *env[] = {"V=$(touch pwned) `id` ; rm -rf x it's", NULL};
	size_t i;

	assert_non_null(dir);
	sbuf_addf(&wd, "%s/$(touch pwned) a b; it's", dir);
	assert_int_equal(mkdir(wd.buf, 0700), 0);
	for (i = 0; i < ARRAY_SIZE(nasty); i++)
		strvec_push(&args, nasty[i]);
	gdn_ssh_remote_command(&remote, wd.buf, env, args.v);
	p.argv = (const char *[]){"sh", "-c", remote.buf, NULL};
	/* stand-in for the job shim: print the working directory, $V and each argument */
	p.stdin_text = "pwd; printf '%s\\n' \"$V\"; for a; do printf '<%s>\\n' \"$a\"; done\n";
	p.dir = dir;
	p.on_line = collect;
	p.payload = &out;
	assert_int_equal(gdn_proc_run(&p, &err), 0);
	assert_int_equal(p.status_kind, GDN_PROC_EXITED);
	assert_int_equal(p.code, 0);
	assert_int_equal(out.v.nr, ARRAY_SIZE(nasty) + 2);
	assert_string_equal(out.v.v[0], wd.buf);
	assert_string_equal(out.v.v[1], env[0] + 2);
	for (i = 0; i < ARRAY_SIZE(nasty); i++) {
		struct sbuf want = SBUF_INIT;

		sbuf_addf(&want, "<%s>", nasty[i]);
		assert_string_equal(out.v.v[i + 2], want.buf);
		sbuf_release(&want);
	}
	/* and nothing else ran */
	sbuf_addf(&pwned, "%s/pwned", dir);
	assert_int_not_equal(access(pwned.buf, F_OK), 0);
	sbuf_reset(&pwned);
	sbuf_addf(&pwned, "%s/pwned", wd.buf);
	assert_int_not_equal(access(pwned.buf, F_OK), 0);

	rmdir(wd.buf);
	rmdir(dir);
	gdn_proc_release(&p);
	strvec_clear(&args);
	strvec_clear(&out.v);
	sbuf_release(&remote);
	sbuf_release(&wd);
	sbuf_release(&pwned);
}

static void parse_ok(const char *text, enum gdn_job_state want, const char *native, int code,
		     const char *data)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	size_t off = 99;

	assert_int_equal(gdn_job_parse_shim(text, strlen(text), &st, &off, &err), 0);
	assert_int_equal(st.state, want);
	assert_string_equal(st.native, native);
	assert_int_equal(st.exit_code, code);
	assert_string_equal(text + off, data);
}

static void test_shim_status(void **state)
{
	parse_ok("gdnctl-job: running\n", GDN_JOB_RUNNING, "RUNNING", -1, "");
	parse_ok("gdnctl-job: pending\n", GDN_JOB_PENDING, "PENDING", -1, "");
	parse_ok("gdnctl-job: started\n", GDN_JOB_PENDING, "STARTED", -1, "");
	parse_ok("gdnctl-job: exited 0\nout\n", GDN_JOB_SUCCEEDED, "COMPLETED", 0, "out\n");
	parse_ok("gdnctl-job: exited 3\n", GDN_JOB_FAILED, "FAILED", 3, "");
	parse_ok("gdnctl-job: exited 143 cancelled\n", GDN_JOB_STOPPED, "STOPPED", 143, "");
	parse_ok("gdnctl-job: exited 0 cancelled already\n", GDN_JOB_STOPPED, "STOPPED", 0, "");
	parse_ok("gdnctl-job: lost\n", GDN_JOB_FAILED, "LOST", -1, "");
	parse_ok("gdnctl-job: missing\n", GDN_JOB_UNKNOWN, "MISSING", -1, "");
	/* a login script's noise first; data without a newline at the end */
	parse_ok("Welcome!\ngdnctl-job: running\npartial", GDN_JOB_RUNNING, "RUNNING", -1,
		 "partial");
	parse_ok("gdnctl-job: running", GDN_JOB_RUNNING, "RUNNING", -1, "");
}

static void test_shim_status_bad(void **state)
{
	static const char *const bad[] = {
	    "",
	    "running\n",
	    "gdnctl-job: exited\n",
	    "gdnctl-job: exited x\n",
	    "gdnctl-job: exited 256\n",
	    "gdnctl-job: exited -1\n",
	    "gdnctl-job: runningX\n",
	    "gdnctl-job: \n",
	    "gdnctl-job: exited 99999999999999999999\n",
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct gdn_job_status st = GDN_JOB_STATUS_INIT;
		struct gdn_err err = GDN_ERR_INIT;
		size_t off = 0;

		assert_int_equal(gdn_job_parse_shim(bad[i], strlen(bad[i]), &st, &off, &err),
				 GDN_EPARSE);
	}
	/* a NUL byte would cut the exit code short ("exited 1" of "exited 1\0 7") */
	{
		static const char cut[] = "gdnctl-job: exited 1\0 7\n";
		struct gdn_job_status st = GDN_JOB_STATUS_INIT;
		struct gdn_err err = GDN_ERR_INIT;
		size_t off = 0;

		assert_int_equal(gdn_job_parse_shim(cut, sizeof(cut) - 1, &st, &off, &err),
				 GDN_EPARSE);
		assert_int_equal(st.state, GDN_JOB_UNKNOWN);
	}
}

static void test_exit_codes(void **state)
{
	struct gdn_job_status st = GDN_JOB_STATUS_INIT;

	st.state = GDN_JOB_SUCCEEDED;
	assert_int_equal(gdn_job_exit_code(&st), 0);
	st.state = GDN_JOB_FAILED;
	snprintf(st.native, sizeof(st.native), "FAILED");
	st.exit_code = 3;
	assert_int_equal(gdn_job_exit_code(&st), 3);
	st.exit_code = 137;
	assert_int_equal(gdn_job_exit_code(&st), 137);
	snprintf(st.native, sizeof(st.native), "TIMEOUT");
	st.exit_code = 143;
	assert_int_equal(gdn_job_exit_code(&st), 1);
	snprintf(st.native, sizeof(st.native), "FAILED");
	st.exit_code = -1;
	assert_int_equal(gdn_job_exit_code(&st), 1);
	st.state = GDN_JOB_TIMEOUT;
	assert_int_equal(gdn_job_exit_code(&st), 124);
	st.state = GDN_JOB_STOPPED;
	assert_int_equal(gdn_job_exit_code(&st), 1);
	assert_string_equal(gdn_job_state_name(GDN_JOB_STOPPED), "stopped");
	assert_string_equal(gdn_job_state_name(GDN_JOB_UNKNOWN), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host),
	    cmocka_unit_test(test_user),
	    cmocka_unit_test(test_job_id),
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_sh_path),
	    cmocka_unit_test(test_remote_command),
	    cmocka_unit_test(test_remote_command_roundtrip),
	    cmocka_unit_test(test_shim_status),
	    cmocka_unit_test(test_shim_status_bad),
	    cmocka_unit_test(test_exit_codes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
