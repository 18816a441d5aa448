#!/usr/bin/env bash
# gdnctl trace diff: before/after/delta per category, op and source; per
# step when both traces have steps; appeared and vanished ops.
. "$(dirname "$0")/lib.sh"

D=$TEST_DATA/trace

test_expect_success 'diff of a trace with itself: no change' '
	gdnctl trace diff --json "$D/xla-nested/input.json" "$D/xla-nested/input.json" >out &&
	python3 -c "
import json
d=json.load(open(\"out\"))
assert d[\"schema\"]==\"gdnctl.trace_diff.v1\" and d[\"per_step\"] and d[\"unit\"]==\"us_per_step\"
assert all(r[\"delta_us\"]==0 and r[\"status\"]==\"both\" for k in (\"ops\",\"categories\",\"sources\") for r in d[k])
assert d[\"self\"][\"before_us\"]==103.75, d[\"self\"]"
'

test_expect_success 'diff table: sorted by the size of the change, appeared and vanished marked' '
	gdnctl trace diff "$D/xla-nested/input.json" "$D/steps-thread/input.json" >out &&
	test_grep "^Self time per step: 0.104 ms -> 0.040 ms (-61.45%)$" out &&
	test_grep -E "^ +0\.075 +0\.000 +-0\.075 +-100\.00%  while \(vanished\)$" out &&
	test_grep -E "^ +0\.000 +0\.040 +\+0\.040 +new  fusion \(appeared\)$" out
'

test_expect_success 'diff markdown for the running log' '
	gdnctl trace diff --format markdown "$D/xla-nested/input.json" "$D/steps-thread/input.json" >out &&
	test_grep "^- Hotspots observed (self time per step, \`input.json\` -> \`input.json\`):$" out &&
	test_grep "^    - \`while\`: \`0.075 ms -> 0.000 ms/step\` (\`-100.00%\`, vanished)\.$" out
'

test_expect_success 'without steps on both sides, totals are compared' '
	gdnctl trace diff --json "$D/kineto-overlap/input.json" "$D/bare-array/input.json" >out &&
	python3 -c "
import json
d=json.load(open(\"out\"))
assert not d[\"per_step\"] and d[\"unit\"]==\"us\"
k={r[\"category\"]:r for r in d[\"categories\"]}
assert k[\"kernel\"][\"before_us\"]==14.0 and k[\"kernel\"][\"after_us\"]==5.0
assert k[\"gpu_memcpy\"][\"status\"]==\"vanished\"
deltas=[abs(r[\"delta_us\"]) for r in d[\"ops\"]]
assert deltas==sorted(deltas, reverse=True)"
'

test_expect_success 'a bad input in diff: exit 1' '
	test_must_fail =1 gdnctl trace diff "$D/xla-nested/input.json" "$D/invalid-json/input.json" 2>err &&
	test_grep "invalid JSON at byte offset 71" err
'

traces=$GDNCTL_SHARED_DIR/traces
if [ -d "$traces" ]; then
	test_expect_success 'diff of two real TPU runs' '
		gdnctl trace diff --top 5 "$traces"/tpu-inference_2026_01_11_21_26_41_t1v-n-9eb622fc-w-0.trace.json.gz \
			"$traces"/tpu-inference_2026_01_12_00_26_20_t1v-n-9eb622fc-w-0.trace.json.gz >out &&
		test_grep "^Self time per step: 134.416 ms -> 131.443 ms (-2.21%)$" out &&
		test_grep "By category, by size of the change (5 of" out
	'
else
	test_skip 'diff of two real TPU runs' "no shared traces in $traces"
fi

test_done
