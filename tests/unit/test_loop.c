/*
 * Unit tests for the loop engine's pure parts (prompt assembly, policies,
 * the transient-lock matcher, log stamping, the summary) and for the
 * engine itself with a fake agent and the validation/decision hooks.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/err.h"
#include "gdnctl/loop_policy.h"
#include "gdnctl/gitops.h"
#include "gdnctl/prompt.h"
#include "gdnctl/loop.h"
#include "gdnctl/gate.h"
#include "gdnctl/proc.h"
#include "gdnctl/repo.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"

static void test_prompt_without_directives(void **unused)
{
	struct sbuf out = SBUF_INIT;
	struct gdn_prompt_vars v = {3,	  10,  "abc123", "main", "### Iteration 2\n- Commit: x\n",
				    NULL, NULL};

	(void)unused;
	gdn_prompt_render("it {{ITERATION}}/{{TOTAL_ITERATIONS}} {{HEAD_SHA}} {{ITERATION}}\n"
			  "on {{BRANCH}}\n{{LOG_TAIL}}{{UNKNOWN}}  \n\n",
			  &v, NULL, &out);
	assert_string_equal(out.buf, "it 3/10 abc123 3\non main\n### Iteration 2\n- Commit: "
				     "x\n{{UNKNOWN}}  \n\n");
	sbuf_release(&out);
}

/* {{LOG_FILE}}: the running log as the agent names it, or that there is none */
static void test_prompt_log_file(void **unused)
{
	struct sbuf out = SBUF_INIT;
	struct gdn_prompt_vars v = {1, 2, NULL, NULL, NULL, NULL, NULL};

	(void)unused;
	assert_string_equal(gdn_prompt_log_file("/w/t/notes/log.md", "/w/t"), "notes/log.md");
	assert_string_equal(gdn_prompt_log_file("/w/t/notes/log.md", "/w/t/"), "notes/log.md");
	assert_string_equal(gdn_prompt_log_file("/w/tt/log.md", "/w/t"), "/w/tt/log.md");
	assert_string_equal(gdn_prompt_log_file("/elsewhere/log.md", "/w/t"), "/elsewhere/log.md");
	assert_null(gdn_prompt_log_file(NULL, "/w/t"));
	v.log_file = "notes/log.md";
	gdn_prompt_render("append to {{LOG_FILE}}; {{LOG_FILE}}", &v, NULL, &out);
	assert_string_equal(out.buf, "append to notes/log.md; notes/log.md");
	sbuf_reset(&out);
	v.log_file = NULL;
	gdn_prompt_render("log: {{LOG_FILE}}", &v, NULL, &out);
	assert_string_equal(out.buf, "log: " GDN_PROMPT_NO_LOG_FILE);
	sbuf_release(&out);
}

static void test_prompt_directive_framing(void **unused)
{
	struct sbuf out = SBUF_INIT;
	struct strvec d = STRVEC_INIT;
	struct gdn_prompt_vars v = {1, 2, "{{ITERATION}}", NULL, NULL, NULL, NULL};

	(void)unused;
	strvec_push(&d, "First directive\nwith two lines");
	strvec_push(&d, "Second");
	gdn_prompt_render("Head {{HEAD_SHA}} [{{BRANCH}}]\n\n\n", &v, &d, &out);
	/* a value holding a placeholder is not expanded again */
	assert_string_equal(out.buf,
			    "Head {{ITERATION}} []\n\n"
			    "Session directives for this codex-loop run (must follow unless they "
			    "conflict with tests/correctness):\n\n"
			    "[Directive 1]\nFirst directive\nwith two lines\n"
			    "[Directive 2]\nSecond\n");
	sbuf_release(&out);
	strvec_clear(&d);
}

static char *write_tmp(const char *text)
{
	char path[] = "/tmp/gdnctl-test-loop-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return xstrdup(path);
}

static void test_directive_files(void **unused)
{
	struct strvec d = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *ok = write_tmp("\n  Focus on X.  \n\n"), *empty = write_tmp(" \n\t\n");

	(void)unused;
	assert_int_equal(gdn_prompt_add_directive_file(&d, ok, "preset x", &err), 0);
	assert_string_equal(d.v[0], "Focus on X.");
	assert_int_equal(gdn_prompt_add_directive_file(&d, empty, "e.md", &err), GDN_EUSAGE);
	assert_non_null(strstr(err.msg, "directive file is empty for e.md: "));
	assert_int_equal(gdn_prompt_add_directive_file(&d, "/nonexistent/d.md", "preset y", &err),
			 GDN_ENOTFOUND);
	assert_string_equal(err.msg, "directive file not found for preset y: /nonexistent/d.md");
	assert_int_equal(d.nr, 1);
	unlink(ok);
	unlink(empty);
	free(ok);
	free(empty);
	strvec_clear(&d);
}

