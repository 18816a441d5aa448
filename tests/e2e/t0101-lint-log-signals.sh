#!/usr/bin/env bash
# Blocking reads of files the user names end on SIGINT/SIGTERM (issue 29,
# item 9): a FIFO without a writer as lint-log's --log-file, the
# configuration file, the report's journal and performance state, loop
# status's journal, the loop's prompt file, and several trace inputs. Each
# exits 130 on SIGINT and 143 on SIGTERM with one line saying what it was
# reading; a FIFO that does get a writer is read as a file.
. "$(dirname "$0")/lib.sh"

# stop_wait SIG PID: SIG to PID after half a second, then wait at most
# 10 s. Its exit code, or 137 when it had to be killed.
stop_wait() {
	local i
	sleep 0.5
	kill -s "$1" "$2"
	for ((i = 0; i < 100; i++)); do
		test_proc_alive "$2" || break
		sleep 0.1
	done
	test_proc_alive "$2" && kill -KILL "$2"
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

test_expect_success 'lint-log --log-file FIFO: TERM exits 143, INT 130' '
	mkfifo log.fifo &&
	interrupt TERM lint-log --log-file log.fifo >out 2>err
	test $? = 143 &&
	test_grep "^\[gdnctl\] error: interrupted while reading .*log.fifo.$" err &&
	interrupt INT lint-log --log-file log.fifo >out 2>err
	test $? = 130 &&
	test_grep "interrupted while reading" err
'

test_expect_success 'lint-log --log-file FIFO with a writer: read like a file' '
	printf "# Log\n\n### Iteration 1 - a\n- Commit: abc1234\n" >log.fifo &
	timeout 10 "$GDNCTL_BIN" lint-log --log-file log.fifo >out 2>err &&
	test_grep "log lint passed" out
'

test_expect_success 'the configuration file a FIFO: TERM exits 143, INT 130' '
	test_create_repo repo &&
	(cd repo && git commit -q --allow-empty -m init && mkfifo gdnctl.yaml) &&
	(cd repo && interrupt TERM config >../out 2>../err)
	test $? = 143 &&
	test_grep "interrupted while reading .*gdnctl.yaml" err &&
	(cd repo && interrupt INT config >../out 2>../err)
	test $? = 130 &&
	rm repo/gdnctl.yaml
'

test_expect_success 'report: the journal or the performance state a FIFO: 143, 130' '
	mkdir logs &&
	mkfifo logs/loop.jsonl &&
	interrupt TERM report --log-dir logs -o r.html >out 2>err
	test $? = 143 &&
	test_grep "interrupted while reading .*loop.jsonl" err &&
	test ! -e r.html &&
	rm logs/loop.jsonl &&
	echo "{\"ts\":\"2026-01-01T00:00:00.000Z\",\"run\":\"r1\",\"event\":\"run_start\",\"iterations\":1}" >logs/loop.jsonl &&
	mkfifo state.fifo &&
	interrupt INT report --log-dir logs --perf-state-file state.fifo -o r.html >out 2>err
	test $? = 130 &&
	test_grep "interrupted while reading .*state.fifo" err &&
	test ! -e r.html
'

test_expect_success 'loop status: the journal a FIFO: 143' '
	mkdir slogs &&
	mkfifo slogs/loop.jsonl &&
	interrupt TERM loop status --log-dir slogs >out 2>err
	test $? = 143 &&
	test_grep "interrupted while reading .*loop.jsonl" err
'

test_expect_success 'loop --prompt-file FIFO: 143' '
	mkfifo prompt.fifo &&
	(cd repo && interrupt TERM loop --dry-run --iterations 1 --agent command --agent-cmd true \
		--prompt-file ../prompt.fifo --log-dir ../llogs >../out 2>../err)
	test $? = 143 &&
	test_grep "interrupted while reading .*prompt.fifo" err
'

test_expect_success 'trace summary of several FIFOs: no wait for a writer (not XPlane files)' '
	mkfifo t1.fifo t2.fifo &&
	test_expect_code 2 timeout 10 "$GDNCTL_BIN" trace summary t1.fifo t2.fifo >out 2>err &&
	test_grep "is not one" err
'

test_done
