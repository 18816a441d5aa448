#!/usr/bin/env bash
# gdnctl loop --perf-mode on with W&B as the metric source, against the
# W&B GraphQL API of the loopback test server (tests/e2e/hubserver.py):
# the run named by a URL the profile printed (wandb.ai or the
# WANDB_BASE_URL host), by the run name W&B printed, or found by prefix;
# summary values and history-window aggregates (median/mean over steps
# A..B with a minimum of points); a missing metric or a failed fetch leaves
# the sample unscored and the policy decides; the API key appears nowhere;
# --log-measurements writes the measured figures into the kept entry of
# the running log (committed, stamped, lint-log clean).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset WANDB_API_KEY WANDB_BASE_URL NETRC
KEY=wandbLoopKey0123456789abcdef0123456789ab
HUBSERVER=$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py

# The runs of project ent/proj. The profile's CLI line always says
# throughput/mfu=7, so a 7 in a decision means W&B was not used.
hist() { # step value ... -> history rows
	local sep=""
	while [ $# -gt 0 ]; do
		printf '%s{"_step": %s, "throughput/mfu": %s}' "$sep" "$1" "$2"
		sep=", "
		shift 2
	done
}
cat >wandb.json <<EOF
{"ent/proj": {"runs": [
 {"name": "base", "createdAt": "2025-01-01T00:00:01", "summary": {"throughput/mfu": 1.0},
  "history": [$(hist 0 100 10 1.0 11 1.0 12 1.0 13 1.0 14 1.0 19 100)]},
 {"name": "fast", "createdAt": "2025-01-01T00:00:02", "summary": {"throughput/mfu": 2.0},
  "history": [$(hist 2 999 10 1.5 11 1.9 12 2.0 13 2.1 14 50 25 999)]},
 {"name": "slow", "createdAt": "2025-01-01T00:00:03", "summary": {"throughput/mfu": 0.5},
  "history": [$(hist 10 0.5 11 0.5 12 0.5 13 0.5 14 0.5)]},
 {"name": "sparse", "createdAt": "2025-01-01T00:00:04", "summary": {"throughput/mfu": 3.0},
  "history": [$(hist 11 3.0 12 3.0 30 3.0)]},
 {"name": "nohist", "createdAt": "2025-01-01T00:00:05", "summary": {"throughput/mfu": 2.5}},
 {"name": "nometric", "createdAt": "2025-01-01T00:00:06", "summary": {"other": 1.0}},
 {"name": "nanrun", "createdAt": "2025-01-01T00:00:07",
  "summaryRaw": "{\"throughput/mfu\": NaN}"},
 {"name": "p0", "displayName": "gdn_loopgate_iter000_a", "createdAt": "2025-01-02T00:00:00",
  "summary": {"throughput/mfu": 1.0}},
 {"name": "p1", "displayName": "gdn_loopgate_iter001_b", "createdAt": "2025-01-02T00:00:01",
  "summary": {"throughput/mfu": 1.5}},
 {"name": "p10", "displayName": "gdn_loopgate_iter0010_c", "createdAt": "2025-01-02T00:00:02",
  "summary": {"throughput/mfu": 99.0}},
 {"name": "s9x2k", "displayName": "synced-run", "createdAt": "2025-01-03T00:00:00",
  "summary": {"throughput/mfu": 4.0}}
]}}
EOF

mkdir -p root
test_start_hubserver --root "$TRASH/root" --wandb "$TRASH/wandb.json" --wandb-key "$KEY"
export WANDB_BASE_URL=http://127.0.0.1:$HUB_PORT WANDB_API_KEY=$KEY

# The agent takes the next word of $TRASH/runs (the run its profile will
# name) and commits; with LOG it also appends a running-log entry.
agent agent <<'EOF'
run=$(head -n1 "$RUNS") && sed -i 1d "$RUNS"
echo "$run" >run.txt
date +%s%N >>touch.txt
[ -z "${WHILE:-}" ] || echo "$WHILE" >while_us.txt
[ -z "${FAULT:-}" ] || python3 "$HUBSERVER" ctl "$PORTS" fault graphql 500 -1
if [ -n "${LOG:-}" ]; then
	n=$(sed -n 's/^Iteration //p' "$1")
	printf '\n### Iteration %s - run %s\n\n- Commit: (pending)\n- Hypothesis: %s is faster\n' \
		"$n" "$run" "$run" >>log.md
fi
git add -A && git commit -qm "agent: run $run"
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"
export HUBSERVER PORTS=$TRASH/ports RUNS=$TRASH/runs

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >bench.sh <<-'EOF2' &&
					#!/bin/sh
					# one profile run: a CLI value, W&B lines naming run.txt, out/trace.json
					echo "throughput/mfu=7"
					run=$(cat run.txt)
					case "$run" in
					none) ;;
					name:*) echo "wandb: Syncing run ${run#name:}" ;;
					local:*) echo "wandb: see $WANDB_BASE_URL/ent/proj/runs/${run#local:}" ;;
					*) echo "wandb: View run at: https://wandb.ai/ent/proj/runs/$run?nw=1" ;;
					esac
					w=$(cat while_us.txt)
					mkdir -p out
					sh "$GDNCTL_SOURCE_DIR/tests/e2e/fake-trace.sh" "$w" >out/trace.json
				EOF2
				cat >log.md <<-'EOF2' &&
					# Hill-climb log

					## Entry Template

					```markdown
					### Iteration <N> - <title>

					- Commit: <sha>
					- Hypothesis:
					```

					## Iterations
				EOF2
				chmod +x bench.sh && echo "$1" >run.txt && echo 10000 >while_us.txt &&
				echo out/ >.gitignore && git add . && git commit -qm "benchmark"
		)
}

