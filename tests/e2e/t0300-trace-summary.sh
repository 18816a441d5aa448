#!/usr/bin/env bash
# gdnctl trace summary on small hand-made traces: formats, grouping,
# selection options, profile directories, standard input, usage errors.
. "$(dirname "$0")/lib.sh"

D=$TEST_DATA/trace

test_expect_success 'trace without a subcommand: help on stderr, exit 2' '
	test_must_fail =2 gdnctl trace >out 2>err &&
	test_grep "^usage: gdnctl trace summary" err &&
	test ! -s out
'

test_expect_success 'unknown subcommand: exit 2' '
	test_must_fail =2 gdnctl trace frob 2>err &&
	test_grep "not a trace subcommand" err
'

test_expect_success 'summary -h and diff -h list their options' '
	gdnctl trace summary -h >h1 &&
	for o in --device --thread --cat --top --format --json --by; do test_grep -q -- "$o" h1; done &&
	gdnctl trace diff -h >h2 &&
	for o in --device --thread --cat --top --format --json; do test_grep -q -- "$o" h2; done
'

test_expect_success 'docs list every option of trace summary and trace diff' '
	for sub in summary diff; do
		gdnctl trace $sub -h | grep -oE -- "--[a-z][a-z0-9-]*" | sort -u >opts &&
		while read -r o; do
			grep -qe "$o" "$GDNCTL_SOURCE_DIR/docs/gdnctl-trace.md" || { echo "undocumented: $o"; exit 1; }
		done <opts || return 1
	done
'

test_expect_success 'usage errors exit 2' '
	test_must_fail =2 gdnctl trace summary 2>err &&
	test_grep "needs an INPUT" err &&
	test_must_fail =2 gdnctl trace summary a b 2>err &&
	test_must_fail =2 gdnctl trace summary --by nope x 2>err &&
	test_grep "invalid choice" err &&
	test_must_fail =2 gdnctl trace summary --top -1 x 2>err &&
	test_must_fail =2 gdnctl trace diff x 2>err &&
	test_must_fail =2 gdnctl trace diff - - 2>err
'

test_expect_success 'table: nested XLA ops, self time, steps' '
	gdnctl trace summary "$D/xla-nested/input.json" >out 2>err &&
	test ! -s err &&
	test_grep "^Selection: XLA Ops threads of /device: processes (1 track on TPU:0)" out &&
	test_grep "^Time:      self 207.500 us, total 265.500 us; 2 steps (XLA Modules jit_train_step(42)): self 103.750 us per step$" out &&
	test_grep "^By op family, by self time (4 of 4):$" out &&
	test_grep "^  self us  share  total us  count  mean us  us/step  category     family       source$" out &&
	test_grep -E "^ +13\.000 +6\.3% +13\.000 +2 +6\.500 +6\.500 +loop fusion +fusion +gated_deltanet\.py:2361$" out &&
	gdnctl trace summary --by op "$D/xla-nested/input.json" >out 2>err &&
	test_grep -E "^ +150\.000 +72\.3% +200\.000 +2 +100\.000 +75\.000 +while +while\.5 +gated_deltanet\.py:1861$" out
'

test_expect_success '--by category, --top 2' '
	gdnctl trace summary --by category --top 2 "$D/xla-nested/input.json" >out &&
	test_grep "By category, by self time (2 of 4)" out &&
	test_grep -E "^ +42\.000 +20\.2% +50\.000 +2 +25\.000 +21\.000 +custom-call$" out &&
	test_grep "\.\.\. 2 more, self 15.500 us (7.5%)" out
'

test_expect_success '--by source and --by device' '
	gdnctl trace summary --by source "$D/xla-nested/input.json" >out &&
	test_grep -E "^ +30\.000 .* /src/gated_deltanet\.py:2361$" out &&
	test_grep -E "\(no source\)$" out &&
	gdnctl trace summary --by device "$D/xla-metadata-last/input.json" >out &&
	test_grep -E "^ +25\.482 +91\.2% .* TPU:0$" out
'

test_expect_success 'markdown for the running log' '
	gdnctl trace summary --format markdown --by category "$D/xla-nested/input.json" >out &&
	test_grep "^- Hotspots observed (XLA Ops on TPU:0, self time by category, from \`input.json\`; 7 events, 2 steps):" out &&
	test_grep "^  - \`while\`: \`0.150 ms\` (72.3%, 2 events, \`0.075 ms\` per step); top ops \`while.5\` (\`0.150 ms\`, \`gated_deltanet.py:1861\`)\.$" out &&
	test_grep "^  - \`custom-call\`: \`0.042 ms\` .*top ops \`custom-call.1\` (\`0.022 ms\`, \`gated_deltanet.py:2361\`), \`custom-call.2\`" out
'

