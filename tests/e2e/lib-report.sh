# A real loop run for the report tests (sourced after lib.sh), like
# t0700-loop-gate.sh: a benchmark that prints throughput/mfu and writes a
# Chrome trace, tests that fail on BROKEN, and a scripted agent whose
# iteration N (read from the prompt) makes one kind of change:
#   1 faster (promoted)         2 breaks the tests (reverted)
#   3 slower (regression)       4 no commit
#   5 +0.05 % (within band)     6 `while` +10 ms/step (gate regression)
#   7 faster again (promoted)
# report_fixture DIR: DIR/repo, DIR/logs (loop.jsonl, perf_state.json).

. "$GDNCTL_SOURCE_DIR/tests/e2e/lib-loop.sh"

report_fixture() {
	local d=$1
	mkdir -p "$d/agents" || return 1
	AG=$d/agents agent plan <<-'EOF2' &&
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
					sh "$GDNCTL_SOURCE_DIR/tests/e2e/fake-trace.sh" "$w" >out/trace.json
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
