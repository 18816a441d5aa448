#!/usr/bin/env bash
# gdnctl loop --validation-mode: project.test_command / project.profile_command
# run on the local backend after each iteration with commits; a failure
# reverts the iteration's commits (refs/gdnctl/discarded/<n>) and is
# handled by --validation-policy. --perf-mode on: a tiny benchmark whose
# printed throughput/mfu and Chrome-trace `while` time are read from files
# the fake agent edits, so each commit controls the measured speed.
# ctest: isolation-both
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

# The agents edit speed.txt (read by bench.sh) or break the tests.
agent faster <<'EOF2'
echo 2.0 >speed.txt && git add speed.txt && git commit -qm "agent: faster"
EOF2
agent broken <<'EOF2'
echo BROKEN >state.txt && git add state.txt && git commit -qm "agent: breaks the tests" &&
echo 9.0 >speed.txt && git add speed.txt && git commit -qm "agent: second commit"
EOF2
agent no-change <<'EOF2'
echo "nothing to do"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >bench.sh <<-'EOF2' &&
					#!/bin/sh
					echo "step 1"
					echo "throughput/mfu=$(cat speed.txt)"
				EOF2
				cat >check.sh <<-'EOF2' &&
					#!/bin/sh
					if grep -q BROKEN state.txt; then echo "tests: BROKEN"; exit 3; fi
					echo "tests: ok"
				EOF2
				chmod +x bench.sh check.sh && echo 1.0 >speed.txt && echo ok >state.txt &&
				git add . && git commit -qm "bench"
		)
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && GDNCTL_TEST_COMMAND=./check.sh GDNCTL_PROFILE_COMMAND=./bench.sh \
		GDNCTL_TRACE_GLOB="${TRACE_GLOB:-}" \
		gdnctl "${LOOP:-loop}" --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 "$@")
}

test_expect_success 'passing validation: tests then profile run, the commit is kept' '
	new_repo &&
	run_loop faster --iterations 1 --validation-mode required >out 2>err &&
	test "$(git -C repo log -1 --format=%s)" = "agent: faster" &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation tests attempt 1$" out &&
	test_grep "^tests: ok$" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation profile attempt 1$" out &&
	test_grep "^throughput/mfu=2.0$" out &&
	test_grep "\"event\":\"validation\",\"iteration\":1,\"phase\":\"tests\",\"attempt\":1,\"rc\":0,\"state\":\"succeeded\",\"duration_ms\":" logs/loop.jsonl &&
	test_grep "\"event\":\"validation\",.*\"phase\":\"profile\",\"attempt\":1,\"rc\":0" logs/loop.jsonl &&
	test_grep ! "\"event\":\"revert\"" logs/loop.jsonl &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out
'

test_expect_success 'failing tests: both commits reverted, discarded ref kept, failure counted' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	run_loop broken --iterations 1 --validation-mode required >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation failed: tests exit 3$" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] iteration 1 reverted (validation failed: tests exit 3); discarded commits kept as refs/gdnctl/discarded/1$" err &&
	test_grep "Iteration failed the validation gate (validation failed: tests exit 3). Continuing due to policy=count-failure." err &&
	test_grep ! "validation profile attempt" out &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/1 &&
	git -C repo diff "$base" refs/gdnctl/discarded/1 >diff &&
	test_grep "^+BROKEN$" diff && test_grep "^+9.0$" diff &&
	test -z "$(git -C repo status --porcelain)" &&
	git -C repo diff --quiet "$base" HEAD &&
	test "$(cat repo/state.txt)" = ok &&
	test_grep "\"event\":\"validation\",\"iteration\":1,\"phase\":\"tests\",\"attempt\":1,\"rc\":3,\"state\":\"failed\"" logs/loop.jsonl &&
	head=$(git -C repo rev-parse HEAD) &&
	test_grep "\"event\":\"revert\",\"iteration\":1,\"reason\":\"validation failed: tests exit 3\",\"ok\":true,\"discarded_ref\":\"refs/gdnctl/discarded/1\",\"head\":\"$head\",\"commits\":2" logs/loop.jsonl &&
	test_grep "\"failure\":\"hook\",\"counted\":true" logs/loop.jsonl &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out
