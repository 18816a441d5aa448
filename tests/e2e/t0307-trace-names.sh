#!/usr/bin/env bash
# Names that tell kernels apart (issue 29, item 8): trace tables fit the
# terminal's real width (TIOCGWINSZ on stdout, then $COLUMNS), print whole
# names when stdout is not a terminal (so that `| grep` finds them) or with
# --wide, and never print two different names the same: the real H200
# profile's cuBLAS GEMM kernels that differ only in their tile shape
# (nvjet_sm90_tst_168x128_..._TNN and _144x128_..._TNN) and in their
# layout (_NNT, _NTT) stay apart in a narrow terminal.
. "$(dirname "$0")/lib.sh"

T=$GDNCTL_SHARED_DIR/traces/REAL_jax-gpu-h200_mlp-train_vm.xplane.pb
[ -f "$T" ] || skip_all "no $T (GDNCTL_SHARED_DIR)"
command -v python3 >/dev/null || skip_all "needs python3 for a pseudo-terminal"
TTY="python3 $GDNCTL_SOURCE_DIR/tests/e2e/ttywin.py"
GEMM1=nvjet_sm90_tst_168x128_64x5_1x2_h_bz_TNN
GEMM2=nvjet_sm90_tst_144x128_64x6_1x2_h_bz_TNN

# names FILE: the family column of a summary table, found by its heading
# (three headings are two words: "self ms", "total ms", "mean ms"; a trace
# with steps has a "ms/step" column too).
names() {
	sed -n "/^  self ms/,/^  \.\.\./p" "$1" | sed "/^  \.\.\./d" |
		awk "NR == 1 { for (i = 1; i <= NF; i++) if (\$i == \"family\") c = i - 3; next } { print \$c }"
}

test_expect_success 'piped: whole names, whatever $COLUMNS says' '
	COLUMNS=60 gdnctl trace summary --top 0 "$T" >out &&
	test_grep -F "$GEMM1" out &&
	test_grep -F "$GEMM2" out &&
	test_grep -F nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_bias_NNT out &&
	names out >n && test_grep ! -F "..." n &&
	COLUMNS=60 gdnctl trace summary --top 0 "$T" | grep -c nvjet_sm90_tst_1 >count &&
	echo 4 >expect && test_cmp expect count
'

test_expect_success 'a narrow terminal: shortened, and no two names print the same' '
	for w in 60 70 80 90 100; do
		$TTY $w "$GDNCTL_BIN" trace summary --top 0 "$T" >out.$w &&
		names out.$w >n.$w &&
		test "$(wc -l <n.$w)" -ge 19 &&
		test_must_fail =1 grep -q -F -x "$GEMM1" n.$w &&
		sort n.$w | uniq -d >dups.$w &&
		test_cmp /dev/null dups.$w || { echo "width $w:"; cat n.$w; return 1; }
	done &&
	test_grep -F "..." n.70 &&
	awk "length(\$0) > 100 && /^  / { print; bad = 1 } END { exit bad }" out.100 &&
	: the two TNN GEMMs, rows 2 and 8 by self time, differ where their names do &&
	sed -n 2p n.70 >g1 && sed -n 8p n.70 >g2 &&
	test_grep "168" g1 && test_grep "144" g2
'

test_expect_success 'the terminal'"'"'s real width, not $COLUMNS: 250 columns print whole names' '
	COLUMNS=80 $TTY 250 "$GDNCTL_BIN" trace summary "$T" >out &&
	names out >n &&
	test_grep -x -F "$GEMM1" n &&
	test_grep -x -F "$GEMM2" n &&
	test_grep ! -F "..." n
'

test_expect_success 'a terminal that tells no size: $COLUMNS; --wide: whole names' '
	COLUMNS=80 $TTY 0 "$GDNCTL_BIN" trace summary "$T" >out &&
	names out >n &&
	test_grep -F "..." n &&
	sort n | uniq -d >dups && test_cmp /dev/null dups &&
	$TTY 70 "$GDNCTL_BIN" trace summary --wide "$T" >out &&
	names out >n &&
	test_grep -x -F "$GEMM1" n &&
	test_grep ! -F "..." n &&
	gdnctl trace summary -h >help &&
	test_grep -e "--wide" help
'

test_done
