#!/usr/bin/env bash
# Run the libFuzzer targets for real, not only their corpus replays.
#
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
#
# Builds the `fuzz` CMake preset (clang, libclang-rt-14-dev) when needed,
# finds the targets in tests/fuzz/fuzz_*.c (TARGET: "ray" or "fuzz_ray";
# all by default), and runs each one, in turn, for SECONDS (default 60) from
# a scratch copy of tests/fuzz/corpus/TARGET/. New units that add coverage
# and are at most FUZZ_MAX_LEN bytes are merged back (-merge=1) into
# tests/fuzz/corpus/TARGET/ as fuzz-<sha1>. A crash, leak, timeout or
# out-of-memory input is a finding: it is saved under
# build/fuzz/findings/TARGET/ and the commands to replay it are printed.
#
# Exit status: 0 no finding, 1 a finding, 2 usage error, missing tools or
# a failed build, 130 interrupted (Ctrl-C stops the fuzzer and cleans up).
#
# Environment: FUZZ_MAX_LEN (4096: the largest
# unit kept in the corpus), FUZZ_TIMEOUT (25: seconds one input may take),
# FUZZ_MERGE=0 (do not touch tests/fuzz/corpus), FUZZ_JOBS (build jobs).
set -u

usage() {
	sed -n '2,/^$/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

src=$(cd "$(dirname "$0")/../.." && pwd) || exit 2
cd "$src" || exit 2 # cmake --preset reads CMakePresets.json here
build=$src/build/fuzz # the fuzz preset's binaryDir
max_len=${FUZZ_MAX_LEN:-4096}
unit_timeout=${FUZZ_TIMEOUT:-25}
merge=${FUZZ_MERGE:-1}
jobs=${FUZZ_JOBS:-$(nproc 2>/dev/null || echo 2)}
findings_dir=$build/findings

secs=60
case "${1:-}" in
-h | --help) usage ;;
'') ;;
*[!0-9]*) ;;
*)
	secs=$1
	shift
	;;
esac
[ "$secs" -gt 0 ] 2>/dev/null || usage

