#!/usr/bin/env bash
# gdnctl loop with fake agents (shell scripts run by the command driver):
# for each, the repository, the stash list, the journal and the exit code.
# ctest: isolation-both
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

# Every agent records its pid (= its process group; AGENT_PID_FILE, lib-loop.sh) and appends to a file outside the repo.
AGENT_PID_FILE=$TRASH/agent.pid
agent commit-one <<'EOF2'
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
echo "committed one change"
EOF2
agent commit-two <<'EOF2'
echo a >>work.txt && git add work.txt && git commit -qm "agent: first" &&
echo b >>work.txt && git add work.txt && git commit -qm "agent: second"
EOF2
agent no-change <<'EOF2'
echo "nothing to do"
EOF2
agent dirty <<'EOF2'
echo leftover >"leftover-$(date +%s%N).txt"
echo "left a dirty tree"
EOF2
agent fail <<'EOF2'
echo "agent failing" >&2
exit 7
EOF2
agent hang <<'EOF2'
exec sleep 60
EOF2
agent chatty <<'EOF2'
while :; do echo spam; done
EOF2
agent grandchild <<'EOF2'
(trap '' INT TERM; echo $$ >"$GRANDCHILD_PID"; exec sleep 60) &
(trap '' INT TERM; sh -c 'echo $$ >"$GRANDCHILD_PID.2"; trap "" INT TERM; sleep 60') &
wait
EOF2
agent reset-back <<'EOF2'
git reset -q --hard HEAD~1
EOF2
agent own-stash <<'EOF2'
echo mine >agent-stash.txt && git stash push -q -u -m agent-own-stash &&
echo x >>work.txt && git add work.txt && git commit -qm "agent: after own stash"
EOF2
agent conflict <<'EOF2'
echo "agent version" >user.txt && git add user.txt && git commit -qm "agent: edits user.txt"
EOF2
agent edit-uncommitted <<'EOF2'
echo "agent edit" >user.txt
EOF2
agent ignored-clash <<'EOF2'
echo notes.txt >>"$(git rev-parse --git-path info/exclude)" && echo "agent note" >notes.txt
EOF2
agent prompt-copy <<'EOF2'
cp "$1" "$PROMPT_COPY"
echo c >>work.txt && git add work.txt && git commit -qm "agent: copy"
EOF2

printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}} at {{HEAD_SHA}} on {{BRANCH}}\n' >"$TRASH/prompt.md"

# A repository with a committed user.txt that the user has changed, and an untracked note.
new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(cd "$TRASH/repo" && echo base >user.txt && git add user.txt && git commit -qm base) &&
		if [ "${1:-}" = dirty ]; then
			echo "user change" >"$TRASH/repo/user.txt" &&
				echo "user note" >"$TRASH/repo/notes.txt"
		fi
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && gdnctl "${LOOP:-loop}" --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 "$@")
}

user_change_intact() {
	test "$(cat "$TRASH/repo/user.txt")" = "user change" &&
		test "$(cat "$TRASH/repo/notes.txt")" = "user note"
}

# Alive: the process exists and is not a zombie (dead, waiting for a parent that may never reap it).
alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$s" ] && [ "${s#Z}" = "$s" ]
}

events() { sed -n 's/.*"event":"\([a-z_]*\)".*/\1/p' "$TRASH/logs/loop.jsonl"; }

test_expect_isolation in-place 'commit one change: exit 0, one commit, user change restored, journal' '
	new_repo dirty &&
	run_loop commit-one --iterations 1 --dirty-policy stash >out 2>err &&
	test "$(git -C repo rev-list --count HEAD)" = 3 &&
	user_change_intact &&
	test -z "$(git -C repo stash list)" &&
	test_grep "stashed dirty tree: gdnctl-loop: .* iteration 1" out &&
	test_grep "loop summary: run .*: 1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	events >ev &&
	for e in run_start iteration_start stash_saving stash_saved agent_start agent_end head \
		decision stash_restoring stash_restored iteration_end run_end; do
		test_grep -x "$e" ev || exit 1
	done &&
	test_grep "\"commits\":1,\"ids\":\\[\"$(git -C repo rev-parse HEAD)\"\\]" logs/loop.jsonl &&
	test_grep "committed one change" logs/iteration-001-transcript.log &&
	test -s logs/iteration-001-prompt.txt
