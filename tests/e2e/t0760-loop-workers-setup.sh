#!/usr/bin/env bash
# gdnctl loop --workers N, the setup side: the options and their errors
# (exit 2, one line), the loop.workers key, --resume keeping them, the
# --dry-run plan (each worker's worktree and backend, shared or one per
# worker), validation from each worker's worktree on a shared backend, on
# one backend per worker and on each worker's held dev TPU, and
# --hold-dev-tpu holding N allocations <name>-w<K> (the uv double's
# dev_tpu.py), all acquired before the loop, a lost one re-acquired between
# that worker's iterations, and all released at the end, on Ctrl-C and on
# SIGTERM: no allocation process is left.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
. "$(dirname "$0")/lib-loop.sh"
marin_setup
unset FAKE_ALLOC_FAIL_NAMES FAKE_ALLOC_DIE_FILE
export STATE=$GDNCTL_FAKE_STATE TRASH
RAY_RUN=lib/marin/src/marin/run/ray_run.py

AGENT_PID_FILE=$TRASH/agent.pid
agent commit-one <<'EOF2'
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2
# commit-slow: a second's thought, then a file of its own (candidates never conflict:
# each worker validates its own, whatever the timing)
agent commit-slow <<'EOF2'
sleep 1
f=work-$(date +%s%N).txt && echo one >"$f" && git add "$f" && git commit -qm "agent: one change"
EOF2
# One agent (of any worker) kills the allocation me-w2 of the double once, then all commit.
agent die-once <<'EOF2'
if mkdir "$TRASH/died" 2>/dev/null; then
	touch "$TRASH/die-me-w2"
	while [ -e "$TRASH/die-me-w2" ]; do sleep 0.05; done
fi
sleep 1
f=work-$(basename "$PWD").txt
echo "one $(date +%s%N)" >>"$f" && git add "$f" && git commit -qm "agent: one change"
EOF2
agent slow <<'EOF2'
exec sleep 60
EOF2
unset AGENT_PID_FILE
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$TRASH/agent.pid" "$STATE"/* &&
		: >"$GDNCTL_FAKE_LOG" &&
		test_create_repo "$TRASH/repo"
}

# A configuration in the repository (committed: the tree stays clean).
repo_config() {
	cat >"$TRASH/repo/gdnctl.yaml" &&
		(cd "$TRASH/repo" && git add gdnctl.yaml && git commit -qm config)
}

run_loop() {
	local a=$1
	shift
	(cd "$TRASH/repo" && gdnctl loop --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 "$@")
}

# A usage error: exit $1, one line on stderr matching $2, nothing on stdout.
usage_error() {
	local code=$1 want=$2
	shift 2
	test_expect_code "$code" run_loop commit-one "$@" >out 2>err &&
		test_line_count = 1 err &&
		test_grep -e "$want" err &&
		test_line_count = 0 out
}

# The options of the journal's run.
run_options() {
	jq -c 'select(.event == "run_start") | .options' "$TRASH/logs/loop.jsonl"
}

# The journal's dev_tpu events of one action for allocation $2.
dev_tpu_events() {
	jq -c "select(.event == \"dev_tpu\" and .action == \"$1\" and .tpu_name == \"$2\")" \
		"$TRASH/logs/loop.jsonl" | wc -l | tr -d ' '
}

test_expect_success 'the options are in the help, with their defaults; abbreviations work' '
	gdnctl loop -h >help &&
	test_grep -e "--workers N .*N agents at once, each in a worktree of its own.*(default: config loop.workers, else 1)" help &&
	test_grep -e "--worktree-dir DIR .*worker K works in DIR/w<K> (default: <log dir>/workers)" help &&
	test_grep -e "--backend NAME .*N times (worker K: the K-th) (repeatable) (default: config loop.backend, else local)" help &&
	new_repo &&
	run_loop commit-one --iterations 1 --worker 2 --worktree-d "$TRASH/wt" --dry-run >out 2>err &&
	test_grep "dry run: workers: 2, each in a worktree of its own" out &&
	test_grep "dry run:   worker 2: worktree $TRASH/wt/w2$" out &&
	test_expect_code 2 run_loop commit-one --iterations 1 --work 2 --dry-run 2>err &&
	test_grep "ambiguous" err
