#!/usr/bin/env bash
# One exit-code table, honoured by every command: the table `gdnctl --help`
# prints is the one of docs/gdnctl.md and the man page, and every command's
# error paths (a bad flag or value, an unknown backend, a missing file, a bad
# configuration value, a missing agent, a dirty tree) exit with the table's
# code and say why in exactly one "[gdnctl] error: ..." line on standard
# error. The original tool's names keep its codes where the compatibility
# page says so (codex-loop).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

unset GDNCTL_BACKEND GDNCTL_LOOP_BACKEND GDNCTL_PROJECT_BACKEND GDNCTL_TEST_COMMAND \
	GDNCTL_PROFILE_COMMAND GDNCTL_LOG_FILE GDNCTL_PROMPT_FILE GDNCTL_DIRECTIVES_DIR
# no agent programs: codex and claude are missing
export GDNCTL_CODEX=$TRASH/no/codex GDNCTL_CLAUDE=$TRASH/no/claude
export PATH=/usr/local/bin:/usr/bin:/bin

agent commit-one <<'EOF2'
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2
agent no-change <<'EOF2'
echo "thinking"
EOF2
agent fail <<'EOF2'
exit 7
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

# expect_error CODE ARGS...: `gdnctl ARGS...` exits CODE, prints nothing on
# standard output, and on standard error exactly one "[gdnctl] error: " line
# (a "[gdnctl] see ..." hint may follow) and nothing without the prefix.
expect_error() {
	local code=$1 rc=0
	shift
	gdnctl "$@" >"$TRASH/out" 2>"$TRASH/err" || rc=$?
	if [ "$rc" != "$code" ]; then
		echo "gdnctl $*: exit $rc, expected $code"
		sed 's/^/|  /' "$TRASH/err"
		return 1
	fi
	if [ "$(grep -c '^\[gdnctl\] error: ' "$TRASH/err")" != 1 ] ||
		grep -q -v '^\[gdnctl\] ' "$TRASH/err"; then
		echo "gdnctl $*: not one '[gdnctl] error:' line on stderr"
		sed 's/^/|  /' "$TRASH/err"
		return 1
	fi
	if [ -s "$TRASH/out" ]; then
		echo "gdnctl $*: output on stdout"
		sed 's/^/|  /' "$TRASH/out"
		return 1
	fi
}

test_expect_success 'setup: a clean repository (the test files in it are ignored)' '
	test_create_repo repo &&
	printf "%s\\n" out err expect help help-codes doc-codes man man-codes cmds >repo/.git/info/exclude
'
cd repo || exit 1

loop_cmd() { # loop_cmd NAME AGENT ARGS...: loop or codex-loop with a fake agent
	local name=$1 a=$2
	shift 2
	gdnctl "$name" --agent-cmd "$AG/$a {prompt_file}" --prompt-file "$TRASH/prompt.md" \
		--log-dir "$TRASH/logs" --sleep-seconds 0 --retry-sleep-seconds 0 "$@"
}

test_expect_success 'the table: gdnctl --help, the man page and docs/gdnctl.md list the same codes' '
	gdnctl --help >help &&
	sed -n "/^Exit status:/,/\\.$/p" help | tr "\\n" " " |
		sed "s/^Exit status: //; s/\\. *$//; s/, /\\n/g" | sed "s/ .*//" >help-codes &&
	echo >>help-codes &&
	printf "%s\\n" 0 1 2 3 4 5 124 128+N >expect &&
	test_cmp expect help-codes &&
	sed -n "/^## EXIT STATUS/,/^## /p" "$GDNCTL_SOURCE_DIR/docs/gdnctl.md" |
		sed -n "s/^| \\([0-9N+]*\\) | .*/\\1/p" >doc-codes &&
	test_cmp expect doc-codes &&
	gdnctl help --man >man &&
	sed -n "/^\\.SH EXIT STATUS/,/^\\.SH /p" man | sed -n "/^\\.B /s/^\\.B //p" | sed "s/\\\\//g" >man-codes &&
	test_cmp expect man-codes &&
	for c in 0 1 2 3 4 5 124; do
		test_grep "GDN_EXIT_[A-Z]* = $c," "$GDNCTL_SOURCE_DIR/include/gdnctl/exitcode.h" || exit 1
	done
