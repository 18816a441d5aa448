#!/usr/bin/env bash
# gdnctl loop --workers N (issue 16): N agents in their own worktrees, each
# iteration in a child of the loop; promotions serialized, a candidate whose
# champion moved carried onto the new one (cherry-pick, running log merged)
# and checked again there; a conflict discarded with its reason, told to
# that worker's next prompt; one journal with the worker of every event;
# Ctrl-C stops every agent and leaves no worktree.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

command -v python3 >/dev/null || skip_all "python3 is needed to read the journal"

# The iteration number, from the prompt file ({prompt_file}: "Iteration N").
cat >"$TRASH/iter.sh" <<'EOF2'
it=$(sed -n 's/^Iteration \([0-9]*\).*/\1/p' "$1" | head -n 1)
EOF2

# unique: its own file, and a running-log entry to stamp.
agent unique <<EOF2
. "$TRASH/iter.sh"
echo "idea \$it: add f-\$it (worker \$GDNCTL_WORKER)"
sleep 0.\$((it % 3))
echo "\$it" >"f-\$it.txt" &&
printf '\n### Iteration %s - add f-%s\n\n- Commit: (pending)\n- Result: ok\n' "\$it" "\$it" >>log.md &&
git add . && git commit -qm "agent: f-\$it"
EOF2
# clash: every iteration writes its own value into the same line.
agent clash <<EOF2
. "$TRASH/iter.sh"
echo "value \$it" >shared.txt && git add shared.txt && git commit -qm "agent: shared \$it"
EOF2
# perf: iteration 1 makes it 1.5x faster (speed-a); iteration 2 sets it to 1.2x whatever
# else changed (speed-b, whose tests are slow): faster than its base, slower than 1.5x.
agent perf <<EOF2
. "$TRASH/iter.sh"
case \$it in
1) echo 1.5 >speed-a.txt ;;
2) echo 1.2 >speed-b.txt ;;
*) echo 1.1 >"speed-\$it.txt" ;;
esac
git add . && git commit -qm "agent: speed \$it"
EOF2
# train: iteration 1 breaks the tests (which then take 3 s to fail); iteration 2,
# a second later, joins the train on top of it.
agent train <<EOF2
. "$TRASH/iter.sh"
case \$it in
1) echo BROKEN >state.txt ;;
*) sleep 1 && echo "\$it" >"g-\$it.txt" ;;
esac
git add . && git commit -qm "agent: train \$it"
EOF2
# nothing: iterations 1 and 2 make no commit at once; the others think for long.
agent nothing <<EOF2
. "$TRASH/iter.sh"
case \$it in
1 | 2) echo "no idea" ;;
*) sleep 1000 ;;
esac
EOF2
agent sleepy <<'EOF2'
echo "thinking"
sleep 1000
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				printf '#!/bin/sh\n[ -e speed-b.txt ] && sleep 2\nif grep -q BROKEN state.txt; then sleep 3; echo "tests: BROKEN"; exit 3; fi\necho "tests: ok"\n' >check.sh &&
				echo ok >state.txt &&
				printf '#!/bin/sh\nif [ -e speed-b.txt ]; then v=$(cat speed-b.txt); else v=$(cat speed*.txt | sort -n | tail -n 1); fi\necho "throughput/mfu=$v"\n' >bench.sh &&
				chmod +x check.sh bench.sh && echo 1.0 >speed.txt && echo "value 0" >shared.txt &&
				printf '# Log\n\n### Iteration 0 - seed\n\n- Commit: seed\n- Result: ok\n' >log.md &&
				git add . && git commit -qm seed
		)
}

run_workers() {
	local a=$1 n=$2
	shift 2
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl loop --workers "$n" --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode required "$@")
}

# Prints the journal's events as "event worker iteration" lines.
events() {
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print(e["event"], e.get("worker", "-"), e.get("iteration", "-"), e.get("result", ""))
' logs/loop.jsonl
}

