#!/bin/bash
# Decisions under drift and noise: `gdnctl loop --perf-mode on` with a
# profile command whose metric is true value x (1 + drift(t) + noise)
# (tests/e2e/noisy-profile.sh: a sine of +-10% over NOISE_PERIOD calls,
# uniform noise of +-3%, seeded), for the old policy (--no-perf-ab: the
# candidate's median against the champion's, measured earlier) and the new
# one (--perf-ab: champion and candidate profiled alternately, decided on
# the paired interval). Two sets of candidates, each iteration's commits
# reverted unless promoted (--perf-within-threshold-policy revert):
#   NOOPS no-op candidates (the value unchanged): the number promoted;
#   WINS candidates with a true +8%: the number promoted.
# The issue's targets: at most 1 of 40 no-ops, at least 18 of 20 wins.
# Prints figures only; it never fails on them.
#
#   tests/bench/decision-noise.sh [BINARY]
#
# Environment: NOOPS (40), WINS (20), REPEATS (--perf-repeats, 3),
# MAX_REPEATS (--perf-max-repeats, 12), SEED (1).
set -u

BIN=${1:-${GDNCTL_BIN:-build/dev/gdnctl}}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
NOOPS=${NOOPS:-40}
WINS=${WINS:-20}
REPEATS=${REPEATS:-3}
MAX_REPEATS=${MAX_REPEATS:-12}
SEED=${SEED:-1}
TMP=$(mktemp -d)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$TMP"' EXIT

cat >"$TMP/noop.sh" <<'EOF2'
#!/bin/sh
date +%s%N >touched.txt && git add touched.txt && git commit -qm "agent: no-op"
EOF2
cat >"$TMP/win.sh" <<'EOF2'
#!/bin/sh
python3 -c 'v=float(open("value.txt").read()); open("value.txt","w").write("%.6f\n" % (v*1.08))' &&
git add value.txt && git commit -qm "agent: +8%"
EOF2
chmod +x "$TMP/noop.sh" "$TMP/win.sh"
echo 'Iteration {{ITERATION}}' >"$TMP/prompt.md"

# run POLICY-FLAG AGENT N: prints the number of promotions among N iterations
run() {
	local flag=$1 agent=$2 n=$3 d
	d=$TMP/$agent$flag
	rm -rf "$d" && mkdir -p "$d" &&
		git init -q "$d/repo" &&
		(
			cd "$d/repo" && git config user.email b@e && git config user.name bench &&
				echo 1.0 >value.txt &&
				git add value.txt && git commit -qm base
		) || return 1
	(cd "$d/repo" && NOISE_STATE=$d/t NOISE_SEED=$SEED \
		GDNCTL_PROFILE_COMMAND="sh $SRC/tests/e2e/noisy-profile.sh" \
		"$BIN" loop --agent command --agent-cmd "$TMP/$agent.sh {prompt_file}" \
		--prompt-file "$TMP/prompt.md" --log-dir "$d/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --iterations "$n" --max-failures 100000 \
		--validation-mode profile-only --perf-mode on \
		--perf-within-threshold-policy revert --perf-regression-policy revert-continue \
		--perf-repeats "$REPEATS" --perf-max-repeats "$MAX_REPEATS" "$flag") \
		>"$d/out" 2>&1
	grep -c '"event":"perf_decision","iteration":[1-9][0-9]*,.*"decision":"promoted"' \
		"$d/logs/loop.jsonl"
}

printf '%-34s %12s %12s\n' "" "old policy" "new (A/B)"
old_noop=$(run --no-perf-ab noop "$NOOPS")
new_noop=$(run --perf-ab noop "$NOOPS")
printf '%-34s %12s %12s\n' "no-op candidates promoted (of $NOOPS)" "$old_noop" "$new_noop"
old_win=$(run --no-perf-ab win "$WINS")
new_win=$(run --perf-ab win "$WINS")
printf '%-34s %12s %12s\n' "+8% candidates promoted (of $WINS)" "$old_win" "$new_win"
echo "(--perf-repeats $REPEATS, --perf-max-repeats $MAX_REPEATS, seed $SEED; targets: <= 1 and >= 18)"
