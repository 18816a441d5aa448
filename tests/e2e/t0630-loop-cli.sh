#!/usr/bin/env bash
# gdnctl loop / codex-loop: options, startup checks, --dry-run, --json,
# stop conditions, default prompt and presets, sync with a remote branch,
# hill-climb log stamping, stale git locks.
# ctest: isolation-both
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

AGENT_PID_FILE=$TRASH/agent.pid
agent commit-one <<'EOF2'
cp "$1" "$TRASH_PROMPT" 2>/dev/null
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2
agent log-entry <<'EOF2'
mkdir -p notes && printf '### Iteration 1 - try\n- Result: ok\n- Commit: (pending)\n' >>notes/log.md &&
git add notes/log.md && git commit -qm "agent: log entry"
EOF2
agent lock-and-hang <<'EOF2'
touch "$(git rev-parse --git-path index.lock)"
exec sleep 60
EOF2
agent edit-shared <<'EOF2'
echo local >>shared.txt && git add shared.txt && git commit -qm "agent: shared"
EOF2
export TRASH_PROMPT=$TRASH/prompt-seen
printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}}\n{{LOG_TAIL}}' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$TRASH/prompt-seen" && test_create_repo "$TRASH/repo"
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && gdnctl "${LOOP:-loop}" --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--log-dir "$TRASH/logs" --sleep-seconds 0 --retry-sleep-seconds 0 "$@")
}

test_expect_success 'loop and codex-loop are listed; help is the same for both' '
	gdnctl --help >out &&
	test_grep "^   loop  *run a coding agent" out &&
	test_grep "^   codex-loop  *same as '\''loop'\''" out &&
	gdnctl loop -h >a && gdnctl codex-loop -h >b && gdnctl help codex-loop >c &&
	test_cmp a b && test_cmp a c &&
	for o in --iterations --prompt-file --workdir --model --codex-bin --reasoning-effort \
		--codex-profile codex-ephemeral --search --show-file-updates --directive \
		--directive-file --directive-preset --sleep-seconds --post-check --post-check-policy \
		--max-failures --resilient --codex-retries --codex-timeout-seconds \
		--codex-idle-timeout-seconds --post-check-retries --retry-sleep-seconds --log-dir \
		--hillclimb-log-file --allow-dirty --dirty-policy --stash-restore-policy \
		--allow-no-commit --no-commit-policy --iteration-error-policy --sync-main-policy \
		--sync-main-remote --sync-main-branch --sync-main-conflict-policy --validation-mode \
		--perf-mode --agent --agent-cmd --agent-timeout --agent-idle-timeout --resume \
		--until-time --max-agent-minutes --stop-after-failures --json --dry-run; do
		grep -q -e "$o" a || { echo "missing $o"; exit 1; }
	done
'

test_expect_success '--iterations is required (exit 2)' '
	new_repo &&
	test_must_fail =2 run_loop commit-one --prompt-file "$TRASH/prompt.md" 2>err &&
	test_grep "option '\''--iterations'\'' is required" err
'

test_expect_success 'the gate is not built yet: only --validation-mode off and --perf-mode off' '
	new_repo &&
	test_must_fail =2 run_loop commit-one --iterations 1 --validation-mode required 2>err &&
	test_must_fail =2 run_loop commit-one --iterations 1 --perf-mode required 2>err &&
	run_loop commit-one --iterations 1 --prompt-file "$TRASH/prompt.md" \
		--validation-mode off --perf-mode off >out 2>err
'

test_expect_success 'startup checks: codex-loop keeps the original messages (exit 1), loop says error: (exit 2)' '
	new_repo &&
	LOOP=codex-loop test_must_fail =1 run_loop commit-one --iterations 1 --codex-retries -1 2>err &&
	test_grep -x "\[gdnctl\] --codex-retries must be >= 0." err &&
	LOOP=codex-loop test_must_fail =1 run_loop commit-one --iterations 1 \
		--codex-timeout-seconds 0 2>err &&
	test_grep -x "\[gdnctl\] --codex-timeout-seconds must be > 0 when set." err &&
	LOOP=codex-loop test_must_fail =1 run_loop commit-one --iterations 1 \
		--sync-main-policy once --sync-main-remote "" 2>err &&
	test_grep -x "\[gdnctl\] --sync-main-remote must be non-empty." err &&
	test_must_fail =2 run_loop commit-one --iterations 1 --codex-retries -1 2>err &&
	test_grep -x "\[gdnctl\] error: --codex-retries must be >= 0." err &&
	test_must_fail =2 run_loop commit-one --iterations 1 --codex-timeout-seconds 0 2>err &&
	test_grep -x "\[gdnctl\] error: --codex-timeout-seconds must be > 0 when set." err &&
	test_must_fail =2 run_loop commit-one --iterations 1 --sync-main-policy once \
		--sync-main-remote "" 2>err &&
	test_grep -x "\[gdnctl\] error: --sync-main-remote must be non-empty." err
