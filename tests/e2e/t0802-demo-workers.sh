#!/usr/bin/env bash
# gdnctl demo --workers 2 (issue 16): two workers run the example agent's
# two-worker series side by side (the two speed-ups, the first one's idea
# written another way, which conflicts once the first is promoted, the
# broken one, the one that changes nothing) and reach the champion the
# serial demo reaches (t0800): the same two kept commits, and matmul.c as
# patches 1 and 5 leave it (the serial demo's champion, built here with git
# apply rather than by a second run of the serial demo, more than half
# of this script). The conflict is discarded with its reason in the journal.
# The wall time is printed, never asserted (a loaded 2-core machine decides
# it; tests/bench/loop-workers.sh measures the speed-up).
# Needs cc, make and the zlib headers (bash .ci/setup build).
# It measures real speed, so it never runs beside another such script:
# ctest: measures-speed
# ctest: cost 50
. "$(dirname "$0")/lib.sh"

command -v make >/dev/null && command -v cc >/dev/null ||
	skip_all "the demo needs make and cc (bash .ci/setup build installs them)"
printf '#include <zlib.h>\nint main(void){return 0;}\n' >"$TRASH/z.c"
cc -o "$TRASH/z" "$TRASH/z.c" -lz 2>/dev/null || skip_all "the demo needs zlib headers (zlib1g-dev)"

S=$TRASH/serial
W=$TRASH/workers
SUBJ1="matmul: i-k-j loop order"
SUBJ5="matmul: 4x8 register tiles"
SUBJ6="matmul: walk rows of B and C with pointers"

# elapsed_ms START_NS: the milliseconds since START_NS (date +%s%N).
elapsed_ms() {
	echo $((($(date +%s%N) - $1) / 1000000))
}

# kept REPO: the subjects of the agent's commits on the branch (the loop's own
# "gdnctl: ..." commits left out), oldest first.
kept() {
	base=$(git -C "$1" rev-list --max-parents=0 HEAD) &&
		git -C "$1" log --reverse --first-parent --format=%s "$base..HEAD" | grep -v "^gdnctl: "
}

test_expect_success 'the serial demo champion: matmul.c with patches 1 and 5' '
	mkdir "$S" &&
	cp "$GDNCTL_SOURCE_DIR/examples/demo/matmul.c" "$S/" &&
	(cd "$S" && git apply "$GDNCTL_SOURCE_DIR/examples/demo/agent/patches/1-loop-order.patch" &&
		git apply "$GDNCTL_SOURCE_DIR/examples/demo/agent/patches/5-register-tiles.patch") &&
	test_grep "4 x 8 tiles" "$S/matmul.c"
'

test_expect_success 'the two-worker demo runs to the end' '
	start=$(date +%s%N) &&
	gdnctl demo --workers 2 --dir "$W" >wout 2>werr &&
	elapsed_ms "$start" >workers.ms &&
	test_grep "^\[gdnctl\] running: gdnctl loop --iterations 5 --workers 2 --agent command" wout &&
	test_grep "^\[gdnctl\] demo finished in [0-9.]* s with 2 workers: 2 iterations kept, 2 reverted, 1 discarded (conflict)$" wout &&
	test_grep "^\[gdnctl\] log lint passed" wout &&
	test_grep "^\[gdnctl\]   iteration 1 kept (1 commit): $SUBJ1$" wout &&
	test_grep "^\[gdnctl\]   iteration 2 discarded (conflicts with the champion another worker promoted meanwhile: .*matmul.c.*): $SUBJ6, kept as refs/gdnctl/discarded/2$" wout &&
	test_grep "^\[gdnctl\]   iteration 3 reverted (validation failed: tests exit [0-9]*): " wout &&
	test_grep "^\[gdnctl\]   iteration 5 kept (1 commit): $SUBJ5$" wout &&
	test_grep "\"event\":\"run_start\".*\"workers\":2" "$W/logs/loop.jsonl"
'

[ -f workers.ms ] &&
	say "wall time: two-worker demo $(($(cat workers.ms) / 1000)).$(($(cat workers.ms) % 1000 / 100)) s"

test_expect_success 'the same champion as the serial demo: the same matmul.c, the same kept commits' '
	kept "$W/project" >workers.kept &&
	printf "%s\n" "$SUBJ1" "$SUBJ5" >expect &&
	test_cmp expect workers.kept &&
	git -C "$W/project" show HEAD:matmul.c >workers.c &&
	test_cmp "$S/matmul.c" workers.c &&
	: the yardstick, the test and the benchmark are untouched &&
	base=$(git -C "$W/project" rev-list --max-parents=0 HEAD) &&
	git -C "$W/project" diff --quiet "$base" HEAD -- reference.c bench.c test_matmul.c Makefile &&
	grep "^### Iteration [0-9]" "$W/project/running-log.md" >entries &&
	test_line_count = 2 entries &&
	test_grep "^### Iteration 1 - i-k-j loop order" entries &&
	test_grep "^### Iteration 5 - 4x8 register tiles" entries &&
	test -z "$(git -C "$W/project" status --porcelain)"
'

