#!/usr/bin/env bash
# gdnctl loop --workers N, the speculative pipeline (issue 27): candidates
# that reach validation at the same moment join the train one after the
# other, each validated on top of all those ahead of it at once, and are
# promoted without a re-check; a failure ahead has only the candidates
# behind it rebuilt and redone, all at once. tests/e2e/pipeline_check.py
# checks every promotion against the journal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

command -v python3 >/dev/null || skip_all "python3 is needed to read the journal"
CHECK=$(cd "$(dirname "$0")" && pwd)/pipeline_check.py

cat >"$TRASH/iter.sh" <<'EOF2'
it=$(sed -n 's/^Iteration \([0-9]*\).*/\1/p' "$1" | head -n 1)
EOF2
# waitfor CONDITION: until the shell condition holds (60 s at most, then exit 9),
# for the agents and checks below that wait for one another
cat >"$TRASH/waitfor.sh" <<'EOF2'
waitfor() { n=0; until eval "$1"; do sleep 0.05; n=$((n + 1)); [ $n -lt 1200 ] || exit 9; done; }
EOF2
# together: every agent commits its own file at the same moment.
agent together <<EOF2
. "$TRASH/iter.sh"
sleep 0.5
echo "\$it" >"p-\$it.txt" && git add . && git commit -qm "agent: p-\$it"
EOF2
# staggered: iteration N commits after N * 0.4 s (the train's order is the
# iterations'); iteration 2 breaks the tests.
agent staggered <<EOF2
. "$TRASH/iter.sh"
sleep \$((it * 4 / 10)).\$((it * 4 % 10))
[ "\$it" != 2 ] || echo BROKEN >state.txt
echo "\$it" >"p-\$it.txt" && git add . && git commit -qm "agent: p-\$it"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				printf '#!/bin/sh\nsleep 2\nif grep -q BROKEN state.txt; then echo "tests: BROKEN"; exit 3; fi\necho "tests: ok"\n' >check.sh &&
				chmod +x check.sh && echo ok >state.txt &&
				git add . && git commit -qm seed
		)
}

run_workers() {
	local a=$1 n=$2
	shift 2
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh \
		gdnctl loop --workers "$n" --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode required "$@")
}

test_expect_success 'six candidates at once: a train six deep, every one promoted without a re-check' '
	new_repo &&
	run_workers together 6 --iterations 6 >out 2>err &&
	for i in 1 2 3 4 5 6; do test "$(git -C repo show "main:p-$i.txt")" = "$i" || exit 1; done &&
	python3 -c "
