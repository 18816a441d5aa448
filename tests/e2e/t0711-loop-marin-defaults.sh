#!/usr/bin/env bash
# codex-loop's Marin validation defaults: without project.test_command /
# project.profile_command, a loop that validates on a held dev TPU or Ray
# fallback clusters runs the original's commands. The argv the uv double
# records for the loop must equal what `gdnctl dev-tpu-test`,
# `dev-tpu-profile`, `ray-test` and `ray-profile` (independently tested in
# t0450) record for the same values. Also: the run name <prefix>_iterNNN,
# the original's startup checks, --validation-max-attempts (-1: until a
# pass succeeds), the per-phase Ray timeouts, --validation-ray-log-tail,
# and a job stopped from outside that stays stopped after
# --validation-retries (an iteration error, not a validation failure).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
marin_setup
export TRASH
DEV_TPU=scripts/ray/dev_tpu.py
RAY_RUN=lib/marin/src/marin/run/ray_run.py

mkdir -p "$TRASH/agents"
cat >"$TRASH/agents/faster" <<'EOF'
#!/bin/sh
echo "$(date +%s%N)" >>speed.txt && git add speed.txt && git commit -qm "agent: faster"
EOF
chmod +x "$TRASH/agents/faster"
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$GDNCTL_FAKE_STATE"/* "$TRASH/flaky" &&
		calls_reset &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >check.sh <<-'EOF2' &&
					#!/bin/sh
					echo $$ >"$TRASH/check.pid"
					if [ -n "$SLOW_TESTS" ]; then sleep 30; fi
					echo "tests: ok"
				EOF2
				cat >bench.sh <<-'EOF2' &&
					#!/bin/sh
					echo $$ >"$TRASH/bench.pid"
					if [ -n "$SLOW_PROFILE" ]; then sleep 30; fi
					echo "throughput/mfu=1.0"
				EOF2
				chmod +x check.sh bench.sh && echo 1 >speed.txt &&
				git add . && git commit -qm "start"
		)
}

run_loop() {
	(cd "$TRASH/repo" && gdnctl codex-loop --agent command \
		--agent-cmd "$TRASH/agents/faster {prompt_file}" --prompt-file "$TRASH/prompt.md" \
		--log-dir "$TRASH/logs" --sleep-seconds 0 --retry-sleep-seconds 0 \
		--validation-retry-sleep 0 "$@")
}

# Keep the recorded calls that contain WORD (as a JSON string) in file $2.
calls_matching() {
	jq -c "select(index([\"$1\"]))" "$GDNCTL_FAKE_LOG" >"$2"
}

# Record what a gdnctl alias runs (in the repository) into file $1.
alias_calls() {
	local f=$1
	shift
	calls_reset &&
		(cd "$TRASH/repo" && gdnctl "$@" >"$TRASH/alias.out" 2>&1) &&
		jq -c . "$GDNCTL_FAKE_LOG" >"$f"
}

test_expect_success 'dev TPU, defaults: the tests and profile argv are the original aliases' '
	new_repo &&
	run_loop --iterations 1 --validation-mode required --hold-dev-tpu --dev-tpu-name me \
		--dev-tpu-cluster us-east5-a >out 2>err &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	calls_matching execute loop.calls &&
	test_line_count = 2 loop.calls &&
	alias_calls want.calls dev-tpu-test --cluster us-east5-a --tpu-name me &&
	alias_calls want2.calls dev-tpu-profile --cluster us-east5-a --tpu-name me \
		--ce-implementation pallas_tpu --run-name-prefix gdn_loopgate_iter001 &&
	cat want2.calls >>want.calls &&
	test_cmp want.calls loop.calls &&
	test_grep "\"-e\",\"GDN_PROFILE_RUN_NAME_PREFIX=gdn_loopgate_iter001\"" loop.calls &&
	test_grep "\"-e\",\"MARIN_PREFIX=gs://marin-us-east5\"" loop.calls &&
	test_grep "\"-e\",\"LEVANTER_FUSED_CE_IMPLEMENTATION=pallas_tpu\"" loop.calls
'

