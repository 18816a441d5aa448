#!/usr/bin/env bash
# ctest: isolation-both
# An untidy agent (issue 13, items 1-5, 9 and 10): only validated commits
# land on the loop branch, and the user's uncommitted work is never lost.
# The agent follows a plan, one step per call ($TRASH/plan); the project's
# tests (check.sh) fail on a BROKEN state.txt, or on a committed
# needs-helper whose helper.txt is not committed.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

export MARK=$TRASH/mark CALLS=$TRASH/calls PLAN=$TRASH/plan
AGENT_PID_FILE=$TRASH/agent.pid
agent planned <<'EOF2'
n=$(($(cat "$CALLS" 2>/dev/null || echo 0) + 1)) && echo "$n" >"$CALLS"
step=$(sed -n "${n}p" "$PLAN")
echo "agent call $n: $step"
commit() { echo "$1 $n" >>work.txt && git add work.txt && git commit -qm "agent: $1 $n"; }
case $step in
good) commit good ;;
good-fail) commit good && exit 1 ;;
broken-fail) echo BROKEN >state.txt && git add state.txt && git commit -qm "agent: broken $n" && exit 1 ;;
broken-untracked) echo BROKEN >state.txt && git add state.txt && git commit -qm "agent: broken $n" &&
	echo stray >stray.txt ;;
needs-helper) echo yes >needs-helper && git add needs-helper && git commit -qm "agent: needs helper $n" &&
	echo help >helper.txt ;;
broken) echo BROKEN >state.txt && git add state.txt && git commit -qm "agent: broken $n" ;;
reset) git reset -q --hard HEAD~1 ;;
checkout) git checkout -q -b other && commit other ;;
conflict) echo "agent $n" >user.txt && git add user.txt && git commit -qm "agent: edits user.txt $n" ;;
stash-clear) git stash clear && git gc -q --prune=now ;;
stray-edit) echo "agent stray $n" >>user.txt && commit good ;;
stray-delete) rm -f user.txt && commit good ;;
commit-hang) commit hung && touch "$MARK" && exec sleep 60 ;;
esac
EOF2
printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}}\n' >"$TRASH/prompt.md"

# A repository whose tests are check.sh, and the user's four uncommitted
# edits: a tracked edit, a staged new file, an untracked file and an
# untracked directory.
# shellcheck disable=SC2034 # base is read by the test bodies
new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$MARK" "$CALLS" &&
		printf '%s\n' "$@" >"$PLAN" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >check.sh <<-'EOF2' &&
					#!/bin/sh
					if grep -q BROKEN state.txt; then echo "tests: BROKEN"; exit 3; fi
					if [ -e needs-helper ] && [ ! -e helper.txt ]; then echo "tests: no helper"; exit 4; fi
					echo "tests: ok"
				EOF2
				chmod +x check.sh && echo ok >state.txt && echo base >user.txt &&
				git add . && git commit -qm base &&
				echo "user change" >user.txt &&
				echo "user staged" >staged.txt && git add staged.txt &&
				echo "user note" >notes.txt &&
				mkdir -p udir/sub && echo "user dir" >udir/sub/file.txt
		) &&
		base=$(git -C "$TRASH/repo" rev-parse HEAD)
}

loop_args() {
	ARGS=(--agent command --agent-cmd "$AG/planned {prompt_file}" --prompt-file "$TRASH/prompt.md"
		--log-dir "$TRASH/logs" --sleep-seconds 0 --retry-sleep-seconds 0 --dirty-policy stash
		--max-failures 10 --validation-mode required)
}

run_loop() {
	loop_args
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh gdnctl loop "${ARGS[@]}" "$@")
}

# The four edits, byte for byte, in the user's checkout.
user_work_intact() {
	test "$(cat "$TRASH/repo/user.txt")" = "user change" &&
		test "$(cat "$TRASH/repo/notes.txt")" = "user note" &&
		test "$(cat "$TRASH/repo/udir/sub/file.txt")" = "user dir" &&
		test "$(git -C "$TRASH/repo" show :staged.txt)" = "user staged"
}

run_id() { sed -n '1s/.*"run":"\([^"]*\)".*/\1/p' "$TRASH/logs/loop.jsonl"; }

# decision ITERATION: the journal's decision event of that iteration.
decision() { grep "\"event\":\"decision\",\"iteration\":$1," "$TRASH/logs/loop.jsonl"; }