static void test_prompt_find(void **unused)
{
	char *f = write_tmp("x"), *dir = xstrdup(f), *found;
	const char *dirs[] = {"", "/nonexistent", NULL, NULL};

	(void)unused;
	*strrchr(dir, '/') = '\0';
	dirs[2] = dir;
	found = gdn_prompt_find(dirs, strrchr(f, '/') + 1);
	assert_string_equal(found, f);
	free(found);
	dirs[2] = NULL;
	assert_null(gdn_prompt_find(dirs, "x"));
	unlink(f);
	free(f);
	free(dir);
}

static void check_stamp_worker(const char *in, long worker, int want, const char *expect)
{
	struct gdn_err err = GDN_ERR_INIT;
	struct sbuf sb = SBUF_INIT;
	char *path = write_tmp(in);

	assert_int_equal(
	    gdn_prompt_stamp_log(path, "0123456789abcdef0123456789abcdef01234567", worker, 7, &err),
	    want);
	assert_int_equal(sbuf_read_file(&sb, path, 1 << 20, &err), 0);
	assert_string_equal(sb.buf, expect);
	unlink(path);
	free(path);
	sbuf_release(&sb);
}

static void check_stamp(const char *in, int want, const char *expect)
{
	check_stamp_worker(in, 0, want, expect);
}

static void test_stamp_log(void **unused)
{
	(void)unused;
	/* --workers: the worker's id after the commit, with the same indentation */
	check_stamp_worker("### Iteration 3\n  - Commit: (pending)\n  - Result: ok\n", 2, 1,
			   "### Iteration 3\n  - Commit: 0123456789abcdef0123456789abcdef01234567\n"
			   "  - Worker: 2 (iteration 7)\n  - Result: ok\n");
	/* entries land in promotion order: a number that would not increase is the next one */
	check_stamp_worker("### Iteration 6 - b\n- Commit: abc\n### Iteration 5 - a\n- Commit: "
			   "(pending)\n",
			   1, 1,
			   "### Iteration 6 - b\n- Commit: abc\n### Iteration 7 - a\n- Commit: "
			   "0123456789abcdef0123456789abcdef01234567\n- Worker: 1 (iteration 7)\n");
	check_stamp("# Log\n### Iteration 1\n- Commit: (pending)\n### Iteration 2\n  - Commit: "
		    "this commit\r\n- Result: ok",
		    1,
		    "# Log\n### Iteration 1\n- Commit: (pending)\n### Iteration 2\n  - Commit: "
		    "0123456789abcdef0123456789abcdef01234567\n- Result: ok\n");
	/* the last Commit line of the last entry decides */
	check_stamp("### Iteration 1\n- Commit: (pending)\n- Commit: abc1234\n", 0,
		    "### Iteration 1\n- Commit: (pending)\n- Commit: abc1234\n");
	check_stamp("no entries\n- Commit: (pending)\n", 0, "no entries\n- Commit: (pending)\n");
	assert_int_equal(gdn_prompt_stamp_log("/nonexistent/log.md", "x", 0, 0, NULL), 0);
}

static void test_log_tail(void **unused)
{
	struct sbuf out = SBUF_INIT;
	const char *log = "# Log\n### Iteration 1\na\n### Iteration 2\nb\n";

	(void)unused;
	gdn_prompt_log_tail(log, strlen(log), &out);
	assert_string_equal(out.buf, "### Iteration 2\nb\n");
	sbuf_reset(&out);
	gdn_prompt_log_tail("none\n", 5, &out);
	assert_string_equal(out.buf, "");
	sbuf_release(&out);
}

