#!/usr/bin/env bash
# gdnctl trace on the real JAX GPU profiles (REAL_jax-gpu-h200_*): the XPlane
# and both JSON twins select the same device ops (the "Stream #N" threads of
# /device:GPU:0) and find the steps of the host's step annotations
# (StepTraceAnnotation "train", step_num); the figures are SOURCES.md's
# ground truth, typed in here (an independent Python sum), not gdnctl's.
. "$(dirname "$0")/lib.sh"

traces=$GDNCTL_SHARED_DIR/traces
[ -f "$traces/REAL_jax-gpu-h200_mlp-train_vm.xplane.pb" ] ||
	skip_all "no REAL_jax-gpu-h200 traces in $traces"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"

# check.py SUMMARY EVENTS TOTAL_US SELF_US STEPS PER_STEP_US DIGITS:
# the figures rounded to DIGITS decimals ("-": not in SOURCES.md)
cat >check.py <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
events, total, self_, steps, per, digits = sys.argv[2:8]
digits = int(digits)
def eq(name, got, want):
    if want != "-" and round(got, digits) != round(float(want), digits):
        sys.exit("%s: got %r, want %s" % (name, got, want))
assert d["mode"] == "xla", d["mode"]
assert d["events"]["selected"] == int(events), d["events"]
eq("total_us", d["total_us"], total)
eq("self_us", d["self_us"], self_)
assert d["steps"] == int(steps), d["steps"]
assert d["steps_from"] == 'host step annotations "train"', d["steps_from"]
eq("self_us_per_step", d["self_us_per_step"], per)
ps = d["per_step"]
assert [s["number"] for s in ps] == list(range(int(steps))), ps
# every device op starts in a step window: the steps add up to the whole
assert sum(s["ops"] for s in ps) == int(events), ps
assert abs(sum(s["self_us"] for s in ps) - d["self_us"]) < 1e-6, ps
assert all(s["start_us"] < t["start_us"] for s, t in zip(ps, ps[1:])), ps
assert ["Stream #" in w for w in d["warnings"]] == [False] * len(d["warnings"])
PY

# same.py A B: two summaries of one run agree (ops, categories, steps, per step)
cat >same.py <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
for k in ["mode", "total_us", "self_us", "steps", "steps_from", "self_us_per_step",
          "tracks_selected", "ops", "categories", "families", "per_step"]:
    assert a[k] == b[k], (k, str(a[k])[:300], str(b[k])[:300])
assert a["events"]["selected"] == b["events"]["selected"]
PY

T=$traces/REAL_jax-gpu-h200
one() {
	gdnctl trace summary --json "$1" >got.json 2>err &&
	python3 check.py got.json "$2" "$3" "$4" "$5" "$6" "$7"
}

test_expect_success 'attention v0 XPlane: 1,320 ops, 31,441.185 us, 10 steps of 3,141.091 us' '
	one ${T}_attention-v0_vm.xplane.pb 1320 31441.185 31410.913 10 3141.091 3
'
test_expect_success 'attention v0 perfetto JSON: the same 1,320 ops and 10 steps' '
	one ${T}_attention-v0_perfetto_trace.json.gz 1320 31441.185 - 10 3141.091 3
'
test_expect_success 'attention v1 XPlane: 40 ops, 16,954 us self, 10 steps of 1,695.4 us' '
	one ${T}_attention-v1_vm.xplane.pb 40 - 16954 10 - 0 &&
	one ${T}_attention-v1_vm.xplane.pb 40 - - 10 1695.4 1
'
test_expect_success 'MLP train step XPlane: 140 ops, 16,748.168 us, 5 steps of 3,342.857 us' '
	one ${T}_mlp-train_vm.xplane.pb 140 16748.168 16714.284 5 3342.857 3
'
test_expect_success 'MLP <host>.trace.json.gz: the same 140 ops and 5 steps' '
	one ${T}_mlp-train_vm.trace.json.gz 140 16748.168 - 5 3342.857 3
'
test_expect_success 'MLP perfetto_trace.json.gz: the same 140 ops and 5 steps' '
	one ${T}_mlp-train_perfetto_trace.json.gz 140 16748.168 - 5 3342.857 3
'
test_expect_success 'the XPlane and its JSON twins agree op by op and step by step' '
	gdnctl trace summary --json --top 0 ${T}_mlp-train_vm.xplane.pb >x.json &&
	gdnctl trace summary --json --top 0 ${T}_mlp-train_vm.trace.json.gz >j.json &&
	gdnctl trace summary --json --top 0 ${T}_mlp-train_perfetto_trace.json.gz >p.json &&
	python3 same.py x.json j.json && python3 same.py x.json p.json &&
	gdnctl trace summary --json --top 0 ${T}_attention-v0_vm.xplane.pb >x.json &&
	gdnctl trace summary --json --top 0 ${T}_attention-v0_perfetto_trace.json.gz >p.json &&
	python3 same.py x.json p.json
'
test_expect_success 'the table names the steps and where they come from' '
	gdnctl trace summary ${T}_mlp-train_vm.trace.json.gz >out 2>err &&
	grep "5 steps (host step annotations \"train\")" out &&
	! grep -i "no device ops" err
'
test_expect_success 'trace diff v0 -> v1 compares per step: -46.0%' '
	gdnctl trace diff --json ${T}_attention-v0_vm.xplane.pb \
		${T}_attention-v1_vm.xplane.pb >diff.json &&
	python3 -c "
import json; d = json.load(open(\"diff.json\"))
assert d[\"per_step\"] is True, d[\"per_step\"]
b, a = d[\"self\"][\"before_us\"], d[\"self\"][\"after_us\"]
assert round((a - b) / b * 100, 1) == -46.0, (b, a)
"
'

test_expect_success 'a JAX profile folder is read from its XPlane, --input-format json reads the JSON' '
	run=logdir/plugins/profile/2026_11_28_12_00_00 &&
	mkdir -p $run &&
	cp ${T}_mlp-train_vm.xplane.pb $run/vm.xplane.pb &&
	cp ${T}_mlp-train_vm.trace.json.gz $run/vm.trace.json.gz &&
	cp ${T}_mlp-train_perfetto_trace.json.gz $run/perfetto_trace.json.gz &&
	gdnctl trace summary --json --top 0 logdir >d.json 2>err &&
	test_grep "reading 1 XPlane file: $run/vm.xplane.pb" err &&
	python3 -c "import json; assert json.load(open(\"d.json\"))[\"format\"] == \"xplane\"" &&
	gdnctl trace summary --json --top 0 --input-format json logdir >j.json 2>err &&
	test_grep "reading $run/perfetto_trace.json.gz" err &&
	python3 same.py d.json j.json &&
	rm $run/vm.xplane.pb &&
	test_must_fail =1 gdnctl trace summary --input-format xplane logdir 2>err &&
	test_grep "no XPlane file (\*.xplane.pb) in .$run." err
'

test_done
