#!/bin/bash
# The loop's chaos soak (issue 13): tests/e2e/t0625-loop-chaos.sh driven
# longer, for CYCLES kill -9 + --resume cycles in each isolation mode, with
# no time bound. Prints, per mode: cycles, runs, decided iterations, agent
# commits on the branch, refs set aside under refs/gdnctl/, background
# children left by agents (item 6), user edits recovered from refs (in
# place), violations found (must be 0) and the wall time. Exits 1 when a
# violation was found, with the seed to replay it.
#
#   tests/bench/soak.sh [CYCLES]      (default 100)
#
# Environment: GDNCTL_BIN (default: build/dev/gdnctl), MODES (default
# "worktree in-place"), GDNCTL_CHAOS_SEED (one seed for every mode),
# GDNCTL_CHAOS_ITERATIONS (iterations a run, default 10),
# GDNCTL_CHAOS_STRICT_PROCS=1 (a surviving background child is a
# violation).
set -u

CYCLES=${1:-100}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
export GDNCTL_BIN=${GDNCTL_BIN:-$SRC/build/dev/gdnctl} GDNCTL_SOURCE_DIR=$SRC
export GDNCTL_CHAOS_CYCLES=$CYCLES GDNCTL_CHAOS_SECONDS=0
[ -x "$GDNCTL_BIN" ] || { echo "soak: no gdnctl binary at $GDNCTL_BIN" >&2; exit 2; }

status=0
printf '%-9s %6s %5s %8s %8s %9s %8s %10s %10s %7s %s\n' mode cycles runs decided commits set_aside orphans recovered violations wall seed
for mode in ${MODES:-worktree in-place}; do
	out=$(mktemp)
	if [ "$mode" = worktree ]; then unset GDNCTL_TEST_ISOLATION; else export GDNCTL_TEST_ISOLATION=$mode; fi
	bash "$SRC/tests/e2e/t0625-loop-chaos.sh" >"$out" 2>&1
	rc=$?
	line=$(grep '^# chaos figures:' "$out")
	if [ -z "$line" ]; then
		echo "soak: the $mode chaos run printed no figures (exit $rc):" >&2
		tail -n 20 "$out" >&2
		status=1
		rm -f "$out"
		continue
	fi
	fig() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$line"; }
	printf '%-9s %6s %5s %8s %8s %9s %8s %10s %10s %7s %s\n' "$mode" "$(fig cycles)" "$(fig runs)" \
		"$(fig decided)" "$(fig commits)" "$(fig set_aside)" "$(fig orphans)" "$(fig recovered)" \
		"$(fig violations)" "$(fig wall)" "$(fig seed)"
	if [ "$rc" != 0 ] || [ "$(fig violations)" != 0 ]; then
		grep '^# VIOLATION' "$out" | head -n 20
		status=1
	fi
	rm -f "$out"
done
exit $status