test_expect_success 'perf_state.json: the two speed-ups promoted, the champion is the last' '
	kept=$(git -C "$W/project" log --format=%H -1 --grep="^$SUBJ5\$") &&
	python3 - "$W/logs/perf_state.json" "$kept" <<-\EOF
	import json, sys
	s = json.load(open(sys.argv[1]))
	assert s["champion"]["commit"] == sys.argv[2], s["champion"]["commit"]
	promoted = sorted(h["iteration"] for h in s["history"] if h["decision"] == "promoted")
	assert promoted == [1, 5], s["history"]
	EOF
'

test_expect_success 'iterations 1 and 2 ran side by side, on two workers, from the starting commit' '
	python3 - "$W/logs/loop.jsonl" "$(git -C "$W/project" rev-list --max-parents=0 HEAD)" <<-\EOF
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
	def first(name, it):
	    for i, e in enumerate(ev):
	        if e.get("event") == name and e.get("iteration") == it:
	            return i, e
	    raise SystemExit("no %s event for iteration %d" % (name, it))
	s1, e1 = first("iteration_start", 1)
	s2, e2 = first("iteration_start", 2)
	assert e1.get("worker") != e2.get("worker"), (e1, e2)
	assert {e1.get("worker"), e2.get("worker")} == {1, 2}, (e1, e2)
	assert e1["head"] == e2["head"] == sys.argv[2], (e1, e2)
	p1, _ = first("promote", 1)
	a2, _ = first("agent_start", 2)
	assert a2 < p1, "iteration 2 started after iteration 1 was promoted"
	# every event of an iteration names its worker
	for e in ev:
	    if e.get("iteration") and e.get("event") in ("iteration_start", "agent_start", "agent_end", "validation", "decision", "promote"):
	        assert e.get("worker") in (1, 2), e
	EOF
'

test_expect_success 'iteration 2 conflicts with the promoted iteration 1: discarded, with the reason' '
	J=$W/logs/loop.jsonl &&
	: the journal says so: a conflict event, or the cherry-pick onto the moved champion &&
	: journaled as a rebase whose result is conflict, each with its reason &&
	python3 - "$J" <<-\EOF &&
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
	conf = [e for e in ev if e["event"] == "conflict" or
	        (e["event"] == "rebase" and e.get("result") == "conflict")]
	assert conf, "no conflict in the journal"
	assert {e["iteration"] for e in conf} == {2}, conf
	for e in conf:
	    assert e.get("worker") in (1, 2), e
	    assert isinstance(e.get("reason"), str) and "matmul.c" in e["reason"], e
	assert not [e for e in ev if e["event"] == "promote" and e["iteration"] == 2], "promoted"
	EOF
	test "$(git -C "$W/project" log -1 --format=%s refs/gdnctl/discarded/2)" = "$SUBJ6" &&
	: the discarded candidate is the row-pointer patch on the starting commit &&
	base=$(git -C "$W/project" rev-list --max-parents=0 HEAD) &&
	test "$(git -C "$W/project" rev-parse refs/gdnctl/discarded/2~1)" = "$base" &&
	test_must_fail git -C "$W/project" merge-base --is-ancestor refs/gdnctl/discarded/2 HEAD &&
	: the loop told the agent, in the console &&
	test_grep "iteration 2 conflicts with the champion" "$W/logs/loop-console.log"
'

test_expect_success 'the broken change and the no-op are reverted, as in the serial demo' '
	J=$W/logs/loop.jsonl &&
	test_grep "\"event\":\"revert\",.*\"iteration\":3,.*\"reason\":\"validation failed: tests exit" "$J" &&
	test_grep "\"event\":\"revert\",.*\"iteration\":4,.*\"reason\":\"performance \(within_threshold\|regression\): throughput/speedup\"" "$J" &&
	for n in 3 4; do
		git -C "$W/project" rev-parse -q --verify refs/gdnctl/discarded/$n >/dev/null || return 1
	done &&
	test "$(git -C "$W/project" log -1 --format=%s refs/gdnctl/discarded/3)" = "matmul: unroll k by two" &&
	test "$(git -C "$W/project" log -1 --format=%s refs/gdnctl/discarded/4)" = "matmul: clearer names and comments"
'

test_expect_success 'one champion, one name: the report, loop status, the ref and the branch agree' '
	ref=$(git -C "$W/project" for-each-ref --format="%(objectname)" "refs/gdnctl/champion/*") &&
	test -n "$ref" &&
	test "$ref" = "$(git -C "$W/project" rev-parse HEAD)" &&
	short=$(echo "$ref" | cut -c1-12) &&
	gdnctl report --log-dir "$W/logs" -o "$TRASH/w-report.html" >rep &&
	test_grep "^metric throughput/speedup (higher is better), champion [0-9.]* @ $short$" rep &&
	sed -n "/^promotions on the champion line/,\$p" rep | grep " by worker " | tail -1 >last &&
	test_grep " @ $short$" last &&
	test_grep "champion [0-9.]* at <code>$short</code>" "$TRASH/w-report.html" &&
	gdnctl report --log-dir "$W/logs" --json -o "$TRASH/w-report.html" >rep.json &&
	test "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"champion\"][\"commit\"])" rep.json)" = "$ref" &&
	gdnctl loop status --log-dir "$W/logs" >status &&
	test_grep "@ $short (iteration" status
'

test_expect_success 'the example agent has no series for three workers: exit 2, nothing created' '
	test_must_fail =2 gdnctl demo --workers 3 --dir "$TRASH/w3" 2>err3 &&
	test_grep "1 and 2 workers" err3 &&
	test ! -e "$TRASH/w3"
'

test_done
