#!/usr/bin/env bash
# The slurm backend against scripted Slurm clients (programs.* / GDNCTL_*
# point at fakes that log their argv and print canned replies): what a
# real cluster with accounting, several clusters or a broken controller
# answers, which the private test cluster of t0420 cannot show.
. "$(dirname "$0")/lib.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS
FAKE=$TRASH/fake
mkdir -p "$FAKE" bin "$XDG_CONFIG_HOME/gdnctl" "wd dir"

# A fake client: logs "NAME ARGS..." and prints $FAKE/NAME.out (or, when
# $FAKE/NAME.seq exists, its first line, consumed), exiting $FAKE/NAME.rc.
for p in sbatch squeue sacct scontrol scancel; do
	cat >"bin/$p" <<EOF
#!/bin/sh
echo "$p \$*" >>"$FAKE/log"
if [ "$p" = sbatch ]; then
	last=; for a; do last=\$a; done
	cp "\$last" "$FAKE/script.sh"; stat -c %a "\$last" >"$FAKE/script.mode"
fi
if [ -s "$FAKE/$p.seq" ]; then
	head -n1 "$FAKE/$p.seq"; sed -i 1d "$FAKE/$p.seq"
elif [ -f "$FAKE/$p.out" ]; then
	cat "$FAKE/$p.out"
fi
exit \$(cat "$FAKE/$p.rc" 2>/dev/null || echo 0)
EOF
	chmod +x "bin/$p"
done
export GDNCTL_SBATCH=$TRASH/bin/sbatch GDNCTL_SQUEUE=$TRASH/bin/squeue \
	GDNCTL_SACCT=$TRASH/bin/sacct GDNCTL_SCONTROL=$TRASH/bin/scontrol \
	GDNCTL_SCANCEL=$TRASH/bin/scancel
cat >"$XDG_CONFIG_HOME/gdnctl/config.yaml" <<EOF
backends:
  hpc:
    type: slurm
    jobdir: $TRASH/jobs
    workdir: $TRASH/wd dir
    poll: 100ms
    partition: gpu
    sbatch_options: [--gres=gpu:1, "--comment=two words"]
EOF