import json
evs = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
assert not [e for e in evs if e[\"event\"] == \"recheck\"], \"a re-check\"
champion = evs[0][\"champion\"]
onto = {e[\"head\"]: e[\"onto\"] for e in evs if e[\"event\"] == \"rebase\"}
assert all(e[\"result\"] == \"clean\" and e[\"train\"] for e in evs if e[\"event\"] == \"rebase\"), onto
promoted = [e[\"champion\"] for e in evs if e[\"event\"] == \"promote\"]
assert len(promoted) == 6, promoted
# each promoted on the one before it: a chain of six, validated on the tree it landed as
for i, sha in enumerate(promoted):
    assert onto.get(sha, champion) == (promoted[i - 1] if i else champion), (i, sha)
# the third was carried onto the second while the first was still undecided
pos = {e[\"champion\"]: n for n, e in enumerate(evs) if e[\"event\"] == \"promote\"}
third = [n for n, e in enumerate(evs) if e[\"event\"] == \"rebase\" and e[\"head\"] == promoted[2]][0]
assert third < pos[promoted[0]], \"the third joined after the first was decided\"
" &&
	python3 "$CHECK" logs/loop.jsonl >check.out &&
	test_grep "6 promotions, 6 decisions, 0 re-checks, 5 speculative rebases, deepest 5, 0 violations" check.out
'

test_expect_success 'a failure ahead: only the candidates behind it redone, at once, on the new base' '
	new_repo &&
	run_workers staggered 4 --iterations 4 --max-failures 5 >out 2>err &&
	test "$(git -C repo show main:state.txt)" = ok &&
	for i in 1 3 4; do test "$(git -C repo show "main:p-$i.txt")" = "$i" || exit 1; done &&
	test_must_fail git -C repo cat-file -e main:p-2.txt &&
	python3 -c "
import json
evs = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
heads = {e[\"iteration\"]: e.get(\"head\") for e in evs if e[\"event\"] == \"rebase\" and e[\"result\"] == \"clean\"}
first = {}
for e in evs:
    if e[\"event\"] == \"rebase\" and e[\"iteration\"] not in first:
        first[e[\"iteration\"]] = e
# the train: 2 on 1, 3 on 2, 4 on 3, all before any verdict
assert first[3][\"train\"] and first[4][\"train\"], first
rechecked = sorted(e[\"iteration\"] for e in evs if e[\"event\"] == \"recheck\")
assert rechecked == [3, 4], rechecked
# both re-checks ran at once
starts = [(n, e[\"iteration\"]) for n, e in enumerate(evs) if e[\"event\"] == \"worker_start\" and e[\"recheck\"]]
ends = [min(m for m, f in enumerate(evs) if m > n and f[\"event\"] == \"worker_end\" and f[\"iteration\"] == i) for n, i in starts]
assert len(starts) == 2 and max(n for n, i in starts) < min(ends), (starts, ends)
d = {e[\"iteration\"]: e for e in evs if e[\"event\"] == \"decision\"}
assert d[1][\"commits\"] == 1 and d[2][\"commits\"] == 0 and d[3][\"commits\"] == 1 and d[4][\"commits\"] == 1, d
" &&
	python3 "$CHECK" logs/loop.jsonl >check.out &&
	test_grep "4 decisions, 2 re-checks, .* 0 violations" check.out
'

test_expect_success 'the checker finds a promotion that was not validated on its tree' '
	sed "s/\"event\":\"promote\",\"iteration\":4,\"champion\":\"[0-9a-f]*\"/\"event\":\"promote\",\"iteration\":4,\"champion\":\"0000\"/" logs/loop.jsonl >bad.jsonl &&
	! cmp -s bad.jsonl logs/loop.jsonl &&
	test_expect_code 1 python3 "$CHECK" bad.jsonl >check.out &&
	test_grep "VIOLATION .*iteration 4 promoted 0000" check.out
'

# A stale train: the train's tip back at the champion C0 (a failure ahead
# was put back), then a candidate validated on C0, outside the train, is
# promoted (C1). A candidate that passed on C0 meanwhile is re-checked in
# the train: it must be carried onto C1, not validated on C0 again (the
# tip no longer led to the champion). Iterations 1-3 fail at once (few
# promoted: the next candidates stay off the train); 4 joins the train
# and fails once 5 and 6 are in validation; 5 passes once 4 is decided and
# 6 validates; 6 passes once 5 is promoted. Each step waits for the one
# before it (files under $TRASH, the journal), not for the clock.
agent stale <<EOF2
. "$TRASH/iter.sh"
. "$TRASH/waitfor.sh"
case \$it in
1 | 2 | 3) echo FAST >state.txt ;;
4) echo SLOW >state.txt ;;
5) waitfor "[ -e $TRASH/v4 ]" ;;
6) waitfor "[ -e $TRASH/v5 ]" ;;
esac
echo "\$it" >"p-\$it.txt" && git add . && git commit -qm "agent: p-\$it"
EOF2

test_expect_success 'a re-check is carried onto the champion when the train fell behind it' '
	new_repo &&
	rm -f "$TRASH"/v4 "$TRASH"/v5 "$TRASH"/v6 &&
	cat >repo/check.sh <<-EOF &&
	#!/bin/sh
	J="$TRASH/logs/loop.jsonl"
	. "$TRASH/waitfor.sh"
	if grep -q FAST state.txt; then echo "tests: broken"; exit 3; fi
	if grep -q SLOW state.txt; then
		: >"$TRASH/v4"
		waitfor "[ -e $TRASH/v5 ] && [ -e $TRASH/v6 ]"
		echo "tests: broken"; exit 3
	fi
	if [ -e p-5.txt ] && [ ! -e p-6.txt ]; then
		: >"$TRASH/v5"
		waitfor "[ -e $TRASH/v6 ] && grep -q \"event.:.decision.,.iteration.:4,\" \$J"
	fi
	if [ -e p-6.txt ] && [ ! -e p-5.txt ]; then
		: >"$TRASH/v6"
		waitfor "grep -q \"event.:.promote.,.iteration.:5,\" \$J"
	fi
	echo "tests: ok"
	EOF
	git -C repo commit -qam "the staged checks" &&
	run_workers stale 3 --iterations 6 --max-failures 9 >out 2>err &&
	test "$(git -C repo show main:p-5.txt)" = 5 &&
	test "$(git -C repo show main:p-6.txt)" = 6 &&
	python3 -c "
import json
evs = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
prom = {e[\"iteration\"]: e[\"champion\"] for e in evs if e[\"event\"] == \"promote\"}
assert sorted(prom) == [5, 6], prom
six = [e for e in evs if e.get(\"iteration\") == 6]
kinds = [e[\"event\"] for e in six if e[\"event\"] in (\"recheck\", \"rebase\", \"validation\")]
# on C0, then re-checked once: carried onto the champion 5 made, in the train
assert kinds == [\"validation\", \"recheck\", \"rebase\", \"validation\"], kinds
rebase = [e for e in six if e[\"event\"] == \"rebase\"][0]
assert rebase[\"onto\"] == prom[5] and rebase[\"result\"] == \"clean\" and rebase[\"train\"], rebase
" &&
	python3 "$CHECK" logs/loop.jsonl >check.out &&
	test_grep "2 promotions, .* 0 violations" check.out
'

test_expect_success 'the checker finds a re-check that ran on its old base' '
	grep -v "\"event\":\"rebase\",\"iteration\":6," logs/loop.jsonl >bad.jsonl &&
	! cmp -s bad.jsonl logs/loop.jsonl &&
	test_expect_code 1 python3 "$CHECK" bad.jsonl >check.out &&
	test_grep "VIOLATION .*iteration 6 re-checked on [0-9a-f]*, a tree it was validated on" check.out
'

# Twins: iterations 1 and 2 make the same change (both break the tests)
# and each adds its own file; 2 joins the train behind 1. Both fail, and 2
# is tried again on the champion (its failure may have been 1's). Rebuilt
# from the train's commit, it would be its own file alone (the change it
# shares with 1 was already in 1), pass and be promoted: not what its
# agent made. Rebuilt from its agent's own commits, it fails again.
agent twins <<EOF2
. "$TRASH/iter.sh"
. "$TRASH/waitfor.sh"
[ "\$it" = 1 ] || waitfor "[ -e $TRASH/v1 ]"
echo BROKEN >state.txt && echo "\$it" >"p-\$it.txt" && git add . && git commit -qm "agent: p-\$it"
EOF2

test_expect_success 'a candidate tried again after the one ahead failed is its agent'"'"'s own change' '
	new_repo &&
	rm -f "$TRASH"/v1 "$TRASH"/v2 &&
	cat >repo/check.sh <<-EOF &&
	#!/bin/sh
	. "$TRASH/waitfor.sh"
	if grep -q BROKEN state.txt && [ -e p-1.txt ] && [ ! -e p-2.txt ]; then
		: >"$TRASH/v1"
		waitfor "[ -e $TRASH/v2 ]"
	fi
	[ ! -e p-2.txt ] || : >"$TRASH/v2"
	if grep -q BROKEN state.txt; then echo "tests: broken"; exit 3; fi
	echo "tests: ok"
	EOF
	git -C repo commit -qam "the staged checks" &&
	run_workers twins 2 --iterations 2 >out 2>err &&
	test "$(git -C repo show main:state.txt)" = ok &&
	test_must_fail git -C repo cat-file -e main:p-2.txt &&
	python3 -c "
import json
evs = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
assert not [e for e in evs if e[\"event\"] == \"promote\"], \"a promotion\"
two = [e for e in evs if e.get(\"iteration\") == 2]
joined = [e for e in two if e[\"event\"] == \"rebase\"]
assert joined and joined[0][\"train\"] and joined[0][\"result\"] == \"clean\", joined
made = [e[\"after\"] for e in two if e[\"event\"] == \"head\"]
again = [e for e in two if e[\"event\"] == \"recheck\"]
assert len(again) == 1 and again[0][\"candidate\"] == made[0], (again, made)
tests = [e[\"rc\"] for e in two if e[\"event\"] == \"validation\"]
assert tests == [3, 3], tests
" &&
	python3 "$CHECK" logs/loop.jsonl >check.out &&
	test_grep "0 promotions, 2 decisions, 1 re-checks, .* 0 violations" check.out
'

# The share a child joins by is the parent's of the moment it is ready,
# not its fork's: iteration 1 thinks while 2, 3 and 4 fail (few promoted
# now), then is ready behind 5, which is in validation. On the fork's share
# (nothing decided: the prior, 0.8) it would join the train behind 5; on
# the parent's (three failures) it stays on the champion.
agent late <<EOF2
. "$TRASH/iter.sh"
. "$TRASH/waitfor.sh"
case \$it in
1) waitfor "[ -e $TRASH/go1 ]" ;;
2 | 3 | 4) echo FAST >state.txt ;;
esac
echo "\$it" >"p-\$it.txt" && git add . && git commit -qm "agent: p-\$it"
EOF2

test_expect_success 'a candidate joins the train by the share decided when it is ready' '
	new_repo &&
	rm -f "$TRASH"/go1 "$TRASH"/done1 &&
	cat >repo/check.sh <<-EOF &&
	#!/bin/sh
	. "$TRASH/waitfor.sh"
	if grep -q FAST state.txt; then echo "tests: broken"; exit 3; fi
	if [ -e p-5.txt ] && [ ! -e p-1.txt ]; then
		: >"$TRASH/go1"
		waitfor "[ -e $TRASH/done1 ]"
	fi
	[ ! -e p-1.txt ] || : >"$TRASH/done1"
	echo "tests: ok"
	EOF
	git -C repo commit -qam "the staged checks" &&
	run_workers late 2 --iterations 5 --max-failures 9 >out 2>err &&
	test "$(git -C repo show main:p-1.txt)" = 1 &&
	test "$(git -C repo show main:p-5.txt)" = 5 &&
	python3 -c "
import json
evs = [json.loads(l) for l in open(\"logs/loop.jsonl\")]
one = [e[\"event\"] for e in evs if e.get(\"iteration\") == 1 and e[\"event\"] in (\"rebase\", \"validation\")]
assert one[0] == \"validation\", one
fails = [e[\"iteration\"] for e in evs if e[\"event\"] == \"decision\" and e[\"outcome\"] == \"failed\"]
assert sorted(fails) == [2, 3, 4], fails
" &&
	python3 "$CHECK" logs/loop.jsonl >check.out &&
	test_grep "2 promotions, .* 0 violations" check.out
'

test_done
