#!/usr/bin/env bash
# gdnctl allocate (and dev-tpu-allocate): the allocation is a long-lived
# child; ready on a marker line; its output goes to the allocation log and
# is drained but no longer logged after ready; fallback clusters, attempts,
# ready timeout; Ctrl-C or SIGTERM releases it (SIGINT to its group, then
# SIGTERM after --stop-timeout) and exits 130/143 with no process left
# (checked with the double's pid).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
marin_setup

DEV_TPU=scripts/ray/dev_tpu.py
LOG=$HOME/.local/state/gdnctl/dev-tpu-me-allocate.log
STATE=$GDNCTL_FAKE_STATE
# no allocation double outlives the script, whatever failed
test_atexit 'for p in $(cat "$STATE/allocate.pids" 2>/dev/null); do kill -KILL $p; done'

# gdnctl in the foreground, killed after 60 s: a hang fails the test, not CTest's timeout.
# shellcheck disable=SC2086
gdnctl_dl() {
	timeout -s KILL 60 ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@"
}

# Start `gdnctl allocate ARGS...` in the background; its pid in $gpid, output in out.
start_allocate() {
	gdnctl_bg out allocate "$@"
}

test_expect_success 'allocate: ready on the marker, held, Ctrl-C releases it: exit 130' '
	FAKE_ALLOC_NOISE=3 start_allocate --tpu-name me &&
	wait_for_line "holding dev-tpu-me; press Ctrl-C" out &&
	apid=$(cat "$STATE/allocate-us-central1.pid") &&
	kill -0 "$apid" &&
	kill -INT $gpid &&
	wait_rc $gpid ;
	test $rc = 130 &&
	wait_gone "$apid" &&
	test ! -e "$STATE/allocate-us-central1.pid" &&
	expect_call 1 uv run $DEV_TPU --cluster us-central1 --tpu-name me allocate &&
	test_grep "dev TPU allocation is active: dev-tpu-me (cluster us-central1)" out &&
	test_grep "releasing dev TPU allocation: dev-tpu-me (cluster us-central1)" out
'

test_expect_success 'the allocation log: every line up to ready, the note, then nothing' '
	test_grep "^TPU type: v5p-8$" "$LOG" &&
	test_grep "TPU allocated successfully!" "$LOG" &&
	tail -1 "$LOG" >last &&
	echo "[gdnctl] dev TPU became active; suppressing further allocation log output while keeping the hold process drained." >expect &&
	test_cmp expect last &&
	test_grep ! "noisy line" "$LOG" out
'

test_expect_success 'SIGTERM releases too (exit 143); SIGINT ignored: SIGTERM after --stop-timeout' '
	calls_reset &&
	FAKE_ALLOC_IGNORE_INT=1 start_allocate --tpu-name me --stop-timeout 1s --log "$TRASH/a.log" &&
	wait_for_line "holding dev-tpu-me; press Ctrl-C" out &&
	apid=$(cat "$STATE/allocate-us-central1.pid") &&
	t0=$(date +%s%N) &&
	kill -TERM $gpid &&
	wait_rc $gpid ;
	t1=$(date +%s%N) &&
	test $rc = 143 &&
	wait_gone "$apid" 1 &&
	test $(((t1 - t0) / 1000000)) -ge 900 &&
	test -s "$TRASH/a.log"
'

test_expect_success 'a failing cluster, then a fallback cluster; a custom ready marker' '
	calls_reset &&
	FAKE_ALLOC_FAIL=c1 FAKE_ALLOC_READY=allocated start_allocate --tpu-name me --cluster c1 \
		--fallback-cluster c2 --tpu-type v6e-8 --sync-path . --verbose &&
	wait_for_line "holding dev-tpu-me; press Ctrl-C" out &&
	kill -INT $gpid && wait_rc $gpid ;
	test $rc = 130 &&
	expect_call 1 uv run $DEV_TPU --cluster c1 --tpu-name me --verbose allocate --sync-path . \
		--tpu-type v6e-8 &&
	expect_call 2 uv run $DEV_TPU --cluster c2 --tpu-name me --verbose allocate --sync-path . \
		--tpu-type v6e-8 &&
	test_grep "exited before becoming active (exit=1, cluster=c1, attempt=1/1)" out &&
	test_grep "  | .*No cluster config found for region c1" out &&
	test_grep "active: dev-tpu-me (cluster c2)" out