static void test_transient_lock_matcher(void **unused)
{
	(void)unused;
	assert_true(
	    gdn_git_transient_error("fatal: Unable to create '/r/.git/index.lock': File exists."));
	assert_true(gdn_git_transient_error("error: index.lock held"));
	assert_true(
	    gdn_git_transient_error("Another git process seems to be running in this repository"));
	assert_true(gdn_git_transient_error("Unable to create 'x/HEAD.lock': File exists"));
	assert_true(gdn_git_transient_error("Unable to create 'a.lock'"));
	/* `.+?` needs a character and stays on one line */
	assert_false(gdn_git_transient_error("Unable to create '.lock'"));
	assert_false(gdn_git_transient_error("Unable to create 'x\n.lock'"));
	assert_false(gdn_git_transient_error("CONFLICT (content): Merge conflict in a.txt"));
	assert_false(gdn_git_transient_error(""));
	assert_false(gdn_git_transient_error("index lock"));
}

static void test_policies(void **unused)
{
	long failures = 0;
	bool counted;
	int p;

	(void)unused;
	assert_int_equal(gdn_loop_policy_apply(GDN_POLICY_FAIL, &failures, -1, &counted),
			 GDN_VERDICT_EXIT);
	assert_false(counted);
	assert_int_equal(gdn_loop_policy_apply(GDN_POLICY_CONTINUE, &failures, 0, &counted),
			 GDN_VERDICT_NEXT);
	assert_int_equal(failures, 0);
	/* --max-failures 1: the first counted failure goes on, the second exits */
	assert_int_equal(gdn_loop_policy_apply(GDN_POLICY_COUNT_FAILURE, &failures, 1, &counted),
			 GDN_VERDICT_NEXT);
	assert_true(counted);
	assert_int_equal(gdn_loop_policy_apply(GDN_POLICY_COUNT_FAILURE, &failures, 1, &counted),
			 GDN_VERDICT_EXIT);
	assert_int_equal(failures, 2);
	/* -1: unlimited; 0 (the default): the first counted failure exits */
	assert_int_equal(gdn_loop_policy_apply(GDN_POLICY_COUNT_FAILURE, &failures, -1, &counted),
			 GDN_VERDICT_NEXT);
	failures = 0;
	assert_int_equal(gdn_loop_policy_apply(GDN_POLICY_COUNT_FAILURE, &failures, 0, &counted),
			 GDN_VERDICT_EXIT);
	assert_int_equal(gdn_enum_parse(gdn_loop_policy_enum, "count-failure", &p), 0);
	assert_int_equal(p, GDN_POLICY_COUNT_FAILURE);
	assert_int_equal(gdn_enum_parse(gdn_loop_policy_enum, "Continue", &p), -1);
	assert_string_equal(gdn_loop_policy_name(GDN_POLICY_CONTINUE), "continue");
	assert_string_equal(gdn_loop_failure_name(GDN_FAIL_NO_COMMIT), "no_commit");
}

static void test_summary_json(void **unused)
{
	struct gdn_loop_summary s = GDN_LOOP_SUMMARY_INIT;
	json_t *doc;
	char *text;

	(void)unused;
	s.run_id = xstrdup("r");
	s.iterations_run = 4;
	s.commits = 3;
	s.failures = 1;
	s.fail_kinds[GDN_FAIL_POST_CHECK] = 1;
	s.agent_ms = 1500;
	s.stop_reason = xstrdup("completed");
	strvec_push(&s.stashes_kept, "abc gdnctl-loop: r iteration 2");
	doc = gdn_loop_summary_json(&s);
	text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_string_equal(
	    text,
	    "{\"schema\":\"gdnctl.loop_summary.v1\",\"run\":\"r\",\"iterations\":4,\"commits\":3,"
	    "\"failures\":1,\"failures_by_kind\":{\"agent\":0,\"post_check\":1,\"no_commit\":0,"
	    "\"hook\":0,\"iteration_error\":0,\"history\":0},\"agent_seconds\":1.5,\"stop_reason\":"
	    "\"completed\",\"exit_code\":0,\"stashes_kept\":[{\"sha\":\"abc\",\"message\":"
	    "\"gdnctl-loop: r iteration 2\"}],\"refs_kept\":[],\"journal\":null}");
	free(text);
	json_decref(doc);
	gdn_loop_summary_release(&s);
}

/* ---- the engine with a fake agent ---- */

struct fake {
	int calls;
	bool commit;
};

static int fake_run(void *agent, const struct gdn_agent_request *req, struct gdn_agent_result *res,
		    struct gdn_err *err)
{
	struct fake *f = agent;
	const char *argv[] = {"git",	"-c", "user.name=a",   "-c", "user.email=a@b",
			      "commit", "-q", "--allow-empty", "-m", "fake",
			      NULL};

