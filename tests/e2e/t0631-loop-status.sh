#!/usr/bin/env bash
# `gdnctl loop status` on a real running loop (an agent that waits for a
# file): the iteration, phase and elapsed time, the champion, the failures
# budget, the agent's last output line; --watch until the run ends or
# Ctrl-C; and `gdnctl report --watch`, which writes the report again as
# the journal grows.
. "$(dirname "$0")/lib.sh"
. "$GDNCTL_SOURCE_DIR/tests/e2e/lib-loop.sh"

# exec: in the background, $! is gdnctl itself
bg_gdnctl() {
	exec "$GDNCTL_BIN" "$@"
}

wait_for() {
	local i
	for i in $(seq 300); do
		eval "$1" && return 0
		sleep 0.1
	done
	echo "timed out waiting for: $1"
	return 1
}

test_expect_success 'setup: a repository and an agent that waits for a file' '
	test_create_repo repo &&
	(cd repo && echo 1 >a && git add a && git commit -qm init) &&
	printf "Iteration {{ITERATION}}\n" >prompt.md &&
	agent slow <<-\EOF
		echo "reading the prompt"
		echo "thinking about the matmul"
		i=0
		while [ ! -e "$GO" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
		echo "x$i" >>a && git commit -qam "change $(date +%s%N)"
		echo "committed the change"
	EOF
'

test_expect_success 'a running loop: iteration, phase, budget, the agent'"'"'s last line; --watch until it ends' '
	(cd repo && GO="$TRASH/go" bg_gdnctl loop --agent command --agent-cmd "$AG/slow {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --iterations 2 \
		--sleep-seconds 0 --max-failures 3 >"$TRASH/loop.out" 2>&1) &
	lpid=$!
	wait_for "grep -q \"thinking about the matmul\" logs/iteration-001-transcript.log 2>/dev/null" &&
	gdnctl loop status --log-dir logs >st &&
	cat st &&
	test_grep -E "^run [0-9TZ-]+: running for [0-9.]+ (ms|s)$" st &&
	test_grep -E "^iteration 1 of 2: agent for [0-9.]+ (ms|s) \(the iteration for [0-9.]+ (ms|s)\); 0 done: 0 kept, 0 reverted$" st &&
	test_grep "^champion: none yet$" st &&
	test_grep "^failures: 0 counted; 3 more allowed (--max-failures 3)$" st &&
	test_grep "^agent: thinking about the matmul$" st &&
	gdnctl loop status --log-dir logs --json >st.json &&
	python3 - st.json <<-\EOF2
		import json, sys
		d = json.load(open(sys.argv[1]))
		assert d["schema"] == "gdnctl.loop_status.v1", d
		assert d["running"] is True and d["iteration"] == 1 and d["planned"] == 2, d
		assert d["phase"] == "agent" and d["phase_ms"] >= 0 and d["iteration_ms"] >= d["phase_ms"], d
		assert d["failures"] == {"counted": 0, "consecutive": 0, "max": 3, "left": 2 + 1,
		                         "text": "0 counted; 3 more allowed (--max-failures 3)"}, d["failures"]
		assert d["agent_line"] == "thinking about the matmul", d
		assert d["journal"].endswith("/logs/loop.jsonl"), d
	EOF2
	test $? = 0 || exit 1
	(bg_gdnctl loop status --log-dir logs --watch --interval 200ms >watch.out 2>watch.err) &
	wpid=$!
	wait_for "test \$(grep -c \"^run \" watch.out) -ge 2" &&
	: >go &&
	{ wait $lpid; lrc=$?; } && test $lrc = 0 &&
	{ wait $wpid; wrc=$?; } && test $wrc = 0 &&
	test_grep "^run [0-9TZ-]*: ended (completed, exit 0) after " watch.out &&
	test "$(grep -c "^run " watch.out)" -ge 3 &&
	test ! -s watch.err &&
	gdnctl loop status --log-dir logs >st &&
	test_grep "^iteration 2 of 2; 2 done: 2 kept, 0 reverted$" st &&
	test_grep "^  iteration 1: kept 1 commit$" st &&
	test_grep "^  iteration 2: kept 1 commit$" st &&
	test_grep "^agent: committed the change$" st
'

test_expect_success 'the default log directory is the loop'"'"'s (gdn_loop_default_log_dir)' '
	mkdir -p repo/.git/gdnctl && cp -r logs repo/.git/gdnctl/main &&
	(cd repo && gdnctl loop status >../default.out) &&
	test_grep "ended (completed, exit 0)" default.out &&
	mkdir norepo && (cd norepo && test_must_fail =2 gdnctl loop status 2>err) &&
	test_grep "not inside a git repository" norepo/err
'

# A journal written by hand, as a run that never ends.
start_journal() {
	mkdir -p "$1" &&
		printf "{\"ts\":\"%s\",\"run\":\"r1\",\"event\":\"run_start\",\"iterations\":3,\"max_failures\":-1}\n" \
			"$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" >"$1/loop.jsonl"
}
event() {
	printf "{\"ts\":\"%s\",\"run\":\"r1\",%s}\n" "$(date -u +%Y-%m-%dT%H:%M:%S.000Z)" "$2" >>"$1/loop.jsonl"
}

test_expect_success 'Ctrl-C stops --watch: exit 130 (SIGTERM: 143)' '
	start_journal fake || exit 1
	(bg_gdnctl loop status --log-dir fake --watch --interval 100ms >w.out 2>&1) &
	pid=$!
	wait_for "grep -q \"^failures: 0 counted; no limit\" w.out" &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } && test $rc = 130 || exit 1
	(bg_gdnctl loop status --log-dir fake --watch --interval 100ms >w.out 2>&1) &
	pid=$!
	wait_for "test -s w.out" &&
	kill -TERM $pid &&
	{ wait $pid; rc=$?; } && test $rc = 143
'

test_expect_success 'report --watch writes the report again as the journal grows' '
	start_journal grow || exit 1
	(bg_gdnctl report --log-dir grow --watch --interval 100ms >rw.out 2>rw.err) &
	pid=$!
	wait_for "test -s grow/report.html" &&
	test_grep "^run r1: 0 iterations, not ended$" rw.out &&
	event grow "\"event\":\"iteration_start\",\"iteration\":1" &&
	event grow "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"ok\",\"commits\":0" &&
	wait_for "grep -q \"report written to .*grow/report.html: 1 iteration: 0 kept, 0 reverted, 1 without a commit\" rw.out" &&
	test_grep "<td class=\"num\">1</td>" grow/report.html &&
	event grow "\"event\":\"run_end\",\"reason\":\"completed\",\"exit_code\":0" &&
	{ wait $pid; rc=$?; } && test $rc = 0 &&
	test_grep "completed, exit 0" grow/report.html &&
	test ! -s rw.err || exit 1
	(bg_gdnctl report --log-dir fake --watch --interval 100ms >rw2.out 2>&1) &
	pid=$!
	wait_for "test -s fake/report.html" &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } && test $rc = 130
