# A real loop run for the report tests (sourced after lib.sh), like
# t0700-loop-gate.sh: a benchmark that prints throughput/mfu and writes a
# Chrome trace, tests that fail on BROKEN, and a scripted agent whose
# iteration N (read from the prompt) makes one kind of change:
#   1 faster (promoted)         2 breaks the tests (reverted)
#   3 slower (regression)       4 no commit
#   5 +0.05 % (within band)     6 `while` +10 ms/step (gate regression)
#   7 faster again (promoted)
# report_fixture DIR: DIR/repo, DIR/logs (loop.jsonl, perf_state.json).

report_fixture() {
	local d=$1
	mkdir -p "$d/agents" || return 1
	cat >"$d/agents/plan" <<-'EOF2'
		#!/bin/sh
		n=$(sed -n 's/^Iteration \([0-9]*\).*/\1/p' "$1")
		case $n in
		1) echo 2.0 >speed.txt; git commit -qam "blocked scan: 2x faster <b>&\"'" ;;
		2) echo BROKEN >state.txt; git commit -qam "unroll: breaks the tests" ;;
		3) echo 0.5 >speed.txt; git commit -qam "slower variant" ;;
		4) echo "nothing to do" ;;
		5) echo 2.001 >speed.txt; git commit -qam "tiny tweak" ;;
		6) echo 2.03 >speed.txt; echo 20000 >while_us.txt; git commit -qam "while grows" ;;
		*) echo 3.0 >speed.txt; echo 8000 >while_us.txt; git commit -qam "second speed-up" ;;
		esac
	EOF2
	chmod +x "$d/agents/plan" &&
		printf 'Iteration {{ITERATION}}\n' >"$d/prompt.md" &&
		test_create_repo "$d/repo" &&
		(
			cd "$d/repo" &&
				cat >bench.sh <<-'EOF2' &&
					#!/bin/sh
					# throughput/mfu and out/trace.json: 2 steps, `while` and a convolution
					mkdir -p out
					mfu=$(cat speed.txt); w=$(cat while_us.txt)
					echo "throughput/mfu=$mfu"
					ev() { printf '{"ph":"X","pid":3,"tid":3,"ts":%s,"dur":%s,"name":"%s","args":{"hlo_category":"%s"}}' "$@"; }
					{
						printf '{"traceEvents":[{"ph":"M","pid":3,"name":"process_name","args":{"name":"/device:TPU:0"}},'
						printf '{"ph":"M","pid":3,"tid":1,"name":"thread_name","args":{"name":"Steps"}},'
						printf '{"ph":"M","pid":3,"tid":3,"name":"thread_name","args":{"name":"XLA Ops"}},'
						printf '{"ph":"X","pid":3,"tid":1,"ts":0,"dur":100000,"name":"0"},'
						printf '{"ph":"X","pid":3,"tid":1,"ts":100000,"dur":100000,"name":"1"},'
						ev 0 "$w" while.1 while; printf ,; ev 100000 "$w" while.1 while; printf ,
						ev 50000 20000 fusion.1 convolution; printf ,; ev 150000 20000 fusion.1 convolution
						printf ']}\n'
					} >out/trace.json
				EOF2
				cat >check.sh <<-'EOF2' &&
					#!/bin/sh
					if grep -q BROKEN state.txt; then echo "tests: BROKEN"; exit 3; fi
					echo "tests: ok"
				EOF2
				chmod +x bench.sh check.sh && echo 1.0 >speed.txt && echo ok >state.txt &&
				echo 10000 >while_us.txt && echo out/ >.gitignore &&
				git add . && git commit -qm "benchmark with a trace"
		) &&
		report_loop "$d" plan 7 >"$d/loop.out" 2>"$d/loop.err"
}

# report_loop DIR AGENT N [options]: N more iterations of the loop in DIR/repo, logs in DIR/logs.
report_loop() {
	local d=$1 a=$2 n=$3
	shift 3
	(cd "$d/repo" && GDNCTL_TEST_COMMAND=./check.sh GDNCTL_PROFILE_COMMAND=./bench.sh \
		GDNCTL_TRACE_GLOB="out/*.json" \
		gdnctl loop --agent command --agent-cmd "$d/agents/$a {prompt_file}" \
		--prompt-file "$d/prompt.md" --log-dir "$d/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 10 --iterations "$n" --allow-no-commit \
		--validation-mode required --perf-mode on "$@")
}