# run_loop RUN... -- OPTIONS: the agent's runs, one per iteration
run_loop() {
	: >"$RUNS"
	while [ "$1" != "--" ]; do
		echo "$1" >>"$RUNS"
		shift
	done
	shift
	(cd "$TRASH/repo" && GDNCTL_PROFILE_COMMAND=./bench.sh GDNCTL_TRACE_GLOB="out/*.json" \
		gdnctl loop --agent command --agent-cmd "$AG/agent {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --perf-mode on --perf-wandb-retries 0 \
		--perf-wandb-entity ent --perf-wandb-project proj "$@")
}

state() { # python expression over the state file s
	python3 -c "import json,sys; s=json.load(open(sys.argv[1])); print($1)" logs/perf_state.json
}

test_expect_success 'summary: the run URL the profile printed names the run; W&B value, not the CLI one' '
	new_repo base &&
	run_loop fast -- --iterations 1 --perf-aggregation summary >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance baseline initialized: throughput/mfu=1 @ .*source=wandb-summary" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance champion promoted: 1 -> 2 (+100.00%, source=wandb-summary" out &&
	test_grep ! "=7 " out &&
	test "$(state "s[\"champion\"][\"metric_source\"], s[\"champion\"][\"run_url\"]")" = \
		"wandb-summary http://127.0.0.1:$HUB_PORT/ent/proj/runs/fast" &&
	test "$(state "s[\"champion\"][\"samples\"][0][\"source\"]")" = wandb-summary &&
	test_grep "\"event\":\"measurement\",\"source\":\"wandb-summary\",\"wandb_run\":\"http://127.0.0.1:$HUB_PORT/ent/proj/runs/fast\",\"status\":\"ok\",\"points\":1,\"value\":2.0,\"iteration\":1,\"attempt\":1" logs/loop.jsonl &&
	test_grep "\"event\":\"measurement\",.*runs/base\",\"status\":\"ok\".*\"iteration\":0" logs/loop.jsonl &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success 'history window (default): median over steps 10..18, outliers outside ignored' '
	new_repo base &&
	run_loop fast -- --iterations 1 >out 2>err &&
	test_grep "performance baseline initialized: throughput/mfu=1 @ .*source=wandb-history-median\[10:18\]" out &&
	test_grep "performance champion promoted: 1 -> 2 (+100.00%, source=wandb-history-median\[10:18\]" out &&
	test_grep "\"source\":\"wandb-history-median\[10:18\]\",.*\"status\":\"ok\",\"points\":5,\"value\":2.0,\"iteration\":1" logs/loop.jsonl
'

test_expect_success 'history window: mean, and a narrower window' '
	new_repo base &&
	run_loop fast -- --iterations 1 --perf-history-aggregation mean \
		--perf-history-step-start 10 --perf-history-step-end 13 --perf-history-min-points 4 >out 2>err &&
	test_grep "performance champion promoted: 1 -> 1.875 (+87.50%, source=wandb-history-mean\[10:13\]" out
'

test_expect_success 'history window with too few points: unscored, reported, not invented' '
	new_repo base &&
	run_loop sparse -- --iterations 1 --perf-regression-policy continue >out 2>err &&
	test_grep "WARNING: wandb history window had insufficient samples for: throughput/mfu(2<5) in steps \[10, 18\] of http://127.0.0.1:$HUB_PORT/ent/proj/runs/sparse; the sample is unscored" err &&
	test_grep "required performance metric is unavailable: throughput/mfu" out &&
	test_grep "\"status\":\"too-few-points\",\"points\":2,\"value\":null" logs/loop.jsonl &&
	test "$(state "s[\"history\"][-1][\"decision\"], s[\"history\"][-1][\"metric_value\"]")" = "unscored None"
'

test_expect_success 'history window: a run without history falls back to its summary (warned)' '
	new_repo base &&
	run_loop nohist -- --iterations 1 >out 2>err &&
	test_grep "WARNING: wandb history-window aggregation unavailable for throughput/mfu in .*runs/nohist; falling back to summary metrics" err &&
	test_grep "performance champion promoted: 1 -> 2.5 (+150.00%, source=wandb-summary" out
'

test_expect_success 'a run URL on the WANDB_BASE_URL host; a non-finite summary value' '
	new_repo local:base &&
	run_loop local:nanrun -- --iterations 1 --perf-aggregation summary \
		--perf-regression-policy continue >out 2>err &&
	test_grep "performance baseline initialized: throughput/mfu=1 @" out &&
	test_grep "WARNING: W&B run http://127.0.0.1:$HUB_PORT/ent/proj/runs/nanrun: throughput/mfu is non-finite; the sample is unscored" err &&
	test_grep "\"decision\":\"unscored\"" logs/loop.jsonl
'

test_expect_success 'the run name W&B printed, and discovery by --perf-wandb-run-prefix' '
	new_repo none &&
	run_loop name:synced-run -- --iterations 1 --perf-aggregation summary \
		--perf-wandb-run-prefix "gdn_loopgate_iter{iteration}" >out 2>err &&
	test_grep "performance baseline initialized: throughput/mfu=1 @" out &&
	test_grep "performance champion promoted: 1 -> 4 (+300.00%" out &&
	test_grep "\"wandb_run\":\"http://127.0.0.1:$HUB_PORT/ent/proj/runs/p0\",\"status\":\"ok\".*\"iteration\":0" logs/loop.jsonl &&
	new_repo none &&
	run_loop none -- --iterations 1 --perf-aggregation summary \
		--perf-wandb-run-prefix "gdn_loopgate_iter{iteration}" >out 2>err &&
	test_grep "performance champion promoted: 1 -> 1.5 (+50.00%" out &&
	test_grep ! "runs/p10" logs/loop.jsonl
'

test_expect_success 'auto without any run named: the CLI value; --perf-source cli ignores a URL' '
	new_repo none &&
	run_loop none -- --iterations 1 >out 2>err &&
	test_grep "performance baseline initialized: throughput/mfu=7 @ .*source=cli" out &&
	test_grep ! "\"event\":\"measurement\"" logs/loop.jsonl &&
	new_repo base &&
	run_loop fast -- --iterations 1 --perf-source cli >out 2>err &&
	test_grep "performance within hold band vs champion: 7 -> 7 (+0.00%, source=cli" out &&
	test_grep ! "\"event\":\"measurement\"" logs/loop.jsonl &&
	new_repo none &&
	run_loop none -- --iterations 1 --perf-wandb-run-prefix nosuch_iter{iteration} >out 2>err &&
	test_grep "WARNING: no W&B run found for the run prefix: .*nosuch_iter000_.*; using the profile output" err &&
	test_grep "WARNING: no W&B run found for the run prefix: .*nosuch_iter001_.*; using the profile output" err &&
	test_grep "performance within hold band vs champion: 7 -> 7 (+0.00%, source=cli" out
'

test_expect_success '--perf-source wandb with nothing naming a run: unscored, one warning, the run stops' '
	new_repo none &&
	test_must_fail =1 run_loop none -- --iterations 1 --perf-source wandb \
		--perf-regression-policy continue >out 2>err &&
	test_grep -c "WARNING: .*perf-source wandb: the profile printed no W&B run URL or run name" err >n &&
	test "$(cat n)" = 1 &&
	test_grep "the baseline cannot be measured: .*perf-source wandb: the profile printed no W&B run URL or run name" err &&
	test_grep "\"decision\":\"unscored\"" logs/loop.jsonl &&
	test_must_fail =2 run_loop none -- --iterations 1 --perf-source wandb \
		--perf-metric trace/step_ms 2>err &&
	test_grep "perf-source wandb does not go with --perf-metric trace/step_ms" err
'

# one iteration per line: policy, then what must hold afterwards
for case in \
	"revert-count-failure 0 reverted 2-iterations,-0-commits,-2-failed-iterations-(2-counted;" \
	"revert-continue 0 reverted 2-iterations,-0-commits,-0-failed-iterations-(0-counted;" \
	"count-failure 0 kept 2-iterations,-.*-2-failed-iterations-(2-counted;.*stopped:-completed" \
	"continue 0 kept 2-iterations,-2-commits,-0-failed-iterations-(0-counted;" \
	"fail 1 kept 1-iteration,-.*stopped:-failure-(exit-1)"; do
	set -- $case
	test_expect_success "missing W&B metric under --perf-regression-policy $1: the policy, no abort" "
		new_repo base &&
		test_expect_code $2 run_loop nometric nometric -- --iterations 2 --perf-aggregation summary \
			--perf-regression-policy $1 >out 2>err &&
		test_grep \"WARNING: W&B run http://127.0.0.1:$HUB_PORT/ent/proj/runs/nometric: throughput/mfu is missing; the sample is unscored\" err &&
		test_grep \"required performance metric is unavailable: throughput/mfu\" out err &&
		test_grep \"$(echo "$4" | tr - " ")\" out &&
		if [ $3 = reverted ]; then
			test \"\$(cat repo/run.txt)\" = base &&
			git -C repo rev-parse -q --verify refs/gdnctl/discarded/2
		else
			test \"\$(cat repo/run.txt)\" = nometric &&
			git -C repo log --format=%s >subjects &&
			test_grep -c \"^agent: run nometric\" subjects >n &&
			test \"\$(cat n)\" = \$((2 - $2))
		fi &&
		test -z \"\$(git -C repo status --porcelain)\"
	"
done

test_expect_success 'a W&B fetch failure: one clear warning, the sample unscored, the policy decides' '
	new_repo base &&
	FAULT=1 run_loop fast -- --iterations 1 --perf-aggregation summary >out 2>err &&
	python3 "$HUBSERVER" ctl "$PORTS" reset &&
	test_grep -c "W&B fetch failed" err >n && test "$(cat n)" = 1 &&
	test_grep "WARNING: W&B fetch failed for https://wandb.ai/ent/proj/runs/fast: .*HTTP 500.*; the sample is unscored" err &&
	test_grep "iteration 1 reverted (performance unscored: throughput/mfu)" err &&
	test_grep "\"status\":\"fetch-failed\"" logs/loop.jsonl &&
	test "$(cat repo/run.txt)" = base
'

test_expect_success 'the API key is sent (the server requires it) and appears nowhere' '
	new_repo base &&
	LOG=1 run_loop fast slow -- --iterations 2 --log-measurements \
		--hillclimb-log-file log.md >out 2>err &&
	test_grep "promoted" out &&
	git -C repo log -p --all >gitlog &&
	! grep -r -F "$KEY" out err logs gitlog repo/log.md &&
	test_grep "Basic " requests.log &&
	printf "machine 127.0.0.1 login api password %s\n" "$KEY" >netrc &&
	new_repo base &&
	(unset WANDB_API_KEY && NETRC=$TRASH/netrc run_loop fast -- --iterations 1 \
		--perf-aggregation summary >out 2>err) &&
	test_grep "performance champion promoted: 1 -> 2" out &&
	git -C repo log -p --all >gitlog &&
	! grep -r -F "$KEY" out err logs gitlog
'

test_expect_success '--log-measurements: before/after/delta and trace deltas in the kept entry, committed' '
	new_repo base &&
	LOG=1 WHILE=2000 run_loop fast -- --iterations 1 --log-measurements \
		--hillclimb-log-file log.md >out 2>err &&
	agent=$(git -C repo log --format=%H --grep "^agent: run fast" -1) &&
	sed -n "/^### Iteration 1/,\$p" repo/log.md >entry &&
	cat >expect <<-EOF &&
	### Iteration 1 - run fast

	- Commit: $agent
	- Hypothesis: fast is faster
	- Measured: throughput/mfu 1 -> 2 (+100.00%)
	- Trace step: \`30.000 ms -> 22.000 ms\`
	- Trace category \`while\`: \`10.000 ms -> 2.000 ms\`
	EOF
	test_cmp expect entry &&
	test -z "$(git -C repo status --porcelain)" &&
	git -C repo log --format=%s -3 >subjects &&
	test_grep "^gdnctl: stamp hill-climb log entry" subjects &&
	test_grep "^gdnctl: record measured figures for throughput/mfu" subjects &&
	test_grep "\"event\":\"log_measurements\",\"iteration\":1" logs/loop.jsonl &&
	(cd repo && gdnctl lint-log --log-file log.md --require-fields --check-commits) &&
	test_must_fail =2 run_loop fast -- --iterations 1 --perf-mode off --log-measurements 2>err &&
	test_grep "log-measurements needs --perf-mode on" err
'

test_expect_success '--log-measurements: a reverted iteration leaves no entry, no stamp, no figures' '
	LOG=1 run_loop slow -- --iterations 1 --log-measurements --hillclimb-log-file log.md \
		>out 2>err &&
	test_grep "performance regression detected vs champion: 2 -> 0.5" err &&
	test_grep ! "run slow" repo/log.md &&
	test_grep -c "^- Measured:" repo/log.md >n && test "$(cat n)" = 1 &&
	git -C repo show refs/gdnctl/discarded/1:log.md >discarded &&
	sed -n "/run slow/,\$p" discarded >entry &&
	test_grep "^### Iteration 1 - run slow$" entry &&
	test_grep "^- Commit: (pending)$" entry &&
	test_grep ! "^- Measured:" entry &&
	test -z "$(git -C repo status --porcelain)"
'

test_done
