#!/usr/bin/env bash
# ctest: isolation-both
# gdnctl loop: how the engine applies the policies to what the hooks (the
# validation gate, the performance policy) report. The fake agents append a
# running-log entry with `- Commit: (pending)` (--hillclimb-log-file) and
# commit it with their change; bench.sh prints throughput/mfu from a file
# the agent edits, check.sh runs the tests.
#   1. count-failure that keeps the commits: the summary, the journal's
#      decision and --resume count them;
#   2. such an iteration (also after a failed post-check) is stamped and the
#      stamp committed, a reverted one never is; lint-log passes;
#   3. Ctrl-C during a hook (validation, the performance profile, the
#      baseline): no policy continuation, exit 130, `interrupted` journaled,
#      no decision; --resume redoes the iteration;
#   4. a validation phase that could not run (backend error) is an iteration
#      error (error event, decision with failure iteration_error) handled by
#      --iteration-error-policy, not a validation failure.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC GDNCTL_LOOP_BACKEND

# SPEED: the new throughput/mfu (empty: unchanged); HANG=1: the next tests and profile hang.
agent entry <<'EOF'
n=$(grep -c '^### Iteration ' log.md)
printf '\n### Iteration %s - speed %s\n\n- Commit: (pending)\n' $((n + 1)) "${SPEED:-same}" >>log.md
[ -z "${SPEED:-}" ] || echo "$SPEED" >speed.txt
[ -z "${HANG:-}" ] || touch hang
git add -A && git commit -qm "agent: entry $((n + 1)) speed ${SPEED:-same}"
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

# check.sh and bench.sh hang (noting their pid) while the tree has `hang` and $GO_FAST is absent.
new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$TRASH"/pids.* "$TRASH/go-fast" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >hang.sh <<-'EOF' &&
					#!/bin/sh
					if [ -e hang ] && [ ! -e "$GO_FAST" ]; then
						echo $$ >"$PIDS.$1.tmp" && mv "$PIDS.$1.tmp" "$PIDS.$1"
						sleep 300 &
						wait
					fi
				EOF
				cat >check.sh <<-'EOF' &&
					#!/bin/sh
					./hang.sh tests
					echo "tests: ok"
				EOF
				cat >bench.sh <<-'EOF' &&
					#!/bin/sh
					./hang.sh profile
					echo "throughput/mfu=$(cat speed.txt)"
				EOF
				printf '# Running log\n' >log.md &&
				chmod +x hang.sh check.sh bench.sh && echo 1.0 >speed.txt &&
				git add . && git commit -qm "bench"
		)
}

loop_args=(--agent command --agent-cmd "$AG/entry {prompt_file}" --prompt-file "$TRASH/prompt.md"
	--log-dir "$TRASH/logs" --sleep-seconds 0 --retry-sleep-seconds 0 --max-failures 5
	--hillclimb-log-file log.md)
# exec: in the background, $! is gdnctl itself
run_loop_exec() {
	cd "$TRASH/repo" && exec env GDNCTL_TEST_COMMAND=./check.sh \
		GDNCTL_PROFILE_COMMAND=./bench.sh PIDS="$TRASH/pids" GO_FAST="$TRASH/go-fast" \
		${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "${LOOP:-loop}" "${ISOLATION_ARGS[@]}" "${loop_args[@]}" "$@"
}
run_loop() {
	(run_loop_exec "$@")
}
lint() {
	(cd "$TRASH/repo" && gdnctl lint-log --log-file log.md --scope all --check-commits)
}
alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $s in Z*) return 1 ;; esac
}
# Start the loop in the background, wait for phase $1 to hang, Ctrl-C it; $rc: the exit status.
interrupt_in() {
	local phase=$1 pid i
	shift
	(run_loop_exec "$@") >out 2>err &
	pid=$!
	for i in $(seq 600); do test -s "$TRASH/pids.$phase" && break; sleep 0.05; done
	test -s "$TRASH/pids.$phase" || { kill $pid; return 1; }
	kill -INT $pid
	wait $pid
	rc=$?
}

# ---- 1 and 2: count-failure keeps the commits ----

