/*
 * Unit tests for the agent drivers (src/loop/agent*.c, filter.c): argv
 * building, the codex probes and their parsers, the output filter, the
 * claude stream-json parser, the command word splitter, and real runs of
 * child scripts written here (fake codex, fake claude, a hanging agent).
 *
 * The real Codex CLI is exercised by tests/e2e/t0650-agent-codex-real.sh,
 * which may run this binary's real_codex_run test with GDNCTL_TEST_CODEX_*
 * set; without them that test is skipped.
 */
#include "gdnctl/compat.h"
#include <setjmp.h>
#include <cmocka.h>
#include "gdnctl/agent.h"
#include "gdnctl/err.h"
#include "gdnctl/proc.h"
#include "gdnctl/sbuf.h"
#include "gdnctl/strvec.h"
#include "gdnctl/xalloc.h"
#include "testlib.h"
#include "../../src/loop/agent_impl.h"

/* ---- helpers ---- */

static char *tmpdir;
static char *orig_path;

static char *path_in(const char *name)
{
	return xstrfmt("%s/%s", tmpdir, name);
}

/* The PATH of the tests (setup): borrowed, static. */
static const char *tmpdir_sysbin(void)
{
	static char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s/sysbin", tmpdir);
	return buf;
}

static char *script(const char *name, const char *body)
{
	char *path = path_in(name);
	char *text = xstrfmt("#!/bin/sh\n%s", body);

	unit_write_file(NULL, path, text, 0755);
	free(text);
	return path;
}

static char *read_all(const char *path)
{
	struct sbuf sb = SBUF_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	if (sbuf_read_file(&sb, path, 1 << 24, &err) < 0) {
		sbuf_release(&sb);
		return NULL;
	}
	return sbuf_detach(&sb, NULL);
}

static void assert_argv(const struct strvec *argv, const char *const *want)
{
	size_t i;

	for (i = 0; want[i]; i++) {
		assert_true(i < argv->nr);
		assert_string_equal(argv->v[i], want[i]);
	}
	assert_int_equal(argv->nr, i);
	assert_null(argv->v[i]);
}

static int collect_line(const char *line, size_t len, void *payload)
{
	struct strvec *lines = payload;

	assert_int_equal(strlen(line), len);
	strvec_push(lines, line);
	return 0;
}

static bool contains_line(const struct strvec *sv, const char *s)
{
	return strvec_contains(sv, s);
}

static bool any_contains(const struct strvec *sv, const char *needle)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (strstr(sv->v[i], needle))
			return true;
	return false;
}

/* An agent struct built by hand, for argv tests (no probes). */
static void fake_agent(struct gdn_agent *a, const struct agent_driver *drv)
{
	memset(a, 0, sizeof(*a));
	a->drv = drv;
	a->bin = xstrdup("/tmp/codex");
	strvec_init(&a->env);
	strvec_init(&a->words);
}

static void fake_agent_release(struct gdn_agent *a)
{
	free(a->bin);
	free(a->model);
	free(a->effort);
	free(a->profile);
	free(a->command);
	free(a->efforts);
	strvec_clear(&a->env);
	strvec_clear(&a->words);
}

static const struct gdn_agent_request argv_req = {
    .workdir = "/repo",
    .prompt = "do it\n",
    .prompt_file = "/logs/iteration-001-prompt.txt",
    .last_message_file = "/tmp/last-message.txt",
};

/* ---- codex argv ---- */

static void codex_argv_defaults_to_ephemeral(void **state)
{
	const char *want[] = {"/tmp/codex",
			      "exec",
			      "--json",
			      "-C",
			      "/repo",
			      "--dangerously-bypass-approvals-and-sandbox",
			      "-o",
			      "/tmp/last-message.txt",
			      "--ephemeral",
			      "-m",
			      "gpt-5.3-codex",
			      "-c",
			      "model_reasoning_effort=\"xhigh\"",
			      "-",
			      NULL};
	struct gdn_agent a;
	struct strvec argv = STRVEC_INIT;

	(void)state;
	fake_agent(&a, &agent_codex_driver);
	a.ephemeral = true;
	a.model = xstrdup("gpt-5.3-codex");
	a.effort = xstrdup("xhigh");
	a.search = true; /* requested but not supported: not passed */
	gdn_agent_argv(&a, &argv_req, &argv);
	assert_argv(&argv, want);
	strvec_clear(&argv);
	fake_agent_release(&a);
}

static void codex_argv_every_combination(void **state)
{
	struct gdn_agent a;
	struct strvec argv = STRVEC_INIT, want = STRVEC_INIT;
	int mask;

	(void)state;
	for (mask = 0; mask < 32; mask++) {
		fake_agent(&a, &agent_codex_driver);
		a.ephemeral = mask & 1;
		a.model = mask & 2 ? xstrdup("gpt-5.4") : NULL;
		a.effort = mask & 4 ? xstrdup("high") : NULL;
		a.profile = mask & 8 ? xstrdup("ci") : NULL;
		a.search = a.search_ok = mask & 16;
		strvec_pushl(&want, "/tmp/codex", "exec", "--json", "-C", "/repo",
			     "--dangerously-bypass-approvals-and-sandbox", "-o",
			     "/tmp/last-message.txt", NULL);
		if (mask & 1)
			strvec_push(&want, "--ephemeral");
		if (mask & 2)
			strvec_pushl(&want, "-m", "gpt-5.4", NULL);
		if (mask & 4)
			strvec_pushl(&want, "-c", "model_reasoning_effort=\"high\"", NULL);
		if (mask & 8)
			strvec_pushl(&want, "-p", "ci", NULL);
		if (mask & 16)
			strvec_push(&want, "--search");
		strvec_push(&want, "-");
		gdn_agent_argv(&a, &argv_req, &argv);
		assert_argv(&argv, want.v);
		strvec_clear(&argv);
		strvec_clear(&want);
		fake_agent_release(&a);
	}
}

static void codex_effort_is_json_quoted(void **state)
{
	struct sbuf sb = SBUF_INIT;

	(void)state;
	agent_json_quote(&sb, "a\"b\\c\nd\x01");
	assert_string_equal(sb.buf, "\"a\\\"b\\\\c\\nd\\u0001\"");
	sbuf_release(&sb);
}

/* ---- the driver table ---- */

/* Every driver declares what the commands and doctor need; the names are the --agent choices. */
static void driver_table_is_complete(void **state)
{
	const char *const *names = gdn_agent_names();
	static const char *const want[] = {"codex", "claude", "command", NULL};
	size_t i;

	(void)state;
	for (i = 0; want[i]; i++) {
		assert_non_null(names[i]);
		assert_string_equal(names[i], want[i]);
	}
	assert_null(names[i]);
	assert_non_null(gdn_agent_find(GDN_AGENT_DEFAULT));
	assert_null(gdn_agent_find("gemini"));
	assert_null(gdn_agent_find(NULL));
	for (i = 0; agent_drivers[i]; i++) {
		const struct agent_driver *d = agent_drivers[i];
		const struct gdn_agent_info *info = gdn_agent_find(d->info.name);

		assert_ptr_equal(info, &d->info);
		assert_non_null(info->help);
		assert_non_null(info->install_hint);
		assert_true(!info->needs_command || info->command_hint);
		if (info->login_vars) {
			assert_non_null(info->login_vars[0]);
			assert_non_null(info->login_file);
			assert_non_null(info->login_home_file);
			assert_non_null(info->login_file_kind);
			assert_non_null(info->login_hint);
		} else {
			assert_non_null(info->login_skip);
		}
		assert_non_null(d->open);
		assert_non_null(d->argv);
		assert_non_null(d->line);
		assert_non_null(d->finish);
		assert_true(!d->run_create == !d->run_release);
	}
	assert_int_equal(i, 3);
	/* the loop's defaults: codex's model and effort, none for the others */
	assert_string_equal(gdn_agent_find("codex")->default_model, "gpt-5.4");
	assert_string_equal(gdn_agent_find("codex")->default_effort, "xhigh");
	assert_null(gdn_agent_find("claude")->default_model);
	assert_null(gdn_agent_find("claude")->default_effort);
	assert_true(gdn_agent_find("command")->needs_command);
}

/* ---- claude and command argv ---- */

