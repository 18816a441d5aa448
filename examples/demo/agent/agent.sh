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
# usage: agent.sh PROMPT_FILE    (run in the project's working tree)
set -eu

say() { printf '[example agent] %s\n' "$*"; }

prompt=${1:?usage: agent.sh PROMPT_FILE}
here=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)
it=$(sed -n 's/^# Demo hill-climb: iteration \([0-9][0-9]*\) of .*/\1/p' "$prompt" | head -n 1)
if [ -z "$it" ]; then
	say "no '# Demo hill-climb: iteration N of M' line in $prompt" >&2
	exit 2
fi

case $it in
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
*)
	say "THIS IS A DETERMINISTIC EXAMPLE AGENT: it has patches for iterations 1 to 5 only, not $it" >&2
	exit 3
	;;
esac

say "THIS IS A DETERMINISTIC EXAMPLE AGENT, not an AI."
say "iteration $it: applying patches/$patch ($kind): $subject"
if ! git apply --check "$here/patches/$patch"; then
	say "patches/$patch does not apply to this tree (the example series expects patch 1 kept)" >&2
	exit 1
fi
git apply "$here/patches/$patch"
cat >>running-log.md <<LOG

### Iteration $it - ${subject#matmul: }

- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ)
- Commit: (pending)
- Hypothesis: $hypothesis
- Change summary: $summary
- Correctness checks: \`make -s test\` (run by the loop's validation gate).
- Profile run: \`make -s bench\` (run by the loop; trace \`out/trace.json.gz\`).
- Expected effect: $expected (example agent patch $it of 5: $kind)
LOG
git add -A
git commit -q -m "$subject" -m "Example agent (deterministic, not an AI), patch $it of 5: $kind."
say "committed $(git rev-parse --short=12 HEAD): $subject"
