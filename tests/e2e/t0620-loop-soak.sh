#!/usr/bin/env bash
# Soak: a long run with a random mix of fake agents and a user's
# uncommitted change present at the start; gdnctl is killed with SIGKILL at
# random moments and resumed each time. At the end the user's change is
# intact (in the tree, or in a stash the summary points to) and every commit
# on the branch came from a completed iteration.
#
# GDNCTL_SOAK_SEED fixes the random seed (printed), GDNCTL_SOAK_ITERATIONS
# the number of iterations (default 100; 20 under valgrind), GDNCTL_SOAK_KILLS
# the number of kills (default 25).
# ctest: isolation-both
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip_all "python3 is needed to check the journal"

SEED=${GDNCTL_SOAK_SEED:-$(($(date +%s) % 32768))}
ITER=${GDNCTL_SOAK_ITERATIONS:-100}
case "${GDNCTL_TEST_EXEC_PREFIX:-}" in *valgrind*) ITER=${GDNCTL_SOAK_ITERATIONS:-20} ;; esac
KILLS=${GDNCTL_SOAK_KILLS:-25}
RANDOM=$SEED
say "soak seed $SEED (GDNCTL_SOAK_SEED=$SEED reproduces the agent plan and the kill times), $ITER iterations, $KILLS kills"

modes=(commit-one commit-two no-change dirty fail reset-back own-stash conflict)
for i in $(seq 1 3000); do echo "${modes[$((RANDOM % ${#modes[@]}))]}"; done >plan
echo 0 >calls

cat >agent <<EOF2
#!/bin/sh
echo \$\$ >"$TRASH/agent.pid"
n=\$((\$(cat "$TRASH/calls") + 1)); echo \$n >"$TRASH/calls"
mode=\$(sed -n "\${n}p" "$TRASH/plan"); mode=\${mode:-commit-one}
echo "agent call \$n: \$mode"
case \$mode in
commit-one) echo "\$n" >>work.txt && git add work.txt && git commit -qm "agent call \$n" ;;
commit-two) echo "\$n a" >>work.txt && git add work.txt && git commit -qm "agent call \$n (1/2)" &&
	echo "\$n b" >>work.txt && git add work.txt && git commit -qm "agent call \$n (2/2)" ;;
no-change) : ;;
dirty) echo "\$n" >"leftover-\$n.txt" ;;
fail) exit 3 ;;
reset-back) [ "\$(git rev-list --count HEAD)" -gt 2 ] && git reset -q --hard HEAD~1 ;;
own-stash) echo "\$n" >"own-\$n.txt" && git stash push -q -u -m "agent own stash \$n" -- "own-\$n.txt" &&
	echo "\$n" >>work.txt && git add work.txt && git commit -qm "agent call \$n after own stash" ;;
conflict) echo "agent \$n" >user.txt && git add user.txt && git commit -qm "agent call \$n edits user.txt" ;;
esac
exit 0
EOF2
chmod +x agent
printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}} at {{HEAD_SHA}}\n' >prompt.md

test_create_repo repo &&
	(cd repo && echo base >user.txt && git add user.txt && git commit -qm base) &&
	echo "user change" >repo/user.txt && echo "user note" >repo/notes.txt
base=$(git -C repo rev-parse HEAD)

ARGS=(--agent command --agent-cmd "$TRASH/agent {prompt_file}" --prompt-file "$TRASH/prompt.md"
	--log-dir "$TRASH/logs" --resilient --sleep-seconds 0 --retry-sleep-seconds 0
	--agent-kill-grace 200ms)

