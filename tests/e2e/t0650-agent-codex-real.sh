#!/usr/bin/env bash
# The codex driver against the real Codex CLI (npm @openai/codex, pinned),
# offline: codex talks to tests/e2e/responses_server.py on loopback through
# a model provider in CODEX_HOME/config.toml. The scripted model answers
# the first turn with one exec_command call that edits hello.txt and
# commits, and the call's output with a final message.
#
# The CLI (pinned in tests/npm-tools.txt) is installed by `bash .ci/setup
# test`, never by the test (tests/e2e/lib-npm.sh): when the set-up could not
# install it (offline) the script is skipped (exit 77) with its reason; when
# it is missing otherwise, that is a failure in CI ($CI = true).
# GDNCTL_TEST_CODEX_BIN=/path/to/codex uses an existing binary instead.
#
# Drives the driver twice: through the unit-test binary's real_codex_run
# (the driver alone) and, when `gdnctl loop` exists, through
# `gdnctl loop --agent codex`.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-npm.sh"

command -v python3 >/dev/null 2>&1 || give_up "python3 is not installed"
command -v git >/dev/null 2>&1 || give_up "git is not installed"

npm_tool codex "${GDNCTL_TEST_CODEX_BIN:-}"
CODEX=$NPM_CLI CODEX_VERSION=$NPM_VERSION

UNIT=${GDNCTL_BUILD_DIR:-}/tests/test_agent

# One scripted model server per script (requests in $TRASH/requests.jsonl).
# Every response reports the same usage: input (of which cached), output (of
# which reasoning), the Responses API's convention.
IN=1200 CACHED=300 OUT=45 REASONING=7
start_model_server responses_server.py requests \
	--command "printf 'edited by codex\n' >>hello.txt && git add hello.txt && git commit -q -m 'codex: edit hello.txt' && git log --oneline -1" \
	--final-message "Done: edited hello.txt and committed it." \
	--usage "$IN,$CACHED,$OUT,$REASONING"

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

	# the terminal shows the --json events rendered: the command, its output, the usage
	test_expect_success 'the events are shown as readable lines, not JSON' '
		test_grep "^# | exec$" unit.out &&
		test_grep "^# | .*git commit -q -m .codex: edit hello.txt" unit.out &&
		test_grep "^# |  succeeded (exit 0):$" unit.out &&
		test_grep "^# | codex session [0-9a-f-]*$" unit.out &&
		test_grep "^# | usage: input $((2 * IN)) ($((2 * CACHED)) cached), output $((2 * OUT)) ($((2 * REASONING)) reasoning) tokens$" unit.out &&
		test_grep ! "^# | {" unit.out
	'

	test_expect_success 'the transcript has the raw events with a header' '
		test_grep "^==== gdnctl: codex agent started .* exec --json -C $TRASH/repo --dangerously-bypass-approvals-and-sandbox -o $TRASH/unit-logs/last-message.txt --ephemeral -m gpt-gdnctl-test -c .model_reasoning_effort=\"high\". -" unit-logs/transcript.log &&
		test_grep "^{\"type\":\"thread.started\"" unit-logs/transcript.log &&
		test_grep "^{\"type\":\"item.completed\",\"item\":{.*\"type\":\"command_execution\"" unit-logs/transcript.log &&
		test_grep "codex: edit hello.txt" unit-logs/transcript.log &&
		test_grep "^{\"type\":\"turn.completed\",\"usage\":{" unit-logs/transcript.log &&
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
		test_grep "^{\"type\":\"item.completed\",\"item\":{.*\"type\":\"command_execution\"" loop-logs/iteration-001-transcript.log &&
		test_grep "^exec$" loop.out &&
		test_grep "could not determine supported reasoning-effort values" loop.err &&
		test_grep "search" loop.err
	'

	# codex exec --json ends the turn with turn.completed {usage: {input_tokens,
	# cached_input_tokens, output_tokens, reasoning_output_tokens}}, the sum
	# over the turn's model requests (every response: $IN, $OUT): the journal
	# has input and output apart, the tokens are their sum, no cost
	usage_of() { # usage_of JOURNAL: "ITERATION INPUT OUTPUT TOKENS COST" per usage event
		python3 -c "
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e.get(\"event\") == \"usage\":
        print(e[\"iteration\"], e[\"input_tokens\"], e[\"output_tokens\"], e[\"tokens\"], e[\"cost_usd\"])
" "$1"
	}

	test_expect_success 'the journal has the input and output tokens the server sent' '
		n=$(req_json "len(posts)") &&
		test "$n" -ge 2 &&
		echo "1 $((IN * n)) $((OUT * n)) $(((IN + OUT) * n)) None" >expect &&
		usage_of loop-logs/loop.jsonl >actual &&
		test_cmp expect actual &&
		test_grep "agent usage: $(((IN + OUT) * n)) tokens (input $((IN * n)), output $((OUT * n))) in 1 iteration$" loop.out &&
		test_grep "usage: input $((IN * n)) ($((CACHED * n)) cached), output $((OUT * n)) ($((REASONING * n)) reasoning) tokens" loop.out &&
		echo $(((IN + OUT) * n)) >per-iteration
	'

	test_expect_success '--max-tokens stops the loop after the iteration that spent them' '
		rm -rf loop-logs1 && : >"$TRASH/requests.jsonl" &&
		gdnctl loop --agent codex --codex-bin "$CODEX" --iterations 3 --max-tokens 1 \
			--workdir "$TRASH/repo" --log-dir "$TRASH/loop-logs1" --prompt-file prompt.md \
			--model gpt-gdnctl-test "${loop_flags[@]}" --allow-no-commit >loop1.out 2>loop1.err ||
			{ cat loop1.out loop1.err; false; } &&
		test_grep "stopping before iteration 2: token-budget" loop1.out &&
		test_grep "\"event\":\"stop\",\"iteration\":2,\"reason\":\"token-budget\"" loop-logs1/loop.jsonl
	'

	# the budget is checked before each iteration: 1 token over one
	# iteration's usage lets the second one run and stops before the third
	test_expect_success '--max-tokens stops the loop at the iteration that reached the budget' '
		rm -rf loop-logs2 && : >"$TRASH/requests.jsonl" &&
		u=$(cat per-iteration) &&
		gdnctl loop --agent codex --codex-bin "$CODEX" --iterations 4 --max-tokens $((u + 1)) \
			--workdir "$TRASH/repo" --log-dir "$TRASH/loop-logs2" --prompt-file prompt.md \
			--model gpt-gdnctl-test "${loop_flags[@]}" --allow-no-commit >loop2.out 2>loop2.err ||
			{ cat loop2.out loop2.err; false; } &&
		test_grep "stopping before iteration 3: token-budget" loop2.out &&
		test_grep "\"event\":\"stop\",\"iteration\":3,\"reason\":\"token-budget\"" loop-logs2/loop.jsonl &&
		n=$(req_json "len(posts)") &&
		test "$n" -ge 4 &&
		usage_of loop-logs2/loop.jsonl >actual &&
		h=$((n / 2)) &&
		printf "1 %d %d %d None\n2 %d %d %d None\n" $((IN * h)) $((OUT * h)) $(((IN + OUT) * h)) \
			$((IN * h)) $((OUT * h)) $(((IN + OUT) * h)) >expect &&
		test_cmp expect actual &&
		test_grep "agent usage: $((2 * u)) tokens (input $((IN * n)), output $((OUT * n))) in 2 iterations" loop2.out
	'
else
	test_skip 'gdnctl loop --agent codex with the real codex' 'gdnctl loop does not exist yet'
fi

test_done
