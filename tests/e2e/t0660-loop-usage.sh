#!/usr/bin/env bash
# gdnctl loop: tokens and cost the agent reports (issue 15 section 3):
# "gdnctl-usage:" lines of --agent command journaled per iteration as a
# "usage" event, totalled in the summary (text and --json), and the
# --max-tokens / --max-cost-usd / --max-tokens-per-hour stops.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

# each run: two model calls of 100+20 and 50+30 tokens, $0.25 in all
agent spend <<'EOF2'
echo "thinking"
echo "gdnctl-usage: input=100 output=20 cost_usd=0.125"
echo "  gdnctl-usage: output=30 input=50 cost_usd=0.125 model=x"
echo "gdnctl-usage: input=oops"
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" && test_create_repo "$TRASH/repo"
}

run_loop() {
	(cd "$TRASH/repo" && gdnctl loop --agent command --agent-cmd "$AG/spend {prompt_file}" \
		--prompt-file /dev/null --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 "$@")
}

usage_events() {
	python3 - "$TRASH/logs" <<'PY'
import json, sys, pathlib
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.jsonl")):
    for line in f.read_text().splitlines():
        e = json.loads(line)
        if e["event"] == "usage":
            print(e["iteration"], e["input_tokens"], e["output_tokens"], e["tokens"], e["cost_usd"])
        if e["event"] == "stop":
            print("stop", e["iteration"], e["reason"])
PY
}

test_expect_success 'usage lines are journaled per iteration and totalled' '
	new_repo &&
	run_loop --iterations 2 >out 2>err &&
	usage_events >ev &&
	printf "1 150 50 200 0.25\n2 150 50 200 0.25\n" >expect &&
	test_cmp expect ev &&
	test_grep "agent usage: 400 tokens (input 300, output 100) in 2 iterations, .0.5000" out
'

test_expect_success '--json summary has the usage totals' '
	new_repo &&
	run_loop --iterations 2 --json >out 2>err &&
	python3 -c "
import json, sys
u = json.load(open(\"out\"))[\"usage\"]
assert u == {\"iterations\": 2, \"input_tokens\": 300, \"output_tokens\": 100, \"tokens\": 400, \"cost_usd\": 0.5}, u
"
'

test_expect_success '--max-tokens stops before the iteration after the budget is spent, exit 0' '
	new_repo &&
	run_loop --iterations 5 --max-tokens 500 >out 2>err &&
	test_grep "stopping before iteration 4: token-budget" out &&
	test_grep "stopped: token-budget (exit 0)" out &&
	usage_events >ev &&
	test_grep "^stop 4 token-budget" ev &&
	test $(grep -c "^[0-9]" ev) = 3
'

test_expect_success '--max-cost-usd stops once the cost is reached' '
	new_repo &&
	run_loop --iterations 5 --max-cost-usd 0.5 >out 2>err &&
	test_grep "stopped: cost-budget (exit 0)" out &&
	usage_events >ev &&
	test_grep "^stop 3 cost-budget" ev
'

test_expect_success '--max-tokens-per-hour stops once the last hour used that many' '
	new_repo &&
	run_loop --iterations 5 --max-tokens-per-hour 200 >out 2>err &&
	test_grep "stopped: tokens-per-hour (exit 0)" out &&
	usage_events >ev &&
	test_grep "^stop 2 tokens-per-hour" ev
'

test_expect_success '--resume keeps counting the tokens of the earlier session' '
	new_repo &&
	run_loop --iterations 2 >out 2>err &&
	run_loop --iterations 5 --resume --resume-override --max-tokens 600 >out 2>err &&
	test_grep "stopped: token-budget (exit 0)" out &&
	usage_events >ev &&
	test_grep "^stop 4 token-budget" ev
'

test_expect_success 'negative budgets are refused' '
	new_repo &&
	test_expect_code 2 run_loop --iterations 1 --max-tokens -1 2>err &&
	test_expect_code 2 run_loop --iterations 1 --max-cost-usd -1 2>err
'

agent spend-faster <<'EOF2'
echo "gdnctl-usage: input=1000 output=200 cost_usd=0.5"
echo $(( $(cat speed.txt) * 2 )) >speed.txt && git add speed.txt && git commit -qm "agent: twice as fast"
EOF2

test_expect_success 'gdnctl report: usage totals and per kept speed-up' '
	new_repo &&
	(cd repo && printf "#!/bin/sh\necho \"throughput/mfu=\$(cat speed.txt)\"\n" >bench.sh &&
		echo 1 >speed.txt && git add . && git commit -qm bench) &&
	(cd "$TRASH/repo" && GDNCTL_PROFILE_COMMAND="sh bench.sh" gdnctl loop --agent command \
		--agent-cmd "$AG/spend-faster {prompt_file}" --prompt-file /dev/null \
		--log-dir "$TRASH/logs" --sleep-seconds 0 --iterations 2 --perf-mode on >"$TRASH/loop-out" 2>"$TRASH/loop-err") &&
	{ test_grep "performance champion promoted: 2 -> 4" "$TRASH/loop-out" || { cat "$TRASH/loop-out" "$TRASH/loop-err"; false; }; } &&
	gdnctl report --log-dir "$TRASH/logs" >rep 2>err &&
	test_grep "^usage: 2400 tokens (input 2000, output 400) in 2 iterations, .1.0000; per kept speed-up 1200 tokens, .0.5000$" rep &&
	gdnctl report --log-dir "$TRASH/logs" --json >rep.json &&
	python3 -c "
import json
d = json.load(open(\"rep.json\"))
u = d[\"usage\"]
assert u[\"tokens\"] == 2400 and u[\"tokens_per_speedup\"] == 1200 and u[\"cost_usd_per_speedup\"] == 0.5, u
its = [i for i in d[\"iterations\"] if i[\"iteration\"] > 0]
assert [i[\"tokens\"] for i in its] == [1200, 1200], its
"
'

test_done