	(void)err;
	memset(res, 0, sizeof(*res));
	f->calls++;
	assert_non_null(strstr(req->prompt, "Iteration"));
	if (f->commit)
		assert_int_equal(unit_run(req->workdir, argv, NULL), 0);
	res->status = GDN_PROC_EXITED;
	res->ok = true;
	res->duration_ms = 10;
	res->last_message = xstrdup("done");
	return 0;
}

static void fake_release(struct gdn_agent_result *res)
{
	FREE_AND_NULL(res->last_message);
}

struct hook_state {
	int validated, decided;
	long commits_seen;
	int validate_rc;
	/* decide: what it returns and sets in its out */
	int decide_rc;
	bool decide_reverted, decide_has_policy;
	enum gdn_loop_policy decide_policy;
	/* start: used when use_start; its return value */
	bool use_start;
	int start_rc, started;
	int reported;  /* hook messages seen by the say callback */
	char *journal; /* loop.jsonl after the run */
};

static int hook_validate(void *payload, const struct gdn_loop_iter *it,
			 struct gdn_loop_hook_out *out, struct gdn_err *err)
{
	struct hook_state *h = payload;

	h->validated++;
	h->commits_seen += it->commits;
	/* the engine's reporting, for the hooks */
	assert_non_null(it->report);
	assert_non_null(it->journal);
	it->report(it->ctx, GDN_LOOP_INFO, "hook says hello");
	it->journal(it->ctx, "validation",
		    json_pack("{sIss}", "iteration", (json_int_t)it->iteration, "phase", "unit"));
	assert_non_null(it->head_before);
	assert_non_null(it->head_after);
	if (h->validate_rc)
		gdn_err_set(err, GDN_EFAILED, "validation gate failed");
	return h->validate_rc;
}

static int hook_decide(void *payload, const struct gdn_loop_iter *it, struct gdn_loop_hook_out *out,
		       struct gdn_err *err)
{
	struct hook_state *h = payload;

	(void)it;
	h->decided++;
	out->reverted = h->decide_reverted;
	out->has_policy = h->decide_has_policy;
	out->policy = h->decide_policy;
	if (h->decide_rc)
		gdn_err_set(err, GDN_EFAILED, "decided against");
	return h->decide_rc;
}

static int hook_start(void *payload, const struct gdn_loop_iter *it, struct gdn_err *err)
{
	struct hook_state *h = payload;

	h->started++;
	assert_int_equal(it->iteration, 0);
	assert_int_equal(it->commits, 0);
	assert_string_equal(it->head_before, it->head_after);
	it->journal(it->ctx, "perf_decision",
		    json_pack("{sIss}", "iteration", (json_int_t)0, "decision", "baseline"));
	if (h->start_rc)
		gdn_err_set(err, GDN_EFAILED, "baseline failed");
	return h->start_rc;
}

static void say_nothing(enum gdn_loop_level level, const char *msg, void *payload)
{
	struct hook_state *h = payload;

	if (level == GDN_LOOP_INFO && !strcmp(msg, "hook says hello"))
		h->reported++;
}

/* engine_run: the original codex-loop's exit codes (the codex-loop alias) */
static bool original_codes;

static void engine_run(bool commit, struct hook_state *h, enum gdn_loop_policy hook_policy,
		       struct gdn_loop_summary *sum, struct fake *f)
{
	char dir[] = "/tmp/gdnctl-test-engine-XXXXXX";
	char *logs, *repo;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_loop_opts o = {0};
	struct gdn_loop_agent agent = {fake_run, fake_release, f};
	struct gdn_loop_hooks hooks = {.validate = hook_validate,
				       .decide = hook_decide,
				       .payload = h,
				       .policy = hook_policy,
				       .start = h->use_start ? hook_start : NULL};
	const char *init[] = {"git", "init", "-q", "-b", "main", "repo", NULL};
	const char *seed[] = {"git",	"-c", "user.name=a",   "-c", "user.email=a@b",
			      "commit", "-q", "--allow-empty", "-m", "seed",
			      NULL};
	struct sbuf sb = SBUF_INIT;