'

test_expect_isolation worktree 'commit one change: the branch fast-forwards, the user change stays, journal' '
	new_repo dirty &&
	git -C repo add notes.txt && mkdir repo/udir && echo u >repo/udir/f &&
	run_loop commit-one --iterations 1 >out 2>err &&
	test "$(git -C repo rev-list --count HEAD)" = 3 &&
	test "$(git -C repo log -1 --format=%s)" = "agent: one change" &&
	user_change_intact && test "$(cat repo/udir/f)" = u &&
	test "$(git -C repo diff --cached --name-only)" = notes.txt &&
	test_grep "^one " repo/work.txt &&
	test -z "$(git -C repo stash list)" &&
	test_grep "loop summary: run .*: 1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	test_grep "champion: $(git -C repo rev-parse --short=12 HEAD)" out &&
	events >ev &&
	for e in run_start worktree_add iteration_start agent_start agent_end head promote \
		branch_moved decision iteration_end worktree_removed run_end; do
		test_grep -x "$e" ev || exit 1
	done &&
	test_grep ! stash_saving ev &&
	test "$(git -C repo worktree list | wc -l)" = 1 &&
	test "$(git -C repo for-each-ref --format=%\(objectname\) "refs/gdnctl/champion/")" = "$(git -C repo rev-parse HEAD)"
'

test_expect_success 'two commits in one iteration are both recognised' '
	new_repo &&
	run_loop commit-two --iterations 1 >out 2>err &&
	test_grep "1 iteration, 2 commits" out &&
	test_grep "\"descendant\":true,\"commits\":2" logs/loop.jsonl
'

test_expect_success 'no change: the original message; exit 1 (codex-loop: the original 3)' '
	new_repo &&
	test_must_fail =1 run_loop no-change --iterations 2 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] Iteration did not produce a new commit. Use --allow-no-commit or set --no-commit-policy count-failure/continue.$" err &&
	test_grep "\"failure\":\"no_commit\"" logs/loop.jsonl &&
	test_grep ! "iteration 2/2" out &&
	LOOP=codex-loop test_must_fail =3 run_loop no-change --iterations 2 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] Iteration did not produce a new commit. Use --allow-no-commit or set --no-commit-policy count-failure/continue.$" err &&
	test_grep ! "iteration 2/2" out
'

test_expect_success 'no change with --no-commit-policy continue: exit 0, message says so' '
	new_repo &&
	run_loop no-change --iterations 2 --no-commit-policy continue >out 2>err &&
	test_grep "Continuing due to policy=continue." err &&
	test_grep "iteration 2/2" out
'

test_expect_success 'no change with count-failure: the second failure exceeds --max-failures 1' '
	new_repo &&
	test_must_fail =1 run_loop no-change --iterations 5 --no-commit-policy count-failure \
		--max-failures 1 >out 2>err &&
	test_grep "iteration 2/5" out &&
	test_grep ! "iteration 3/5" out &&
	test_grep "\"failures\":2" logs/loop.jsonl
'

test_expect_success '--allow-no-commit accepts an iteration without a commit' '
	new_repo &&
	run_loop no-change --iterations 1 --allow-no-commit >out 2>err
'

test_expect_isolation in-place 'dirty tree with the default --dirty-policy fail: refused before the run (exit 2)' '
	new_repo dirty &&
	test_must_fail =2 run_loop commit-one --iterations 1 >out 2>err &&
	echo "[gdnctl] error: the working tree '"'"'$TRASH/repo'"'"' is dirty: commit or stash the changes, or rerun with --allow-dirty or --dirty-policy stash" >expect &&
	test_cmp expect err &&
	test ! -e logs/loop.jsonl &&
	test_must_fail =2 run_loop commit-one --iterations 1 --dry-run >out 2>err &&
	test_cmp expect err &&
	user_change_intact &&
	test "$(git -C repo rev-list --count HEAD)" = 2
