#!/usr/bin/env bash
# Clean streams and signals (issue 14): standard output carries data only
# (echoed commands and status lines go to stderr, none with -q); SIGINT and
# SIGTERM end blocking reads (a FIFO, a stalled pipe, a terminal) with
# 130/143; allocate without uv says why in one error line; doctor on a
# machine without the default agent warns instead of failing.
. "$(dirname "$0")/lib.sh"

# ---- stdout carries data only ----

test_expect_success 'run: the command output on stdout, the echo and status on stderr' '
	test_expect_code 3 gdnctl run -- sh -c "echo hi; exit 3" >out 2>err &&
	echo hi >expect &&
	test_cmp expect out &&
	test_grep "^\[gdnctl\] \$ sh -c " err &&
	test_grep "^\[gdnctl\] command on local finished: FAILED (exit 3)$" err
'

test_expect_success 'run --no-wait prints the job id alone; wait prints nothing on stdout' '
	gdnctl run --no-wait -- sh -c "echo one; echo two" >out 2>err &&
	test_line_count = 1 out &&
	test_grep "^\[gdnctl\] \$ bash -s -- run " err &&
	id=$(cat out) &&
	echo "$id" >job.id &&
	gdnctl wait "$id" >out 2>err &&
	test_line_count = 0 out &&
	test_grep "^\[gdnctl\] job $id finished: COMPLETED$" err
'

test_expect_success 'logs JOB > out.log: the job output only' '
	id=$(cat job.id) &&
	gdnctl logs "$id" >out.log 2>err &&
	printf "one\ntwo\n" >expect &&
	test_cmp expect out.log &&
	test_grep "^\[gdnctl\] \$ bash -s -- logs " err
'

test_expect_success 'test: the test command output only on stdout' '
	test_create_repo repo &&
	(cd repo && gdnctl -c project.test_command="echo tested" test --backend local) >out 2>err &&
	echo tested >expect &&
	test_cmp expect out &&
	test_grep "^\[gdnctl\] \$ bash -c " err
'

test_expect_success '-q/--quiet: no echo or status; data and errors stay' '
	id=$(cat job.id) &&
	gdnctl -q run -- echo hi >out 2>err &&
	echo hi >expect &&
	test_cmp expect out &&
	test_line_count = 0 err &&
	test_expect_code 3 gdnctl --quiet run -- sh -c "exit 3" >out 2>err &&
	test_line_count = 0 out &&
	test_line_count = 0 err &&
	gdnctl --quiet logs "$id" >out 2>err &&
	printf "one\ntwo\n" >expect &&
	test_cmp expect out &&
	test_line_count = 0 err &&
	gdnctl -q wait "$id" >out 2>err &&
	test_line_count = 0 out &&
	test_line_count = 0 err &&
	(cd repo && gdnctl -q -c project.test_command="echo tested" test --backend local) >out 2>err &&
	test_line_count = 1 out &&
	test_line_count = 0 err &&
	test_expect_code 4 gdnctl -q logs nosuchjob >out 2>err &&
	test_line_count = 0 out &&
	test_grep "^\[gdnctl\] error: no job .nosuchjob." err
'

test_expect_success '--dry-run: the echoed commands are the answer, on stdout, also with -q' '
	gdnctl -q run --dry-run -- touch made >out 2>err &&
	test_grep "^\[gdnctl\] \$ touch made$" out &&
	test_line_count = 0 err &&
	test ! -e made
'

test_expect_success 'the global help lists -q, --quiet' '
	gdnctl --help >out &&
	test_grep "^   -q, --quiet " out
'

# ---- SIGINT and SIGTERM end blocking reads ----

# stop_wait SIG PID [WRITER_PIDFILE]: SIG to PID after half a second, then
# wait at most 10 s. Its exit code, or 137 when it had to be killed. With a
# pid file, PID ends a pipeline whose writer is stopped once PID is gone,
# before the wait: bash waits for the whole pipeline, and the writer would
# otherwise sleep on for its 30 s.
stop_wait() {
	local i
	sleep 0.5
	kill -s "$1" "$2"
	for ((i = 0; i < 100; i++)); do
		test_proc_alive "$2" || break
		sleep 0.1
	done
	test_proc_alive "$2" && kill -KILL "$2"
	[ -z "${3:-}" ] || kill "$(cat "$3")"
	wait "$2"
}