'

test_expect_success 'the errors: exit 2 (3 for the key), one line' '
	new_repo &&
	usage_error 2 "^\[gdnctl\] error: option '\''--workers'\'': 0 is out of range 1..$" \
		--iterations 1 --workers 0 &&
	usage_error 2 "^\[gdnctl\] error: option '\''--workers'\'': -3 is out of range 1..$" \
		--iterations 1 --workers -3 &&
	test_expect_code 2 run_loop commit-one --iterations 1 --workers two 2>err &&
	test_grep "^\[gdnctl\] error: option '\''--workers'\'': expected an integer, got '\''two'\''$" err &&
	usage_error 2 "^\[gdnctl\] error: --workers 2 needs --isolation worktree (a worktree per worker), not --isolation in-place$" \
		--iterations 1 --workers 2 --isolation in-place &&
	usage_error 2 "^\[gdnctl\] error: --backend given 3 times with --workers 2: give it once (shared by the workers) or once per worker$" \
		--iterations 1 --workers 2 --backend local --backend local --backend local &&
	usage_error 2 "^\[gdnctl\] error: --backend given 2 times with --workers 1: " \
		--iterations 1 --backend local --backend local &&
	usage_error 2 "^\[gdnctl\] error: --worktree-dir needs --workers N > 1 (one agent works in <log dir>/worktree)$" \
		--iterations 1 --worktree-dir "$TRASH/wt" &&
	usage_error 2 "^\[gdnctl\] error: .*nosuch" --iterations 1 --workers 2 --backend local \
		--backend nosuch --validation-mode off
'

test_expect_success 'loop.workers: the key and its variable; --workers wins; a bad value exits 3' '
	new_repo &&
	printf "loop:\n  workers: 3\n" | repo_config &&
	run_loop commit-one --iterations 1 --dry-run >out 2>err &&
	test_grep "dry run: workers: 3, each in a worktree of its own" out &&
	test_grep "dry run:   worker 3: worktree $TRASH/logs/workers/w3$" out &&
	run_loop commit-one --iterations 1 --workers 2 --dry-run >out 2>err &&
	test_grep "dry run: workers: 2," out &&
	run_loop commit-one --iterations 1 --workers 1 --dry-run >out 2>err &&
	test_grep ! "dry run: *worker" out &&
	usage_error 2 "^\[gdnctl\] error: loop.workers 3 needs --isolation worktree" \
		--iterations 1 --isolation in-place &&
	GDNCTL_LOOP_WORKERS=4 run_loop commit-one --iterations 1 --dry-run >out 2>err &&
	test_grep "dry run: workers: 4," out &&
	new_repo &&
	printf "loop:\n  workers: 0\n" | repo_config &&
	usage_error 3 "^\[gdnctl\] error: .*gdnctl.yaml.*: loop.workers: 0 is out of range 1..$" \
		--iterations 1 --dry-run
'

test_expect_success '--dry-run: one worker shows nothing new; two show their worktrees' '
	new_repo &&
	run_loop commit-one --iterations 1 --dry-run >one 2>err &&
	test_grep ! "dry run: *worker" one &&
	test_grep "dry run: the agent command (in $TRASH/logs/worktree):" one &&
	run_loop commit-one --iterations 1 --workers 2 --dry-run >out 2>err &&
	test_grep "dry run: workers: 2, each in a worktree of its own; backend: none (no validation)$" out &&
	test_grep "dry run:   worker 1: worktree $TRASH/logs/workers/w1$" out &&
	test_grep "dry run:   worker 2: worktree $TRASH/logs/workers/w2$" out &&
	test_grep "dry run: the agent command (in $TRASH/logs/workers/w1):" out &&
	! test -e "$TRASH/logs"
'

