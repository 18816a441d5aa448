#!/usr/bin/env bash
# The integrity gate's work rule (issue 28) on real XPlane files, as current
# JAX profiles write them: the profile copies a trace from
# $GDNCTL_SHARED_DIR/traces (named in trace.txt) and prints the metric
# (cost.txt). A TPU XPlane carries XLA's cost analysis as stats of its event
# metadata: a candidate whose FLOPs per step fall is reverted. The real H200
# attention pair (v0 -> v1, a fusion: 132 -> 4 ops per step, x1.85 of device
# time) is kept by default (`ops` is in integrity.work_allow) and rejected
# when integrity.work_allow is [].
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

traces=${GDNCTL_SHARED_DIR:-}/traces
tpu0=DERIVED_tpu-inference_2026_01_11_21_26_41_t1v-n-9eb622fc-w-0.xplane.pb
tpu1=DERIVED_tpu-inference_2026_01_12_00_26_20_t1v-n-9eb622fc-w-0.xplane.pb
gpu0=REAL_jax-gpu-h200_attention-v0_vm.xplane.pb
gpu1=REAL_jax-gpu-h200_attention-v1_vm.xplane.pb
for f in $tpu0 $tpu1 $gpu0 $gpu1; do
	[ -f "$traces/$f" ] || skip_all "no $f in '$traces' (GDNCTL_SHARED_DIR)"
done
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"

# The candidate profiles another trace ($HOME/next: "FILE COST").
agent swap <<'EOF2'
read -r file cost <"$HOME/next" && echo "$file" >trace.txt && echo "$cost" >cost.txt &&
git commit -qam "kernel: $file"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

# new_project FILE COST [YAML]
new_project() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				printf '#!/bin/sh\nmkdir -p out && cp "%s/$(cat trace.txt)" out/vm.xplane.pb\necho "throughput/duration_ms=$(cat cost.txt)"\n' \
					"$traces" >profile.sh &&
				chmod +x profile.sh && echo "$1" >trace.txt && echo "$2" >cost.txt &&
				printf "out/\n" >.gitignore &&
				printf "project:\n  profile_command: ./profile.sh\n  trace_glob: out/*.xplane.pb\nintegrity:\n  mode: on\n%s" \
					"${3:-}" >gdnctl.yaml &&
				git add . && git commit -qm "my kernel"
		)
}

loop() {
	(cd "$TRASH/repo" && gdnctl loop --prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" \
		--sleep-seconds 0 --retry-sleep-seconds 0 --agent command \
		--agent-cmd "$AG/swap {prompt_file}" --perf-mode on --perf-repeats 1 \
		--perf-metric throughput/duration_ms --max-failures -1 --iterations 1 "$@")
}

# The integrity event of iteration 1: "ACTION|work_champion|work_candidate" (figures rounded).
integrity() {
	python3 - logs/loop.jsonl <<-\EOF2
	import json, sys
	e = [json.loads(l) for l in open(sys.argv[1])]
	i = [x for x in e if x["event"] == "integrity" and x["iteration"] == 1][0]
	def w(d):
	    return " ".join("%s=%.4g" % (k, d[k]) for k in sorted(d) if k != "peak_op")
	print("%s|%s|%s" % (i["action"], w(i["work_champion"]), w(i["work_candidate"])))
	EOF2
}

test_expect_success 'a TPU XPlane: FLOPs per step from its stats; a candidate whose FLOPs fall is reverted' '
	new_project $tpu0 7 && echo "$tpu1 6" >"$HOME/next" &&
	loop >out 2>err &&
	test_grep "integrity (work): work per step fell 100 %: 64 T -> 56 GFLOP (flops per step" logs/loop.jsonl &&
	: the FLOPs and bytes of each side equal an independent sum over the JSON twin of its XPlane &&
	python3 - logs/loop.jsonl "$traces" <<-\EOF2
	import gzip, json, sys
	e = [json.loads(l) for l in open(sys.argv[1])]
	i = [x for x in e if x["event"] == "integrity" and x["iteration"] == 1][0]
	assert i["action"] == "revert" and i["rule"] == "work", i
	for side, stamp in (("work_champion", "2026_01_11_21_26_41"), ("work_candidate", "2026_01_12_00_26_20")):
	    ev = json.load(gzip.open("%s/tpu-inference_%s_t1v-n-9eb622fc-w-0.trace.json.gz" % (sys.argv[2], stamp)))["traceEvents"]
	    flops = sum(float(x["args"]["model_flops"]) for x in ev if "model_flops" in x.get("args", {}))
	    nbytes = sum(float(x["args"]["bytes_accessed"]) for x in ev if "bytes_accessed" in x.get("args", {}))
	    w = i[side]  # one step per trace
	    assert abs(w["flops"] - flops) <= 1e-9 * flops and abs(w["bytes"] - nbytes) <= 1e-9 * nbytes, (side, w, flops, nbytes)
	    print(side, "%.6g FLOP, %.6g bytes per step" % (flops, nbytes))
	EOF2
	test "$(git -C repo show HEAD:trace.txt)" = $tpu0
'

test_expect_success 'the real H200 fusion (132 -> 4 ops per step) is kept by default' '
	new_project $gpu0 7 && echo "$gpu1 3.78" >"$HOME/next" &&
	loop >out 2>err &&
	integrity >got &&
	test_grep "^pass|custom_calls=0 ops=132|custom_calls=0 ops=4$" got &&
	test "$(git -C repo show HEAD:trace.txt)" = $gpu1
'

test_expect_success 'integrity.work_allow: [] judges the op count: the same fusion is reverted' '
	new_project $gpu0 7 "  work_allow: []
" && echo "$gpu1 3.78" >"$HOME/next" &&
	loop >out 2>err &&
	test_grep "integrity (work): work per step fell 97 %: 132 -> 4 ops (ops per step; at most 50 % allowed, integrity.work_allow lists none for it)" err &&
	test "$(git -C repo show HEAD:trace.txt)" = $gpu0
'

test_done
