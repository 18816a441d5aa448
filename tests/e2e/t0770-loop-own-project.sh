#!/usr/bin/env bash
# gdnctl loop on a user's own small project (issue 29): a kernel whose
# profile prints `throughput/duration_ms=...` (lower is better), a test
# command, and an agent that commits a 4000x speed-up, a broken change and
# a slowdown. --perf-direction auto resolves the direction from the name
# (and refuses a name that says neither); validation is on with a test
# command; gdnctl.yaml's loop.* keys make the night one short command; the
# dry run (text and --json) says the gate, the ruler and its direction.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

# The agent reads its iteration from the prompt and edits the kernel's cost.
agent night <<'EOF2'
n=$(sed -n 's/^Iteration //p' "$1")
case $n in
1) echo 0.00193 >cost.txt && git commit -qam "kernel: vectorised (4000x)" ;;
2) echo WRONG >answer.txt && git commit -qam "kernel: broken" ;;
3) echo 50.104 >cost.txt && git commit -qam "kernel: time.sleep" ;;
*) echo "nothing to do" ;;
esac
EOF2
printf 'Iteration {{ITERATION}}\nLog: {{LOG_FILE}}\n' >"$TRASH/prompt.md"

new_project() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >profile.sh <<-'EOF2' &&
					#!/bin/sh
					echo "step 1"
					echo "throughput/duration_ms=$(cat cost.txt)"
				EOF2
				cat >test_kernel.sh <<-'EOF2' &&
					#!/bin/sh
					test "$(cat answer.txt)" = 42 || { echo "wrong answer"; exit 1; }
					echo ok
				EOF2
				chmod +x profile.sh test_kernel.sh && echo 7.717 >cost.txt &&
				echo 42 >answer.txt && {
				echo "project:"
				echo "  test_command: ./test_kernel.sh"
				echo "  profile_command: ./profile.sh"
				printf '%s' "${YAML:-}"
			} >gdnctl.yaml &&
				git add . && git commit -qm "my kernel"
		)
}

