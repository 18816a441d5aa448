#!/usr/bin/env bash
# gdnctl trace on XPlane (.xplane.pb): the DERIVED TPU files summarise exactly
# like their trace.json.gz twins; the real GPU file; several hosts; profile
# directories; the real corrupted file and generated malformed inputs fail in
# one line naming the file and the byte offset.
#
# Its peak-RSS bounds hold for a binary without sanitizers (ASan's shadow and
# quarantine would be counted), so it also runs in the dev build:
# ctest: unsanitized
# ctest: cost 80
. "$(dirname "$0")/lib.sh"

traces=$GDNCTL_SHARED_DIR/traces
[ -d "$traces" ] || skip_all "no shared traces in $traces"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
# the python helpers write and read protobuf with tests/e2e/xplane_wire.py
export PYTHONPATH=$GDNCTL_SOURCE_DIR/tests/e2e

RUNS="2026_01_11_21_26_41 2026_01_12_00_26_20 2026_01_12_01_08_50"
xp() { echo "$traces/DERIVED_tpu-inference_$1_t1v-n-9eb622fc-w-0.xplane.pb"; }
js() { echo "$traces/tpu-inference_$1_t1v-n-9eb622fc-w-0.trace.json.gz"; }
GPU=$traces/xprof_GPU-multi-worker_34.83.195.179_6003.xplane.pb
BAD=$traces/CORRUPTED_xprof_tpu_inference_2.xplane.pb

# The per-op summary (counts, ops, categories, sources, totals) of two documents.
cat >same.py <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
keys = ["mode", "total_us", "self_us", "steps", "steps_from", "self_us_per_step",
        "tracks_selected", "ops", "categories", "sources", "devices", "families",
        "framework_ops"]
for k in keys:
    assert a[k] == b[k], (k, str(a[k])[:300], str(b[k])[:300])
assert a["events"]["selected"] == b["events"]["selected"]
assert a["events"]["complete"] == b["events"]["complete"]
assert a["ops"] and a["total_us"] > 0
PY

# x-RUN.json: the summary of each DERIVED xplane file, made once (5 to 8 MB
# each) for the cases below that read it; j-RUN.json: its JSON twin's.
test_expect_success 'the DERIVED xplane files summarise exactly like their JSON twins' '
	for r in $RUNS; do
		gdnctl trace summary --json "$(xp $r)" >x-$r.json &&
		gdnctl trace summary --json "$(js $r)" >j-$r.json &&
		python3 same.py x-$r.json j-$r.json || { echo "run $r"; return 1; }
	done
'

test_expect_success 'format, hosts and the ground truth of SOURCES.md' '
	python3 -c "