# The branch's tip passes the tests (no BROKEN, no needs-helper without its helper).
branch_passes() {
	test "$(git -C "$TRASH/repo" show main:state.txt)" = ok &&
		! git -C "$TRASH/repo" cat-file -e main:needs-helper 2>/dev/null
}

# ---- 1. commit, then exit non-zero ----

test_expect_success '1: a commit before a failed agent attempt is set aside, never left on the branch' '
	new_repo broken-fail good &&
	run_loop --iterations 2 >out 2>err &&
	broken=$(git -C repo rev-parse refs/gdnctl/discarded/1) &&
	test "$(git -C repo log -1 --format=%s "$broken")" = "agent: broken 1" &&
	! git -C repo merge-base --is-ancestor "$broken" main &&
	git -C repo log --format=%s "$base..main" >subjects &&
	echo "agent: good 2" >expect && test_cmp expect subjects &&
	branch_passes &&
	decision 1 >d1 && test_grep "\"outcome\":\"failed\",\"failure\":\"agent\"" d1 &&
	test_grep "\"commits\":0," d1 &&
	user_work_intact
'

test_expect_success '1: --agent-failure-commits validate: the commit goes through the gate' '
	new_repo broken-fail good-fail &&
	run_loop --iterations 2 --agent-failure-commits validate >out 2>err &&
	grep "\"event\":\"validation\",\"iteration\":1,.*\"phase\":\"tests\"" logs/loop.jsonl >v1 &&
	test_grep "\"rc\":3" v1 &&
	branch_passes &&
	git -C repo log --format=%s "$base..main" >subjects &&
	test_grep "agent: good 2" subjects &&
	decision 2 >d2 && test_grep "\"commits\":1," d2 &&
	user_work_intact
'

# ---- 2. a failing commit and an untracked file ----

test_expect_success '2: a failing commit with a stray untracked file is rejected; the file is kept under refs' '
	new_repo broken-untracked &&
	run_loop --iterations 1 >out 2>err &&
	branch_passes &&
	test "$(git -C repo show refs/gdnctl/leftovers/1:stray.txt)" = stray &&
	test ! -e repo/stray.txt &&
	decision 1 >d1 && test_grep "\"failure\":\"hook\"" d1 && test_grep "\"commits\":0," d1 &&
	user_work_intact
'

test_expect_success '2: validation tests exactly the commits, not what the agent left uncommitted' '
	new_repo needs-helper &&
	run_loop --iterations 1 >out 2>err &&
	branch_passes &&
	test "$(git -C repo show refs/gdnctl/leftovers/1:helper.txt)" = help &&
	test ! -e repo/helper.txt &&
	grep "\"event\":\"validation\",\"iteration\":1,.*\"phase\":\"tests\"" logs/loop.jsonl >v1 &&
	test_grep "\"rc\":4" v1 &&
	user_work_intact
'

# ---- 3. history rewritten ----

test_expect_success '3: reset --hard HEAD~1 cannot bring a rejected change back' '
	new_repo good broken reset good &&
	run_loop --iterations 4 >out 2>err &&
	branch_passes &&
	decision 3 >d3 && test_grep "\"failure\":\"history\"" d3 &&
	git -C repo cat-file -e refs/gdnctl/discarded/3 &&
	git -C repo log --format=%s "$base..main" >subjects &&
	test_grep "agent: good 1" subjects && test_grep "agent: good 4" subjects &&
	test "$(git -C repo symbolic-ref HEAD)" = refs/heads/main &&
	user_work_intact
'

test_expect_success '3: checkout -b other and a commit: later iterations still land on the loop branch' '
	new_repo checkout good &&
	run_loop --iterations 2 >out 2>err &&
	test "$(git -C repo symbolic-ref HEAD)" = refs/heads/main &&
	git -C repo log --format=%s "$base..main" >subjects &&
	test_grep "agent: good 2" subjects &&
	if git -C repo rev-parse -q --verify other >/dev/null; then
		! git -C repo merge-base --is-ancestor main other
	fi &&
	if test "$ISOLATION" = in-place; then
		decision 1 >d1 && test_grep "\"failure\":\"history\"" d1 &&
		test "$(git -C repo log -1 --format=%s refs/gdnctl/discarded/1)" = "agent: other 1" &&
		test_grep ! "agent: other 1" subjects
	fi &&
	user_work_intact
