#!/usr/bin/env bash
# Every real trace in $GDNCTL_SHARED_DIR/traces: gdnctl's totals against an
# independent computation in Python (json module, exact decimals, self time
# as the union of each selected track's intervals), to 1e-6 relative.
. "$(dirname "$0")/lib.sh"

traces=$GDNCTL_SHARED_DIR/traces
[ -d "$traces" ] || skip_all "no shared traces in $traces"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"

cat >check.py <<'PY'
import collections, decimal, gzip, json, sys

decimal.getcontext().prec = 60
D = decimal.Decimal
KINETO = {"kernel", "gpu_memcpy", "gpu_memset"}

def load(path):
    with open(path, "rb") as f:
        magic = f.read(2)
    opener = gzip.open if magic == b"\x1f\x8b" else open
    with opener(path, "rb") as f:
        return json.load(f, parse_float=D, parse_int=D)

def num(v):
    if isinstance(v, str):
        try:
            return D(v)
        except decimal.InvalidOperation:
            return None
    return v if isinstance(v, D) else None

def key(v):
    # pids/tids: integers, or text for anything else (as gdnctl keys them)
    return str(int(v)) if isinstance(v, D) and v == v.to_integral_value() else str(v)

def expected(doc, thread=None):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    pname, tname = {}, {}
    complete = []  # (pid, tid, start, dur, name, cat)
    open_b = collections.defaultdict(list)
    for e in events:
        if not isinstance(e, dict):
            continue
        ph, pid, tid = e.get("ph"), key(e.get("pid", D(0))), key(e.get("tid", D(0)))
        if ph == "M":
            n = (e.get("args") or {}).get("name")
            if n is not None and e.get("name") == "process_name":
                pname[pid] = n
            elif n is not None and e.get("name") == "thread_name":
                tname[(pid, tid)] = n
        elif ph == "X":
            ts, dur = num(e.get("ts")), num(e.get("dur"))
            if ts is not None and dur is not None and dur >= 0:
                complete.append((pid, tid, ts, dur, e.get("name", ""), e.get("cat")))
        elif ph == "B":
            if num(e.get("ts")) is not None:
                open_b[(pid, tid)].append(e)
        elif ph == "E":
            if open_b[(pid, tid)]:
                b = open_b[(pid, tid)].pop()
                ts = num(e.get("ts"))
                if ts is not None and ts >= num(b["ts"]):
                    complete.append((pid, tid, num(b["ts"]), ts - num(b["ts"]),
                                     b.get("name", ""), b.get("cat")))
    # xprof's device ops: "Stream #N" threads of /device:GPU processes, else
    # "XLA Ops" threads of /device: processes
    gpu = {k for k, n in tname.items()
           if n.startswith("Stream #") and "/device:GPU" in pname.get(k[0], "")}
    xla = gpu or {k for k, n in tname.items()
                  if n == "XLA Ops" and "/device:" in pname.get(k[0], "")}
    if thread:
        sel = [c for c in complete if tname.get((c[0], c[1])) == thread]
    elif xla:
        sel = [c for c in complete if (c[0], c[1]) in xla]
    else:
        sel = [c for c in complete if c[5] in KINETO]
    tracks = collections.defaultdict(list)
    ops = collections.defaultdict(D)
    for c in sel:
        tracks[(c[0], c[1])].append((c[2], c[2] + c[3]))
        ops[c[4]] += c[3]
    union = D(0)
    for iv in tracks.values():
        iv.sort()
        cur_s, cur_e = iv[0]
        for s, e in iv[1:]:
            if s > cur_e:
                union += cur_e - cur_s
                cur_s, cur_e = s, e
            else:
                cur_e = max(cur_e, e)
        union += cur_e - cur_s
    return {"total": len(events), "complete": len(complete), "selected": len(sel),
            "total_us": sum((c[3] for c in sel), D(0)), "self_us": union, "ops": ops}

def close(a, b):
    a, b = float(a), float(b)
    return abs(a - b) <= 1e-6 * max(abs(a), abs(b)) + 1e-9

