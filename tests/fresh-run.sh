#!/usr/bin/env bash
# Run the whole CI as a new machine would: `bash .ci/run` (the README's
# second command) in a fresh clone of HEAD, with a new, empty HOME and an
# empty XDG_CACHE_HOME, no standard input and CI=true, RUNS times in a row
# (default 2), each in a clone of its own. Prints each run's exit status, wall
# time and CTest summaries, with the ten slowest tests, and exits non-zero
# when any run failed.
#
#   tests/fresh-run.sh [RUNS]
#
# Only committed work is tested (the clone is of HEAD); the shared material
# (../shared beside this checkout) is linked beside each clone, as CI lays
# it. Logs and clones stay under $FRESH_RUN_DIR (default: a new folder
# under /tmp), which the script names at the end.
set -euo pipefail

runs=${1:-2}
case $runs in '' | *[!0-9]* | 0) echo "usage: tests/fresh-run.sh [RUNS]" >&2; exit 2 ;; esac
src=$(cd "$(dirname "$0")/.." && pwd)
base=${FRESH_RUN_DIR:-$(mktemp -d /tmp/gdnctl-fresh-run.XXXXXX)}
mkdir -p "$base"
if [ -n "$(git -C "$src" status --porcelain --untracked-files=no)" ]; then
	echo "[fresh-run] warning: uncommitted changes in $src are not tested (the clone is of HEAD)" >&2
fi
head=$(git -C "$src" rev-parse --short HEAD)

fail=0
summary=()
for ((i = 1; i <= runs; i++)); do
	dir=$base/run$i
	rm -rf "$dir"
	mkdir -p "$dir/home" "$dir/cache"
	git clone -q --no-hardlinks "$src" "$dir/gdnctl"
	git -C "$dir/gdnctl" checkout -q --detach "$head"
	[ -d "$src/../shared" ] && ln -s "$(cd "$src/../shared" && pwd)" "$dir/shared"
	echo "[fresh-run] run $i of $runs: $dir/gdnctl at $head (log: $dir/ci.log)"
	start=$(date +%s)
	rc=0
	(cd "$dir/gdnctl" && env -i PATH="$PATH" HOME="$dir/home" XDG_CACHE_HOME="$dir/cache" \
		CI=true LANG=C.UTF-8 ${GDNCTL_TEST_TOOLS:+GDNCTL_TEST_TOOLS="$GDNCTL_TEST_TOOLS"} \
		bash .ci/run </dev/null >"$dir/ci.log" 2>&1) || rc=$?
	wall=$(($(date +%s) - start))
	[ $rc -eq 0 ] || fail=1
	sed -n '/^=== the ten slowest/,$p' "$dir/ci.log"
	grep -E '^[0-9]+% tests passed|^The following tests FAILED|^[[:space:]]+[0-9]+ - ' "$dir/ci.log" | sed 's/^/  /' || true
	summary+=("run $i: exit $rc, wall $((wall / 60)) min $((wall % 60)) s")
	echo "[fresh-run] ${summary[-1]}"
done
echo "[fresh-run] $head, $runs run(s) in $base:"
printf '  %s\n' "${summary[@]}"
exit $fail