'

test_expect_success 'errors and usage: exit 1 without a journal, 2 for bad arguments' '
	test_must_fail =1 gdnctl loop status --log-dir "$TRASH/none" 2>err &&
	test_line_count = 1 err && test_grep "cannot open .*none/loop.jsonl" err &&
	test_must_fail =2 gdnctl loop status extra 2>err &&
	test_must_fail =2 gdnctl loop status --interval 0 --log-dir fake 2>err &&
	test_must_fail =2 gdnctl report --interval 0 2>err &&
	gdnctl loop status -h >out &&
	for o in --log-dir --watch --interval --json; do test_grep -e "$o" out || return 1; done &&
	gdnctl help --json loop status >help.json && test_grep "\"name\": \"loop status\"" help.json &&
	gdnctl loop -h >out && test_grep "gdnctl loop status \[options\]" out &&
	mkdir empty && : >empty/loop.jsonl &&
	gdnctl loop status --log-dir empty >out && test_grep "^no run in the journal yet$" out
'

test_expect_success 'completion and man page know loop status and its options' '
	gdnctl completion bash >gdnctl.bash &&
	bcomp() {
		bash -c "
			source ./gdnctl.bash || exit 1
			COMP_WORDS=(\"\$@\")
			COMP_CWORD=\$((\${#COMP_WORDS[@]} - 1))
			COMP_LINE=\"\$*\" COMP_POINT=\${#COMP_LINE}
			_gdnctl
			printf \"%s\n\" \"\${COMPREPLY[@]}\"
		" bcomp "$@" | sed "/^$/d" | sort
	} &&
	bcomp gdnctl loop "" >actual && printf "status\nverify\n" >expect && test_cmp expect actual &&
	bcomp gdnctl loop status --w >actual && echo --watch >expect && test_cmp expect actual &&
	bcomp gdnctl report --w >actual && test_cmp expect actual &&
	gdnctl help --man loop >loop.1 &&
	test_grep "^\.SH LOOP STATUS" loop.1 &&
	test_grep -F "\-\-watch" loop.1 &&
	gdnctl help --man report >report.1 && test_grep -F "\-\-interval" report.1
'

test_done