test_expect_success 'perf count-failure keeps the commit: summary, journal and entry agree' '
	new_repo &&
	SPEED=0.5 run_loop --iterations 1 --perf-mode on --perf-regression-policy count-failure \
		>out 2>err &&
	cand=$(git -C repo rev-parse HEAD~1) &&
	test "$(git -C repo log -1 --format=%s "$cand")" = "agent: entry 1 speed 0.5" &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance regression detected vs champion: 1 -> 0.5" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance policy failed this iteration (regression). Continuing due to policy=count-failure.$" err &&
	test_grep ! "\"event\":\"revert\"" logs/loop.jsonl &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"hook\",\"counted\":true,\"commits\":1," logs/loop.jsonl &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] loop summary: run .*: 1 iteration, 1 commit, 1 failed iteration (1 counted; agent=0, post_check=0, no_commit=0, hook=1, iteration_error=0)" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] stamped last hill-climb log entry with commit ${cand:0:12}$" out &&
	test "$(git -C repo log -1 --format=%s)" = "gdnctl: stamp hill-climb log entry with commit ${cand:0:12}" &&
	test_grep "\"event\":\"stamp\",\"iteration\":1,\"commit\":\"$(git -C repo rev-parse HEAD)\"" logs/loop.jsonl &&
	test_grep "^- Commit: $cand$" repo/log.md &&
	test_grep ! "(pending)" repo/log.md &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

test_expect_success '--resume counts the kept commits of the journal once' '
	SPEED=0.25 run_loop --resume --iterations 2 --perf-mode on \
		--perf-regression-policy count-failure >out 2>err &&
	test_grep "resuming run .* after iteration 1 of 2" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] loop summary: run .*: 2 iterations, 2 commits, 2 failed iterations (2 counted; agent=0, post_check=0, no_commit=0, hook=2," out &&
	test_grep -c "\"event\":\"stamp\"" logs/loop.jsonl >n && test "$(cat n)" = 2 &&
	test "$(grep -c "^- Commit: [0-9a-f]\{40\}$" repo/log.md)" = 2 &&
	lint
'

test_expect_success 'perf fail keeps the commit too: counted and stamped, exit 1' '
	new_repo &&
	SPEED=0.5 test_must_fail =1 run_loop --iterations 2 --perf-mode on \
		--perf-regression-policy fail >out 2>err &&
	cand=$(git -C repo rev-parse HEAD~1) &&
	test "$(git -C repo log -1 --format=%s "$cand")" = "agent: entry 1 speed 0.5" &&
	test_grep ! "Continuing due to" err &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"hook\",\"counted\":false,\"commits\":1,.*\"exit\":1" logs/loop.jsonl &&
	test_grep "1 iteration, 1 commit, 1 failed iteration (0 counted; agent=0, post_check=0, no_commit=0, hook=1," out &&
	test_grep "^- Commit: $cand$" repo/log.md &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

test_expect_success 'a reverted iteration is never stamped; its entry goes with it' '
	new_repo &&
	SPEED=0.5 run_loop --iterations 1 --perf-mode on >out 2>err &&
	test_grep "iteration 1 reverted (performance regression: throughput/mfu)" err &&
	test_grep ! "stamped" out &&
	test_grep ! "\"event\":\"stamp\"" logs/loop.jsonl &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"hook\",\"counted\":true,\"commits\":0," logs/loop.jsonl &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out &&
	test_grep ! "### Iteration" repo/log.md &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

test_expect_success 'a failed validation (count-failure) reverts: not stamped, 0 commits' '
	new_repo &&
	(cd repo && printf "#!/bin/sh\nexit 4\n" >check.sh && git commit -qam "failing tests") &&
	run_loop --iterations 1 --validation-mode required >out 2>err &&
	test_grep "validation failed: tests exit 4" err &&
	test_grep ! "\"event\":\"stamp\"" logs/loop.jsonl &&
	test_grep "\"failure\":\"hook\",\"counted\":true,\"commits\":0," logs/loop.jsonl &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out &&
	lint
'

test_expect_isolation worktree 'a failed post-check (count-failure): counted, the commit set aside, not on the branch' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	run_loop --iterations 1 --post-check false --post-check-policy count-failure >out 2>err &&
	test "$(git -C repo rev-parse HEAD)" = "$base" &&
	test "$(git -C repo log -1 --format=%s refs/gdnctl/discarded/1~1)" = "agent: entry 1 speed same" &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"post_check\",\"counted\":true,\"commits\":0," logs/loop.jsonl &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_isolation in-place 'a failed post-check (count-failure) keeps the commit: counted and stamped' '
	new_repo &&
	run_loop --iterations 1 --post-check false --post-check-policy count-failure >out 2>err &&
	cand=$(git -C repo rev-parse HEAD~1) &&
	test "$(git -C repo log -1 --format=%s "$cand")" = "agent: entry 1 speed same" &&
	test_grep "post-check failed. Use --post-check-policy count-failure/continue to avoid exiting. Continuing due to policy=count-failure.$" err &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"post_check\",\"counted\":true,\"commits\":1," logs/loop.jsonl &&
	test_grep "1 iteration, 1 commit, 1 failed iteration (1 counted" out &&
	test_grep "^- Commit: $cand$" repo/log.md &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

# ---- 3: Ctrl-C during a hook ----

test_expect_success 'SIGINT during the validation tests: no policy continuation, exit 130' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	HANG=1 interrupt_in tests --iterations 2 --validation-mode required &&
	test $rc = 130 &&
	tests=$(cat "$TRASH/pids.tests") &&
	for i in $(seq 50); do alive "$tests" || break; sleep 0.1; done &&
	! alive "$tests" &&
	test_grep "iteration 1 reverted (validation interrupted by signal 2)" err &&
	test_grep ! "Continuing due to policy" err &&
	test_grep ! "iteration 2/2" out &&
	test_grep "\"event\":\"interrupted\",\"iteration\":1,\"signal\":2" logs/loop.jsonl &&
	test_grep ! "\"event\":\"decision\"" logs/loop.jsonl &&
	test_grep "\"reason\":\"interrupted\",\"exit_code\":130" logs/loop.jsonl &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] loop summary: run .*: 0 iterations, 0 commits, 0 failed iterations (0 counted; agent=0, post_check=0, no_commit=0, hook=0, iteration_error=0), .*stopped: interrupted (exit 130)$" out &&
	test_grep ! "\"event\":\"stamp\"" logs/loop.jsonl &&
	git -C repo diff --quiet "$base" HEAD &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

