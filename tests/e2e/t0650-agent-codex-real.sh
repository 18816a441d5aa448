#!/usr/bin/env bash
# The codex driver against the real Codex CLI (npm @openai/codex, pinned),
# offline: codex talks to tests/e2e/responses_server.py on loopback through
# a model provider in CODEX_HOME/config.toml. The scripted model answers
# the first turn with one exec_command call that edits hello.txt and
# commits, and the call's output with a final message.
#
# The CLI is installed once into a cache directory (GDNCTL_CODEX_CACHE, or
# ~/.cache/gdnctl) with `npm install --prefix` (tests/e2e/lib-npm.sh);
# without npm, or when the install fails, the script is skipped (exit 77),
# except in CI ($CI = true) where that is a failure.
# GDNCTL_TEST_CODEX_BIN=/path/to/codex uses an existing binary instead.
#
# Drives the driver twice: through the unit-test binary's real_codex_run
# (the driver alone) and, when `gdnctl loop` exists, through
# `gdnctl loop --agent codex`.
CODEX_VERSION=0.169.0
REAL_HOME=${HOME:-/root}
# ctest: isolation-both
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-npm.sh"

command -v python3 >/dev/null 2>&1 || give_up "python3 is not installed"
command -v git >/dev/null 2>&1 || give_up "git is not installed"

npm_cli @openai/codex "$CODEX_VERSION" codex codex "${GDNCTL_CODEX_CACHE:-}" "${GDNCTL_TEST_CODEX_BIN:-}"
CODEX=$NPM_CLI

UNIT=${GDNCTL_BUILD_DIR:-}/tests/test_agent

# One scripted model server per script (requests in $TRASH/requests.jsonl).
start_model_server responses_server.py requests \
	--command "printf 'edited by codex\n' >>hello.txt && git add hello.txt && git commit -q -m 'codex: edit hello.txt' && git log --oneline -1" \
	--final-message "Done: edited hello.txt and committed it."

# codex's home: a provider on loopback, no network, no real credentials.
export CODEX_HOME=$TRASH/codex-home
mkdir -p "$CODEX_HOME"
cat >"$CODEX_HOME/config.toml" <<EOF
model = "gpt-config-default"
model_provider = "gdnctl_test"

[model_providers.gdnctl_test]
name = "gdnctl test server"
base_url = "http://127.0.0.1:$PORT/v1"
wire_api = "responses"
env_key = "GDNCTL_TEST_API_KEY"
request_max_retries = 0
stream_max_retries = 0
EOF
export GDNCTL_TEST_API_KEY=dummy-key-for-the-local-server
unset OPENAI_API_KEY CODEX_API_KEY OPENAI_BASE_URL

# requests.jsonl helpers: field of the Nth (0-based) POST to /responses.
req_json() {
	python3 - "$TRASH/requests.jsonl" "$1" <<'EOF'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
posts = [r["body"] for r in reqs if r["method"] == "POST" and r["path"].endswith("/responses")]
print(eval(sys.argv[2], {"posts": posts, "json": json}))
EOF
}

test_expect_success "codex is the pinned version ($CODEX_VERSION)" '
	test_grep -F "$CODEX_VERSION" "$TRASH/version"
'

test_expect_success 'setup: a repository for the agent' '
	test_create_repo repo &&
	(cd repo && echo hello >hello.txt && git add hello.txt && git commit -q -m hello) &&
	git -C repo rev-parse HEAD >head-before
'

if [ -x "$UNIT" ]; then
	test_expect_success 'the codex driver runs the real codex: edit, commit, last message' '
		mkdir -p unit-logs &&
		: >"$TRASH/requests.jsonl" &&
		GDNCTL_TEST_CODEX_BIN="$CODEX" GDNCTL_TEST_CODEX_WORKDIR="$TRASH/repo" \
		GDNCTL_TEST_CODEX_LOGDIR="$TRASH/unit-logs" "$UNIT" >unit.out 2>&1 ||
			{ cat unit.out; false; } &&
		test_grep "PASSED.*1 test" unit.out &&
		test "$(git -C repo log -1 --format=%s)" = "codex: edit hello.txt" &&
		test "$(git -C repo rev-parse HEAD~1)" = "$(cat head-before)" &&
		printf "hello\nedited by codex\n" >expect &&
		test_cmp expect repo/hello.txt &&
		printf "Done: edited hello.txt and committed it." >expect &&
		test_cmp expect unit-logs/last-message.txt
	'

	test_expect_success 'the prompt went on stdin; -m and the effort reached the model' '
		test "$(req_json "len(posts)")" = 2 &&
		test "$(req_json "posts[0][\"model\"]")" = gpt-gdnctl-test &&
		test "$(req_json "(posts[0].get(\"reasoning\") or {}).get(\"effort\")")" = high &&
		grep -q -F "Append a line to hello.txt and commit it." requests.jsonl &&
		test "$(req_json "\" \".join(i[\"type\"] for i in posts[1][\"input\"][-2:])")" = \
			"function_call function_call_output"
	'

	test_expect_success 'codex 0.169 probes degrade to warnings, no --search' '
		test_grep "warning: could not determine supported reasoning-effort values for $CODEX; trying it for --reasoning-effort=high" unit.out &&
		test_grep "does not list --search; continuing without it" unit.out &&
		test_grep "^# | codex$" unit.out &&
		test_grep "^# | Done: edited hello.txt and committed it.$" unit.out
	'

	test_expect_success 'the transcript has the unfiltered run with a header' '
		test_grep "^==== gdnctl: codex agent started .* exec -C $TRASH/repo --dangerously-bypass-approvals-and-sandbox -o $TRASH/unit-logs/last-message.txt --ephemeral -m gpt-gdnctl-test -c .model_reasoning_effort=\"high\". -" unit-logs/transcript.log &&
		test_grep "^exec$" unit-logs/transcript.log &&
		test_grep "codex: edit hello.txt" unit-logs/transcript.log &&
		test_grep "^==== gdnctl: codex agent ended: exit 0" unit-logs/transcript.log
	'
