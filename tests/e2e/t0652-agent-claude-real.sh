#!/usr/bin/env bash
# The claude driver against the real Claude Code CLI (npm
# @anthropic-ai/claude-code, pinned), offline: claude talks to
# tests/e2e/messages_server.py on loopback through ANTHROPIC_BASE_URL with
# a dummy ANTHROPIC_API_KEY. The scripted model answers the first turn with
# one Bash tool_use that edits hello.txt and commits, and the tool_result
# with a final message. A second server answers every request 529
# overloaded_error: the iteration fails, clearly, and the failure policy
# applies.
#
# Claude Code needs no login or onboarding state in print mode with an API
# key: a fresh empty HOME works. Its environment here: HOME in $TRASH (lib.sh),
# TMPDIR in $TRASH (it makes TMPDIR/cc-socks/PID.sock), DISABLE_AUTOUPDATER,
# CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC and DISABLE_TELEMETRY, and, when
# running as root, IS_SANDBOX=1: without it claude refuses
# --dangerously-skip-permissions under uid 0 (checked below).
#
# The CLI (pinned in tests/npm-tools.txt; the package pulls a native binary
# through an optional dependency) is installed by `bash .ci/setup test`,
# never by the test (tests/e2e/lib-npm.sh): when the set-up could not install
# it (offline) the script is skipped (exit 77) with its reason; when it is
# missing otherwise, that is a failure in CI ($CI = true).
# GDNCTL_TEST_CLAUDE_BIN=/path/to/claude uses an existing binary instead.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-npm.sh"

command -v python3 >/dev/null 2>&1 || give_up "python3 is not installed"
command -v git >/dev/null 2>&1 || give_up "git is not installed"

npm_tool claude-code "${GDNCTL_TEST_CLAUDE_BIN:-}"
CLAUDE=$NPM_CLI CLAUDE_VERSION=$NPM_VERSION

if ! gdnctl loop -h >loop-help 2>&1 || ! grep -q -- "--agent" loop-help; then
	give_up "gdnctl loop --agent does not exist"
fi

KEY=sk-ant-gdnctl-dummy-key-0123456789
COMMAND="printf 'edited by claude\n' >>hello.txt && git add hello.txt && git commit -q -m 'claude: edit hello.txt' && git log --oneline -1"

# start_server NAME [ARGS...]: a scripted server logging to NAME.jsonl,
# killed by pid at exit; sets PORT.
start_server() {
	local name=$1
	shift
	start_model_server messages_server.py "$name" --api-key "$KEY" --command "$COMMAND" \
		--final-message "Done: edited hello.txt and committed it." "$@"
}

start_server ok
OK_PORT=$PORT
start_server overloaded --fail 529 --fail-message Overloaded
BUSY_PORT=$PORT

# claude's environment: the loopback API, a dummy key, nothing else.
unset ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_OAUTH_TOKEN ANTHROPIC_MODEL ANTHROPIC_SMALL_FAST_MODEL \
	ANTHROPIC_CUSTOM_HEADERS CLAUDE_CONFIG_DIR CLAUDE_CODE_USE_BEDROCK CLAUDE_CODE_USE_VERTEX \
	CLAUDE_CODE_USE_FOUNDRY CLAUDECODE CLAUDE_CODE_ENTRYPOINT CLAUDE_CODE_SSE_PORT \
	IS_SANDBOX HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy
export ANTHROPIC_API_KEY=$KEY
export DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1
export NO_PROXY=127.0.0.1,localhost
mkdir -p "$TRASH/tmp"
AS_ROOT=
[ "$(id -u)" = 0 ] && AS_ROOT=1
sandbox_env=()
[ -n "$AS_ROOT" ] && sandbox_env=(IS_SANDBOX=1)