	assert_non_null(mkdtemp(dir));
	repo = xstrfmt("%s/repo", dir);
	logs = xstrfmt("%s/logs", dir);
	assert_int_equal(unit_run(dir, init, NULL), 0);
	assert_int_equal(unit_run(repo, seed, NULL), 0);
	assert_int_equal(mkdir(logs, 0755), 0);
	f->commit = commit;
	o.workdir = repo;
	o.log_dir = logs;
	o.prompt_template = "Iteration {{ITERATION}}";
	o.iterations = 2;
	o.max_failures = -1;
	o.original_exit_codes = original_codes;
	o.no_commit_policy = GDN_POLICY_COUNT_FAILURE;
	o.say = say_nothing;
	o.payload = h;
	o.run_id = "unit";
	assert_int_equal(gdn_loop_run(&o, &agent, &hooks, sum, &err), 0);
	/* the agent's last message is saved in the log dir */
	{
		char *m = xstrfmt("%s/iteration-001-last-message.txt", logs);

		if (f->calls) {
			assert_int_equal(sbuf_read_file(&sb, m, 100, &err), 0);
			assert_string_equal(sb.buf, "done");
		}
		free(m);
		m = xstrfmt("%s/loop.jsonl", logs);
		sbuf_reset(&sb);
		assert_int_equal(sbuf_read_file(&sb, m, 1 << 20, &err), 0);
		free(h->journal);
		h->journal = xstrdup(sb.buf);
		free(m);
	}
	unit_rm_rf(dir);
	sbuf_release(&sb);
	free(repo);
	free(logs);
}

static void test_engine_hooks_after_post_checks(void **unused)
{
	struct hook_state h = {0};
	struct gdn_loop_summary sum = GDN_LOOP_SUMMARY_INIT;
	struct fake f = {0};

	(void)unused;
	engine_run(true, &h, GDN_POLICY_FAIL, &sum, &f);
	assert_int_equal(f.calls, 2);
	assert_int_equal(h.validated, 2);
	assert_int_equal(h.decided, 2);
	assert_int_equal(h.commits_seen, 2);
	assert_int_equal(h.reported, 2);
	assert_non_null(
	    strstr(h.journal, "\"event\":\"validation\",\"iteration\":1,\"phase\":\"unit\""));
	assert_non_null(
	    strstr(h.journal, "\"event\":\"validation\",\"iteration\":2,\"phase\":\"unit\""));
	free(h.journal);
	assert_int_equal(sum.exit_code, 0);
	assert_int_equal(sum.commits, 2);
	assert_string_equal(sum.stop_reason, "completed");
	assert_string_equal(sum.run_id, "unit");
	gdn_loop_summary_release(&sum);
}

static void test_engine_hook_failure_policy(void **unused)
{
	struct hook_state h = {.validate_rc = 9};
	struct gdn_loop_summary sum = GDN_LOOP_SUMMARY_INIT;
	struct fake f = {0};

	(void)unused;
	/* count-failure with unlimited failures: both iterations run, both counted */
	engine_run(true, &h, GDN_POLICY_COUNT_FAILURE, &sum, &f);
	assert_int_equal(h.validated, 2);
	assert_int_equal(h.decided, 0);
	assert_int_equal(sum.fail_kinds[GDN_FAIL_HOOK], 2);
	assert_int_equal(sum.exit_code, 0);
	gdn_loop_summary_release(&sum);
	FREE_AND_NULL(h.journal);

	/* fail: exit 1 (gdnctl's table); the original's: the hook's code is the exit code */
	for (int orig = 0; orig <= 1; orig++) {
		memset(&h, 0, sizeof(h));
		h.validate_rc = 9;
		f.calls = 0;
		original_codes = orig;
		engine_run(true, &h, GDN_POLICY_FAIL, &sum, &f);
		original_codes = false;
		assert_int_equal(f.calls, 1);
		assert_int_equal(sum.exit_code, orig ? 9 : 1);
		assert_string_equal(sum.stop_reason, "failure");
		gdn_loop_summary_release(&sum);
		FREE_AND_NULL(h.journal);
	}
}

