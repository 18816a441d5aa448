#!/usr/bin/env bash
# Benchmark of `gdnctl trace summary` on XPlane against the same events as
# gzip JSON (figures, and a check of the two goals of issue 17).
#
#   tests/bench/xplane.sh [GDNCTL_BIN]     (default: build/gdnctl)
#
# Builds the ~300 MB (uncompressed) TPU trace that tests/bench/trace-summary.sh
# builds (the events of a real trace repeated with shifted timestamps, gzip
# level 6), and the same events written as an XSpace (<host>.xplane.pb, about
# 20 MB: one plane per process, one line per thread, per-op stats on the event
# metadata, as real TPU planes), in a temporary directory deleted at exit.
# Then the wall time and peak RSS (/usr/bin/time -v) of `gdnctl trace summary
# --json` on each, best of BENCH_RUNS (3). Both summaries must agree (events,
# self time); the goals are: XPlane at least 10x faster than gzip JSON, and
# XPlane RSS at most 64 MB. Exit 1 when a goal is missed. BENCH_MB (300).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${GDNCTL_BIN:-$here/build/gdnctl}}
shared=${GDNCTL_SHARED_DIR:-$here/../shared}
src=$shared/traces/tpu-inference_2026_01_11_21_26_41_t1v-n-9eb622fc-w-0.trace.json.gz
mb=${BENCH_MB:-300}
runs=${BENCH_RUNS:-3}

[ -x "$bin" ] || { echo "no gdnctl binary at $bin" >&2; exit 2; }
[ -f "$src" ] || { echo "no source trace $src; skipping" >&2; exit 0; }
[ -x /usr/bin/time ] || { echo "no /usr/bin/time; skipping" >&2; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdnctl-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export PYTHONPATH=$here/tests/e2e # xplane_wire.py

# The same events (same repeats and shifts) as an XSpace.
cat >"$tmp/toxplane.py" <<'PY'
import gzip, json, sys
from decimal import Decimal
from xplane_wire import fld
src, dst, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])

def ps(us):  # microseconds as json.dumps writes them -> picoseconds, as gdnctl parses them
    return int((Decimal(repr(us)) * 1000000).to_integral_value(rounding="ROUND_HALF_UP"))

ev = json.load(gzip.open(src))["traceEvents"]
meta = [e for e in ev if e.get("ph") == "M"]
body = [e for e in ev if e and e.get("ph") != "M"]
lo = min(e["ts"] for e in body)
span = max(e["ts"] + e.get("dur", 0) for e in body) - lo + 1000.0
pname, tname = {}, {}
for e in meta:
    if e.get("name") == "process_name":
        pname[e["pid"]] = e["args"]["name"]
    elif e.get("name") == "thread_name":
        tname[(e["pid"], e["tid"])] = e["args"]["name"]
STATS = ["hlo_category", "tf_op", "source", "long_name", "deduplicated_name"]
planes = {}
for e in body:
    if e.get("ph") != "X":
        continue
    planes.setdefault(e["pid"], {}).setdefault(e["tid"], []).append(e)
out = bytearray()
for pid in sorted(planes):
    smeta = {n: i + 1 for i, n in enumerate(STATS)}
    emeta = {}
    lines = bytearray()
    for tid in sorted(planes[pid]):
        evs = planes[pid][tid]
        base_ns = ps(min(e["ts"] for e in evs)) // 1000
        line = fld(1, 0, tid) + fld(2, 2, tname.get((pid, tid), str(tid)).encode()) + fld(3, 0, base_ns)
        parts = []
        for rep in range(reps):
            shift = rep * span
            for e in evs:
                args = e.get("args") or {}
                key = (e.get("name", ""),) + tuple(str(args.get(s, "")) for s in STATS)
                mid = emeta.setdefault(key, len(emeta) + 1)
                start = ps(round(e["ts"] + shift, 6))
                parts.append(fld(4, 2, fld(1, 0, mid) + fld(2, 0, start - base_ns * 1000) +
                                 fld(3, 0, ps(e.get("dur", 0)))))
        lines += fld(3, 2, line + b"".join(parts))
    p = fld(1, 0, pid) + fld(2, 2, pname.get(pid, str(pid)).encode()) + bytes(lines)
    for key, mid in emeta.items():
        m = fld(1, 0, mid) + fld(2, 2, key[0].encode())
        for i, s in enumerate(STATS):
            if key[i + 1]:
                m += fld(5, 2, fld(1, 0, i + 1) + fld(5, 2, key[i + 1].encode()))
        p += fld(4, 2, fld(1, 0, mid) + fld(2, 2, m))
    for n, i in smeta.items():
        p += fld(5, 2, fld(1, 0, i) + fld(2, 2, fld(1, 0, i) + fld(2, 2, n.encode())))
    out += fld(1, 2, p)
