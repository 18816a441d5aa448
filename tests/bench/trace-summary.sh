#!/usr/bin/env bash
# Benchmark of `gdnctl trace summary` (figures only, never pass/fail on time).
#
#   tests/bench/trace-summary.sh [GDNCTL_BIN]     (default: build/gdnctl)
#
# Builds a ~300 MB (uncompressed) TPU trace by repeating the events of a real
# trace from $GDNCTL_SHARED_DIR/traces with shifted timestamps (gzip level 6),
# and a ~1 GB one, in a temporary directory that is deleted at exit. Then, side
# by side: wall time and peak RSS of `gdnctl trace summary --json` (also with
# inflate on the main thread), `gzip -dc FILE >/dev/null` (the zlib floor), and
# a Python json.load aggregation of the same file. Environment: BENCH_MB (300),
# BENCH_BIG_MB (1024; 0 skips the big file), BENCH_RUNS (3: best of N).
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-${GDNCTL_BIN:-$here/build/gdnctl}}
shared=${GDNCTL_SHARED_DIR:-$here/../shared}
src=$shared/traces/tpu-inference_2026_01_11_21_26_41_t1v-n-9eb622fc-w-0.trace.json.gz
mb=${BENCH_MB:-300}
big_mb=${BENCH_BIG_MB:-1024}
runs=${BENCH_RUNS:-3}

[ -x "$bin" ] || { echo "no gdnctl binary at $bin" >&2; exit 2; }
[ -f "$src" ] || { echo "no source trace $src; skipping" >&2; exit 0; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gdnctl-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/agg.py" <<'PY'
# The Python way: json.load, then sum XLA Ops durations per op name.
import collections, gzip, json, sys
d = json.load(gzip.open(sys.argv[1]))
pn, tn = {}, {}
for e in d["traceEvents"]:
    if e.get("ph") == "M":
        if e.get("name") == "process_name":
            pn[e["pid"]] = e["args"]["name"]
        elif e.get("name") == "thread_name":
            tn[(e["pid"], e["tid"])] = e["args"]["name"]
ops = collections.Counter()
for e in d["traceEvents"]:
    if e.get("ph") == "X" and tn.get((e["pid"], e["tid"])) == "XLA Ops" \
            and "/device:" in pn.get(e["pid"], ""):
        ops[e["name"]] += e["dur"]
print(len(ops), sum(ops.values()))
PY

# best-of-N wall seconds and the peak RSS (KB) of that run: "SECONDS KB"
measure() {
	local best= rss= i
	for i in $(seq "$runs"); do
		if [ -x /usr/bin/time ]; then
			/usr/bin/time -f "%e %M" -o "$tmp/t" "$@" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; return 1; }
		else
			python3 -c '
import resource, subprocess, sys, time
t = time.time(); subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, check=True)
open(sys.argv[1], "w").write("%.2f %d\n" % (time.time() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
' "$tmp/t" "$@"
		fi
		read -r s k <"$tmp/t"
		if [ -z "$best" ] || awk "BEGIN{exit !($s < $best)}"; then best=$s rss=$k; fi
	done
	echo "$best $rss"
}

row() { printf '  %-44s %8s s %8s MB  %s\n' "$1" "$2" "$(awk "BEGIN{printf \"%.1f\", $3/1024}")" "${4:-}"; }

bench_file() {
	local f=$1 label=$2 with_python=$3 g t tst py
	echo "== $label: $(du -m "$f" | cut -f1) MB compressed, $(gzip -dc "$f" | wc -c | awk '{printf "%.0f", $1/1048576}') MB uncompressed"
	read -r g gk < <(measure gzip -dc "$f")
	read -r t tk < <(measure "$bin" trace summary --json "$f")
	read -r tst tstk < <(measure "$bin" trace summary --json --single-thread "$f")
	row "gzip -dc FILE >/dev/null" "$g" "$gk"
	row "gdnctl trace summary --json" "$t" "$tk" "$(awk "BEGIN{printf \"%.2fx gzip\", $t/$g}")"
	row "gdnctl trace summary --json --single-thread" "$tst" "$tstk" "$(awk "BEGIN{printf \"%.2fx gzip\", $tst/$g}")"
	if [ "$with_python" = 1 ]; then
		read -r py pyk < <(runs=1 measure python3 "$tmp/agg.py" "$f")
		row "python3 json.load aggregation" "$py" "$pyk" "$(awk "BEGIN{printf \"gdnctl is %.1fx faster\", $py/$t}")"
	fi
}

echo "gdnctl: $bin"
echo "source: $src"
echo "generating ~$mb MB trace..."
python3 "$here/tests/bench/gen_trace.py" "$src" "$tmp/trace-$mb.json.gz" "$mb" >/dev/null
bench_file "$tmp/trace-$mb.json.gz" "~$mb MB TPU trace" 1
rm -f "$tmp/trace-$mb.json.gz"
if [ "$big_mb" -gt 0 ]; then
	echo "generating ~$big_mb MB trace..."
	python3 "$here/tests/bench/gen_trace.py" "$src" "$tmp/trace-$big_mb.json.gz" "$big_mb" >/dev/null
	bench_file "$tmp/trace-$big_mb.json.gz" "~$big_mb MB TPU trace" 0
fi
