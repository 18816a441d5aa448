#!/usr/bin/env bash
# `gdnctl loop` validating on the iris backend (the Iris CLI double): a
# validation whose job ends WORKER_FAILED twice (preempted with Iris's
# budget spent) is retried as an infrastructure failure and then passes,
# so the candidate is kept and no failure is counted; a job Iris preempts
# and requeues itself is one submission; the validation journals the Iris
# job id; a kill -9 of the loop while its validation job runs, then
# --resume, follows that job again and submits nothing twice.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
. "$(dirname "$0")/lib-loop.sh"
marin_setup

# The agent's change is the same every time, so a redone iteration has the same tree.
agent agent <<'EOF'
echo faster >speed.txt && git add -A && git commit -qm "agent: change"
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$GDNCTL_FAKE_STATE"/* &&
		mkdir -p "$GDNCTL_FAKE_STATE" &&
		calls_reset &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				printf '#!/bin/sh\necho "tests: ok"\n' >check.sh &&
				printf 'backends:\n  iris:\n    poll: 20ms\n    tpu: none\n' >gdnctl.yaml &&
				chmod +x check.sh && echo slow >speed.txt &&
				git add . && git commit -qm "start"
		)
}

run_loop_exec() {
	cd "$TRASH/repo" && exec env GDNCTL_TEST_COMMAND=./check.sh IRIS_FAKE_EXEC=1 \
		"$GDNCTL_BIN" loop --agent command --agent-cmd "$AG/agent {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--validation-mode required --backend iris --validation-retry-sleep 0 "$@"
}
run_loop() {
	(run_loop_exec "$@")
}

test_expect_success 'WORKER_FAILED twice, then a pass: retried, candidate kept, no failure counted' '
	new_repo &&
	IRIS_FAKE_FAULTS=worker_failed,worker_failed run_loop --iterations 1 \
		--validation-retries 2 --max-failures 1 >out 2>err &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	test "$(calls_with iris job run)" = 3 &&
	test "$(grep -c "\"event\":\"validation_retry\"" logs/loop.jsonl)" = 2 &&
	test "$(grep -c "\"state\":\"stopped\",.*\"native\":\"WORKER_FAILED\"" logs/loop.jsonl)" = 2 &&
	test_grep "\"event\":\"validation\",.*\"rc\":0,\"state\":\"succeeded\",.*\"job\":\"/tester/gdnctl-" \
		logs/loop.jsonl &&
	test_grep ! "\"event\":\"revert\"" logs/loop.jsonl &&
	test "$(git -C repo log -1 --format=%s)" = "agent: change"
'

test_expect_success 'preempted twice and requeued by Iris: one submission, a pass' '
	new_repo &&
	IRIS_FAKE_FAULT=preempt2 run_loop --iterations 1 --max-failures 1 >out 2>err &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	test "$(calls_with iris job run)" = 1 &&
	test_grep "\"event\":\"validation\",.*\"rc\":0,\"state\":\"succeeded\"" logs/loop.jsonl &&
	test "$(git -C repo log -1 --format=%s)" = "agent: change"
'

test_expect_success 'the command failing on Iris (FAILED) is the candidate failure: reverted' '
	new_repo &&
	(cd repo && printf "#!/bin/sh\nexit 7\n" >check.sh && git commit -qam "failing tests") &&
	run_loop --iterations 1 --validation-retries 2 >out 2>err;
	test "$(calls_with iris job run)" = 1 &&
	test_grep "validation failed: tests exit 7" err &&
	test_grep "\"event\":\"revert\"" logs/loop.jsonl
'

test_expect_success 'kill -9 during the Iris validation, then --resume: no second submission' '
	new_repo &&
	{ (IRIS_FAKE_FAULT=hold run_loop_exec --iterations 1 >out 2>err) & } &&
	pid=$! &&
	wait_for_line "\"job\", \"logs\", \"-f\"" "$GDNCTL_FAKE_LOG" 20 &&
	kill -9 $pid &&
	wait $pid;
	test "$(calls_with iris job run)" = 1 &&
	ls repo/.git/gdnctl/iris-jobs/* &&
	: >"$GDNCTL_FAKE_STATE/iris-release" &&
	run_loop --resume >out 2>err &&
	test "$(calls_with iris job run)" = 1 &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	job=$(jq -r "select(index([\"run\"]))[6]" "$GDNCTL_FAKE_LOG") &&
	test_grep "\"event\":\"validation\",.*\"rc\":0,.*\"job\":\"/tester/$job\"" logs/loop.jsonl &&
	test "$(git -C repo log -1 --format=%s)" = "agent: change" &&
	! ls repo/.git/gdnctl/iris-jobs/* 2>/dev/null
'

agent unique <<'EOF'
date +%s%N >"change-$$.txt" && git add -A && git commit -qm "agent: unique change"
EOF

test_expect_success '--workers 2 with one Iris target each: each worker submits to its own cluster' '
	new_repo &&
	(
		cd repo &&
			printf "  iris2:\n    type: iris\n    cluster: marin-dev\n    poll: 20ms\n    tpu: none\n" \
				>>gdnctl.yaml &&
			git commit -qam "second target"
	) &&
	(cd repo && GDNCTL_TEST_COMMAND=./check.sh IRIS_FAKE_EXEC=1 gdnctl loop --agent command \
		--agent-cmd "$AG/unique {prompt_file}" --prompt-file "$TRASH/prompt.md" \
		--log-dir "$TRASH/logs" --sleep-seconds 0 --validation-mode required \
		--iterations 2 --workers 2 --worktree-dir "$TRASH/wt" \
		--backend iris --backend iris2) >out 2>err &&
	test "$(calls_with iris --cluster=marin job run)" -ge 1 &&
	test "$(calls_with iris --cluster=marin-dev job run)" -ge 1 &&
	test "$(calls_with iris job run)" = 2 &&
	test "$(grep -c "\"event\":\"validation\",.*\"rc\":0,\"state\":\"succeeded\"" logs/loop.jsonl)" = 2
'

test_done
