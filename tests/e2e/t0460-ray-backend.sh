#!/usr/bin/env bash
# The ray backend, through gdnctl test/profile and run/wait/logs/stop:
# Marin's wrappers (the default) and the plain Ray job CLI, against the uv
# and ray doubles; statuses (STOPPED is not success), exit codes, timeouts,
# quoting of commands and environment values end to end; and the project's
# own test/profile commands on the local backend.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
marin_setup

JOB=ray-run-tester-bash-20250101-000000

# A command whose output shows every quoting mistake.
QUOTER='printf "<%s>" "$FOO" "$(echo sub)" '"'"'it'"'"'"'"'"'"'"'"'s'"'"' `echo tick` "\$HOME"; echo'

test_expect_success 'setup: a repository whose gdnctl.yaml names the backends' '
	test_create_repo repo &&
	cat >repo/gdnctl.yaml <<-EOF
	backends:
	  plain:
	    type: ray
	    cli: ray
	    address: http://127.0.0.1:8265
	    poll: 50ms
	  marin2:
	    type: ray
	    cluster: us-east5-a
	    tpu: v5p-8
	EOF
	cd repo
'
cd repo || exit 1
marin_checkout

test_expect_success 'Marin: test with project.test_command runs it with bash -lc, quoted' '
	FAKE_EXEC=1 gdnctl -c project.test_command="$QUOTER" test --backend ray -e "FOO=a b\$x\`y\`\"q" >out 2>&1 &&
	test_grep -F "<a b\$x\`y\`\"q><sub><it'"'"'s><tick><\$HOME>" out &&
	expect_call 1 uv run lib/marin/src/marin/run/ray_run.py --cluster us-central1 --tpu auto \
		-e "FOO=a b\$x\`y\`\"q" -- bash -lc "$QUOTER" &&
	test_grep ! "remote TPU test setup" out
'

test_expect_success 'Marin: a failing job is exit 1 and says so; the configured cluster and TPU' '
	calls_reset &&
	FAKE_EXEC=1 test_expect_code 1 gdnctl -c project.test_command="exit 3" test --backend marin2 \
		>out 2>&1 &&
	test_grep "job $JOB on marin2 finished: FAILED" out &&
	expect_call 1 uv run lib/marin/src/marin/run/ray_run.py --cluster us-east5-a --tpu v5p-8 \
		-- bash -lc "exit 3"
'

test_expect_success 'Marin: --no-wait prints the submission id; wait reads the final status' '
	calls_reset &&
	gdnctl test --no-wait >out &&
	test_grep "^\[gdnctl\] submission_id=$JOB$" out &&
	gdnctl wait --backend ray $JOB >out &&
	expect_call 2 uv run scripts/ray/cluster.py --cluster us-central1 wait-job $JOB --poll 5.0 \
		--tail 200 &&
	FAKE_JOB_STATUS=FAILED test_expect_code 1 gdnctl wait --backend ray $JOB 2>out &&
	test_grep "FAILED" out
'

test_expect_success 'Marin: a STOPPED job is not a success; stop and status' '
	calls_reset &&
	gdnctl stop --backend ray $JOB >out &&
	expect_call 1 uv run scripts/ray/cluster.py --cluster us-central1 stop-job $JOB &&
	test_expect_code 1 gdnctl wait --backend ray $JOB 2>out &&
	test_grep "STOPPED" out
'

test_expect_success 'Marin: wait --timeout (wait-job times out) is 124; logs --tail' '
	FAKE_WAIT_TIMEOUT=1 test_expect_code 124 gdnctl wait --backend ray --timeout 2s $JOB >out 2>err &&
	test_grep "timed out" err &&
	calls_reset &&
	gdnctl logs --backend ray --tail 1 $JOB >out &&
	expect_call 1 uv run scripts/ray/cluster.py --cluster us-central1 job-logs -n 1 $JOB &&
	test_grep "^fake job output line 2$" out &&
	test_grep ! "line 1" out
'

test_expect_success 'Marin: run --name picks the submission id' '
	calls_reset &&
	gdnctl run --backend ray --name gdn -- true >out &&
	sed -n 1p "$GDNCTL_FAKE_LOG" | jq -r ".[8]" >id &&
	test_grep -E "^gdn-[0-9]{8}-[0-9]{6}-[0-9a-f]{6}$" id &&
	test "$(sed -n 1p "$GDNCTL_FAKE_LOG" | jq -r ".[7]")" = --submission-id
'

test_expect_success 'plain Ray CLI: submit, poll, follow the logs; quoting survives list2cmdline and sh' '
	calls_reset &&
	FAKE_EXEC=1 FAKE_PENDING_POLLS=1 gdnctl -c project.test_command="$QUOTER" \
		test --backend plain -e "FOO=a b\$x\`y\`\"q" >out 2>&1 &&
	test_grep -F "<a b\$x\`y\`\"q><sub><it'"'"'s><tick><\$HOME>" out &&
	test "$(sed -n 1p "$GDNCTL_FAKE_LOG" | jq -r ".[1,2]" | tr "\n" " ")" = "job submit " &&
	test_grep -F -- "--log-style record --log-color false" out &&
	test_grep "waiting for job raysubmit_4LamXRuQpYdSMg7J on plain (PENDING)" out &&
	test "$(grep -c "^\[gdnctl\] \$ .*ray job status" out)" = 1
'

