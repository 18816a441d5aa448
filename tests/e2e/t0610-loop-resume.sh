#!/usr/bin/env bash
# ctest: isolation-both
# gdnctl loop --resume after kill -9, and SIGINT/SIGTERM to gdnctl: no
# finished iteration is redone, no uncommitted work is lost. A resume that
# continues with another fake agent (--agent-cmd) passes --resume-override.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

AGENT_PID_FILE=$TRASH/agent.pid
agent commit-one <<'EOF2'
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2
agent commit-then-hang <<'EOF2'
echo hung >>work.txt && git add work.txt && git commit -qm "agent: before the crash"
echo "half-done work" >half.txt
touch "$MARK"
exec sleep 60
EOF2
agent edit-then-hang <<'EOF2'
echo "agent half edit" >>user.txt
touch "$MARK"
exec sleep 60
EOF2
agent setsid-then-hang <<'EOF2'
setsid sh -c "sleep 1000; :" "$MARK.setsid" </dev/null >/dev/null 2>&1 &
sleep 0.5 # setsid has left the group and exec'd sleep
touch "$MARK"
exec sleep 60
EOF2
agent reset-then-hang <<'EOF2'
git reset -q --hard HEAD~1
touch "$MARK"
exec sleep 60
EOF2
agent hang <<'EOF2'
touch "$MARK"
exec sleep 60
EOF2
# first call commits, later calls hang
agent first-then-hang <<'EOF2'
if [ ! -e "$MARK.first" ]; then
	touch "$MARK.first"
	echo first >>work.txt && git add work.txt && git commit -qm "agent: first iteration"
	exit 0
fi
touch "$MARK"
exec sleep 60
EOF2

printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}}\n' >"$TRASH/prompt.md"
export MARK=$TRASH/mark

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$MARK" "$MARK.first" &&
		test_create_repo "$TRASH/repo" &&
		(cd "$TRASH/repo" && echo base >user.txt && git add user.txt && git commit -qm base) &&
		echo "user change" >"$TRASH/repo/user.txt" &&
		echo "user note" >"$TRASH/repo/notes.txt"
}

loop_args() {
	ARGS=(--agent command --agent-cmd "$AG/$1 {prompt_file}" --prompt-file "$TRASH/prompt.md"
		--log-dir "$TRASH/logs" --sleep-seconds 0 --retry-sleep-seconds 0 --dirty-policy stash)
}

run_loop() {
	local a=$1
	shift
	loop_args "$a"
	(cd "$TRASH/repo" && gdnctl loop "${ARGS[@]}" "$@")
}

# Start gdnctl in the background, wait for the agent's mark, then deliver $1 to gdnctl.
start_and_signal() {
	local sig=$1 a=$2 pid i
	shift 2
	rm -f "$MARK"
	loop_args "$a"
	(cd "$TRASH/repo" && exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" "${ARGS[@]}" "$@" \
		>"$TRASH/bg.out" 2>"$TRASH/bg.err") &
	pid=$!
	for i in $(seq 1 200); do [ -e "$MARK" ] && break; sleep 0.05; done
	test -e "$MARK" || return 1
	kill "-$sig" "$pid"
	wait "$pid"
	bg_rc=$?
	if [ "$sig" = KILL ] && [ -z "${KEEP_ORPHAN:-}" ]; then
		# gdnctl died without cleanup: its agent (own process group) is still running
		kill -KILL -- "-$(cat "$TRASH/agent.pid")" 2>/dev/null
		sleep 0.1
	fi
	return 0
}

# A process that has ended (gone, or a zombie nobody reaps in this container).
ended() {
	! kill -0 "$1" 2>/dev/null || [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = Z ]
}

user_change_intact() {
	test "$(cat "$TRASH/repo/user.txt")" = "user change" &&
		test "$(cat "$TRASH/repo/notes.txt")" = "user note"
}

test_expect_success 'kill -9 while the agent'"'"'s setsid child runs: --resume finds it by its mark and stops it' '
	new_repo &&
	start_and_signal KILL setsid-then-hang --iterations 1 &&
	pgrep -f "$MARK.setsid" >pids && test -s pids &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	test_grep "stopped [0-9]* process(es) the agent of interrupted iteration 1 left running" err &&
	test_grep "\"event\":\"agent_leftovers\"" logs/loop.jsonl &&
	for i in $(seq 50); do pgrep -f "$MARK.setsid" >/dev/null || break; sleep 0.1; done &&
	! pgrep -f "$MARK.setsid"
'

test_expect_success '--resume with no journal: nothing to resume' '
	new_repo &&
	test_must_fail run_loop commit-one --resume >out 2>err &&
	test_grep "nothing to resume" err
'

test_expect_isolation worktree 'kill -9 during the agent, after it committed: resume keeps the worktree'"'"'s work under refs, redoes the iteration' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	start_and_signal KILL commit-then-hang --iterations 2 &&
	test "$bg_rc" = 137 &&
	test "$(git -C repo rev-parse HEAD)" = "$base" &&
	crashed=$(git -C logs/worktree rev-parse HEAD) &&
	test "$crashed" != "$base" &&
	test -z "$(git -C repo stash list)" &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	test_grep "resuming run .* after iteration 0 of 2" out &&
	run=$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" logs/loop.jsonl) &&
	test "$(git -C repo rev-parse "refs/gdnctl/loop/$run/iteration-1")" = "$crashed" &&
	test "$(git -C repo show "refs/gdnctl/leftovers/1:half.txt")" = "half-done work" &&
	git -C repo log --format=%s "$base..HEAD" >subjects &&
	printf "agent: one change\nagent: one change\n" >expect &&
	test_cmp expect subjects &&
	user_change_intact &&
	test ! -e repo/half.txt &&
	test -z "$(git -C repo stash list)" &&
	test "$(git -C repo worktree list | wc -l)" = 1 &&
	test "$(grep -c "\"event\":\"iteration_start\",\"iteration\":1," logs/loop.jsonl)" = 2 &&
	test_grep "\"event\":\"run_end\",\"reason\":\"completed\"" logs/loop.jsonl
