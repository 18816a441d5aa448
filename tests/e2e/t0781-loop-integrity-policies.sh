#!/usr/bin/env bash
# The integrity gate's configuration and policies (issue 28) on a small
# shell project: the profile prints the metric (cost.txt) and writes a
# trace whose device time per step comes from dev_us.txt, so an agent can
# move one ruler without the other. Setup refusals, the rulers rule under
# revert / flag / off, a holdout file changed during the run, the gate off
# by default, and `gdnctl loop verify` with the report beside it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

# Iteration 1 edits what INTEGRITY_CASE says (cost.txt only: the metric alone; both: a real win).
agent ruler <<'EOF2'
case $(cat "$HOME/case") in
metric-only) echo 3.5 >cost.txt ;;
both) echo 3.5 >cost.txt && echo 10000 >dev_us.txt ;;
tamper) echo 3.5 >cost.txt && echo 10000 >dev_us.txt && echo "exit 0" >>"$HOME/sealed/holdout.sh" ;;
esac
git commit -qam "kernel: $(cat "$HOME/case")"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"
mkdir -p "$HOME/sealed"
printf '#!/bin/sh\ntest "$(cat answer.txt)" = 42 && test -n "$GDNCTL_HOLDOUT_SEED"\n' >"$HOME/sealed/holdout.sh"

new_project() {
	integrity_project "${YAML:-}" &&
		(cd "$TRASH/repo" && echo 42 >answer.txt && git add . && git commit -qm "my kernel")
}