'

# ---- 4. stash clear and gc ----

test_expect_isolation in-place '4: a user stash that could not be restored survives stash clear and gc --prune=now' '
	new_repo conflict stash-clear &&
	run_loop --iterations 2 --allow-no-commit >out 2>err &&
	run=$(run_id) &&
	test -z "$(git -C repo stash list)" &&
	ref=refs/gdnctl/stash/$run/1 &&
	test "$(git -C repo show "$ref:user.txt")" = "user change" &&
	test "$(git -C repo show "$ref:staged.txt")" = "user staged" &&
	test "$(git -C repo show "$ref^3:notes.txt")" = "user note" &&
	test "$(git -C repo show "$ref^3:udir/sub/file.txt")" = "user dir" &&
	test_grep "set aside: $ref" out
'

test_expect_isolation worktree '4: the user'"'"'s work is never stashed; a conflicting champion waits at its ref' '
	new_repo conflict stash-clear &&
	run_loop --iterations 2 --allow-no-commit >out 2>err &&
	run=$(run_id) &&
	test -z "$(git -C repo stash list)" &&
	user_work_intact &&
	test "$(git -C repo rev-parse main)" = "$base" &&
	test "$(git -C repo log -1 --format=%s "refs/gdnctl/champion/$run")" = "agent: edits user.txt 1" &&
	test_grep "champion_parked" logs/loop.jsonl &&
	test_grep "git merge --ff-only refs/gdnctl/champion/$run" out
'

# ---- 5. a stray edit to a file the user edited ----

test_expect_success '5: the agent edits a file the user edited, without committing: the user'"'"'s work comes back whole' '
	new_repo stray-edit good &&
	run_loop --iterations 2 >out 2>err &&
	user_work_intact &&
	test -z "$(git -C repo stash list)" &&
	git -C repo show refs/gdnctl/leftovers/1:user.txt >left &&
	test_grep "agent stray 1" left
'

test_expect_success '5: the agent deletes a file the user edited: the user'"'"'s work comes back whole' '
	new_repo stray-delete good &&
	run_loop --iterations 2 >out 2>err &&
	user_work_intact &&
	test -z "$(git -C repo stash list)"
'

# ---- 9. a stale index stat cache at --resume ----

# Start gdnctl, wait for the agent's mark, kill -9 gdnctl and its agent.
start_and_kill() {
	rm -f "$MARK"
	loop_args
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh \
		exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" "${ARGS[@]}" "$@" \
		>"$TRASH/bg.out" 2>"$TRASH/bg.err") &
	pid=$!
	test_wait_until 10 test -e "$MARK" || return 1
	kill -KILL "$pid" && wait "$pid"
	kill -KILL -- "-$(cat "$TRASH/agent.pid")" 2>/dev/null
	sleep 0.1
	return 0
}

test_expect_success '9: kill -9 mid-agent, every file touched: --resume finishes the run' '
	new_repo commit-hang good good &&
	start_and_kill --iterations 2 &&
	find repo logs -path "*/.git" -prune -o -type f -exec touch -d "2001-01-01 00:00" {} + &&
	run_loop --resume >out 2>err &&
	test_grep "\"event\":\"run_end\",\"reason\":\"completed\"" logs/loop.jsonl &&
	git -C repo log --format=%s "$base..main" >subjects &&
	printf "agent: good 2\nagent: good 3\n" >expect && sort subjects >actual && test_cmp expect actual &&
	user_work_intact &&
	test "$(git -C repo worktree list | wc -l)" = 1
'

# ---- 10. kill -9 while a throw-away worktree exists ----

# A git first in PATH that, when " ARGS " matches the case pattern $1,
# runs the real git, writes its pid to $MARK, then sleeps.
slow_git() {
	real=$(command -v git) &&
		mkdir -p "$TRASH/slowbin" &&
		cat >"$TRASH/slowbin/git" <<-EOF2 &&
			#!/bin/sh
			case " \$* " in
			$1)
				"$real" "\$@" || exit
				echo \$\$ >"$MARK.tmp" && mv "$MARK.tmp" "$MARK"
				exec sleep 60 ;;
			esac
			exec "$real" "\$@"
		EOF2
		chmod +x "$TRASH/slowbin/git"
}