out += fld(4, 2, b"bench-host")
open(dst, "wb").write(out)
PY

# best-of-N: "WALL_SECONDS MAXRSS_KB CPU_SECONDS" (CPU = user + system, of the best run)
measure() {
	local best= rss= cpu= i s k c
	for i in $(seq "$runs"); do
		# wall at ns resolution (time(1) rounds it to 10 ms, a fifth of the xplane run)
		t0=$(date +%s%N)
		/usr/bin/time -v -o "$tmp/t" "$@" >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
		s=$(awk -v a="$t0" -v b="$(date +%s%N)" 'BEGIN {printf "%.4f", (b - a) / 1e9}')
		k=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/t")
		c=$(awk -F': ' '/User time|System time/ {v += $2} END {print v}' "$tmp/t")
		if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s rss=$k cpu=$c; fi
	done
	echo "$best $rss $cpu"
}

echo "gdnctl: $bin"
echo "source: $src"
echo "generating ~$mb MB trace..."
reps=$(python3 "$here/tests/bench/gen_trace.py" "$src" "$tmp/trace.json.gz" "$mb")
echo "writing the same events ($reps repeats) as an xplane..."
python3 "$tmp/toxplane.py" "$src" "$tmp/bench.xplane.pb" "$reps"
echo "json.gz: $(du -m "$tmp/trace.json.gz" | cut -f1) MB compressed, $(gzip -dc "$tmp/trace.json.gz" | wc -c | awk '{printf "%.0f", $1/1048576}') MB uncompressed"
echo "xplane:  $(du -m "$tmp/bench.xplane.pb" | cut -f1) MB"

"$bin" trace summary --json "$tmp/trace.json.gz" >"$tmp/j.json"
"$bin" trace summary --json "$tmp/bench.xplane.pb" >"$tmp/x.json"
python3 - "$tmp/j.json" "$tmp/x.json" <<'PY'
import json, sys
j, x = (json.load(open(p)) for p in sys.argv[1:])
assert j["events"]["selected"] == x["events"]["selected"], (j["events"], x["events"])
assert abs(j["self_us"] - x["self_us"]) <= 1e-9 * j["self_us"], (j["self_us"], x["self_us"])
print("same summary: %d selected events, self %.3f ms" % (x["events"]["selected"], x["self_us"] / 1000))
PY

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
read -r tj kj cj < <(measure "$bin" trace summary --json "$tmp/trace.json.gz")
read -r tx kx cx < <(measure "$bin" trace summary --json "$tmp/bench.xplane.pb")
printf '  %-40s %8s s wall %6s s CPU %8s MB\n' "trace summary --json trace.json.gz" "$tj" "$cj" "$(awk "BEGIN{printf \"%.1f\", $kj/1024}")"
printf '  %-40s %8s s wall %6s s CPU %8s MB\n' "trace summary --json bench.xplane.pb" "$tx" "$cx" "$(awk "BEGIN{printf \"%.1f\", $kx/1024}")"
echo "CPU time: xplane is $(awk "BEGIN{printf \"%.1f\", $cj / ($cx > 0 ? $cx : 0.005)}")x less"
speedup=$(awk "BEGIN{printf \"%.1f\", $tj / ($tx > 0 ? $tx : 0.005)}")
echo "xplane is ${speedup}x faster; xplane RSS $(awk "BEGIN{printf \"%.1f\", $kx/1024}") MB"
ok=0
awk "BEGIN{exit !($speedup >= 10)}" || { echo "GOAL MISSED: less than 10x faster" >&2; ok=1; }
[ "$kx" -le 65536 ] || { echo "GOAL MISSED: RSS above 64 MB" >&2; ok=1; }
exit $ok