static void claude_argv_every_combination(void **state)
{
	const char *plain[] = {"/usr/bin/claude",
			       "-p",
			       "--output-format",
			       "stream-json",
			       "--verbose",
			       "--dangerously-skip-permissions",
			       NULL};
	const char *full[] = {"/usr/bin/claude",
			      "-p",
			      "--output-format",
			      "stream-json",
			      "--verbose",
			      "--dangerously-skip-permissions",
			      "--model",
			      "opus",
			      "--effort",
			      "high",
			      NULL};
	const char *effort_only[] = {
	    "/usr/bin/claude", "-p",	    "--output-format",
	    "stream-json",     "--verbose", "--dangerously-skip-permissions",
	    "--effort",	       "max",	    NULL};
	struct gdn_agent a;
	struct strvec argv = STRVEC_INIT;

	(void)state;
	fake_agent(&a, &agent_claude_driver);
	free(a.bin);
	a.bin = xstrdup("/usr/bin/claude");
	gdn_agent_argv(&a, &argv_req, &argv);
	assert_argv(&argv, plain);
	strvec_clear(&argv);
	a.model = xstrdup("opus");
	a.effort = xstrdup("high");
	gdn_agent_argv(&a, &argv_req, &argv);
	assert_argv(&argv, full);
	strvec_clear(&argv);
	FREE_AND_NULL(a.model);
	free(a.effort);
	a.effort = xstrdup("max");
	gdn_agent_argv(&a, &argv_req, &argv);
	assert_argv(&argv, effort_only);
	strvec_clear(&argv);
	fake_agent_release(&a);
}

static void command_argv_substitutes_inside_words(void **state)
{
	const char *want[] = {"my agent",
			      "--prompt=/logs/iteration-001-prompt.txt",
			      "/repo",
			      "{unknown}",
			      "/tmp/last-message.txt.out",
			      "",
			      NULL};
	struct gdn_agent a;
	struct strvec argv = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	struct gdn_agent_request req = argv_req;

	(void)state;
	fake_agent(&a, &agent_command_driver);
	assert_int_equal(agent_split_words("'my agent' --prompt={prompt_file} {workdir} {unknown} "
					   "{last_message_file}.out ''",
					   &a.words, &err),
			 0);
	gdn_agent_argv(&a, &req, &argv);
	assert_argv(&argv, want);
	strvec_clear(&argv);
	req.prompt_file = NULL;
	gdn_agent_argv(&a, &req, &argv);
	assert_string_equal(argv.v[1], "--prompt=");
	strvec_clear(&argv);
	fake_agent_release(&a);
}

/* ---- word splitter ---- */

static void split_words_quoting(void **state)
{
	static const struct {
		const char *in;
		const char *out[7];
	} cases[] = {
	    {"prog", {"prog"}},
	    {"  a   b\tc\n", {"a", "b", "c"}},
	    {"'a b' \"c d\" e\\ f", {"a b", "c d", "e f"}},
	    {"'it''s' x'y'z", {"its", "xyz"}},
	    {"\"a\\\"b\" \"\\$HOME\" \"\\n\"", {"a\"b", "$HOME", "\\n"}},
	    {"'\\' \"'\" '\"'", {"\\", "'", "\""}},
	    {"a\\\nb", {"ab"}},
	    {"'' \"\"", {"", ""}},
	    {"$HOME *.c ~ `x` |; &&", {"$HOME", "*.c", "~", "`x`", "|;", "&&"}},
	    {"", {NULL}},
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		struct strvec words = STRVEC_INIT;
		struct gdn_err err = GDN_ERR_INIT;

		assert_int_equal(agent_split_words(cases[i].in, &words, &err), 0);
		for (j = 0; cases[i].out[j]; j++) {
			assert_true(j < words.nr);
			assert_string_equal(words.v[j], cases[i].out[j]);
		}
		assert_int_equal(words.nr, j);
		strvec_clear(&words);
	}
}

static void split_words_rejects_unbalanced(void **state)
{
	static const char *const bad[] = {"prog 'a", "prog \"a", "prog a\\", "\"a\\\""};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct strvec words = STRVEC_INIT;
		struct gdn_err err = GDN_ERR_INIT;

		assert_int_equal(agent_split_words(bad[i], &words, &err), GDN_EUSAGE);
		assert_non_null(strstr(err.msg, "agent command"));
		assert_true(strstr(err.msg, "unbalanced") || strstr(err.msg, "trailing backslash"));
		strvec_clear(&words);
	}
}

/* ---- codex probe parsers ---- */

static void probe_output_parsed(void **state)
{
	static const char old_codex[] =
	    "Error loading config.toml: unknown variant "
	    "`__gdnctl_invalid_reasoning_effort_probe__`, expected one of `minimal`, `low`, "
	    "`medium`, `high`\nin `model_reasoning_effort`\n";
	static const char newer[] =
	    "WARNING: proceeding, even though we could not create PATH aliases\n"
	    "Error: error loading configuration: unknown variant "
	    "`__gdnctl_invalid_reasoning_effort_probe__`, expected one of `none`, `minimal`,\n"
	    "  `low`, `medium`, `high`, `xhigh` in `model_reasoning_effort`\n";
	static const char v0169[] =
	    "WARNING: proceeding, even though we could not create PATH aliases: Refusing to "
	    "create helper binaries under temporary dir \"/tmp\"\n"
	    "Reading additional input from stdin...\n"
	    "Not inside a trusted directory and --skip-git-repo-check was not specified.\n";
	static const char other_key[] =
	    "unknown variant `x`, expected one of `a`, `b` in `sandbox_mode`\n";
	static const char truncated[] = "unknown variant `__gdnctl_invalid_reasoning_effort_pro";
	struct strvec v = STRVEC_INIT;

	(void)state;
	assert_true(agent_codex_parse_efforts(old_codex, strlen(old_codex), &v));
	assert_int_equal(v.nr, 4);
	assert_string_equal(v.v[0], "minimal");
	assert_string_equal(v.v[3], "high");
	strvec_clear(&v);
	assert_true(agent_codex_parse_efforts(newer, strlen(newer), &v));
	assert_int_equal(v.nr, 6);
	assert_string_equal(v.v[0], "none");
	assert_string_equal(v.v[5], "xhigh");
	strvec_clear(&v);
	assert_false(agent_codex_parse_efforts(v0169, strlen(v0169), &v));
	assert_false(agent_codex_parse_efforts(other_key, strlen(other_key), &v));
	assert_false(agent_codex_parse_efforts(truncated, strlen(truncated), &v));
	assert_false(agent_codex_parse_efforts("", 0, &v));
	assert_int_equal(v.nr, 0);
	strvec_clear(&v);
}

static void search_flag_detection(void **state)
{
	static const char with[] =
	    "Options:\n  -m, --model <MODEL>\n          Model the agent should use\n\n"
	    "      --search\n          Enable web search (off by default).\n";
	static const char with_crlf[] = "      --search\r\n";
	static const char at_start[] = "--search";
	static const char v0169[] =
	    "Options:\n  -c, --config <key=value>\n      --ephemeral\n          Run without "
	    "persisting session files to disk\n  -o, --output-last-message <FILE>\n";
	static const char lookalikes[] =
	    "      --search-tool <X>\n      --no-search\n  use `--search` to ...\n"
	    "      \\s--search\\s\n";

	(void)state;
	assert_true(agent_codex_help_has_search(with, strlen(with)));
	assert_true(agent_codex_help_has_search(with_crlf, strlen(with_crlf)));
	assert_true(agent_codex_help_has_search(at_start, strlen(at_start)));
	assert_false(agent_codex_help_has_search(v0169, strlen(v0169)));
	assert_false(agent_codex_help_has_search(lookalikes, strlen(lookalikes)));
}

/* ---- the output filter ---- */

static void run_filter(bool show_all, const char *const *lines, struct strvec *shown)
{
	struct agent_filter f = AGENT_FILTER_INIT;
	size_t i;

	f.show_all = show_all;
	for (i = 0; lines[i]; i++)
		if (agent_filter_show(&f, lines[i], strlen(lines[i])))
			strvec_push(shown, lines[i]);
	agent_filter_release(&f);
}

static void filter_hides_codex_file_update(void **state)
{
	const char *lines[] = {"codex",
			       "I will fix the kernel.",
			       "file update",
			       "M /repo/src/kernel.py",
			       "@@ -1,4 +1,4 @@",
			       " import jax",
			       "-x = 1",
			       "+x = 2",
			       " ",
			       " def f():",
			       "apply_patch(auto_approved=true) exited 0 in 3ms:",
			       "Success. Updated the following files:",
			       "M src/kernel.py",
			       "file update:",
			       "diff --git a/src/kernel.py b/src/kernel.py",
			       "index 3b18e51..a4c2d0f 100644",
			       "--- a/src/kernel.py",
			       "+++ b/src/kernel.py",
			       "@@ -1,2 +1,2 @@",
			       " import jax",
			       "-x = 1",
			       "+x = 2",
			       "",
			       "codex",
			       "Changes:",
			       "- bumped x",
			       " indented note",
			       "+1 for this",
			       NULL};
	const char *want[] = {"codex",
			      "I will fix the kernel.",
			      "apply_patch(auto_approved=true) exited 0 in 3ms:",
			      "Success. Updated the following files:",
			      "M src/kernel.py",
			      "codex",
			      "Changes:",
			      "- bumped x",
			      " indented note",
			      "+1 for this",
			      NULL};
	struct strvec shown = STRVEC_INIT;
	size_t n;

	(void)state;
	run_filter(false, lines, &shown);
	assert_argv(&shown, want);
	strvec_clear(&shown);
	run_filter(true, lines, &shown);
	for (n = 0; lines[n]; n++)
		;
	assert_int_equal(shown.nr, n);
	strvec_clear(&shown);
}