'

test_expect_success 'a bad flag: every command, alias and subcommand exits 2 with one error line' '
	sed -n "/^Commands:/,/^See /s/^   \\([a-z][a-z-]*\\) .*/\\1/p" help >cmds &&
	test "$(wc -l <cmds)" -ge 25 &&
	while read -r c; do
		expect_error 2 "$c" --no-such-flag || exit 1
	done <cmds &&
	for sub in "trace summary" "trace diff" "config show" "config get" "config keys"; do
		expect_error 2 $sub --no-such-flag || exit 1
	done
'

test_expect_success 'a bad flag value exits 2 with one error line' '
	expect_error 2 loop --iterations x --agent-cmd true &&
	expect_error 2 loop --iterations 0 --agent-cmd true &&
	expect_error 2 loop --iterations -1 --agent-cmd true &&
	expect_error 2 loop --iterations 1 --agent nope &&
	expect_error 2 loop --iterations 1 --agent-cmd true --codex-retries -1 &&
	expect_error 2 loop --iterations 1 --agent-cmd true --validation-max-attempts 0 &&
	expect_error 2 loop --iterations 1 --agent-cmd true --until-time soon &&
	expect_error 2 loop --iterations 1 --agent codex --agent-cmd true &&
	expect_error 2 loop --iterations 1 --agent command &&
	expect_error 2 run --timeout forever -- true &&
	expect_error 2 test --tests all &&
	expect_error 2 lint-log --scope everything &&
	expect_error 2 trace summary --top -1 x &&
	expect_error 2 demo --iterations 0 &&
	expect_error 2 report --port nope &&
	expect_error 2 download-trace --jobs 0 --repo-id a/b &&
	expect_error 2 allocate --attempts 0 &&
	expect_error 2 -c nokeyvalue config show &&
	expect_error 2 nosuchcommand
'

test_expect_success 'an unknown backend: exit 2 on every command that takes one; 3 from the configuration' '
	expect_error 2 run -b nope -- true &&
	expect_error 2 wait -b nope job1 &&
	expect_error 2 logs -b nope job1 &&
	expect_error 2 stop -b nope job1 &&
	expect_error 2 test -b nope &&
	expect_error 2 profile -b nope &&
	expect_error 2 allocate -b nope &&
	expect_error 2 loop --iterations 1 --agent-cmd true --backend nope &&
	expect_error 2 -c project.test_command=true loop --iterations 1 --agent-cmd true \
		--validation-mode required --backend nope &&
	expect_error 3 -c project.test_command=true -c loop.backend=nope loop --iterations 1 \
		--agent-cmd true --validation-mode required &&
	test ! -e "$TRASH/logs/loop.jsonl"
'

test_expect_success 'a missing file: named on the command line 2 (loop), in the configuration 3' '
	expect_error 2 -C "$TRASH/no/such/dir" version &&
	expect_error 2 loop --iterations 1 --agent-cmd true --prompt-file "$TRASH/none.md" &&
	expect_error 2 loop --iterations 1 --agent-cmd true --directive-file none.md &&
	expect_error 2 loop --iterations 1 --agent-cmd true --directive-preset none &&
	expect_error 3 -c project.prompt_file=none.md loop --iterations 1 --agent-cmd true &&
	expect_error 3 lint-log &&
	expect_error 3 test &&
	expect_error 3 profile &&
	test ! -e "$TRASH/logs/loop.jsonl"
'

test_expect_success 'codex-loop keeps the original startup messages: exit 1, no error: tag' '
	test_expect_code 1 gdnctl codex-loop --iterations 1 --agent-cmd true --codex-retries -1 \
		>out 2>err &&
	echo "[gdnctl] --codex-retries must be >= 0." >expect && test_cmp expect err &&
	test_expect_code 1 gdnctl codex-loop --iterations 1 --agent-cmd true \
		--directive-file none.md >out 2>err &&
	echo "[gdnctl] directive file not found for none.md: $TRASH/repo/none.md" >expect &&
	test_cmp expect err
