#!/bin/bash
# Parallel hill-climb (issue 16): `gdnctl loop --workers N` for N = 1, 2, 4
# on a simulated workload, with the wall time, the speed-up against N = 1
# and each worker's busy fraction, side by side with the targets.
#
# Setup: a small git repository; a simulated agent (`--agent command`: it
# sleeps AGENT_SECONDS, then commits a new file of its own, named after its
# iteration, so that no two candidates conflict and every one can be
# promoted); a simulated validation (project.test_command `sleep
# TEST_SECONDS` on the local backend, no profile, --validation-mode
# required); ITERATIONS iterations in all.
#
# From the journal (loop.jsonl), per worker K (events without "worker"
# belong to worker 1): agent time = agent_start .. agent_end; validation
# time = each `validation` event's [ts - duration_ms, ts]; active wall =
# run_start .. run_end. Busy = (agent + validation) / active wall;
# accelerator busy = validation / active wall (the share of the run the
# worker's target is in use). Prints figures only; it never fails on time.
# Targets (issue 16): at N = 4, at least 3.2x faster than N = 1 and a busy
# fraction of at least 85 % with 4 targets. Issue 27 (the speculative
# pipeline), with ITERATIONS=64 WORKERS="1 4 8 16": N = 8 at least 6.5x,
# N = 16 at least 12x.
#
# OUTCOMES=night (issue 27): a night as it looks, not every candidate
# promotable. Each iteration's outcome is drawn with a fixed seed (SEED,
# default 27): 20 % a speed-up (promotable), 30 % failing tests, 50 % no
# gain. A failing candidate adds a file that makes the tests fail; one with
# no gain adds a file that a second check after the tests rejects (the
# share of a performance decision that says "no gain"; a performance
# decision itself runs without the train, docs/loop-workers.md), so both
# are validated, on their speculative base, and rejected. Target: N = 16
# at least 10x faster than N = 1, every target at least 85 % busy at N = 16
# with M = 16 (TARGETS_M=N, below). Both kinds of run use --max-failures -1.
#
# Every run's journal goes through tests/e2e/pipeline_check.py (every
# promotion validated on exactly the tree it landed as, no iteration
# decided twice, the journal parses): its violations are printed, with
# the re-checks (validations redone) and the deepest speculation.
#
#   tests/bench/loop-workers.sh [GDNCTL_BINARY]
#
# Without an argument: GDNCTL_BIN (default: build/dev/gdnctl).
# Environment: ITERATIONS (default 16), WORKERS (default "1 2 4"),
# AGENT_SECONDS (default 3), TEST_SECONDS (default 1), OUTCOMES
# (promotable, the default, or night), SEED, KEEP=1 keeps the work
# directory (the journals: $WORK/n<N>/logs/loop.jsonl).
# TARGETS_M: each run with N > 1 gets --targets M (agents and targets
# apart, docs/loop-workers.md); "N" for M = N. Then each target's busy
# fraction is printed too (validation on that target / the run's wall
# time): the issue's "every target at least 85 % busy at N = 16 with
# M = 16".
set -u

ITERATIONS=${ITERATIONS:-16}
WORKERS=${WORKERS:-1 2 4}
AGENT_SECONDS=${AGENT_SECONDS:-3}
TEST_SECONDS=${TEST_SECONDS:-1}
OUTCOMES=${OUTCOMES:-promotable}
SEED=${SEED:-27}
TARGETS_M=${TARGETS_M:-}
TARGET_BUSY=85
case $OUTCOMES in
promotable) TARGETS="4:3.2 8:6.5 16:12" BUSY_AT=4 ;;
night) TARGETS="16:10" BUSY_AT=16 ;;
*)
	echo "loop-workers bench: OUTCOMES is promotable or night, not '$OUTCOMES'" >&2
	exit 2
	;;