loop() {
	(cd "$TRASH/repo" && gdnctl loop --prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" \
		--sleep-seconds 0 --retry-sleep-seconds 0 --agent command \
		--agent-cmd "$AG/ruler {prompt_file}" --perf-mode on \
		--perf-metric throughput/duration_ms --max-failures -1 "$@")
}

ON="integrity:
  mode: on
"

test_expect_success 'setup refuses a bad integrity configuration (exit 3), before any iteration' '
	for bad in "integrity: {mode: on, device: tpu-v9}|integrity.device: no peaks for .tpu-v9." \
		"integrity: {mode: on, peaks: [\"x flops=-1\"]}|integrity.peaks: .x flops=-1.: expected" \
		"integrity: {mode: on, diff_patterns: [\"a:+:*.c:(\"]}|integrity.diff_patterns: .a:+:\*.c:(.:" \
		"integrity: {mode: on, work_allow: [lines]}|integrity.work_allow: unknown figure .lines." \
		"integrity: {mode: on, rulers_share: 0}|integrity.rulers_share must be in" \
		"integrity: {mode: on}
project: {holdout_command: ./h.sh}|project.holdout_command needs project.holdout_file" \
		"integrity: {mode: on}
project: {holdout_command: ./h.sh, holdout_file: cost.txt}|project.holdout_file .cost.txt. is inside the repository" \
		"integrity: {mode: on}
project: {holdout_command: ./h.sh, holdout_file: $HOME/sealed/holdout.sh, holdout_sha256: 00}|has sha256 [0-9a-f]*, not the configured project.holdout_sha256 00"; do
		yaml=${bad%%|*} && want=${bad#*|} &&
		rm -rf "$TRASH/repo" "$TRASH/logs" && test_create_repo "$TRASH/repo" &&
		(cd "$TRASH/repo" && echo 1 >cost.txt && printf "%s\n" "$yaml" >>gdnctl.yaml &&
			git add . && git commit -qm base) &&
		test_must_fail =3 loop --iterations 1 >out 2>err &&
		test_grep "$want" err &&
		test ! -e logs/loop.jsonl || return 1
	done &&
	new_project &&
	(cd repo && printf "integrity: {mode: on}\n" >>gdnctl.yaml && git commit -qam on) &&
	test_must_fail =3 loop --iterations 1 --perf-mode off >out 2>err &&
	test_grep "integrity.mode on needs --perf-mode on" err
'

test_expect_success 'rulers, revert (the default): the metric alone improves, the candidate is reverted' '
	echo metric-only >"$HOME/case" && YAML=$ON new_project &&
	loop --iterations 1 >out 2>err &&
	test_grep "integrity (rulers, revert): device time disagrees: the metric claims x2, the device time per step shows x1 " err &&
	test_grep "\"event\":\"revert\",\"iteration\":1,\"reason\":\"integrity (rulers): device time disagrees" logs/loop.jsonl &&
	test_grep "\"event\":\"perf_decision\",\"iteration\":1,.*\"decision\":\"gate_regression\"" logs/loop.jsonl &&
	test "$(git -C repo show HEAD:cost.txt)" = 7 &&
	python3 -c "import json; d=json.load(open(\"logs/perf_state.json\")); assert d[\"champion\"][\"iteration\"] == 0, d[\"champion\"]; h=d[\"history\"][-1]; assert h[\"integrity\"][\"rule\"] == \"rulers\", h; assert h[\"reasons\"][0].startswith(\"integrity (rulers): device time disagrees\"), h[\"reasons\"]"
'

test_expect_success 'rulers, flag: kept and journaled; off: kept, not checked' '
	echo metric-only >"$HOME/case" &&
	YAML="$ON  policy: {rulers: flag}
" new_project &&
	loop --iterations 1 >out 2>err &&
	test_grep "\"event\":\"integrity\",.*\"action\":\"flag\"" logs/loop.jsonl &&
	test_grep "integrity flag (rulers): device time disagrees" out &&
	test "$(git -C repo show HEAD:cost.txt)" = 3.5 &&
	YAML="$ON  policy: {rulers: off}
" new_project &&
	loop --iterations 1 >out 2>err &&
	test_grep "\"event\":\"integrity\",.*\"findings\":\[\],\"action\":\"pass\"" logs/loop.jsonl &&
	test "$(git -C repo show HEAD:cost.txt)" = 3.5
'

test_expect_success 'the gate is off by default: no integrity event, the metric alone decides' '
	echo metric-only >"$HOME/case" && YAML= new_project &&
	loop --iterations 1 >out 2>err &&
	test_grep ! "\"event\":\"integrity\"" logs/loop.jsonl &&
	test "$(git -C repo show HEAD:cost.txt)" = 3.5
'

HOLDOUT="  holdout_command: sh \"\$GDNCTL_HOLDOUT_FILE\"
  holdout_file: $HOME/sealed/holdout.sh
"
test_expect_success 'a real win passes the holdout; the same with the holdout file changed is reverted' '
	echo both >"$HOME/case" &&
	YAML="$HOLDOUT$ON" new_project &&
	loop --iterations 1 >out 2>err &&
	test_grep "\"event\":\"integrity\",.*\"holdout\":{\"exit\":0,\"seed\":[0-9]*,\"sha256\":\"$(sha256sum "$HOME/sealed/holdout.sh" | cut -d" " -f1)\"}.*\"action\":\"pass\"" logs/loop.jsonl &&
	test "$(git -C repo show HEAD:cost.txt)" = 3.5 &&
	echo tamper >"$HOME/case" &&
	YAML="$HOLDOUT$ON" new_project &&
	loop --iterations 1 >out 2>err &&
	test_grep "integrity (holdout): holdout failed: .$HOME/sealed/holdout.sh. changed since the start" logs/loop.jsonl &&
	test "$(git -C repo show HEAD:cost.txt)" = 7
'

test_expect_success 'loop verify measures the kept commit again; the report shows both' '
	echo both >"$HOME/case" && YAML=$ON new_project &&
	loop --iterations 1 >out 2>err &&
	(cd repo && gdnctl loop verify --log-dir "$TRASH/logs" --pairs 2) >verify.out 2>verify.err &&
	test_grep "^\[gdnctl\] 1 .*+100.00% *+100.00% *\[+100.00%, +100.00%\] *yes$" verify.out &&
	test_grep "iteration 1, pair 2 of 2: baseline throughput/duration_ms=7, kept 3.5" verify.err &&
	test_grep "\"schema\": \"gdnctl.loop_verify/1\"" logs/verify.json &&
	test ! -e logs/verify/kept && test ! -e logs/verify/baseline &&
	(cd repo && gdnctl report --log-dir "$TRASH/logs" -o "$TRASH/r.html") >report.txt &&
	test_grep "(vs the baseline: claimed +100.00%, verified +100.00% \[+100.00, +100.00\])" report.txt &&
	test_grep "class=\"verified\">vs the baseline: claimed +100.00%" r.html &&
	(cd repo && gdnctl loop verify --log-dir "$TRASH/logs" --pairs 2 --json) >v.json &&
	python3 -c "import json; d=json.load(open(\"v.json\")); assert d[\"rows\"][0][\"reproduced\"] is True, d" &&
	test_must_fail =2 gdnctl loop verify --pairs 1 2>err &&
	test_grep "pairs" err &&
	rm -rf empty && mkdir empty &&
	test_must_fail =1 gdnctl loop verify --log-dir "$TRASH/empty" 2>err &&
	test_grep "has no baseline" err
'

test_done