test_expect_success 'dev TPU, every value given: same argv as dev-tpu-test / dev-tpu-profile' '
	new_repo &&
	run_loop --iterations 2 --validation-mode required --hold-dev-tpu --dev-tpu-name me \
		--validation-tests kernels --validation-pytest-args " -k gdn -x " \
		--validation-dev-no-sync --validation-profile-tpu v6e-8 \
		--validation-profile-size 300m --validation-profile-num-steps 30 \
		--validation-profile-start-step 3 --validation-profile-num-steps-window 4 \
		--validation-profile-batch-size 16 --validation-profile-chunk-size 64 \
		--validation-profile-segment-size 128 --validation-profile-gdn-layers-per-block 3 \
		--validation-profile-gdn-block-size 4 --validation-profile-all-transformer \
		--validation-profile-env "FOO=a b" --validation-profile-env EMPTY= \
		--validation-profile-ce-implementation XLA --validation-profile-ce-bwd-mode xla \
		--validation-profile-run-name-prefix gp --validation-profile-wandb-mode offline \
		--validation-profile-marin-prefix gs://mine --validation-profile-dry-run >out 2>err &&
	test_grep "2 iterations, 2 commits, 0 failed iterations (0 counted" out &&
	calls_matching execute loop.calls &&
	test_line_count = 4 loop.calls &&
	: >want.calls &&
	for i in 001 002; do
		alias_calls t.calls dev-tpu-test --tpu-name me --tests kernels \
			--pytest-args " -k gdn -x " --no-sync &&
		alias_calls p.calls dev-tpu-profile --tpu-name me --tpu v6e-8 --size 300m \
			--num-steps 30 --profile-start-step 3 --profile-num-steps 4 --batch-size 16 \
			--chunk-size 64 --segment-size 128 --gdn-layers-per-block 3 \
			--gdn-block-size 4 --all-transformer --profile-env "FOO=a b" \
			--profile-env EMPTY= --ce-implementation XLA --ce-bwd-mode xla \
			--run-name-prefix gp_iter$i --wandb-mode offline --marin-prefix gs://mine \
			--dry-run --no-sync &&
		cat t.calls p.calls >>want.calls || return 1
	done &&
	test_cmp want.calls loop.calls &&
	test_grep "GDN_PROFILE_RUN_NAME_PREFIX=gp_iter002" loop.calls &&
	test_grep "\"--no-sync\"" loop.calls &&
	test_grep -- "--dry_run true" loop.calls
'

test_expect_success 'Ray fallback clusters: the argv are ray-test / ray-profile' '
	new_repo &&
	run_loop --iterations 1 --validation-mode required --validation-ray-cluster r1 \
		--validation-ray-tpu v5e-4 --validation-profile-tpu v6e-8 \
		--validation-tests layer --validation-profile-num-steps 9 \
		--validation-profile-dry-run >out 2>err &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out &&
	calls_matching $RAY_RUN loop.calls &&
	test_line_count = 2 loop.calls &&
	alias_calls want.calls ray-test --cluster r1 --tpu v5e-4 --tests layer &&
	alias_calls p.calls ray-profile --cluster r1 --tpu v6e-8 --num-steps 9 \
		--ce-implementation pallas_tpu --run-name-prefix gdn_loopgate_iter001 --dry-run &&
	cat p.calls >>want.calls &&
	test_cmp want.calls loop.calls &&
	test_grep ! MARIN_PREFIX loop.calls
'

test_expect_success 'dev TPU first, then Ray; a project command still wins for its phase' '
	new_repo &&
	(cd repo && GDNCTL_TEST_COMMAND=./check.sh run_loop --iterations 1 \
		--validation-mode required --hold-dev-tpu --dev-tpu-name me \
		--validation-ray-cluster r1) >out 2>err &&
	calls_matching execute loop.calls &&
	test_line_count = 2 loop.calls &&
	jq -e ".[-1] == \"./check.sh\"" <(sed -n 1p loop.calls) &&
	test_grep "GDN_PROFILE_RUN_NAME_PREFIX=gdn_loopgate_iter001" <(sed -n 2p loop.calls) &&
	calls_matching $RAY_RUN ray.calls &&
	test_line_count = 0 ray.calls &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out
'