loop() {
	(cd "$TRASH/repo" && gdnctl loop --prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" \
		--sleep-seconds 0 --retry-sleep-seconds 0 "$@")
}

test_expect_success 'the issue command: auto keeps the 4000x speed-up, reverts the break and the slowdown' '
	new_project &&
	base=$(git -C repo rev-parse HEAD) &&
	loop --iterations 4 --agent command --agent-cmd "$AG/night {prompt_file}" \
		--validation-mode required --perf-mode on --perf-metric throughput/duration_ms \
		--max-failures -1 >out 2>err || true &&
	test_grep "metric: throughput/duration_ms, lower is better (auto: its name reads as a time)$" out &&
	test_grep "performance baseline initialized: throughput/duration_ms=7.717" out &&
	test_grep "performance champion promoted: 7.717 -> 0.00193 " out &&
	test_grep "validation failed: tests exit 1" err &&
	test_grep "performance regression detected vs champion: 0.00193 -> 50.104 " err &&
	git -C repo log --format=%s main >subjects &&
	test_grep "^kernel: vectorised (4000x)$" subjects &&
	test "$(git -C repo show main:cost.txt)" = 0.00193 &&
	test "$(git -C repo show main:answer.txt)" = 42 &&
	test_grep "\"event\":\"perf_decision\",\"iteration\":1,.*\"decision\":\"promoted\"" logs/loop.jsonl &&
	test_grep "\"event\":\"perf_decision\",\"iteration\":3,.*\"decision\":\"regression\",.*\"direction\":\"lower\"" logs/loop.jsonl &&
	test_grep "\"event\":\"run_start\",.*\"plan\":{\"validation\":{\"mode\":\"required\".*\"perf\":{\"metric\":\"throughput/duration_ms\",.*\"direction\":\"lower\",\"direction_from\":\"auto\"" logs/loop.jsonl &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/3 &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/2 &&
	(cd repo && gdnctl report --log-dir "$TRASH/logs" -o "$TRASH/report.html") >report.txt &&
	test_grep "throughput/duration_ms (lower is better)" report.txt
'

test_expect_success 'a metric name that says neither way is refused at start-up (exit 2)' '
	new_project &&
	base=$(git -C repo rev-parse HEAD) &&
	test_must_fail =2 loop --iterations 1 --agent-cmd "$AG/night {prompt_file}" \
		--perf-mode on --perf-metric throughput/score >out 2>err &&
	test_grep "error: --perf-direction auto cannot tell from the name of --perf-metric .throughput/score. whether higher or lower is better: pass --perf-direction higher or --perf-direction lower" err &&
	test ! -e logs/loop.jsonl &&
	test "$(git -C repo rev-parse HEAD)" = "$base" &&
	loop --iterations 1 --agent-cmd "$AG/night {prompt_file}" --perf-mode on \
		--perf-metric throughput/score --perf-direction higher --dry-run >out 2>err &&
	test_grep "dry run: metric: throughput/score, higher is better (--perf-direction);" out
'

test_expect_success 'the dry run says the gate, the ruler and the direction' '
	new_project &&
	loop --iterations 4 --agent-cmd "$AG/night {prompt_file}" --perf-mode on \
		--perf-metric throughput/duration_ms --dry-run >out 2>err &&
	test_grep "dry run: validation: required (project.test_command is set; --validation-mode off to skip), on backend local" out &&
	test_grep "dry run:   tests: ./test_kernel.sh$" out &&
	test_grep "dry run: metric: throughput/duration_ms, lower is better (auto: its name reads as a time); promote at >= 0.25%" out &&
	test_grep "dry run: hill-climb log: none (not a Marin checkout, and no log_file configured)$" out &&
	test ! -e logs
'

test_expect_success 'loop --dry-run --json: one document with the gate, the ruler and the direction' '
	new_project &&
	loop --iterations 4 --agent-cmd "$AG/night {prompt_file}" --perf-mode on \
		--perf-metric throughput/duration_ms --dry-run --json >out 2>err &&
	python3 - out <<-\EOF2
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["schema"] == "gdnctl.loop_dry_run.v1", d
	assert d["iterations"] == 4
	assert d["validation"]["mode"] == "required" and d["validation"]["from"] == "project.test_command"
	assert d["validation"]["tests"] == "./test_kernel.sh"
	p = d["perf"]
	assert p["metric"] == "throughput/duration_ms" and p["direction"] == "lower", p
	assert p["direction_from"] == "auto" and p["direction_why"] == "its name reads as a time", p
	assert d["log_file"] is None and d["agent"]["argv"][0].endswith("/night"), d
	assert d["prompt"]["text"].startswith("Iteration 1\n"), d["prompt"]
	EOF2
	test_grep ! "dry run:" out
'

test_expect_success 'the short command: gdnctl.yaml sets the ruler, validation is on by default' '
	YAML="loop:
  perf:
    mode: on
    metric: throughput/duration_ms
" new_project &&
	(cd repo && gdnctl config show --origin) >cfg &&
	test_grep "^loop.perf.metric  *throughput/duration_ms  *repo  *.*gdnctl.yaml:7:13$" cfg &&
	test_grep "^loop.validation_mode  *(unset)  *default" cfg &&
	loop --iterations 4 --agent-cmd "$AG/night {prompt_file}" --max-failures -1 >out 2>err || true &&
	test_grep "validation: required (project.test_command is set; --validation-mode off to skip)$" out &&
	test_grep "validation tests attempt 1" out &&
	test "$(git -C repo show main:cost.txt)" = 0.00193 &&
	test "$(git -C repo show main:answer.txt)" = 42 &&
	test_grep "\"options\":{.*\"perf-mode\":\"on\",\"perf-metric\":\"throughput/duration_ms\",\"validation-mode\":\"required\"}" logs/loop.jsonl
'

test_expect_success 'command line > environment > gdnctl.yaml; --validation-mode off turns the gate off' '
	YAML="loop:
  perf:
    mode: on
    metric: throughput/duration_ms
" new_project &&
	GDNCTL_LOOP_PERF_METRIC=kernel_us loop --iterations 1 --agent-cmd "$AG/night {prompt_file}" \
		--dry-run >out 2>err &&
	test_grep "dry run: metric: kernel_us, lower is better" out &&
	GDNCTL_LOOP_PERF_METRIC=kernel_us loop --iterations 1 --agent-cmd "$AG/night {prompt_file}" \
		--perf-metric items_per_s --validation-mode off --dry-run >out 2>err &&
	test_grep "dry run: metric: items_per_s, higher is better (auto: its name reads as a rate" out &&
	test_grep "dry run: validation: off, on backend local" out
'

test_expect_success 'codex-loop keeps the original defaults: no validation unless asked' '
	new_project &&
	(cd repo && gdnctl codex-loop --prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" \
		--iterations 1 --agent-cmd "$AG/night {prompt_file}" --dry-run) >out 2>err &&
	test_grep "dry run: validation: off (--validation-mode off, --perf-mode off)$" out
'

test_done