static void filter_line_after_diff_is_shown(void **state)
{
	/* Right after a complete hunk, a bullet or an indented line is the agent talking. */
	const char *lines[] = {"file update:",
			       "diff --git a/README b/README",
			       "--- a/README",
			       "+++ b/README",
			       "@@ -3 +3,2 @@",
			       "-old",
			       "+new",
			       "+more",
			       "- a bullet after the diff",
			       "  two-space indented text",
			       "--- not a diff header any more",
			       NULL};
	const char *want[] = {"- a bullet after the diff", "  two-space indented text",
			      "--- not a diff header any more", NULL};
	struct strvec shown = STRVEC_INIT;

	(void)state;
	run_filter(false, lines, &shown);
	assert_argv(&shown, want);
	strvec_clear(&shown);
}

static void filter_added_file_and_headers(void **state)
{
	const char *lines[] = {"\x1b[35m\x1b[3mfile update\x1b[0m",
			       "A /repo/new_module.py",
			       "def g():",
			       "    return 1",
			       "",
			       "D /repo/old.py",
			       "print('bye')",
			       "apply_patch(auto_approved=true) exited 0 in 1ms:",
			       "file create: notes.md",
			       "new file mode 100644",
			       "\\ No newline at end of file",
			       "@@ weird hunk without counts",
			       "+added",
			       " context",
			       "exec",
			       "bash -lc 'git commit -m x' in /repo",
			       "  file update: an indented header",
			       NULL};
	const char *want[] = {"apply_patch(auto_approved=true) exited 0 in 1ms:", "exec",
			      "bash -lc 'git commit -m x' in /repo", NULL};
	struct strvec shown = STRVEC_INIT;

	(void)state;
	run_filter(false, lines, &shown);
	assert_argv(&shown, want);
	strvec_clear(&shown);
}

static void filter_not_fooled_by_lookalikes(void **state)
{
	const char *lines[] = {
	    "file updated successfully", "profile update: done", "- bullet", " indented",
	    "@@ not in a block",	 "diff --git a b",	 NULL};
	struct strvec shown = STRVEC_INIT;

	(void)state;
	run_filter(false, lines, &shown);
	assert_argv(&shown, lines);
	strvec_clear(&shown);
}

/* ---- claude stream-json ---- */

/* Shapes as documented for `claude -p --output-format stream-json --verbose`. */
#define CL_INIT                                                                                    \
	"{\"type\":\"system\",\"subtype\":\"init\",\"cwd\":\"/repo\",\"session_id\":\"3f1c2a8e-"   \
	"1b7d-4c1e-9e55-0c8c7d1d2a10\",\"tools\":[\"Bash\",\"Edit\",\"Read\"],\"mcp_servers\":[]," \
	"\"model\":\"claude-sonnet-4-5\",\"permissionMode\":\"bypassPermissions\","                \
	"\"apiKeySource\":"                                                                        \
	"\"none\"}"
#define CL_ASSISTANT                                                                              \
	"{\"type\":\"assistant\",\"message\":{\"id\":\"msg_01\",\"type\":\"message\",\"role\":"   \
	"\"assistant\",\"model\":\"claude-sonnet-4-5\",\"content\":[{\"type\":\"text\",\"text\":" \
	"\"Looking at the kernel.\\nTwo lines.\"},{\"type\":\"tool_use\",\"id\":\"toolu_01\","    \
	"\"name\":\"Bash\",\"input\":{\"command\":\"git log --oneline -3\",\"description\":"      \
	"\"Show "                                                                                 \
	"commits\"}}],\"stop_reason\":null,\"usage\":{\"input_tokens\":4,\"output_tokens\":"      \
	"1}},\"parent_tool_use_id\":null,\"session_id\":\"3f1c2a8e\"}"
#define CL_EDIT                                                                                  \
	"{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"tool_use\",\"id\":"       \
	"\"toolu_02\",\"name\":\"Edit\",\"input\":{\"file_path\":\"/repo/k.py\",\"old_string\":" \
	"\"x = 1\",\"new_string\":\"x = 2\"}}]}}"
#define CL_USER                                                                                   \
	"{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"tool_use_id\":"        \
	"\"toolu_01\",\"type\":\"tool_result\",\"content\":\"abc123 fix\",\"is_error\":false}]}," \
	"\"session_id\":\"3f1c2a8e\"}"
#define CL_SUCCESS                                                                               \
	"{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"duration_ms\":12873," \
	"\"duration_api_ms\":11002,\"num_turns\":6,\"result\":\"Committed abc123: faster "       \
	"kernel.\",\"session_id\":\"3f1c2a8e\",\"total_cost_usd\":0.0421,\"usage\":{"            \
	"\"input_tokens\":1200,\"output_tokens\":300},\"permission_denials\":[]}"
#define CL_MAX_TURNS                                                                               \
	"{\"type\":\"result\",\"subtype\":\"error_max_turns\",\"is_error\":false,\"duration_ms\":" \
	"50000,\"num_turns\":30,\"session_id\":\"3f1c2a8e\",\"total_cost_usd\":1.5}"
#define CL_RATE_REJECTED                                                               \
	"{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"rejected\"," \
	"\"resetsAt\":"                                                                \
	"1771390800,\"rateLimitType\":\"five_hour\",\"overageStatus\":\"rejected\","   \
	"\"isUsingOverage\":false},\"uuid\":\"76258cfb\",\"session_id\":\"1ae0af5b\"}"
#define CL_RATE_ALLOWED                                                                            \
	"{\"type\":\"rate_limit_event\",\"rate_limit_info\":{\"status\":\"allowed\",\"resetsAt\":" \
	"1771390800,\"rateLimitType\":\"five_hour\"}}"

static void feed_all(struct agent_claude_stream *st, const char *const *lines, bool full,
		     struct strvec *show)
{
	size_t i;

	for (i = 0; lines[i]; i++)
		agent_claude_feed(st, lines[i], strlen(lines[i]), full, show);
}

static void claude_stream_success(void **state)
{
	const char *lines[] = {CL_INIT, CL_RATE_ALLOWED, CL_ASSISTANT, CL_USER,
			       CL_EDIT, CL_SUCCESS,	 NULL};
	struct agent_claude_stream st = AGENT_CLAUDE_STREAM_INIT;
	struct strvec show = STRVEC_INIT;

	(void)state;
	feed_all(&st, lines, false, &show);
	assert_true(st.have_result);
	assert_true(st.result_success);
	assert_false(st.rate_limited);
	assert_string_equal(st.result, "Committed abc123: faster kernel.");
	assert_string_equal(st.session_id, "3f1c2a8e-1b7d-4c1e-9e55-0c8c7d1d2a10");
	assert_int_equal(st.num_turns, 6);
	assert_int_equal(st.malformed, 0);
	assert_true(contains_line(&show, "Looking at the kernel."));
	assert_true(contains_line(&show, "Two lines."));
	assert_true(contains_line(&show, "tool Bash: git log --oneline -3"));
	assert_true(contains_line(&show, "tool Edit: /repo/k.py"));
	assert_true(any_contains(&show, "result: success, 6 turns, 12.873 s"));
	assert_false(any_contains(&show, "abc123 fix")); /* tool results are not shown */
	assert_false(any_contains(&show, "rate limit"));
	strvec_clear(&show);
	agent_claude_stream_release(&st);

	/* show_file_updates: edits are shown in full */
	feed_all(&st, lines, true, &show);
	assert_true(any_contains(&show, "\"new_string\":\"x = 2\""));
	strvec_clear(&show);
	agent_claude_stream_release(&st);
}

