#!/usr/bin/env bash
# The original gdnctl.py commands as aliases: each runs exactly the argv the
# original ran (written out here by hand from the reference, Appendix A and
# section 2), compared element by element with what the uv double recorded;
# --print-only prints it and runs nothing; messages and exit codes as the
# original's. And gdnctl test/profile on the Marin backends build the same.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
marin_setup

RAY_RUN=lib/marin/src/marin/run/ray_run.py
CLUSTER_CLI=scripts/ray/cluster.py
DEV_TPU=scripts/ray/dev_tpu.py

# REMOTE_TEST_CMD (v3, --tests both), quoted from the reference
TEST_BOTH='cd lib/levanter && if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then uv sync --active --extra=tpu --group test && uv pip install --python "$VIRTUAL_ENV/bin/python" --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && uv pip install --python "$VIRTUAL_ENV/bin/python" transformers && EQX_ON_ERROR=nan WANDB_MODE=offline uv run --active pytest tests/test_gdn_kernels.py tests/test_gdn_layer.py -v; else uv sync --extra=tpu --group test && uv pip install --python ../../.venv/bin/python --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && uv pip install --python ../../.venv/bin/python transformers && EQX_ON_ERROR=nan WANDB_MODE=offline uv run pytest tests/test_gdn_kernels.py tests/test_gdn_layer.py -v; fi'
TEST_KERNELS_X='cd lib/levanter && if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then uv sync --active --extra=tpu --group test && uv pip install --python "$VIRTUAL_ENV/bin/python" --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && uv pip install --python "$VIRTUAL_ENV/bin/python" transformers && EQX_ON_ERROR=nan WANDB_MODE=offline uv run --active pytest tests/test_gdn_kernels.py -v -k chunk -x; else uv sync --extra=tpu --group test && uv pip install --python ../../.venv/bin/python --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && uv pip install --python ../../.venv/bin/python transformers && EQX_ON_ERROR=nan WANDB_MODE=offline uv run pytest tests/test_gdn_kernels.py -v -k chunk -x; fi'
# PROFILE_CMD (v3), dev TPU (include_tpu_sync=True), quoted from the reference
PROFILE_DEV='set -e && if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then uv sync --all-packages --extra=tpu --python=3.11 --active && uv pip install --python "$VIRTUAL_ENV/bin/python" --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && (uv pip uninstall --python "$VIRTUAL_ENV/bin/python" torchvision || true) && "$VIRTUAL_ENV/bin/python" -m experiments.speedrun.hackable_transformer_gdn.tiny_profile --force_run_failed true; else uv sync --all-packages --extra=tpu --python=3.11 && uv pip install --python .venv/bin/python --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && (uv pip uninstall --python .venv/bin/python torchvision || true) && .venv/bin/python -m experiments.speedrun.hackable_transformer_gdn.tiny_profile --force_run_failed true; fi'
# the Ray variant: plain `uv sync` in both branches
PROFILE_RAY='set -e && if [ -n "${VIRTUAL_ENV:-}" ] && [ -x "$VIRTUAL_ENV/bin/python" ]; then uv sync --active && uv pip install --python "$VIRTUAL_ENV/bin/python" --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && (uv pip uninstall --python "$VIRTUAL_ENV/bin/python" torchvision || true) && "$VIRTUAL_ENV/bin/python" -m experiments.speedrun.hackable_transformer_gdn.tiny_profile --force_run_failed true; else uv sync && uv pip install --python .venv/bin/python --index-url https://download.pytorch.org/whl/cpu --force-reinstall torch==2.9.0+cpu && (uv pip uninstall --python .venv/bin/python torchvision || true) && .venv/bin/python -m experiments.speedrun.hackable_transformer_gdn.tiny_profile --force_run_failed true; fi'
PROFILE_RAY_DRY=${PROFILE_RAY//--force_run_failed true/--force_run_failed true --dry_run true}
PROFILE_ENV_DEFAULT=(-e EQX_ON_ERROR=nan -e WANDB_MODE=online -e GDN_PROFILE_SIZE=130m
	-e GDN_PROFILE_NUM_STEPS=20 -e GDN_PROFILE_PROFILE_START_STEP=2
	-e GDN_PROFILE_PROFILE_NUM_STEPS=6 -e GDN_PROFILE_RUN_NAME_PREFIX=gdn_tinyprof
	-e GDN_PROFILE_TPU_VARIANT=v5p-8 -e GDN_PROFILE_BATCH_SIZE=8
	-e LEVANTER_PALLAS_TPU_BWD_USE_XLA_STREAMING_BENCH=0)

test_expect_success 'ray-test: the original argv, the v3 note, exit 0' '
	gdnctl ray-test >out 2>err &&
	expect_call 1 uv run $RAY_RUN --cluster us-central1 --tpu auto \
		-e EQX_ON_ERROR=nan -e WANDB_MODE=offline -- bash -lc "$TEST_BOTH" &&
	head -1 out >first &&
	echo "[gdnctl] remote TPU test setup installs torch + transformers; full HF parity slice is enabled." >expect &&
	test_cmp expect first &&
	test_grep -F "[gdnctl] \$ $GDNCTL_UV run $RAY_RUN --cluster us-central1 --tpu auto" out &&
	test_grep "^fake job output line 1$" out
'

test_expect_success 'ray-test: exit status is ray_run.py'"'"'s' '
	calls_reset &&
	FAKE_JOB_STATUS=FAILED test_expect_code 1 gdnctl ray-test >out 2>&1 &&
	test_grep "ended with status: FAILED" out
'

test_expect_success 'ray-test --no-wait --tests kernels --pytest-args: submission id printed' '
	calls_reset &&
	gdnctl ray-test --cluster us-east5-a --tpu v5p-8 --tests kernels --pytest-args " -k chunk -x " \
		--no-wait >out 2>err &&
	expect_call 1 uv run $RAY_RUN --cluster us-east5-a --tpu v5p-8 \
		-e EQX_ON_ERROR=nan -e WANDB_MODE=offline --no_wait -- bash -lc "$TEST_KERNELS_X" &&
	test_grep "Job submitted with ID: ray-run-tester-bash-20250101-000000" out &&
	tail -1 out >last &&
	echo "[gdnctl] submission_id=ray-run-tester-bash-20250101-000000" >expect &&
	test_cmp expect last &&
	test ! -s err
'

test_expect_success 'ray-test --no-wait without an id: the warning, exit still ray_run'"'"'s' '
	calls_reset &&
	FAKE_NO_ID=1 gdnctl ray-test --no-wait >out 2>err &&
	echo "[gdnctl] WARNING: could not parse submission id from output." >expect &&
	test_cmp expect err &&
	test_grep ! submission_id= out
'

test_expect_success 'ray-profile: defaults, the profile environment in order, --no-wait' '
	calls_reset &&
	gdnctl ray-profile --no-wait >out &&
	expect_call 1 uv run $RAY_RUN --cluster us-central1 --tpu v5p-8 "${PROFILE_ENV_DEFAULT[@]}" \
		--no_wait -- bash -lc "$PROFILE_RAY" &&
	test_grep "^\[gdnctl\] submission_id=ray-run-tester-bash-20250101-000000$" out
'

test_expect_success 'ray-profile: every option, and --dry-run is the script'"'"'s --dry_run true' '
	calls_reset &&
	gdnctl ray-profile --cluster us-east5-a --tpu v6e-8 --size 300m --num-steps 30 \
		--profile-start-step 3 --profile-num-steps 4 --batch-size 16 --chunk-size 128 \
		--segment-size 16 --gdn-layers-per-block 1 --gdn-block-size 4 --all-transformer \
		--ce-implementation pallas_tpu --ce-bwd-mode xla_streaming --run-name-prefix demo \
		--wandb-mode offline --profile-env GDN_TRIANGULAR_SOLVE_PROBE=identity \
		--profile-env EMPTY_VALUE= --dry-run >out &&
	expect_call 1 uv run $RAY_RUN --cluster us-east5-a --tpu v6e-8 \
		-e EQX_ON_ERROR=nan -e WANDB_MODE=offline -e GDN_PROFILE_SIZE=300m \
		-e GDN_PROFILE_NUM_STEPS=30 -e GDN_PROFILE_PROFILE_START_STEP=3 \
		-e GDN_PROFILE_PROFILE_NUM_STEPS=4 -e GDN_PROFILE_RUN_NAME_PREFIX=demo \
		-e GDN_PROFILE_TPU_VARIANT=v6e-8 -e GDN_PROFILE_BATCH_SIZE=16 \
		-e GDN_PROFILE_CHUNK_SIZE=128 -e GDN_PROFILE_SEGMENT_SIZE=16 \
		-e GDN_PROFILE_GDN_LAYERS_PER_BLOCK=1 -e GDN_PROFILE_GDN_BLOCK_SIZE=4 \
		-e GDN_PROFILE_ALL_TRANSFORMER=1 -e LEVANTER_FUSED_CE_IMPLEMENTATION=pallas_tpu \
		-e LEVANTER_PALLAS_TPU_BWD_USE_XLA_STREAMING_BENCH=1 \
		-e GDN_TRIANGULAR_SOLVE_PROBE=identity -e EMPTY_VALUE= \
		-- bash -lc "$PROFILE_RAY_DRY"
'

test_expect_success 'dev-tpu-profile: MARIN_PREFIX from the cluster, --no-sync, execute argv' '
	calls_reset &&
	gdnctl dev-tpu-profile --cluster us-east5-a --tpu-name calvinxu-gdn --no-sync >out &&
	expect_call 1 uv run $DEV_TPU --cluster us-east5-a --tpu-name calvinxu-gdn execute \
		"${PROFILE_ENV_DEFAULT[@]}" -e MARIN_PREFIX=gs://marin-us-east5 --no-sync \
		-- "$PROFILE_DEV" &&
	calls_reset &&
	gdnctl dev-tpu-profile --tpu-name me --marin-prefix gs://mine --profile-env A=1 >out &&
	expect_call 1 uv run $DEV_TPU --cluster us-central1 --tpu-name me execute \
		"${PROFILE_ENV_DEFAULT[@]}" -e A=1 -e MARIN_PREFIX=gs://mine -- "$PROFILE_DEV"
'

test_expect_success 'dev-tpu-profile: MARIN_PREFIX for the other tested clusters' '
	calls_reset &&
	gdnctl dev-tpu-profile --cluster us-east5 --tpu-name me --print-only >out &&
	test_grep -- "-e MARIN_PREFIX=gs://marin-us-east5 " out &&
	gdnctl dev-tpu-profile --cluster marin-us-central1 --tpu-name me --print-only >out &&
	test_grep -- "-e MARIN_PREFIX=gs://marin-us-central1 " out &&
	test "$(calls_count)" = 0
'

test_expect_success 'dev-tpu-test: execute with the test command as one argument' '
	calls_reset &&
	gdnctl dev-tpu-test --tpu-name me >out &&
	expect_call 1 uv run $DEV_TPU --cluster us-central1 --tpu-name me execute \
		-e EQX_ON_ERROR=nan -e WANDB_MODE=offline -- "$TEST_BOTH" &&
	test_grep "^\[gdnctl\] remote TPU test setup installs torch" out &&
	calls_reset &&
	FAKE_RC=3 test_expect_code 3 gdnctl dev-tpu-test --tpu-name me --cluster c1 --no-sync \
		--tests kernels --pytest-args "-k chunk -x" >out &&
	expect_call 1 uv run $DEV_TPU --cluster c1 --tpu-name me execute \
		-e EQX_ON_ERROR=nan -e WANDB_MODE=offline --no-sync -- "$TEST_KERNELS_X"
'

test_expect_success 'dev-tpu-allocate: the original argv, exit status dev_tpu.py'"'"'s' '
	calls_reset &&
	FAKE_ALLOC_EXIT=0 gdnctl dev-tpu-allocate --tpu-name me >out 2>&1 &&
	expect_call 1 uv run $DEV_TPU --cluster us-central1 --tpu-name me allocate &&
	test_grep "TPU allocation is active. Press Ctrl-C to release..." out &&
	calls_reset &&
	FAKE_ALLOC_FAIL=c2 test_expect_code 1 gdnctl dev-tpu-allocate --tpu-name me --cluster c2 \
		--tpu-type v5p-8 >out 2>&1 &&
	expect_call 1 uv run $DEV_TPU --cluster c2 --tpu-name me allocate --tpu-type v5p-8
'

test_expect_success 'ray-wait: floats as Python prints them, --tail always passed' '
	calls_reset &&
	gdnctl ray-wait ray-run-demo >out &&
	expect_call 1 uv run $CLUSTER_CLI --cluster us-central1 wait-job ray-run-demo --poll 5.0 \
		--tail 200 &&
	test_grep "ray-run-demo status=SUCCEEDED" out &&
	calls_reset &&
	gdnctl ray-wait --cluster us-east5-a --poll 2 --timeout 123 --show-logs --tail 77 \
		--grep mfu ray-run-demo >out &&
	expect_call 1 uv run $CLUSTER_CLI --cluster us-east5-a wait-job ray-run-demo --poll 2.0 \
		--timeout 123.0 --show-logs --tail 77 --grep mfu
'

test_expect_success 'ray-wait: exit status is cluster.py'"'"'s (2 on its timeout)' '
	calls_reset &&
	FAKE_WAIT_TIMEOUT=1 test_expect_code 2 gdnctl ray-wait --timeout 0.5 ray-run-demo >out 2>&1 &&
	test_grep "Timeout reached" out
'

test_expect_success 'ray-logs: -n and -g before the job id' '
	calls_reset &&
	gdnctl ray-logs ray-run-demo >out &&
	expect_call 1 uv run $CLUSTER_CLI --cluster us-central1 job-logs -n 400 ray-run-demo &&
	calls_reset &&
	gdnctl ray-logs --cluster c1 --tail 5 --grep loss ray-run-demo >out &&
	expect_call 1 uv run $CLUSTER_CLI --cluster c1 job-logs -n 5 -g loss ray-run-demo
'

test_expect_success '--print-only (and --dry-run where free) prints the argv and runs nothing' '
	calls_reset &&
	gdnctl ray-test --print-only >out &&
	gdnctl ray-test --dry-run >>out &&
	gdnctl dev-tpu-test --tpu-name me --dry-run >>out &&
	gdnctl dev-tpu-allocate --tpu-name me --print-only >>out &&
	gdnctl ray-wait --print-only x1 >>out &&
	gdnctl ray-logs --dry-run x1 >>out &&
	gdnctl ray-profile --print-only >>out &&
	gdnctl dev-tpu-profile --tpu-name me --print-only >>out &&
	test "$(calls_count)" = 0 &&
	test_line_count = 8 out &&
	test "$(grep -c -F "[gdnctl] \$ $GDNCTL_UV run " out)" = 8 &&
	echo "[gdnctl] \$ $GDNCTL_UV run $DEV_TPU --cluster us-central1 --tpu-name me allocate" >expect &&
	sed -n 4p out >actual &&
	test_cmp expect actual
'

test_expect_success '--profile-env errors: the original messages, exit 1, nothing runs' '
	calls_reset &&
	test_expect_code 1 gdnctl ray-profile --profile-env MISSING_EQUALS 2>err &&
	echo "[gdnctl] invalid --profile-env entry (expected KEY=VALUE): '"'"'MISSING_EQUALS'"'"'" >expect &&
	test_cmp expect err &&
	test_expect_code 1 gdnctl dev-tpu-profile --tpu-name me --profile-env 1BAD=value 2>err &&
	echo "[gdnctl] invalid --profile-env key '"'"'1BAD'"'"'; expected [A-Za-z_][A-Za-z0-9_]*" >expect &&
	test_cmp expect err &&
	test_expect_code 1 gdnctl ray-profile --profile-env =value 2>err &&
	echo "[gdnctl] invalid --profile-env key '"'"''"'"'; expected [A-Za-z_][A-Za-z0-9_]*" >expect &&
	test_cmp expect err &&
	test "$(calls_count)" = 0
'

test_expect_success 'argparse-like usage errors: exit 2' '
	test_must_fail =2 gdnctl dev-tpu-test 2>err &&
	test_grep "option '"'"'--tpu-name'"'"' is required" err &&
	test_must_fail =2 gdnctl ray-test --tests all 2>err &&
	test_must_fail =2 gdnctl ray-wait 2>err &&
	test_grep "JOB_ID is missing" err &&
	test_must_fail =2 gdnctl ray-test --no_wait 2>err &&
	test "$(calls_count)" = 0
'

test_expect_success 'gdnctl test/profile on the Marin backends build the same argv' '
	calls_reset &&
	gdnctl test --backend ray --no-wait >out &&
	expect_call 1 uv run $RAY_RUN --cluster us-central1 --tpu auto \
		-e EQX_ON_ERROR=nan -e WANDB_MODE=offline --no_wait -- bash -lc "$TEST_BOTH" &&
	test_grep "^\[gdnctl\] submission_id=ray-run-tester-bash-20250101-000000$" out &&
	calls_reset &&
	gdnctl test --backend dev-tpu --tpu-name me --no-sync >out &&
	expect_call 1 uv run $DEV_TPU --cluster us-central1 --tpu-name me execute \
		-e EQX_ON_ERROR=nan -e WANDB_MODE=offline --no-sync -- "$TEST_BOTH"
'

test_expect_success 'gdnctl profile on ray and dev-tpu: the aliases'"'"' argv' '
	calls_reset &&
	gdnctl profile --backend ray >out &&
	expect_call 1 uv run $RAY_RUN --cluster us-central1 --tpu v5p-8 "${PROFILE_ENV_DEFAULT[@]}" \
		-- bash -lc "$PROFILE_RAY" &&
	calls_reset &&
	gdnctl profile --backend dev-tpu --tpu-name me --cluster us-east5-a >out &&
	expect_call 1 uv run $DEV_TPU --cluster us-east5-a --tpu-name me execute \
		"${PROFILE_ENV_DEFAULT[@]}" -e MARIN_PREFIX=gs://marin-us-east5 -- "$PROFILE_DEV"
'

test_done
