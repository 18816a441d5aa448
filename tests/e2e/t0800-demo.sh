#!/usr/bin/env bash
# gdnctl demo: the bundled matmul project, the example agent's five patches,
# and the loop (validation gate + performance policy) keeping exactly the two
# speed-ups. Needs cc, make and the zlib headers (bash .ci/setup build).
# It measures real speed, so it never runs beside another such script:
# ctest: measures-speed
# ctest: cost 50
. "$(dirname "$0")/lib.sh"

command -v make >/dev/null && command -v cc >/dev/null ||
	skip_all "the demo needs make and cc (bash .ci/setup build installs them)"
printf '#include <zlib.h>\nint main(void){return 0;}\n' >"$TRASH/z.c"
cc -o "$TRASH/z" "$TRASH/z.c" -lz 2>/dev/null || skip_all "the demo needs zlib headers (zlib1g-dev)"

D=$TRASH/d
P=$D/project
SUBJ1="matmul: i-k-j loop order"
SUBJ5="matmul: 4x8 register tiles"

# Iteration 3 (x0.35) is decided by a 5-pair interval measured on a machine
# that runs other tests: one disturbed pair can lift the interval's top above
# -30 % (a fresh run saw [-70.6 %, -26.9 %]), and the loop then rightly says
# "within the noise band". Its label is checked against its own journaled
# interval (r3_label); that it is slower and reverted, whatever the label.
r3_label() {
	python3 - "$D/logs/loop.jsonl" <<-\EOF
	import json, sys
	d = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "perf_ab" and e["iteration"] == 3]
	assert len(d) == 1, d
	d = d[0]
	assert d["improvement_pct"] <= -30, d["improvement_pct"]
	want = "regression" if d["ci_high_pct"] < -30 else "within_threshold"
	assert d["decision"] == want, d
	print(want)
	EOF
}

test_expect_success 'the demo runs to the end and names what it made' '
	start=$(date +%s%N) &&
	gdnctl demo --dir "$D" >out 2>err &&
	echo $((($(date +%s%N) - start) / 1000000)) >"$TRASH/ms" &&
	test_grep "^\[gdnctl\] demo directory: $D$" out &&
	test_grep "^\[gdnctl\] demo project from $GDNCTL_SOURCE_DIR/examples/demo$" out &&
	: the loop and the agent are not on the terminal: in the console log and the transcripts &&
	test_grep ! "^\[example agent\]" out &&
	test_grep "^\[example agent\] THIS IS A DETERMINISTIC EXAMPLE AGENT, not an AI.$" "$D/logs/loop-console.log" &&
	test_grep "THIS IS A DETERMINISTIC EXAMPLE AGENT, not an AI." "$D/logs/iteration-001-transcript.log" &&
	test_grep "loop summary: run .*: 5 iterations, " "$D/logs/loop-console.log" &&
	test_grep ! "loop summary" out &&
	test_grep "^\[gdnctl\] the loop.s output (the agent.s in the transcripts there): $D/logs/loop-console.log$" out &&
	test_grep "^\[gdnctl\] iteration 5/5 (agent.sh)$" out &&
	test_grep "^\[gdnctl\] demo finished in [0-9.]* s: 2 iterations kept, 3 reverted$" out &&
	test_grep "^\[gdnctl\] a discarded attempt: git -C $P diff refs/gdnctl/discarded/2^!$" out &&
	test_grep "^\[gdnctl\] log lint passed" out &&
	test_grep "^\[gdnctl\]   iteration 1 kept (1 commit): $SUBJ1$" out &&
	r3=$(r3_label) && case $r3 in
	regression) why3="slower than the champion" ;;
	*) why3="within the noise band" ;;
	esac &&
	test_grep "^\[gdnctl\]   iteration 3 reverted ($why3 (throughput/speedup)): " out &&
	test_grep "^\[gdnctl\]   iteration 4 reverted (within the noise band (throughput/speedup)): " out &&
	test_grep "^\[gdnctl\]   iteration 5 kept (1 commit): $SUBJ5$" out &&
	test -d "$D/agent" && test -x "$D/agent/agent.sh" && test ! -e "$P/agent" &&
	test -s "$D/logs/loop.jsonl"
'

test_expect_success 'took well under 3 minutes' '
	test "$(cat "$TRASH/ms")" -lt 180000
'
[ -f "$TRASH/ms" ] && ms=$(cat "$TRASH/ms") && say "gdnctl demo took $((ms / 1000)).$((ms % 1000 / 100)) s"