test_expect_success '--dry-run: a shared backend, one backend per worker, the held dev TPUs' '
	new_repo &&
	printf "project:\n  test_command: \"true\"\nbackends:\n  box1:\n    type: local\n  box2:\n    type: local\n" |
		repo_config &&
	run_loop commit-one --iterations 1 --workers 2 --validation-mode required \
		--backend box1 --dry-run >out 2>err &&
	test_grep "dry run: validation: required, on backend box1 (no hold)$" out &&
	test_grep "dry run: workers: 2, each in a worktree of its own; backend: shared (concurrent jobs, each from its worker'\''s worktree)$" out &&
	test_grep "dry run:   worker 1: worktree $TRASH/logs/workers/w1; backend box1$" out &&
	test_grep "dry run:   worker 2: worktree $TRASH/logs/workers/w2; backend box1$" out &&
	run_loop commit-one --iterations 1 --workers 2 --validation-mode required \
		--backend box1 --backend box2 --dry-run >out 2>err &&
	test_grep "dry run: workers: 2, each in a worktree of its own; backend: one per worker$" out &&
	test_grep "dry run:   worker 1: worktree $TRASH/logs/workers/w1; backend box1$" out &&
	test_grep "dry run:   worker 2: worktree $TRASH/logs/workers/w2; backend box2$" out &&
	run_loop commit-one --iterations 1 --workers 3 --validation-mode required \
		--hold-dev-tpu --dev-tpu-name me --worktree-dir "$TRASH/wt" --dry-run >out 2>err &&
	test_grep "dry run: validation: required, on backend local (a held dev TPU first)$" out &&
	test_grep "dry run:   worker 1: worktree $TRASH/wt/w1; backend local; holds dev TPU me-w1$" out &&
	test_grep "dry run:   worker 3: worktree $TRASH/wt/w3; backend local; holds dev TPU me-w3$" out &&
	test "$(calls_count)" = 0 &&
	! test -e "$TRASH/logs"
'