static void claude_stream_errors(void **state)
{
	const char *max_turns[] = {CL_INIT, CL_ASSISTANT, CL_MAX_TURNS, NULL};
	const char *missing[] = {CL_INIT, CL_ASSISTANT, NULL};
	const char *limited[] = {CL_INIT, CL_RATE_REJECTED, NULL};
	const char *malformed[] = {"Error: not logged in",
				   "{\"type\":\"result\",\"subtype\":",
				   "[1,2,3]",
				   "{\"type\":42,\"message\":[]}",
				   "{\"type\":\"assistant\",\"message\":{\"content\":\"plain\"}}",
				   "{\"type\":\"assistant\",\"message\":{\"content\":[1,{\"type\":"
				   "\"tool_use\"}]}}",
				   "{\"type\":\"result\",\"is_error\":\"yes\",\"result\":7}",
				   "",
				   NULL};
	struct agent_claude_stream st = AGENT_CLAUDE_STREAM_INIT;
	struct strvec show = STRVEC_INIT;

	(void)state;
	feed_all(&st, max_turns, false, &show);
	assert_true(st.have_result);
	assert_false(st.result_success);
	assert_string_equal(st.subtype, "error_max_turns");
	assert_null(st.result);
	assert_true(any_contains(&show, "result: error_max_turns, 30 turns"));
	strvec_clear(&show);
	agent_claude_stream_release(&st);
	memset(&st, 0, sizeof(st));

	feed_all(&st, missing, false, &show);
	assert_false(st.have_result);
	strvec_clear(&show);
	agent_claude_stream_release(&st);
	memset(&st, 0, sizeof(st));

	feed_all(&st, limited, false, &show);
	assert_true(st.rate_limited);
	assert_string_equal(st.rate_info, "five_hour, resets at 1771390800");
	assert_true(contains_line(&show, "rate limit: rejected (five_hour, resets at 1771390800)"));
	strvec_clear(&show);
	agent_claude_stream_release(&st);
	memset(&st, 0, sizeof(st));

	feed_all(&st, malformed, false, &show);
	assert_int_equal(st.malformed, 3);
	assert_true(contains_line(&show, "Error: not logged in"));
	assert_true(contains_line(&show, "plain"));
	assert_true(contains_line(&show, "tool ?: "));
	assert_true(st.have_result); /* the last line is a (strange) result */
	assert_false(st.result_success);
	assert_null(st.result);
	strvec_clear(&show);
	agent_claude_stream_release(&st);
}

/* duration_ms is untrusted: values outside int64 (or not finite) never reach a cast */
static void claude_stream_duration_is_clamped(void **state)
{
	static const struct {
		const char *line;
		int64_t want;
		const char *shown; /* a substring of the result line, or NULL: no duration shown */
	} cases[] = {
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":-1e308}", -1, NULL},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":-5}", -1, NULL},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":-0.5}", -1, NULL},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":\"12\"}", -1, NULL},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":1e308}", INT64_MAX,
	     ", 9223372036854776.000 s"},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":9.3e18}", INT64_MAX,
	     NULL},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":9223372036854775807}",
	     INT64_MAX, NULL},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":12873}", 12873,
	     ", 12.873 s"},
	    {"{\"type\":\"result\",\"subtype\":\"success\",\"duration_ms\":12873.9}", 12873,
	     ", 12.873 s"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct agent_claude_stream st = AGENT_CLAUDE_STREAM_INIT;
		struct strvec show = STRVEC_INIT;

		agent_claude_feed(&st, cases[i].line, strlen(cases[i].line), false, &show);
		assert_true(st.have_result);
		assert_true(st.duration_ms == cases[i].want);
		assert_int_equal(show.nr, 1);
		if (cases[i].shown)
			assert_non_null(strstr(show.v[0], cases[i].shown));
		if (cases[i].want < 0)
			assert_string_equal(show.v[0], "result: success");
		strvec_clear(&show);
		agent_claude_stream_release(&st);
	}
}

/* ---- codex exec --json events ---- */

/* What codex-cli 0.169.0 printed against tests/e2e/responses_server.py (2 model requests). */
#define CODEX_0169_RUN                                                                             \
	"{\"type\":\"thread.started\",\"thread_id\":\"01a21638-8020-7493-810a-7a30b8f86968\"}\n"   \
	"{\"type\":\"item.completed\",\"item\":{\"id\":\"item_0\",\"type\":\"error\",\"message\":" \
	"\"Model metadata for `gpt-test` not found.\"}}\n"                                         \
	"{\"type\":\"turn.started\"}\n"                                                            \
	"{\"type\":\"item.started\",\"item\":{\"id\":\"item_1\",\"type\":\"command_execution\","   \
	"\"command\":\"/bin/bash -lc \\\"git commit -q -m edit\\\"\",\"aggregated_output\":\"\","  \
	"\"exit_code\":null,\"status\":\"in_progress\"}}\n"                                        \
	"{\"type\":\"item.completed\",\"item\":{\"id\":\"item_1\",\"type\":\"command_execution\"," \
	"\"command\":\"/bin/bash -lc \\\"git commit -q -m edit\\\"\",\"aggregated_output\":"       \
	"\"a19fb51 edit\\n\",\"exit_code\":0,\"status\":\"completed\"}}\n"                         \
	"{\"type\":\"item.completed\",\"item\":{\"id\":\"item_2\",\"type\":\"agent_message\","     \
	"\"text\":\"Done.\"}}\n"                                                                   \
	"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":200,\"cached_input_tokens\":8,"  \
	"\"cache_write_input_tokens\":0,\"output_tokens\":14,\"reasoning_output_tokens\":4}}\n"

static void feed_codex_text(struct agent_codex_stream *st, const char *text, struct strvec *show,
			    long *plain)
{
	while (*text) {
		size_t len = strcspn(text, "\n");

		if (!agent_codex_feed(st, text, len, show))
			(*plain)++;
		text += len + (text[len] == '\n');
	}
}

static void codex_stream_0169(void **state)
{
	struct agent_codex_stream st = AGENT_CODEX_STREAM_INIT;
	struct strvec show = STRVEC_INIT;
	const char *want[] = {"codex session 01a21638-8020-7493-810a-7a30b8f86968",
			      "warning: Model metadata for `gpt-test` not found.",
			      "exec",
			      "/bin/bash -lc \"git commit -q -m edit\"",
			      " succeeded (exit 0):",
			      "a19fb51 edit",
			      "codex",
			      "Done.",
			      "usage: input 200 (8 cached), output 14 (4 reasoning) tokens",
			      NULL};
	long plain = 0;

	(void)state;
	feed_codex_text(&st, CODEX_0169_RUN "WARNING: proceeding\n\n", &show, &plain);
	assert_int_equal(plain, 2); /* the stderr line and the blank one */
	assert_argv(&show, want);
	assert_int_equal(st.input_tokens, 200);
	assert_int_equal(st.cached_input_tokens, 8);
	assert_int_equal(st.output_tokens, 14);
	assert_int_equal(st.reasoning_output_tokens, 4);
	assert_int_equal(st.turns_completed, 1);
	assert_int_equal(st.events, 7);
	assert_string_equal(st.thread_id, "01a21638-8020-7493-810a-7a30b8f86968");
	strvec_clear(&show);
}

/*
 * turn.completed is the thread's running total: a later one replaces the
 * earlier (summing would count the first turn twice). Older versions'
 * token_count: info.total_token_usage replaces, per-request figures add.
 */
static void codex_stream_usage_semantics(void **state)
{
	struct agent_codex_stream st = AGENT_CODEX_STREAM_INIT;
	struct strvec show = STRVEC_INIT;
	long plain = 0;

	(void)state;
	feed_codex_text(&st,
			"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":100,"
			"\"cached_input_tokens\":10,\"output_tokens\":7}}\n"
			"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":250,"
			"\"cached_input_tokens\":90,\"output_tokens\":20}}\n",
			&show, &plain);
	assert_int_equal(st.input_tokens, 250);
	assert_int_equal(st.cached_input_tokens, 90);
	assert_int_equal(st.output_tokens, 20);
	assert_int_equal(st.reasoning_output_tokens, -1);
	assert_int_equal(st.turns_completed, 2);
	assert_string_equal(show.v[1], "usage: input 250 (90 cached), output 20 tokens");

	st = (struct agent_codex_stream)AGENT_CODEX_STREAM_INIT;
	strvec_clear(&show);
	feed_codex_text(&st,
			"{\"id\":\"1\",\"msg\":{\"type\":\"token_count\",\"input_tokens\":30,"
			"\"cached_input_tokens\":0,\"output_tokens\":3}}\n"
			"{\"id\":\"1\",\"msg\":{\"type\":\"token_count\",\"input_tokens\":40,"
			"\"output_tokens\":4}}\n"
			"{\"id\":\"1\",\"msg\":{\"type\":\"token_count\",\"info\":null}}\n"
			"{\"id\":\"1\",\"msg\":{\"type\":\"agent_message\",\"message\":\"hi\"}}\n",
			&show, &plain);
	assert_int_equal(st.input_tokens, 70);
	assert_int_equal(st.output_tokens, 7);
	assert_true(contains_line(&show, "codex"));
	assert_true(contains_line(&show, "hi"));
	feed_codex_text(&st,
			"{\"msg\":{\"type\":\"token_count\",\"info\":{\"total_token_usage\":{"
			"\"input_tokens\":500,\"cached_input_tokens\":400,\"output_tokens\":50,"
			"\"reasoning_output_tokens\":20},\"last_token_usage\":{\"input_tokens\":1,"
			"\"output_tokens\":1}}}}\n",
			&show, &plain);
	assert_int_equal(st.input_tokens, 500);
	assert_int_equal(st.output_tokens, 50);
	assert_int_equal(plain, 0);
	strvec_clear(&show);
}

