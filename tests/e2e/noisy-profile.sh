#!/bin/sh
# A profile command with drift and noise, for the A/B decision tests
# (t0742, tests/bench/decision-noise.sh). Prints `throughput/mfu=X` where
# X = true x (1 + drift(t) + noise): the true value is the first word of
# value.txt in the current directory (the commit being profiled); t counts
# the calls (the counter file NOISE_STATE, shared by the champion's and the
# candidate's worktrees); drift is a slow sine of amplitude NOISE_DRIFT
# (default 0.10) over NOISE_PERIOD calls (default 400); noise is uniform in
# +-NOISE_JITTER (default 0.03), a hash of NOISE_SEED (default 1) and t.
: "${NOISE_STATE:?}"
t=$(cat "$NOISE_STATE" 2>/dev/null || echo 0)
echo $((t + 1)) >"$NOISE_STATE"
awk -v t="$t" -v seed="${NOISE_SEED:-1}" -v drift="${NOISE_DRIFT:-0.10}" \
	-v period="${NOISE_PERIOD:-400}" -v jitter="${NOISE_JITTER:-0.03}" '
NR == 1 {
	h = sin(t * 12.9898 + seed * 78.233 + 0.5) * 43758.5453
	u = h - int(h); if (u < 0) u += 1
	x = $1 * (1 + drift * sin(2 * 3.141592653589793 * t / period) + jitter * (2 * u - 1))
	printf "throughput/mfu=%.6f\n", x
}' value.txt