static void test_loop_exit_codes(void **unused)
{
	(void)unused;
	/* gdnctl loop: one table (exitcode.h) */
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_AGENT, 2, false), 4);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_AGENT, 124, false), 124);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_POST_CHECK, 3, false), 1);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_NO_COMMIT, 3, false), 1);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_HOOK, 2, false), 1);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_HOOK, 124, false), 124);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_ITERATION_ERROR, 2, false), 1);
	/* codex-loop: the original's */
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_AGENT, 2, true), 2);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_NO_COMMIT, GDN_LOOP_ORIGINAL_NO_COMMIT, true),
			 3);
	assert_int_equal(
	    gdn_loop_exit_code(GDN_FAIL_ITERATION_ERROR, GDN_LOOP_ORIGINAL_ITERATION_ERROR, true),
	    2);
	assert_int_equal(gdn_loop_exit_code(GDN_FAIL_POST_CHECK, 7, true), 7);
}

static void test_engine_no_commit_skips_hooks(void **unused)
{
	struct hook_state h = {0};
	struct gdn_loop_summary sum = GDN_LOOP_SUMMARY_INIT;
	struct fake f = {0};

	(void)unused;
	engine_run(false, &h, GDN_POLICY_FAIL, &sum, &f);
	assert_int_equal(h.validated, 0);
	assert_int_equal(h.reported, 0);
	assert_null(strstr(h.journal, "\"event\":\"validation\""));
	free(h.journal);
	assert_int_equal(sum.fail_kinds[GDN_FAIL_NO_COMMIT], 2);
	assert_int_equal(sum.failures, 2);
	gdn_loop_summary_release(&sum);
}

static void test_gate_never_runs_without_commits(void **unused)
{
	int m;
	struct gdn_gate g = {0};
	struct gdn_loop_iter it = {0};
	struct gdn_loop_hook_out ho = {0};
	struct gdn_err err = GDN_ERR_INIT;

	(void)unused;
	assert_int_equal(gdn_enum_parse(gdn_gate_mode_enum, "required", &m), 0);
	assert_int_equal(m, GDN_GATE_REQUIRED);
	assert_int_equal(gdn_enum_parse(gdn_gate_mode_enum, "profile-only", &m), 0);
	assert_int_equal(m, GDN_GATE_PROFILE_ONLY);
	assert_int_equal(gdn_enum_parse(gdn_gate_mode_enum, "off", &m), 0);
	assert_int_equal(m, GDN_GATE_OFF);
	assert_int_equal(gdn_enum_parse(gdn_gate_mode_enum, "on", &m), -1);
	/* no commit: nothing is run (the backend is not even looked at) nor reverted */
	g.mode = GDN_GATE_REQUIRED;
	g.test_command = "false";
	it.iteration = 1;
	it.head_before = it.head_after = "0123456789012345678901234567890123456789";
	assert_int_equal(gdn_gate_validate(&g, &it, &ho, &err), 0);
	assert_false(ho.reverted);
	/* off: nothing either */
	g.mode = GDN_GATE_OFF;
	it.commits = 1;
	assert_int_equal(gdn_gate_validate(&g, &it, &ho, &err), 0);
	assert_false(ho.reverted);
}

static void test_engine_hook_out(void **unused)
{
	struct hook_state h = {.decide_reverted = true};
	struct gdn_loop_summary sum = GDN_LOOP_SUMMARY_INIT;
	struct fake f = {0};

	(void)unused;
	/* accepted but reverted: no commit kept, no failure, the decision says 0 commits */
	engine_run(true, &h, GDN_POLICY_FAIL, &sum, &f);
	assert_int_equal(h.decided, 2);
	assert_int_equal(sum.commits, 0);
	assert_int_equal(sum.failures, 0);
	assert_int_equal(sum.exit_code, 0);
	assert_non_null(strstr(h.journal, "\"outcome\":\"ok\",\"failure\":null,\"counted\":false,"
					  "\"commits\":0"));
	FREE_AND_NULL(h.journal);
	gdn_loop_summary_release(&sum);

	/* a failure with its own policy: fail overrides the hooks' count-failure */
	memset(&h, 0, sizeof(h));
	h.decide_rc = 1;
	h.decide_has_policy = true;
	h.decide_policy = GDN_POLICY_FAIL;
	f.calls = 0;
	engine_run(true, &h, GDN_POLICY_COUNT_FAILURE, &sum, &f);
	assert_int_equal(f.calls, 1);
	assert_int_equal(sum.exit_code, 1);
	assert_int_equal(sum.fail_kinds[GDN_FAIL_HOOK], 1);
	FREE_AND_NULL(h.journal);
	gdn_loop_summary_release(&sum);

	/* count-failure from the hook under the hooks' fail: counted, both iterations run */
	memset(&h, 0, sizeof(h));
	h.decide_rc = 1;
	h.decide_has_policy = true;
	h.decide_policy = GDN_POLICY_COUNT_FAILURE;
	f.calls = 0;
	engine_run(true, &h, GDN_POLICY_FAIL, &sum, &f);
	assert_int_equal(f.calls, 2);
	assert_int_equal(sum.exit_code, 0);
	assert_int_equal(sum.failures, 2);
	free(h.journal);
	gdn_loop_summary_release(&sum);
}