/* Failures, odd values and other item types render without crashing; negatives are no counts. */
static void codex_stream_odd_events(void **state)
{
	struct agent_codex_stream st = AGENT_CODEX_STREAM_INIT;
	struct strvec show = STRVEC_INIT;
	long plain = 0;
	struct sbuf many = SBUF_INIT;
	int i;

	(void)state;
	feed_codex_text(
	    &st,
	    "{\"type\":\"error\",\"message\":\"You've hit your usage limit.\"}\n"
	    "{\"type\":\"turn.failed\",\"error\":{\"message\":\"usage\\nlimit\"}}\n"
	    "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":-5,"
	    "\"output_tokens\":\"9\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":\"file_change\",\"changes\":"
	    "[{\"path\":\"a.c\",\"kind\":\"update\"},{\"path\":\"b.c\",\"kind\":\"add\"}]}}\n"
	    "{\"type\":\"item.updated\",\"item\":{\"type\":\"todo_list\",\"items\":"
	    "[{\"text\":\"x\",\"completed\":true},{\"text\":\"y\",\"completed\":false}]}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":\"command_execution\","
	    "\"id\":\"c9\",\"command\":\"false\",\"exit_code\":1}}\n"
	    "{\"type\":\"item.completed\",\"item\":{\"type\":\"web_search\",\"query\":\"q\"}}\n"
	    "{\"type\":\"item.completed\",\"item\":null}\n"
	    "{\"type\":42}\n[1,2]\n{not json\n",
	    &show, &plain);
	assert_int_equal(plain, 2);
	assert_int_equal(st.turns_failed, 1);
	assert_string_equal(st.error, "usage limit");
	assert_int_equal(st.input_tokens, -1);
	assert_int_equal(st.output_tokens, -1);
	assert_true(contains_line(&show, "error: You've hit your usage limit."));
	assert_true(contains_line(&show, "turn failed: usage limit"));
	assert_true(contains_line(&show, "file update: M a.c"));
	assert_true(contains_line(&show, "file update: A b.c"));
	assert_true(contains_line(&show, "  [x] x"));
	assert_true(contains_line(&show, "  [ ] y"));
	assert_true(contains_line(&show, "false"));
	assert_true(contains_line(&show, " failed (exit 1):"));
	assert_true(contains_line(&show, "web search: q"));
	strvec_clear(&show);

	/* a long command output is cut to 20 lines and a count */
	sbuf_adds(&many, "{\"type\":\"item.completed\",\"item\":{\"type\":\"command_execution\","
			 "\"id\":\"c1\",\"command\":\"seq 25\",\"aggregated_output\":\"");
	for (i = 1; i <= 25; i++)
		sbuf_addf(&many, "%d\\n", i);
	sbuf_adds(&many, "\",\"exit_code\":0}}");
	assert_true(agent_codex_feed(&st, many.buf, many.len, &show));
	assert_int_equal(show.nr, 2 + 1 + 20 + 1);
	assert_string_equal(show.v[show.nr - 2], "20");
	assert_string_equal(show.v[show.nr - 1], "... (5 more lines)");
	sbuf_release(&many);
	strvec_clear(&show);
}

/* ---- running real child scripts ---- */

static const char fake_codex_body[] =
    "log=\"$(dirname \"$0\")/codex-calls.log\"\n"
    "echo \"ARGS: $*\" >>\"$log\"\n"
    "case \"$*\" in\n"
    "*__gdnctl_invalid_reasoning_effort_probe__*)\n"
    "  echo \"HOME=$HOME CODEX_HOME=$CODEX_HOME PWD=$(pwd) KEY=${OPENAI_API_KEY:-unset}\" "
    ">>\"$log\"\n"
    "  touch \"$CODEX_HOME/config.lock\"; mkdir -p \"$CODEX_HOME/log\"; : >\"$CODEX_HOME/log/x\"\n"
    "  echo \"Error: unknown variant \\`__gdnctl_invalid_reasoning_effort_probe__\\`, expected "
    "one of \\`low\\`, \\`medium\\`, \\`high\\` in \\`model_reasoning_effort\\`\" >&2\n"
    "  exit 1;;\n"
    "*--help*) printf 'Options:\\n      --search\\n          Enable web search\\n'; exit 0;;\n"
    "esac\n"
    "out=; prev=\n"
    "for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
    "prompt=$(cat)\n"
    "echo \"OpenAI Codex (fake)\"\n"
    "echo codex\n"
    "echo \"prompt was: $prompt\"\n"
    "echo 'file update'\n"
    "echo 'M /repo/x.py'\n"
    "echo '@@ -1 +1 @@'\n"
    "echo '-a = 1'\n"
    "echo '+a = 2'\n"
    "echo 'apply_patch(auto_approved=true) exited 0 in 2ms:'\n"
    "echo \"cwd=$(pwd)\"\n"
    "printf 'final answer\\n' >\"$out\"\n"
    "exit \"${FAKE_EXIT:-0}\"\n";

static void open_agent(const struct gdn_agent_opts *o, struct gdn_agent **a, struct strvec *warn)
{
	struct gdn_err err = GDN_ERR_INIT;
	int ret = gdn_agent_open(o, a, warn, &err);

	if (ret)
		fail_msg("gdn_agent_open: %s", err.msg);
}

static void codex_fake_run(void **state)
{
	char *bin = script("codex", fake_codex_body);
	char *lm = path_in("last.txt"), *tr = path_in("transcript.log");
	struct gdn_agent_opts o = {.driver = "codex",
				   .bin = bin,
				   .ephemeral = true,
				   .timeout_ms = 20000,
				   .kill_grace_ms = 500};
	struct gdn_agent_request req = {.workdir = tmpdir,
					.prompt = "PROMPT-TEXT\n",
					.last_message_file = lm,
					.transcript_file = tr,
					.on_line = collect_line};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT, shown = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *text;

	(void)state;
	req.payload = &shown;
	unit_write_file(NULL, lm, "stale message from an earlier attempt\n", 0644);
	open_agent(&o, &a, &warn);
	assert_int_equal(warn.nr, 0);
	assert_string_equal(gdn_agent_bin(a), bin);
	assert_null(gdn_agent_efforts(a));
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_true(res.ok);
	assert_int_equal(res.status, GDN_PROC_EXITED);
	assert_int_equal(res.exit_code, 0);
	assert_string_equal(res.last_message, "final answer");
	assert_true(contains_line(&shown, "prompt was: PROMPT-TEXT"));
	assert_true(contains_line(&shown, "apply_patch(auto_approved=true) exited 0 in 2ms:"));
	assert_false(contains_line(&shown, "+a = 2"));
	assert_false(contains_line(&shown, "file update"));
	text = xstrfmt("cwd=%s", tmpdir);
	assert_true(contains_line(&shown, text));
	free(text);
	gdn_agent_result_release(&res);

	/* a failing attempt: appended to the transcript, not ok */
	setenv("FAKE_EXIT", "3", 1);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	unsetenv("FAKE_EXIT");
	assert_false(res.ok);
	assert_int_equal(res.exit_code, 3);
	assert_string_equal(res.reason, "exited with code 3");
	gdn_agent_result_release(&res);

	text = read_all(tr);
	assert_non_null(text);
	/* unfiltered, with one header per attempt */
	assert_non_null(strstr(text, "+a = 2\n"));
	assert_non_null(strstr(text, "==== gdnctl: codex agent started "));
	assert_non_null(strstr(strstr(text, "==== gdnctl: codex agent started ") + 1,
			       "==== gdnctl: codex agent started "));
	assert_non_null(strstr(text, " --ephemeral - ====\n"));
	assert_non_null(strstr(text, "ended: exit 3"));
	free(text);

	strvec_clear(&warn);
	strvec_clear(&shown);
	gdn_agent_free(a);
	free(bin);
	free(lm);
	free(tr);
}

