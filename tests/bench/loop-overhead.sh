#!/bin/bash
# The loop's own cost per iteration, beyond the agent, on a large
# repository: `gdnctl loop --agent command` for ITERATIONS iterations in a
# git repository of FILES committed files, with two trivial agents (one
# that commits a one-line change, one that does nothing), for each binary
# given. Overhead per iteration = (wall time of the loop - time in the
# agent, summed from the journal's agent_end duration_ms) / iterations.
# With perf, also the CPU time of the gdnctl process alone (children not
# counted: steadier than wall time on a loaded machine); with strace, the
# stat-family system calls of one run (the agent's own git commit
# included). Prints figures only; it never fails on time.
# The targets (issue 26): at most 20 ms per iteration in place and 40 ms
# with a worktree, on 10,000 files.
#
#   tests/bench/loop-overhead.sh [BINARY...]
#
# ISOLATION=worktree|in-place passes --isolation (default: the binary's own).
# Without arguments: GDNCTL_BIN (default: build/dev/gdnctl). To compare
# with the main branch, build it elsewhere and pass both binaries, e.g.
#   git -C /work/main archive HEAD | (mkdir -p /tmp/base/src && tar -x -C /tmp/base/src)
#   cmake -S /tmp/base/src -B /tmp/base/build -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
#   cmake --build /tmp/base/build --target gdnctl
#   tests/bench/loop-overhead.sh /tmp/base/build/gdnctl build/release/gdnctl
#
# Environment: FILES (default 10000), ITERATIONS (default 20), RUNS (runs
# per binary and agent, the best is shown; default 3), STRACE=0 and PERF=0
# to skip the stat count and the CPU time, MARGINAL=0 to skip the marginal
# cost: the loop run again with 2 x ITERATIONS, and (overhead of that run -
# overhead of the first) / ITERATIONS, which leaves out what a run pays
# once (making a worktree of FILES files, removing it). The in-iteration
# column is steadier still: the loop's time between each iteration_start
# and iteration_end of the journal, less the agent's (best of RUNS). On a
# disk where creating a file costs half a millisecond, the worktree's
# checkout alone moves the whole-run figure by a second from run to run.
set -u

FILES=${FILES:-10000}
ITERATIONS=${ITERATIONS:-20}
RUNS=${RUNS:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TARGET_MS=40 # --isolation worktree, the default
[ "${ISOLATION:-}" = in-place ] && TARGET_MS=20

if [ $# -eq 0 ]; then
	set -- "${GDNCTL_BIN:-$SRC/build/dev/gdnctl}"
fi
bins=()
for b in "$@"; do
	if [ ! -x "$b" ]; then
		echo "loop-overhead bench: no gdnctl binary at $b" >&2
		exit 2
	fi
	bins+=("$(cd "$(dirname "$b")" && pwd)/$(basename "$b")") # the loop runs in the repo
done
set -- "${bins[@]}"
if [ -z "${EPOCHREALTIME:-}" ]; then
	echo "loop-overhead bench: needs bash 5 (EPOCHREALTIME)" >&2
	exit 2
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/loop-overhead-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	echo "$t"
}

export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_CONFIG_NOSYSTEM=1 HOME=$WORK/home
mkdir -p "$HOME" "$WORK/agents"
git config --global init.defaultBranch main
# no background `gc --auto` changing the repositories under the timing
git config --global gc.auto 0

# The template repository: FILES files in 100 directories, one commit.
TEMPLATE=$WORK/template
mkdir -p "$TEMPLATE"
(
	cd "$TEMPLATE" && git init -q &&
		for ((d = 0; d < 100; d++)); do
			mkdir -p "d$d"
		done &&
		for ((i = 0; i < FILES; i++)); do
			echo "file $i" >"d$((i % 100))/f$i.txt"
		done &&
		echo 'logs/' >.gitignore &&
		git add -A && git commit -qm "$FILES files" && git gc -q
) || {
	echo "loop-overhead bench: cannot build the repository" >&2
	exit 2
}
printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}} at {{HEAD_SHA}}\n' >"$WORK/prompt.md"

cat >"$WORK/agents/commit" <<'EOF'
#!/bin/sh
echo "change $(date +%s%N)" >>d0/f0.txt && git commit -qam "agent: one line"
EOF
cat >"$WORK/agents/nothing" <<'EOF'
#!/bin/sh
echo "nothing to do"
EOF
chmod +x "$WORK/agents/commit" "$WORK/agents/nothing"

