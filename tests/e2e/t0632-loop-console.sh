#!/usr/bin/env bash
# ctest: isolation-both
# gdnctl loop's console, for a run read the next morning: every line timed,
# a heartbeat while the agent is silent, what the agent did, the banner's
# agent, a summary whose counts agree, a policy message that says what
# happens; and --dry-run as a real pre-flight that starts nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

T='[0-9][0-9]:[0-9][0-9]:[0-9][0-9]'
agent commit-one <<'EOF2'
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2
agent slow-commit <<'EOF2'
sleep 2.3
echo slow >>work.txt && git add work.txt && git commit -qm "agent: slow change"
EOF2
agent no-commit <<'EOF2'
echo nothing
EOF2
printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" && test_create_repo "$TRASH/repo"
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && gdnctl loop --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 "$@")
}

test_expect_success 'every [gdnctl] line of the loop carries the time' '
	new_repo &&
	run_loop commit-one --iterations 1 >out 2>err &&
	grep "^\[gdnctl" out err >lines &&
	test_grep "^out:\[gdnctl $T\] loop summary: " lines &&
	test_grep ! "^[a-z]*:\[gdnctl\]" lines
'

test_expect_success 'the banner names the agent; codex-loop keeps the original banner' '
	test_grep "^\[gdnctl $T\] === iteration 1/1 (commit-one) ===$" out &&
	test_grep ! "codex iteration" out &&
	new_repo &&
	(cd repo && gdnctl codex-loop --agent command --agent-cmd "$AG/commit-one {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--iterations 1 >"$TRASH/cout" 2>"$TRASH/cerr") &&
	test_grep "=== codex iteration 1/1 ===$" cout &&
	test_grep ! "agent done" cout
'

test_expect_success 'after the agent: its time, its commit and subject' '
	new_repo &&
	run_loop commit-one --iterations 1 >out 2>err &&
	test_grep "^\[gdnctl $T\] agent done in [0-9]*\.[0-9] s: 1 commit [0-9a-f]\{7\} \"agent: one change\"$" out &&
	new_repo &&
	run_loop no-commit --iterations 1 --allow-no-commit >out 2>err &&
	test_grep "^\[gdnctl $T\] agent done in [0-9]*\.[0-9] s: no commit$" out
'

test_expect_success 'a heartbeat while the agent is silent; --heartbeat 0 turns it off' '
	new_repo &&
	run_loop slow-commit --iterations 1 --heartbeat 1s >out 2>err &&
	test_grep "^\[gdnctl $T\] still running: agent, [12]s, last output [12]s ago$" out &&
	new_repo &&
	run_loop slow-commit --iterations 1 --heartbeat 0 >out 2>err &&
	test_grep ! "still running" out &&
	test_must_fail =2 run_loop slow-commit --iterations 1 --heartbeat soon 2>err
'

test_expect_success 'a heartbeat while a validation phase is silent' '
	new_repo &&
	GDNCTL_TEST_COMMAND="sleep 2.5" run_loop commit-one --iterations 1 --heartbeat 1s \
		--validation-mode required >out 2>err &&
	test_grep "^\[gdnctl $T\] still running: validation tests, [123]s, last output [123]s ago$" out &&
	new_repo &&
	GDNCTL_TEST_COMMAND="sleep 1.5" run_loop commit-one --iterations 1 --heartbeat 0 \
		--validation-mode required >out 2>err &&
	test_grep ! "still running" out
'

test_expect_success 'the summary: singular, failed iterations and counted ones agree, the champion' '
	new_repo &&
	run_loop commit-one --iterations 1 >out 2>err &&
	test_grep "loop summary: run .*: 1 iteration, 1 commit, 0 failed iterations (0 counted; agent=0, post_check=0, no_commit=0, hook=0, iteration_error=0), " out &&
	{ test "$ISOLATION" = in-place ||
		test_grep "^\[gdnctl $T\] champion: $(git -C repo rev-parse --short=12 HEAD)$" out; } &&
	new_repo &&
	run_loop no-commit --iterations 2 --no-commit-policy continue >out 2>err &&
	test_grep "loop summary: run .*: 2 iterations, 0 commits, 2 failed iterations (0 counted; agent=0, post_check=0, no_commit=2," out
'

test_expect_success 'count-failure over --max-failures: the message says the run stops' '
	new_repo &&
	test_must_fail =1 run_loop no-commit --iterations 2 --no-commit-policy count-failure >out 2>err &&
	test_grep "^\[gdnctl $T\] Iteration did not produce a new commit.* stopping: 1 counted failure exceeds --max-failures 0 (-1: unlimited)$" err &&
	test_grep ! "Continuing due to policy" err &&
	test_grep ! "iteration 2/2" out &&
	new_repo &&
	test_must_fail =1 run_loop no-commit --iterations 2 --no-commit-policy count-failure \
		--max-failures 1 >out 2>err &&
	test_grep "^\[gdnctl $T\] Iteration did not produce a new commit.* Continuing due to policy=count-failure.$" err &&
	test_grep "^\[gdnctl $T\] Iteration did not produce a new commit.* stopping: 2 counted failures exceeds --max-failures 1 (-1: unlimited)$" err
'

test_expect_success 'dry run: the plan, and nothing started (no log dir, no lock, no worktree)' '
	new_repo &&
	run_loop commit-one --iterations 3 --dry-run --max-failures 2 >out 2>err &&
	test_grep "^\[gdnctl $T\] dry run: agent: command: $AG/commit-one {prompt_file}$" out &&
	test_grep "^\[gdnctl $T\] dry run: validation: off" out &&
	test_grep "^\[gdnctl $T\] dry run: metric: none" out &&
	test_grep "^\[gdnctl $T\] dry run: isolation: $ISOLATION; loop branch: " out &&
	test_grep "^\[gdnctl $T\] dry run: log dir: $TRASH/logs " out &&
	test_grep "^\[gdnctl $T\] dry run: stop: after 3 iterations; --max-failures 2 " out &&
	test_grep "^\[gdnctl $T\] dry run: the prompt of iteration 1 " out &&
	test_grep "^Iteration 1 of 3$" out &&
	test_grep "^\[gdnctl $T\] \$ $AG/commit-one " out &&
	test ! -e logs && test ! -e repo/.git/gdnctl.lock && test ! -e repo/.git/gdnctl &&
	test "$(git -C repo worktree list | wc -l)" = 1 &&
	test "$(git -C repo rev-list --count HEAD)" = 1
'

test_expect_success 'dry run validates what a real run validates' '
	new_repo &&
	test_must_fail =2 run_loop commit-one --iterations 1 --dry-run --backend nope >out 2>err &&
	test_grep "unknown backend .nope." err &&
	printf "project:\n  profile_command: echo 1\n" >repo/gdnctl.yaml &&
	git -C repo add gdnctl.yaml && git -C repo commit -qm config &&
	test_must_fail =2 run_loop commit-one --iterations 1 --dry-run --perf-mode on \
		--perf-gate bogus >out 2>err &&
	test_grep "gate rule .bogus." err &&
	test_must_fail =2 run_loop commit-one --iterations 1 --dry-run --hold-dev-tpu >out 2>err &&
	test_grep "hold-dev-tpu requires --dev-tpu-name" err &&
	run_loop commit-one --iterations 1 --dry-run --perf-mode on >out 2>err &&
	test_grep "dry run: metric: " out &&
	test_grep "dry run: validation: .*backend local" out &&
	test_grep "dry run:   profile: echo 1" out &&
	test ! -e logs
'

test_expect_success 'dry run: a missing agent is a warning; the guide'"'"'s command works without codex' '
	new_repo &&
	(cd repo && PATH=/usr/bin:/bin GDNCTL_CODEX=/nonexistent/codex gdnctl loop --iterations 1 \
		--dry-run --log-dir "$TRASH/logs" >"$TRASH/out" 2>"$TRASH/err") &&
	test_grep "WARNING: .*codex.* (a real run stops here)" err &&
	test_grep "dry run: agent: codex" out &&
	test_grep "dry run: the agent command (in .*): not available" out &&
	test ! -e logs
'

test_done