'

test_expect_isolation in-place 'codex-loop: a dirty tree is the original iteration error, exit 2' '
	new_repo dirty &&
	LOOP=codex-loop test_must_fail =2 run_loop commit-one --iterations 1 >out 2>err &&
	test_grep "iteration 1 raised: Working tree is dirty before starting the iteration. Commit/stash or rerun with --allow-dirty or --dirty-policy stash." err &&
	user_change_intact &&
	test "$(git -C repo rev-list --count HEAD)" = 2
'

test_expect_isolation worktree 'a dirty user tree is no obstacle: the agent works elsewhere' '
	new_repo dirty &&
	run_loop commit-one --iterations 1 >out 2>err &&
	user_change_intact &&
	test "$(git -C repo rev-list --count HEAD)" = 3
'

test_expect_success 'agent leaves a dirty tree: warned, set aside under refs/gdnctl/leftovers' '
	new_repo dirty &&
	run_loop dirty --iterations 2 --dirty-policy stash --allow-no-commit >out 2>err &&
	test_grep "WARNING: the agent left uncommitted changes" err &&
	user_change_intact &&
	! ls repo/leftover-*.txt &&
	git -C repo for-each-ref --format="%(refname)" refs/gdnctl/leftovers/ >refs &&
	test_line_count = 2 refs &&
	git -C repo ls-tree --name-only refs/gdnctl/leftovers/1 >files &&
	test_grep "^leftover-" files &&
	test_grep "set aside: refs/gdnctl/leftovers/1 (uncommitted changes the agent left)" out &&
	test -z "$(git -C repo stash list)" &&
	test_grep "\"event\":\"dirty_after\"" logs/loop.jsonl &&
	test_grep "\"event\":\"ref_kept\".*\"kind\":\"leftovers\"" logs/loop.jsonl
'

test_expect_success 'agent exits non-zero: exit 4 (codex-loop: its exit code), the original message, stash restored' '
	new_repo dirty &&
	LOOP=codex-loop test_must_fail =7 run_loop fail --iterations 3 --dirty-policy stash >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] codex iteration failed with exit code 7$" err &&
	test_must_fail =4 run_loop fail --iterations 3 --dirty-policy stash >out 2>err &&
	test_grep "stopped: failure (exit 4)" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] codex iteration failed with exit code 7$" err &&
	user_change_intact &&
	test -z "$(git -C repo stash list)" &&
	test_grep "\"event\":\"agent_end\",\"iteration\":1,\"attempt\":1,\"rc\":7" logs/loop.jsonl
'

test_expect_success '--codex-retries 2: three attempts, retry messages' '
	new_repo &&
	test_must_fail =4 run_loop fail --iterations 1 --codex-retries 2 >out 2>err &&
	test_grep "codex iteration command failed (attempt 1/3, rc=7); retrying." err &&
	test_grep "codex iteration command failed (attempt 2/3, rc=7); retrying." err &&
	test "$(grep -c "\"event\":\"agent_start\"" logs/loop.jsonl)" = 3
'

test_expect_success 'agent failures under --max-failures -1 and --stop-after-failures 2: exit 1' '
	new_repo &&
	test_must_fail =1 run_loop fail --iterations 5 --max-failures -1 --stop-after-failures 2 >out 2>err &&
	test_grep "stopping before iteration 3: consecutive-failures" out &&
	test_grep "stopped: consecutive-failures (exit 1)" out &&
	test_grep "\"event\":\"stop\",\"iteration\":3,\"reason\":\"consecutive-failures\"" logs/loop.jsonl
'