# ---- targets ----
all=()
for f in "$src"/tests/fuzz/fuzz_*.c; do
	[ -e "$f" ] || continue
	n=${f##*/fuzz_}
	all+=("${n%.c}")
done
targets=()
for t in "$@"; do
	t=${t#fuzz_}
	t=${t%.c}
	found=
	for a in "${all[@]}"; do [ "$a" = "$t" ] && found=1; done
	if [ -z "$found" ]; then
		echo "run.sh: no fuzz target '$t' (tests/fuzz/fuzz_$t.c); targets: ${all[*]}" >&2
		exit 2
	fi
	targets+=("$t")
done
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
[ ${#targets[@]} -gt 0 ] || { echo "run.sh: no tests/fuzz/fuzz_*.c" >&2; exit 2; }

# ---- tools ----
arch=$(uname -m)
rt=
command -v clang >/dev/null 2>&1 && rt=$(clang -print-file-name="libclang_rt.fuzzer-$arch.a")
if ! command -v clang >/dev/null 2>&1 || [ "${rt#/}" = "$rt" ] || [ ! -f "$rt" ]; then
	echo "run.sh: libFuzzer needs clang and its runtime (Debian 12: clang," \
		"libclang-rt-14-dev); bash .ci/setup fuzz installs them" >&2
	exit 2
fi
for p in cmake setsid sha1sum; do
	command -v $p >/dev/null 2>&1 || { echo "run.sh: $p is not installed" >&2; exit 2; }
done

# ---- scratch space, and stopping cleanly ----
work=$(mktemp -d "${TMPDIR:-/tmp}/gdnctl-fuzz.XXXXXX") || exit 2
child=
# shellcheck disable=SC2317 # called by the traps
cleanup() {
	if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
		# the child leads its own process group: stop it and what it started
		kill -TERM -- "-$child" 2>/dev/null
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$child" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL -- "-$child" 2>/dev/null
		wait "$child" 2>/dev/null
	fi
	rm -rf "$work"
}
# shellcheck disable=SC2317
interrupted() {
	trap - INT TERM
	echo >&2
	echo "run.sh: interrupted; the fuzzer is stopped, tests/fuzz/corpus is unchanged" \
		"by the target that was running" >&2
	cleanup
	exit 130
}
trap interrupted INT TERM
trap cleanup EXIT

# Run "$@" in its own process group (setsid: an asynchronous command is
# no group leader, so setsid execs it in place and $! is its pid), output
# in $log, and wait for it: a signal reaches our trap at once, and the trap
# stops the child's whole group (the build's compilers, the merge's
# inner process).
run_child() {
	setsid "$@" >"$log" 2>&1 </dev/null &
	child=$!
	wait "$child"
	local rc=$?
	child=
	return $rc
}

# ---- build ----
bins=()
for t in "${targets[@]}"; do bins+=("fuzz_$t" "fuzz_${t}_replay"); done
log=$work/build.log
# A cache without libFuzzer (CMake drops the cache when the compiler's path
# changes, and the preset's values with it) is configured afresh.
if [ -f "$build/CMakeCache.txt" ] && ! grep -q '^GDNCTL_LIBFUZZER:BOOL=ON$' "$build/CMakeCache.txt"; then
	rm -f "$build/CMakeCache.txt"
fi
echo "run.sh: building ${#targets[@]} fuzz targets in $build (cmake --preset fuzz)" >&2
if ! run_child cmake --preset fuzz ||
	! run_child cmake --build --preset fuzz -j"$jobs" --target "${bins[@]}"; then
	tail -n 40 "$log" >&2
	echo "run.sh: the fuzz build failed" >&2
	exit 2
fi

bin_of() { # the built binary named $1
	local p
	for p in "$build/tests/$1" "$build/$1"; do
		[ -x "$p" ] && { echo "$p"; return 0; }
	done
	return 1
}

export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

stat_of() { # the value of libFuzzer's final stat $1 in $2
	sed -n "s/^stat::$1: *\([0-9]*\).*/\1/p" "$2" | tail -n 1
}

rows=()
total_findings=0
for t in "${targets[@]}"; do
	fuzzer=$(bin_of "fuzz_$t") || { echo "run.sh: fuzz_$t was not built" >&2; exit 2; }
	replay=$(bin_of "fuzz_${t}_replay") || replay="$build/tests/fuzz_${t}_replay"
	corpus=$src/tests/fuzz/corpus/$t
	seed=$work/$t/seed new=$work/$t/new art=$work/$t/artifacts
	mkdir -p "$seed" "$new" "$art"
	[ -d "$corpus" ] && cp -R "$corpus"/. "$seed"/
	log=$work/$t/fuzz.log

	echo "run.sh: fuzz_$t for ${secs}s ($(find "$seed" -type f | wc -l) seed inputs)" >&2
	run_child "$fuzzer" -max_total_time="$secs" -timeout="$unit_timeout" \
		-print_final_stats=1 -artifact_prefix="$art/" "$new" "$seed"
	rc=$?
	execs=$(stat_of number_of_executed_units "$log")
	units=$(stat_of new_units_added "$log")

	findings=0
	for a in "$art"/crash-* "$art"/leak-* "$art"/timeout-* "$art"/oom-*; do
		[ -f "$a" ] || continue
		mkdir -p "$findings_dir/$t"
		cp "$a" "$findings_dir/$t/"
		saved=$findings_dir/$t/${a##*/}
		cp "$log" "$findings_dir/$t/${a##*/}.log"
		findings=$((findings + 1))
		{
			echo "run.sh: fuzz_$t: finding saved as $saved"
			echo "  its log:            $saved.log"
			echo "  replay (libFuzzer): $fuzzer $saved"
			echo "  replay (CTest's):   $replay $saved"
			echo "  once fixed, keep it: cp $saved $corpus/"
		} >&2
	done
	if [ "$rc" -ne 0 ] && [ "$findings" -eq 0 ]; then
		# stopped with no input to show (a crash outside an input, a broken binary)
		mkdir -p "$findings_dir/$t"
		cp "$log" "$findings_dir/$t/fuzz.log"
		tail -n 20 "$log" >&2
		echo "run.sh: fuzz_$t exited $rc with no reproducer; log: $findings_dir/$t/fuzz.log" >&2
		findings=1
	fi
	total_findings=$((total_findings + findings))

	# Merge: the new units that add coverage to the corpus, at most max_len bytes.
	kept=0
	if [ "$merge" != 0 ] && [ "$findings" -eq 0 ] && [ -n "$(ls -A "$new")" ]; then
		merged=$work/$t/merged
		mkdir -p "$merged"
		cp -R "$seed"/. "$merged"/
		log=$work/$t/merge.log
		# -use_counters=0: a unit is kept for an edge no other input reaches, not
		# for reaching a known edge more often (that would keep hundreds)
		if run_child "$fuzzer" -merge=1 -use_counters=0 -timeout="$unit_timeout" \
			"$merged" "$new"; then
			for f in "$merged"/*; do
				if [ ! -f "$f" ] || [ -e "$seed/${f##*/}" ]; then
					continue
				fi
				[ "$(stat -c %s "$f")" -le "$max_len" ] || continue
				sum=$(sha1sum <"$f")
				dest=$corpus/fuzz-${sum%% *}
				[ -e "$dest" ] && continue
				mkdir -p "$corpus"
				cp "$f" "$dest"
				kept=$((kept + 1))
			done
		else
			echo "run.sh: fuzz_$t: the merge failed (log: $log); corpus left alone" >&2
		fi
	fi
	rows+=("$t ${execs:-?} ${units:-?} $kept $findings")
	rm -rf "${work:?}/$t"
done

printf '\n%-16s %12s %10s %6s %9s\n' target executions "new units" kept findings
for r in "${rows[@]}"; do
	# shellcheck disable=SC2086
	printf '%-16s %12s %10s %6s %9s\n' $r
done
if [ "$total_findings" -gt 0 ]; then
	echo "run.sh: $total_findings finding(s); reproducers under $findings_dir" >&2
	exit 1
fi
exit 0
