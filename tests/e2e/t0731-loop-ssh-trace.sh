#!/usr/bin/env bash
# The loop fetches each iteration's trace from where the profile left it
# (project.trace_source, issue 18): the profile runs on an `ssh` backend
# (a real OpenSSH server on 127.0.0.1) and leaves traces/*.trace.json.gz in
# the remote workdir; the loop copies the run's newest trace back into
# <log-dir>/traces/iteration-NNN/run-K/, and the trace figures, the gate
# decisions and the report's trace deltas come from it. A profile that
# prints a GCS URI or a hosted-XProf link instead: the URI is found and
# handed to the fetcher; a trace that cannot be had leaves the trace
# figures unscored with the reason printed and journaled. No token in any
# output, journal or log.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
. "$(dirname "$0")/lib-loop.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC GDNCTL_LOOP_BACKEND \
	GDNCTL_TRACE_SOURCE GDNCTL_TRACE_GLOB
command -v rsync >/dev/null 2>&1 || skip_all "rsync is not installed"
sshd_start

export GOOGLE_OAUTH_ACCESS_TOKEN=ya29.secret-gcs-token-7f3a WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567 HF_TOKEN=hf_secretHFtoken42
# A loopback GCS (tests/e2e/hubserver.py) without the bucket: the fetcher's
# listing reaches it and gets a 404 at once.
mkdir -p "$TRASH/gcs-empty"
test_start_hubserver --root "$TRASH/gcs-empty" --gcs-root "$TRASH/gcs-empty"
export STORAGE_EMULATOR_HOST=127.0.0.1:$HUB_PORT

R=$TRASH/remote
mkdir -p "$R/jobs" "$XDG_CONFIG_HOME/gdnctl"
{
	echo "backends:"
	sshd_config_yaml box "workdir: $R/wd" "jobdir: $R/jobs" "poll: 300ms" "kill_grace: 1s" \
		"sync: rsync" 'sync_exclude: [".git", "traces"]'
} >"$XDG_CONFIG_HOME/gdnctl/config.yaml"

# iteration 1: 2x faster, `while` the same (promoted); iteration 2: +1.5 %
# but `while` +10 ms/step (the trace gate rejects it)
agent plan <<'EOF'
n=$(sed -n 's/^Iteration \([0-9]*\).*/\1/p' "$1")
case $n in
1) echo 2.0 >speed.txt; git commit -qam "blocked scan: 2x faster" ;;
*) echo 2.03 >speed.txt; echo 20000 >while_us.txt; git commit -qam "while grows" ;;
esac
EOF
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

test_create_repo repo &&
	(
		cd repo &&
			cat >bench.sh <<-'EOF' &&
				#!/bin/sh
				# one profile run: throughput/mfu, and a trace left in the remote workdir
				echo "profile in $PWD"
				mkdir -p traces
				echo "throughput/mfu=$(cat speed.txt)"
				sh ./fake-trace.sh "$(cat while_us.txt)" | gzip >"traces/run-$(date +%s%N).trace.json.gz"
			EOF
			cp "$GDNCTL_SOURCE_DIR/tests/e2e/fake-trace.sh" . &&
			chmod +x bench.sh && echo 1.0 >speed.txt && echo 10000 >while_us.txt &&
			git add . && git commit -qm "benchmark with a remote trace"
	) || exit 1