path, got_path = sys.argv[1], sys.argv[2]
want = expected(load(path), sys.argv[3] if len(sys.argv) > 3 else None)
got = json.load(open(got_path))
bad = []
for k in ("total", "complete", "selected"):
    if got["events"][k] != want[k]:
        bad.append("events.%s: gdnctl %s, python %s" % (k, got["events"][k], want[k]))
for k in ("total_us", "self_us"):
    if not close(got[k], want[k]):
        bad.append("%s: gdnctl %.6f, python %.6f" % (k, got[k], want[k]))
gops = {o["name"]: o for o in got["ops"]}
if set(gops) != set(want["ops"]):
    bad.append("op names differ: %d vs %d" % (len(gops), len(want["ops"])))
for name, tot in want["ops"].items():
    if name in gops and not close(gops[name]["total_us"], tot):
        bad.append("op %r total_us: gdnctl %.6f, python %.6f" % (name, gops[name]["total_us"], tot))
print("%s: events %d/%d/%d total_us %.6f self_us %.6f (python %.6f %.6f) %s" % (
    path.rsplit("/", 1)[-1], got["events"]["total"], got["events"]["complete"],
    got["events"]["selected"], got["total_us"], got["self_us"], want["total_us"],
    want["self_us"], "OK" if not bad else "MISMATCH"))
for b in bad[:20]:
    print("  " + b)
sys.exit(1 if bad else 0)
PY

n=0
for f in "$traces"/*.json "$traces"/*.json.gz; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	name=$(basename "$f")
	test_expect_success "real trace $name: totals match an independent Python computation" '
		gdnctl trace summary --json "$f" >got.json 2>err &&
		python3 check.py "$f" got.json >report
	'
	[ -f report ] && sed "s/^/# /" report && rm -f report
done

# Host threads nest (up to 25 deep): self time must still be the union of the intervals.
for f in "$traces"/tpu-inference_*.trace.json.gz; do
	name=$(basename "$f")
	test_expect_success "nested host thread of $name: self time is the union of its intervals" '
		gdnctl trace summary --json --thread VLLM::EngineCor "$f" >got.json 2>err &&
		python3 check.py "$f" got.json VLLM::EngineCor >report &&
		python3 -c "import json; d=json.load(open(\"got.json\")); assert d[\"self_us\"] < d[\"total_us\"]"
	'
	[ -f report ] && sed "s/^/# --thread VLLM::EngineCor /" report && rm -f report
done

test_expect_success 'there were real traces to check' '
	test $n -gt 0
'

test_expect_success 'the TPU traces select XLA Ops of both devices, with steps' '
	for f in "$traces"/tpu-inference_*.trace.json.gz; do
		gdnctl trace summary --json "$f" >j.json &&
		python3 -c "
import json,sys
d=json.load(open(\"j.json\"))
assert d[\"schema\"]==\"gdnctl.trace_summary.v1\"
assert d[\"mode\"]==\"xla\", d[\"mode\"]
assert [x[\"device\"] for x in d[\"devices\"]]==[\"TPU:0\",\"TPU:1\"], d[\"devices\"]
assert d[\"steps\"]==1 and d[\"steps_from\"].startswith(\"XLA Modules jit_step_fun(\")
assert d[\"ops\"]==sorted(d[\"ops\"],key=lambda o:-o[\"self_us\"])
assert d[\"events\"][\"late\"]==0
" || return 1
	done
'

test_expect_success 'the derived perfetto trace equals its source trace' '
	gdnctl trace summary --json "$traces"/DERIVED_tpu-inference_2026_01_11_21_26_41_perfetto_trace.json.gz |
		sed "/\"path\"/d" >a &&
	gdnctl trace summary --json "$traces"/tpu-inference_2026_01_11_21_26_41_t1v-n-9eb622fc-w-0.trace.json.gz |
		sed "/\"path\"/d" >b &&
	test_cmp a b
'

test_done
