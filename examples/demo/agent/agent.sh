#!/bin/sh
# gdnctl demo: the EXAMPLE AGENT.
#
# THIS IS NOT AN AI CODING AGENT. It is a deterministic script that stands in
# for one so that `gdnctl demo` runs without an API key: it reads the
# iteration number from the prompt file gdnctl loop gives it
# (`# Demo hill-climb: iteration N of M`) and applies the fixed patch N of
# patches/ with `git apply`, appends a running-log entry with
# `- Commit: (pending)`, and commits. The five patches are real changes to
# matmul.c, chosen to exercise every decision of the loop:
#   1 i-k-j loop order        a real speed-up          -> kept (promoted)
#   2 unroll k by two         breaks the test (odd n)  -> reverted (tests fail)
#   3 register accumulator    slower                   -> reverted (regression)
#   4 names and comments      same machine code        -> reverted (within threshold)
#   5 4x8 register tiles      a second real speed-up   -> kept (promoted)
# Patches 2 to 5 apply to the tree that patch 1 leaves.
#
# With --workers 2 (`gdnctl demo --workers 2`: two workers, each running
# this agent in a worktree of its own), the series is one the two workers
# can run side by side; iteration N still picks the patch:
#   1 i-k-j loop order        a real speed-up          -> kept (promoted)
#   2 row pointers            the same idea, written   -> a speed-up on its own,
#     (6-row-pointers.patch)  another way, from the       but it conflicts with
#                             starting commit             iteration 1, promoted
#                                                         meanwhile: discarded
#   3 unroll k by two         breaks the test (odd n)  -> reverted (tests fail)
#   4 names and comments      same machine code        -> reverted (within threshold)
#   5 4x8 register tiles      a second real speed-up   -> kept (promoted)
# so the champion is the one the serial series reaches (patches 1 and 5).
# Iterations 1 and 2 start together from the starting commit; the agent of
# iteration 2 stands for a slower thinker: it commits only once iteration 1
# has been promoted (it waits for that commit on the loop's champion ref,
# refs/gdnctl/champion/*), so its change always meets the moved champion.
# Iterations 3 to 5 start after that promotion, from the tree patch 1 leaves.
#
# usage: agent.sh [--workers 1|2] PROMPT_FILE    (run in the project's working tree)
set -eu

say() { printf '[example agent] %s\n' "$*"; }

workers=1
if [ "${1:-}" = --workers ]; then
	workers=${2:?usage: agent.sh [--workers 1|2] PROMPT_FILE}
	shift 2
fi
case $workers in
1 | 2) ;;
*)
	say "the example agent's patch series are for 1 or 2 workers, not $workers" >&2
	exit 2
	;;
esac
prompt=${1:?usage: agent.sh [--workers 1|2] PROMPT_FILE}
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
it=$(sed -n 's/^# Demo hill-climb: iteration \([0-9][0-9]*\) of .*/\1/p' "$prompt" | head -n 1)
if [ -z "$it" ]; then
	say "no '# Demo hill-climb: iteration N of M' line in $prompt" >&2
	exit 2
fi

# The worker this agent runs for: GDNCTL_WORKER when the loop sets it, else
# the name of the worker's worktree (.../w<K>); for the messages only.
worker=${GDNCTL_WORKER:-}
if [ -z "$worker" ]; then
	case ${PWD##*/} in
	w[0-9]*) worker=${PWD##*/w} ;;
	esac
fi

# In the two-worker series, iterations 2 to 4 are the serial series' 6, 2
# and 4 (6: the row-pointer variant below), so every later `case` is shared.
pick=$it
case $workers:$it in
*:[1-5]) ;;
*) pick=none ;;
esac
if [ "$workers" = 2 ]; then
	case $it in
	2) pick=6 ;;
	3) pick=2 ;;
	esac
fi

case $pick in
1)
	patch=1-loop-order.patch
	subject="matmul: i-k-j loop order"
	kind="a real speed-up"
	hypothesis="The i-j-k loop walks B down a column (stride n floats, 1 KiB at n=256), so almost every load misses L1 and nothing vectorizes. The i-k-j order walks rows of B and C with stride 1."
	summary="matmul.c: loops reordered to i-k-j; each row of C is cleared, then gets A[i][k] times row k of B added for every k."
	expected="two to three times faster (stride-1 inner loop, vectorized)."
	;;
