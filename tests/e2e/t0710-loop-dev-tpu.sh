#!/usr/bin/env bash
# gdnctl loop: where validation runs. --hold-dev-tpu allocates a dev TPU
# (the uv double's dev_tpu.py) before the loop, validates on it first
# (FAKE_EXEC=1: the test and profile commands really run, and see
# GDNCTL_FAKE_HOST), re-acquires a lost allocation, falls back to Ray
# clusters (explicit or discovered from infra/marin-*.yaml), skips a
# cluster without configuration, stops a Ray job past the phase timeout,
# and always releases the allocation: no process is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
. "$(dirname "$0")/lib-loop.sh"
marin_setup
unset FAKE_ALLOC_DIE_FILE FAKE_RAY_BAD_CLUSTERS FAIL_ON SLOW
export FAKE_EXEC=1 STATE=$GDNCTL_FAKE_STATE TRASH
DEV_TPU=scripts/ray/dev_tpu.py
RAY_RUN=lib/marin/src/marin/run/ray_run.py

agent faster <<'EOF2'
echo "$(date +%s%N)" >>speed.txt && git add speed.txt && git commit -qm "agent: faster"
EOF2
# Iteration 1 only: cluster c1 stops allocating, and the allocation dies.
agent die-once <<'EOF2'
if [ ! -e "$TRASH/died" ]; then
	touch "$TRASH/died" && echo c1 >"$STATE/alloc-fail" && touch "$TRASH/die"
	while [ -e "$TRASH/die" ]; do sleep 0.05; done
fi
echo "$(date +%s%N)" >>speed.txt && git add speed.txt && git commit -qm "agent: faster"
EOF2
# A best-effort start that failed: the agent makes allocation possible again.
agent unblock <<'EOF2'
rm -f "$STATE/alloc-fail"
echo "$(date +%s%N)" >>speed.txt && git add speed.txt && git commit -qm "agent: faster"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$TRASH/where" "$TRASH/died" "$TRASH/die" \
		"$STATE"/* &&
		: >"$GDNCTL_FAKE_LOG" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >check.sh <<-'EOF2' &&
					#!/bin/sh
					echo "tests on ${GDNCTL_FAKE_HOST:-local}" >>"$TRASH/where"
					if [ -n "$SLOW" ]; then echo $$ >"$TRASH/check.pid"; sleep 30; fi
					case "${GDNCTL_FAKE_HOST:-local}" in "${FAIL_ON:-none}"*) echo "tests: FAILED"; exit 4;; esac
					echo "tests: ok"
				EOF2
				cat >bench.sh <<-'EOF2' &&
					#!/bin/sh
					echo "profile on ${GDNCTL_FAKE_HOST:-local}" >>"$TRASH/where"
					echo "throughput/mfu=1.0"
				EOF2
				chmod +x check.sh bench.sh && echo 1 >speed.txt &&
				git add . && git commit -qm "bench"
		)
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl "${LOOP:-loop}" --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-retry-sleep 0 "$@")
}

test_expect_success '(a) the dev TPU is held, validation runs on it, released at the end' '
	new_repo &&
	run_loop faster --iterations 2 --validation-mode required --hold-dev-tpu \
		--dev-tpu-name me --dev-tpu-type v6e-8 >out 2>err &&
	expect_call 1 uv run $DEV_TPU --cluster us-central1 --tpu-name me allocate --sync-path . \
		--tpu-type v6e-8 &&
	expect_call 2 uv run $DEV_TPU --cluster us-central1 --tpu-name me execute -- ./check.sh &&
	expect_call 3 uv run $DEV_TPU --cluster us-central1 --tpu-name me execute -- ./bench.sh &&
	test "$(calls_with allocate)" = 1 &&
	test "$(calls_with ray_run.py)" = 0 &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] starting managed dev TPU allocation for codex-loop$" out &&
	test_grep "dev TPU allocation is active: dev-tpu-me (cluster us-central1)" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] releasing managed dev TPU allocation: dev-tpu-me (cluster us-central1)$" out &&
	test_grep ! "releasing dev TPU allocation" out &&
	test "$(grep -c "^tests on dev-tpu-me$" where)" = 2 &&
	test "$(grep -c "^profile on dev-tpu-me$" where)" = 2 &&
	test_grep "2 iterations, 2 commits, 0 failed iterations (0 counted" out &&
	no_allocation_left &&
	test_grep "\"event\":\"dev_tpu\",\"action\":\"acquired\",\"tpu_name\":\"me\",\"cluster\":\"us-central1\"" logs/loop.jsonl &&
	test_grep "\"event\":\"dev_tpu\",\"action\":\"released\"" logs/loop.jsonl &&
	test_grep "\"event\":\"validation\",.*\"phase\":\"tests\",.*\"target\":\"dev TPU (cluster us-central1)\",\"cluster\":\"us-central1\",\"rc\":0,\"state\":\"succeeded\"" logs/loop.jsonl &&
	test_grep "^Managed dev TPU mode is active for this run.$" logs/iteration-001-prompt.txt &&
	test_grep "gdnctl dev-tpu-test --cluster us-central1 --tpu-name me --tests both" logs/iteration-001-prompt.txt &&
	test_grep "dev-tpu-profile --cluster us-central1 --tpu-name me --tpu v6e-8" logs/iteration-001-prompt.txt &&
	test_grep "Do not finish an iteration without both validation tests and a profile result." logs/iteration-002-prompt.txt &&
	test -s logs/dev_tpu_allocate.log