reset_fakes() {
	rm -f "$FAKE"/*
}

test_expect_success 'sbatch "ID;CLUSTER": the job id is ID@CLUSTER, later calls pass --clusters' '
	reset_fakes &&
	echo "12;alpha" >"$FAKE/sbatch.out" &&
	gdnctl run -b hpc --no-wait -- echo hi >out &&
	test "$(tail -n1 out)" = 12@alpha &&
	echo "12|CANCELLED by 0|0:15" >"$FAKE/sacct.out" &&
	test_expect_code 1 gdnctl wait -b hpc 12@alpha 2>out &&
	test_grep "^\[gdnctl\] job 12@alpha finished: CANCELLED (cancelled by uid 0)$" out &&
	test_grep "^squeue -h -j 12 -o %T --clusters=alpha$" "$FAKE/log" &&
	test_grep "^sacct -j 12 -X -n -P -o JobID,State,ExitCode --clusters=alpha$" "$FAKE/log" &&
	test_grep ! "^scontrol" "$FAKE/log"
'

test_expect_success 'the batch script: directives, workdir, exports, exec; 0600 and removed' '
	reset_fakes &&
	echo 13 >"$FAKE/sbatch.out" &&
	gdnctl run -b hpc --no-wait --name "nightly run" -e "A=it'"'"'s" -- python3 "my script.py" >out &&
	cat >expect <<-EOF &&
	#!/bin/bash
	#SBATCH --job-name="nightly run"
	#SBATCH --output=$TRASH/jobs/slurm-%j.out
	#SBATCH --partition=gpu
	#SBATCH --gres=gpu:1
	#SBATCH --comment=two words
	# written by gdnctl for backend hpc
	cd -- '"'"'$TRASH/wd dir'"'"' || exit 1
	export A='"'"'it'"'"'\\'"'"''"'"'s'"'"'
	exec python3 '"'"'my script.py'"'"'
	EOF
	test_cmp expect "$FAKE/script.sh" &&
	test "$(cat "$FAKE/script.mode")" = 600 &&
	test_line_count = 0 <(ls jobs/*.sh 2>/dev/null) &&
	sh -n "$FAKE/script.sh"
'

test_expect_success 'final states from sacct: OUT_OF_MEMORY, TIMEOUT fail; COMPLETED succeeds' '
	reset_fakes &&
	echo "14|OUT_OF_MEMORY|0:125" >"$FAKE/sacct.out" &&
	test_expect_code 1 gdnctl wait -b hpc 14 2>out &&
	test_grep "finished: OUT_OF_MEMORY$" out &&
	echo "14|TIMEOUT|0:15" >"$FAKE/sacct.out" &&
	test_expect_code 1 gdnctl wait -b hpc 14 2>out &&
	test_grep "finished: TIMEOUT$" out &&
	echo "14|COMPLETED|0:0" >"$FAKE/sacct.out" &&
	gdnctl wait -b hpc 14 2>out &&
	test_grep "finished: COMPLETED$" out &&
	echo 15 >"$FAKE/sbatch.out" &&
	echo "15|OUT_OF_MEMORY|0:125" >"$FAKE/sacct.out" &&
	test_expect_code 1 gdnctl run -b hpc -- true 2>out &&
	test_grep "job 15 on hpc finished: OUT_OF_MEMORY$" out
'

test_expect_success 'RUNNING, then gone from the queue: the final state is looked up, not assumed' '
	reset_fakes &&
	printf "PENDING\nRUNNING\nRUNNING\n" >"$FAKE/squeue.seq" &&
	echo "Slurm accounting storage is disabled" >"$FAKE/sacct.out" &&
	echo 1 >"$FAKE/sacct.rc" &&
	printf "JobId=16 JobName=x\n   JobState=FAILED Reason=NonZeroExitCode\n   ExitCode=2:0\n" \
		>"$FAKE/scontrol.out" &&
	test_expect_code 1 gdnctl wait -b hpc 16 2>out &&
	test_grep "(PENDING) for" out &&
	test_grep "(RUNNING) for" out &&
	test_grep "finished: FAILED (exit 2, reason: NonZeroExitCode)$" out &&
	test "$(grep -c "^squeue" "$FAKE/log")" = 4 &&
	test_grep "^scontrol show job 16$" "$FAKE/log"
'

test_expect_success 'an empty queue with no record anywhere is an error, never success' '
	reset_fakes &&
	echo "Slurm accounting storage is disabled" >"$FAKE/sacct.out" &&
	echo "slurm_load_jobs error: Invalid job id specified" >"$FAKE/scontrol.out" &&
	echo 1 >"$FAKE/scontrol.rc" &&
	test_expect_code 4 gdnctl wait -b hpc 17 >out 2>err &&
	test_grep "job 17 is not known to Slurm" err &&
	echo 21 >"$FAKE/sbatch.out" &&
	test_expect_code 4 gdnctl run -b hpc -- true >out 2>err &&
	test_grep "submitted batch job 21" err &&
	test_grep "job 21 is not known to Slurm" err
'

test_expect_success 'a controller that does not answer: retried, then exit 4 with its message' '
	reset_fakes &&
	echo "squeue: error: Unable to contact slurm controller (connect failure)" >"$FAKE/squeue.out" &&
	echo 1 >"$FAKE/squeue.rc" &&
	test_expect_code 4 gdnctl wait -b hpc 18 >out 2>err &&
	test "$(grep -c "retrying$" err)" = 3 &&
	test_grep "'"'"'$TRASH/bin/squeue'"'"' failed (exit 1): squeue: error: Unable to contact slurm controller" err
'

test_expect_success 'sbatch that fails or prints no job id: exit 4' '
	reset_fakes &&
	echo "sbatch: error: Batch job submission failed: Invalid partition name specified" >"$FAKE/sbatch.out" &&
	echo 1 >"$FAKE/sbatch.rc" &&
	test_expect_code 4 gdnctl run -b hpc --no-wait -- true 2>err &&
	test_grep "failed (exit 1): sbatch: error: Batch job submission failed" err &&
	reset_fakes &&
	echo "Submitted batch job 19" >"$FAKE/sbatch.out" &&
	test_expect_code 4 gdnctl run -b hpc --no-wait -- true 2>err &&
	test_grep "sbatch printed no job id: '"'"'Submitted batch job 19'"'"'" err
'

test_expect_success 'stop: scancel only for a job that has not finished' '
	reset_fakes &&
	echo RUNNING >"$FAKE/squeue.out" &&
	gdnctl stop -b hpc 20 2>out &&
	test_grep "^scancel 20$" "$FAKE/log" &&
	reset_fakes &&
	echo "20|COMPLETED|0:0" >"$FAKE/sacct.out" &&
	gdnctl stop -b hpc 20 2>out &&
	test_grep "had already finished: COMPLETED" out &&
	test_grep ! "^scancel" "$FAKE/log"
'

test_expect_success 'configuration values that would break the batch script are refused' '
	test_expect_code 3 gdnctl -c "backends.hpc.partition=a b" run -b hpc -- true 2>err &&
	test_grep "backends.hpc.partition" err &&
	test_expect_code 3 gdnctl -c "backends.hpc.sbatch_options=--x=\"y\"" run -b hpc -- true 2>err &&
	test_expect_code 2 gdnctl run -b hpc --name "a
#SBATCH --uid=0" -- true 2>err &&
	test_grep "invalid job name" err
'

test_done
