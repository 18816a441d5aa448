#!/usr/bin/env bash
# The slurm backend against a real single-node Slurm (munged, slurmctld,
# slurmd; no accounting, so final states come from scontrol): jobs that
# succeed, fail with exit 3, are cancelled by `gdnctl stop`, by run's
# --timeout and by SIGINT, and one that exceeds its time limit (submitted
# first, checked last: Slurm notices after about 80 s).
# ctest: cost 95
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-slurm.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SBATCH GDNCTL_SQUEUE GDNCTL_SACCT \
	GDNCTL_SCONTROL GDNCTL_SCANCEL
slurm_start

mkdir -p "$XDG_CONFIG_HOME/gdnctl" jobs
cat >"$XDG_CONFIG_HOME/gdnctl/config.yaml" <<EOF
backends:
  hpc:
    type: slurm
    jobdir: $TRASH/jobs
    poll: 500ms
  limited:
    type: slurm
    jobdir: $TRASH/jobs
    poll: 1s
    time_limit: "1"
    partition: debug
    job_name: limited job
EOF

gdnctl_bg() {
	# shellcheck disable=SC2086
	${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@" &
}

job_state() {
	scontrol show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'
}

test_expect_success 'submit the job that will run out of time (checked last)' '
	gdnctl run -b limited --no-wait -- sleep 300 >out &&
	tail -n1 out >limited.id &&
	test_grep "^[0-9][0-9]*$" limited.id &&
	scontrol show job "$(cat limited.id)" >show &&
	test_grep "JobName=limited job" show &&
	test_grep "TimeLimit=00:01:00" show
'

test_expect_success 'run: a job that succeeds, its output streamed' '
	gdnctl run -b hpc -- sh -c "echo hello from \$SLURM_JOB_ID; sleep 1; echo bye" >out 2>&1 &&
	test_grep "^\[gdnctl\] \$ sbatch --parsable $TRASH/jobs/gdnctl-......\.sh$" out &&
	test_grep "^\[gdnctl\] submitted batch job [0-9]* to hpc$" out &&
	id=$(sed -n "s/^\[gdnctl\] submitted batch job \([0-9]*\) to hpc$/\1/p" out) &&
	test_grep "^hello from $id$" out &&
	test_grep "^bye$" out &&
	test_grep "^\[gdnctl\] \$ squeue -h -j $id -o %T$" out &&
	test_grep "^\[gdnctl\] \$ sacct -j $id -X -n -P -o JobID,State,ExitCode$" out &&
	test_grep "^\[gdnctl\] \$ scontrol show job $id$" out &&
	test_grep "^\[gdnctl\] job $id on hpc finished: COMPLETED$" out &&
	test_line_count = 0 <(ls jobs/gdnctl-*.sh 2>/dev/null)
'

test_expect_success 'run: a job that fails with exit 3 makes gdnctl exit 3' '
	test_expect_code 3 gdnctl run -b hpc -- sh -c "echo failing; exit 3" >out 2>&1 &&
	test_grep "^failing$" out &&
	test_grep "finished: FAILED (exit 3, reason: NonZeroExitCode)$" out
'

test_expect_success 'run: argv words and env values reach the job exactly, through the script' '
	gdnctl run -b hpc -e "V=\$(touch pwned) it'"'"'s" -- \
		printf "<%s>\n" "; rm -rf x" "\$(touch pwned)" "\`id\`" "a b" "\$V" >out &&
	test_grep "^<; rm -rf x>$" out &&
	test_grep "^<\$(touch pwned)>$" out &&
	test_grep "^<\`id\`>$" out &&
	test_grep "^<a b>$" out &&
	test_grep "^<\$V>$" out &&
	gdnctl run -b hpc -e "V=\$(touch pwned) it'"'"'s" --shell "echo \"[\$V]\"" >out &&
	test_grep "^\[\$(touch pwned) it'"'"'s\]$" out &&
	test ! -e pwned && test ! -e jobs/pwned
'

test_expect_success 'run --dry-run shows the batch script, secrets masked, and submits nothing' '
	before=$(squeue -h | wc -l) &&
	gdnctl run -b limited --dry-run --name "my run" -e HF_TOKEN=hf_zzz -- python3 train.py --lr 0.1 >out &&
	test_grep "^\[gdnctl\] \$ sbatch --parsable $TRASH/jobs/gdnctl-XXXXXX.sh$" out &&
	test_grep "^\[gdnctl\] | #SBATCH --job-name=\"my run\"$" out &&
	test_grep "^\[gdnctl\] | #SBATCH --output=$TRASH/jobs/slurm-%j.out$" out &&
	test_grep "^\[gdnctl\] | #SBATCH --partition=debug$" out &&
	test_grep "^\[gdnctl\] | #SBATCH --time=1$" out &&
	test_grep "^\[gdnctl\] | export HF_TOKEN=\*\*\*$" out &&
	test_grep "^\[gdnctl\] | exec python3 train.py --lr 0.1$" out &&
	test_grep ! hf_zzz out &&
	test "$(squeue -h | wc -l)" = "$before" &&
	gdnctl stop -b hpc --dry-run 1 >out &&
	test_grep "^\[gdnctl\] \$ scancel 1$" out
'

test_expect_success 'no-wait, wait --timeout (124), stop, then wait says CANCELLED' '
	id=$(gdnctl run -b hpc --no-wait -- sleep 60 | tail -n1) &&
	test_expect_code 124 gdnctl wait -b hpc --timeout 2s "$id" >out 2>err &&
	test_grep "^\[gdnctl\] waiting for job $id on hpc (\(PENDING\|RUNNING\)) for 0s$" err &&
	test_grep "timed out after 2s waiting for job $id on hpc (\(PENDING\|RUNNING\))" err &&
	gdnctl stop -b hpc "$id" >out 2>&1 &&
	test_grep "^\[gdnctl\] \$ scancel $id$" out &&
	test_grep "^\[gdnctl\] cancelled job $id on hpc$" out &&
	test_expect_code 1 gdnctl wait -b hpc "$id" >out 2>&1 &&
	test_grep "^\[gdnctl\] job $id finished: CANCELLED$" out &&
	gdnctl stop -b hpc "$id" >out 2>&1 &&
	test_grep "had already finished: CANCELLED" out
'

test_expect_success 'run --timeout cancels the job (exit 124)' '
	test_expect_code 124 gdnctl run -b hpc --timeout 3s -- sleep 60 >out 2>&1 &&
	id=$(sed -n "s/^\[gdnctl\] submitted batch job \([0-9]*\) to hpc$/\1/p" out) &&
	test_grep "^\[gdnctl\] \$ scancel $id$" out &&
	test_grep "finished: TIMEOUT (cancelled after the timeout of 3s)" out &&
	for i in $(seq 50); do test "$(job_state "$id")" = CANCELLED && break; sleep 0.2; done &&
	test "$(job_state "$id")" = CANCELLED
'

test_expect_success 'SIGINT during a slurm run cancels the job, exit 130' '
	gdnctl_bg run -b hpc -- sh -c "echo started; sleep 60" >out 2>&1
	pid=$!
	for i in $(seq 100); do grep -q "^started$" out && break; sleep 0.1; done &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } &&
	test $rc = 130 &&
	id=$(sed -n "s/^\[gdnctl\] submitted batch job \([0-9]*\) to hpc$/\1/p" out) &&
	test_grep "^\[gdnctl\] \$ scancel $id$" out &&
	for i in $(seq 50); do test "$(job_state "$id")" = CANCELLED && break; sleep 0.2; done &&
	test "$(job_state "$id")" = CANCELLED
'

test_expect_success 'logs: the output file, or its last lines' '
	id=$(gdnctl run -b hpc --no-wait -- sh -c "seq 1 5" | tail -n1) &&
	gdnctl wait -b hpc --tail 2 "$id" >out &&
	test_grep "^4$" out && test_grep "^5$" out && test_grep ! "^3$" out &&
	gdnctl logs -b hpc "$id" >out 2>&1 &&
	test_grep "^\[gdnctl\] output of job $id: $TRASH/jobs/slurm-$id.out$" out &&
	test_grep "^1$" out && test_grep "^5$" out &&
	gdnctl logs -b hpc --tail 1 "$id" >out &&
	test_grep ! "^4$" out && test_grep "^5$" out
'

test_expect_success 'job ids: malformed ones are refused, unknown ones are backend errors' '
	for bad in "; rm -rf x" "\$(touch pwned)" "\`id\`" "--help" "a b" "12 13"; do
		test_expect_code 2 gdnctl wait -b hpc -- "$bad" >out 2>err &&
		test_grep "invalid Slurm job id" err &&
		test_grep ! "\[gdnctl\] \\$" out || exit 1
	done &&
	test ! -e pwned &&
	test_expect_code 4 gdnctl wait -b hpc 999999 >out 2>err &&
	test_grep "job 999999 is not known to Slurm on '"'"'hpc'"'"'" err
'

test_expect_success 'the job past its time limit ends TIMEOUT: wait exits 1 and says so' '
	id=$(cat limited.id) &&
	test_expect_code 1 gdnctl wait -b limited --timeout 170s "$id" >out 2>err &&
	test_grep "^\[gdnctl\] job $id finished: TIMEOUT (reason: TimeLimit)$" err &&
	test_expect_code 1 gdnctl wait -b limited --json "$id" >out 2>/dev/null &&
	python3 -c "
import json
d = json.load(open(\"out\"))
assert d[\"state\"] == \"failed\" and d[\"native\"] == \"TIMEOUT\" and d[\"final\"], d
"
'

test_done