test_expect_success 'plain Ray CLI: a failed job is exit 1; submit --no-wait and wait' '
	calls_reset &&
	FAKE_EXEC=1 test_expect_code 1 gdnctl -c project.test_command="exit 3" test --backend plain \
		>out 2>&1 &&
	test_grep "finished: FAILED" out &&
	FAKE_RAY_ID=raysubmit_second gdnctl test --backend plain --no-wait >out &&
	test_grep "^\[gdnctl\] submission_id=raysubmit_second$" out &&
	FAKE_RUNNING_POLLS=2 gdnctl wait --backend plain --show-logs raysubmit_second >out &&
	test_grep "^fake job output line 2$" out
'

test_expect_success 'plain Ray CLI: stop, then wait says STOPPED (exit 1); wait --timeout is 124' '
	FAKE_RAY_ID=raysubmit_third gdnctl test --backend plain --no-wait >out &&
	gdnctl stop --backend plain raysubmit_third >out &&
	test_expect_code 1 gdnctl wait --backend plain raysubmit_third 2>out &&
	test_grep STOPPED out &&
	FAKE_RAY_ID=raysubmit_fourth gdnctl test --backend plain --no-wait >out &&
	FAKE_RUNNING_POLLS=100000 test_expect_code 124 gdnctl wait --backend plain --timeout 1s \
		raysubmit_fourth >out 2>err &&
	test_grep "timed out" err
'

test_expect_success 'plain Ray CLI: an unknown job' '
	test_must_fail gdnctl wait --backend plain raysubmit_nope >out 2>err &&
	test_grep "raysubmit_nope" err
'

test_expect_success 'the project'"'"'s test command on the local backend' '
	gdnctl -c project.test_command="echo \"tests: \$FOO\"" test --backend local -e FOO=bar \
		--pytest-args "-k x" >out 2>&1 &&
	test_grep "^tests: bar -k x$" out &&
	test_must_fail =1 gdnctl -c project.test_command="exit 1" test --backend local >out 2>&1
'

test_expect_success 'a project command implies the local backend unless one is named' '
	calls_reset &&
	gdnctl -c project.test_command="echo here: \$PWD" test >out 2>&1 &&
	test_grep "^here: $TRASH/repo$" out &&
	gdnctl -c project.profile_command="echo profiled" profile >out 2>&1 &&
	test_grep "^profiled$" out &&
	test "$(calls_count)" = 0 &&
	GDNCTL_PROJECT_BACKEND=ray gdnctl -c project.test_command=true test --no-wait >out &&
	gdnctl -c project.backend=ray -c project.profile_command=true profile --no-wait >out &&
	test "$(calls_count)" = 2 &&
	gdnctl test --dry-run >out &&
	test_grep "ray_run.py" out
'

test_expect_success 'outside a Marin checkout the built-in commands are refused (exit 3)' '
	calls_reset &&
	test_create_repo "$TRASH/plainrepo" &&
	(cd "$TRASH/plainrepo" && test_must_fail =3 gdnctl test >"$TRASH/out" 2>"$TRASH/err") &&
	echo "[gdnctl] error: project.test_command is not set and this is not a Marin checkout: set it in gdnctl.yaml" >expect &&
	test_cmp expect "$TRASH/err" &&
	(cd "$TRASH/plainrepo" && test_must_fail =3 gdnctl test -b local --dry-run 2>"$TRASH/err") &&
	test_cmp expect "$TRASH/err" &&
	(cd "$TRASH/plainrepo" && test_must_fail =3 gdnctl profile -b ray 2>"$TRASH/err") &&
	test_grep "^\[gdnctl\] error: project.profile_command is not set and this is not a Marin checkout: set it in gdnctl.yaml$" "$TRASH/err" &&
	test "$(calls_count)" = 0 &&
	(cd "$TRASH/plainrepo" && gdnctl -c project.test_command="echo fine" test >"$TRASH/out") &&
	test_grep "^fine$" "$TRASH/out"
'

test_expect_success 'the project'"'"'s profile command: --profile-env only, Marin options refused' '
	gdnctl -c project.profile_command="echo \"prof \$A \${GDN_PROFILE_SIZE:-none}\"" \
		profile --backend local --profile-env A=1 >out 2>&1 &&
	test_grep "^prof 1 none$" out &&
	test_must_fail =2 gdnctl -c project.profile_command=true profile --backend local --size 300m \
		2>err &&
	test_grep "size applies to the built-in Marin profile" err &&
	test_must_fail =2 gdnctl -c project.profile_command=true profile --backend local \
		--profile-env 1BAD=x 2>err &&
	test_grep "invalid --profile-env key '"'"'1BAD'"'"'" err
'

test_expect_success 'backend-specific flags are refused for other backends' '
	test_must_fail =2 gdnctl test --backend local --tpu-name x 2>err &&
	test_grep -- "--tpu-name applies to dev-tpu backends, not '"'"'local'"'"'" err &&
	test_must_fail =2 gdnctl test --backend plain --no-sync 2>err &&
	test_must_fail =2 gdnctl test --backend nosuch 2>err &&
	test_grep "unknown backend" err &&
	test_must_fail =2 gdnctl -c project.test_command=true test --tests kernels 2>err
'

test_expect_success '--dry-run prints the commands and runs nothing' '
	calls_reset &&
	gdnctl test --dry-run >out &&
	gdnctl profile --dry-run --profile-env HF_TOKEN=hf_secret_1 >>out &&
	gdnctl test --backend plain --dry-run -e WANDB_API_KEY=wandb_secret_2 >>out &&
	gdnctl profile --backend dev-tpu --tpu-name me --dry-run >>out &&
	test "$(calls_count)" = 0 &&
	test_grep ! "hf_secret_1\|wandb_secret_2" out &&
	test_grep -F -- "-e HF_TOKEN=***" out &&
	test_grep -F "MARIN_PREFIX=gs://marin-us-central1" out &&
	test "$(grep -c "^\[gdnctl\] \\$ " out)" = 4
'

test_done