/* A codex that speaks --json: the events' usage is the run's, the -o file its last message. */
static void codex_fake_json_run(void **state)
{
	char *bin =
	    script("codex", "out=; prev=\n"
			    "for a in \"$@\"; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n"
			    "cat >/dev/null\n"
			    "cat <<'EOF'\n" CODEX_0169_RUN "EOF\n"
			    "echo 'WARNING: on stderr' >&2\n"
			    "printf 'Done.\\n' >\"$out\"\n"
			    "exit \"${FAKE_EXIT:-0}\"\n");
	char *lm = path_in("json-last.txt"), *tr = path_in("json-transcript.log");
	struct gdn_agent_opts o = {
	    .driver = "codex", .bin = bin, .timeout_ms = 20000, .kill_grace_ms = 500};
	struct gdn_agent_request req = {.workdir = tmpdir,
					.prompt = "hi\n",
					.last_message_file = lm,
					.transcript_file = tr,
					.on_line = collect_line};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT, shown = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *text;

	(void)state;
	req.payload = &shown;
	open_agent(&o, &a, &warn);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_true(res.ok);
	assert_string_equal(res.last_message, "Done.");
	assert_int_equal(res.usage.input_tokens, 200);
	assert_int_equal(res.usage.output_tokens, 14);
	assert_int_equal(res.usage.tokens, -1);
	assert_true(res.usage.cost_usd < 0);
	assert_true(contains_line(&shown, "codex"));
	assert_true(contains_line(&shown, "Done."));
	assert_true(contains_line(&shown, "WARNING: on stderr"));
	assert_true(
	    contains_line(&shown, "usage: input 200 (8 cached), output 14 (4 reasoning) tokens"));
	assert_false(contains_line(&shown, "{\"type\":\"turn.started\"}"));
	gdn_agent_result_release(&res);
	strvec_clear(&shown);

	setenv("FAKE_EXIT", "1", 1);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	unsetenv("FAKE_EXIT");
	assert_false(res.ok);
	assert_string_equal(res.reason, "exited with code 1");
	gdn_agent_result_release(&res);

	text = read_all(tr); /* the raw events */
	assert_non_null(text);
	assert_non_null(strstr(text, "\n{\"type\":\"turn.started\"}\n"));
	assert_non_null(strstr(text, " exec --json -C "));
	free(text);

	strvec_clear(&warn);
	strvec_clear(&shown);
	gdn_agent_free(a);
	free(bin);
	free(lm);
	free(tr);
}

static void codex_probes_with_fake(void **state)
{
	char *bin = script("codex", fake_codex_body);
	char *log = path_in("codex-calls.log");
	struct gdn_agent_opts o = {
	    .driver = "codex", .bin = bin, .reasoning_effort = "high", .search = true};
	struct gdn_agent *a = NULL;
	struct strvec warn = STRVEC_INIT, argv = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *text, *home, *end;

	(void)state;
	unlink(log);
	setenv("OPENAI_API_KEY", "sk-should-not-reach-the-probe", 1);
	open_agent(&o, &a, &warn);
	unsetenv("OPENAI_API_KEY");
	assert_int_equal(warn.nr, 0);
	assert_string_equal(gdn_agent_efforts(a), "low, medium, high");
	assert_true(gdn_agent_search(a));
	gdn_agent_argv(a, &argv_req, &argv);
	assert_string_equal(argv.v[argv.nr - 2], "--search");
	strvec_clear(&argv);
	gdn_agent_free(a);
	a = NULL;

	text = read_all(log);
	assert_non_null(text);
	assert_non_null(strstr(
	    text,
	    "ARGS: exec -c model_reasoning_effort=\"__gdnctl_invalid_reasoning_effort_probe__\" "
	    "probe\n"));
	assert_non_null(strstr(text, "ARGS: exec --help\n"));
	assert_non_null(strstr(text, "KEY=unset"));
	/* HOME = CODEX_HOME = working directory, a fresh dir that is gone afterwards */
	home = strstr(text, "HOME=");
	assert_non_null(home);
	home += 5;
	end = strchr(home, ' ');
	assert_non_null(end);
	*end = '\0';
	assert_non_null(strstr(home, "gdnctl-codex-probe-"));
	assert_non_null(strstr(end + 1, home));
	assert_int_equal(access(home, F_OK), -1);
	free(text);

	/* an effort the binary does not list: a clear error naming the values */
	o.reasoning_effort = "xhigh";
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_EBACKEND);
	assert_null(a);
	assert_non_null(strstr(err.msg, "'xhigh'"));
	assert_non_null(strstr(err.msg, "low, medium, high"));

	strvec_clear(&warn);
	free(bin);
	free(log);
}

static void codex_probes_degrade(void **state)
{
	/* codex 0.169-like: no --search in help, effort probe says nothing parseable */
	char *bin =
	    script("codex-new", "case \"$*\" in\n"
				"*--help*) echo 'Usage: codex exec [OPTIONS] [PROMPT]'; exit 0;;\n"
				"*probe*) echo 'Not inside a trusted directory' >&2; exit 1;;\n"
				"esac\nexit 0\n");
	char *hang = script("codex-hang", "case \"$*\" in\n"
					  "*probe*) sleep 30;;\n"
					  "esac\nexit 0\n");
	struct gdn_agent_opts o = {
	    .driver = "codex", .bin = bin, .reasoning_effort = "xhigh", .search = true};
	struct gdn_agent *a = NULL;
	struct strvec warn = STRVEC_INIT, argv = STRVEC_INIT;
	int64_t t0;
	char *want;

	(void)state;
	open_agent(&o, &a, &warn);
	assert_int_equal(warn.nr, 2);
	want = xstrfmt("could not determine supported reasoning-effort values for %s; trying it "
		       "for --reasoning-effort=xhigh",
		       bin);
	assert_string_equal(warn.v[0], want);
	free(want);
	assert_non_null(strstr(warn.v[1], "does not list --search; continuing without it"));
	assert_false(gdn_agent_search(a));
	gdn_agent_argv(a, &argv_req, &argv);
	assert_false(strvec_contains(&argv, "--search"));
	assert_true(strvec_contains(&argv, "model_reasoning_effort=\"xhigh\""));
	strvec_clear(&argv);
	gdn_agent_free(a);
	strvec_clear(&warn);

	/* a probe that hangs is cut by its timeout */
	o.bin = hang;
	o.search = false;
	o.probe_timeout_ms = 300;
	t0 = gdn_now_ms();
	open_agent(&o, &a, &warn);
	assert_true(gdn_now_ms() - t0 < 10000);
	assert_int_equal(warn.nr, 1);
	assert_non_null(strstr(warn.v[0], "could not determine"));
	gdn_agent_free(a);
	strvec_clear(&warn);
	free(bin);
	free(hang);
}

static void missing_binaries_are_clear_errors(void **state)
{
	struct gdn_agent_opts o = {.driver = "codex", .bin = "/nonexistent/dir/codex"};
	struct gdn_agent *a = NULL;
	struct strvec warn = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_ENOTFOUND);
	assert_string_equal(err.msg, "codex binary '/nonexistent/dir/codex' does not exist or is "
				     "not executable");
	o.bin = "no-such-codex-xyz";
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "not found in PATH"));

	/* nothing anywhere: GDNCTL_CODEX unset, PATH without codex (see setup) */
	o.bin = NULL;
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "could not find a 'codex' binary"));
	setenv("GDNCTL_CODEX", "/nonexistent/codex", 1);
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "GDNCTL_CODEX"));
	unsetenv("GDNCTL_CODEX");

	o.driver = "claude";
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "claude binary 'claude' not found"));
	o.driver = "command";
	o.command = "no-such-agent-prog --x";
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "'no-such-agent-prog' not found in PATH"));
	o.command = "prog 'unbalanced";
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_EUSAGE);
	o.command = "   ";
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_EUSAGE);
	o.command = NULL;
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_EUSAGE);
	o.driver = "gemini";
	assert_int_equal(gdn_agent_open(&o, &a, &warn, &err), GDN_EUSAGE);
	assert_non_null(strstr(err.msg, "unknown agent 'gemini'"));
	assert_non_null(strstr(err.msg, "(known: claude, codex, command)"));
	assert_null(a);
	strvec_clear(&warn);
}

static const char fake_claude_body[] =
    "cat >/dev/null\n"
    "case \"$FAKE_CLAUDE\" in\n"
    "ok) cat <<'EOF'\n" CL_INIT "\n" CL_ASSISTANT "\n" CL_USER "\n" CL_SUCCESS "\nEOF\n;;\n"
    "noresult) echo '" CL_INIT "'; echo '" CL_ASSISTANT "';;\n"
    "limited) echo '" CL_INIT "'; echo '" CL_RATE_REJECTED
    "'; echo '{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":true,\"result\":"
    "\"Claude AI usage limit reached|1771390800\"}'; exit 1;;\n"
    "maxturns) echo '" CL_INIT "'; echo '" CL_MAX_TURNS "';;\n"
    "esac\n";