'

test_expect_success '(b) the allocation dies mid-loop: re-acquired on the next cluster, directive follows' '
	new_repo &&
	FAKE_ALLOC_DIE_FILE=$TRASH/die run_loop die-once --iterations 2 --validation-mode required \
		--hold-dev-tpu --dev-tpu-name me --dev-tpu-cluster c1 \
		--dev-tpu-fallback-cluster c2 >out 2>err &&
	test "$(calls_with allocate c1)" = 2 &&
	test "$(calls_with allocate c2)" = 1 &&
	test_grep "managed dev TPU allocation dev-tpu-me (cluster c1) is gone" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] attempting managed dev TPU re-acquire (validation tests starting without an active held dev TPU)$" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] managed dev TPU re-acquire is active: dev-tpu-me (cluster c2)$" out &&
	test_grep "\"action\":\"lost\"" logs/loop.jsonl &&
	test_grep "\"action\":\"reacquired\",\"tpu_name\":\"me\",\"cluster\":\"c2\",\"reason\":\"validation tests starting without an active held dev TPU\",\"iteration\":1" logs/loop.jsonl &&
	test "$(grep -c "^tests on dev-tpu-me$" where)" = 2 &&
	test_grep "2 iterations, 2 commits, 0 failed iterations (0 counted" out &&
	test_grep "dev-tpu-test --cluster c1 " logs/iteration-001-prompt.txt &&
	test_grep "dev-tpu-test --cluster c2 " logs/iteration-002-prompt.txt &&
	test_grep ! "cluster c1" logs/iteration-002-prompt.txt &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] releasing managed dev TPU allocation: dev-tpu-me (cluster c2)$" out &&
	no_allocation_left
'

test_expect_success '(c) Ctrl-C during validation: phase killed, hold released, exit 130' '
	new_repo &&
	rm -f check.pid &&
	SLOW=1 GDNCTL_TEST_COMMAND=./check.sh GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl_bg out loop --workdir "$TRASH/repo" --agent command \
		--agent-cmd "$AG/faster {prompt_file}" --prompt-file "$TRASH/prompt.md" \
		--log-dir "$TRASH/logs" --iterations 1 --validation-mode required \
		--hold-dev-tpu --dev-tpu-name me &&
	wait_for_file check.pid 20 &&
	cpid=$(cat check.pid) &&
	kill -INT $gpid &&
	{ wait $gpid; rc=$?; } ;
	test $rc = 130 &&
	wait_gone "$cpid" 5 &&
	no_allocation_left &&
	test_grep "releasing managed dev TPU allocation: dev-tpu-me (cluster us-central1)" out &&
	test -z "$(git -C repo status --porcelain)" &&
	test_grep "\"event\":\"interrupted\"" logs/loop.jsonl
'