test_expect_success 'exactly the two speed-ups are kept on top of the initial commit' '
	base=$(git -C "$P" rev-list --max-parents=0 HEAD) &&
	test "$(git -C "$P" log -1 --format=%s "$base")" = "demo: a naive matmul, its test and benchmark" &&
	: the yardstick and the benchmark are never changed by the patches &&
	git -C "$P" diff --quiet "$base" HEAD -- reference.c bench.c test_matmul.c Makefile &&
	git -C "$P" log --format=%s --first-parent "$base..HEAD" >all &&
	grep -v "^gdnctl: " all >agent &&
	: only validated commits reach the branch: the rejected ones are under refs/gdnctl/discarded &&
	test_line_count = 2 agent &&
	for n in 2 3 4; do git -C "$P" log -1 --format=%s refs/gdnctl/discarded/$n; done >discarded &&
	test_line_count = 3 discarded &&
	grep -vxF -f discarded agent >kept &&
	printf "%s\n" "$SUBJ5" "$SUBJ1" >expect &&
	test_cmp expect kept &&
	: the tree at HEAD is the initial one plus those two commits &&
	git -C "$P" diff --stat "$base" HEAD -- matmul.c >stat &&
	test_grep "matmul.c" stat &&
	git -C "$P" show HEAD~1:matmul.c >m.c &&
	test_grep "4 x 8 tiles" m.c &&
	git -C "$P" diff --quiet "$(git -C "$P" log --format=%H -1 --grep="^$SUBJ5\$")" HEAD -- matmul.c &&
	grep "^### Iteration [0-9]" "$P/running-log.md" >entries &&
	printf "### Iteration %s\n" "1 - i-k-j loop order" "5 - 4x8 register tiles" >expect &&
	test_cmp expect entries &&
	test -z "$(git -C "$P" status --porcelain)"
'

test_expect_success 'the other three are reverted and kept under refs/gdnctl/discarded' '
	for n in 2 3 4; do
		git -C "$P" rev-parse -q --verify refs/gdnctl/discarded/$n >/dev/null &&
		! git -C "$P" diff --quiet refs/gdnctl/discarded/$n~1 refs/gdnctl/discarded/$n -- matmul.c &&
		! git -C "$P" diff --quiet refs/gdnctl/discarded/$n HEAD -- matmul.c || return 1
	done &&
	: the command the summary prints shows the broken change &&
	git -C "$P" diff "refs/gdnctl/discarded/2^!" -- matmul.c >d2 &&
	test_grep "^+.*k + 1 < n; k += 2" d2 &&
	test_must_fail git -C "$P" rev-parse -q --verify refs/gdnctl/discarded/1 &&
	test_must_fail git -C "$P" rev-parse -q --verify refs/gdnctl/discarded/5 &&
	test_grep "\"event\":\"revert\",\"iteration\":2,\"reason\":\"validation failed: tests exit" "$D/logs/loop.jsonl" &&
	r3=$(r3_label) &&
	test_grep "\"event\":\"revert\",\"iteration\":3,\"reason\":\"performance $r3: throughput/speedup\"" "$D/logs/loop.jsonl" &&
	test_grep "\"event\":\"revert\",\"iteration\":4,\"reason\":\"performance within_threshold: throughput/speedup\"" "$D/logs/loop.jsonl"
'

test_expect_success 'patch 2 really breaks the test program, and HEAD really passes it' '
	mkdir p2 head &&
	git -C "$P" archive refs/gdnctl/discarded/2 | tar -x -C p2 &&
	test_must_fail make -s -C p2 test >p2.out 2>&1 &&
	test_grep "^tests: [0-9]*/74 sizes passed" p2.out &&
	test_grep ! "^tests: 74/74" p2.out &&
	git -C "$P" archive HEAD | tar -x -C head &&
	make -s -C head test >head.out 2>&1 &&
	test_grep "^tests: 74/74 sizes passed" head.out
'

test_expect_success 'perf_state.json: the champion is the last kept commit; the decisions' '
	kept=$(git -C "$P" log --format=%H -1 --grep="^$SUBJ5\$") &&
	r3=$(r3_label) &&
	python3 - "$D/logs/perf_state.json" "$kept" "$r3" <<-\EOF
	import json, sys
	s = json.load(open(sys.argv[1]))
	assert s["champion"]["commit"] == sys.argv[2], s["champion"]["commit"]
	assert s["champion"]["metric"] == "throughput/speedup"
	got = [(h["iteration"], h["decision"]) for h in s["history"]]
	want = [(0, "baseline"), (1, "promoted"), (3, sys.argv[3]), (4, "within_threshold"), (5, "promoted")]
	assert got == want, got
	v = [h["metric_value"] for h in s["history"]]
	assert v[1] >= 1.5 * v[0] and v[4] >= 1.5 * v[1] and v[2] * 1.5 <= v[1], v
	EOF
'

test_expect_success 'the running log passes lint-log with every field; entries are stamped' '
	(cd "$P" && gdnctl lint-log --scope all --require-fields) &&
	test_grep "^- Commit: [0-9a-f]\{40\}$" "$P/running-log.md" >commits && test_line_count = 2 commits &&
	test_grep ! "^- Commit: (pending)" "$P/running-log.md"
'

