#!/usr/bin/env bash
# The iris backend over the Iris CLI double (tests/e2e/bin/iris, both CLI
# generations): the submission argv from the configuration, the job id
# (stdout line, the oldest CLI's stderr line, none), the outcome of each
# fault (FAILED is the command's, WORKER_FAILED / UNSCHEDULABLE / a job
# never leaving PENDING are infrastructure), a lost controller, cancel vs
# stop, the generation probe, the Marin checkout's Iris default, the
# profile's GCS URI, and doctor.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
marin_setup

# The argv of recorded call N from its word M on (jq array slice).
call_words() {
	sed -n "${1}p" "$GDNCTL_FAKE_LOG" | jq -r ".[$2:][]"
}

test_expect_success 'setup: a repository whose gdnctl.yaml names two iris backends' '
	test_create_repo repo &&
	cat >repo/gdnctl.yaml <<-EOF
	backends:
	  iris:
	    poll: 20ms
	    tpu: v6e-4
	    extras: [tpu]
	    cpu: "8"
	    memory: 64GB
	    disk: 60GB
	    max_retries: 5
	    region: [europe-west4]
	    env: [K=V W]
	  old:
	    type: iris
	    poll: 20ms
	    tpu: none
	    enable_extra_resources: false
	EOF
	cd repo
'
cd repo || exit 1

test_expect_success 'run: the submission argv; the output; exit 0; probed once' '
	IRIS_FAKE_EXEC=1 gdnctl run --backend iris -e "FOO=a b" -- sh -c "echo out \$FOO; echo k=\$K" \
		>out 2>err &&
	test_grep "^out a b$" out &&
	test_grep "^k=V W$" out &&
	expect_call 1 iris job --help &&
	call_words 2 0 | head -5 >words &&
	printf "%s\n" iris --cluster=marin job run --no-wait >expect &&
	test_cmp expect words &&
	test "$(call_words 2 5 | head -1)" = --job-name &&
	call_words 2 6 | head -1 | grep -E "^gdnctl-[0-9]{8}-[0-9]{6}-[0-9a-f]+$" &&
	call_words 2 7 >words &&
	printf "%s\n" --tpu v6e-4 --enable-extra-resources --cpu 8 --memory 64GB --disk 60GB \
		--max-retries=5 --region europe-west4 --extra tpu -e K "V W" -e FOO "a b" \
		-- sh -c "echo out \$FOO; echo k=\$K" >expect &&
	test_cmp expect words &&
	test "$(calls_with iris job --help)" = 1 &&
	test_grep "submitted job /tester/gdnctl-" err
'

test_expect_success 'run --name: a lower-case job name' '
	calls_reset &&
	gdnctl run --backend iris --name My.Run -- true >out 2>&1 &&
	call_words 2 6 | head -1 | grep -E "^my\.run-[0-9]{8}-[0-9]{6}-[0-9a-f]+$"
'

test_expect_success 'FAILED is the command failure: its exit code' '
	IRIS_FAKE_EXEC=1 test_expect_code 3 gdnctl run --backend iris -- sh -c "exit 3" >out 2>err &&
	test_grep "finished: FAILED (exit 3)" err
'

test_expect_success 'WORKER_FAILED (preemption budget spent) is infrastructure' '
	IRIS_FAKE_FAULT=worker_failed test_expect_code 1 gdnctl run --backend iris -- true >out 2>err &&
	test_grep "finished: WORKER_FAILED (infrastructure outcome, not the command.s failure)" err &&
	IRIS_FAKE_FAULT=worker_failed gdnctl run --json --backend iris -- true >out 2>/dev/null;
	test "$(jq -r .state out)" = stopped &&
	test "$(jq -r .native out)" = WORKER_FAILED
'

test_expect_success 'UNSCHEDULABLE is infrastructure; KILLED too (cancelled from outside)' '
	IRIS_FAKE_FAULT=unschedulable test_expect_code 1 gdnctl run --backend iris -- true \
		>out 2>err &&
	test_grep "finished: UNSCHEDULABLE (infrastructure outcome" err
'

test_expect_success 'preempted, requeued, then succeeded: a pass, the preemption said' '
	IRIS_FAKE_FAULT=preempt gdnctl run --backend iris -- true >out 2>err &&
	test_grep "was preempted (1 so far); Iris requeued it" err &&
	IRIS_FAKE_FAULT=preempt2 gdnctl run --backend iris -- true >out 2>err &&
	test_grep "was preempted (2 so far)" err
'

test_expect_success 'a job that never leaves PENDING: cancelled at the deadline, infrastructure' '
	calls_reset &&
	IRIS_FAKE_FAULT=pending test_expect_code 1 gdnctl run --backend iris --timeout 1s -- true \
		>out 2>err &&
	test_grep "finished: PENDING (never left PENDING in 1s: infrastructure outcome" err &&
	test "$(calls_with iris job cancel)" = 1
'

test_expect_success 'the oldest CLI: the id from the stderr log line' '
	IRIS_FAKE_FAULT=stderr_id gdnctl run --backend iris -- true >out 2>err &&
	test_grep "submitted job /tester/gdnctl-" err
'

test_expect_success 'a submission that prints no id: an error quoting its output (exit 4)' '
	IRIS_FAKE_FAULT=no_id test_expect_code 4 gdnctl run --backend iris -- true >out 2>err &&
	test_grep "the submission printed no job id.*: I[0-9]* [0-9:]* 140001 iris.cli.job Establishing tunnel" err
'

test_expect_success 'a lost controller connection: retried, then a backend error (exit 4)' '
	gdnctl run --backend iris --no-wait -- true >id &&
	IRIS_FAKE_LOST=1 test_expect_code 4 gdnctl wait --backend iris "$(cat id)" >out 2>err &&
	test_grep "Could not connect to controller" err &&
	test_grep "retrying" err