2)
	patch=2-unroll-k.patch
	subject="matmul: unroll k by two"
	kind="a change that breaks the correctness test"
	hypothesis="Each pass over a row of C loads and stores it; adding two rows of B per pass halves those loads and stores."
	summary="matmul.c: the k loop is unrolled by two (k += 2, two rows of B per pass over C). The example drops the remainder step on purpose: odd n lose the last row of B."
	expected="faster, but make test fails for every odd n."
	;;
3)
	patch=3-register-accumulator.patch
	subject="matmul: accumulate each C element in a register"
	kind="a slower change"
	hypothesis="Keeping C[i][j] in a register over the whole k range saves the n loads and stores of each row of C."
	summary="matmul.c: back to a dot product per element (i, j, then k), with a register accumulator and one store."
	expected="slower: B is walked down columns again (the cost patch 1 removed)."
	;;
4)
	patch=4-rename-and-comment.patch
	subject="matmul: clearer names and comments"
	kind="a change that does nothing for speed"
	hypothesis="Readability only: names that say which row is which, and comments."
	summary="matmul.c: ci, aik, bk renamed c_row, a_ik, b_row; comments added. The compiler emits the same machine code."
	expected="no change in speed (within noise)."
	;;
5)
	patch=5-register-tiles.patch
	subject="matmul: 4x8 register tiles"
	kind="a second real speed-up"
	hypothesis="The i-k-j loop still loads and stores a row of C for every k: it is bound by loads and stores, not by arithmetic. A 4 x 8 tile of C held in eight 4-wide vector registers needs no C traffic inside the k loop."
	summary="matmul.c: 4 x 8 tiles of C accumulated in registers (GCC/Clang vector extension, 32 multiply-adds per k); edges that do not fill a tile use the i-k-j loop."
	expected="several times faster (compute-bound micro-kernel)."
	;;
6)
	patch=6-row-pointers.patch
	subject="matmul: walk rows of B and C with pointers"
	kind="a real speed-up that conflicts with the other worker's promoted one"
	hypothesis="The i-j-k loop walks B down a column (stride n floats), so almost every load misses L1. Building row i of C from rows of B, with pointers walking the rows of A and C, makes every inner loop stride 1."
	summary="matmul.c: row i of C is cleared, then gets A[i][k] times row k of B added for every k; pointers walk the rows of A and C."
	expected="two to three times faster than the starting kernel; the same idea as the other worker's i-k-j loop order, so it conflicts with it once that one is promoted."
	;;
*)
	say "THIS IS A DETERMINISTIC EXAMPLE AGENT: it has patches for iterations 1 to 5 only, not $it" >&2
	exit 3
	;;
esac

say "THIS IS A DETERMINISTIC EXAMPLE AGENT, not an AI."
if [ "$workers" = 2 ]; then
	say "iteration $it${worker:+ (worker $worker)}: applying patches/$patch ($kind): $subject"
else
	say "iteration $it: applying patches/$patch ($kind): $subject"
fi
if ! git apply --check "$here/patches/$patch"; then
	say "patches/$patch does not apply to this tree (the example series expects patch 1 kept)" >&2
	exit 1
fi
git apply "$here/patches/$patch"
which="patch $it of 5"
[ "$workers" = 1 ] || which="two-worker series, iteration $it of 5 (patch $pick)"
if [ "$pick" = 6 ]; then
	# A slower thinker: commit once the other worker's iteration 1 is the
	# champion (at most 4 minutes: the demo's agent timeout is 5).
	one="matmul: i-k-j loop order"
	waited=0
	until git log --format=%s --glob='refs/gdnctl/champion/*' 2>/dev/null | grep -qxF "$one"; do
		if [ "$waited" -ge 240 ]; then
			say "'$one' was not promoted within ${waited} s: committing anyway"
			break
		fi
		[ $((waited % 10)) -ne 0 ] || say "thinking: waiting for the other worker's '$one' to be promoted (${waited} s)"
		sleep 1
		waited=$((waited + 1))
	done
fi
cat >>running-log.md <<LOG

### Iteration $it - ${subject#matmul: }

- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
- Commit: (pending)
- Hypothesis: $hypothesis
- Change summary: $summary
- Correctness checks: \`make -s test\` (run by the loop's validation gate).
- Profile run: \`make -s bench\` (run by the loop; trace \`out/trace.json.gz\`).
- Expected effect: $expected (example agent $which: $kind)
LOG
git add -A
git commit -q -m "$subject" -m "Example agent (deterministic, not an AI), $which: $kind."
say "committed $(git rev-parse --short=12 HEAD): $subject"
