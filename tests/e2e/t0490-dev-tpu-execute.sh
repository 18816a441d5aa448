#!/usr/bin/env bash
# Commands on a dev TPU: through Marin's `dev_tpu.py execute` (the uv
# double runs the command with bash -c, as dev_tpu.py does on the TPU) and
# natively over ssh to the host alias dev-tpu-NAME (a private sshd on
# 127.0.0.1 stands in for the TPU VM). Values with shell metacharacters
# arrive verbatim; exit statuses and timeouts come through.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-marin.sh"
marin_setup
test_create_repo "$TRASH" >/dev/null || exit 1

PRINTER='printf "<%s>" "$X" "$PWD"; echo'

test_expect_success 'Marin execute: the command and -e values arrive verbatim' '
	FAKE_EXEC=1 gdnctl -c "project.test_command=$PRINTER" test --backend dev-tpu --tpu-name me \
		-e "X=\$(touch pwned) \`id\` '"'"'q" >out 2>&1 &&
	test_grep -F "<\$(touch pwned) \`id\` '"'"'q><$TRASH>" out &&
	test_grep "^Syncing local changes to dev-tpu-me...$" out &&
	test ! -e pwned
'

test_expect_success 'Marin execute: exit status, --no-sync from the configuration, timeout' '
	FAKE_EXEC=1 test_expect_code 7 gdnctl -c "project.test_command=exit 7" \
		-c backends.dt.type=dev-tpu -c backends.dt.tpu_name=me -c backends.dt.no_sync=true \
		test --backend dt >out 2>&1 &&
	test_grep ! "Syncing" out &&
	FAKE_EXEC=1 test_expect_code 124 gdnctl -c "project.test_command=sleep 30" \
		test --backend dev-tpu --tpu-name me --timeout 1s >out 2>&1
'

if ! command -v /usr/sbin/sshd >/dev/null 2>&1 || ! command -v ssh >/dev/null 2>&1; then
	test_skip 'execute: ssh' 'OpenSSH is not installed'
	test_done
fi
. "$(dirname "$0")/lib-sshd.sh"
sshd_start

test_expect_success 'setup: the host alias dev-tpu-me and an ssh that reads it' '
	mkdir -p remote &&
	cat >ssh_config <<-EOF &&
	Host dev-tpu-me
	    HostName 127.0.0.1
	    Port $SSHD_PORT
	    User $SSHD_USER
	    IdentityFile $SSHD_KEY
	    UserKnownHostsFile $SSHD_KNOWN_HOSTS
	    StrictHostKeyChecking no
	    LogLevel ERROR
	EOF
	cat >bin/ssh <<-EOF &&
	#!/bin/sh
	exec ssh -F "$TRASH/ssh_config" "\$@"
	EOF
	chmod +x bin/ssh &&
	cat >gdnctl.yaml <<-EOF
	backends:
	  tpu:
	    type: dev-tpu
	    tpu_name: me
	    execute: ssh
	    workdir: $TRASH/remote
	EOF
'

test_expect_success 'execute: ssh runs in the workdir with the values verbatim' '
	calls_reset &&
	GDNCTL_SSH=$TRASH/bin/ssh gdnctl -C "$TRASH" -c "project.test_command=$PRINTER" \
		test --backend tpu -e "X=\$(touch pwned) \`id\` '"'"'q \"d\"" >out 2>&1 &&
	test_grep -F "<\$(touch pwned) \`id\` '"'"'q \"d\"><$TRASH/remote>" out &&
	test_grep -F "[gdnctl] \$ $TRASH/bin/ssh -o BatchMode=yes dev-tpu-me -- " out &&
	test ! -e pwned && test ! -e remote/pwned &&
	test "$(calls_count)" = 0
'

test_expect_success 'execute: ssh exit status and timeout' '
	GDNCTL_SSH=$TRASH/bin/ssh test_expect_code 5 gdnctl -C "$TRASH" \
		-c "project.test_command=exit 5" test --backend tpu >out 2>&1 &&
	GDNCTL_SSH=$TRASH/bin/ssh test_expect_code 124 gdnctl -C "$TRASH" \
		-c "project.test_command=sleep 30" test --backend tpu --timeout 1s >out 2>&1
'

test_done
