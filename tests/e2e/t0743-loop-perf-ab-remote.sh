#!/usr/bin/env bash
# gdnctl loop --perf-ab on remote targets: the champion and the candidate
# are profiled alternately on the same target, each from its own tree.
# - ssh (a real OpenSSH server on 127.0.0.1) with `sync: rsync`: the
#   candidate's tree is copied to WORKDIR, the champion's worktree (under
#   the log dir) to WORKDIR.gdnctl-champion, so neither overwrites the other;
# - a ray backend and Ray fallback clusters (the uv double's ray_run.py,
#   which runs the job in the directory it was started from, as Ray
#   uploads it): the champion's jobs start from its worktree;
# - where a target cannot keep the champion's tree apart (ssh without sync,
#   the plain Ray CLI, dev-tpu, a held dev TPU) or its trace is not read
#   (a trace metric on ssh), setup refuses with a usage error naming
#   --no-perf-ab.
# The profile prints where it runs and the speed its tree holds: the
# champion's runs print the champion's speed, the candidate's the
# candidate's, alternately.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-marin.sh"
. "$(dirname "$0")/lib-loop.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC GDNCTL_LOOP_BACKEND
command -v rsync >/dev/null 2>&1 || skip_all "rsync is not installed"
marin_setup
unset FAKE_RAY_BAD_CLUSTERS
export FAKE_EXEC=1
sshd_start

R=$TRASH/remote
mkdir -p "$R/jobs" "$XDG_CONFIG_HOME/gdnctl"
{
	echo "backends:"
	sshd_config_yaml box "workdir: $R/wd" "jobdir: $R/jobs" "poll: 300ms" "kill_grace: 1s" \
		"sync: rsync" 'sync_exclude: [".git"]'
	sshd_config_yaml fixed "workdir: $R/fixed" "jobdir: $R/jobs" "kill_grace: 1s"
	printf '  plain:\n    type: ray\n    cli: ray\n'
	printf '  rr:\n    type: ray\n    cluster: r2\n'
	printf '  tpu:\n    type: dev-tpu\n    tpu_name: me\n'
} >"$XDG_CONFIG_HOME/gdnctl/config.yaml"

agent faster <<'EOF'
echo 2.0 >speed.txt && git add -A && git commit -qm "agent: faster"
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$R/wd" "$R/wd.gdnctl-champion" "$R/fixed" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >bench.sh <<-'EOF' &&
					#!/bin/sh
					echo "profile in $PWD: $(cat speed.txt)"
					echo "throughput/mfu=$(cat speed.txt)"
				EOF
				chmod +x bench.sh && echo 1.0 >speed.txt &&
				git add . && git commit -qm "bench"
		)
}