# run_once BIN AGENT [PREFIX...]: a fresh copy of the repository, one
# loop; prints "WALL_US AGENT_MS".
run_once() {
	local bin=$1 agent=$2 t0 t1 agent_ms iterations=${RUN_ITERATIONS:-$ITERATIONS}
	shift 2
	rm -rf "$WORK/repo" && cp -a "$TEMPLATE" "$WORK/repo"
	# the copy's files are newer than its index: let git refresh it once, as any user's would be
	git -C "$WORK/repo" status --short >/dev/null
	t0=$(now_us)
	(cd "$WORK/repo" && "$@" "$bin" loop --agent command --agent-cmd "$WORK/agents/$agent" \
		--prompt-file "$WORK/prompt.md" --log-dir "$WORK/repo/logs" \
		--iterations "$iterations" --sleep-seconds 0 --retry-sleep-seconds 0 \
		--allow-no-commit ${ISOLATION:+--isolation "$ISOLATION"} >/dev/null 2>&1)
	t1=$(now_us)
	agent_ms=$(sed -n 's/.*"event":"agent_end".*"duration_ms":\([0-9]*\).*/\1/p' \
		"$WORK/repo/logs/loop.jsonl" | awk '{ s += $1 } END { print s + 0 }')
	# the loop's time inside its iterations (iteration_start .. iteration_end,
	# the journal's millisecond stamps), the agent's included
	iter_ms=$(sed -n 's/.*"ts":"[0-9-]*T\([0-9:.]*\)Z".*"event":"iteration_\(start\|end\)".*/\2 \1/p' \
		"$WORK/repo/logs/loop.jsonl" | awk -F'[ :]' '
		{ t = ($2 * 3600 + $3 * 60 + $4) * 1000 }
		$1 == "start" { s = t } $1 == "end" && s != "" { d = t - s; if (d < 0) d += 86400000; sum += d; s = "" }
		END { printf "%d", sum }')
	echo "$((t1 - t0)) $agent_ms $iter_ms"
}

# best_overhead BIN AGENT: the best of RUNS runs; sets best, best_wall, best_agent
# and best_in (the in-iteration figure, its own best)
best_overhead() {
	local r wall agent_ms iter_ms over
	best= best_in=
	for ((r = 0; r < RUNS; r++)); do
		read -r wall agent_ms iter_ms < <(run_once "$1" "$2")
		over=$((wall - agent_ms * 1000))
		if [ -z "$best" ] || [ "$over" -lt "$best" ]; then
			best=$over best_wall=$wall best_agent=$agent_ms
		fi
		if [ -z "$best_in" ] || [ "$((iter_ms - agent_ms))" -lt "$best_in" ]; then
			best_in=$((iter_ms - agent_ms))
		fi
	done
}

printf '%-32s %-8s %9s %9s %14s %7s %12s %11s %14s %13s\n' binary agent "wall ms" "agent ms" \
	"overhead ms/it" target "cpu ms/it" "stat calls" "marginal ms/it" "in-iter ms/it"
for bin in "$@"; do
	for agent in commit nothing; do
		marginal=-
		if [ "${MARGINAL:-1}" != 0 ]; then
			RUN_ITERATIONS=$((2 * ITERATIONS)) best_overhead "$bin" "$agent"
			marginal=$best
		fi
		best_overhead "$bin" "$agent"
		[ "$marginal" = - ] ||
			marginal=$(awk -v a="$marginal" -v b="$best" -v n="$ITERATIONS" \
				'BEGIN { printf "%.3f", (a - b) / n / 1000 }')
		cpu=-
		if [ "${PERF:-1}" != 0 ] && command -v perf >/dev/null &&
			perf stat -e task-clock true >/dev/null 2>&1; then
			run_once "$bin" "$agent" perf stat -x, -e task-clock --no-inherit \
				-o "$WORK/perf.out" >/dev/null
			cpu=$(awk -F, -v n="$ITERATIONS" '$3 == "task-clock" || $3 ~ /^task-clock/ \
				{ printf "%.3f", $1 / n }' "$WORK/perf.out")
			[ -n "$cpu" ] || cpu=-
		fi
		stats=-
		if [ "${STRACE:-1}" != 0 ] && command -v strace >/dev/null; then
			run_once "$bin" "$agent" strace -f -c -o "$WORK/strace.out" \
				-e trace=stat,newfstatat,lstat,statx,fstat >/dev/null
			stats=$(awk '$NF ~ /^(stat|newfstatat|lstat|statx|fstat)$/ { s += $4 } END { print s + 0 }' \
				"$WORK/strace.out")
		fi
		name=$bin
		[ ${#name} -le 32 ] || name=...${name: -29}
		awk -v b="$name" -v a="$agent" -v w="$best_wall" -v am="$best_agent" \
			-v o="$best" -v n="$ITERATIONS" -v t="$TARGET_MS" -v s="$stats" -v c="$cpu" \
			-v m="$marginal" -v i="$best_in" \
			'BEGIN { printf "%-32s %-8s %9.1f %9d %14.3f %7d %12s %11s %14s %13.1f\n", b, a, w / 1000, am, o / n / 1000, t, c, s, m, i / n }'
	done
done
echo "($FILES files, $ITERATIONS iterations, best of $RUNS runs; stat calls: whole run, agent included;"
echo " in-iter: the loop's own time inside its iterations, from the journal's iteration_start .. iteration_end"
echo " less the agent's, which leaves out what a run pays once: making and removing a worktree of FILES files)"