test_expect_success '--json and --format json are the same document' '
	gdnctl trace summary --json "$D/kineto-overlap/input.json" >a &&
	gdnctl trace summary --format json "$D/kineto-overlap/input.json" >b &&
	test_cmp a b &&
	python3 - a <<-\PY
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["schema"] == "gdnctl.trace_summary.v1"
	assert d["mode"] == "kineto"
	assert d["events"] == {"total": 13, "complete": 8, "selected": 5, "metadata": 3,
	                       "invalid": 0, "unmatched": 0, "late": 0, "deep": 0}, d["events"]
	assert abs(d["total_us"] - 21.8) < 1e-9 and abs(d["self_us"] - 15.8) < 1e-9
	for k in ("ops", "categories", "sources", "devices"):
	    assert [r["self_us"] for r in d[k]] == sorted((r["self_us"] for r in d[k]), reverse=True)
	op = d["ops"][0]
	assert set(op) >= {"name", "category", "count", "total_us", "self_us", "source"}
	assert op["name"] == "ampere_sgemm_32x32_sliced1x4_tn" and op["self_us"] == 9.0
	assert d["categories"][0] == {"category": "kernel", "count": 3, "total_us": 20.0,
	    "self_us": 14.0, "mean_us": round(20.0 / 3, 9), "share": round(14.0 / 15.8, 9)}, d["categories"][0]
	assert d["steps"] is None
	PY
'

test_expect_success '--top limits JSON arrays only when given' '
	gdnctl trace summary --json "$D/xla-nested/input.json" >all &&
	gdnctl trace summary --json --top 1 "$D/xla-nested/input.json" >one &&
	python3 -c "
import json
a=json.load(open(\"all\")); o=json.load(open(\"one\"))
assert len(a[\"ops\"])==5 and len(o[\"ops\"])==1 and o[\"self_us\"]==a[\"self_us\"]"
'

test_expect_success 'selection options: --device, --thread, --cat' '
	gdnctl trace summary --json --device TPU:1 "$D/select-device/input.json" >out &&
	test_grep "\"self_us\": 25.0," out &&
	gdnctl trace summary --json --device 3 "$D/select-device/input.json" >out &&
	test_grep "\"self_us\": 10.0," out &&
	gdnctl trace summary --json --thread "Stream 101" --cat kernel --cat mtia_ccp_events "$D/select-thread-cat/input.json" >out &&
	test_grep "\"self_us\": 10.0," out
'

test_expect_success 'standard input, plain and gzip' '
	gdnctl trace summary --json - <"$D/xla-nested/input.json" >a &&
	gzip -c "$D/xla-nested/input.json" | gdnctl trace summary --json - >b &&
	test_cmp a b &&
	test_grep "\"path\": \"-\"" a
'

test_expect_success 'gzip by magic bytes, whatever the name; multi-member' '
	gzip -c "$D/xla-nested/input.json" >trace.json &&
	gdnctl trace summary --json trace.json >a &&
	gdnctl trace summary --json "$D/xla-nested/input.json" >b &&
	diff <(grep -v "\"path\"" a) <(grep -v "\"path\"" b) &&
	gdnctl trace summary --json "$D/gzip-multimember/input.json.gz" >m &&
	test_grep "\"selected\": 2," m
'

test_expect_success 'a profile directory: newest run, perfetto_trace.json.gz preferred' '
	mkdir -p logs/plugins/profile/2026_01_11_21_26_41 logs/plugins/profile/2026_01_12_00_26_20 &&
	gzip -c "$D/xla-nested/input.json" >logs/plugins/profile/2026_01_11_21_26_41/host.trace.json.gz &&
	gzip -c "$D/steps-thread/input.json" >logs/plugins/profile/2026_01_12_00_26_20/host.trace.json.gz &&
	gdnctl trace summary logs >out 2>err &&
	echo "[gdnctl] reading logs/plugins/profile/2026_01_12_00_26_20/host.trace.json.gz" >expect &&
	test_cmp expect err &&
	test_grep "4 steps (Steps)" out &&
	gzip -c "$D/xla-metadata-last/input.json" >logs/plugins/profile/2026_01_12_00_26_20/perfetto_trace.json.gz &&
	gdnctl trace summary logs/plugins/profile 2>err >out &&
	test_grep "reading logs/plugins/profile/2026_01_12_00_26_20/perfetto_trace.json.gz" err &&
	gdnctl trace summary logs/plugins/profile/2026_01_11_21_26_41/ 2>err >out &&
	test_grep "reading logs/plugins/profile/2026_01_11_21_26_41/host.trace.json.gz" err
'

test_expect_success 'a directory without traces: exit 1' '
	mkdir empty &&
	test_must_fail =1 gdnctl trace summary empty 2>err &&
	test_grep "no trace file" err
'

test_expect_success 'no device ops: a warning, exit 0' '
	gdnctl trace summary "$D/be-pairs/input.json" >out 2>err &&
	test_grep "WARNING: no device ops found in" err &&
	test_grep "0 selected" out
'

test_expect_success 'warnings go to stderr: late events, unmatched B/E' '
	gdnctl trace summary --thread threadA "$D/be-pairs/input.json" >out 2>err &&
	test_grep "WARNING: .*: 2 B/E events had no partner" err
'

test_expect_success '--json reals carry at most 9 decimals and 15 significant digits' '
	gdnctl trace summary --json "$D/kineto-overlap/input.json" >out &&
	test_grep "\"mean_us\": 6.666666667,$" out &&
	! grep -E "[0-9]\.[0-9]{10,}" out
'

test_done