test_expect_success 'two workers: every iteration kept, promoted one at a time' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	run_workers unique 2 --iterations 6 --hillclimb-log-file log.md >out 2>err &&
	git -C repo log --format=%s "$base..main" >subjects &&
	test "$(grep -c "^agent: f-" subjects)" = 6 &&
	for i in 1 2 3 4 5 6; do test "$(git -C repo show "main:f-$i.txt")" = "$i" || exit 1; done &&
	events >ev &&
	test_grep "^run_start - - $" ev &&
	python3 -c "import json; e = json.loads(open(\"logs/loop.jsonl\").readline()); assert e[\"workers\"] == 2, e" &&
	: every iteration event names its worker, both workers worked &&
	! grep -E "^(iteration_start|agent_start|agent_end|validation|decision|promote) - " ev &&
	test "$(grep "^iteration_start" ev | cut -d" " -f2 | sort -u | tr "\n" " ")" = "1 2 " &&
	: the branch took the promotions in their order, each on top of the last &&
	grep "^promote " ev | cut -d" " -f3 >promoted &&
	test "$(wc -l <promoted)" = 6 &&
	git -C repo log --reverse --format=%s "$base..main" | sed -n "s/^agent: f-//p" >onbranch &&
	test_cmp promoted onbranch &&
	: at least one candidate was carried onto a champion that moved &&
	grep -q "^rebase [12] [0-9]* clean$" ev &&
	test_grep "\] \[w[12]\] carried onto \(the newer champion\|the train.s tip\) [0-9a-f]\{12\} (" out &&
	: the running log: one entry per iteration, stamped with its worker, lint-clean &&
	git -C repo show main:log.md >log.md &&
	test "$(grep -c "^### Iteration [0-9]* - add f-" log.md)" = 6 &&
	sed -n "s/^- Worker: [12] (iteration \([0-9]*\))$/\1/p" log.md >stamped &&
	test_cmp promoted stamped &&
	! grep -q "(pending)" log.md &&
	(cd repo && gdnctl lint-log --log-file ../log.md) &&
	: no worktree left, nothing in the user checkout changed but by the fast-forwards &&
	test "$(git -C repo worktree list | wc -l)" = 1 &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success 'each agent knows its worker (GDNCTL_WORKER)' '
	python3 -c "