'

test_expect_success 'validation-policy fail: exit 1 (codex-loop: the tests exit code)' '
	new_repo &&
	LOOP=codex-loop test_must_fail =3 run_loop broken --iterations 2 --validation-mode required \
		--validation-policy fail >out 2>err &&
	test_grep ! "iteration 2/2" out &&
	new_repo &&
	test_must_fail =1 run_loop broken --iterations 2 --validation-mode required \
		--validation-policy fail >out 2>err &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/1 &&
	test "$(cat repo/state.txt)" = ok &&
	test_grep ! "iteration 2/2" out
'

test_expect_success 'profile-only: tests are not run; a failing profile reverts' '
	new_repo &&
	(cd repo && printf "#!/bin/sh\necho no profile; exit 5\n" >bench.sh && git commit -qam "bad bench") &&
	run_loop faster --iterations 1 --validation-mode profile-only >out 2>err &&
	test_grep ! "validation tests attempt" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation failed: profile exit 5$" err &&
	test "$(cat repo/speed.txt)" = 1.0 &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/1
'

test_expect_success 'validation timeout: the phase is stopped and the iteration reverted' '
	new_repo &&
	(cd repo && printf "#!/bin/sh\nsleep 30\n" >check.sh && git commit -qam "slow tests") &&
	start=$(date +%s) &&
	run_loop faster --iterations 1 --validation-mode required --validation-timeout 1s >out 2>err &&
	test $(($(date +%s) - start)) -lt 20 &&
	test_grep "\"phase\":\"tests\",\"attempt\":1,\"rc\":124,\"state\":\"timeout\"" logs/loop.jsonl &&
	test_grep "validation failed: tests exit 124" err &&
	test "$(cat repo/speed.txt)" = 1.0
'

test_expect_success 'no commit (--allow-no-commit): no validation, nothing reverted' '
	new_repo &&
	run_loop no-change --iterations 1 --validation-mode required --allow-no-commit >out 2>err &&
	test_grep ! "\"event\":\"validation\"" logs/loop.jsonl &&
	test_grep ! "\"event\":\"revert\"" logs/loop.jsonl &&
	test_must_fail git -C repo rev-parse -q --verify refs/gdnctl/discarded/1
'

test_expect_success 'validation off: nothing runs' '
	new_repo &&
	run_loop broken --iterations 1 --validation-mode off >out 2>err &&
	test_grep "validation: off (--validation-mode)$" out &&
	test_grep ! "validation tests attempt" out &&
	test_grep ! "validation profile attempt" out &&
	test "$(cat repo/state.txt)" = BROKEN
'

test_expect_success 'required mode without project.test_command: usage error' '
	new_repo &&
	(cd repo && test_must_fail =2 env -u GDNCTL_TEST_COMMAND "$GDNCTL_BIN" loop --iterations 1 \
		--agent command --agent-cmd true --validation-mode required) 2>err &&
	test_grep "needs project.test_command" err
'

test_expect_success '--backend and loop.backend: unknown names are refused, local works' '
	new_repo &&
	test_must_fail run_loop faster --iterations 1 --validation-mode required --backend nosuch 2>err &&
	test_grep "nosuch" err &&
	GDNCTL_LOOP_BACKEND=nosuch2 test_must_fail run_loop faster --iterations 1 \
		--validation-mode required 2>err &&
	test_grep "nosuch2" err &&
	GDNCTL_LOOP_BACKEND=nosuch2 run_loop faster --iterations 1 --validation-mode required \
		--backend local >out 2>err &&
	test_grep "validation tests attempt 1" out
'

# ---- the performance policy ----

# The agent sets the benchmark's speed (words: one per profile run, in turn) and `while` time.
agent perf <<'EOF2'
[ -z "${SPEED:-}" ] || echo "$SPEED" >speed.txt
[ -z "${WHILE:-}" ] || echo "$WHILE" >while_us.txt
git commit -qam "agent: speed ${SPEED:-same} while ${WHILE:-same}"
EOF2