test_expect_success 'hang with no output: idle timeout kills it, exit 124' '
	new_repo dirty &&
	start=$(date +%s) &&
	test_must_fail =124 run_loop hang --iterations 1 --agent-idle-timeout 1s \
		--agent-kill-grace 500ms --dirty-policy stash >out 2>err &&
	test $(($(date +%s) - start)) -lt 20 &&
	! alive "$(cat agent.pid)" &&
	user_change_intact &&
	test_grep "codex iteration failed with exit code 124" err
'

test_expect_success 'print forever: the runtime timeout kills it, exit 124' '
	new_repo &&
	test_must_fail =124 run_loop chatty --iterations 1 --codex-timeout-seconds 1 \
		--agent-kill-grace 500ms >out 2>err &&
	! alive "$(cat agent.pid)" &&
	test -s logs/iteration-001-transcript.log
'

test_expect_success 'grandchildren that ignore SIGINT/SIGTERM die with the agent group' '
	new_repo &&
	export GRANDCHILD_PID=$TRASH/gc.pid &&
	test_must_fail =124 run_loop grandchild --iterations 1 --agent-timeout 1s \
		--agent-kill-grace 300ms >out 2>err &&
	test -s gc.pid && test -s gc.pid.2 &&
	! alive "$(cat gc.pid)" &&
	! alive "$(cat gc.pid.2)"
'

test_expect_success 'agent resets HEAD backwards: set aside, the branch put back, a history failure' '
	new_repo &&
	before=$(git -C repo rev-parse HEAD) &&
	test_must_fail =1 run_loop reset-back --iterations 1 --max-failures 0 >out 2>err &&
	test_grep "WARNING: HEAD moved from ${before:0:12} to .* which does not descend from it" err &&
	test_grep "\"descendant\":false,\"commits\":0" logs/loop.jsonl &&
	test_grep "\"failure\":\"history\"" logs/loop.jsonl &&
	test "$(git -C repo rev-parse HEAD)" = "$before" &&
	test "$(git -C repo rev-parse refs/gdnctl/discarded/1)" = "$(git -C repo rev-parse HEAD~1)" &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_isolation in-place 'agent pushes its own stash: ours is restored by id, theirs is left' '
	new_repo dirty &&
	run_loop own-stash --iterations 1 --dirty-policy stash >out 2>err &&
	user_change_intact &&
	git -C repo stash list >stashes &&
	test_line_count = 1 stashes &&
	test_grep "agent-own-stash" stashes
'

test_expect_isolation worktree 'agent edits the file the user changed: the champion waits at its ref' '
	new_repo dirty &&
	before=$(git -C repo rev-parse HEAD) &&
	run_loop conflict --iterations 1 >out 2>err &&
	user_change_intact &&
	test "$(git -C repo rev-parse HEAD)" = "$before" &&
	ref=$(git -C repo for-each-ref --format="%(refname)" refs/gdnctl/champion/) &&
	test "$(git -C repo show "$ref:user.txt")" = "agent version" &&
	test_grep "bring it in with .git merge --ff-only $ref." out &&
	test_grep "\"event\":\"champion_parked\"" logs/loop.jsonl
'

test_expect_isolation in-place 'agent edits the file the user changed: preflight conflict, stash kept' '
	new_repo dirty &&
	run_loop conflict --iterations 1 --dirty-policy stash >out 2>err &&
	test "$(cat repo/user.txt)" = "agent version" &&
	git -C repo stash list >stashes &&
	test_line_count = 1 stashes &&
	test_grep "gdnctl-loop: .* iteration 1" stashes &&
	sha=$(git -C repo rev-parse "stash@{0}") &&
	test "$(git -C repo show "$sha:user.txt")" = "user change" &&
	test "$(git -C repo show "$sha^3:notes.txt")" = "user note" &&
	test_grep "stash restore skipped because preflight detected conflicts; stash kept for manual recovery ($sha, message=gdnctl-loop: .* iteration 1)." err &&
	test_grep "stash kept for manual recovery: $sha" out &&
	test_grep "\"event\":\"stash_kept\".*\"sha\":\"$sha\".*\"reason\":\"conflict\"" logs/loop.jsonl &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_isolation in-place 'conflict with --stash-restore-policy fail: iteration error, exit 1 (codex-loop: 2)' '
	new_repo dirty &&
	LOOP=codex-loop test_must_fail =2 run_loop conflict --iterations 2 --dirty-policy stash \
		--stash-restore-policy fail >out 2>err &&
	test_grep "Failed to restore stashed dirty tree" err &&
	new_repo dirty &&
	test_must_fail =1 run_loop conflict --iterations 2 --dirty-policy stash \
		--stash-restore-policy fail >out 2>err &&
	test_grep "Failed to restore stashed dirty tree" err &&
	test_grep ! "iteration 2/2" out