run_loop() {
	(cd "$TRASH/repo" &&
		GDNCTL_TEST_COMMAND=true GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl loop --agent command --agent-cmd "$AG/plan {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode profile-only \
		--perf-mode on --backend box "$@")
}

# back to the first benchmark's figures (speed 1.0, `while` 10 ms/step)
reset_repo() {
	(cd repo && echo 1.0 >speed.txt && echo 10000 >while_us.txt && git commit -qam reset)
}

# the trace figures were not scored: no champion or history record has any
no_figures() {
	python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s[\"champion\"][\"trace\"] is None, s; assert all(h.get(\"trace\") is None for h in s[\"history\"]), s" logs/perf_state.json
}

no_token_anywhere() {
	for f in "$@"; do
		if grep -l -e "$GOOGLE_OAUTH_ACCESS_TOKEN" -e "$WANDB_API_KEY" -e "$HF_TOKEN" -r "$f"; then
			echo "a token in $f"
			return 1
		fi
	done
}

test_expect_success 'the remote trace is copied back; figures, gate and deltas come from it' '
	base=$(git -C repo rev-parse HEAD) &&
	GDNCTL_TRACE_GLOB="traces/*.trace.json.gz" run_loop --iterations 2 >out 2>err ||
		{ cat out err; false; } &&
	test_grep "^profile in $R/wd$" out &&
	test ! -e repo/traces &&
	: baseline and both iterations: one trace each, from the backend &&
	test_grep -c "\"event\":\"trace\",.*\"source\":\"backend\"" logs/loop.jsonl >n && test "$(cat n)" = 3 &&
	for i in 000 001 002; do
		test_line_count = 1 <(find "logs/traces/iteration-$i/run-1" -name "run-*.trace.json.gz") || return 1
	done &&
	test_grep "\"event\":\"trace\",\"iteration\":1,\"attempt\":1,\"source\":\"backend\",\"path\":\"$TRASH/logs/traces/iteration-001/run-1/run-[0-9]*.trace.json.gz\",\"file\":\"traces/iteration-001/run-1/run-[0-9]*.trace.json.gz\",\"origin\":\"box:traces/\*.trace.json.gz\"" logs/loop.jsonl &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] trace of profile run 1: $TRASH/logs/traces/iteration-002/run-1/run-[0-9]*.trace.json.gz (backend box:traces/\*.trace.json.gz)$" out &&
	: the newest trace of the run, not one of the earlier runs still in the workdir &&
	test "$(ls "$R/wd/traces" | wc -l)" = 3 &&
	test "$(gzip -dc logs/traces/iteration-002/run-1/*.gz | grep -c "\"dur\":20000,\"name\":\"while.1\"")" = 1 &&
	: the figures of the champion and of the candidate come from the remote traces &&
	python3 -c "import json,sys; s=json.load(open(sys.argv[1])); t=s[\"champion\"][\"trace\"]; assert abs(t[\"step_ms\"]-30)<1e-6, t; assert abs(t[\"categories\"][\"while\"]-10)<1e-6, t" logs/perf_state.json &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance champion promoted: 1 -> 2 (+100.00%" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance gate triggered vs champion: 2 -> 2.03 (+1.50%" err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] gate: .while. grew 10.000 ms/step (10.000 -> 20.000, limit 5.000)$" err &&
	test_grep "\"iteration\":2,.*\"decision\":\"gate_regression\"" logs/loop.jsonl &&
	test "$(cat repo/speed.txt)" = 2.0 && test "$(cat repo/while_us.txt)" = 10000 &&
	gdnctl report --log-dir logs >rep &&
	test_grep "^       trace: step +10.000 ms, category while +10.000 ms$" rep &&
	test_grep "^       trace file: traces/iteration-002/run-1/run-[0-9]*.trace.json.gz (backend box:traces/\*.trace.json.gz)$" rep &&
	gdnctl report --log-dir logs --json >rep.json &&
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); it=[i for i in d[\"iterations\"] if i[\"iteration\"]==2][0]; assert it[\"trace\"][\"source\"]==\"backend\", it; assert [d[\"delta_ms\"] for d in it[\"trace_deltas\"] if d[\"name\"]==\"while\"]==[10.0], it" rep.json &&
	test_grep "<a href=\"traces/iteration-002/run-1/run-[0-9]*.trace.json.gz\">trace</a> (backend)" logs/report.html &&
	no_token_anywhere out err logs
'

test_expect_success 'no trace written by the run: trace figures unscored, the reason printed and journaled' '
	rm -rf logs &&
	reset_repo &&
	GDNCTL_TRACE_GLOB="traces/none-*.json.gz" run_loop --iterations 1 >out 2>err ||
		{ cat out err; false; } &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] WARNING: no trace for profile run 1, trace figures unscored: local: no file matching .traces/none-\*.json.gz. written by this run; backend box: no file matching .traces/none-\*.json.gz. written by this run; gcs: the profile printed no gs://.../plugins/profile URI or hosted-XProf link; wandb: the profile printed no W&B run$" err &&
	no_figures &&
	test_grep "\"event\":\"trace\",\"iteration\":1,\"attempt\":1,\"source\":null,\"path\":null,\"reason\":\"local: no file matching" logs/loop.jsonl &&
	test_grep "\"iteration\":1,.*\"decision\":\"promoted\"" logs/loop.jsonl &&
	gdnctl report --log-dir logs >rep &&
	test_grep "^       no trace: local: no file matching" rep
'

test_expect_success 'a profile that prints a GCS URI or a hosted-XProf link: found, handed to the fetcher' '
	rm -rf logs && reset_repo &&
	cat >repo/bench.sh <<-EOF &&
	#!/bin/sh
	echo "throughput/mfu=\$(cat speed.txt)"
	echo "INFO Uploaded XProf session to gs://marin-tmp/ttl=30d/xprof/run-\$(cat speed.txt)/plugins/profile/steps-5-to-30"
	echo "INFO XProf profile: https://iris.oa.dev/proxy/xprof/open?uri=gs%3A%2F%2Fmarin-tmp%2Fttl%3D30d%2Fxprof%2Frun-link"
	EOF
	(cd repo && git commit -qam "profile that uploads to GCS") &&
	run_loop --iterations 1 >out 2>err || { cat out err; false; } &&
	test_grep "no trace for profile run 1, trace figures unscored: gcs gs://marin-tmp/ttl=30d/xprof/run-1.0/plugins/profile/steps-5-to-30: cannot list gs://marin-tmp/ttl=30d/xprof/run-1.0/plugins/profile/steps-5-to-30: no such bucket (HTTP 404)" out err &&
	grep -q "/storage/v1/b/marin-tmp/o?prefix=ttl%3D30d%2Fxprof%2Frun-1.0%2Fplugins%2Fprofile%2Fsteps-5-to-30&" "$TRASH/requests.log" &&
	test_grep "\"event\":\"trace\",\"iteration\":0,\"attempt\":1,\"source\":null,\"path\":null,\"reason\":\"gcs gs://marin-tmp/ttl=30d/xprof/run-1.0/plugins/profile/steps-5-to-30: " logs/loop.jsonl &&
	no_figures &&
	: the hosted-XProf link alone: its uri= is the profile root &&
	rm -rf logs &&
	sed -i "/Uploaded XProf/d" repo/bench.sh && (cd repo && git commit -qam "link only") &&
	GDNCTL_TRACE_SOURCE=gcs run_loop --iterations 1 >out 2>err || { cat out err; false; } &&
	test_grep "trace figures unscored: gcs gs://marin-tmp/ttl=30d/xprof/run-link/plugins/profile: cannot list gs://marin-tmp/ttl=30d/xprof/run-link/plugins/profile: no such bucket (HTTP 404)" out err &&
	no_token_anywhere out err logs
'

test_expect_success 'project.trace_source none: no trace, nothing said' '
	rm -rf logs &&
	GDNCTL_TRACE_GLOB="traces/*.trace.json.gz" GDNCTL_TRACE_SOURCE=none run_loop --iterations 1 >out 2>err &&
	test_grep ! "\"event\":\"trace\"" logs/loop.jsonl &&
	test_grep ! "no trace for profile run" out err &&
	GDNCTL_TRACE_SOURCE=bogus test_expect_code 3 gdnctl -C repo loop --agent command \
		--agent-cmd true --perf-mode on --iterations 1 >out 2>err &&
	test_grep "bogus" err
'

test_done