test_expect_success '(c) SIGTERM during a Ray fallback job: job stopped (stop-job), exit 143' '
	new_repo &&
	rm -f check.pid &&
	SLOW=1 FAKE_JOB_ID=job-term-1 GDNCTL_TEST_COMMAND=./check.sh \
		GDNCTL_PROFILE_COMMAND=./bench.sh gdnctl_bg out loop --workdir "$TRASH/repo" \
		--agent command --agent-cmd "$AG/faster {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --iterations 1 \
		--validation-mode required --validation-ray-cluster r1 &&
	wait_for_file check.pid 20 &&
	cpid=$(cat check.pid) &&
	kill -TERM $gpid &&
	{ wait $gpid; rc=$?; } ;
	test $rc = 143 &&
	wait_gone "$cpid" 5 &&
	test "$(calls_with scripts/ray/cluster.py --cluster r1 stop-job job-term-1)" = 1 &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success '(d) the dev TPU tests fail: the Ray fallback cluster validates' '
	new_repo &&
	FAIL_ON=dev-tpu run_loop faster --iterations 1 --validation-mode required --hold-dev-tpu \
		--dev-tpu-name me --validation-ray-cluster r1 --validation-ray-tpu v5e-4 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation tests failed on held dev TPU; trying Ray fallback.$" err &&
	test "$(calls_with $RAY_RUN --cluster r1 --tpu v5e-4 ./check.sh)" = 1 &&
	test "$(calls_with $RAY_RUN)" = 1 &&
	test_grep "^tests on ray-r1$" where &&
	test_grep "^profile on dev-tpu-me$" where &&
	test_grep "\"target\":\"Ray cluster r1\",\"cluster\":\"r1\",\"rc\":0" logs/loop.jsonl &&
	test_grep "\"target\":\"dev TPU (cluster us-central1)\",\"cluster\":\"us-central1\",\"rc\":4,\"state\":\"failed\"" logs/loop.jsonl &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	test_grep ! "re-acquire" err &&
	no_allocation_left
'

test_expect_success '(e) a cluster without configuration is skipped for the rest of the run' '
	new_repo &&
	FAKE_RAY_BAD_CLUSTERS=bad1 run_loop faster --iterations 2 --validation-mode required \
		--validation-ray-cluster bad1 --validation-ray-cluster r1 >out 2>err &&
	test "$(calls_with $RAY_RUN --cluster bad1)" = 1 &&
	test "$(calls_with $RAY_RUN --cluster r1)" = 4 &&
	test "$(grep -c "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation Ray cluster is invalid and will be skipped in future retries: bad1$" err)" = 1 &&
	test_grep "ValueError: No cluster config found for region bad1" out &&
	test_grep "\"event\":\"validation_cluster_bad\",\"iteration\":1,\"phase\":\"tests\",\"cluster\":\"bad1\"" logs/loop.jsonl &&
	test_grep "2 iterations, 2 commits, 0 failed iterations (0 counted" out
'

test_expect_success '(e) every cluster bad: no valid Ray clusters remain, the iteration is reverted' '
	new_repo &&
	FAKE_RAY_BAD_CLUSTERS=bad1 run_loop faster --iterations 1 --validation-mode required \
		--validation-ray-cluster bad1 --validation-attempts 3 >out 2>err &&
	test "$(calls_with $RAY_RUN)" = 1 &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] no valid Ray clusters remain for validation tests.$" err &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out
'

test_expect_success '(f) clusters discovered from infra/marin-*.yaml with the filters' '
	new_repo &&
	mkdir repo/infra &&
	printf "available_node_types:\n  tpu_slice_v5p_8:\n" >repo/infra/marin-us-central2.yaml &&
	printf "  tpu_slice_v5p_8:\n" >repo/infra/marin-us-east5-vllm.yaml &&
	printf "  tpu_slice_v5p_8:\n" >repo/infra/marin-big-run.yaml &&
	printf "  tpu_slice_v5p_8:\n" >repo/infra/marin-Asia-1.yaml &&
	printf "  tpu_slice_v6e_8:\n" >repo/infra/marin-eu-west4.yaml &&
	printf "nothing\n" >repo/infra/marin-us-west1.yaml &&
	printf "  tpu_slice_v5p_8:\n" >repo/infra/other-x.yaml &&
	(cd repo && git add infra && git commit -qm infra) &&
	FAIL_ON=ray-eu run_loop faster --iterations 1 --validation-mode required \
		--validation-ray-cluster-auto --validation-ray-cluster-exclude " asia " \
		--validation-cross-tpu-test-fallback >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] auto-discovered validation Ray clusters (profile): us-central2$" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] auto-discovered validation Ray clusters (test-modern): eu-west4, us-central2$" out &&
	expect_call 1 uv run $RAY_RUN --cluster eu-west4 --tpu auto -- bash -lc ./check.sh &&
	expect_call 2 uv run $RAY_RUN --cluster us-central2 --tpu auto -- bash -lc ./check.sh &&
	expect_call 3 uv run $RAY_RUN --cluster us-central2 --tpu v5p-8 -- bash -lc ./bench.sh &&
	test "$(calls_count)" = 3 &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out
'