new_perf_repo() {
	new_repo &&
		(
			cd "$TRASH/repo" &&
				cat >bench.sh <<-'EOF2' &&
					#!/bin/sh
					# one profile run: throughput/mfu and out/trace.json (2 steps of 100 ms)
					mkdir -p out
					n=$(cat out/count 2>/dev/null || echo 0); echo $((n + 1)) >out/count
					set -- $(cat speed.txt); i=$((n % $# + 1)); eval "mfu=\${$i}"
					w=$(cat while_us.txt)
					echo "throughput/mfu=$mfu"
					sh "$GDNCTL_SOURCE_DIR/tests/e2e/fake-trace.sh" "$w" >out/trace.json
				EOF2
				echo 10000 >while_us.txt && echo out/ >.gitignore &&
				git add . && git commit -qm "benchmark with a trace"
		)
}

run_perf() {
	TRACE_GLOB="out/*.json" run_loop perf --perf-mode on "$@"
}

champion() {
	python3 -c "import json,sys; s=json.load(open(sys.argv[1])); c=s['champion']; print(c['commit'], c['metric_value'], c['decision'])" logs/perf_state.json
}

test_expect_success 'baseline before iteration 1, then a faster commit is promoted' '
	new_perf_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	SPEED=2.0 run_perf --iterations 1 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] measuring the starting commit ${base:0:12} as the baseline$" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance baseline initialized: throughput/mfu=1 @ ${base:0:12}" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance champion promoted: 1 -> 2 (+100.00%" out &&
	events="$(sed -n "s/.*\"event\":\"\([a-z_]*\)\".*/\1/p" logs/loop.jsonl | grep -vx worktree_add | tr "\n" " ")" &&
	case "$events" in *"run_start validation trace perf_decision iteration_start"*) ;; *) echo "$events"; exit 1 ;; esac &&
	: with a worktree, which goes at the end of the run, the trace is kept under the log dir &&
	if test "$ISOLATION" = worktree; then
		kept=traces/iteration-000/run-1/trace.json &&
		test_grep "\"event\":\"trace\",\"iteration\":0,\"attempt\":1,\"source\":\"local\",\"path\":\"$TRASH/logs/$kept\",\"file\":\"$kept\",\"origin\":null" logs/loop.jsonl &&
		test -s "logs/$kept"
	else
		test_grep "\"event\":\"trace\",\"iteration\":0,\"attempt\":1,\"source\":\"local\",\"path\":\"$TRASH/repo/out/trace.json\",\"file\":null,\"origin\":null" logs/loop.jsonl
	fi &&
	test_grep "\"event\":\"perf_decision\",\"iteration\":0,\"commit\":\"$base\",\"metric\":\"throughput/mfu\",\"decision\":\"baseline\"" logs/loop.jsonl &&
	head=$(git -C repo rev-parse HEAD) &&
	test "$(git -C repo log -1 --format=%s)" = "agent: speed 2.0 while same" &&
	test "$(champion)" = "$head 2.0 promoted" &&
	test_grep "\"decision\":\"promoted\"" logs/loop.jsonl &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success 'the champion in the state is kept: no new baseline' '
	SPEED=2.001 run_perf --iterations 1 >out 2>err &&
	test_grep ! "baseline" out &&
	test_grep "performance champion kept from .*perf_state.json: throughput/mfu=2$" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance within hold band vs champion: 2 -> 2.001 (+0.05%" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: speed 2.001 while same" &&
	test "$(champion | cut -d" " -f2-)" = "2.0 promoted"
'

test_expect_success 'a regression is reverted: discarded ref, clean tree, failure counted' '
	new_perf_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	SPEED=0.5 run_perf --iterations 1 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance regression detected vs champion: 1 -> 0.5 (-50.00%" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] iteration 1 reverted (performance regression: throughput/mfu); discarded commits kept as refs/gdnctl/discarded/1$" err &&
	test_grep "performance policy failed this iteration (regression). Continuing due to policy=count-failure." err &&
	git -C repo diff "$base" refs/gdnctl/discarded/1 >diff &&
	test_grep "^+0.5$" diff &&
	git -C repo diff --quiet "$base" HEAD &&
	test -z "$(git -C repo status --porcelain)" &&
	test_grep "\"event\":\"revert\",\"iteration\":1,\"reason\":\"performance regression: throughput/mfu\",\"ok\":true,\"discarded_ref\":\"refs/gdnctl/discarded/1\"" logs/loop.jsonl &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out &&
	test "$(champion)" = "$base 1.0 baseline"
'

test_expect_success 'validation and perf together: failing tests revert before any decision' '
	new_perf_repo &&
	run_loop broken --iterations 1 --perf-mode on --validation-mode required >out 2>err &&
	test_grep "validation failed: tests exit 3" err &&
	test_grep -c "\"event\":\"perf_decision\"" logs/loop.jsonl >n && test "$(cat n)" = 1 &&
	test "$(cat repo/state.txt)" = ok
'

test_expect_success 'missing metric under continue: kept, not counted' '
	new_perf_repo &&
	SPEED=NA run_perf --iterations 1 --perf-regression-policy continue >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] required performance metric is unavailable: throughput/mfu" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: speed NA while same" &&
	test_grep "\"decision\":\"unscored\"" logs/loop.jsonl &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out
'

test_expect_success 'missing metric under revert-continue: reverted, not counted' '
	new_perf_repo &&
	SPEED=NA run_perf --iterations 1 --perf-regression-policy revert-continue >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] required performance metric is unavailable: throughput/mfu" err &&
	test "$(cat repo/speed.txt)" = 1.0 &&
	git -C repo rev-parse -q --verify refs/gdnctl/discarded/1 &&
	test_grep "1 iteration, 0 commits, 0 failed iterations (0 counted" out
