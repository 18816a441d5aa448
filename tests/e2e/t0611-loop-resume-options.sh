#!/usr/bin/env bash
# ctest: isolation-both
# gdnctl loop --resume restores the run's decision options (journaled with
# run_start): an option the resume does not give takes the run's value, one
# it gives with another value is refused naming it, unless --resume-override
# (journaled as resume_override, and kept by a later resume).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

AGENT_PID_FILE=$TRASH/agent.pid
# the first call hangs (gdnctl is killed then); later calls commit a change that breaks the tests
agent hang-then-break <<'EOF2'
if [ ! -e "$MARK.first" ]; then
	touch "$MARK.first" "$MARK"
	exec sleep 60
fi
echo BROKEN >state.txt && git add state.txt && git commit -qm "agent: breaks the tests"
EOF2
agent break <<'EOF2'
echo BROKEN >state.txt && git add state.txt && git commit -qm "agent: breaks the tests"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"
export MARK=$TRASH/mark

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$MARK" "$MARK.first" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >check.sh <<-'EOF2' &&
					#!/bin/sh
					if grep -q BROKEN state.txt; then echo "tests: BROKEN"; exit 3; fi
					echo "tests: ok"
				EOF2
				chmod +x check.sh && echo ok >state.txt && git add . && git commit -qm base
		)
}

# The options of a run; the resume gives only the per-invocation ones (and those in "$@").
loop_args() {
	ARGS=(--agent command --agent-cmd "$AG/$1 {prompt_file}" --prompt-file "$TRASH/prompt.md"
		--sleep-seconds 0 --retry-sleep-seconds 0 --max-failures 5)
}

run_loop() {
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh gdnctl loop --log-dir "$TRASH/logs" "$@")
}

# Start a run in the background, wait for the agent's mark, kill -9 gdnctl and its agent.
start_and_kill() {
	local pid i
	rm -f "$MARK"
	loop_args hang-then-break
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh exec ${GDNCTL_TEST_EXEC_PREFIX:-} \
		"$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" --log-dir "$TRASH/logs" "${ARGS[@]}" "$@" \
		>"$TRASH/bg.out" 2>"$TRASH/bg.err") &
	pid=$!
	for i in $(seq 1 200); do [ -e "$MARK" ] && break; sleep 0.05; done
	test -e "$MARK" || return 1
	kill -KILL "$pid"
	wait "$pid"
	bg_rc=$?
	kill -KILL -- "-$(cat "$TRASH/agent.pid")" 2>/dev/null
	sleep 0.1
	return 0
}

test_expect_success 'the run journals its decision options with run_start, not the per-invocation ones' '
	new_repo &&
	loop_args break &&
	run_loop "${ARGS[@]}" --iterations 1 --validation-mode required --json >out 2>err &&
	head -n 1 logs/loop.jsonl >start &&
	test_grep "\"event\":\"run_start\"" start &&
	test_grep "\"options\":{" start &&
	test_grep "\"validation-mode\":\"required\"" start &&
	test_grep "\"max-failures\":5" start &&
	test_grep "\"sleep-seconds\":0.0" start &&
	test_grep "\"agent\":\"command\"" start &&
	test_grep ! "\"iterations\":1}" start &&
	test_grep ! "\"log-dir\"" start &&
	test_grep ! "\"json\"" start &&
	test_grep ! "\"iterations\":1," <(sed -n "s/.*\"options\":\({[^}]*}\).*/\1/p" start)
'

test_expect_success 'kill -9 mid-iteration, --resume without --validation-mode: the run still validates' '
	new_repo &&
	start_and_kill --iterations 1 --validation-mode required &&
	test "$bg_rc" = 137 &&
	test_expect_code 0 run_loop --resume >out 2>err &&
	test_grep "resuming run .* after iteration 0 of 1" out &&
	test_grep "validation tests attempt 1" out &&
	test_grep "validation failed: tests exit 3" err &&
	test_grep "\"event\":\"revert\"" logs/loop.jsonl &&
	test "$(git -C repo show HEAD:state.txt)" = ok &&
	test "$(cat repo/state.txt)" = ok &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out &&
	test_grep "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0" logs/loop.jsonl
'

test_expect_success 'the resumed run exits as the original would (--max-failures 0 from the run: exit 1, the gate failed)' '
	new_repo &&
	loop_args break &&
	test_expect_code 1 run_loop "${ARGS[@]}" --iterations 1 --validation-mode required \
		--max-failures 0 >out 2>err &&
	new_repo &&
	start_and_kill --iterations 1 --validation-mode required --max-failures 0 &&
	test_expect_code 1 run_loop --resume >out 2>err &&
	test_grep "validation failed: tests exit 3" err &&
	test "$(git -C repo show HEAD:state.txt)" = ok &&
	test "$(cat repo/state.txt)" = ok
'

test_expect_success 'a contradicting flag is refused naming it, exit 2, nothing run' '
	new_repo &&
	start_and_kill --iterations 1 --validation-mode required &&
	cp logs/loop.jsonl journal.before &&
	test_expect_code 2 run_loop --resume --validation-mode off >out 2>err &&
	test_grep "^\[gdnctl\] error: --validation-mode off contradicts the run'"'"'s --validation-mode required (use --resume-override to change it)$" err &&
	test_line_count = 1 err &&
	test ! -s out &&
	test_cmp journal.before logs/loop.jsonl &&
	test "$(cat repo/state.txt)" = ok
'

test_expect_success 'the same value is no contradiction; a changed default is one' '
	new_repo &&
	start_and_kill --iterations 1 --validation-mode required &&
	cp logs/loop.jsonl journal.before &&
	test_expect_code 2 run_loop --resume --validation-mode required --allow-no-commit >out 2>err &&
	test_grep "error: --allow-no-commit contradicts the run, which had no --allow-no-commit (use --resume-override to change it)$" err &&
	test_expect_code 2 run_loop --resume --stash-restore-policy fail >out 2>err &&
	test_grep "error: --stash-restore-policy fail contradicts the run'"'"'s --stash-restore-policy warn-keep (use" err &&
	test_cmp journal.before logs/loop.jsonl
'

test_expect_success '--resume-override accepts it and journals resume_override; a later resume keeps it' '
	new_repo &&
	start_and_kill --iterations 1 --validation-mode required &&
	test_expect_code 0 run_loop --resume --resume-override --validation-mode off >out 2>err &&
	test_grep "\"event\":\"resume_override\",\"options\":{\"validation-mode\":\"off\"},\"was\":{\"validation-mode\":\"required\"}}" logs/loop.jsonl &&
	test_grep ! "validation tests attempt" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: breaks the tests" &&
	test_expect_code 0 run_loop --resume --validation-mode off >out 2>err &&
	test_grep "resuming run .* after iteration 1 of 1" out &&
	test_expect_code 2 run_loop --resume --validation-mode required >out 2>err &&
	test_grep "error: --validation-mode required contradicts the run'"'"'s --validation-mode off (use --resume-override to change it)$" err
'

test_expect_success '--resume-override without --resume is a usage error' '
	new_repo &&
	test_expect_code 2 run_loop --iterations 1 --agent command --agent-cmd true --resume-override >out 2>err &&
	test_grep "error: --resume-override needs --resume" err
'

test_done