'

test_expect_success 'a bad configuration value: exit 3 naming file:line:col, for every command that reads it' '
	printf "lint:\\n  scope: everything\\n" >gdnctl.yaml &&
	for args in "run -- true" "wait job1" "logs job1" "stop job1" "test --dry-run" \
		"profile --dry-run" "allocate --dry-run" "lint-log" "config show" \
		"loop --iterations 1 --agent-cmd true" "codex-loop --iterations 1 --agent-cmd true" \
		"ray-test --print-only" "ray-wait job1 --print-only" "dev-tpu-test --tpu-name x --print-only"; do
		expect_error 3 $args &&
		test_grep -q "^\\[gdnctl\\] error: $TRASH/repo/gdnctl.yaml:2:10: " "$TRASH/err" || exit 1
	done &&
	rm gdnctl.yaml
'

test_expect_success 'a missing agent: exit 4 in loop, codex-loop and demo' '
	expect_error 4 loop --iterations 1 --prompt-file "$TRASH/prompt.md" &&
	test_grep "codex" "$TRASH/err" &&
	expect_error 4 codex-loop --iterations 1 --prompt-file "$TRASH/prompt.md" &&
	expect_error 4 loop --iterations 1 --agent claude --prompt-file "$TRASH/prompt.md" &&
	expect_error 4 loop --iterations 1 --agent-cmd "no-such-agent-program {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" &&
	expect_error 4 demo --agent codex --dir "$TRASH/demo" &&
	test ! -e "$TRASH/logs/loop.jsonl"
'

test_expect_success 'a dirty tree: loop --isolation in-place refuses it before the run (exit 2), dry run included' '
	echo change >README &&
	expect_error 2 loop --isolation in-place --iterations 1 --agent-cmd true \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" &&
	test_grep "working tree .* is dirty: commit or stash the changes, or rerun with --allow-dirty or --dirty-policy stash" "$TRASH/err" &&
	expect_error 2 loop --isolation in-place --iterations 1 --agent-cmd true --dry-run &&
	test ! -e "$TRASH/logs/loop.jsonl" &&
	test "$(cat README)" = change
'

test_expect_success 'a dirty tree under codex-loop --isolation in-place: the original iteration error, exit 2' '
	test_expect_code 2 loop_cmd codex-loop commit-one --isolation in-place --iterations 1 >out 2>err &&
	test_grep "^\\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\\] iteration 1 raised: Working tree is dirty before starting the iteration" err &&
	test_expect_code 2 loop_cmd codex-loop commit-one --isolation in-place --iterations 1 \
		--iteration-error-policy count-failure >out 2>err &&
	loop_cmd loop commit-one --isolation in-place --iterations 1 --allow-dirty >out 2>err &&
	loop_cmd loop commit-one --isolation in-place --iterations 1 --dirty-policy stash >out 2>err &&
	: with a worktree of its own the agent never sees the dirty tree &&
	loop_cmd loop commit-one --iterations 1 >out 2>err &&
	test "$(cat README)" = change &&
	git checkout -q README
'

test_expect_success 'a failed iteration: loop exits 1 (no commit) or 4 (the agent); codex-loop the original codes' '
	test_expect_code 1 loop_cmd loop no-change --iterations 1 >out 2>err &&
	test_grep "stopped: failure (exit 1)" out &&
	test_expect_code 3 loop_cmd codex-loop no-change --iterations 1 >out 2>err &&
	test_grep "stopped: failure (exit 3)" out &&
	test_expect_code 4 loop_cmd loop fail --iterations 1 >out 2>err &&
	test_expect_code 7 loop_cmd codex-loop fail --iterations 1 >out 2>err &&
	test_expect_code 1 loop_cmd loop commit-one --iterations 1 --post-check "exit 3" >out 2>err &&
	test_expect_code 3 loop_cmd codex-loop commit-one --iterations 1 --post-check "exit 3" \
		>out 2>err &&
	loop_cmd loop commit-one --iterations 1 >out 2>err
'

test_done
