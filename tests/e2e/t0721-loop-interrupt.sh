#!/usr/bin/env bash
# Ctrl-C (SIGINT) while the validation tests phase of `gdnctl loop` runs
# on the local backend: the phase's whole process group is killed (a
# background grandchild included); the iteration's commits, which were not
# validated, are reverted (one revert commit, the candidate kept under
# refs/gdnctl/discarded/1, reason "validation interrupted by signal 2"),
# so the tree is clean and the branch holds only validated work;
# `interrupted` is journaled, the exit status is 130 and no process is
# left. The interrupted iteration reached no decision, so --resume runs it
# again, then the next one.
# ctest: isolation-both
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

agent agent <<'EOF'
date +%s%N >>touch.txt && git add -A && git commit -qm "agent: change"
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

# The tests start a background sleeper and a foreground one, note both pids, then wait.
test_create_repo repo &&
	(
		cd repo &&
			cat >check.sh <<-'EOF' &&
				#!/bin/sh
				if [ -e "$GO_FAST" ]; then echo "tests: ok"; exit 0; fi
				sleep 300 &
				echo $! >"$PIDS.bg"
				echo $$ >"$PIDS.fg.tmp" && mv "$PIDS.fg.tmp" "$PIDS.fg"
				wait
			EOF
			chmod +x check.sh && git add . && git commit -qm "slow tests"
	) || exit 1

alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $s in Z*) return 1 ;; esac
}

# exec: in the background, $! is gdnctl itself (not a subshell that ignores SIGINT)
run_loop_exec() {
	cd "$TRASH/repo" && exec env GDNCTL_TEST_COMMAND=./check.sh PIDS="$TRASH/pids" \
		GO_FAST="$TRASH/go-fast" \
		"$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" --agent command --agent-cmd "$AG/agent {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--validation-mode required "$@"
}
run_loop() {
	(run_loop_exec "$@")
}

test_expect_success 'SIGINT during the validation tests: group killed, reverted, exit 130' '
	base=$(git -C repo rev-parse HEAD) || exit 1
	run_loop_exec --iterations 2 >out 2>err &
	pid=$!
	for i in $(seq 600); do test -s "$TRASH/pids.fg" && break; sleep 0.05; done &&
	fg=$(cat "$TRASH/pids.fg") && bg=$(cat "$TRASH/pids.bg") &&
	alive "$fg" && alive "$bg" &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } &&
	test $rc = 130 &&
	for i in $(seq 50); do alive "$bg" || alive "$fg" || break; sleep 0.1; done &&
	! alive "$fg" && ! alive "$bg" &&
	test_grep "\"event\":\"validation\",\"iteration\":1,\"phase\":\"tests\",\"attempt\":1,\"rc\":130,\"state\":\"stopped\"" logs/loop.jsonl &&
	test_grep ! "validation_retry" logs/loop.jsonl &&
	test_grep "\"event\":\"revert\",\"iteration\":1,\"reason\":\"validation interrupted by signal 2\",\"ok\":true,\"discarded_ref\":\"refs/gdnctl/discarded/1\"" logs/loop.jsonl &&
	test_grep "\"event\":\"interrupted\",\"iteration\":1,\"signal\":2" logs/loop.jsonl &&
	test_grep "\"reason\":\"interrupted\",\"exit_code\":130" logs/loop.jsonl &&
	test_grep "iteration 1 reverted (validation interrupted by signal 2)" err &&
	: the next step: the exact command that resumes the run, the report and the status &&
	test_grep "^\[gdnctl [0-9:]*\] interrupted: resume this run with \`gdnctl loop --resume --log-dir $TRASH/logs\`$" out &&
	test_grep "^\[gdnctl [0-9:]*\] next: \`gdnctl report --log-dir $TRASH/logs\` (an HTML report and a summary of the run), \`gdnctl loop status --log-dir $TRASH/logs\`$" out &&
	test_grep ! "iteration 2/2" out &&
	test -z "$(git -C repo status --porcelain)" &&
	git -C repo diff --quiet "$base" HEAD &&
	test "$(git -C repo rev-parse refs/gdnctl/discarded/1~1)" = "$base" &&
	test "$(git -C repo log -1 --format=%s refs/gdnctl/discarded/1)" = "agent: change"
'

test_expect_success '--resume runs the interrupted iteration again, then the next' '
	touch go-fast &&
	: the command the interrupted run named, as it is &&
	resume=$(sed -n "s/^\[gdnctl [0-9:]*\] interrupted: resume this run with \`gdnctl \(.*\)\`$/\1/p" out) &&
	test -n "$resume" &&
	(cd repo && eval "env GDNCTL_TEST_COMMAND=./check.sh PIDS=\"\$TRASH/pids\" GO_FAST=\"\$TRASH/go-fast\" \"\$GDNCTL_BIN\" $resume") >out 2>err &&
	test_grep "resuming run .* after iteration 0 of 2" out &&
	test_grep "iteration 1/2" out &&
	test_grep "iteration 2/2" out &&
	test_grep "2 iterations, 2 commits, 0 failed iterations (0 counted" out &&
	test_grep "tests: ok" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: change" &&
	test -z "$(git -C repo status --porcelain)"
'

test_done