test_expect_success '(g) a Ray job past --validation-timeout is stopped (stop-job)' '
	new_repo &&
	start=$(date +%s) &&
	SLOW=1 FAKE_JOB_ID=job-slow-1 run_loop faster --iterations 1 --validation-mode required \
		--validation-ray-cluster r1 --validation-timeout 2s >out 2>err &&
	test $(($(date +%s) - start)) -lt 25 &&
	test "$(calls_with scripts/ray/cluster.py --cluster r1 stop-job job-slow-1)" = 1 &&
	test_grep "stopping job job-slow-1 on validation-tests-0 (timed out)" out &&
	test_grep "\"target\":\"Ray cluster r1\",\"cluster\":\"r1\",\"rc\":124,\"state\":\"timeout\"" logs/loop.jsonl &&
	test_grep "validation failed: tests exit 124" err &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out &&
	wait_gone "$(cat check.pid)" 5
'

test_expect_success '(h) best-effort: continue without the hold; a later re-acquire is released too' '
	new_repo &&
	echo us-central1 >"$STATE/alloc-fail" &&
	run_loop unblock --iterations 1 --validation-mode required --hold-dev-tpu \
		--dev-tpu-name me --hold-dev-tpu-policy best-effort >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] WARNING: managed dev TPU allocation failed; continuing without held dev TPU.$" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] managed dev TPU hold is not active for this run; continuing without hold-specific directives.$" err &&
	test_grep ! "Managed dev TPU mode" logs/iteration-001-prompt.txt &&
	test_grep "re-acquire (validation tests starting without an active held dev TPU)" err &&
	test_grep "^tests on dev-tpu-me$" where &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] releasing managed dev TPU allocation: dev-tpu-me (cluster us-central1)$" out &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	no_allocation_left
'

test_expect_success '(h) required: the failed allocation aborts (exit 1; loop: 4) before iteration 1' '
	new_repo &&
	echo us-central1 >"$STATE/alloc-fail" &&
	LOOP=codex-loop test_must_fail =1 run_loop faster --iterations 1 \
		--validation-mode required --hold-dev-tpu --dev-tpu-name me >out 2>err &&
	test_grep "^\[gdnctl\] managed dev TPU allocation failed: dev TPU allocation exited before becoming active (exit=1, cluster=us-central1, attempt=1/1)" err &&
	test_grep ! "iteration 1" out &&
	test "$(calls_count)" = 1 &&
	test_must_fail =4 run_loop faster --iterations 1 \
		--validation-mode required --hold-dev-tpu --dev-tpu-name me >out 2>err &&
	test_grep "^\[gdnctl\] error: managed dev TPU allocation failed: dev TPU allocation exited before becoming active (exit=1, cluster=us-central1, attempt=1/1)" err &&
	test_grep ! "iteration 1" out &&
	test "$(calls_count)" = 2 &&
	LOOP=codex-loop test_must_fail =1 run_loop faster --iterations 1 --hold-dev-tpu >out 2>err &&
	test_grep "^\[gdnctl\] --hold-dev-tpu requires --dev-tpu-name.$" err &&
	test_must_fail =2 run_loop faster --iterations 1 --hold-dev-tpu >out 2>err &&
	test_grep "^\[gdnctl\] error: --hold-dev-tpu requires --dev-tpu-name.$" err &&
	LOOP=codex-loop test_must_fail =1 run_loop faster --iterations 1 --hold-dev-tpu \
		--dev-tpu-name me --dev-tpu-stop-timeout 0 >out 2>err &&
	test_grep "^\[gdnctl\] --dev-tpu-stop-timeout must be > 0.$" err &&
	test_must_fail =2 run_loop faster --iterations 1 --hold-dev-tpu --dev-tpu-name me \
		--dev-tpu-stop-timeout 0 >out 2>err &&
	test_grep "^\[gdnctl\] error: --dev-tpu-stop-timeout must be > 0.$" err &&
	run_loop faster --iterations 1 --hold-dev-tpu --resilient >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] WARNING: --hold-dev-tpu requested without --dev-tpu-name; continuing without managed dev TPU due to --resilient.$" err &&
	test "$(calls_count)" = 2
'

test_expect_success 'a hold without the validation gate: the agent gets the directive, release at the end' '
	new_repo &&
	run_loop faster --iterations 1 --hold-dev-tpu --dev-tpu-name me --validation-mode off \
		>out 2>err &&
	test "$(calls_count)" = 1 &&
	test_grep "Do not finish an iteration without post-check/profile evidence configured for this run (off)." logs/iteration-001-prompt.txt &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] releasing managed dev TPU allocation: dev-tpu-me (cluster us-central1)$" out &&
	no_allocation_left
'

test_done
