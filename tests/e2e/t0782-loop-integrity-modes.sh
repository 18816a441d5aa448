#!/usr/bin/env bash
# ctest: workers 2
# The integrity gate (issue 28) in the loop's other modes: with --perf-ab
# (the metric's ratio is the paired A/B estimate, the champion's device
# steps come from its own runs of the same look) and with --workers (each
# worker's candidate is gated before it is promoted; a held keep is listed
# by `gdnctl loop status`). The project is t0781's: the profile prints the
# metric (cost.txt) and writes a trace whose device time per step comes
# from dev_us.txt, so an agent can move one ruler without the other.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

# Iteration N does what line N of $HOME/plan says (the last line once past it).
agent plan <<'EOF2'
n=$(sed -n 's/^Iteration //p' "$1")
step=$(sed -n "${n}p" "$HOME/plan")
[ -n "$step" ] || step=$(tail -n 1 "$HOME/plan")
case $step in
metric-only) echo 3.5 >cost.txt ;;
both) echo 3.5 >cost.txt && echo 10000 >dev_us.txt ;;
cached) echo 3.5 >cost.txt && echo 10000 >dev_us.txt &&
	printf 'import functools\n\n@functools.lru_cache(maxsize=None)\ndef kernel(x):\n    return x\n' >kernel.py && git add kernel.py ;;
esac
git commit -qam "kernel: $step (iteration $n)"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_project() {
	integrity_project "integrity:
  mode: on
" && (cd "$TRASH/repo" && git add . && git commit -qm "my kernel")
}

loop() {
	(cd "$TRASH/repo" && gdnctl loop --prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" \
		--sleep-seconds 0 --retry-sleep-seconds 0 --agent command \
		--agent-cmd "$AG/plan {prompt_file}" --perf-mode on \
		--perf-metric throughput/duration_ms --max-failures -1 "$@")
}

# "N:DECISION" for each perf_decision of the journal, in iteration order.
decisions() {
	sed -n 's/.*"event":"perf_decision","iteration":\([1-9][0-9]*\),.*"decision":"\([a-z_]*\)".*/\1:\2/p' \
		logs/loop.jsonl | sort -n | tr "\n" " "
}

# The journal's integrity finding and revert of iteration $1: "ACTION RULE|REVERT REASON".
gated() {
	python3 - logs/loop.jsonl "$1" <<-\EOF2
	import json, sys
	ev = [json.loads(l) for l in open(sys.argv[1])]
	n = int(sys.argv[2])
	i = [e for e in ev if e["event"] == "integrity" and e["iteration"] == n]
	r = [e for e in ev if e["event"] == "revert" and e["iteration"] == n]
	print("%s %s|%s" % (i[0]["action"], i[0].get("rule"), r[0]["reason"] if r else "kept"))
	EOF2
}

# A metric-only win (reverted by the rulers), a real win with a cache in it
# (held by the diff rule), a real win (kept), whatever the measurement mode.
check_run() {
	test "$(decisions)" = "1:gate_regression 2:gate_regression 3:promoted " &&
	gated 1 >g1 && gated 2 >g2 && gated 3 >g3 &&
	test_grep "^revert rulers|integrity (rulers): device time disagrees: the metric claims x2, the device time per step shows x1 \[1, 1\]" g1 &&
	test_grep "^hold diff|held for review: integrity (diff): suspicious diff: cached-results in kernel.py: @functools.lru_cache" g2 &&
	test_grep "^pass None|kept" g3 &&
	: the champion is the real win, without the cache &&
	test "$(git -C repo show HEAD:cost.txt)" = 3.5 &&
	test "$(git -C repo show HEAD:dev_us.txt)" = 10000 &&
	test_must_fail git -C repo cat-file -e HEAD:kernel.py &&
	git -C repo cat-file -e refs/gdnctl/discarded/2:kernel.py &&
	(cd repo && gdnctl loop status --log-dir "$TRASH/logs") >status &&
	test_grep "^ *held for review: iteration 2: suspicious diff: cached-results in kernel.py: .* (kept as refs/gdnctl/discarded/2)$" status &&
	test "$(grep -c "held for review: iteration" status)" = 1
}

test_expect_success '--perf-ab: the rulers compare the A/B estimate with the device steps of both sides of the same look' '
	printf "metric-only\ncached\nboth\n" >"$HOME/plan" && new_project &&
	loop --iterations 3 --perf-ab --perf-repeats 2 --perf-max-repeats 2 >out 2>err &&
	check_run &&
	: the champion ran in its own worktree, twice, two steps each &&
	test_grep "\"event\":\"integrity\",\"iteration\":1,.*\"metric_ratio\":2.0,\"device\":{\"ratio\":1.0,\"lo\":1.0,\"hi\":1.0,\"steps_champion\":4,\"steps_candidate\":4}" logs/loop.jsonl &&
	test_grep "\"event\":\"perf_ab\",\"iteration\":1,.*\"decision\":\"gate_regression\"" logs/loop.jsonl
'

test_expect_success '--no-perf-ab: the same run, the candidate against the champion'"'"'s recorded samples' '
	printf "metric-only\ncached\nboth\n" >"$HOME/plan" && new_project &&
	loop --iterations 3 --no-perf-ab --perf-repeats 2 >out 2>err &&
	check_run &&
	test_grep ! "\"event\":\"perf_ab\"" logs/loop.jsonl
'

test_done