start=$(date +%s)
kills=0
sessions=0
final_rc=
while :; do
	sessions=$((sessions + 1))
	# a kill before the journal's first line leaves it empty: nothing to resume yet
	if [ -s logs/loop.jsonl ]; then more=(--resume); else more=(--iterations "$ITER"); fi
	(cd repo && exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" "${ARGS[@]}" "${more[@]}" \
		>>"$TRASH/out" 2>>"$TRASH/err") &
	pid=$!
	if [ "$kills" -lt "$KILLS" ]; then
		sleep "0.$((RANDOM % 6))$((RANDOM % 10))"
		if kill -KILL "$pid" 2>/dev/null; then
			wait "$pid" 2>/dev/null
			kills=$((kills + 1))
			# the agent runs in its own process group and survives gdnctl
			[ -s agent.pid ] && kill -KILL -- "-$(cat agent.pid)" 2>/dev/null
			sleep 0.1
			continue
		fi
	fi
	wait "$pid"
	final_rc=$?
	break
done
say "$sessions sessions, $kills kills, $(($(date +%s) - start))s, $(cat calls) agent calls"

test_expect_success 'the last session finished the run' '
	test "$final_rc" = 0 &&
	test_grep "\"event\":\"run_end\",\"reason\":\"completed\"" logs/loop.jsonl
'

test_expect_success 'the summary (resuming a finished run) counts every iteration once' '
	(cd repo && "$GDNCTL_BIN" loop "${ISOLATION_ARGS[@]}" "${ARGS[@]}" --resume --json >"$TRASH/summary.json" 2>"$TRASH/summary.err") &&
	python3 - "$ITER" <<-\EOF2
	import json, sys
	s = json.load(open("summary.json"))
	assert s["schema"] == "gdnctl.loop_summary.v1", s
	assert s["iterations"] == int(sys.argv[1]), s
	assert s["stop_reason"] == "completed" and s["exit_code"] == 0, s
	EOF2
'

test_expect_success 'the user change is intact: in the tree or in a stash the summary points to' '
	found_user=no found_note=no &&
	if [ "$(cat repo/user.txt 2>/dev/null)" = "user change" ]; then found_user=tree; fi &&
	if [ "$(cat repo/notes.txt 2>/dev/null)" = "user note" ]; then found_note=tree; fi &&
	for sha in $(python3 -c "import json; [print(k[\"sha\"]) for k in json.load(open(\"summary.json\"))[\"stashes_kept\"]]"); do
		if [ "$(git -C repo show "$sha:user.txt" 2>/dev/null)" = "user change" ]; then found_user=$sha; fi
		if [ "$(git -C repo show "$sha^3:notes.txt" 2>/dev/null)" = "user note" ]; then found_note=$sha; fi
	done &&
	say "user.txt: $found_user, notes.txt: $found_note" &&
	test "$found_user" != no && test "$found_note" != no
'

test_expect_success 'every commit on the branch came from a completed iteration' '
	git -C repo rev-list "$base..HEAD" >branch &&
	python3 - <<-\EOF2
	import json
	allowed, pending = set(), {}
	for line in open("logs/loop.jsonl"):
	    if not line.endswith("\n"):
	        continue
	    e = json.loads(line)
	    if e["event"] == "head":
	        pending[e["iteration"]] = e["ids"]
	    elif e["event"] == "decision":
	        allowed.update(pending.pop(e["iteration"], []))
	branch = [l.strip() for l in open("branch") if l.strip()]
	bad = [c for c in branch if c not in allowed]
	assert not bad, "commits not from a completed iteration: %s" % bad
	print("# %d commits on the branch, all from completed iterations" % len(branch))
	EOF2
'

test_expect_success 'every gdnctl stash left is one the summary reports' '
	git -C repo stash list --format="%H %gs" | grep "gdnctl-loop:" | cut -d" " -f1 >ours || : &&
	while read -r sha; do
		grep -q "$sha" summary.json || { echo "unreported stash $sha"; exit 1; }
	done <ours
'

test_expect_success 'no agent or gdnctl process is left' '
	! kill -0 "$(cat agent.pid)" 2>/dev/null ||
		test "$(ps -o stat= -p "$(cat agent.pid)" | cut -c1)" = Z
'

test_done