'

test_expect_isolation in-place 'kill -9 during the agent, after it committed: resume sets the commit aside and redoes the iteration' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	start_and_signal KILL commit-then-hang --iterations 2 &&
	test "$bg_rc" = 137 &&
	crashed=$(git -C repo rev-parse HEAD) &&
	test "$crashed" != "$base" &&
	git -C repo stash list >stashes && test_line_count = 1 stashes &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	test_grep "resuming run .* after iteration 0 of 2" out &&
	run=$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" logs/loop.jsonl) &&
	test "$(git -C repo rev-parse "refs/gdnctl/loop/$run/iteration-1")" = "$crashed" &&
	test_grep "iteration 1 was interrupted; its commits are kept at refs/gdnctl/loop/$run/iteration-1" err &&
	git -C repo log --format=%s "$base..HEAD" >subjects &&
	printf "agent: one change\nagent: one change\n" >expect &&
	test_cmp expect subjects &&
	user_change_intact &&
	test ! -e repo/half.txt &&
	git -C repo stash list >stashes &&
	test_line_count = 1 stashes &&
	test_grep "gdnctl-loop: $run iteration 1 interrupted" stashes &&
	test "$(git -C repo show "stash@{0}^3:half.txt")" = "half-done work" &&
	test_grep "stash kept for manual recovery: .* (gdnctl-loop: $run iteration 1 interrupted)" out &&
	test "$(grep -c "\"event\":\"iteration_start\",\"iteration\":1," logs/loop.jsonl)" = 2 &&
	test_grep "\"event\":\"run_end\",\"reason\":\"completed\"" logs/loop.jsonl
'

test_expect_isolation in-place 'kill -9 with a clean tree at the start: the agent'"'"'s half edit is stashed aside' '
	new_repo && git -C repo checkout -q -- user.txt && rm repo/notes.txt &&
	start_and_signal KILL edit-then-hang --iterations 1 &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	run=$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" logs/loop.jsonl) &&
	git -C repo stash list >stashes && test_line_count = 1 stashes &&
	test_grep "gdnctl-loop: $run iteration 1 interrupted" stashes &&
	git -C repo show "stash@{0}:user.txt" >stashed &&
	test_grep "agent half edit" stashed &&
	test "$(cat repo/user.txt)" = base &&
	test_grep "1 iteration, 1 commit" out
'

test_expect_isolation in-place 'kill -9 after the agent reset the branch past gdnctl.yaml: --resume reads it as the iteration began' '
	new_repo &&
	(cd repo && printf "#!/bin/sh\necho tests ok\n" >check.sh && chmod +x check.sh &&
		printf "project:\n  test_command: ./check.sh\n" >gdnctl.yaml &&
		git add check.sh gdnctl.yaml && git commit -qm "the project file") &&
	start_and_signal KILL reset-then-hang --iterations 1 --validation-mode required &&
	test ! -e repo/gdnctl.yaml &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	test_grep "gdnctl.yaml. is missing (interrupted iteration 1 moved the branch): this session reads the project.s configuration from gdnctl.yaml at [0-9a-f]\{12\}$" err &&
	test_grep "^tests ok$" out &&
	test -e repo/gdnctl.yaml &&
	git -C repo log --format=%s -2 >subjects &&
	printf "agent: one change\nthe project file\n" >expect &&
	test_cmp expect subjects &&
	user_change_intact
'

test_expect_success 'kill -9 leaves its agent running: --resume stops that agent first' '
	new_repo &&
	KEEP_ORPHAN=1 start_and_signal KILL edit-then-hang --iterations 1 &&
	apid=$(cat "$TRASH/agent.pid") &&
	! ended "$apid" &&
	grep -q "\"event\":\"agent_pid\",\"iteration\":1,.*\"pgid\":$apid" logs/loop.jsonl &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	cat out err >all &&
	test_grep "agent of interrupted iteration 1 is still running (process group $apid); stopping it" all &&
	: each check says why it failed: fresh run 19 failed here once, silently, after the line above &&
	{ ended "$apid" || { echo "the agent $apid still runs: $(cat "/proc/$apid/stat" 2>&1)"; false; }; } &&
	{ grep -q "\"event\":\"orphan_agent_stopped\"" logs/loop.jsonl ||
		{ echo "no orphan_agent_stopped event:"; cat logs/loop.jsonl; false; }; } &&
	{ user_change_intact || { echo "the user change is gone:"; cat "$TRASH/repo/user.txt" "$TRASH/repo/notes.txt"; false; }; }