static void claude_fake_runs(void **state)
{
	char *bin = script("claude", fake_claude_body);
	char *lm = path_in("claude-last.txt");
	struct gdn_agent_opts o = {.driver = "claude",
				   .bin = bin,
				   .model = "opus",
				   .timeout_ms = 20000,
				   .kill_grace_ms = 500};
	struct gdn_agent_request req = {
	    .workdir = tmpdir, .prompt = "hi\n", .last_message_file = lm, .on_line = collect_line};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT, shown = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *text;

	(void)state;
	req.payload = &shown;
	open_agent(&o, &a, &warn);

	setenv("FAKE_CLAUDE", "ok", 1);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_true(res.ok);
	assert_string_equal(res.last_message, "Committed abc123: faster kernel.");
	text = read_all(lm);
	assert_string_equal(text, "Committed abc123: faster kernel.\n");
	free(text);
	assert_true(contains_line(&shown, "tool Bash: git log --oneline -3"));
	gdn_agent_result_release(&res);

	setenv("FAKE_CLAUDE", "noresult", 1);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_false(res.ok);
	assert_int_equal(res.exit_code, 0);
	assert_null(res.last_message);
	assert_int_equal(access(lm, F_OK), -1); /* the stale message was removed */
	assert_non_null(strstr(res.reason, "without a result event"));
	gdn_agent_result_release(&res);

	setenv("FAKE_CLAUDE", "limited", 1);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_false(res.ok);
	assert_int_equal(res.exit_code, 1);
	assert_non_null(strstr(res.reason, "rate limited"));
	assert_non_null(strstr(res.reason, "five_hour"));
	assert_string_equal(res.last_message, "Claude AI usage limit reached|1771390800");
	gdn_agent_result_release(&res);

	setenv("FAKE_CLAUDE", "maxturns", 1);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_false(res.ok);
	assert_non_null(strstr(res.reason, "error_max_turns"));
	gdn_agent_result_release(&res);
	unsetenv("FAKE_CLAUDE");

	gdn_agent_free(a);
	strvec_clear(&warn);
	strvec_clear(&shown);
	free(bin);
	free(lm);
}

static void command_fake_run(void **state)
{
	char *prog =
	    script("my agent", "printf 'args:'; for a in \"$@\"; do printf ' [%s]' \"$a\"; "
			       "done; echo\n"
			       "echo \"stdin: $(cat)\"\n"
			       "echo \"file: $(cat \"$1\")\"\n"
			       "echo 'the summary' >\"$2\"\n"
			       "exit \"${CMD_EXIT:-0}\"\n");
	char *pf = path_in("prompt.txt"), *lm = path_in("cmd-last.txt");
	char *cmdline = xstrfmt("'%s' {prompt_file} \"{last_message_file}\" \"two words\"", prog);
	struct gdn_agent_opts o = {.driver = "command", .command = cmdline, .timeout_ms = 20000};
	struct gdn_agent_request req = {.workdir = tmpdir,
					.prompt = "the prompt\n",
					.prompt_file = pf,
					.last_message_file = lm,
					.on_line = collect_line};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT, shown = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *want;

	(void)state;
	req.payload = &shown;
	unit_write_file(NULL, pf, "the prompt\n", 0644);
	open_agent(&o, &a, &warn);
	assert_string_equal(gdn_agent_bin(a), prog);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_true(res.ok);
	want = xstrfmt("args: [%s] [%s] [two words]", pf, lm);
	assert_true(contains_line(&shown, want));
	free(want);
	assert_true(contains_line(&shown, "stdin: the prompt"));
	assert_true(contains_line(&shown, "file: the prompt"));
	assert_string_equal(res.last_message, "the summary");
	gdn_agent_result_release(&res);

	setenv("CMD_EXIT", "2", 1);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	unsetenv("CMD_EXIT");
	assert_false(res.ok);
	assert_int_equal(res.exit_code, 2);
	gdn_agent_result_release(&res);

	gdn_agent_free(a);
	strvec_clear(&warn);
	strvec_clear(&shown);
	free(prog);
	free(pf);
	free(lm);
	free(cmdline);
}

static void hanging_agent_is_killed(void **state)
{
	/* prints (diff lines too: hidden but still activity), then goes quiet with a child */
	char *prog =
	    script("hang", "cat >/dev/null\n"
			   "echo 'file update'; echo 'M x'; echo '@@ -1 +1 @@'\n"
			   "sleep 60 & echo \"grandchild $!\" >\"$(dirname \"$0\")/hang.pid\"\n"
			   "sleep 60\n");
	char *pidfile = path_in("hang.pid");
	char *cmdline = xstrfmt("'%s'", prog);
	struct gdn_agent_opts o = {.driver = "command",
				   .command = cmdline,
				   .idle_timeout_ms = 400,
				   .timeout_ms = 20000,
				   .kill_grace_ms = 200};
	struct gdn_agent_request req = {.workdir = tmpdir, .prompt = "x"};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *text;
	long gc = 0;
	int64_t t0 = gdn_now_ms();

	(void)state;
	open_agent(&o, &a, &warn);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_true(gdn_now_ms() - t0 < 10000);
	assert_false(res.ok);
	assert_int_equal(res.status, GDN_PROC_IDLE);
	assert_int_equal(res.exit_code, 124);
	assert_non_null(strstr(res.reason, "idle limit"));
	gdn_agent_result_release(&res);
	text = read_all(pidfile);
	assert_non_null(text);
	assert_int_equal(sscanf(text, "grandchild %ld", &gc), 1);
	free(text);
	/* the whole group died, grandchild included (we are a subreaper: it was reaped) */
	for (int i = 0; i < 50 && !kill((pid_t)gc, 0); i++)
		usleep(20000);
	assert_int_equal(kill((pid_t)gc, 0), -1);
	gdn_agent_free(a);
	a = NULL;

	/* runtime limit */
	o.idle_timeout_ms = 0;
	o.timeout_ms = 300;
	open_agent(&o, &a, &warn);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_int_equal(res.status, GDN_PROC_TIMEOUT);
	assert_int_equal(res.exit_code, 124);
	assert_non_null(strstr(res.reason, "runtime limit"));
	gdn_agent_result_release(&res);
	gdn_agent_free(a);

	strvec_clear(&warn);
	free(prog);
	free(pidfile);
	free(cmdline);
}

/* An agent that exits 0 leaving `sleep &` and `setsid sleep &`: both stopped and listed. */
static void agent_leftovers_are_stopped(void **state)
{
	char *prog = script("leave", "cat >/dev/null\n"
				     "d=$(dirname \"$0\")\n"
				     "sleep 1000 & echo $! >\"$d/left.pids\"\n"
				     "setsid sleep 1000 & echo $! >>\"$d/left.pids\"\n"
				     "sleep 0.2\n"
				     "echo done\n");
	char *pidfile = path_in("left.pids");
	char *cmdline = xstrfmt("'%s'", prog);
	struct gdn_agent_opts o = {
	    .driver = "command", .command = cmdline, .timeout_ms = 20000, .kill_grace_ms = 2000};
	struct gdn_agent_request req = {.workdir = tmpdir, .prompt = "x"};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	long pids[2] = {0, 0};
	char *text;

	(void)state;
	open_agent(&o, &a, &warn);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	assert_true(res.ok);
	assert_int_equal(res.status, GDN_PROC_EXITED);
	text = read_all(pidfile);
	assert_non_null(text);
	assert_int_equal(sscanf(text, "%ld %ld", &pids[0], &pids[1]), 2);
	free(text);
	assert_int_equal(res.leftovers.nr, 2);
	for (int i = 0; i < 2; i++) {
		bool listed = false;

		for (size_t j = 0; j < res.leftovers.nr; j++)
			listed |= res.leftovers.v[j].pid == (pid_t)pids[i] &&
				  !strcmp(res.leftovers.v[j].argv0, "sleep");
		assert_true(listed);
		/* gone and reaped, not even a zombie */
		assert_int_equal(kill((pid_t)pids[i], 0), -1);
	}
	gdn_agent_result_release(&res);
	assert_int_equal(res.leftovers.nr, 0);
	gdn_agent_free(a);
	strvec_clear(&warn);
	unlink(pidfile);
	free(pidfile);
	free(prog);
	free(cmdline);
}

static void run_errors_are_reported(void **state)
{
	char *prog = script("vanishing", "exit 0\n");
	char *cmdline = xstrfmt("'%s'", prog);
	struct gdn_agent_opts o = {.driver = "command", .command = cmdline, .timeout_ms = 5000};
	struct gdn_agent_request req = {
	    .workdir = tmpdir, .prompt = "x", .transcript_file = "/nonexistent/dir/transcript.log"};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	open_agent(&o, &a, &warn);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), GDN_EIO);
	assert_non_null(
	    strstr(err.msg, "cannot open transcript '/nonexistent/dir/transcript.log'"));
	req.transcript_file = NULL;
	unlink(prog); /* removed between open and run */
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), GDN_ENOTFOUND);
	assert_non_null(strstr(err.msg, "command agent"));
	assert_false(res.ok);
	assert_int_equal(res.exit_code, 127);
	gdn_agent_result_release(&res);
	gdn_agent_free(a);
	strvec_clear(&warn);
	free(prog);
	free(cmdline);
}

