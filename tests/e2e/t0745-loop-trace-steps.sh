#!/usr/bin/env bash
# gdnctl loop deciding on the device time of real GPU profiles: the profile
# command copies a REAL JAX trace (REAL_jax-gpu-h200_attention-*: v0 for the
# starting commit, v1 for a speed-up, v1 again for a no-op). With no
# --perf-metric, project.trace_glob set and no throughput/mfu printed by the
# profile, the baseline makes the ruler trace/step_ms; each
# of the trace's 10 steps is a sample. The speed-up (-46%) is kept, the no-op
# reverted as within the noise.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

traces=$GDNCTL_SHARED_DIR/traces
[ -f "$traces/REAL_jax-gpu-h200_attention-v1_vm.xplane.pb" ] ||
	skip_all "no REAL_jax-gpu-h200 traces in $traces"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"

# iteration 1: the batched attention (v1); iteration 2: a comment only
agent climb <<'EOF2'
n=$(sed -n 's/^Iteration //p' "$1")
if [ "$n" = 1 ]; then
	echo v1 >version.txt && git add version.txt && git commit -qm "agent: batch the heads"
else
	echo "# a comment $(date +%s%N)" >>notes.txt && git add notes.txt &&
	git commit -qm "agent: a comment"
fi
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"
cat >"$TRASH/profile.sh" <<EOF2
mkdir -p prof &&
cp "$traces/REAL_jax-gpu-h200_attention-\$(cat version.txt)_vm.xplane.pb" prof/vm.xplane.pb
EOF2

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(cd "$TRASH/repo" && echo v0 >version.txt && echo prof/ >.gitignore &&
			git add . && git commit -qm "attention v0")
}

run_loop() {
	(cd "$TRASH/repo" && GDNCTL_PROFILE_COMMAND="sh $TRASH/profile.sh" \
		GDNCTL_TRACE_GLOB="prof/*.xplane.pb" \
		gdnctl loop --agent command --agent-cmd "$AG/climb {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode profile-only \
		--perf-mode on --perf-within-threshold-policy revert --iterations 2 "$@")
}

decisions() {
	sed -n 's/.*"event":"perf_decision","iteration":\([0-9]*\),.*"decision":"\([a-z_]*\)".*/\2/p' \
		logs/loop.jsonl | tr "\n" " "
}

# state.py FILE: the history decided on trace/step_ms, 10 samples a run,
# the step figures of the REAL files (SOURCES.md: 3,141.091 and 1,695.4 us)
cat >state.py <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))["history"]
assert [r["metric"] for r in h] == ["trace/step_ms"] * 3, h
assert [r["metric_source"] for r in h] == ["trace"] * 3, h
assert [r["decision"] for r in h] == ["baseline", "promoted", "within_threshold"], h
for r, want in zip(h, [3.141091, 1.6954, 1.6954]):
    vals = [s["value"] for s in r["samples"]]
    assert len(vals) == 10 * int(sys.argv[2]), vals
    assert abs(sum(vals) / len(vals) - want) < 0.0001, (vals, want)
    assert max(vals) - min(vals) > 0.001, vals  # the steps differ: real spread
PY

test_expect_success 'no --perf-metric with a trace: the loop decides on trace/step_ms, per step' '
	new_repo &&
	run_loop >out 2>err &&
	test_grep "deciding on trace/step_ms, lower is better: the device time per step of the profile.s trace (no --perf-metric, and the profile printed no throughput/mfu)" out &&
	test_grep "profile run 1: 10 steps in the trace, 10 samples of trace/step_ms" out &&
	test "$(decisions)" = "baseline promoted within_threshold " &&
	test_grep "performance champion promoted: 3.14[0-9]* -> 1.69[0-9]* (+46.0" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: batch the heads" &&
	test "$(cat repo/version.txt)" = v1 &&
	python3 state.py logs/perf_state.json 1
'

test_expect_success 'A/B: the steps are the pairs; the no-op interval is within the band' '
	new_repo &&
	run_loop --perf-repeats 2 --perf-ab >out 2>err &&
	test "$(decisions)" = "baseline promoted within_threshold " &&
	test_grep "performance champion promoted: .* interval \[+[0-9.]*%, +[0-9.]*%\] over 20 A/B pairs: promote" out &&
	test_grep "performance within hold band vs champion: .* over 20 A/B pairs: within" err &&
	test "$(git -C repo log -1 --format=%s)" = "agent: batch the heads" &&
	python3 state.py logs/perf_state.json 2
'

test_expect_success 'loop --dry-run names the ruler' '
	(cd repo && GDNCTL_PROFILE_COMMAND=true GDNCTL_TRACE_GLOB="prof/*.xplane.pb" \
		gdnctl loop --dry-run --iterations 1 --agent command --agent-cmd true \
		--perf-mode on >../dry 2>&1) &&
	test_grep "ruler: throughput/mfu (no --perf-metric: from the profile.s output, else trace/step_ms, the device time per step of its trace, decided at the baseline)" dry &&
	(cd repo && GDNCTL_PROFILE_COMMAND=true gdnctl loop --dry-run --iterations 1 \
		--agent command --agent-cmd true --perf-mode on >../dry 2>&1) &&
	test_grep "ruler: throughput/mfu (default)" dry
'

test_done
