#!/usr/bin/env bash
# gdnctl demo --agent claude (and --agent codex) with the REAL Claude Code and
# Codex CLIs (npm, pinned in tests/npm-tools.txt, installed by .ci/setup), offline: each CLI
# talks to a scripted model server on loopback (messages_server.py,
# responses_server.py; see t0652 and t0650 for the CLIs' environment). The
# scripted model reads the iteration number from the rendered prompt.md in
# the request (`# Demo hill-climb: iteration N of M`, --iteration-pattern)
# and answers with one shell tool call that runs the example agent
# (examples/demo/agent/agent.sh) for that iteration: a real change per
# iteration (patch N applied, a running-log entry with `- Commit: (pending)`,
# a commit), then a final message once it sees the tool's output. With
# claude (five iterations) the loop's gate and performance policy must then
# keep exactly the two speed-ups, as with the example agent (t0800); with
# codex (the first two) the speed-up, and revert the broken change.
#
# Skipped (77) without node/npm or python3, cc, make or the zlib headers,
# except in CI where a missing CLI is a failure (lib-npm.sh).
# It measures real speed, so it never runs beside another such script:
# ctest: measures-speed
# ctest: cost 50
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-npm.sh"

command -v python3 >/dev/null 2>&1 || give_up "python3 is not installed"
command -v git >/dev/null 2>&1 || give_up "git is not installed"
command -v make >/dev/null && command -v cc >/dev/null ||
	skip_all "the demo needs make and cc (bash .ci/setup build installs them)"
printf '#include <zlib.h>\nint main(void){return 0;}\n' >"$TRASH/z.c"
cc -o "$TRASH/z" "$TRASH/z.c" -lz 2>/dev/null || skip_all "the demo needs zlib headers (zlib1g-dev)"

npm_tool claude-code "${GDNCTL_TEST_CLAUDE_BIN:-}"
CLAUDE=$NPM_CLI CLAUDE_VERSION=$NPM_VERSION
mv "$TRASH/version" "$TRASH/claude-version"
npm_tool codex "${GDNCTL_TEST_CODEX_BIN:-}"
CODEX=$NPM_CLI CODEX_VERSION=$NPM_VERSION
mv "$TRASH/version" "$TRASH/codex-version"

KEY=sk-ant-gdnctl-dummy-key-0123456789
CODEX_KEY=sk-gdnctl-dummy-codex-key-9876543210
AGENT=$GDNCTL_SOURCE_DIR/examples/demo/agent/agent.sh
# The tool call: the example agent, given a prompt file with the iteration
# the model read in the request (outside the repository, in DIR).
COMMAND="printf '# Demo hill-climb: iteration %s of 5\\n' {iteration} >../it-{iteration}.md && sh '$AGENT' ../it-{iteration}.md"
PATTERN='^# Demo hill-climb: iteration ([0-9]+) of [0-9]+$'
SUBJ1="matmul: i-k-j loop order"
SUBJ5="matmul: 4x8 register tiles"

# start_server SCRIPT NAME [ARGS...]: a scripted server logging to NAME.jsonl,
# killed by pid at exit; sets PORT.
start_server() {
	local script=$1 name=$2
	shift 2
	start_model_server "$script" "$name" --command "$COMMAND" --iteration-pattern "$PATTERN" \
		--final-message "Done: applied the patch and committed it." "$@"
}

# The agents' environment: loopback only, dummy keys, no real credentials.
unset ANTHROPIC_AUTH_TOKEN CLAUDE_CODE_OAUTH_TOKEN ANTHROPIC_MODEL ANTHROPIC_SMALL_FAST_MODEL \
	ANTHROPIC_CUSTOM_HEADERS CLAUDE_CONFIG_DIR CLAUDE_CODE_USE_BEDROCK CLAUDE_CODE_USE_VERTEX \
	CLAUDE_CODE_USE_FOUNDRY CLAUDECODE CLAUDE_CODE_ENTRYPOINT CLAUDE_CODE_SSE_PORT \
	IS_SANDBOX HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy \
	OPENAI_API_KEY CODEX_API_KEY OPENAI_BASE_URL GDNCTL_CLAUDE GDNCTL_CODEX
export DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_TELEMETRY=1
export NO_PROXY=127.0.0.1,localhost
mkdir -p "$TRASH/tmp"
sandbox_env=()
[ "$(id -u)" = 0 ] && sandbox_env=(IS_SANDBOX=1)

# NAME.jsonl helper: a Python expression over the model POSTs (path ending
# in /v1/messages or /responses) and their bodies.
req_json() {
	python3 - "$TRASH/$1.jsonl" "$2" <<'EOF'
import json, re, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
posts = [r for r in reqs if r["method"] == "POST" and re.search(r"/(v1/messages|responses)$", r["path"].split("?")[0])]
bodies = [r["body"] for r in posts]
def iteration(body):
    m = re.search(r"# Demo hill-climb: iteration ([0-9]+) of [0-9]+", json.dumps(body))
    return int(m.group(1)) if m else None
print(eval(sys.argv[2], {"reqs": reqs, "posts": posts, "bodies": bodies, "json": json, "iteration": iteration}))
EOF
}

# check_demo D: exactly the two speed-ups kept, the other three discarded
# (t0800 tests 3-4), the running log lint-clean and stamped.
check_demo() {
	local D=$1 P=$1/project base
	base=$(git -C "$P" rev-list --max-parents=0 HEAD) &&
	test "$(git -C "$P" log -1 --format=%s "$base")" = "demo: a naive matmul, its test and benchmark" &&
	git -C "$P" diff --quiet "$base" HEAD -- reference.c bench.c test_matmul.c Makefile &&
	git -C "$P" log --format=%s --first-parent "$base..HEAD" >all &&
	grep -v "^gdnctl: " all >agent &&
	test_line_count = 2 agent &&
	for n in 2 3 4; do git -C "$P" log -1 --format=%s refs/gdnctl/discarded/$n || return 1; done >discarded &&
	test_line_count = 3 discarded &&
	grep -vxF -f discarded agent >kept &&
	printf "%s\n" "$SUBJ5" "$SUBJ1" >expect &&
	test_cmp expect kept &&
	git -C "$P" show HEAD~1:matmul.c >m.c &&
	test_grep "4 x 8 tiles" m.c &&
	git -C "$P" diff --quiet "$(git -C "$P" log --format=%H -1 --grep="^$SUBJ5\$")" HEAD -- matmul.c &&
	grep "^### Iteration [0-9]" "$P/running-log.md" >entries &&
	printf "### Iteration %s\n" "1 - i-k-j loop order" "5 - 4x8 register tiles" >expect &&
	test_cmp expect entries &&
	test -z "$(git -C "$P" status --porcelain)" &&
	for n in 2 3 4; do
		! git -C "$P" diff --quiet refs/gdnctl/discarded/$n~1 refs/gdnctl/discarded/$n -- matmul.c &&
		! git -C "$P" diff --quiet refs/gdnctl/discarded/$n HEAD -- matmul.c || return 1
	done &&
	test_must_fail git -C "$P" rev-parse -q --verify refs/gdnctl/discarded/1 &&
	test_must_fail git -C "$P" rev-parse -q --verify refs/gdnctl/discarded/5 &&
	test_grep "\"event\":\"revert\",\"iteration\":2,\"reason\":\"validation failed: tests exit" "$D/logs/loop.jsonl" &&
	: iteration 3 is slower and reverted, labelled by its interval: t0800 checks the label &&
	test_grep "\"event\":\"revert\",\"iteration\":3,\"reason\":\"performance \(regression\|within_threshold\): throughput/speedup\"" "$D/logs/loop.jsonl" &&
	test_grep "\"event\":\"revert\",\"iteration\":4,\"reason\":\"performance within_threshold: throughput/speedup\"" "$D/logs/loop.jsonl" &&
	(cd "$P" && gdnctl lint-log --scope all --require-fields) &&
	test_grep "^- Commit: [0-9a-f]\{40\}$" "$P/running-log.md" >commits && test_line_count = 2 commits &&
	test_grep ! "^- Commit: (pending)" "$P/running-log.md"
}