test_expect_success '--resume after it redoes the interrupted iteration' '
	: in place the branch holds the commit and its revert, a worktree leaves it alone &&
	if test "$ISOLATION" = worktree; then base=$(git -C repo rev-parse HEAD); else base=$(git -C repo rev-parse HEAD~2); fi &&
	test "$(git -C repo log -1 --format=%s "$base")" = bench &&
	touch go-fast &&
	run_loop --resume --validation-mode required >out 2>err &&
	test_grep "resuming run .* after iteration 0 of 2" out &&
	test_grep "iteration 1/2" out &&
	test_grep "iteration 2/2" out &&
	{ test "$ISOLATION" = worktree ||
		test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] WARNING: iteration 1 was interrupted; its commits are kept at refs/gdnctl/loop/.*/iteration-1 and the branch is back at ${base:0:12}$" err; } &&
	test_grep "2 iterations, 2 commits, 0 failed iterations (0 counted" out &&
	test "$(grep -c "^- Commit: [0-9a-f]\{40\}$" repo/log.md)" = 2 &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

test_expect_success 'SIGINT during the performance profile: commits not kept, no decision' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	SPEED=2.0 HANG=1 interrupt_in profile --iterations 2 --perf-mode on --validation-mode off \
		--iteration-error-policy count-failure &&
	test $rc = 130 &&
	test_grep ! "Continuing due to policy" err &&
	test_grep ! "raised" err &&
	test_grep "\"event\":\"interrupted\",\"iteration\":1,\"signal\":2" logs/loop.jsonl &&
	test_grep ! "\"event\":\"decision\"" logs/loop.jsonl &&
	test_grep ! "\"event\":\"error\"" logs/loop.jsonl &&
	test_grep ! "\"event\":\"stamp\"" logs/loop.jsonl &&
	test_grep "stopped: interrupted (exit 130)" out &&
	test_grep "0 failed iterations (0 counted" out &&
	{ test "$ISOLATION" = in-place || {
		test_grep "the commits of an interrupted iteration: kept at refs/gdnctl/loop/.*/iteration-1" err &&
		test "$(git -C repo rev-parse HEAD)" = "$base"; }; } &&
	touch go-fast &&
	run_loop --resume --iterations 1 --perf-mode on >out 2>err &&
	{ test "$ISOLATION" = worktree ||
		test_grep "iteration 1 was interrupted; its commits are kept at refs/gdnctl/loop/.*/iteration-1 and the branch is back at ${base:0:12}" err; } &&
	test_grep "iteration 1/1" out &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	test "$(grep -c "^### Iteration " repo/log.md)" = 1 &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