test_expect_success 'the report is written' '
	if gdnctl report -h >/dev/null 2>&1; then
		test -s "$D/report.html" && test_grep "^\[gdnctl\] report: $D/report.html$" out &&
		: its trace links resolve from DIR, where it is written, not from DIR/logs &&
		grep -o "href=\"[^\"]*\"" "$D/report.html" | sed "s/^href=\"//; s/\"$//" >links &&
		test -s links && test_grep "^logs/traces/" links &&
		while read -r l; do test -f "$D/$l" || { echo "dead link: $l"; return 1; }; done <links
	else
		test_grep "gdnctl report is not available in this build" err
	fi
'

test_expect_success 'a non-empty --dir is refused with exit 2 and nothing changes' '
	find "$D" -printf "%p %s %T@\n" | sort >before &&
	test_must_fail =2 gdnctl demo --dir "$D" >out2 2>err2 &&
	test_grep "is not empty" err2 &&
	find "$D" -printf "%p %s %T@\n" | sort >after &&
	test_cmp before after
'

test_expect_success '--agent codex without codex installed: exit 4, nothing created' '
	test_must_fail =4 env PATH=/usr/bin:/bin GDNCTL_CODEX= "$GDNCTL_BIN" demo --dir "$TRASH/c" \
		--agent codex 2>err3 &&
	test_grep "not installed" err3 &&
	test ! -e "$TRASH/c"
'

test_expect_success '--agent claude: the real driver and prompt.md (a fake claude that applies patch N)' '
	mkdir -p fake &&
	: a stand-in for Claude Code, which cannot be installed and logged in here: it reads &&
	: the prompt on stdin, speaks stream-json, and lets the example agent do the work &&
	cat >fake/claude <<-EOF &&
	#!/bin/sh
	printf "%s\n" "\$*" >"$TRASH/fake/claude.args"
	cat >"$TRASH/fake/prompt.txt"
	echo "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s1\",\"model\":\"fake\"}"
	"$GDNCTL_SOURCE_DIR/examples/demo/agent/agent.sh" "$TRASH/fake/prompt.txt" >&2 || exit 1
	echo "{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"applied\",\"session_id\":\"s1\"}"
	EOF
	chmod +x fake/claude &&
	GDNCTL_CLAUDE="$TRASH/fake/claude" gdnctl demo --agent claude --iterations 2 --dir "$TRASH/cl" >cout 2>cerr &&
	test_grep -- "--dangerously-skip-permissions" fake/claude.args &&
	test_grep "^# Demo hill-climb: iteration 2 of 2$" fake/prompt.txt &&
	test_grep "^\[gdnctl\] demo finished in [0-9.]* s: 1 iteration kept, 1 reverted$" cout &&
	test ! -e "$TRASH/cl/agent" &&
	git -C "$TRASH/cl/project" rev-parse -q --verify refs/gdnctl/discarded/2 >/dev/null
'

test_expect_success 'a failure before the loop removes the directory it made, unless --keep' '
	test_must_fail =1 env PATH=/nonexistent "$GDNCTL_BIN" demo --dir "$TRASH/k1" >kout 2>kerr &&
	test_grep "cannot create the demo repository: cannot run .git" kerr &&
	test ! -e "$TRASH/k1" &&
	test_must_fail =1 env PATH=/nonexistent "$GDNCTL_BIN" demo --keep --dir "$TRASH/k2" >kout 2>kerr &&
	test -f "$TRASH/k2/project/matmul.c" &&
	test_grep "the demo directory is kept: $TRASH/k2" kout
'

test_expect_success '--iterations beyond the example patches is a usage error' '
	test_must_fail =2 gdnctl demo --dir "$TRASH/i" --iterations 6 2>err4 &&
	test_grep "has 5 patches" err4 && test ! -e "$TRASH/i"
'

test_expect_success 'Ctrl-C: the loop and its commands are stopped, exit 130, no process left' '
	mkdir -p bin &&
	: a make that stalls in the baseline profile, so the signal comes mid-loop: &&
	: the loop runs it with bash -c, in the caller.s environment &&
	cat >bin/make <<-EOF &&
	#!/bin/sh
	touch "$TRASH/stalled"
	exec sleep 3017
	EOF
	chmod +x bin/make &&
	(
		set -m
		PATH="$TRASH/bin:$PATH" "$GDNCTL_BIN" demo --dir "$TRASH/x" >xout 2>xerr &
		pid=$!
		for i in $(seq 1 300); do
			test -e "$TRASH/stalled" && break
			sleep 0.1
		done
		kill -INT "$pid"
		wait "$pid"
		echo $? >xrc
	) &&
	test -e "$TRASH/stalled" &&
	test "$(cat xrc)" = 130 &&
	test_grep ! "demo finished" xout &&
	test_grep "interrupted" xerr &&
	sleep 0.5 &&
	! pgrep -f "sleep 3017" >/dev/null
'

test_done