import json
for e in map(json.loads, open(\"logs/loop.jsonl\")):
    if e[\"event\"] == \"iteration_start\":
        t = open(\"logs/iteration-%03d-transcript.log\" % e[\"iteration\"]).read()
        assert \"(worker %d)\" % e[\"worker\"] in t, (e, t)
"
'

test_expect_success 'the prompt lists what the other workers are trying' '
	grep -l "Other workers are working on these right now" logs/iteration-00[2-6]-prompt.txt >with &&
	test -s with &&
	grep -h "^- worker [12], iteration [0-9]*: " $(cat with) >lines &&
	test_grep "idea [0-9]*: add f-[0-9]*\|(just started)" lines
'

test_expect_success 'a candidate that conflicts with the new champion is discarded, with its reason' '
	new_repo &&
	run_workers clash 2 --iterations 6 >out 2>err &&
	events >ev &&
	test "$(grep -c "^decision" ev)" = 6 &&
	: a conflict of a worker that had an iteration after it &&
	python3 -c "
import json
evs = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
starts = [(e[\"worker\"], e[\"iteration\"]) for e in evs if e[\"event\"] == \"iteration_start\"]
for e in evs:
    if e[\"event\"] == \"rebase\" and e[\"result\"] == \"conflict\":
        later = [i for w, i in starts if w == e[\"worker\"] and i > e[\"iteration\"]]
        if later:
            print(e[\"worker\"], e[\"iteration\"], min(later))
            break
" >conflict &&
	test -s conflict &&
	read w it next <conflict &&
	git -C repo rev-parse --verify -q "refs/gdnctl/discarded/$it" >/dev/null &&
	test_grep "\"event\":\"rebase\",\"iteration\":$it,.*\"result\":\"conflict\",\"reason\":\"CONFLICT" logs/loop.jsonl &&
	test_grep "iteration $it conflicts with the champion .* another worker promoted meanwhile" err &&
	test_grep "\"event\":\"decision\",\"iteration\":$it,.*\"commits\":0" logs/loop.jsonl &&
: each promoted champion is the commit of the iteration that promoted it &&
	python3 -c "
import json
for e in map(json.loads, open(\"logs/loop.jsonl\")):
    if e[\"event\"] == \"decision\" and e.get(\"champion\"):
        print(e[\"iteration\"], e[\"champion\"])
" >champions &&
	test -s champions &&
	while read i sha; do
		test "$(git -C repo log -1 --format=%s "$sha")" = "agent: shared $i" || exit 1
	done <champions &&
	: the branch holds only promoted values, each once &&
	test "$(git -C repo log --format=%s main | grep -c "^agent: shared")" = "$(grep -c "^promote" ev)" &&
	: the next prompt of that worker says why &&
	test_grep "conflicts with the champion" "logs/iteration-00$next-prompt.txt"
'

test_expect_success 'a candidate that beats its base but not the new champion is not promoted' '
	new_repo &&
	run_workers perf 2 --iterations 2 --perf-mode on >out 2>err &&
	events >ev &&
	: iteration 2 passed on the seed, the champion moved to iteration 1: checked again there &&
	test_grep "^recheck [12] 2 $" ev &&
	test_grep "iteration 2 passed on .*, but the champion is now" out &&
	test "$(git -C repo log --format=%s main | grep -c "^agent: speed")" = 1 &&
	test "$(git -C repo log -1 --format=%s main)" = "agent: speed 1" &&
	python3 -c "
import json
s = json.load(open(\"logs/perf_state.json\"))
assert s[\"champion\"][\"metric_value\"] == 1.5, s[\"champion\"]
ds = [(h.get(\"commit\"), h[\"decision\"]) for h in s[\"history\"]]
assert len(ds) == 4, ds  # baseline, 1 promoted, 2 on its base, 2 on the new champion
assert ds[2][1] == \"promoted\" and ds[3][1] == \"regression\", ds
" &&
	test_grep "\"event\":\"decision\",\"iteration\":2,.*\"commits\":0" logs/loop.jsonl
'

test_expect_success 'a candidate that joined the train behind a failing one is re-checked on the champion' '
	new_repo &&
	run_workers train 2 --iterations 2 >out 2>err &&
	python3 -c "
import json
evs = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
head1 = [e for e in evs if e[\"event\"] == \"head\" and e[\"iteration\"] == 1][0][\"after\"]
joined = [e for e in evs if e[\"event\"] == \"rebase\" and e[\"iteration\"] == 2 and e[\"onto\"] == head1]
assert joined, \"iteration 2 did not join the train on iteration 1\"
names = [e[\"event\"] for e in evs if e.get(\"iteration\") == 2]
assert \"recheck\" in names, names
d = {e[\"iteration\"]: e for e in evs if e[\"event\"] == \"decision\"}
assert d[1][\"commits\"] == 0 and d[2][\"commits\"] == 1, d
" &&
	test "$(git -C repo show main:state.txt)" = ok &&
	test "$(git -C repo show main:g-2.txt)" = 2 &&
	test "$(git -C repo rev-parse --verify -q refs/gdnctl/tip/$(sed -n "s/.*\"run\":\"\([^\"]*\)\".*/\1/p" logs/loop.jsonl | head -n 1))" = ""
'

test_expect_success '--max-failures counts every worker: the run stops, the others abandoned' '
	new_repo &&
	test_must_fail =1 run_workers nothing 3 --iterations 6 --no-commit-policy count-failure \
		--max-failures 1 --agent-kill-grace 200ms >out 2>err &&
	test_grep "\"failures\":2" logs/loop.jsonl &&
	test "$(grep -c "\"event\":\"decision\"" logs/loop.jsonl)" = 2 &&
	test_grep "\"event\":\"abandoned\",\"iteration\":3" logs/loop.jsonl &&
	test_grep "\"event\":\"run_end\",\"reason\":\"failure\",\"exit_code\":1" logs/loop.jsonl &&
	! pgrep -f "$AG/nothing" &&
	test "$(git -C repo worktree list | wc -l)" = 1
'

sleepy_exec() {
	cd "$TRASH/repo" && exec "$GDNCTL_BIN" loop --workers 3 --agent command --agent-cmd "$AG/sleepy" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --iterations 6 \
		--agent-kill-grace 200ms "$@"
}

test_expect_success 'Ctrl-C stops every worker: no agent, no worktree left, exit 130' '
	new_repo || exit 1
	sleepy_exec >out 2>err &
	bg=$!
	wait_journal agent_pid 3 &&
	: SIGINT to gdnctl alone, named by its lock: it stops its workers itself &&
	pid=$(cat logs/loop.lock) &&
	kill -INT "$pid" &&
	{ wait $bg; rc=$?; } &&
	test "$rc" = 130 &&
	! pgrep -f "$AG/sleepy" &&
	test "$(git -C repo worktree list | wc -l)" = 1 &&
	test "$(grep -c "\"event\":\"interrupted\"" logs/loop.jsonl)" -ge 3 &&
	! grep -q "\"event\":\"decision\"" logs/loop.jsonl
'

test_expect_success '--workers N with --isolation in-place is refused' '
	new_repo &&
	test_expect_code 2 run_workers unique 2 --iterations 1 --isolation in-place >out 2>err &&
	test_grep "workers" err
'

test_done
