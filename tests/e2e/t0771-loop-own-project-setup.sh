#!/usr/bin/env bash
# gdnctl loop on a user's own project (issue 29), before the night starts:
# an unmeasurable baseline stops the run before iteration 1; a trace metric
# without a way to its trace is refused by the dry run; a champion of
# perf_state.json that is not on the loop branch, or was measured with
# another direction or profile command, is not reused; outside a Marin
# checkout no running log is kept unless log_file says where ({{LOG_FILE}}).
# ctest: isolation-both
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

agent faster <<'EOF2'
echo 0.00193 >cost.txt && git commit -qam "kernel: vectorised (4000x)"
EOF2
agent idle <<'EOF2'
echo "nothing to do"
EOF2
printf 'Iteration {{ITERATION}}\nLog: {{LOG_FILE}}\n' >"$TRASH/prompt.md"

new_project() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				printf '#!/bin/sh\necho "throughput/duration_ms=$(cat cost.txt)"\n' >profile.sh &&
				chmod +x profile.sh && echo 7.717 >cost.txt && {
				echo "project:"
				echo "  profile_command: ./profile.sh"
			} >gdnctl.yaml &&
				git add . && git commit -qm "my kernel"
		)
}

loop() {
	(cd "$TRASH/repo" && gdnctl loop --prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" \
		--sleep-seconds 0 --retry-sleep-seconds 0 --perf-mode on \
		--perf-metric throughput/duration_ms "$@")
}

test_expect_success 'an unmeasurable baseline stops the run before iteration 1' '
	new_project &&
	base=$(git -C repo rev-parse HEAD) &&
	GDNCTL_PROFILE_COMMAND="echo no figures here" test_must_fail =1 \
		loop --iterations 3 --agent-cmd "$AG/faster {prompt_file}" >out 2>err &&
	test_grep "the profile printed no .throughput/duration_ms." err &&
	test_grep "the baseline cannot be measured: the profile printed no .throughput/duration_ms. (a line such as .throughput/duration_ms=1.5.) at the starting commit [0-9a-f]\{12\}; every iteration would be unscored, so the run stops before iteration 1$" err &&
	test_grep "stopped: start (exit 1)" out &&
	test_grep ! "\"event\":\"agent_start\"" logs/loop.jsonl &&
	test "$(git -C repo rev-parse HEAD)" = "$base"
'

test_expect_success 'a trace metric needs a way to its trace: the dry run exits 2' '
	new_project &&
	test_must_fail =2 loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" \
		--perf-metric trace/step_ms --dry-run >out 2>err &&
	test_grep "error: --perf-metric trace/step_ms is read from the profile.s trace, and no project.trace_glob says where it is: set project.trace_glob" err &&
	GDNCTL_TRACE_GLOB="traces/*.json" loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" \
		--perf-metric trace/step_ms --dry-run >out 2>err &&
	test_grep "dry run: metric: trace/step_ms, lower is better (auto: a trace metric is milliseconds per step)" out &&
	GDNCTL_TRACE_GLOB="traces/*.json" GDNCTL_TRACE_SOURCE=none test_must_fail =2 \
		loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" \
		--perf-metric trace/step_ms --dry-run >out 2>err &&
	test_grep "project.trace_source is none" err
'

test_expect_success 'a champion that is not on the loop branch is not reused' '
	new_project &&
	base=$(git -C repo rev-parse HEAD) &&
	loop --iterations 1 --agent-cmd "$AG/faster {prompt_file}" >out 2>err &&
	champ=$(git -C repo rev-parse main) &&
	test "$(git -C repo show main:cost.txt)" = 0.00193 &&
	git -C repo reset -q --hard "$base" &&
	loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" --allow-no-commit >out 2>err &&
	test_grep "performance champion of $TRASH/logs/perf_state.json not reused: its commit ${champ:0:12} is not on the loop branch (not an ancestor of ${base:0:12})$" out &&
	test_grep "measuring the starting commit ${base:0:12} as the baseline" out &&
	test_grep "performance baseline initialized: throughput/duration_ms=7.717 @ ${base:0:12}" out &&
	test_grep "\"event\":\"perf_champion_stale\",\"iteration\":0,\"commit\":\"$champ\",\"reason\":\"its commit" logs/loop.jsonl &&
	loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" --allow-no-commit >out 2>err &&
	test_grep "performance champion kept from $TRASH/logs/perf_state.json: throughput/duration_ms=7.717$" out
'

test_expect_success 'a champion measured with another direction or profile command is not reused' '
	new_project &&
	loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" --allow-no-commit >out 2>err &&
	test_grep "performance baseline initialized" out &&
	loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" --allow-no-commit \
		--perf-direction higher >out 2>err &&
	test_grep "not reused: it was measured as lower is better, this run has higher$" out &&
	GDNCTL_PROFILE_COMMAND="./profile.sh --fast" loop --iterations 1 \
		--agent-cmd "$AG/idle {prompt_file}" --allow-no-commit --perf-direction higher >out 2>err &&
	test_grep "not reused: it was measured with another profile command (.\./profile.sh.)$" out
'

test_expect_success 'outside Marin without log_file: no running log, and the prompt says so' '
	new_project &&
	loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" --dry-run >out 2>err &&
	test_grep "dry run: hill-climb log: none (not a Marin checkout, and no log_file configured)$" out &&
	test_grep "^Log: none: this run keeps no running log; record in your commit message$" out &&
	test_grep ! "gdn_pallas_tpu_hillclimb" out &&
	loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" --allow-no-commit >out 2>err &&
	test_grep "no running log (not a Marin checkout, and no log_file configured): set log_file in gdnctl.yaml or pass --hillclimb-log-file to keep one$" out
'

test_expect_success 'a configured log_file: the prompt names it; in a Marin checkout, the default' '
	new_project &&
	(cd repo && gdnctl -c log_file=notes/log.md loop --prompt-file "$TRASH/prompt.md" \
		--log-dir "$TRASH/logs" --iterations 1 --agent-cmd "$AG/idle {prompt_file}" \
		--perf-mode on --perf-metric throughput/duration_ms --dry-run) >out 2>err &&
	test_grep "^Log: notes/log.md$" out &&
	test_grep "dry run: hill-climb log: .*/notes/log.md$" out &&
	(cd repo && marin_checkout . && git add . && git commit -qm marin) &&
	loop --iterations 1 --agent-cmd "$AG/idle {prompt_file}" --dry-run >out 2>err &&
	test_grep "^Log: lib/levanter/.agents/projects/gdn_pallas_tpu_hillclimb.md$" out
'

test_done