esac
# target_for N: the speed-up the issues ask of N workers ("-": none)
target_for() {
	local t
	for t in $TARGETS; do
		if [ "${t%%:*}" = "$1" ]; then
			echo ">=${t#*:}x"
			return
		fi
	done
	echo -
}
SRC=$(cd "$(dirname "$0")/../.." && pwd)

bin=${1:-${GDNCTL_BIN:-$SRC/build/dev/gdnctl}}
if [ ! -x "$bin" ]; then
	echo "loop-workers bench: no gdnctl binary at $bin" >&2
	exit 2
fi
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")" # the loop runs in the repo
if [ -z "${EPOCHREALTIME:-}" ]; then
	echo "loop-workers bench: needs bash 5 (EPOCHREALTIME)" >&2
	exit 2
fi
command -v python3 >/dev/null || {
	echo "loop-workers bench: needs python3 (to read the journals)" >&2
	exit 2
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/loop-workers-bench.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then
	trap 'echo "(work directory kept: $WORK)"' EXIT
else
	trap 'rm -rf "$WORK"' EXIT
fi

now_us() {
	local t=${EPOCHREALTIME/[.,]/}
	echo "$t"
}

export GIT_AUTHOR_NAME=bench GIT_AUTHOR_EMAIL=bench@example.com
export GIT_COMMITTER_NAME=bench GIT_COMMITTER_EMAIL=bench@example.com
export GIT_CONFIG_NOSYSTEM=1 HOME=$WORK/home
mkdir -p "$HOME"
git config --global init.defaultBranch main
git config --global gc.auto 0
# The configuration of the bench's own run, not the caller's.
unset GDNCTL_TEST_COMMAND GDNCTL_PROFILE_COMMAND GDNCTL_TRACE_GLOB GDNCTL_LOG_FILE \
	GDNCTL_LOOP_BACKEND

# The template repository: a README, the configuration, one commit.
TEMPLATE=$WORK/template
mkdir -p "$TEMPLATE"
(
	cd "$TEMPLATE" && git init -q &&
		echo "loop-workers bench" >README &&
		printf 'logs/\n' >.gitignore &&
		cat >gdnctl.yaml <<-EOF &&
			project:
			  backend: local
			  test_command: sh -c 'sleep $TEST_SECONDS; for f in changes/broken-* changes/nogain-*; do [ -e "\$f" ] && exit 1; done; exit 0'
			loop:
			  backend: local
		EOF
		git add -A && git commit -qm "bench: start"
) || {
	echo "loop-workers bench: cannot build the repository" >&2
	exit 2
}
printf 'Iteration {{ITERATION}} of {{TOTAL_ITERATIONS}} at {{HEAD_SHA}}\n' >"$WORK/prompt.md"

# The outcomes: line N is iteration N's (OUTCOMES=night: drawn with SEED).
python3 - "$SEED" "$ITERATIONS" "$OUTCOMES" >"$WORK/outcomes" <<-\EOF
	import random, sys
	rng = random.Random(int(sys.argv[1]))
	for _ in range(int(sys.argv[2])):
	    r = rng.random()
	    if sys.argv[3] != "night" or r < 0.2:
	        print("iteration")  # a speed-up: promotable
	    elif r < 0.5:
	        print("broken")  # failing tests
	    else:
	        print("nogain")
EOF
# The simulated agent: think for AGENT_SECONDS, then commit a new file
# named after the iteration (unique: candidates never conflict) and its
# outcome.
cat >"$WORK/agent" <<EOF
#!/bin/sh
it=\$(sed -n 's/^Iteration \([0-9][0-9]*\) of .*/\1/p' "\$1" | head -n 1)
[ -n "\$it" ] || it=x\$\$
kind=\$(sed -n "\${it}p" "$WORK/outcomes" 2>/dev/null)
sleep $AGENT_SECONDS
mkdir -p changes && echo "iteration \$it" >"changes/\${kind:-iteration}-\$it.txt" &&
	git add changes && git commit -qm "agent: iteration \$it (\${kind:-iteration})"
EOF
chmod +x "$WORK/agent"

# run_once N: a fresh copy of the repository, one loop with N workers;
# prints "WALL_US EXIT_CODE".
run_once() {
	local n=$1 t0 t1 rc dir=$WORK/n$1
	local -a extra=()
	rm -rf "$dir" && mkdir -p "$dir" && cp -a "$TEMPLATE" "$dir/repo"
	git -C "$dir/repo" status --short >/dev/null
	[ "$n" -eq 1 ] || extra=(--workers "$n")
	[ "$n" -eq 1 ] || [ -z "$TARGETS_M" ] || extra+=(--targets "${TARGETS_M/#N/$n}")
	t0=$(now_us)
	(cd "$dir/repo" && "$bin" loop --agent command --agent-cmd "$WORK/agent {prompt_file}" \
		--prompt-file "$WORK/prompt.md" --log-dir "$dir/logs" \
		--iterations "$ITERATIONS" --validation-mode required --max-failures -1 \
		--sleep-seconds 0 --retry-sleep-seconds 0 "${extra[@]}" >"$dir/console.log" 2>&1)
	rc=$?
	t1=$(now_us)
	echo "$((t1 - t0)) $rc"
}

# lanes JOURNAL N: per worker "K AGENT_MS VALIDATION_MS ACTIVE_MS"; with
# --targets instead per agent "aK AGENT_MS 0 ACTIVE_MS" and per target "tK 0
# VALIDATION_MS ACTIVE_MS" (a worker's agent runs as the agent its last
# `agent` event names, its validations on the target its last `target`
# event names); then a line "runs PROMOTED REBASES CONFLICTS RECHECKS".
lanes() {
	python3 - "$1" "$2" <<-\EOF
		import json, sys
		from datetime import datetime
		def ms(ts):
		    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp() * 1000.0
		n = int(sys.argv[2])
		agent = {k: 0.0 for k in range(1, n + 1)}
		valid = dict(agent)
		open_agent = {}
		on_target, by_target = {}, {}
		on_agent, by_agent = {}, {}
		start = end = None
		promoted = rebases = rechecks = 0
		conflicts = set()
		for line in open(sys.argv[1]):
		    try:
		        e = json.loads(line)
		    except ValueError:
		        continue
		    ev, t, k = e.get("event"), ms(e["ts"]), int(e.get("worker", 1))
		    if ev == "run_start" and start is None:
		        start = t
		    elif ev == "run_end":
		        end = t
		    elif ev == "agent_start":
		        open_agent[k] = t
		    elif ev == "agent_end" and k in open_agent:
		        d = t - open_agent.pop(k)
		        agent[k] = agent.get(k, 0.0) + d
		        if k in on_agent:
		            by_agent[on_agent[k]] += d
		    elif ev == "agent":
		        on_agent[k] = int(e["agent"])
		        by_agent.setdefault(on_agent[k], 0.0)
		    elif ev == "target":
		        on_target[k] = int(e["target"])
		        by_target.setdefault(on_target[k], 0.0)
		    elif ev == "validation" or ev == "measurement" and "duration_ms" in e:
		        valid[k] = valid.get(k, 0.0) + float(e.get("duration_ms", 0))
		        if k in on_target:
		            by_target[on_target[k]] += float(e.get("duration_ms", 0))
		    elif ev == "promote":
		        promoted += 1
		    elif ev == "rebase":
		        rebases += 1
		        if e.get("result") == "conflict":
		            conflicts.add(e.get("iteration"))
		    elif ev == "conflict":
		        conflicts.add(e.get("iteration"))
		    elif ev == "recheck":
		        rechecks += 1
		active = (end or t) - (start or 0)
		for k in sorted(agent) if not by_target else []:
		    print(k, round(agent[k]), round(valid.get(k, 0.0)), round(active))
		for k in sorted(by_agent):
		    print("a%d" % k, round(by_agent[k]), 0, round(active))
		for k in sorted(by_target):
		    print("t%d" % k, 0, round(by_target[k]), round(active))
		print("runs", promoted, rebases, len(conflicts), rechecks)
	EOF
}

echo "gdnctl loop --workers N${TARGETS_M:+ --targets $TARGETS_M}: $ITERATIONS iterations," \
	"agent ${AGENT_SECONDS} s + validation ${TEST_SECONDS} s each (local backend)," \
	"outcomes: $OUTCOMES; binary $bin"
[ "$OUTCOMES" != night ] ||
	echo "outcomes (seed $SEED):$(sort "$WORK/outcomes" | uniq -c | tr -s ' \n' ' ')"
printf '%-7s %8s %8s %8s %8s %6s %8s %8s %7s %7s %7s\n' workers "wall s" speed-up target \
	promoted worker "agent s" "valid s" "busy %" "accel %" target
base=
for n in $WORKERS; do
	read -r wall rc < <(run_once "$n")
	[ -n "$base" ] || base=$wall
	journal=$WORK/n$n/logs/loop.jsonl
	if [ "$rc" -ne 0 ] || [ ! -s "$journal" ]; then
		printf '%-7s %8.1f  the loop failed (exit %s): %s\n' "$n" \
			"$(awk -v w="$wall" 'BEGIN { print w / 1e6 }')" "$rc" \
			"$(tail -n 1 "$WORK/n$n/console.log" 2>/dev/null)"
		continue
	fi
	lanes "$journal" "$n" >"$WORK/n$n/lanes"
	read -r _ promoted rebases conflicts rechecks < <(grep '^runs ' "$WORK/n$n/lanes")
	first=1
	while read -r k agent_ms valid_ms active_ms; do
		[ "$k" != runs ] || continue
		if [ "$first" = 1 ]; then
			tgt=$(target_for "$n")
			awk -v n="$n" -v w="$wall" -v b="$base" -v t="$tgt" -v p="$promoted" \
				'BEGIN { printf "%-7s %8.1f %7.2fx %8s %8s ", n, w / 1e6, b / w, t, p }'
		else
			printf '%-7s %8s %8s %8s %8s ' "" "" "" "" ""
		fi
		btgt=-
		case $k in
		t*) [ "$n" -ne "$BUSY_AT" ] || btgt=">=${TARGET_BUSY}" ;;
		a*) ;;
		*) [ "$n" -ne "$BUSY_AT" ] || [ -n "$TARGETS_M" ] || btgt=">=${TARGET_BUSY}"
		   k=w$k ;;
		esac
		awk -v k="$k" -v a="$agent_ms" -v v="$valid_ms" -v act="$active_ms" -v t="$btgt" \
			'BEGIN { d = act > 0 ? act : 1;
				 printf "%6s %8.1f %8.1f %7.1f %7.1f %7s\n", k, a / 1000, v / 1000,
					100 * (a + v) / d, 100 * v / d, t }'
		first=0
	done <"$WORK/n$n/lanes"
	[ "$rebases" = 0 ] && [ "$conflicts" = 0 ] && [ "$rechecks" = 0 ] ||
		printf '%-7s %8s (%s rebases onto a moved champion, %s re-checks after validation, %s conflicts)\n' \
			"" "" "$rebases" "$rechecks" "$conflicts"
	check=$(python3 "$SRC/tests/e2e/pipeline_check.py" "$journal" 2>&1)
	printf '%-7s %8s check: %s\n' "" "" "$(echo "$check" | tail -n 1 | sed 's/^[^:]*: //')"
	echo "$check" | grep '^VIOLATION' | sed 's/^/        /'
done
echo "(busy = (agent + validation) / the run's wall time in the journal, per worker" \
	"(wK), or with --targets per agent (aK) and per target (tK); accel = validation" \
	"alone; wall s = the whole command)"
