#!/usr/bin/env bash
# gdnctl loop --perf-ab on a slurm backend (a real single-node Slurm on
# 127.0.0.1): the champion's and the candidate's batch jobs alternate, the
# champion's from its worktree under the log dir (on the shared file
# system; workdir: . is the top of each tree), the candidate's from its own
# tree. A slurm backend whose workdir is a fixed directory (or unset: the
# directory gdnctl runs in) cannot do that: setup refuses with --no-perf-ab.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-slurm.sh"
. "$(dirname "$0")/lib-loop.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SBATCH GDNCTL_SQUEUE GDNCTL_SACCT \
	GDNCTL_SCONTROL GDNCTL_SCANCEL GDNCTL_LOOP_BACKEND
slurm_start

mkdir -p "$XDG_CONFIG_HOME/gdnctl" "$TRASH/jobs" "$TRASH/fixed"
cat >"$XDG_CONFIG_HOME/gdnctl/config.yaml" <<EOF
backends:
  hpc:
    type: slurm
    jobdir: $TRASH/jobs
    workdir: .
    poll: 300ms
  cwd:
    type: slurm
    jobdir: $TRASH/jobs
  fixed:
    type: slurm
    jobdir: $TRASH/jobs
    workdir: $TRASH/fixed
EOF

agent faster <<'EOF'
echo 2.0 >speed.txt && git add -A && git commit -qm "agent: faster"
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

test_create_repo repo &&
	(
		cd repo &&
			cat >bench.sh <<-'EOF' &&
				#!/bin/sh
				echo "profile in $PWD: $(cat speed.txt)"
				echo "throughput/mfu=$(cat speed.txt)"
			EOF
			chmod +x bench.sh && echo 1.0 >speed.txt &&
			git add . && git commit -qm "bench"
	) || exit 1

run_loop() {
	(cd "$TRASH/repo" &&
		GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl loop --agent command --agent-cmd "$AG/faster {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode profile-only \
		--perf-mode on --perf-source cli --iterations 1 "$@")
}

test_expect_success 'the champion batch jobs run from its worktree, alternately with the candidate' '
	run_loop --backend hpc --perf-repeats 2 >out 2>err &&
	sed -n "s/.*\"event\":\"validation\",\"iteration\":1,\"phase\":\"\(profile[a-z-]*\)\".*/\1/p" \
		logs/loop.jsonl | tr "\n" " " >phases &&
	test "$(cat phases)" = "profile-champion profile profile-champion profile " &&
	grep "^profile in " out | sed -n "3,\$p" >runs &&
	sed -n 1p runs >c1 && sed -n 3p runs >c2 &&
	echo "profile in $TRASH/logs/champion: 1.0" >expect &&
	test_cmp expect c1 && test_cmp expect c2 &&
	sed -n "2p;4p" runs >cand &&
	test "$(grep -c ": 2.0$" cand)" = 2 &&
	test_grep ! "logs/champion" cand &&
	python3 - logs/perf_state.json <<-\EOF &&
	import json, sys
	h = json.load(open(sys.argv[1]))["history"][-1]
	assert h["ab"]["champion_samples"] == [1, 1], h["ab"]
	assert [s["value"] for s in h["samples"]] == [2, 2], h["samples"]
	assert h["decision"] == "promoted", h
	EOF
	test "$(git -C repo log -1 --format=%s)" = "agent: faster" &&
	test ! -e logs/champion
'

test_expect_success 'a fixed workdir, or none: --perf-ab is refused at setup' '
	head=$(git -C repo rev-parse HEAD) &&
	for b in fixed cwd; do
		test_must_fail =2 run_loop --backend $b --perf-repeats 2 >out 2>err &&
		test_grep "^\[gdnctl\] error: --perf-ab cannot run the champion from its own copy on backend $b (slurm): its jobs run in a fixed directory: set its workdir relative to the repository (workdir: .); give --no-perf-ab$" err ||
		return 1
	done &&
	test "$(git -C repo rev-parse HEAD)" = "$head"
'

test_done
