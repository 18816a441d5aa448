#!/usr/bin/env bash
# gdnctl loop --validation-mode required --perf-mode on --backend box: the
# validation tests and the profile run on an `ssh` backend (a real OpenSSH
# server on 127.0.0.1) in a remote checkout that `sync: rsync` refreshes
# before each phase; the metric is read from the remote profile's output;
# a test that fails on the remote side reverts the iteration; a phase
# that cannot run (unreachable server) is retried with
# --validation-retries, never a command that ran and failed; when it still
# cannot run it is an iteration error and the unvalidated commit is
# reverted.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-loop.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC GDNCTL_LOOP_BACKEND
command -v rsync >/dev/null 2>&1 || skip_all "rsync is not installed"
sshd_start

R=$TRASH/remote
mkdir -p "$R/jobs" "$XDG_CONFIG_HOME/gdnctl"
{
	echo "backends:"
	sshd_config_yaml box "workdir: $R/wd" "jobdir: $R/jobs" "poll: 300ms" "kill_grace: 1s" \
		"sync: rsync" 'sync_exclude: [".git", "out"]'
	sshd_config_yaml down "workdir: $R/wd" "jobdir: $R/jobs" "kill_grace: 1s"
} >"$XDG_CONFIG_HOME/gdnctl/config.yaml"
# the second backend points at a port nobody listens on
test_closed_port || skip_all "cannot hold a closed port"
sed -i "/^  down:/,\$ s/port: $SSHD_PORT/port: $CLOSED_PORT/" "$XDG_CONFIG_HOME/gdnctl/config.yaml"

agent faster <<'EOF'
date +%s%N >>touch.txt && echo 2.0 >speed.txt && git add -A && git commit -qm "agent: faster"
EOF
agent broken <<'EOF'
echo BROKEN >state.txt && echo 3.0 >speed.txt && git commit -qam "agent: faster but broken"
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

test_create_repo repo &&
	(
		cd repo &&
			cat >bench.sh <<-'EOF' &&
				#!/bin/sh
				echo "profile in $PWD"
				echo "throughput/mfu=$(cat speed.txt)"
			EOF
			cat >check.sh <<-'EOF' &&
				#!/bin/sh
				pwd >>"$REMOTE_LOG"
				echo "tests in $PWD"
				if grep -q BROKEN state.txt; then echo "tests: BROKEN"; exit 3; fi
				echo "tests: ok"
			EOF
			chmod +x bench.sh check.sh && echo 1.0 >speed.txt && echo ok >state.txt &&
			git add . && git commit -qm "bench"
	) || exit 1

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" &&
		GDNCTL_TEST_COMMAND="REMOTE_LOG=$R/tests.log ./check.sh" \
		GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl "${LOOP:-loop}" --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode required "$@")
}

test_expect_success 'tests and profile run remotely in the synced checkout; the remote metric promotes' '
	base=$(git -C repo rev-parse HEAD) &&
	run_loop faster --iterations 1 --backend box --perf-mode on --perf-source cli >out 2>err &&
	test_grep "^tests in $R/wd$" out &&
	test_grep "^tests: ok$" out &&
	test_grep "^profile in $R/wd$" out &&
	test_grep "performance baseline initialized: throughput/mfu=1 @ ${base:0:12}" out &&
	test_grep "performance champion promoted: 1 -> 2 (+100.00%, source=cli" out &&
	test "$(cat "$R/tests.log")" = "$R/wd" &&
	test "$(cat "$R/wd/speed.txt")" = 2.0 &&
	test ! -e "$R/wd/.git" &&
	test "$(git -C repo log -1 --format=%s)" = "agent: faster" &&
	test_grep "\"event\":\"validation\",\"iteration\":1,\"phase\":\"tests\",\"attempt\":1,\"rc\":0,\"state\":\"succeeded\"" "$TRASH/logs/loop.jsonl" &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success 'a test that fails on the server reverts the iteration' '
	before=$(git -C repo rev-parse HEAD) &&
	run_loop broken --iterations 1 --backend box --perf-mode on --perf-source cli \
		--validation-retries 2 >out 2>err &&
	test_grep "^tests: BROKEN$" out &&
	test_grep -c "validation tests attempt" out >n && test "$(cat n)" = 1 &&
	test_grep ! "validation_retry" "$TRASH/logs/loop.jsonl" &&
	test_grep "BROKEN" "$R/wd/state.txt" &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation failed: tests exit 3$" err &&
	test_grep "iteration 1 reverted (validation failed: tests exit 3)" err &&
	test_grep ! "validation profile attempt" out &&
	git -C repo diff --quiet "$before" HEAD &&
	test "$(cat repo/state.txt)" = ok &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/1 &&
	test_grep "\"phase\":\"tests\",\"attempt\":1,\"rc\":3,\"state\":\"failed\"" "$TRASH/logs/loop.jsonl" &&
	test -z "$(git -C repo status --porcelain)" &&
	test_line_count = 0 <(ls "$R/jobs")