'

test_expect_success 'run --no-wait, then status by wait, logs, cancel (newer CLI)' '
	calls_reset &&
	gdnctl run --backend iris --no-wait -- true >id &&
	grep -E "^/tester/gdnctl-" id &&
	gdnctl wait --backend iris "$(cat id)" >out 2>&1 &&
	test "$(calls_with iris job describe "$(cat id)")" -ge 1 &&
	gdnctl logs --backend iris --tail 1 "$(cat id)" >out &&
	test_grep "^fake job output line 2$" out &&
	test_grep ! "line 1" out &&
	test_grep ! "task=" out &&
	gdnctl run --backend iris --no-wait -- true >id2 &&
	IRIS_FAKE_FAULT=hold gdnctl run --backend iris --no-wait -- true >id3 &&
	gdnctl stop --backend iris "$(cat id3)" &&
	test "$(calls_with iris job cancel "$(cat id3)")" = 1 &&
	test_expect_code 1 gdnctl wait --backend iris "$(cat id3)" >out 2>&1 &&
	test_grep "KILLED" out &&
	test_expect_code 2 gdnctl wait --backend iris "bad id" 2>err &&
	test_grep "invalid Iris job id" err
'

test_expect_success 'the older CLI: job list --json for the state, job stop to cancel' '
	calls_reset &&
	export IRIS_FAKE_GEN=old &&
	IRIS_FAKE_EXEC=1 test_expect_code 5 gdnctl run --backend old -- sh -c "exit 5" >out 2>err &&
	test "$(calls_with iris job list --json)" -ge 1 &&
	test "$(calls_with iris job describe)" = 0 &&
	call_words 2 5 >words &&
	test "$(sed -n 3p words)" = -- &&
	IRIS_FAKE_FAULT=hold gdnctl run --backend old --no-wait -- true >id &&
	gdnctl stop --backend old "$(cat id)" &&
	test "$(calls_with iris job stop "$(cat id)")" = 1 &&
	test "$(calls_with iris job cancel)" = 0 &&
	IRIS_FAKE_FAULT=worker_failed test_expect_code 1 gdnctl run --backend old -- true 2>err &&
	test_grep "WORKER_FAILED (infrastructure" err &&
	unset IRIS_FAKE_GEN
'

test_expect_success 'an unknown CLI: a clear error naming what was missing' '
	IRIS_FAKE_GEN=bogus test_expect_code 4 gdnctl run --backend iris -- true >out 2>err &&
	test_grep "lists neither .job cancel. with .job describe. nor .job stop. with .job list." err
'

test_expect_success 'the CLI refuses --tpu without --enable-extra-resources: its Error line' '
	test_expect_code 4 gdnctl -c backends.old.tpu=v5p-8 run --backend old -- true >out 2>err &&
	test_grep "failed (exit 2): Error: --tpu requires --enable-extra-resources." err
'

test_expect_success 'Marin checkout with lib/iris and no ray_run.py: test and profile on Iris' '
	test_create_repo m &&
	mkdir -p m/lib/levanter m/lib/iris &&
	(cd m && gdnctl test --dry-run >../out 2>&1) &&
	test_grep "backend iris: this Marin checkout has lib/iris and no lib/marin/src/marin/run/ray_run.py" out &&
	test_grep "iris --cluster=marin job run --no-wait --job-name gdnctl-" out &&
	test_grep -F -- "--tpu v5p-8 --enable-extra-resources -e EQX_ON_ERROR nan -e WANDB_MODE offline -- bash -lc" out &&
	(cd m && gdnctl test --dry-run --backend ray >../out 2>&1) &&
	test_grep "ray_run.py" out &&
	test_grep ! "backend iris" out &&
	marin_checkout m &&
	(cd m && gdnctl test --dry-run >../out 2>&1) &&
	test_grep ! "backend iris" out &&
	test_grep "ray_run.py" out
'

test_expect_success 'the same remote test command string on Iris as on Ray' '
	test_create_repo m2 &&
	mkdir -p m2/lib/levanter m2/lib/iris &&
	(cd m2 && gdnctl test --dry-run >../iris.out 2>&1) &&
	marin_checkout m2 &&
	(cd m2 && gdnctl test --dry-run >../ray.out 2>&1) &&
	sed -n "s/.* -- bash -lc //p" iris.out >iris.cmd &&
	sed -n "s/.* -- bash -lc //p" ray.out >ray.cmd &&
	test -s ray.cmd &&
	test_cmp ray.cmd iris.cmd
'

test_expect_success 'profile on Iris names where the profile went (the gs:// URI)' '
	URI=gs://marin-us-central2/checkpoints/run/profiler/plugins/profile/2026_04_20_12_00_00 &&
	IRIS_FAKE_EXEC=1 gdnctl -c project.profile_command="echo Profile written to $URI/host.xplane.pb" \
		profile --backend iris >out 2>err &&
	test_grep "^\[gdnctl\] profile: $URI$" out
'

test_expect_success 'doctor names the Iris CLI, its generation and its cluster' '
	gdnctl doctor --backend iris >out 2>&1 &&
	test_grep "iris" out &&
	test_grep "job cancel/describe (newer CLI)" out &&
	test_grep "cluster marin" out &&
	IRIS_FAKE_GEN=old gdnctl doctor --backend old >out 2>&1 &&
	test_grep "job stop/list --json (older CLI)" out &&
	IRIS_FAKE_GEN=bogus test_expect_code 1 gdnctl doctor --backend iris >out 2>&1 &&
	test_grep "lists neither" out
'

test_done
