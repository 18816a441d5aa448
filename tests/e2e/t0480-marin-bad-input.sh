#!/usr/bin/env bash
# Bad input to the Marin commands and aliases: cluster, TPU and job names
# with shell metacharacters, spaces, quotes, newlines or a leading '-' are
# refused with a clear one-line error before anything runs (the doubles
# record nothing, no file appears, nothing is deleted); secrets given with
# --env / --profile-env or named in `secrets` are masked in echoed
# commands, GDNCTL_TRACE and error messages.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
marin_setup

BAD_NAMES=('; rm -rf x' '$(touch pwned)' '`id`' '--help' 'a b' "a'b" 'a"b' $'a\nb' '-x')

test_expect_success 'setup: a file that must survive' '
	mkdir x && echo keep >x/file
'

# try CMD ARGS...: must exit 2 with one "[gdnctl] error: invalid ..." line first
# (read by the shell: this runs 150 times).
try() {
	local first=
	test_must_fail =2 gdnctl "$@" >out 2>err &&
	{ IFS= read -r first <err || [ -n "$first" ]; } &&
	case $first in "[gdnctl] error: invalid "*) ;; *) false ;; esac || {
		echo "no 'invalid' error for: $*"
		cat err
		return 1
	}
}

for bad in "${BAD_NAMES[@]}"; do
	shown=$(printf %q "$bad")
	test_expect_success "refused before anything runs: $shown" '
		try ray-test --cluster "$bad" &&
		try ray-test --tpu "$bad" &&
		try ray-profile --tpu "$bad" &&
		try dev-tpu-test --tpu-name "$bad" &&
		try dev-tpu-profile --tpu-name me --cluster "$bad" &&
		try dev-tpu-allocate --tpu-name "$bad" &&
		try ray-wait -- "$bad" &&
		try ray-logs --cluster "$bad" job1 &&
		try test --cluster "$bad" &&
		try test --backend dev-tpu --tpu-name "$bad" &&
		try profile --backend dev-tpu --tpu-name me --cluster "$bad" &&
		try allocate --tpu-name "$bad" &&
		try allocate --tpu-name me --fallback-cluster "$bad" &&
		test_must_fail =3 gdnctl -c "backends.ray.cluster=$bad" test 2>err &&
		test_grep "invalid cluster" err &&
		test_must_fail =3 gdnctl -c "backends.dev-tpu.tpu_name=$bad" allocate 2>err &&
		test_must_fail gdnctl wait --backend ray -- "$bad" 2>err &&
		test_must_fail gdnctl stop --backend ray -- "$bad" 2>err &&
		test "$(calls_count)" = 0 &&
		test ! -e pwned && test -f x/file
	'
done

test_expect_success 'a name in an error is one line, control characters escaped' '
	test_must_fail =2 gdnctl ray-test --cluster "$(printf "a\nb")" 2>err &&
	test_line_count = 2 err &&
	test_grep "invalid cluster '"'"'a\\\\nb'"'"'" err
'

test_expect_success '--profile-env and --env secrets are masked in echoed commands' '
	gdnctl ray-profile --print-only --profile-env HF_TOKEN=hf_abc123secret \
		--profile-env WANDB_API_KEY=wandb_456secret >out &&
	test_grep -F -- "-e HF_TOKEN=*** -e WANDB_API_KEY=***" out &&
	gdnctl test --dry-run -e MY_PASSWORD=pw_789secret >>out &&
	gdnctl test --backend dev-tpu --tpu-name me --dry-run -e GH_TOKEN=gh_000secret >>out &&
	test_grep ! "secret" out &&
	test "$(calls_count)" = 0
'

test_expect_success 'names listed in secrets are masked too, also inside command strings' '
	gdnctl -c secrets=DEPLOY_CRED -c "project.test_command=deploy --cred cred_111secret" \
		test --backend ray --dry-run -e DEPLOY_CRED=cred_111secret >out &&
	test_grep -F -- "-e DEPLOY_CRED=***" out &&
	test_grep -F "deploy --cred " out &&
	test_grep ! "cred_111secret" out
'

test_expect_success 'GDNCTL_TRACE masks secrets in every spawn' '
	calls_reset &&
	GDNCTL_TRACE=1 gdnctl ray-profile --no-wait --profile-env HF_TOKEN=hf_222secret >out 2>err &&
	test_grep "trace: spawn: .*HF_TOKEN=\*\*\*" err &&
	test_grep ! "hf_222secret" err out &&
	GDNCTL_TRACE=1 gdnctl test -e HF_TOKEN=hf_333secret >out 2>err &&
	test_grep "trace: spawn: " err &&
	test_grep ! "hf_333secret" err out
'

test_expect_success 'secrets are masked in error messages and in the tools'"'"' output' '
	FAKE_RC=1 test_must_fail =4 gdnctl -c secrets=DEPLOY_CRED \
		-c "project.test_command=deploy --cred cred_444secret" \
		test --backend ray --no-wait -e DEPLOY_CRED=cred_444secret >out 2>err &&
	test_grep "error: submitting the job on ray failed (exit 1)" err &&
	test_grep ! "cred_444secret" err out
'

test_expect_success 'nothing ran that should not have' '
	test ! -e pwned && test -f x/file
'

test_done