'

test_expect_success 'ready markers from the configuration' '
	calls_reset &&
	FAKE_ALLOC_READY=allocated FAKE_ALLOC_NOISE=2 gdnctl_bg out \
		-c "backends.dt.type=dev-tpu" -c "backends.dt.tpu_name=me" \
		-c "backends.dt.ready_markers=noisy line 2" -c backends.dt.ready_timeout=20s \
		allocate --backend dt &&
	wait_for_line "holding dev-tpu-me; press Ctrl-C" out &&
	kill -INT $gpid && wait_rc $gpid ;
	test $rc = 130 &&
	test_grep "^noisy line 1$" "$LOG" &&
	test_grep "^noisy line 2$" "$LOG"
'

test_expect_success 'never ready: every cluster times out, attempts, exit 4, nothing left' '
	calls_reset &&
	FAKE_ALLOC_READY=none test_expect_code 4 gdnctl_dl allocate --tpu-name me --cluster c1 \
		--fallback-cluster c2 --ready-timeout 1s --attempts 2 --retry-sleep 100ms >out 2>&1 &&
	test "$(calls_count)" = 4 &&
	test_grep "attempt 2/2 on cluster c2" out &&
	test_grep "retrying dev TPU allocation in" out &&
	test_grep "error: timed out waiting for the dev TPU allocation to become active (cluster=c2, attempt=2/2)" out &&
	test_grep "Received Ctrl-C, releasing TPU allocation" "$LOG" &&
	! ls "$STATE"/allocate-*.pid 2>/dev/null
'

test_expect_success 'Ctrl-C while waiting for ready: released, exit 130, no retry' '
	calls_reset &&
	FAKE_ALLOC_READY=none start_allocate --tpu-name me --fallback-cluster c2 --attempts 3 &&
	wait_for_file "$STATE/allocate-us-central1.pid" &&
	apid=$(cat "$STATE/allocate-us-central1.pid") &&
	kill -INT $gpid && wait_rc $gpid ;
	test $rc = 130 &&
	wait_gone "$apid" &&
	test "$(calls_count)" = 1 &&
	test_grep "interrupted while allocating dev-tpu-me" out
'

test_expect_success 'the allocation process exits while held: exit 4' '
	FAKE_ALLOC_EXIT=5 test_expect_code 4 gdnctl_dl allocate --tpu-name me >out 2>&1 &&
	test_grep "the allocation process exited (exit=5)" out
'

test_expect_success 'usage: no TPU name, bad values, another backend type' '
	test_must_fail =3 gdnctl allocate 2>err &&
	test_grep "tpu_name.* is not set" err &&
	test_must_fail =2 gdnctl allocate --tpu-name me --ready-timeout 0 2>err &&
	test_must_fail =2 gdnctl allocate --tpu-name me --attempts 0 2>err &&
	test_must_fail =2 gdnctl allocate --backend local 2>err &&
	test_grep "no allocation to hold" err
'

test_expect_success 'allocate --dry-run prints the command and runs nothing' '
	calls_reset &&
	gdnctl allocate --tpu-name me --tpu-type v5p-8 --dry-run >out &&
	test "$(calls_count)" = 0 &&
	echo "[gdnctl] \$ $GDNCTL_UV run $DEV_TPU --cluster us-central1 --tpu-name me allocate --tpu-type v5p-8" >expect &&
	test_cmp expect out
'

test_expect_success 'dev-tpu-allocate: output on the terminal; Ctrl-C stops it: exit 130' '
	calls_reset &&
	gdnctl_bg out dev-tpu-allocate --tpu-name me &&
	wait_for_line "TPU allocation is active. Press Ctrl-C to release" out &&
	apid=$(cat "$STATE/allocate-us-central1.pid") &&
	kill -INT $gpid && wait_rc $gpid ;
	test $rc = 130 &&
	wait_gone "$apid" &&
	test_grep "TPU allocation released." out
'

test_done