/* ---- the real Codex CLI (driven by tests/e2e/t0650-agent-codex-real.sh) ---- */

static void real_codex_run(void **state)
{
	const char *bin = getenv("GDNCTL_TEST_CODEX_BIN");
	const char *workdir = getenv("GDNCTL_TEST_CODEX_WORKDIR");
	const char *logdir = getenv("GDNCTL_TEST_CODEX_LOGDIR");
	struct gdn_agent_opts o = {.driver = "codex",
				   .model = "gpt-gdnctl-test",
				   .reasoning_effort = "high",
				   .search = true,
				   .ephemeral = true,
				   .timeout_ms = 120000,
				   .idle_timeout_ms = 60000,
				   .kill_grace_ms = 2000};
	struct gdn_agent_request req = {.workdir = workdir,
					.prompt = "Append a line to hello.txt and commit it.\n",
					.on_line = collect_line};
	struct gdn_agent *a = NULL;
	struct gdn_agent_result res;
	struct strvec warn = STRVEC_INIT, shown = STRVEC_INIT;
	struct gdn_err err = GDN_ERR_INIT;
	char *lm, *tr;
	size_t i;

	(void)state;
	if (!bin || !workdir || !logdir) {
		skip();
		return;
	}
	lm = xstrfmt("%s/last-message.txt", logdir);
	tr = xstrfmt("%s/transcript.log", logdir);
	o.bin = bin;
	setenv("PATH", orig_path, 1); /* codex is a node script; it runs git */
	req.last_message_file = lm;
	req.transcript_file = tr;
	req.payload = &shown;
	open_agent(&o, &a, &warn);
	for (i = 0; i < warn.nr; i++)
		print_message("# warning: %s\n", warn.v[i]);
	assert_int_equal(gdn_agent_run(a, &req, &res, &err), 0);
	for (i = 0; i < shown.nr; i++)
		print_message("# | %s\n", shown.v[i]);
	if (!res.ok)
		fail_msg("codex failed: %s", res.reason);
	assert_non_null(res.last_message);
	print_message("# last message: %s\n", res.last_message);
	setenv("PATH", tmpdir_sysbin(), 1);
	gdn_agent_result_release(&res);
	gdn_agent_free(a);
	strvec_clear(&warn);
	strvec_clear(&shown);
	free(lm);
	free(tr);
}

/*
 * Tests run with PATH = a directory of the few tools the fake scripts use,
 * HOME = the temporary directory and no GDNCTL_CODEX, so that a codex or
 * claude installed on the machine cannot take part.
 */
static int setup(void **state)
{
	static const char *const tools[] = {"cat",   "dirname", "mkdir", "touch",
					    "sleep", "rm",	"setsid"};
	const char *dir;
	char *src, *dst;
	size_t i;

	(void)state;
	orig_path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	tmpdir = xstrdup("/tmp/gdnctl-test-agent.XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	dir = tmpdir_sysbin();
	if (mkdir(dir, 0755))
		return -1;
	for (i = 0; i < ARRAY_SIZE(tools); i++) {
		src = agent_find_program(tools[i]);
		dst = xstrfmt("%s/%s", dir, tools[i]);
		if (!src || symlink(src, dst))
			return -1;
		free(src);
		free(dst);
	}
	setenv("PATH", dir, 1);
	setenv("HOME", tmpdir, 1);
	unsetenv("GDNCTL_CODEX");
	unsetenv("GDNCTL_CLAUDE");
	return 0;
}

static int teardown(void **state)
{
	const char *argv[] = {"rm", "-rf", tmpdir, NULL};
	struct gdn_proc p = GDN_PROC_INIT;
	struct gdn_err err = GDN_ERR_INIT;

	(void)state;
	setenv("PATH", orig_path, 1);
	p.argv = argv;
	gdn_proc_run(&p, &err);
	gdn_proc_release(&p);
	free(tmpdir);
	free(orig_path);
	return 0;
}

/* "gdnctl-usage:" lines: fields in any order, each optional; anything malformed is no usage line.
 */
static void usage_line_parser(void **state)
{
	struct gdn_agent_usage u, sum = GDN_AGENT_USAGE_NONE;
	static const char *const bad[] = {
	    "",
	    "gdnctl-usage:",
	    "gdnctl-usage: ",
	    "usage: input=1",
	    "x gdnctl-usage: input=1",
	    "gdnctl-usage: input=",
	    "gdnctl-usage: input=-1",
	    "gdnctl-usage: input=1x",
	    "gdnctl-usage: cost_usd=.",
	    "gdnctl-usage: cost_usd=1e3",
	    "gdnctl-usage: cost_usd=1.2.3",
	    "gdnctl-usage: input",
	    "gdnctl-usage: model=x",
	    "gdnctl-usage: input=1234567890123456789",
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		assert_false(gdn_agent_parse_usage_line(bad[i], strlen(bad[i]), &u));
	assert_true(
	    gdn_agent_parse_usage_line("gdnctl-usage: input=100 output=20 cost_usd=0.125", 48, &u));
	assert_int_equal(u.input_tokens, 100);
	assert_int_equal(u.output_tokens, 20);
	assert_true(u.cost_usd == 0.125);
	gdn_agent_usage_add(&sum, &u);
	assert_true(gdn_agent_parse_usage_line("\t gdnctl-usage: output=5 model=x\r", 33, &u));
	assert_int_equal(u.input_tokens, -1);
	assert_int_equal(u.output_tokens, 5);
	assert_true(u.cost_usd == -1);
	gdn_agent_usage_add(&sum, &u);
	assert_int_equal(sum.input_tokens, 100);
	assert_int_equal(sum.output_tokens, 25);
	assert_true(sum.cost_usd == 0.125);
	/* the length bounds the line: nothing past it is read */
	assert_true(gdn_agent_parse_usage_line("gdnctl-usage: input=12345", 23, &u));
	assert_int_equal(u.input_tokens, 123);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(usage_line_parser),
	    cmocka_unit_test(codex_argv_defaults_to_ephemeral),
	    cmocka_unit_test(codex_argv_every_combination),
	    cmocka_unit_test(codex_effort_is_json_quoted),
	    cmocka_unit_test(claude_argv_every_combination),
	    cmocka_unit_test(driver_table_is_complete),
	    cmocka_unit_test(command_argv_substitutes_inside_words),
	    cmocka_unit_test(split_words_quoting),
	    cmocka_unit_test(split_words_rejects_unbalanced),
	    cmocka_unit_test(probe_output_parsed),
	    cmocka_unit_test(search_flag_detection),
	    cmocka_unit_test(filter_hides_codex_file_update),
	    cmocka_unit_test(filter_line_after_diff_is_shown),
	    cmocka_unit_test(filter_added_file_and_headers),
	    cmocka_unit_test(filter_not_fooled_by_lookalikes),
	    cmocka_unit_test(claude_stream_success),
	    cmocka_unit_test(claude_stream_errors),
	    cmocka_unit_test(claude_stream_duration_is_clamped),
	    cmocka_unit_test(codex_stream_0169),
	    cmocka_unit_test(codex_stream_usage_semantics),
	    cmocka_unit_test(codex_stream_odd_events),
	    cmocka_unit_test(codex_fake_run),
	    cmocka_unit_test(codex_fake_json_run),
	    cmocka_unit_test(codex_probes_with_fake),
	    cmocka_unit_test(codex_probes_degrade),
	    cmocka_unit_test(claude_fake_runs),
	    cmocka_unit_test(command_fake_run),
	    cmocka_unit_test(hanging_agent_is_killed),
	    cmocka_unit_test(agent_leftovers_are_stopped),
	    cmocka_unit_test(run_errors_are_reported),
	    cmocka_unit_test(missing_binaries_are_clear_errors),
	};
	const struct CMUnitTest real[] = {
	    cmocka_unit_test(real_codex_run),
	};

	signal(SIGPIPE, SIG_IGN);
#ifdef __linux__
	prctl(PR_SET_CHILD_SUBREAPER, 1);
#endif
	/* the e2e test runs only the real-codex test, with its environment set */
	if (getenv("GDNCTL_TEST_CODEX_BIN"))
		return cmocka_run_group_tests(real, setup, teardown);
	return cmocka_run_group_tests(tests, setup, teardown);
}