run_loop() {
	(cd "$TRASH/repo" &&
		GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl loop --agent command --agent-cmd "$AG/faster {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode profile-only \
		--perf-mode on --iterations 1 "$@")
}

# The profile phases of iteration 1, in the order they ran.
phases() {
	sed -n 's/.*"event":"validation","iteration":1,"phase":"\(profile[a-z-]*\)".*/\1/p' \
		"$TRASH/logs/loop.jsonl" | tr "\n" " "
}

# The A/B samples of the last decision: "champion 1,1,1 candidate 2,2,2 pairs 3".
ab_samples() {
	python3 - "$TRASH/logs/perf_state.json" <<-\EOF
	import json, sys
	h = json.load(open(sys.argv[1]))["history"][-1]
	f = lambda v: ",".join("%g" % x for x in v)
	print("champion", f(h["ab"]["champion_samples"]), "candidate",
	      f(s["value"] for s in h["samples"]), "pairs", h["ab"]["pairs"])
	EOF
}

AB_PAIRS="profile-champion profile profile-champion profile profile-champion profile "

test_expect_success 'ssh with sync: the champion runs from its own remote copy, alternately' '
	new_repo &&
	run_loop --backend box --perf-repeats 3 >out 2>err &&
	test "$(phases)" = "$AB_PAIRS" &&
	test_grep "^profile in $R/wd.gdnctl-champion: 1.0$" out &&
	: the baseline three times, then champion and candidate in turn &&
	grep "^profile in " out >runs &&
	printf "profile in %s: %s\n" "$R/wd" 1.0 "$R/wd" 1.0 "$R/wd" 1.0 \
		"$R/wd.gdnctl-champion" 1.0 "$R/wd" 2.0 "$R/wd.gdnctl-champion" 1.0 "$R/wd" 2.0 \
		"$R/wd.gdnctl-champion" 1.0 "$R/wd" 2.0 >expect &&
	test_cmp expect runs &&
	test "$(ab_samples)" = "champion 1,1,1 candidate 2,2,2 pairs 3" &&
	test_grep "performance champion promoted: .* over 3 A/B pairs: promote" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: faster" &&
	: each tree has its own copy on the server &&
	test "$(cat "$R/wd.gdnctl-champion/speed.txt")" = 1.0 &&
	test "$(cat "$R/wd/speed.txt")" = 2.0 &&
	test ! -e "$R/wd.gdnctl-champion/.git" &&
	test_grep "\"event\":\"champion_worktree\",\"iteration\":1,\"path\":\"$TRASH/logs/champion\"" logs/loop.jsonl &&
	test ! -e logs/champion &&
	test -z "$(git -C repo status --porcelain)"
'

test_expect_success 'ssh with sync and --validation-attempts 2 (the targets): the same pairs' '
	new_repo &&
	run_loop --backend box --perf-repeats 3 --validation-attempts 2 >out 2>err &&
	test "$(phases)" = "$AB_PAIRS" &&
	test "$(ab_samples)" = "champion 1,1,1 candidate 2,2,2 pairs 3" &&
	test_grep "validation profile-champion on backend box (pass 1/2)" out &&
	test "$(grep -c "^profile in $R/wd.gdnctl-champion: 1.0$" out)" = 3 &&
	test "$(grep -c "^profile in $R/wd: 2.0$" out)" = 3
'

test_expect_success 'Ray fallback clusters: the champion jobs start from its worktree' '
	new_repo &&
	: >"$GDNCTL_FAKE_LOG" &&
	run_loop --validation-ray-cluster r1 --perf-repeats 3 >out 2>err &&
	test "$(phases)" = "$AB_PAIRS" &&
	test "$(ab_samples)" = "champion 1,1,1 candidate 2,2,2 pairs 3" &&
	test_grep "validation profile-champion on Ray cluster r1 (pass 1/1)" out &&
	test "$(grep -c "^profile in $TRASH/logs/champion: 1.0$" out)" = 3 &&
	test "$(grep -c "^profile in .*: 2.0$" out)" = 3 &&
	test_grep ! "^profile in $TRASH/logs/champion: 2.0$" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: faster"
'

test_expect_success 'a ray backend (cli: marin): the champion jobs start from its worktree' '
	new_repo &&
	run_loop --backend rr --perf-repeats 2 >out 2>err &&
	test "$(phases)" = "profile-champion profile profile-champion profile " &&
	test "$(ab_samples)" = "champion 1,1 candidate 2,2 pairs 2" &&
	test "$(grep -c "^profile in $TRASH/logs/champion: 1.0$" out)" = 2 &&
	test_grep ! "^profile in $TRASH/logs/champion: 2.0$" out
'

test_expect_success 'ssh without sync: --perf-ab is refused at setup, --no-perf-ab runs' '
	new_repo &&
	head=$(git -C repo rev-parse HEAD) &&
	test_must_fail =2 run_loop --backend fixed --perf-repeats 3 >out 2>err &&
	test_grep "^\[gdnctl\] error: --perf-ab cannot run the champion from its own copy on backend fixed (ssh): without sync: rsync it runs in a fixed remote workdir that gdnctl does not copy to; give --no-perf-ab$" err &&
	test_line_count = 1 err &&
	test "$(git -C repo rev-parse HEAD)" = "$head" &&
	test_grep ! "profile in" out &&
	: a single run per commit is no A/B: nothing to refuse &&
	sshd_ssh mkdir -p "$R/fixed" && cp repo/bench.sh repo/speed.txt "$R/fixed/" &&
	run_loop --backend fixed >out 2>err &&
	test_grep "^profile in $R/fixed: 1.0$" out &&
	run_loop --backend fixed --perf-repeats 2 --no-perf-ab >out 2>err &&
	test_grep ! "profile-champion" out
'

test_expect_success 'a held dev TPU: --perf-ab is refused before anything is allocated' '
	new_repo &&
	: >"$GDNCTL_FAKE_LOG" &&
	test_must_fail =2 run_loop --hold-dev-tpu --dev-tpu-name me --perf-repeats 2 >out 2>err &&
	test_grep "^\[gdnctl\] error: --perf-ab cannot run the champion from its own copy on the held dev TPU (dev_tpu.py execute syncs every tree to one remote directory); give --no-perf-ab$" err &&
	test "$(calls_count)" = 0 &&
	: the dry run checks it too &&
	test_must_fail =2 run_loop --hold-dev-tpu --dev-tpu-name me --perf-repeats 2 --dry-run >out 2>err &&
	test_grep "give --no-perf-ab$" err
'

test_expect_success 'the plain Ray CLI and a dev-tpu backend: --perf-ab is refused at setup' '
	new_repo &&
	: >"$GDNCTL_FAKE_LOG" &&
	test_must_fail =2 run_loop --backend plain --perf-repeats 2 >out 2>err &&
	test_grep "^\[gdnctl\] error: --perf-ab cannot run the champion from its own copy on backend plain (ray): the plain Ray CLI (cli: ray) does not upload the tree; give --no-perf-ab$" err &&
	test_must_fail =2 run_loop --backend tpu --perf-repeats 2 >out 2>err &&
	test_grep "^\[gdnctl\] error: --perf-ab cannot run the champion from its own copy on backend tpu (dev-tpu): dev_tpu.py execute syncs every tree to one remote directory; give --no-perf-ab$" err &&
	test "$(calls_count)" = 0
'

test_expect_success 'a trace metric on ssh: refused (the champion'"'"'s trace is read locally only)' '
	new_repo &&
	: a trace the profile leaves, else setup refuses the metric first &&
	GDNCTL_TRACE_GLOB=out/trace.json test_must_fail =2 run_loop --backend box --perf-repeats 2 \
		--perf-metric trace/step_ms --perf-source trace >out 2>err &&
	test_grep "^\[gdnctl\] error: --perf-ab cannot measure the champion'"'"'s trace/step_ms on backend box (ssh): its trace is read only in its local worktree; give --no-perf-ab$" err
'

test_done