test_expect_success 'profile-only with the performance policy: baseline iter000, metric from the output' '
	new_repo &&
	FAKE_JOB_OUTPUT="throughput/mfu=1.5" run_loop --iterations 1 --validation-mode profile-only \
		--perf-mode on --validation-ray-cluster r1 --validation-profile-wandb-mode offline \
		>out 2>err &&
	calls_matching $RAY_RUN loop.calls &&
	test_line_count = 2 loop.calls &&
	test_grep "GDN_PROFILE_RUN_NAME_PREFIX=gdn_loopgate_iter000" <(sed -n 1p loop.calls) &&
	test_grep "GDN_PROFILE_RUN_NAME_PREFIX=gdn_loopgate_iter001" <(sed -n 2p loop.calls) &&
	test_grep ! "check.sh" loop.calls &&
	test_grep "\"decision\":\"baseline\"" logs/loop.jsonl &&
	test_grep "\"candidate\":1.5" logs/loop.jsonl &&
	test_must_fail =2 run_loop --iterations 1 --validation-mode profile-only --perf-mode on \
		--validation-ray-cluster r1 --validation-profile-wandb-mode disabled \
		--perf-source wandb >out 2>err &&
	test_grep "perf-source wandb needs --validation-profile-wandb-mode online" err
'

test_expect_success 'without Marin targets or project commands: refused (exit 2)' '
	new_repo &&
	test_must_fail =2 run_loop --iterations 1 --validation-mode required >out 2>err &&
	test_grep "needs project.test_command in the configuration (or Marin targets" err &&
	test "$(calls_count)" = 0
'

test_expect_success 'the original startup checks: messages and exit 1, nothing runs' '
	new_repo &&
	while IFS="|" read -r args msg; do
		# shellcheck disable=SC2086
		test_must_fail =1 run_loop --iterations 1 --validation-mode required \
			--validation-ray-cluster r1 $args >out 2>err &&
		echo "[gdnctl] $msg" >want &&
		test_cmp want err || return 1
	done <<-\EOF &&
	--validation-max-attempts 0|--validation-max-attempts must be -1 (unlimited) or >= 1.
	--validation-max-attempts -2|--validation-max-attempts must be -1 (unlimited) or >= 1.
	--validation-ray-test-timeout 0|--validation-ray-test-timeout must be > 0 when set.
	--validation-ray-profile-timeout -1|--validation-ray-profile-timeout must be > 0 when set.
	--validation-ray-log-tail 0|--validation-ray-log-tail must be > 0.
	--validation-profile-env MISSING_EQUALS|invalid --profile-env entry (expected KEY=VALUE): '\''MISSING_EQUALS'\''
	--validation-profile-env 1BAD=x|invalid --profile-env key '\''1BAD'\''; expected [A-Za-z_][A-Za-z0-9_]*
	--validation-profile-ce-implementation fast|invalid CE implementation '\''fast'\''; expected one of: auto, xla, reference, pallas_tpu, pallas_gpu
	--validation-profile-ce-bwd-mode slow|unsupported CE backward mode '\''slow'\''; expected one of pallas, xla_streaming
	--validation-max-attempts 2 --validation-attempts 3|--validation-max-attempts and --validation-attempts are the same setting; give one.
	EOF
	test_must_fail =2 run_loop --iterations 1 --validation-tests unit >out 2>err &&
	test_must_fail =2 run_loop --iterations 1 --validation-profile-size 7b >out 2>err &&
	test "$(calls_count)" = 0
'

# A uv that fails the first $FLAKY ray_run.py calls (ray_run.py exits FAKE_RC=1), then is the double.
cat >"$TRASH/bin/uv-flaky" <<EOF
#!/bin/sh
if [ "\$2" = "$RAY_RUN" ]; then
	n=\$((\$(cat "\$TRASH/flaky" 2>/dev/null || echo 0) + 1))
	echo \$n >"\$TRASH/flaky"
	[ \$n -le "\${FLAKY:-0}" ] && export FAKE_RC=1
fi
exec "$TRASH/bin/uv" "\$@"
EOF
chmod +x "$TRASH/bin/uv-flaky"