static void test_engine_start_hook(void **unused)
{
	struct hook_state h = {.use_start = true};
	struct gdn_loop_summary sum = GDN_LOOP_SUMMARY_INIT;
	struct fake f = {0};
	const char *start, *first;

	(void)unused;
	engine_run(true, &h, GDN_POLICY_FAIL, &sum, &f);
	assert_int_equal(h.started, 1);
	assert_int_equal(f.calls, 2);
	start = strstr(h.journal, "\"event\":\"perf_decision\",\"iteration\":0");
	first = strstr(h.journal, "\"event\":\"iteration_start\"");
	assert_non_null(start);
	assert_non_null(first);
	assert_true(start < first);
	FREE_AND_NULL(h.journal);
	gdn_loop_summary_release(&sum);

	/* a start hook that fails stops the run before iteration 1: exit 1, the original's: its
	 * code */
	for (int orig = 0; orig <= 1; orig++) {
		memset(&h, 0, sizeof(h));
		h.use_start = true;
		h.start_rc = 5;
		f.calls = 0;
		original_codes = orig;
		engine_run(true, &h, GDN_POLICY_FAIL, &sum, &f);
		original_codes = false;
		assert_int_equal(f.calls, 0);
		assert_int_equal(sum.exit_code, orig ? 5 : 1);
		assert_string_equal(sum.stop_reason, "start");
		FREE_AND_NULL(h.journal);
		gdn_loop_summary_release(&sum);
	}
}

/* Protected-path globs: fnmatch without flags ('*' crosses '/'), "dir/" and "dir" cover below. */
static void test_gate_protected(void **state)
{
	struct strvec g = STRVEC_INIT;

	(void)state;
	assert_false(gdn_gate_protected(NULL, "a"));
	assert_false(gdn_gate_protected(&g, "a"));
	strvec_pushl(&g, "bench.sh", "tests/", "lib", "*.md", "x/*/y.py", NULL);
	assert_true(gdn_gate_protected(&g, "bench.sh"));
	assert_false(gdn_gate_protected(&g, "bench.sh.orig"));
	assert_false(gdn_gate_protected(&g, "sub/bench.sh"));
	assert_true(gdn_gate_protected(&g, "tests/check.sh"));
	assert_true(gdn_gate_protected(&g, "tests/deep/er.py"));
	assert_false(gdn_gate_protected(&g, "tests"));
	assert_false(gdn_gate_protected(&g, "testsuite/a"));
	assert_true(gdn_gate_protected(&g, "lib"));
	assert_true(gdn_gate_protected(&g, "lib/levanter/a.py"));
	assert_false(gdn_gate_protected(&g, "library/a.py"));
	assert_true(gdn_gate_protected(&g, "docs/a.md"));
	assert_true(gdn_gate_protected(&g, "x/a/b/y.py"));
	strvec_clear(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gate_protected),
	    cmocka_unit_test(test_prompt_without_directives),
	    cmocka_unit_test(test_prompt_log_file),
	    cmocka_unit_test(test_prompt_directive_framing),
	    cmocka_unit_test(test_directive_files),
	    cmocka_unit_test(test_prompt_find),
	    cmocka_unit_test(test_stamp_log),
	    cmocka_unit_test(test_log_tail),
	    cmocka_unit_test(test_transient_lock_matcher),
	    cmocka_unit_test(test_policies),
	    cmocka_unit_test(test_summary_json),
	    cmocka_unit_test(test_engine_hooks_after_post_checks),
	    cmocka_unit_test(test_engine_hook_failure_policy),
	    cmocka_unit_test(test_loop_exit_codes),
	    cmocka_unit_test(test_engine_no_commit_skips_hooks),
	    cmocka_unit_test(test_gate_never_runs_without_commits),
	    cmocka_unit_test(test_engine_hook_out),
	    cmocka_unit_test(test_engine_start_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