# check_out OUT: the demo's summary.
check_out() {
	test_grep "^\[gdnctl\] demo finished in [0-9.]* s: 2 iterations kept, 3 reverted$" "$1" &&
	test_grep "^\[gdnctl\] log lint passed" "$1" &&
	test_grep "^\[gdnctl\]   iteration 1 kept (1 commit): $SUBJ1$" "$1" &&
	test_grep "^\[gdnctl\]   iteration 5 kept (1 commit): $SUBJ5$" "$1"
}

# ---- claude ----

test_expect_success "claude is the pinned version ($CLAUDE_VERSION)" '
	test_grep -F "$CLAUDE_VERSION (Claude Code)" claude-version
'

start_server messages_server.py claude --api-key "$KEY"
CLAUDE_PORT=$PORT

test_expect_success 'gdnctl demo --agent claude: the real claude applies a patch per iteration' '
	start=$(date +%s%N) &&
	env "${sandbox_env[@]}" TMPDIR="$TRASH/tmp" ANTHROPIC_API_KEY="$KEY" \
		ANTHROPIC_BASE_URL="http://127.0.0.1:$CLAUDE_PORT" GDNCTL_CLAUDE="$CLAUDE" \
		${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" demo --dir "$TRASH/d" --agent claude >out 2>err ||
		{ cat out err; false; } &&
	echo $((($(date +%s%N) - start) / 1000000)) >claude-ms &&
	test_grep "^\[gdnctl\] running: gdnctl loop --iterations 5 --agent claude " out &&
	test_grep "^claude session [0-9a-f-]* (model " "$TRASH/d/logs/loop-console.log" &&
	for n in 1 2 3 4 5; do
		test_grep "^tool Bash: printf .* $n >../it-$n.md && sh .*/agent.sh. ../it-$n.md$" "$TRASH/d/logs/loop-console.log" || return 1
	done &&
	test_grep "^Done: applied the patch and committed it.$" "$TRASH/d/logs/loop-console.log" &&
	check_out out &&
	test ! -e "$TRASH/d/agent"
'
[ -f "$TRASH/claude-ms" ] && ms=$(cat "$TRASH/claude-ms") && say "gdnctl demo --agent claude took $((ms / 1000)).$((ms % 1000 / 100)) s"

test_expect_success 'claude: exactly the two speed-ups are kept, the rest discarded, the log lints' '
	check_demo "$TRASH/d"
'

test_expect_success 'claude: two requests per iteration, the second with the tool result' '
	test "$(req_json claude "len(posts)")" = 10 &&
	test "$(req_json claude "all(r[\"key_ok\"] for r in posts)")" = True &&
	test "$(req_json claude "[iteration(b) for b in bodies]")" = "[1, 1, 2, 2, 3, 3, 4, 4, 5, 5]" &&
	test "$(req_json claude "[any(c.get(\"type\") == \"tool_result\" for m in b[\"messages\"] if isinstance(m[\"content\"], list) for c in m[\"content\"]) for b in bodies]")" = \
		"[False, True, False, True, False, True, False, True, False, True]" &&
	: the tool results carry what the example agent printed &&
	for n in 1 2 3 4 5; do
		test_grep "iteration $n: applying patches/$n-" "$TRASH/d/logs/iteration-00$n-transcript.log" || return 1
	done &&
	test_grep "\"tool_use_id\":\"toolu_gdnctl_01\"" "$TRASH/d/logs/iteration-005-transcript.log"
'

test_expect_success 'claude: the dummy key is nowhere under TRASH but redacted in the server log' '
	test_grep "\"x-api-key\": \"<redacted>\"" claude.jsonl &&
	! grep -r -l -F "$KEY" "$TRASH" >leaks &&
	test_line_count = 0 leaks
'

# ---- codex ----

test_expect_success "codex is the pinned version ($CODEX_VERSION)" '
	test_grep -F "$CODEX_VERSION" codex-version
'

start_server responses_server.py codex
CODEX_PORT=$PORT
CODEX_HOME=$TRASH/codex-home
mkdir -p "$CODEX_HOME"
cat >"$CODEX_HOME/config.toml" <<EOF
model = "gpt-config-default"
model_provider = "gdnctl_test"

[model_providers.gdnctl_test]
name = "gdnctl test server"
base_url = "http://127.0.0.1:$CODEX_PORT/v1"
wire_api = "responses"
env_key = "GDNCTL_TEST_API_KEY"
request_max_retries = 0
stream_max_retries = 0
EOF

# Codex runs the demo's first two iterations (a speed-up kept, a broken
# change reverted): what only a real CLI can show (a session per iteration,
# the tool call and its output, the key kept out of everything) shows there;
# claude above runs all five, the gate's and the policy's whole series,
# which the example agent also runs in t0800: iterations 3 to 5 take the
# same code whichever CLI made the commit. (In one dev run claude's five
# took 32.5 s, codex's two 10.7 s.)
test_expect_success 'gdnctl demo --agent codex --iterations 2: the real codex applies a patch per iteration' '
	start=$(date +%s%N) &&
	env CODEX_HOME="$CODEX_HOME" GDNCTL_TEST_API_KEY="$CODEX_KEY" GDNCTL_CODEX="$CODEX" \
		${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" demo --dir "$TRASH/x" --agent codex \
		--iterations 2 >xout 2>xerr ||
		{ cat xout xerr; false; } &&
	echo $((($(date +%s%N) - start) / 1000000)) >codex-ms &&
	test_grep "^\[gdnctl\] running: gdnctl loop --iterations 2 --agent codex " xout &&
	test_grep "^\[example agent\] iteration 2: applying patches/2-unroll-k.patch" "$TRASH/x/logs/loop-console.log" &&
	test_grep "^\[gdnctl\] demo finished in [0-9.]* s: 1 iteration kept, 1 reverted$" xout &&
	test_grep "^\[gdnctl\] log lint passed" xout &&
	test_grep "^\[gdnctl\]   iteration 1 kept (1 commit): $SUBJ1$" xout &&
	test ! -e "$TRASH/x/agent"
'
[ -f "$TRASH/codex-ms" ] && ms=$(cat "$TRASH/codex-ms") && say "gdnctl demo --agent codex --iterations 2 took $((ms / 1000)).$((ms % 1000 / 100)) s"

test_expect_success 'codex: the speed-up is kept, the broken change discarded, the log lints' '
	P=$TRASH/x/project &&
	base=$(git -C "$P" rev-list --max-parents=0 HEAD) &&
	git -C "$P" log --format=%s --first-parent "$base..HEAD" | grep -v "^gdnctl: " >kept &&
	echo "$SUBJ1" >expect &&
	test_cmp expect kept &&
	git -C "$P" rev-parse -q --verify refs/gdnctl/discarded/2 >/dev/null &&
	test_must_fail git -C "$P" rev-parse -q --verify refs/gdnctl/discarded/1 &&
	test_grep "\"event\":\"revert\",\"iteration\":2,\"reason\":\"validation failed: tests exit" "$TRASH/x/logs/loop.jsonl" &&
	grep "^### Iteration [0-9]" "$P/running-log.md" >entries &&
	echo "### Iteration 1 - i-k-j loop order" >expect &&
	test_cmp expect entries &&
	(cd "$P" && gdnctl lint-log --scope all --require-fields) &&
	test_grep "^- Commit: [0-9a-f]\{40\}$" "$P/running-log.md" >commits && test_line_count = 1 commits &&
	test -z "$(git -C "$P" status --porcelain)"
'

test_expect_success 'codex: two requests per iteration, the second with the call output' '
	test "$(req_json codex "len(posts)")" = 4 &&
	test "$(req_json codex "[iteration(b) for b in bodies]")" = "[1, 1, 2, 2]" &&
	test "$(req_json codex "[any(i.get(\"type\") == \"function_call_output\" for i in b[\"input\"]) for b in bodies]")" = \
		"[False, True, False, True]" &&
	test "$(req_json codex "sum(\"iteration 2: applying patches/2-unroll-k.patch\" in json.dumps(b) for b in bodies)")" = 1
'

test_expect_success 'codex: the dummy key is nowhere under TRASH' '
	! grep -r -l -F "$CODEX_KEY" "$TRASH" >leaks &&
	test_line_count = 0 leaks
'

test_done