import json
d = json.load(open(\"x-2026_01_11_21_26_41.json\"))
assert d[\"format\"] == \"xplane\" and d[\"hosts\"] == [\"t1v-n-9eb622fc-w-0\"], d[\"hosts\"]
assert d[\"events\"][\"selected\"] == 6908, d[\"events\"]
assert round(d[\"self_us\"], 3) == 134416.335, d[\"self_us\"]
cats = {c[\"category\"]: round(c[\"self_us\"], 3) for c in d[\"categories\"]}
assert cats[\"convolution fusion\"] == 84561.535 and cats[\"custom-call\"] == 34020.176
assert cats[\"all-reduce\"] == 6888.667, cats
" &&
	gdnctl trace summary "$(xp 2026_01_11_21_26_41)" >out &&
	test_grep "^Format:    xplane, host t1v-n-9eb622fc-w-0$" out &&
	test_grep "^Events:    10312 in XEvents, 10312 complete, 6908 selected$" out &&
	test_grep "; 1 step (XLA Modules jit_step_fun(5120112285394406626)): self 134.416 ms per step, summed over 2 devices (67.208 ms per step per device)$" out &&
	test_grep "^  self ms  share  total ms  count  mean ms  ms/step  category  " out
'

test_expect_success 'gzip of an xplane (.xplane.pb.gz) reads the same' '
	gzip -c "$(xp 2026_01_11_21_26_41)" >h.xplane.pb.gz &&
	gdnctl trace summary --json h.xplane.pb.gz >g.json &&
	python3 same.py g.json x-2026_01_11_21_26_41.json &&
	cp "$(xp 2026_01_11_21_26_41)" no-suffix.bin &&
	gdnctl trace summary --json no-suffix.bin >n.json &&
	python3 same.py n.json x-2026_01_11_21_26_41.json
'

# An independent reader: a tiny protobuf wire decoder (xplane_wire.py), no packages.
cat >pb.py <<'PY'
from xplane_wire import fields

def planes(path):
    """(plane name, [(line name, [(metadata_id, offset_ps, duration_ps, aggregated)])])"""
    for f, v in fields(open(path, "rb").read()):
        if f != 1:
            continue
        name, lines = "", []
        for pf, pv in fields(v):
            if pf == 2:
                name = pv.decode()
            elif pf == 3:
                lname, evs = "", []
                for lf, lv in fields(pv):
                    if lf == 2:
                        lname = lv.decode()
                    elif lf == 4:
                        e = {}
                        for ef, ev in fields(lv):
                            if ef != 4:
                                e[ef] = ev
                        evs.append((e.get(1, 0), e.get(2, 0), e.get(3, 0), 5 in e))
                lines.append((lname, evs))
        yield name, lines
PY

test_expect_success 'the real GPU file: stream lines of GPU planes, against the independent reader' '
	gdnctl trace summary --json "$GPU" >g1.json &&
	gdnctl trace summary --json "$GPU" >g2.json &&
	test_cmp g1.json g2.json &&
	python3 - "$GPU" <<-\PY
	import json, sys
	sys.path.insert(0, ".")
	import pb
	n = dur = 0
	devs = {}
	for name, lines in pb.planes(sys.argv[1]):
	    for lname, evs in lines:
	        if "/device:GPU" in name and lname.startswith("Stream #"):
	            for mid, off, d, agg in evs:
	                if not agg:
	                    n += 1; dur += d
	                    devs[name[8:]] = devs.get(name[8:], 0) + 1
	d = json.load(open("g1.json"))
	assert d["format"] == "xplane" and d["hosts"] == ["34.83.195.179:6003"], d["hosts"]
	assert d["events"]["selected"] == n and n > 0, (d["events"], n)
	assert abs(d["total_us"] - dur / 1e6) < 1e-6 * dur / 1e6, (d["total_us"], dur)
	assert d["self_us"] > 0
	got = {r["device"]: r["count"] for r in d["devices"]}
	assert got == devs and "GPU:4" in got and "GPU:6" in got, (got, devs)
	PY
'

test_expect_success 'tables fit the terminal: long kernel names shortened in the middle' '
	: a terminal that tells no size: \$COLUMNS, else 100 columns &&
	COLUMNS=120 python3 "$GDNCTL_SOURCE_DIR/tests/e2e/ttywin.py" 0 "$GDNCTL_BIN" trace summary "$GPU" >out &&
	awk "length(\$0) > 120 && /^  / { print; bad = 1 } END { exit bad }" out &&
	test_grep -F "void tensorflow::" out &&
	test_grep -F "..." out &&
	(unset COLUMNS && python3 "$GDNCTL_SOURCE_DIR/tests/e2e/ttywin.py" 0 "$GDNCTL_BIN" trace summary "$GPU") >out &&
	awk "length(\$0) > 100 && /^  / { print; bad = 1 } END { exit bad }" out &&
	gdnctl trace summary --by category "$GPU" >out &&
	test_grep -E "^ +[0-9.]+ +[0-9.]+% .* kernel$" out &&
	test_grep -E " gpu_memcpy$" out
'

test_expect_success 'several hosts: summed, with a per-host device breakdown' '
	a=$(xp 2026_01_11_21_26_41) && b=$(xp 2026_01_12_01_08_50) &&
	gdnctl trace summary --json "$a" "$b" >ab.json &&
	python3 -c "
import json
a, b, ab = (json.load(open(p)) for p in
            (\"x-2026_01_11_21_26_41.json\", \"x-2026_01_12_01_08_50.json\", \"ab.json\"))
assert ab[\"hosts\"] == [\"t1v-n-9eb622fc-w-0\", \"t1v-n-9eb622fc-w-0 (2)\"], ab[\"hosts\"]
assert abs(ab[\"self_us\"] - a[\"self_us\"] - b[\"self_us\"]) < 1e-6
assert ab[\"events\"][\"selected\"] == a[\"events\"][\"selected\"] + b[\"events\"][\"selected\"]
devs = sorted(r[\"device\"] for r in ab[\"devices\"])
assert devs == [\"t1v-n-9eb622fc-w-0 (2)/TPU:0\", \"t1v-n-9eb622fc-w-0 (2)/TPU:1\",
                \"t1v-n-9eb622fc-w-0/TPU:0\", \"t1v-n-9eb622fc-w-0/TPU:1\"], devs
" &&
	test_must_fail =2 gdnctl trace summary "$a" "$(js 2026_01_11_21_26_41)" 2>err &&
	test_grep "several XPlane files" err
'

test_expect_success 'a profile directory with one xplane per host reads them all' '
	run=logdir/plugins/profile/2026_01_01_00_00_00 &&
	mkdir -p $run &&
	cp "$(xp 2026_01_11_21_26_41)" $run/host0.xplane.pb &&
	gzip -c "$(xp 2026_01_12_01_08_50)" >$run/host1.xplane.pb.gz &&
	gdnctl trace summary --json logdir >d.json 2>err &&
	test_grep "reading 2 XPlane files" err &&
	python3 -c "
import json
d = json.load(open(\"d.json\"))
assert len(d[\"hosts\"]) == 2 and len(d[\"devices\"]) == 4, (d[\"hosts\"], d[\"devices\"])
"
'

test_expect_success 'trace diff of a derived xplane against its JSON twin: every delta is zero' '
	for r in $RUNS; do
		gdnctl trace diff --json "$(xp $r)" "$(js $r)" >d.json &&
		python3 -c "
import json
d = json.load(open(\"d.json\"))
for k in (\"ops\", \"categories\", \"sources\"):
    assert d[k] and all(x[\"delta_us\"] == 0 and x[\"status\"] == \"both\" for x in d[k]), k
for k in (\"framework_op_stats\", \"op_profile_category\"):
    s = d[k]
    assert s[\"positive_deltas\"] == [] and s[\"negative_deltas\"] == [], k
    assert s[\"positive_delta_total\"] == 0 and s[\"negative_delta_total\"] == 0, k
" || { echo "run $r"; return 1; }
	done
'

test_expect_success '--device-span: device_offset_ps/device_duration_ps, the same in both formats' '
	r=2026_01_11_21_26_41 &&
	gdnctl trace summary --json --device-span "$(xp $r)" >x.json &&
	gdnctl trace summary --json --device-span "$(js $r)" >j.json &&
	python3 same.py x.json j.json &&
	python3 -c "
import json
a, b = json.load(open(\"x.json\")), json.load(open(\"x-$r.json\"))
assert a[\"total_us\"] != b[\"total_us\"], \"device span should differ from the event span\"
"
'

# one line on stderr, naming the file and a byte offset; nothing on stdout
fails_clearly() {
	f=$1 && shift &&
	test_expect_code 1 gdnctl trace summary "$@" "$f" >out 2>err &&
	test_line_count = 1 err &&
	test_grep -F "'$f'" err &&
	test_grep "byte offset [0-9]" err &&
	test_line_count = 0 out
}

test_expect_success 'the real corrupted xplane fails clearly' '
	fails_clearly "$BAD" &&
	test_grep "invalid XPlane at byte offset" err &&
	fails_clearly "$BAD" --json
'

cat >gen.py <<'PY'
import os, sys
from xplane_wire import fld, varint

def stat(mid, **kv):
    b = fld(1, 0, mid)
    if "i" in kv: b += fld(4, 0, kv["i"])
    if "ref" in kv: b += fld(7, 0, kv["ref"])
    if "s" in kv: b += fld(5, 2, kv["s"].encode())
    return b

event = fld(1, 0, 1) + fld(2, 0, 1000) + fld(3, 0, 5000000) + fld(4, 2, stat(2, i=7))
line = fld(1, 0, 3) + fld(2, 2, b"XLA Ops") + fld(3, 0, 1000) + fld(4, 2, event) + fld(4, 2, event)
em = fld(1, 0, 1) + fld(2, 2, b"fusion.1") + fld(5, 2, stat(1, ref=3)) + fld(5, 2, stat(4, s="jit(f)/mul"))
plane = (fld(1, 0, 7) + fld(2, 2, b"/device:TPU:0") + fld(3, 2, line) +
         fld(4, 2, fld(1, 0, 1) + fld(2, 2, em)) +
         b"".join(fld(5, 2, fld(1, 0, k) + fld(2, 2, fld(1, 0, k) + fld(2, 2, n.encode())))
                  for k, n in ((1, "hlo_category"), (2, "run_id"), (3, "loop fusion"), (4, "tf_op"))))
space = fld(1, 2, plane) + fld(4, 2, b"gen-host")
open("good.xplane.pb", "wb").write(space)
# every truncation inside the plane (which holds lines, events, stats and metadata)
# (and each with a 0 byte first, the default options, for the fuzz replay in cuts/)
os.mkdir("cuts")
for cut in range(1, len(space) - len(fld(4, 2, b"gen-host"))):
    open("cut-%04d.xplane.pb" % cut, "wb").write(space[:cut])
    open("cuts/cut-%04d.xplane.pb" % cut, "wb").write(b"\0" + space[:cut])
bad = {
    "zero-length": b"",
    "varint11": b"\x0a" + b"\xff" * 10 + b"\x01",
    "len-past-end": b"\x0a\x7f\x08\x01",
    "len-huge": b"\x0a\xff\xff\xff\xff\xff\xff\xff\xff\x7f" + b"\x08\x01",
    "event-len-past-end": fld(1, 2, fld(3, 2, b"\x22\x7f\x08\x01")),
}
for wt in (3, 4, 6, 7):
    bad["wt%d-top" % wt] = varint(9 << 3 | wt) + b"\x00" * 8
    bad["wt%d-event" % wt] = fld(1, 2, fld(3, 2, fld(4, 2, varint(9 << 3 | wt) + b"\x00")))
for name, data in bad.items():
    open("bad-%s.xplane.pb" % name, "wb").write(data)
# a million nested messages (an unknown field inside an unknown field ...)
n, inner = 1000000, b""
parts, length = [], 0
for _ in range(n):
    head = varint(15 << 3 | 2) + varint(length)
    parts.append(head)
    length += len(head)
deep = b"".join(reversed(parts))
open("deep.xplane.pb", "wb").write(fld(1, 2, fld(2, 2, b"/device:TPU:0") + deep))
PY

test_expect_success 'a generated xplane is read' '
	python3 gen.py &&
	gdnctl trace summary --json good.xplane.pb >g.json &&
	python3 -c "
import json
d = json.load(open(\"g.json\"))
assert d[\"hosts\"] == [\"gen-host\"] and d[\"events\"][\"selected\"] == 2, d
op = d[\"ops\"][0]
assert op[\"name\"] == \"fusion.1\" and op[\"category\"] == \"loop fusion\", op
assert op[\"tf_op\"] == \"jit(f)/mul\" and op[\"self_us\"] == 5.0, op
assert d[\"families\"][0][\"family\"] == \"fusion\", d[\"families\"]
"
'

# Every cut goes through the reader in one process (the fuzz target's
# replay, each input must fail with the offset in its one-line error), and
# one in five through `gdnctl trace summary` (185 gdnctl starts cost 20 s
# under ASan).
test_expect_success 'truncation anywhere inside a plane, line, event or stat: exit 1, one line' '
	FUZZ_XPLANE_FAILS="at byte offset" "$GDNCTL_BUILD_DIR/tests/fuzz_xplane_replay" cuts >replay.out &&
	test "$(cat replay.out)" = "replayed $(ls cut-*.xplane.pb | wc -l) inputs" &&
	test "$(ls cut-*.xplane.pb | wc -l)" -gt 100 &&
	for f in cut-*[08].xplane.pb; do
		fails_clearly $f || { echo "$f"; cat err out; return 1; }
	done
'

test_expect_success 'malformed: zero length, 11-byte varint, bad lengths, wire types 3 4 6 7' '
	for f in bad-*.xplane.pb; do
		fails_clearly $f || { echo "$f"; cat err; return 1; }
	done &&
	gdnctl trace summary bad-varint11.xplane.pb 2>err;
	test_grep "longer than" err &&
	gdnctl trace summary bad-wt7-event.xplane.pb 2>err;
	test_grep "wire type 7" err
'

test_expect_success 'a million nested messages: skipped in bounded memory, no crash' '
	gdnctl trace summary --json deep.xplane.pb >out 2>err &&
	test_grep "no device ops found" err
'

# Every byte of the generated file set to 00, FF, 7F and 0A in turn: all
# 4 x N variants go through the reader in one process (the fuzz target's
# replay, which renders each result and fails on a crash, a sanitizer report
# or a multi-line error; its first input byte picks the options, 0 is the
# default), and every eighth through `gdnctl trace summary` (exit 0 or 1, one
# line). One gdnctl start per variant cost more than the whole script.
test_expect_success 'the byte-flipped generated file: exit 0 or 1, one line, never a crash' '
	python3 - <<-\PY &&
	import os
	data = open("good.xplane.pb", "rb").read()
	os.mkdir("flips")
	for pos in range(len(data)):
	    for byte in (0x00, 0xFF, 0x7F, 0x0A):
	        b = bytearray(data); b[pos] = byte
	        open("flips/%03d-%02x" % (pos, byte), "wb").write(b"\0" + bytes(b))
	        if pos % 8 == 0:
	            open("flip-%03d-%02x.xplane.pb" % (pos, byte), "wb").write(bytes(b))
	PY
	"$GDNCTL_BUILD_DIR/tests/fuzz_xplane_replay" flips >replay.out &&
	test "$(cat replay.out)" = "replayed $(ls flips | wc -l) inputs" &&
	test_trace_summary_each flip-*.xplane.pb
'

# peak RSS in KB of gdnctl ARGS (stdout to out, stderr to err); nothing without /usr/bin/time
# The peak RSS in KB of one gdnctl run, or nothing (the bound is then not checked)
# under a sanitizer or an exec prefix, whose own memory would be counted.
rss_kb() {
	if [ -x /usr/bin/time ] && [ -z "${GDNCTL_TEST_EXEC_PREFIX:-}" ] &&
		[ -z "${GDNCTL_TEST_SANITIZED:-}" ]; then
		/usr/bin/time -f "%M" -o rss "$GDNCTL_BIN" "$@" >out 2>err && cat rss
	else
		gdnctl "$@" >out 2>err
	fi
}

test_expect_bound 'hostile: a million distinct tids (JSON) and 200,000 lines (xplane) stay under 64 MB' '
	python3 - <<-\PY &&
	import gzip, sys
	sys.path.insert(0, ".")
	exec(open("gen.py").read().split("event = ")[0])
	with gzip.open("tids.json.gz", "wt", compresslevel=6) as f:
	    f.write("{\"traceEvents\":[")
	    f.write(",".join("{\"ph\":\"X\",\"pid\":1,\"tid\":\"t%d\",\"ts\":%d,\"dur\":1,\"name\":\"k\",\"cat\":\"kernel\"}" % (i, i) for i in range(1000000)))
	    f.write("]}")
	em = fld(4, 2, fld(1, 0, 1) + fld(2, 2, fld(1, 0, 1) + fld(2, 2, b"op")))
	lines = b"".join(fld(3, 2, fld(1, 0, i) + fld(2, 2, b"XLA Ops") + fld(4, 2, fld(1, 0, 1) + fld(3, 0, 5)))
	                 for i in range(200000))
	open("lines.xplane.pb", "wb").write(fld(1, 2, fld(2, 2, b"/device:TPU:0") + lines + em))
	PY
	kb=$(rss_kb trace summary --json tids.json.gz) &&
	test_grep "more than 16384 tracks" err &&
	test_grep "\"capped\": 983616" out &&
	{ [ -z "$kb" ] || [ "$kb" -lt 65536 ] || { echo "RSS $kb KB"; false; }; } &&
	kb=$(rss_kb trace summary --json lines.xplane.pb) &&
	test_grep "more than 16384 tracks" err &&
	{ [ -z "$kb" ] || [ "$kb" -lt 65536 ] || { echo "RSS $kb KB"; false; }; }
'

test_expect_success 'hostile: 2,000 tracks nested 300 deep stay within the nesting budget' '
	python3 - <<-\PY &&
	import gzip
	with gzip.open("deep.json.gz", "wt", compresslevel=6) as f:
	    f.write("{\"traceEvents\":[")
	    f.write(",".join("{\"ph\":\"X\",\"pid\":1,\"tid\":%d,\"ts\":%d,\"dur\":%d,\"name\":\"k\",\"cat\":\"kernel\"}"
	                     % (t, i, 1000000 - 2 * i) for t in range(2000) for i in range(300)))
	    f.write("]}")
	PY
	kb=$(rss_kb trace summary --json deep.json.gz) &&
	test_grep "nested deeper than 4096 levels (or past 262144 open events on all tracks)" err &&
	python3 -c "import json,sys; d=json.load(open(\"out\")); e=d[\"events\"]; assert e[\"selected\"] == 600000 and 0 < e[\"deep\"] < 600000, e" &&
	{ [ -z "$kb" ] || [ "$kb" -lt 65536 ] || { echo "RSS $kb KB"; false; }; }
'

test_expect_success 'an explicit filter that matches nothing: exit 1, listing what the trace has' '
	test_expect_code 1 gdnctl trace summary --device TPU:7 "$(xp 2026_01_11_21_26_41)" >out 2>err &&
	test_grep "nothing in .* matches --device .TPU:7." err &&
	test_grep "devices: .*.TPU:0. (" err &&
	test_grep "threads: .* .XLA Ops. (" err &&
	test_line_count = 0 out &&
	test_expect_code 1 gdnctl trace summary --thread nope "$(js 2026_01_11_21_26_41)" 2>err &&
	test_grep "threads: .VLLM::EngineCor. (" err
'

test_expect_success 'trace diff of unlike traces (XLA against Kineto) warns' '
	gdnctl trace diff "$(xp 2026_01_11_21_26_41)" \
		"$traces/HolisticTraceAnalysis_triton_example.json.gz" >out 2>err &&
	test_grep "is an XLA trace and AFTER .* is a Kineto trace" err
'

test_done
