#!/bin/bash
# Time `gdnctl lint-log` on the real running log (about 850 KB, 10,467
# lines) against the 50 ms target, and, when python3 is present, a Python
# re-implementation of the original gdnctl.py rules as a baseline. Prints
# figures only; it never fails on time.
#
#   tests/bench/lint-log.sh [RUNS]
#
# Environment: GDNCTL_BIN (default: build/gdnctl), GDNCTL_SHARED_DIR
# (default: ../shared next to the source tree), LOG (default: the real log).
set -u

RUNS=${1:-50}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${GDNCTL_BIN:-$SRC/build/gdnctl}
SHARED=${GDNCTL_SHARED_DIR:-$SRC/../shared}
LOG=${LOG:-$SHARED/logs/gdn_pallas_tpu_hillclimb.md}
TARGET_MS=50

if [ ! -x "$BIN" ]; then
	echo "lint-log bench: no gdnctl binary at $BIN (set GDNCTL_BIN)" >&2
	exit 2
fi
if [ ! -f "$LOG" ]; then
	echo "lint-log bench: no log at $LOG; nothing to time"
	exit 0
fi
if [ -z "${EPOCHREALTIME:-}" ]; then
	echo "lint-log bench: needs bash 5 (EPOCHREALTIME)" >&2
	exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gdnctl-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Microseconds since the epoch, without forking.
now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	echo "$t"
}

# time_cmd LABEL CMD...: run CMD $RUNS times (after one warm-up run) and
# print mean and min in ms. The exit code of CMD is ignored (findings exit 1).
time_cmd() {
	local label=$1 i t0 t1 d total=0 min=
	shift
	"$@" >/dev/null 2>&1
	for ((i = 0; i < RUNS; i++)); do
		t0=$(now_us)
		"$@" >/dev/null 2>&1
		t1=$(now_us)
		d=$((t1 - t0))
		total=$((total + d))
		if [ -z "$min" ] || [ "$d" -lt "$min" ]; then
			min=$d
		fi
	done
	awk -v l="$label" -v t="$total" -v n="$RUNS" -v m="$min" -v tgt="$TARGET_MS" \
		'BEGIN { printf "%-52s %9.3f %9.3f %9d\n", l, t / n / 1000, m / 1000, tgt }'
}

echo "log:  $LOG ($(wc -c <"$LOG") bytes, $(wc -l <"$LOG") lines)"
echo "bin:  $BIN"
echo "runs: $RUNS per case (+1 warm-up); times are whole processes, wall clock"
echo
printf "%-52s %9s %9s %9s\n" "case" "mean ms" "min ms" "target"
# Run from an empty directory outside any repository so that only the
# lint is measured (plus process start, configuration and discovery).
cd "$WORK" || exit 1
time_cmd "gdnctl lint-log (last-entry)" "$BIN" lint-log --log-file "$LOG"
time_cmd "gdnctl lint-log --scope all" "$BIN" lint-log --log-file "$LOG" --scope all
time_cmd "gdnctl lint-log --scope all --require-fields" \
	"$BIN" lint-log --log-file "$LOG" --scope all --require-fields
time_cmd "gdnctl lint-log --scope all --require-fields --json" \
	"$BIN" lint-log --log-file "$LOG" --scope all --require-fields --json
time_cmd "gdnctl --version (process start only)" "$BIN" --version

if ! command -v python3 >/dev/null; then
	echo
	echo "python3 not found: no baseline"
	exit 0
fi

# The original rules (pending, this commit, monotonic headings), re-implemented
# from docs/gdnctl-lint-log.md; reports everything instead of stopping early.
cat >"$WORK/orig_lint.py" <<\PY
import re, sys, time
HEAD = re.compile(r"^### Iteration (?P<num>\d+)(?P<suffix>[A-Za-z]*)\b")

def lint(path, scope):
    lines = open(path, encoding="utf-8").read().splitlines()
    start = None
    if scope == "last-entry":
        for i, line in enumerate(lines):
            if line.startswith("### Iteration "):
                start = i
        scoped = [] if start is None else range(start, len(lines))
    else:
        scoped = range(len(lines))
    issues = []
    for i in scoped:
        s = lines[i].strip()
        if s == "- Commit: (pending)" or s == "- Commit: this commit":
            issues.append(i + 1)
    prev = None
    for i, line in enumerate(lines):
        m = HEAD.match(line.strip())
        if not m:
            continue
        num, suf = int(m["num"]), m["suffix"]
        if prev and (num < prev[0] or (num == prev[0] and (not suf or (prev[1] and suf <= prev[1])))):
            issues.append(i + 1)
        prev = (num, suf)
    return issues

if __name__ == "__main__":
    if sys.argv[1] == "inproc":
        runs, path = int(sys.argv[2]), sys.argv[3]
        for scope in ("last-entry", "all"):
            lint(path, scope)
            best, total = None, 0.0
            for _ in range(runs):
                t0 = time.perf_counter()
                lint(path, scope)
                d = (time.perf_counter() - t0) * 1000
                total += d
                best = d if best is None or d < best else best
            print("%-52s %9.3f %9.3f %9d" % ("python rules in-process (%s)" % scope, total / runs, best, 50))
    else:
        sys.exit(1 if lint(sys.argv[2], sys.argv[1]) else 0)
PY
time_cmd "python3 original rules (last-entry)" python3 "$WORK/orig_lint.py" last-entry "$LOG"
time_cmd "python3 original rules (all)" python3 "$WORK/orig_lint.py" all "$LOG"
time_cmd "python3 -c pass (interpreter start only)" python3 -c pass
python3 "$WORK/orig_lint.py" inproc "$RUNS" "$LOG"
