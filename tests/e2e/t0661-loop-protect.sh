#!/usr/bin/env bash
# ctest: isolation-both
# gdnctl loop --protect / project.protected_paths (issue 15 section 2): an
# iteration whose commits touch a protected path is reverted without
# validation (reason "protected path changed: <path>", commits kept under
# refs/gdnctl/discarded/<n>) and the next prompt says so. An agent that
# edits the benchmark to print a better number is never kept.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

# The cheat rewrites the benchmark to print a better number.
agent cheat <<'EOF2'
printf '#!/bin/sh\necho "throughput/mfu=99"\n' >bench.sh && git add bench.sh &&
git commit -qm "agent: a faster benchmark"
EOF2
# The cheat's quieter cousin: leaves the edit uncommitted after a real commit.
agent cheat-dirty <<'EOF2'
echo 2.0 >speed.txt && git add speed.txt && git commit -qm "agent: faster" &&
printf '#!/bin/sh\necho "throughput/mfu=99"\n' >bench.sh
EOF2
agent faster <<'EOF2'
echo "$(cat speed.txt)1" >speed.txt && git add speed.txt && git commit -qm "agent: faster"
EOF2
agent cheat-test <<'EOF2'
mkdir -p tests && echo "exit 0" >tests/check.sh && git add tests && git commit -qm "agent: tests"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >bench.sh <<-'EOF2' &&
					#!/bin/sh
					echo "throughput/mfu=$(cat speed.txt)"
				EOF2
				mkdir tests && printf '#!/bin/sh\necho "tests: ok"\n' >tests/check.sh &&
				chmod +x bench.sh tests/check.sh && echo 1.0 >speed.txt &&
				git add . && git commit -qm "bench"
		)
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND="sh tests/check.sh" GDNCTL_PROFILE_COMMAND="sh bench.sh" \
		gdnctl loop --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 "$@")
}

test_expect_success 'without protection the cheat wins (the control)' '
	new_repo &&
	run_loop cheat --iterations 1 --perf-mode on >out 2>err &&
	test "$(git -C repo log -1 --format=%s)" = "agent: a faster benchmark"
'

test_expect_success '--protect: the benchmark edit is reverted unvalidated, never kept' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	run_loop cheat --iterations 3 --perf-mode on --protect bench.sh >out 2>err &&
	git -C repo diff --quiet "$base" HEAD &&
	test "$(cat repo/bench.sh | tail -1)" = "echo \"throughput/mfu=\$(cat speed.txt)\"" &&
	test_grep "iteration 1 reverted (protected path changed: bench.sh); discarded commits kept as refs/gdnctl/discarded/1" err &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/1 &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/3 &&
	test_grep "\"event\":\"revert\",\"iteration\":1,\"reason\":\"protected path changed: bench.sh\",\"ok\":true" logs/loop.jsonl &&
	test_grep ! "performance champion promoted" out &&
	test_grep ! "\"event\":\"validation\",\"iteration\":1" logs/loop.jsonl &&
	test_grep "protected path bench.sh" logs/iteration-002-prompt.txt &&
	test_grep "Iteration 1 was reverted" logs/iteration-002-prompt.txt &&
	test_grep ! "protected path" logs/iteration-001-prompt.txt
'

test_expect_success '{{LOOP_NOTE}} places the note in the template' '
	new_repo &&
	printf "Iteration {{ITERATION}}\nNOTE[{{LOOP_NOTE}}]\nend\n" >"$TRASH/prompt2.md" &&
	run_loop cheat --iterations 2 --protect bench.sh --validation-mode off \
		--prompt-file "$TRASH/prompt2.md" >out 2>err &&
	test_grep "^NOTE\[Iteration 1 was reverted" logs/iteration-002-prompt.txt &&
	test_grep "^NOTE\[\]$" logs/iteration-001-prompt.txt &&
	test "$(tail -1 logs/iteration-002-prompt.txt)" = end
'

test_expect_success 'an uncommitted edit of a protected file is caught too' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	run_loop cheat-dirty --iterations 1 --perf-mode on --protect bench.sh >out 2>err;
	test_grep "^throughput/mfu=2.0$" out &&
	test_grep ! "performance champion promoted: 1 -> 99" out &&
	test_grep ! "throughput/mfu=99" out
'

test_expect_success 'project.protected_paths (globs, a directory) from the configuration' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	GDNCTL_PROTECTED_PATHS="*.md,tests/" run_loop cheat-test --iterations 1 \
		--validation-mode required >out 2>err &&
	git -C repo diff --quiet "$base" HEAD &&
	test_grep "protected path changed: tests/check.sh" err
'

test_expect_success 'a change outside the protected paths is validated and kept' '
	new_repo &&
	run_loop faster --iterations 1 --perf-mode on --protect bench.sh --protect "tests/*" >out 2>err &&
	test "$(git -C repo log -1 --format=%s)" = "agent: faster" &&
	test_grep "validation profile attempt 1" out
'

test_done