# loop PORT LOGDIR [ARGS...]: one iteration of `gdnctl loop --agent claude`.
loop() {
	local port=$1 logs=$2
	shift 2
	# shellcheck disable=SC2086
	env "${sandbox_env[@]}" TMPDIR="$TRASH/tmp" ANTHROPIC_BASE_URL="http://127.0.0.1:$port" \
		${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop --agent claude --codex-bin "$CLAUDE" --iterations 1 \
		--sleep-seconds 0 --workdir "$TRASH/repo" --log-dir "$TRASH/$logs" \
		--prompt-file "$TRASH/prompt.md" "$@"
}

# NAME.jsonl helpers: a Python expression over the POSTs to /v1/messages.
req_json() {
	python3 - "$TRASH/$1.jsonl" "$2" <<'EOF'
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
posts = [r for r in reqs if r["method"] == "POST" and r["path"].split("?")[0] == "/v1/messages"]
bodies = [r["body"] for r in posts]
print(eval(sys.argv[2], {"reqs": reqs, "posts": posts, "bodies": bodies, "json": json}))
EOF
}

test_expect_success "claude is the pinned version ($CLAUDE_VERSION)" '
	test_grep -F "$CLAUDE_VERSION (Claude Code)" "$TRASH/version"
'

test_expect_success 'setup: a repository for the agent' '
	test_create_repo repo &&
	(cd repo && echo hello >hello.txt && git add hello.txt && git commit -q -m hello) &&
	printf "Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}} at {{HEAD_SHA}}: append a line to hello.txt and commit it.\n" >prompt.md
'

test_expect_success 'gdnctl loop --agent claude: the real claude edits, commits, the loop keeps it' '
	git -C repo rev-parse HEAD >head-before &&
	loop $OK_PORT logs --model claude-gdnctl-test --reasoning-effort high >out 2>err ||
		{ cat out err; false; } &&
	test "$(git -C repo log -1 --format=%s)" = "claude: edit hello.txt" &&
	test "$(git -C repo rev-parse HEAD~1)" = "$(cat head-before)" &&
	printf "hello\nedited by claude\n" >expect &&
	test_cmp expect repo/hello.txt &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success 'the last-message file and the terminal have the final message' '
	echo "Done: edited hello.txt and committed it." >expect &&
	test_cmp expect logs/iteration-001-last-message.txt &&
	test_grep "^claude session [0-9a-f-]* (model claude-gdnctl-test)$" out &&
	test_grep "^I will edit hello.txt and commit.$" out &&
	test_grep -F "tool Bash: $COMMAND" out &&
	test_grep "^Done: edited hello.txt and committed it.$" out &&
	test_grep "^result: success, 2 turns, [0-9.]* s, [$][0-9.]*$" out &&
	test_grep ! "\"type\"" out
'

test_expect_success 'the transcript has the raw stream-json between header and trailer' '
	t=logs/iteration-001-transcript.log &&
	test_grep "^==== gdnctl: claude agent started .* -p --output-format stream-json --verbose --dangerously-skip-permissions --model claude-gdnctl-test --effort high" $t &&
	test_grep "^{\"type\":\"system\",\"subtype\":\"init\"" $t &&
	test_grep "\"apiKeySource\":\"ANTHROPIC_API_KEY\"" $t &&
	test_grep "\"claude_code_version\":\"$CLAUDE_VERSION\"" $t &&
	test_grep "\"tool_use_id\":\"toolu_gdnctl_01\"" $t &&
	test_grep "claude: edit hello.txt" $t &&
	test_grep "\"type\":\"result\"" $t &&
	test_grep "\"result\":\"Done: edited hello.txt and committed it.\"" $t &&
	test_grep "^==== gdnctl: claude agent ended: exit 0" $t
'

test_expect_success 'the journal has the usage the server sent (input + cache, output, cost)' '
	python3 - logs/loop.jsonl logs/iteration-001-transcript.log "$TRASH/ok.jsonl" <<-\PY
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	u = [e for e in ev if e["event"] == "usage"]
	assert len(u) == 1 and u[0]["iteration"] == 1, u
	def obj(l):
	    try:
	        return json.loads(l)
	    except ValueError:
	        return None
	res = [o for o in map(obj, open(sys.argv[2])) if isinstance(o, dict) and o.get("type") == "result"][-1]
	ru = res["usage"]
	want_in = ru["input_tokens"] + ru.get("cache_creation_input_tokens", 0) + ru.get("cache_read_input_tokens", 0)
	assert u[0]["input_tokens"] == want_in and u[0]["output_tokens"] == ru["output_tokens"], (u, ru)
	assert abs(u[0]["cost_usd"] - res["total_cost_usd"]) < 1e-9, (u, res)
	# what messages_server.py sent: 10 input and 5 output tokens per /v1/messages reply
	reqs = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
	n = sum(1 for r in reqs if r["method"] == "POST" and r["path"].split("?")[0] == "/v1/messages")
	assert (u[0]["input_tokens"], u[0]["output_tokens"]) == (10 * n, 5 * n), (u, n)
	PY
'

test_expect_success 'the model saw the prompt on stdin, --model, --effort, the tool round trip' '
	test "$(req_json ok "len(posts)")" = 2 &&
	test "$(req_json ok "all(r[\"key_ok\"] for r in posts)")" = True &&
	test "$(req_json ok "set(b[\"model\"] for b in bodies)")" = "{'\''claude-gdnctl-test'\''}" &&
	test "$(req_json ok "bodies[0][\"output_config\"][\"effort\"]")" = high &&
	test "$(req_json ok "all(b[\"stream\"] for b in bodies)")" = True &&
	test "$(req_json ok "\"Bash\" in [t[\"name\"] for t in bodies[0][\"tools\"]]")" = True &&
	grep -q -F "Iteration 1 of 1 at $(cat head-before): append a line" ok.jsonl &&
	test "$(req_json ok "[c[\"type\"] for c in bodies[1][\"messages\"][-1][\"content\"] if c[\"type\"] == \"tool_result\"]")" = "['\''tool_result'\'']" &&
	grep -q -F "claude: edit hello.txt" ok.jsonl &&
	test "$(req_json ok "sorted(set(r[\"path\"] for r in reqs))")" = "['\''/v1/messages?beta=true'\'']"
'

test_expect_success 'the dummy API key is in nothing gdnctl wrote, nor in the server log' '
	test_grep "\"x-api-key\": \"<redacted>\"" ok.jsonl &&
	! grep -r -l -F "$KEY" out err logs repo/.git ok.jsonl
'

test_expect_success 'claude 529 overloaded: the iteration fails clearly, the failure is counted' '
	git -C repo rev-parse HEAD >head-before &&
	CLAUDE_CODE_MAX_RETRIES=1 test_must_fail =4 loop $BUSY_PORT busy-logs >out 2>err &&
	cat out err >all &&
	test "$(git -C repo rev-parse HEAD)" = "$(cat head-before)" &&
	test "$(req_json overloaded "len(posts)")" = 2 &&
	test "$(req_json overloaded "all(r[\"key_ok\"] for r in posts)")" = True &&
	test_grep "^API Error: 529 Overloaded" out &&
	test_grep "^API Error: 529 Overloaded" busy-logs/iteration-001-last-message.txt &&
	test_grep "^result: success (error), 1 turns" out &&
	test_grep "^api retry 1/1: .* 529, next in [0-9.]* s$" out &&
	test_grep "agent: exited with code 1; result .success. is_error: API Error: 529 Overloaded" all &&
	test_grep "codex iteration failed with exit code 1" all &&
	test_grep "\"event\":\"decision\".*\"failure\":\"agent\",\"counted\":true,.*\"exit\":4}" \
		busy-logs/loop.jsonl &&
	test_grep "\"subtype\":\"api_retry\",\"attempt\":1,\"max_retries\":1,.*\"error_status\":529" \
		busy-logs/iteration-001-transcript.log &&
	test_grep "^==== gdnctl: claude agent ended: exit 1" busy-logs/iteration-001-transcript.log &&
	! grep -r -l -F "$KEY" out err busy-logs overloaded.jsonl
'

test_expect_success 'claude 529 with --max-failures -1: counted, the loop goes on and ends' '
	: >overloaded.jsonl &&
	CLAUDE_CODE_MAX_RETRIES=0 loop $BUSY_PORT busy-logs2 --max-failures -1 >out 2>err ||
		{ cat out err; false; } &&
	cat out err >all &&
	test "$(req_json overloaded "len(posts)")" = 1 &&
	test_grep "codex iteration failed with exit code 1" all &&
	test_grep "\"event\":\"decision\".*\"failure\":\"agent\",\"counted\":true," \
		busy-logs2/loop.jsonl &&
	test_grep "\"event\":\"run_end\".*\"exit_code\":0" busy-logs2/loop.jsonl &&
	test "$(git -C repo rev-parse HEAD)" = "$(cat head-before)"
'

test_expect_success 'claude without an API key: not logged in, the reason says so, no request' '
	: >ok.jsonl &&
	(unset ANTHROPIC_API_KEY && test_must_fail =4 loop $OK_PORT nokey-logs >out 2>err) &&
	cat out err >all &&
	test_grep "agent: exited with code 1; result .success. is_error: Not logged in" all &&
	test_grep "\"apiKeySource\":\"none\"" nokey-logs/iteration-001-transcript.log &&
	test_line_count = 0 ok.jsonl
'

if [ -n "$AS_ROOT" ]; then
	test_expect_success 'as root without IS_SANDBOX=1 claude refuses; the reason is shown' '
		: >ok.jsonl &&
		sandbox_env=() &&
		test_must_fail =4 loop $OK_PORT root-logs >out 2>err &&
		cat out err >all &&
		test_grep "^--dangerously-skip-permissions cannot be used with root/sudo privileges" all &&
		test_grep "agent: exited with code 1" all &&
		test_grep "^\[gdnctl\] WARNING: running as root: Claude Code refuses --dangerously-skip-permissions unless IS_SANDBOX=1" err &&
		test_line_count = 0 ok.jsonl
	'
else
	test_skip 'as root without IS_SANDBOX=1 claude refuses' 'not running as root'
fi

test_done