# interrupt SIG ARGS...: gdnctl ARGS in the background (the binary itself,
# so that $! is its pid), then stop_wait SIG.
interrupt() {
	local sig=$1
	shift
	# shellcheck disable=SC2086
	${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@" &
	stop_wait "$sig" $!
}

# A writer that sends the start of a trace and stalls (its pid in writer.pid).
stalled_writer() {
	sh -c 'echo $$ >writer.pid; printf "{\"traceEvents\":["; exec sleep 30'
}

test_expect_success 'trace summary FIFO without a writer: TERM exits 143, INT 130' '
	mkfifo fifo &&
	interrupt TERM trace summary fifo >out 2>err
	test $? = 143 &&
	test_grep "^\[gdnctl\] error: interrupted while reading .fifo.$" err &&
	test_grep ! "invalid JSON" err &&
	interrupt INT trace summary fifo >out 2>err
	test $? = 130
'

test_expect_success 'trace summary FIFO whose writer stalls after a few bytes: 143' '
	(printf "{\"traceEvents\":[" && exec sleep 30) >fifo &
	writer=$!
	interrupt TERM trace summary fifo >out 2>err
	rc=$?
	kill $writer
	test $rc = 143 &&
	test_grep "interrupted while reading" err &&
	test_grep ! "invalid JSON" err
'

test_expect_success 'a FIFO is read once, not sniffed and reopened' '
	(printf "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"op\",\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]}" >fifo) &
	timeout 10 "$GDNCTL_BIN" trace summary --json fifo >out 2>err &&
	test_grep "\"schema\"" out
'

test_expect_success 'a stalled pipe into trace summary -: INT exits 130, TERM 143' '
	stalled_writer | ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" trace summary - >out 2>err &
	stop_wait INT $! writer.pid
	rc=$?
	test $rc = 130 &&
	test_grep "^\[gdnctl\] error: interrupted while reading .-.$" err &&
	test_grep ! "invalid JSON" err &&
	stalled_writer | ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" trace summary - >out 2>err &
	stop_wait TERM $! writer.pid
	rc=$?
	test $rc = 143
'

test_expect_success 'Ctrl-C on terminal stdin: exit 130, not "invalid JSON"' '
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/ttyint.py" 10 "$GDNCTL_BIN" trace summary - >out 2>&1 &&
	test_grep "^exit=130$" out &&
	test_grep ! "invalid JSON" out
'

# ---- allocate without uv ----

test_expect_success 'allocate without uv: one error line on stderr with the cause, nothing on stdout' '
	(cd repo && GDNCTL_UV=$TRASH/no-uv test_expect_code 4 gdnctl -q allocate --tpu-name me) >out 2>err &&
	test_line_count = 0 out &&
	test_line_count = 1 err &&
	test_grep "^\[gdnctl\] error: cannot run .*no-uv.: No such file or directory$" err &&
	(cd repo && GDNCTL_UV=$TRASH/no-uv test_expect_code 4 gdnctl allocate --tpu-name me) >out 2>err &&
	test_line_count = 0 out &&
	test "$(grep -c "error:" err)" = 1 &&
	test_grep ! "unknown error" err
'

# ---- doctor without the default agent ----

test_expect_success 'doctor on a machine without codex: a warning naming --codex-bin, exit 0' '
	PATH=/usr/bin:/bin &&
	if command -v codex >/dev/null; then exit 0; fi &&
	unset GDNCTL_CODEX &&
	(cd repo && gdnctl doctor -b local) >out 2>err &&
	test_grep "^warn  agent: codex " out &&
	test_grep "fix: .*--codex-bin PATH" out &&
	test_grep ! -e "--agent-bin" -e "^FAIL" out &&
	(cd repo && test_expect_code 1 gdnctl doctor -b local --agent codex) >out 2>err &&
	test_grep "^FAIL  agent: codex " out
'

test_expect_success 'doctor --codex-bin: the flag loop takes' '
	printf "#!/bin/sh\necho \"codex-cli 9.9.9\"\n" >fake-codex &&
	chmod +x fake-codex &&
	(cd repo && gdnctl doctor -b local --codex-bin "$TRASH/fake-codex") >out 2>err &&
	test_grep "^ok    agent: codex .*codex-cli 9.9.9" out
'

test_done