'

test_expect_success 'an unreachable server: retried, then an iteration error; the unvalidated commit is reverted' '
	before=$(git -C repo rev-parse HEAD) &&
	test_must_fail =1 run_loop faster --iterations 1 --backend down --validation-retries 1 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation tests could not run (.*Connection refused); retry 1/1 in 0s$" err &&
	test_grep -c "\"event\":\"validation_retry\"" "$TRASH/logs/loop.jsonl" >n && test "$(cat n)" = 1 &&
	test_grep -c "validation tests attempt" out >n && test "$(cat n)" = 2 &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation could not run: .ssh. for backend .down. failed (exit 255): .*Connection refused$" err &&
	test_grep "iteration 1 raised: .ssh. for backend .down. failed (exit 255)" err &&
	test_grep ! "validation failed: tests" err &&
	test_grep "\"event\":\"revert\",\"iteration\":1,\"reason\":\"validation could not run: " "$TRASH/logs/loop.jsonl" &&
	test_grep "\"failure\":\"iteration_error\"" "$TRASH/logs/loop.jsonl" &&
	git -C repo diff --quiet "$before" HEAD &&
	ref=$(git -C repo for-each-ref --format="%(refname)" "refs/gdnctl/discarded/1*" | tail -n1) &&
	test "$(git -C repo log -1 --format=%s "$ref")" = "agent: faster" &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success '--validation-retries: a phase that could not run (ssh failed) runs again' '
	cat >flaky-ssh <<-EOF &&
	#!/bin/sh
	# fails like an unreachable host once, then is ssh
	if [ ! -e "$TRASH/ssh-failed" ]; then
		touch "$TRASH/ssh-failed"
		echo "ssh: connect to host 127.0.0.1 port $SSHD_PORT: Connection refused" >&2
		exit 255
	fi
	exec ssh "\$@"
	EOF
	chmod +x flaky-ssh &&
	GDNCTL_SSH=$TRASH/flaky-ssh run_loop faster --iterations 1 --backend box \
		--validation-retries 2 >out 2>err &&
	test -e ssh-failed &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation tests could not run (creating the workdir for backend .box. failed (exit 255)); retry 1/2 in 0s$" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation tests attempt 2$" out &&
	test_grep "^tests: ok$" out &&
	test_grep "\"event\":\"validation_retry\",\"iteration\":1,\"phase\":\"tests\",\"attempt\":1,\"retry\":1" "$TRASH/logs/loop.jsonl" &&
	test_grep "\"phase\":\"tests\",\"attempt\":2,\"rc\":0,\"state\":\"succeeded\"" "$TRASH/logs/loop.jsonl" &&
	test "$(git -C repo log -1 --format=%s)" = "agent: faster" &&
	test -z "$(git -C repo status --porcelain)"
'

test_done