test_expect_isolation in-place '10: kill -9 during the stash preflight: --resume removes its worktree' '
	new_repo good good &&
	slow_git "*\" worktree add \"*gdnctl-stash-preflight*" &&
	rm -f "$MARK" && loop_args &&
	{ (cd repo && PATH=$TRASH/slowbin:$PATH GDNCTL_TEST_COMMAND=./check.sh \
		exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" "${ARGS[@]}" --iterations 2 >../bg.out 2>../bg.err) & } &&
	pid=$! &&
	test_wait_until 20 test -s "$MARK" &&
	kill -KILL "$pid" && { wait "$pid"; :; } &&
	kill -KILL "$(cat "$MARK")" &&
	git -C repo worktree list >before && test_line_count = 2 before &&
	run_loop --resume >out 2>err &&
	git -C repo worktree list >after && test_line_count = 1 after &&
	: the preflight went under TMPDIR, and nothing of it is left there &&
	test_grep "$TMPDIR/gdnctl-stash-preflight-" before &&
	test -z "$(ls -d "$TMPDIR"/gdnctl-stash-preflight-* 2>/dev/null)" &&
	user_work_intact &&
	test "$(git -C repo rev-list --count "$base..main")" = 2
'

test_expect_isolation worktree '10: kill -9 while the agent'"'"'s worktree is made: --resume removes it, the run ends with one worktree' '
	new_repo good good &&
	slow_git "*\" worktree add \"*logs/worktree*" &&
	rm -f "$MARK" && loop_args &&
	{ (cd repo && PATH=$TRASH/slowbin:$PATH GDNCTL_TEST_COMMAND=./check.sh \
		exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" "${ARGS[@]}" --iterations 2 >../bg.out 2>../bg.err) & } &&
	pid=$! &&
	test_wait_until 20 test -s "$MARK" &&
	kill -KILL "$pid" && { wait "$pid"; :; } &&
	kill -KILL "$(cat "$MARK")" &&
	git -C repo worktree list >before && test_line_count = 2 before &&
	run_loop --resume >out 2>err &&
	git -C repo worktree list --porcelain >after &&
	test "$(grep -c "^worktree " after)" = 1 &&
	test_grep ! "^locked" after && test_grep ! "^prunable" after &&
	user_work_intact &&
	test "$(git -C repo rev-list --count "$base..main")" = 2
'

# ---- found by the chaos test (t0625) ----

# kill_in_promotion PATTERN: kill -9 gdnctl (and its git) while git runs
# with arguments matching PATTERN during the promotion of iteration 1 (its
# decision, naming the champion, is journaled first), then resume.
kill_in_promotion() {
	new_repo good good good &&
		slow_git "$1" &&
		rm -f "$MARK" && loop_args &&
		{ (cd repo && PATH=$TRASH/slowbin:$PATH GDNCTL_TEST_COMMAND=./check.sh \
			exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" "${ARGS[@]}" \
			--iterations 2 >../bg.out 2>../bg.err) & } &&
		pid=$! &&
		test_wait_until 20 test -s "$MARK" &&
		kill -KILL "$pid" && { wait "$pid"; :; } &&
		kill -KILL "$(cat "$MARK")" &&
		test_grep "\"event\":\"decision\",\"iteration\":1,.*\"champion\":" logs/loop.jsonl &&
		run_loop --resume >out 2>err
}

# Iteration 1 was decided: --resume finishes its promotion, then runs iteration 2; the
# user's checkout is whole (its files are the branch's, plus the user's edits).
decided_commit_promoted() {
	git -C repo log --format=%s "$base..main" >subjects &&
		printf "agent: good 2\nagent: good 1\n" >expect && test_cmp expect subjects &&
		test "$(grep -c "\"event\":\"decision\",\"iteration\":1," logs/loop.jsonl)" = 1 &&
		git -C repo diff --quiet HEAD -- work.txt &&
		user_work_intact
}

test_expect_isolation worktree 'kill -9 in a promotion, between the tree and the ref: --resume finishes it' '
	kill_in_promotion "*\" read-tree -m -u \"*" &&
	decided_commit_promoted
'

test_expect_isolation worktree 'kill -9 in a promotion, while the branch moves: --resume finishes it' '
	kill_in_promotion "*\" update-ref refs/heads/main \"*" &&
	decided_commit_promoted
'

test_done