calls_with_tests() {
	jq -c "select(index([\"$RAY_RUN\"])) | select(.[-1] | test(\"pytest\"))" \
		"$GDNCTL_FAKE_LOG" | wc -l | tr -d " "
}

test_expect_success '--validation-max-attempts -1: passes until one succeeds' '
	new_repo &&
	FLAKY=3 GDNCTL_UV=$TRASH/bin/uv-flaky run_loop --iterations 1 --validation-mode required \
		--validation-ray-cluster r1 --validation-max-attempts -1 >out 2>err &&
	test "$(calls_with_tests)" = 4 &&
	test_grep "validation tests on Ray cluster r1 (pass 4)$" out &&
	test "$(grep -c "validation tests failed; waiting 0s before retry." err)" = 3 &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out
'

test_expect_success '--validation-max-attempts N is --validation-attempts N' '
	new_repo &&
	FLAKY=5 GDNCTL_UV=$TRASH/bin/uv-flaky run_loop --iterations 1 --validation-mode required \
		--validation-ray-cluster r1 --validation-max-attempts 2 --max-failures 1 >out 2>err &&
	test "$(calls_with_tests)" = 2 &&
	test_grep "validation tests on Ray cluster r1 (pass 2/2)$" out &&
	test_grep "validation failed: tests exit 1" err &&
	test_grep "1 iteration, 0 commits, 1 failed iteration (1 counted" out
'

test_expect_success '--validation-ray-test-timeout overrides --validation-timeout for Ray tests jobs' '
	new_repo &&
	start=$(date +%s) &&
	(cd repo && SLOW_TESTS=1 FAKE_EXEC=1 FAKE_JOB_ID=job-slow-2 GDNCTL_TEST_COMMAND=./check.sh \
		GDNCTL_PROFILE_COMMAND=./bench.sh run_loop --iterations 1 \
		--validation-mode required --validation-ray-cluster r1 --validation-timeout 10m \
		--validation-ray-test-timeout 2 --validation-ray-profile-timeout 600 --max-failures 1) >out 2>err &&
	test $(($(date +%s) - start)) -lt 25 &&
	test_grep "\"cluster\":\"r1\",\"rc\":124,\"state\":\"timeout\"" logs/loop.jsonl &&
	test "$(jq -c "select(index([\"stop-job\"]))" "$GDNCTL_FAKE_LOG" | wc -l)" = 1 &&
	test_grep "validation failed: tests exit 124" err &&
	wait_gone "$(cat check.pid)" 5
'

test_expect_success '--validation-ray-profile-timeout applies to the profile phase only' '
	new_repo &&
	start=$(date +%s) &&
	(cd repo && SLOW_PROFILE=1 FAKE_EXEC=1 GDNCTL_TEST_COMMAND=./check.sh \
		GDNCTL_PROFILE_COMMAND=./bench.sh run_loop --iterations 1 \
		--validation-mode required --validation-ray-cluster r1 --validation-timeout 10m \
		--validation-ray-test-timeout 20 --validation-ray-profile-timeout 2 --max-failures 1) >out 2>err &&
	test $(($(date +%s) - start)) -lt 25 &&
	test_grep "\"phase\":\"tests\",.*\"rc\":0,\"state\":\"succeeded\"" logs/loop.jsonl &&
	test_grep "\"phase\":\"profile\",.*\"rc\":124,\"state\":\"timeout\"" logs/loop.jsonl &&
	test_grep "validation failed: profile exit 124" err &&
	wait_gone "$(cat bench.pid)" 5
'

test_expect_success '--validation-ray-log-tail: only the last N lines of a Ray job are shown' '
	new_repo &&
	FAKE_JOB_OUTPUT="$(printf "job line %s\n" 1 2 3 4 5)" run_loop --iterations 1 \
		--validation-mode required --validation-ray-cluster r1 >out 2>err &&
	test_grep "^job line 3$" out &&
	new_repo &&
	FAKE_JOB_OUTPUT="$(printf "job line %s\n" 1 2 3 4 5)" run_loop --iterations 1 \
		--validation-mode required --validation-ray-cluster r1 \
		--validation-ray-log-tail 2 >out 2>err &&
	test "$(grep -c "^job line [45]$" out)" = 4 &&
	test_grep ! "^job line [123]$" out &&
	test_grep ! "Job submitted with ID" out &&
	test_grep "1 iteration, 1 commit, 0 failed iterations (0 counted" out
'

test_expect_success 'a job stopped from outside after --validation-retries: iteration error, reverted' '
	new_repo &&
	(
		cd repo &&
			printf "backends:\n  plain:\n    type: ray\n    cli: ray\n    poll: 50ms\n" \
				>gdnctl.yaml &&
			git add gdnctl.yaml && git commit -qm config
	) &&
	head=$(git -C repo rev-parse HEAD) &&
	(cd repo && FAKE_JOB_STATUS=STOPPED GDNCTL_TEST_COMMAND=./check.sh test_must_fail =2 \
		run_loop --iterations 1 --validation-mode required --backend plain \
		--validation-retries 1) >out 2>err &&
	test "$(grep -c "\"event\":\"validation_retry\"" logs/loop.jsonl)" = 1 &&
	test "$(grep -c "\"event\":\"validation\"," logs/loop.jsonl)" = 2 &&
	test_grep "validation could not run: validation tests job was stopped from outside (retries: 1)" err &&
	test_grep ! "validation failed: tests exit" err &&
	test_grep "\"event\":\"revert\".*\"ok\":true" logs/loop.jsonl &&
	test "$(git -C repo log -1 --format=%s)" != "agent: faster" &&
	test -z "$(git -C repo status --porcelain)" &&
	test_grep "iteration_error=1" out