'

test_expect_isolation in-place '--resilient announces itself and stashes a dirty tree' '
	new_repo && echo change >repo/README &&
	run_loop commit-one --iterations 1 --prompt-file "$TRASH/prompt.md" --resilient >out 2>err &&
	test_grep "resilient mode active: unlimited failures, stash dirty handling" out &&
	test_grep "stashed dirty tree" out &&
	test "$(cat repo/README)" = change
'

test_expect_success '--dry-run prints the prompt and the agent command, runs nothing' '
	new_repo &&
	run_loop commit-one --iterations 3 --prompt-file "$TRASH/prompt.md" --directive "be brief" \
		--dry-run >out 2>err &&
	test_grep "^Iteration 1 of 3$" out &&
	test_grep "^\[Directive 1\]$" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] \$ $AG/commit-one $TRASH/logs/iteration-001-prompt.txt$" out &&
	test ! -e logs &&
	test "$(git -C repo rev-list --count HEAD)" = 1
'

test_expect_success '--json: one summary document on stdout, progress on stderr' '
	new_repo &&
	run_loop commit-one --iterations 2 --prompt-file "$TRASH/prompt.md" --json >out 2>err &&
	python3 -c "
import json, sys
s = json.load(open(\"out\"))
assert s[\"schema\"] == \"gdnctl.loop_summary.v1\"
assert s[\"iterations\"] == 2 and s[\"commits\"] == 2 and s[\"exit_code\"] == 0
assert s[\"failures_by_kind\"][\"agent\"] == 0 and s[\"stop_reason\"] == \"completed\"
" &&
	test_grep "=== iteration 2/2 (commit-one) ===" err
'

test_expect_success '--until-time in the past: no iteration, reason journaled, exit 0' '
	new_repo &&
	run_loop commit-one --iterations 2 --prompt-file "$TRASH/prompt.md" \
		--until-time 2001-01-01T00:00:00Z >out 2>err &&
	test_grep "stopping before iteration 1: until-time" out &&
	test_grep "\"event\":\"stop\",\"iteration\":1,\"reason\":\"until-time\"" logs/loop.jsonl &&
	run_loop commit-one --iterations 2 --prompt-file "$TRASH/prompt.md" --until-time +1h >out 2>err &&
	test_grep "2 iterations, 2 commits" out &&
	test_must_fail =2 run_loop commit-one --iterations 2 --until-time tomorrow 2>err
'

test_expect_success '--max-agent-minutes: stops once the agent budget is spent' '
	new_repo &&
	run_loop commit-one --iterations 5 --prompt-file "$TRASH/prompt.md" \
		--max-agent-minutes 0.00001 >out 2>err &&
	test_grep "stopping before iteration 2: agent-budget" out &&
	test_grep "stopped: agent-budget (exit 0)" out
'

test_expect_success 'default prompt: the repository prompts/iteration.md; presets from session_directives/' '
	new_repo &&
	mkdir -p repo/prompts repo/session_directives &&
	echo "Repo prompt {{ITERATION}}" >repo/prompts/iteration.md &&
	printf "Focus preset text.\n" >repo/session_directives/focus.md &&
	git -C repo add prompts session_directives && git -C repo commit -qm prompts &&
	run_loop commit-one --iterations 1 --directive-preset focus >out 2>err &&
	printf "Repo prompt 1\n\nSession directives for this codex-loop run (must follow unless they conflict with tests/correctness):\n\n[Directive 1]\nFocus preset text.\n" >expect &&
	test_cmp expect prompt-seen &&
	test_must_fail =2 run_loop commit-one --iterations 1 --directive-preset nope 2>err &&
	test_grep "^\[gdnctl\] error: option .--directive-preset.: invalid choice .nope. (choose from .*focus, kernel-fusion, .*triangular-inversion)$" err &&
	test_must_fail =2 run_loop commit-one --iterations 1 --directive-preset ../prompts/iteration 2>err &&
	test_grep "invalid choice ..\./prompts/iteration." err
'

test_expect_success 'a Marin checkout: its prompt and presets are the defaults, the bundled ones the fallback' '
	new_repo &&
	mkdir -p repo/scripts/gdn/session_directives repo/sub &&
	echo "Marin prompt {{ITERATION}}" >repo/scripts/gdn/codex_iteration_prompt.md &&
	echo "Marin triangular text." >repo/scripts/gdn/session_directives/triangular-inversion.md &&
	echo "Marin CE text." >repo/scripts/gdn/session_directives/ce-backend-priority.md &&
	echo "A file at the root." >repo/notes.md &&
	git -C repo add scripts notes.md && git -C repo commit -qm marin &&
	(cd repo/sub && gdnctl loop --agent-cmd "$AG/commit-one {prompt_file}" --log-dir "$TRASH/logs" \
		--sleep-seconds 0 --iterations 1 --directive-preset triangular-inversion \
		--directive-preset ce-backend-priority --directive-preset kernel-fusion \
		--directive-file notes.md >"$TRASH/out" 2>"$TRASH/err") &&
	head -1 prompt-seen >actual && echo "Marin prompt 1" >expect && test_cmp expect actual &&
	test_grep -A1 "^\[Directive 1\]$" prompt-seen | test_grep "^Marin triangular text.$" &&
	test_grep -A1 "^\[Directive 2\]$" prompt-seen | test_grep "^Marin CE text.$" &&
	test_grep -A1 "^\[Directive 3\]$" prompt-seen | test_grep -v "^\[Directive" &&
	test_grep -A1 "^\[Directive 4\]$" prompt-seen | test_grep "^A file at the root.$" &&
	test_must_fail =2 run_loop commit-one --iterations 1 --directive-preset nope 2>err &&
	test_grep "invalid choice .nope. (choose from ce-backend-priority, kernel-fusion, .*triangular-inversion)" err
'

test_expect_success 'project.prompt_file and project.directives_dir name others' '
	mkdir -p repo/my/presets &&
	echo "My prompt {{ITERATION}}" >repo/my/prompt.md &&
	echo "My triangular text." >repo/my/presets/triangular-inversion.md &&
	printf "project:\n  prompt_file: my/prompt.md\n  directives_dir: my/presets\n" >repo/gdnctl.yaml &&
	git -C repo add my gdnctl.yaml && git -C repo commit -qm mine &&
	run_loop commit-one --iterations 1 --directive-preset triangular-inversion \
		--directive-preset ce-backend-priority >out 2>err &&
	head -1 prompt-seen >actual && echo "My prompt 1" >expect && test_cmp expect actual &&
	test_grep "^My triangular text.$" prompt-seen &&
	test_grep "^Marin CE text.$" prompt-seen &&
	(cd repo && test_must_fail =3 gdnctl -c project.prompt_file=gone.md loop --agent-cmd true \
		--iterations 1 --dry-run >"$TRASH/out" 2>"$TRASH/err") &&
	test_grep "^\[gdnctl\] error: -c: project.prompt_file .*gone.md.: No such file or directory$" err
'

test_expect_success '--agent-cmd implies --agent command; with another --agent it is a usage error' '
	new_repo &&
	(cd repo && PATH=/usr/bin:/bin GDNCTL_CODEX=/nonexistent/codex gdnctl loop \
		--agent-cmd "$AG/commit-one {prompt_file}" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--prompt-file "$TRASH/prompt.md" --iterations 1 >"$TRASH/out" 2>"$TRASH/err") &&
	test_grep "1 iteration, 1 commit," out &&
	test_must_fail =2 run_loop commit-one --iterations 1 --prompt-file "$TRASH/prompt.md" \
		--agent codex >out 2>err &&
	echo "[gdnctl] error: --agent-cmd runs a command of your own, which is --agent command; --agent codex does not take it" >expect &&
	test_cmp expect err
'

test_expect_success 'the hill-climb log: {{LOG_TAIL}}, and the placeholder is stamped and committed' '
	new_repo &&
	mkdir -p repo/notes && printf "# Log\n### Iteration 0 - base\n- Commit: none\n" >repo/notes/log.md &&
	git -C repo add notes && git -C repo commit -qm log &&
	(cd repo && gdnctl -c log_file=notes/log.md loop --agent command \
		--agent-cmd "$AG/log-entry {prompt_file}" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--prompt-file "$TRASH/prompt.md" --iterations 1 >"$TRASH/out" 2>"$TRASH/err") &&
	test_grep "^### Iteration 0 - base$" logs/iteration-001-prompt.txt &&
	agent_commit=$(git -C repo rev-parse HEAD~1) &&
	test_grep "stamped last hill-climb log entry with commit ${agent_commit:0:12}" out &&
	test_grep "^- Commit: $agent_commit$" repo/notes/log.md &&
	test "$(git -C repo log -1 --format=%s)" = "gdnctl: stamp hill-climb log entry with commit ${agent_commit:0:12}" &&
	test -z "$(git -C repo status --porcelain)" &&
	test_grep "\"event\":\"stamp\"" logs/loop.jsonl
'

setup_remote() {
	rm -rf "$TRASH/remote.git" "$TRASH/other" &&
		git init -q --bare -b main "$TRASH/remote.git" &&
		echo base >"$TRASH/repo/shared.txt" && git -C "$TRASH/repo" add shared.txt &&
		git -C "$TRASH/repo" commit -qm shared &&
		git -C "$TRASH/repo" remote add origin "$TRASH/remote.git" &&
		git -C "$TRASH/repo" push -q origin main &&
		git clone -q "$TRASH/remote.git" "$TRASH/other"
}

test_expect_success 'sync once: fetch then merge origin/main before iteration 1 only' '
	new_repo && setup_remote &&
	echo upstream >other/upstream.txt && git -C other add upstream.txt &&
	git -C other commit -qm upstream && git -C other push -q origin main &&
	run_loop commit-one --iterations 2 --prompt-file "$TRASH/prompt.md" \
		--sync-main-policy once >out 2>err &&
	test_grep "syncing branch with origin/main" out &&
	test "$(grep -c "syncing branch" out)" = 1 &&
	test_grep "\$ git fetch origin main" out &&
	test_grep "\$ git merge --no-edit origin/main" out &&
	test -e repo/upstream.txt &&
	test_grep "2 iterations, 2 commits" out
'

test_expect_success 'sync conflict: fail aborts the merge (exit 1, codex-loop: 2); skip warns and goes on' '
	new_repo && setup_remote &&
	echo upstream >>other/shared.txt && git -C other commit -qam upstream &&
	git -C other push -q origin main &&
	echo mine >>repo/shared.txt && git -C repo commit -qam mine &&
	LOOP=codex-loop test_must_fail =2 run_loop commit-one --iterations 1 \
		--prompt-file "$TRASH/prompt.md" --sync-main-policy each-iteration >out 2>err &&
	test_grep "failed to merge origin/main into current branch (exit=1). Resolve conflicts and rerun." err &&
	test_must_fail =1 run_loop commit-one --iterations 1 --prompt-file "$TRASH/prompt.md" \
		--sync-main-policy each-iteration >out 2>err &&
	test_grep "failed to merge origin/main into current branch (exit=1). Resolve conflicts and rerun." err &&
	test_grep "\$ git merge --abort" out &&
	test -z "$(git -C repo status --porcelain)" &&
	run_loop commit-one --iterations 1 --prompt-file "$TRASH/prompt.md" \
		--sync-main-policy each-iteration --sync-main-conflict-policy skip >out 2>err &&
	test_grep "WARNING: sync-main merge conflict detected; continuing without syncing from main this iteration due policy=skip." err &&
	test_grep "1 iteration, 1 commit" out
'

test_expect_success 'a lock left by the killed agent is removed, the loop goes on' '
	new_repo && echo change >repo/README &&
	test_must_fail =124 run_loop lock-and-hang --iterations 1 --prompt-file "$TRASH/prompt.md" \
		--agent-idle-timeout 1s --agent-kill-grace 200ms --dirty-policy stash >out 2>err &&
	test_grep "WARNING: removed stale .*index.lock.* left by a killed git process" err &&
	test ! -e repo/.git/index.lock && test ! -e repo/.git/worktrees/worktree/index.lock &&
	test "$(cat repo/README)" = change &&
	test -z "$(git -C repo stash list)"
'

test_expect_success 'codex-loop runs the same engine' '
	new_repo &&
	(cd repo && gdnctl codex-loop --agent command --agent-cmd "$AG/commit-one {prompt_file}" \
		--log-dir "$TRASH/logs" --sleep-seconds 0 --prompt-file "$TRASH/prompt.md" \
		--iterations 1 >"$TRASH/out" 2>"$TRASH/err") &&
	test_grep "1 iteration, 1 commit" out
'

test_expect_success 'the default log dir lies in the git directory and does not make the tree dirty' '
	new_repo &&
	(cd repo && gdnctl loop --agent command --agent-cmd "$AG/commit-one {prompt_file}" \
		--sleep-seconds 0 --prompt-file "$TRASH/prompt.md" --iterations 2 >"$TRASH/out" 2>"$TRASH/err") &&
	br=$(git -C repo symbolic-ref --short HEAD) &&
	test -s "repo/.git/gdnctl/$br/loop.jsonl" &&
	test_grep "journal: $TRASH/repo/.git/gdnctl/$br/loop.jsonl" out &&
	test ! -e repo/.agents &&
	test -z "$(git -C repo status --porcelain)"
'

test_done
