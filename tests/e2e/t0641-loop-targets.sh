#!/usr/bin/env bash
# gdnctl loop --workers N --targets M (issue 27): agents and validation
# targets apart. With more targets than agents, N agents at most think at
# once and up to M candidates validate at once; with fewer, at most M
# validate at once, each on one of targets 1..M (GDNCTL_TARGET, the
# journal's `target` event). Bad values exit 2.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

command -v python3 >/dev/null || skip_all "python3 is needed to read the journal"
CHECK=$(cd "$(dirname "$0")" && pwd)/pipeline_check.py

# quick: an agent that commits at once (validation is the slow part).
agent quick <<'EOF2'
it=$(sed -n 's/^Iteration \([0-9]*\).*/\1/p' "$1" | head -n 1)
sleep 0.3
echo "$it" >"q-$it.txt" && git add . && git commit -qm "agent: q-$it"
EOF2
# slow: an agent that thinks for long (agents are the slow part).
agent slow <<'EOF2'
it=$(sed -n 's/^Iteration \([0-9]*\).*/\1/p' "$1" | head -n 1)
sleep 1.5
echo "$it" >"s-$it.txt" && git add . && git commit -qm "agent: s-$it"
EOF2
# sleepy: an agent that thinks until it is stopped.
agent sleepy <<'EOF2'
sleep 60
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

# new_repo [SECONDS]: the validation (./check.sh) takes SECONDS (default 1.5).
new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$TRASH/targets.log" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				printf '#!/bin/sh\necho "$GDNCTL_TARGET" >>"%s/targets.log"\nsleep %s\n' "$TRASH" "${1:-1.5}" >check.sh &&
				chmod +x check.sh && git add . && git commit -qm seed
		)
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh \
		gdnctl loop --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --validation-mode required "$@")
}

# "AGENTS VALIDATIONS": the most agents and validations at work at one time.
at_once() {
	python3 - logs/loop.jsonl <<-\EOF2
	import json, sys
	from datetime import datetime
	def ms(ts):
	    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000
	pts = []
	for line in open(sys.argv[1]):
	    e = json.loads(line)
	    if e["event"] in ("agent_start", "agent_end"):
	        pts.append((ms(e["ts"]), 1 if e["event"] == "agent_start" else -1, 0))
	    elif e["event"] == "validation":
	        t = ms(e["ts"])
	        pts += [(t - e["duration_ms"], 1, 1), (t, -1, 1)]
	cur, top = [0, 0], [0, 0]
	for _, d, k in sorted(pts):
	    cur[k] += d
	    top[k] = max(top[k], cur[k])
	print(top[0], top[1])
	EOF2
}

# Validations of 4 s: three overlap even when each iteration costs the loop
# a second (the ASan build beside another suite on two cores did not
# overlap three of 1.5 s).
test_expect_success '--workers 2 --targets 4: two agents at once, four validations at once' '
	new_repo 4 &&
	run_loop quick --workers 2 --targets 4 --iterations 8 >out 2>err &&
	for i in 1 2 3 4 5 6 7 8; do test "$(git -C repo show "main:q-$i.txt")" = "$i" || exit 1; done &&
	python3 -c "