'


# The W&B source: the run name prefix <p>_iter<NNN> finds the profile's run
# (loopback W&B API of tests/e2e/hubserver.py); the output says 7, W&B 1.0/1.5.
KEY=wandbLoopKey0123456789abcdef0123456789ab
cat >"$TRASH/wandb.json" <<EOF
{"ent/proj": {"runs": [
 {"name": "p0", "displayName": "gdn_loopgate_iter000_a", "createdAt": "2025-01-02T00:00:00",
  "summary": {"throughput/mfu": 1.0}},
 {"name": "p1", "displayName": "gdn_loopgate_iter001_b", "createdAt": "2025-01-02T00:00:01",
  "summary": {"throughput/mfu": 1.5}}
]}}
EOF
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY NETRC
python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" serve --root "$TRASH" \
	--ports "$TRASH/ports" --log "$TRASH/requests.log" --wandb "$TRASH/wandb.json" \
	--wandb-key "$KEY" >"$TRASH/server.out" 2>&1 &
hub_pid=$!
test_atexit "kill $hub_pid"
for _ in $(seq 200); do [ -f "$TRASH/ports" ] && break; sleep 0.05; done

test_expect_success 'perf on: the run name prefix finds the W&B run; offline: the output' '
	test -f "$TRASH/ports" && . "$TRASH/ports" &&
	new_repo &&
	WANDB_BASE_URL=http://127.0.0.1:$HUB_PORT WANDB_API_KEY=$KEY \
		FAKE_JOB_OUTPUT="throughput/mfu=7" run_loop --iterations 1 \
		--validation-mode profile-only --perf-mode on --validation-ray-cluster r1 \
		--perf-wandb-entity ent --perf-wandb-project proj --perf-aggregation summary \
		>out 2>err &&
	test_grep "\"decision\":\"baseline\".*\"candidate\":1.0" logs/loop.jsonl &&
	test_grep "\"decision\":\"promoted\".*\"candidate\":1.5" logs/loop.jsonl &&
	test_grep ! "\"candidate\":7" logs/loop.jsonl &&
	new_repo &&
	WANDB_BASE_URL=http://127.0.0.1:$HUB_PORT WANDB_API_KEY=$KEY \
		FAKE_JOB_OUTPUT="throughput/mfu=7" run_loop --iterations 1 \
		--validation-mode profile-only --perf-mode on --validation-ray-cluster r1 \
		--perf-wandb-entity ent --perf-wandb-project proj --perf-aggregation summary \
		--validation-profile-wandb-mode offline >out 2>err &&
	test_grep "\"decision\":\"baseline\".*\"candidate\":7" logs/loop.jsonl &&
	test_grep ! "\"candidate\":1.5" logs/loop.jsonl
'

test_done
