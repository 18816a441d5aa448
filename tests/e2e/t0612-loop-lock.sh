#!/usr/bin/env bash
# One gdnctl loop per tree, its journal out of the agent's reach, and no
# process of the agent left behind (issue 13): a second loop or a --resume
# while the run lives is refused naming the pid; `git clean -fdx` by the
# agent does not touch the default log dir (<git dir>/gdnctl/<branch>), so
# --resume after kill -9 finds the journal; what the agent leaves running
# (`sleep &`, `setsid sleep &`) is stopped and journaled.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

export MARK=$TRASH/mark
# a unique argument: pgrep finds this script's leftovers and nothing else
export SLEEPARG="1000.$$0612"
test_atexit 'for p in $(pgrep -f "sleep $SLEEPARG"); do kill -9 $p; done'
# whatever the outcome, no background gdnctl nor its agent outlives the script
export HANG_PIDS=$TRASH/hang.pids
test_atexit 'for p in $(cat "$TRASH/bg.pids"); do kill -9 $p; done'
test_atexit 'for p in $(cat "$HANG_PIDS"); do kill -9 -- -$p; done'

AGENT_PID_FILE=$TRASH/agent.pid
agent hang <<'EOF2'
echo $$ >>"$HANG_PIDS"
touch "$MARK"
exec sleep 60
EOF2
agent commit-one <<'EOF2'
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2
agent clean-and-commit <<'EOF2'
git clean -fdxq &&
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: clean, commit"
EOF2
# the first call cleans and hangs (killed with gdnctl), the next commits
agent clean-then-hang <<'EOF2'
git clean -fdxq
if [ ! -e "$MARK.hung" ]; then
	echo $$ >>"$HANG_PIDS"
	touch "$MARK.hung" "$MARK"
	exec sleep 60
fi
echo after >>work.txt && git add work.txt && git commit -qm "agent: after the crash"
EOF2
agent leave-children <<'EOF2'
sleep "$SLEEPARG" &
setsid sleep "$SLEEPARG" &
echo left >>work.txt && git add work.txt && git commit -qm "agent: leaves children"
EOF2

printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$MARK" "$MARK.hung" && test_create_repo "$TRASH/repo"
}

# gdnctl loop in the repository, default log dir: loop AGENT [options]
loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && gdnctl loop --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --sleep-seconds 0 --retry-sleep-seconds 0 "$@")
}

# Start a loop in the background and wait for its agent's mark: $BG is gdnctl's pid.
start_bg() {
	local a=$1
	shift
	rm -f "$MARK"
	(cd "$TRASH/repo" && exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop --agent command \
		--agent-cmd "$AG/$a {prompt_file}" --prompt-file "$TRASH/prompt.md" \
		--sleep-seconds 0 "$@" >"$TRASH/bg.out" 2>"$TRASH/bg.err") &
	BG=$!
	echo "$BG" >>"$TRASH/bg.pids"
	test_wait_until 10 test -e "$MARK"
}

# kill -9 gdnctl; its agent (a process group of its own) goes too.
kill9_bg() {
	kill -KILL "$BG" && wait "$BG"
	kill -KILL -- "-$(cat "$TRASH/agent.pid")" 2>/dev/null
	sleep 0.1
	return 0
}

log_dir() {
	echo "$TRASH/repo/.git/gdnctl/$(git -C "$TRASH/repo" symbolic-ref --short HEAD)"
}

test_expect_success 'a second loop, or --resume, while a run lives is refused naming its pid' '
	new_repo && start_bg hang --iterations 1 &&
	test -s "$(log_dir)/loop.lock" && test "$(cat "$(log_dir)/loop.lock")" = "$BG" &&
	test "$(cat repo/.git/gdnctl.lock)" = "$BG" &&
	test_must_fail =1 loop commit-one --iterations 1 >out 2>err &&
	echo "[gdnctl] error: another gdnctl loop (pid $BG) is running on this tree" >expect &&
	test_cmp expect err &&
	test_must_fail =1 loop commit-one --resume >out 2>err &&
	test_cmp expect err &&
	# another log dir: the repository lock still refuses it
	test_must_fail =1 loop commit-one --iterations 1 --log-dir "$TRASH/other" >out 2>err &&
	test_cmp expect err &&
	test "$(git -C repo rev-list --count HEAD)" = 1 &&
	kill -TERM "$BG" && { wait "$BG"; test $? = 143; } &&
	# the lock went with it: a new run starts
	loop commit-one --iterations 1 >out 2>err &&
	test_grep "1 iteration, 1 commit" out