import json
e = json.loads(open(\"logs/loop.jsonl\").readline())
assert e[\"workers\"] == 6 and e[\"agents\"] == 2 and e[\"targets\"] == 4, e
" &&
	read -r agents validations < <(at_once) &&
	test "$agents" -le 2 && test "$validations" -ge 3 &&
	test "$(sort -u "$TRASH/targets.log" | wc -l)" -ge 3 &&
	python3 "$CHECK" logs/loop.jsonl >check.out &&
	test_grep "8 promotions, 8 decisions, .* 0 violations" check.out &&
	: nothing left of the workers: worktrees, tokens, their queues &&
	test "$(git -C repo worktree list | wc -l)" = 1 &&
	test -z "$(ls -A logs/workers)"
'

test_expect_success '--workers 4 --targets 2: four agents at once, two validations at once, on targets 1 and 2' '
	new_repo &&
	run_loop slow --workers 4 --targets 2 --iterations 6 >out 2>err &&
	for i in 1 2 3 4 5 6; do test "$(git -C repo show "main:s-$i.txt")" = "$i" || exit 1; done &&
	read -r agents validations < <(at_once) &&
	test "$agents" = 4 && test "$validations" -le 2 &&
	test "$(sort -u "$TRASH/targets.log" | tr "\n" " ")" = "1 2 " &&
	python3 -c "
import json
ts = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
ts = [e[\"target\"] for e in ts if e[\"event\"] == \"target\"]
assert len(ts) == 6 and set(ts) == {1, 2}, ts
" &&
	: the report: a lane per worker, and one per target &&
	gdnctl report --log-dir logs >report.txt &&
	test_grep "^workers: 6," report.txt &&
	test_grep "^ *t1  .* 0 *$" report.txt && test_grep "^ *t2 " report.txt &&
	! grep -q "^ *t3 " report.txt &&
	test_grep "^ *a4 " report.txt && ! grep -q "^ *a5 " report.txt &&
	gdnctl report --log-dir logs --json >report.json &&
	python3 -c "
import json
w = json.load(open(\"report.json\"))[\"workers\"]
assert [t[\"target\"] for t in w[\"targets\"]] == [1, 2], w[\"targets\"]
assert sum(t[\"validation_ms\"] for t in w[\"targets\"]) >= 6 * 1400, w[\"targets\"]
assert [a[\"agent\"] for a in w[\"agents\"]] == [1, 2, 3, 4], w[\"agents\"]
assert sum(a[\"agent_ms\"] for a in w[\"agents\"]) >= 6 * 1400, w[\"agents\"]
" &&
	python3 "$CHECK" logs/loop.jsonl >check.out &&
	test_grep "6 promotions, 6 decisions, .* 0 violations" check.out
'

# Two agents think and two more iterations wait for an agent's token (one
# of them holding the queue): Ctrl-C stops all four children at once.
test_expect_success 'Ctrl-C with children waiting for a token: exit 130, nothing left' '
	new_repo || exit 1
	run_loop sleepy --workers 2 --targets 2 --iterations 4 --agent-kill-grace 200ms \
		>out 2>err &
	bg=$!
	wait_journal agent_pid 2 &&
	test "$(journal_count worker_start)" = 4 &&
	test "$(journal_count agent)" = 2 &&
	start=$(date +%s) &&
	kill -INT "$(cat logs/loop.lock)" &&
	{ wait $bg; rc=$?; } &&
	test "$rc" = 130 &&
	test $(($(date +%s) - start)) -lt 10 &&
	! pgrep -f "$AG/sleepy" &&
	test "$(git -C repo worktree list | wc -l)" = 1 &&
	! grep -q "\"event\":\"decision\"" logs/loop.jsonl
'

test_expect_success 'bad --targets: exit 2, one line' '
	new_repo &&
	test_expect_code 2 run_loop quick --workers 2 --targets 0 --iterations 1 >out 2>err &&
	test_grep "targets.*out of range" err &&
	test_expect_code 2 run_loop quick --targets 4 --isolation in-place --iterations 1 >out 2>err &&
	test_grep "targets.* --isolation worktree" err &&
	test_expect_code 2 run_loop quick --targets 1 --iterations 1 >out 2>err &&
	test_grep "needs --workers" err &&
	test_expect_code 2 run_loop quick --workers 65 --targets 64 --iterations 1 >out 2>err &&
	test_grep "workers 65: at most 64" err &&
	: the --workers given, not the N + M worktrees &&
	test_expect_code 2 run_loop quick --workers 2 --targets 3 --sync-main-policy once \
		--iterations 1 >out 2>err &&
	test_grep "workers 2 does not go with a --sync-main-policy" err &&
	gdnctl loop --help >help &&
	test_grep "^ *--targets M" help
'

test_done