test_expect_success 'the run journals --workers, --worktree-dir and --backend; --resume keeps them' '
	new_repo &&
	run_loop commit-one --iterations 1 --workers 2 --worktree-dir "$TRASH/wt" \
		--backend local --backend local >out 2>err &&
	run_options | jq -e ".workers == 2 and .\"worktree-dir\" == \"$TRASH/wt\" and
		.backend == [\"local\", \"local\"]" >/dev/null &&
	usage_error 2 "^\[gdnctl\] error: --workers 3 contradicts the run'\''s --workers 2 (use --resume-override to change it)$" \
		--resume --workers 3 &&
	run_loop commit-one --resume --dry-run >out 2>err &&
	test_grep "dry run: workers: 2," out &&
	test_grep "dry run:   worker 2: worktree $TRASH/wt/w2$" out &&
	new_repo &&
	run_loop commit-one --iterations 1 --backend local >out 2>err &&
	run_options | jq -e ".backend == \"local\" and (has(\"workers\") | not)" >/dev/null &&
	new_repo &&
	printf "loop:\n  workers: 2\n" | repo_config &&
	run_loop commit-one --iterations 1 >out 2>err &&
	run_options | jq -e ".workers == 2" >/dev/null
'

test_expect_success '--hold-dev-tpu with two workers: me-w1 and me-w2, both released at the end' '
	new_repo &&
	run_loop commit-one --iterations 1 --workers 2 --hold-dev-tpu --dev-tpu-name me \
		--dev-tpu-type v6e-8 >out 2>err &&
	expect_call 1 uv run scripts/ray/dev_tpu.py --cluster us-central1 --tpu-name me-w1 \
		allocate --sync-path . --tpu-type v6e-8 &&
	expect_call 2 uv run scripts/ray/dev_tpu.py --cluster us-central1 --tpu-name me-w2 \
		allocate --sync-path . --tpu-type v6e-8 &&
	test "$(calls_with allocate)" = 2 &&
	test "$(grep -c "starting managed dev TPU allocation" out)" = 2 &&
	test_grep "dev TPU allocation is active: dev-tpu-me-w1 (cluster us-central1)" out &&
	test_grep "dev TPU allocation is active: dev-tpu-me-w2 (cluster us-central1)" out &&
	test_grep "releasing managed dev TPU allocation: dev-tpu-me-w1 (cluster us-central1)$" out &&
	test_grep "releasing managed dev TPU allocation: dev-tpu-me-w2 (cluster us-central1)$" out &&
	no_allocation_left &&
	test "$(dev_tpu_events acquired me-w1)" = 1 &&
	test "$(dev_tpu_events acquired me-w2)" = 1 &&
	test "$(dev_tpu_events released me-w1)" = 1 &&
	test "$(dev_tpu_events released me-w2)" = 1 &&
	test -s logs/dev_tpu_allocate-w1.log &&
	test -s logs/dev_tpu_allocate-w2.log &&
	! test -e logs/dev_tpu_allocate.log
'

test_expect_success '--hold-dev-tpu with three workers and --targets 2: me-w1 and me-w2 only' '
	new_repo &&
	run_loop commit-one --iterations 2 --workers 3 --targets 2 --hold-dev-tpu --dev-tpu-name me \
		--dev-tpu-type v6e-8 >out 2>err &&
	test "$(calls_with allocate)" = 2 &&
	test "$(grep -c "starting managed dev TPU allocation" out)" = 2 &&
	test_grep "releasing managed dev TPU allocation: dev-tpu-me-w1 (cluster us-central1)$" out &&
	test_grep "releasing managed dev TPU allocation: dev-tpu-me-w2 (cluster us-central1)$" out &&
	test_grep ! "me-w3" out &&
	no_allocation_left &&
	test "$(dev_tpu_events acquired me-w3)" = 0 &&
	! test -e logs/dev_tpu_allocate-w3.log
'

# A configuration whose tests say where they ran; ray backends box1 and box2 (the uv double).
where_config() {
	cat <<-\EOF | repo_config
		project:
		  test_command: echo "$GDNCTL_FAKE_HOST $PWD" >>"$TRASH/where"
		backends:
		  box1:
		    type: ray
		    cluster: c1
		  box2:
		    type: ray
		    cluster: c2
	EOF
}

test_expect_success 'validation: a shared backend runs each worker'\''s jobs from its worktree' '
	new_repo && rm -f where &&
	where_config &&
	FAKE_EXEC=1 run_loop commit-slow --iterations 2 --workers 2 --validation-mode required \
		--backend box1 >out 2>err &&
	test "$(calls_with $RAY_RUN --cluster c1)" = 2 &&
	test "$(calls_with $RAY_RUN --cluster c2)" = 0 &&
	test_grep "^ray-c1 $TRASH/logs/workers/w1$" where &&
	test_grep "^ray-c1 $TRASH/logs/workers/w2$" where &&
	test_line_count = 2 where
'

test_expect_success 'validation: one backend per worker, each from its worktree' '
	new_repo && rm -f where &&
	where_config &&
	FAKE_EXEC=1 run_loop commit-slow --iterations 2 --workers 2 --validation-mode required \
		--backend box1 --backend box2 >out 2>err &&
	test "$(calls_with $RAY_RUN --cluster c1)" = 1 &&
	test "$(calls_with $RAY_RUN --cluster c2)" = 1 &&
	test_grep "^ray-c1 $TRASH/logs/workers/w1$" where &&
	test_grep "^ray-c2 $TRASH/logs/workers/w2$" where &&
	test_line_count = 2 where
'

test_expect_success 'validation: each worker on its own held dev TPU, its prompt names it' '
	new_repo && rm -f where &&
	printf "project:\n  test_command: echo \"\$GDNCTL_FAKE_HOST\" >>\"\$TRASH/where\"\n  profile_command: \"true\"\n" |
		repo_config &&
	FAKE_EXEC=1 run_loop commit-slow --iterations 2 --workers 2 --validation-mode required \
		--hold-dev-tpu --dev-tpu-name me >out 2>err &&
	test_grep "^dev-tpu-me-w1$" where &&
	test_grep "^dev-tpu-me-w2$" where &&
	test_line_count = 2 where &&
	test "$(calls_with execute --tpu-name me-w1)" = 2 &&
	test "$(calls_with execute --tpu-name me-w2)" = 2 &&
	for k in 1 2; do
		p=$(grep -l "Managed dev TPU mode" logs/*prompt* | xargs grep -l -- "--tpu-name me-w$k") &&
		test -n "$p" &&
		test_grep ! "me-w$((3 - k))" $p || return 1
	done &&
	no_allocation_left
'

test_expect_success 'a worker'\''s allocation dies: the loop re-acquires it after that iteration' '
	new_repo && rm -rf "$TRASH/died" "$TRASH/die-me-w2" &&
	FAKE_ALLOC_DIE_FILE="$TRASH/die-{tpu_name}" run_loop die-once --iterations 2 --workers 2 \
		--hold-dev-tpu --dev-tpu-name me >out 2>err &&
	test "$(calls_with allocate)" = 3 &&
	test "$(calls_with allocate me-w2)" = 2 &&
	test_grep "managed dev TPU allocation dev-tpu-me-w2 (cluster us-central1) is gone" err &&
	test_grep "attempting managed dev TPU re-acquire (worker 2'\''s held dev TPU is not active)" err &&
	test_grep "managed dev TPU re-acquire is active: dev-tpu-me-w2 (cluster us-central1)$" out &&
	test "$(jq -c "select(.event == \"dev_tpu\" and .action == \"lost\")" logs/loop.jsonl | wc -l)" = 1 &&
	test "$(jq -c "select(.event == \"dev_tpu\" and .action == \"reacquired\")" logs/loop.jsonl | wc -l)" = 1 &&
	test "$(dev_tpu_events lost me-w2)" = 1 &&
	test "$(dev_tpu_events reacquired me-w2)" = 1 &&
	test "$(dev_tpu_events released me-w1)" = 1 &&
	test "$(dev_tpu_events released me-w2)" = 1 &&
	no_allocation_left
'

# Start a 3-worker run whose agent hangs, then send signal $1: exit $2, every hold released.
interrupt_holds() {
	new_repo &&
	rm -f "$TRASH/agent.pid" &&
	gdnctl_bg out loop --workdir "$TRASH/repo" --agent command \
		--agent-cmd "$AG/slow {prompt_file}" --prompt-file "$TRASH/prompt.md" \
		--log-dir "$TRASH/logs" --iterations 2 --workers 3 --hold-dev-tpu \
		--dev-tpu-name me &&
	wait_for_file "$TRASH/agent.pid" 20 &&
	apid=$(cat "$TRASH/agent.pid") &&
	test "$(calls_with allocate)" = 3 &&
	kill -"$1" $gpid &&
	{ wait $gpid; rc=$?; } ;
	test "$rc" = "$2" &&
	wait_gone "$apid" 5 &&
	no_allocation_left &&
	for k in 1 2 3; do
		test_grep "releasing managed dev TPU allocation: dev-tpu-me-w$k (cluster us-central1)$" out &&
		test "$(dev_tpu_events released me-w$k)" = 1 || return 1
	done &&
	test -z "$(git -C "$TRASH/repo" status --porcelain)"
}

test_expect_success 'Ctrl-C: every hold released, exit 130' '
	interrupt_holds INT 130
'

test_expect_success 'SIGTERM: every hold released, exit 143' '
	interrupt_holds TERM 143
'

test_expect_success 'the second allocation fails (required): the first is released, exit 4' '
	new_repo &&
	FAKE_ALLOC_FAIL_NAMES=me-w2 test_expect_code 4 run_loop commit-one --iterations 1 \
		--workers 2 --hold-dev-tpu --dev-tpu-name me >out 2>err &&
	test "$(calls_with allocate)" = 2 &&
	test_grep "error: managed dev TPU allocation failed" err &&
	test_grep "releasing managed dev TPU allocation: dev-tpu-me-w1 (cluster us-central1)$" out &&
	no_allocation_left &&
	test_grep ! "=== iteration" out
'

test_expect_success 'best-effort: a worker whose allocation failed goes on without it' '
	new_repo &&
	FAKE_ALLOC_FAIL_NAMES=me-w1 run_loop commit-one --iterations 1 --workers 2 \
		--hold-dev-tpu --dev-tpu-name me --hold-dev-tpu-policy best-effort >out 2>err &&
	test_grep "WARNING: managed dev TPU allocation failed; continuing without held dev TPU." err &&
	test_grep "releasing managed dev TPU allocation: dev-tpu-me-w2 (cluster us-central1)$" out &&
	test_grep ! "releasing managed dev TPU allocation: dev-tpu-me-w1" out &&
	test "$(dev_tpu_events failed me-w1)" = 1 &&
	test "$(dev_tpu_events released me-w2)" = 1 &&
	no_allocation_left
'

test_done