'

test_expect_isolation worktree 'kill -9 leaves locks on the run'"'"'s refs: --resume removes them and finishes' '
	new_repo &&
	branch=$(git -C repo symbolic-ref --short HEAD) &&
	start_and_signal KILL hang --iterations 2 --workers 2 &&
	run=$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" logs/loop.jsonl) &&
	git -C repo rev-parse -q --verify "refs/gdnctl/tip/$run" &&
	git -C repo rev-parse -q --verify "refs/gdnctl/champion/$run" &&
	for ref in "gdnctl/champion/$run" "gdnctl/tip/$run" "heads/$branch"; do
		: >"repo/.git/refs/$ref.lock" || return 1
	done &&
	run_loop commit-one --resume --resume-override --workers 2 >out 2>err &&
	test "$(grep -c "removed stale .*/refs/.*\.lock. left by a killed git process" err)" = 3 &&
	test "$(grep -c "\"event\":\"stale_lock\"" logs/loop.jsonl)" = 3 &&
	test -z "$(find repo/.git/refs -name "*.lock")" &&
	test_grep "loop summary: run .*: 2 iterations, .*stopped: completed (exit 0)" out &&
	user_change_intact
'

test_expect_isolation worktree 'a journal whose run id climbs out of refs/: --resume removes no lock there' '
	new_repo &&
	start_and_signal KILL hang --iterations 1 &&
	run=$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" logs/loop.jsonl) &&
	sed -i "s|\"run\":\"$run\"|\"run\":\"../../../evil\"|" logs/loop.jsonl &&
	: >repo/.git/evil.lock &&
	test_expect_code 1 run_loop commit-one --resume --resume-override >out 2>err &&
	test_grep "refusing to update ref with bad name .refs/gdnctl/champion/../../../evil" err &&
	test -e repo/.git/evil.lock &&
	! grep "removed stale" err
'

test_expect_success 'kill -9 in iteration 2: iteration 1 is not redone' '
	new_repo &&
	start_and_signal KILL first-then-hang --iterations 3 &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	test_grep "resuming run .* after iteration 1 of 3" out &&
	test "$(grep -c "\"event\":\"iteration_start\",\"iteration\":1," logs/loop.jsonl)" = 1 &&
	test "$(grep -c "\"event\":\"iteration_start\",\"iteration\":2," logs/loop.jsonl)" = 2 &&
	test_grep "loop summary: run .*: 3 iterations, 3 commits" out &&
	test "$(git -C repo rev-list --count HEAD)" = 5 &&
	user_change_intact &&
	test -z "$(git -C repo stash list)"
'

test_expect_success 'a torn last journal line (kill during a write) is ignored' '
	new_repo &&
	start_and_signal KILL hang --iterations 1 &&
	printf "{\"ts\":\"x\",\"run\":\"r\",\"event\":\"decis" >>logs/loop.jsonl &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	user_change_intact &&
	test -z "$(git -C repo stash list)"
'

test_expect_success 'a malformed journal line is an error that names the line' '
	new_repo &&
	run_loop commit-one --iterations 1 >out 2>err &&
	sed -i "2s/.*/not json/" logs/loop.jsonl &&
	test_must_fail run_loop commit-one --resume >out 2>err &&
	test_grep "journal line 2" err
'

test_expect_success 'resuming a completed run does nothing' '
	new_repo &&
	run_loop commit-one --iterations 1 >out 2>err &&
	head=$(git -C repo rev-parse HEAD) &&
	run_loop commit-one --resume >out 2>err &&
	test "$(git -C repo rev-parse HEAD)" = "$head" &&
	test_grep "after iteration 1 of 1" out
'

test_expect_success 'SIGINT to gdnctl: agent stopped, stash restored, journaled, exit 130' '
	new_repo &&
	start_and_signal INT hang --iterations 2 --agent-kill-grace 300ms &&
	test "$bg_rc" = 130 &&
	! kill -0 "$(cat agent.pid)" 2>/dev/null &&
	user_change_intact &&
	test -z "$(git -C repo stash list)" &&
	test_grep "\"event\":\"interrupted\",\"iteration\":1,\"signal\":2" logs/loop.jsonl &&
	test_grep "stopped: interrupted (exit 130)" bg.out
'

test_expect_success 'SIGTERM to gdnctl: exit 143; --resume then finishes the run' '
	new_repo &&
	start_and_signal TERM hang --iterations 1 --agent-kill-grace 300ms &&
	test "$bg_rc" = 143 &&
	user_change_intact &&
	test_grep "\"signal\":15" logs/loop.jsonl &&
	run_loop commit-one --resume --resume-override >out 2>err &&
	test_grep "1 iteration, 1 commit" out &&
	user_change_intact
'

test_done