test_expect_success 'SIGINT during the baseline profile: interrupted, not an error' '
	new_repo &&
	(cd repo && touch hang && git add hang && git commit -qm "hang") &&
	interrupt_in profile --iterations 2 --perf-mode on &&
	test $rc = 130 &&
	test_grep ! "error" err &&
	test_grep ! "codex iteration" out &&
	test_grep "\"event\":\"interrupted\",\"iteration\":0,\"signal\":2" logs/loop.jsonl &&
	test_grep "\"reason\":\"interrupted\",\"exit_code\":130" logs/loop.jsonl &&
	test_grep "0 iterations, 0 commits, 0 failed iterations (0 counted;.*stopped: interrupted (exit 130)$" out
'

# ---- 4: a phase that could not run ----

# An ssh backend whose ssh always fails like an unreachable host.
cat >"$TRASH/down-ssh" <<'EOF'
#!/bin/sh
echo "ssh: connect to host 127.0.0.1 port 9: Connection refused" >&2
exit 255
EOF
chmod +x "$TRASH/down-ssh"
mkdir -p "$XDG_CONFIG_HOME/gdnctl"
cat >"$XDG_CONFIG_HOME/gdnctl/config.yaml" <<EOF
backends:
  down:
    type: ssh
    host: 127.0.0.1
    port: 9
    workdir: $TRASH/remote/wd
    jobdir: $TRASH/remote/jobs
EOF

test_expect_success 'validation could not run: an iteration error, under count-failure' '
	new_repo &&
	base=$(git -C repo rev-parse HEAD) &&
	GDNCTL_SSH=$TRASH/down-ssh run_loop --iterations 2 --validation-mode required \
		--backend down --iteration-error-policy count-failure >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation could not run: .*Connection refused" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] iteration 1 raised: .*Continuing due to policy=count-failure.$" err &&
	test_grep ! "validation failed" err &&
	test_grep ! "Iteration failed the validation gate" err &&
	test_grep "\"event\":\"revert\",\"iteration\":1,\"reason\":\"validation could not run: " logs/loop.jsonl &&
	test_grep "\"event\":\"error\",\"iteration\":1,\"message\":\".*Connection refused" logs/loop.jsonl &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"iteration_error\",\"counted\":true,\"commits\":0," logs/loop.jsonl &&
	test_grep ! "\"failure\":\"hook\"" logs/loop.jsonl &&
	test_grep "2 iterations, 0 commits, 2 failed iterations (2 counted; agent=0, post_check=0, no_commit=0, hook=0, iteration_error=2)" out &&
	test_grep ! "\"event\":\"stamp\"" logs/loop.jsonl &&
	git -C repo diff --quiet "$base" HEAD &&
	test -z "$(git -C repo status --porcelain)" &&
	lint
'

test_expect_success 'validation could not run: --iteration-error-policy fail exits 1 (codex-loop: 2)' '
	new_repo &&
	GDNCTL_SSH=$TRASH/down-ssh test_must_fail =1 run_loop --iterations 2 \
		--validation-mode required --backend down >out 2>err &&
	test_grep ! "Continuing due to" err &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"iteration_error\",\"counted\":false,\"commits\":0,.*\"exit\":1" logs/loop.jsonl &&
	test_grep "\"reason\":\"failure\",\"exit_code\":1" logs/loop.jsonl &&
	lint &&
	new_repo &&
	LOOP=codex-loop GDNCTL_SSH=$TRASH/down-ssh test_must_fail =2 run_loop --iterations 2 \
		--validation-mode required --backend down >out 2>err &&
	test_grep ! "Continuing due to" err &&
	test_grep "\"event\":\"decision\",\"iteration\":1,\"outcome\":\"failed\",\"failure\":\"iteration_error\",\"counted\":false,\"commits\":0,.*\"exit\":2" logs/loop.jsonl &&
	test_grep "\"reason\":\"failure\",\"exit_code\":2" logs/loop.jsonl &&
	lint
'

test_done