'

test_expect_success 'kill -9 frees the locks: --resume runs' '
	new_repo && start_bg hang --iterations 1 && kill9_bg &&
	test -s "$(log_dir)/loop.lock" &&
	loop commit-one --resume --resume-override >out 2>err &&
	test_grep "resuming run" out &&
	test_grep "1 iteration, 1 commit" out
'

test_expect_success 'git clean -fdx by the agent does not reach the default log dir' '
	new_repo &&
	loop clean-and-commit --iterations 3 >out 2>err &&
	test_grep "3 iterations, 3 commits" out &&
	test "$(grep -c "\"event\":\"decision\"" "$(log_dir)/loop.jsonl")" = 3 &&
	test -s "$(log_dir)/iteration-003-transcript.log"
'

test_expect_success 'git clean -fdx then kill -9: --resume finds the journal' '
	new_repo && start_bg clean-then-hang --iterations 1 && kill9_bg &&
	loop clean-then-hang --resume --resume-override >out 2>err &&
	test_grep "resuming run" out &&
	test -s "$(log_dir)/loop.jsonl" &&
	test_grep "1 iteration, 1 commit" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: after the crash"
'

test_expect_success '--resume points at the journal of an earlier gdnctl inside the tree' '
	new_repo && old=$TRASH/repo/.agents/logs/gdn_codex_loop &&
	start_bg hang --iterations 1 --log-dir "$old" && kill9_bg &&
	test_must_fail =1 loop commit-one --resume >out 2>err &&
	echo "[gdnctl] error: nothing to resume: no journal at '"'"'$(log_dir)/loop.jsonl'"'"' (the journal of a run of an earlier gdnctl is at '"'"'$old/loop.jsonl'"'"': pass --log-dir '"'"'$old'"'"')" >expect &&
	test_cmp expect err &&
	loop commit-one --resume --resume-override --log-dir "$old" >out 2>err &&
	test_grep "1 iteration, 1 commit" out
'

test_expect_success 'a log dir removed under the run is made again, journal and all' '
	new_repo &&
	agent rm-log-dir <<-EOF2 &&
		rm -rf "$TRASH/logs" &&
		echo "one \$(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: rm"
	EOF2
	: in place: with a worktree, the agent would be removing its own working tree &&
	loop rm-log-dir --iterations 2 --log-dir "$TRASH/logs" --isolation in-place >out 2>err &&
	test_grep "2 iterations, 2 commits" out &&
	test_grep "\"event\":\"run_start\"" "$TRASH/logs/loop.jsonl" &&
	test "$(grep -c "\"event\":\"decision\"" "$TRASH/logs/loop.jsonl")" = 2
'

if command -v setsid >/dev/null 2>&1; then
	test_expect_success 'what the agent leaves running (sleep &, setsid sleep &) is stopped and journaled' '
		new_repo &&
		loop leave-children --iterations 2 >out 2>err &&
		test_grep "2 iterations, 2 commits" out &&
		test -z "$(pgrep -f "sleep $SLEEPARG")" &&
		test_grep "agent: stopped 2 process(es) it left running" err &&
		grep "\"event\":\"agent_leftovers\"" "$(log_dir)/loop.jsonl" >left &&
		test_line_count = 2 left &&
		test_grep "\"processes\":\[{\"pid\":[0-9]*,\"argv0\":\"sleep\"},{\"pid\":[0-9]*,\"argv0\":\"sleep\"}\]" left
	'
else
	test_skip 'what the agent leaves running is stopped and journaled' 'no setsid'
fi

test_done