else
	test_skip 'the codex driver runs the real codex' "unit test binary $UNIT not built"
fi

# Through the loop command, once it exists.
if gdnctl loop -h >loop-help 2>&1 && grep -q -- "--agent" loop-help; then
	loop_flags=()
	grep -q -- "--validation-mode" loop-help && loop_flags+=(--validation-mode off)
	grep -q -- "--perf-mode" loop-help && loop_flags+=(--perf-mode off)
	grep -q -- "--sleep-seconds" loop-help && loop_flags+=(--sleep-seconds 0)
	grep -q -- "--sleep" loop-help && ! grep -q -- "--sleep-seconds" loop-help && loop_flags+=(--sleep 0)

	test_expect_success 'gdnctl loop --agent codex makes one commit with the real codex' '
		: >"$TRASH/requests.jsonl" &&
		git -C repo rev-parse HEAD >head-before &&
		printf "Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}} at {{HEAD_SHA}}: append a line to hello.txt and commit it.\n" >prompt.md &&
		gdnctl loop --agent codex --codex-bin "$CODEX" --iterations 1 \
			--workdir "$TRASH/repo" --log-dir "$TRASH/loop-logs" --prompt-file prompt.md \
			--model gpt-gdnctl-test --reasoning-effort high --search "${loop_flags[@]}" \
			>loop.out 2>loop.err ||
			{ cat loop.out loop.err; false; } &&
		test "$(git -C repo log -1 --format=%s)" = "codex: edit hello.txt" &&
		test "$(git -C repo rev-parse HEAD~1)" = "$(cat head-before)" &&
		grep -q -F "Iteration 1 of 1 at $(cat head-before)" requests.jsonl &&
		printf "Done: edited hello.txt and committed it." >expect &&
		test_cmp expect loop-logs/iteration-001-last-message.txt &&
		test_grep "^exec$" loop-logs/iteration-001-transcript.log &&
		test_grep "could not determine supported reasoning-effort values" loop.err &&
		test_grep "search" loop.err
	'

	# codex exec (plain output) says "tokens used" and the session total: input
	# + output of every response (responses_server.py: 10 + 5 each)
	test_expect_success 'the journal has the tokens the server sent' '
		n=$(req_json "len(posts)") &&
		test "$n" -ge 1 &&
		test_grep "\"event\":\"usage\",\"iteration\":1,\"input_tokens\":null,\"output_tokens\":null,\"tokens\":$((15 * n)),\"cost_usd\":null" loop-logs/loop.jsonl &&
		test_grep "agent usage: $((15 * n)) tokens" loop.out
	'

	test_expect_success '--max-tokens stops the loop after the iteration that spent them' '
		rm -rf loop-logs2 && : >"$TRASH/requests.jsonl" &&
		gdnctl loop --agent codex --codex-bin "$CODEX" --iterations 3 --max-tokens 1 \
			--workdir "$TRASH/repo" --log-dir "$TRASH/loop-logs2" --prompt-file prompt.md \
			--model gpt-gdnctl-test "${loop_flags[@]}" --allow-no-commit >loop2.out 2>loop2.err ||
			{ cat loop2.out loop2.err; false; } &&
		test_grep "stopping before iteration 2: token-budget" loop2.out &&
		test_grep "\"event\":\"stop\",\"iteration\":2,\"reason\":\"token-budget\"" loop-logs2/loop.jsonl
	'
else
	test_skip 'gdnctl loop --agent codex with the real codex' 'gdnctl loop does not exist yet'
fi

test_done