'

test_expect_isolation in-place 'a failing restore does not turn an exit into "continue" (a bug of the original)' '
	new_repo dirty &&
	LOOP=codex-loop test_must_fail =3 run_loop ignored-clash --iterations 3 \
		--dirty-policy stash --stash-restore-policy fail --iteration-error-policy continue \
		>out 2>err &&
	test_grep "stash restore failed; stash was kept for manual recovery" err &&
	test_grep "iteration 1 raised: Failed to restore stashed dirty tree" err &&
	test_grep ! "iteration 2/3" out &&
	sha=$(git -C repo rev-parse "stash@{0}") &&
	test "$(git -C repo show "$sha:user.txt")" = "user change"
'

test_expect_success 'the prompt: placeholders, directives in the original framing' '
	new_repo &&
	export PROMPT_COPY=$TRASH/prompt-copy &&
	echo "from a file" >dfile &&
	run_loop prompt-copy --iterations 1 --directive "  inline one  " --directive-file "$TRASH/dfile" \
		--directive "" >out 2>err &&
	head=$(git -C repo rev-parse HEAD~1) &&
	{
		printf "Iteration 1 of 1 at %s on main\n\n" "$head" &&
		printf "Session directives for this codex-loop run (must follow unless they conflict with tests/correctness):\n\n" &&
		printf "[Directive 1]\nfrom a file\n[Directive 2]\ninline one\n"
	} >expect &&
	test_cmp expect prompt-copy &&
	test_cmp expect logs/iteration-001-prompt.txt &&
	test_grep "session directives: 2 loaded" out
'

test_expect_success 'post-check failure: exit 1 (codex-loop: its exit code) and the original message' '
	new_repo &&
	LOOP=codex-loop test_must_fail =5 run_loop commit-one --iterations 2 --post-check "exit 5" \
		>out 2>err &&
	test_grep "post-check failed. Use --post-check-policy count-failure/continue to avoid exiting." err &&
	new_repo &&
	test_must_fail =1 run_loop commit-one --iterations 2 --post-check "exit 5" >out 2>err &&
	test_grep "post-check failed. Use --post-check-policy count-failure/continue to avoid exiting." err &&
	test_grep "\"event\":\"check\",\"iteration\":1,\"command\":\"exit 5\",\"attempt\":1,\"rc\":5" logs/loop.jsonl
'

test_expect_success 'post-check retries, then continue; a passing post-check runs in the workdir' '
	new_repo &&
	run_loop commit-one --iterations 1 --post-check "false" --post-check-retries 1 \
		--post-check-policy continue --post-check "pwd >\"$TRASH/pc-dir\"" >out 2>err &&
	test_grep "post-check failed (attempt 1/2) for command: false" err &&
	test_grep "Continuing due to policy=continue." err &&
	test ! -e pc-dir &&
	run_loop commit-one --iterations 1 --post-check "pwd >\"$TRASH/pc-dir\"" >out 2>err &&
	if test "$ISOLATION" = worktree; then where=$TRASH/logs/worktree; else where=$TRASH/repo; fi &&
	test "$(cat pc-dir)" = "$where"
'

test_expect_success 'a missing agent program: iteration error policy' '
	new_repo &&
	test_must_fail run_loop nonexistent --iterations 1 >out 2>err &&
	test_grep "not found" err
'

test_done