'

test_expect_success 'gate: `while` grows 10 ms/step with a small win: rejected and reverted' '
	new_perf_repo &&
	SPEED=1.01 WHILE=20000 run_perf --iterations 1 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance gate triggered vs champion: 1 -> 1.01 (+1.00%" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] gate: .while. grew 10.000 ms/step (10.000 -> 20.000, limit 5.000)" err &&
	test_grep "\"decision\":\"gate_regression\"" logs/loop.jsonl &&
	test "$(cat repo/while_us.txt)" = 10000
'

test_expect_success 'gate: a metric win of 5 % or more overrides it' '
	new_perf_repo &&
	SPEED=1.10 WHILE=20000 run_perf --iterations 1 >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] gate: skipped, metric win +10.00% >= 5.00%" out &&
	test_grep "performance champion promoted: 1 -> 1.1 (+10.00%" out &&
	test "$(cat repo/while_us.txt)" = 20000
'

test_expect_success '--perf-gate replaces the defaults' '
	new_perf_repo &&
	SPEED=1.01 WHILE=20000 run_perf --iterations 1 --perf-gate "category:while max_increase_ms=50" >out 2>err &&
	test_grep "performance champion promoted: 1 -> 1.01" out &&
	test_must_fail =2 run_perf --iterations 1 --perf-gate "category:while max_increase=5" 2>err &&
	test_grep "unknown setting" err
'

test_expect_success 'noisy repeats (K=3) without --perf-ab: the median decides' '
	new_perf_repo &&
	SPEED="1.001 9.0 1.002" run_perf --iterations 1 --perf-repeats 3 --no-perf-ab >out 2>err &&
	test_grep -c "validation profile attempt" out >n && test "$(cat n)" = 6 &&
	test_grep "performance within hold band vs champion: 1 -> 1.002 (+0.20%" out &&
	test_grep "\"decision\":\"within_threshold\",.*\"samples\":3,\"candidate\":1.002" logs/loop.jsonl
'

test_expect_success '--perf-state-file and --perf-metric with a trace metric' '
	new_perf_repo &&
	WHILE=2000 run_perf --iterations 1 --perf-state-file "$TRASH/st.json" \
		--perf-metric trace/category/while_ms >out 2>err &&
	test_grep "performance baseline initialized: trace/category/while_ms=10 " out &&
	test_grep "performance champion promoted: 10 -> 2 (+80.00%" out &&
	test -s "$TRASH/st.json" && test ! -e logs/perf_state.json
'

test_done
