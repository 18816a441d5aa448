#!/usr/bin/env bash
# backends.NAME.ssh_options: the documented Key=value items and the forms
# copied from ssh command lines ("-o", "Key=value" as two items,
# "-oKey=value", "-o Key=value") all become one `-o Key=value` each; any
# other flag is refused with the file:line:col of the item (exit 3). No ssh
# runs: --dry-run prints the argv.
. "$(dirname "$0")/lib.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC

test_expect_success 'setup' '
	test_create_repo repo &&
	cat >repo/gdnctl.yaml <<-\EOF
	backends:
	  box:
	    type: ssh
	    host: example.org
	    ssh_options: ["-o", "StrictHostKeyChecking=accept-new", "-oConnectTimeout=5",
	                  "ServerAliveInterval=10", "-o Compression=no"]
	  plain:
	    type: ssh
	    host: example.org
	    ssh_options: [StrictHostKeyChecking=accept-new]
	  flag:
	    type: ssh
	    host: example.org
	    ssh_options:
	      - ConnectTimeout=5
	      - -v
	  dangling:
	    type: ssh
	    host: example.org
	    ssh_options: [ConnectTimeout=5, -o]
	EOF
'

test_expect_success 'both forms give one -o per option, never -o -o' '
	(cd repo && gdnctl run -b box --dry-run -- true >../out 2>&1) &&
	test_grep -F "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new -o ConnectTimeout=5 -o ServerAliveInterval=10 -o Compression=no example.org -- " out &&
	test_grep ! -e "-o -o" out &&
	(cd repo && gdnctl run -b plain --dry-run -- true >../out 2>&1) &&
	test_grep -F "ssh -o BatchMode=yes -o StrictHostKeyChecking=accept-new example.org -- " out
'

test_expect_success 'another flag is refused with its file:line:col (exit 3)' '
	(cd repo && test_must_fail =3 gdnctl run -b flag --dry-run -- true >../out 2>../err) &&
	echo "[gdnctl] error: $TRASH/repo/gdnctl.yaml:15:7: '"'"'backends.flag.ssh_options'"'"' item '"'"'-v'"'"' is not an ssh -o option: write Key=value (StrictHostKeyChecking=accept-new)" >expect &&
	test_cmp expect err &&
	(cd repo && test_must_fail =3 gdnctl run -b dangling --dry-run -- true 2>../err) &&
	test_grep "gdnctl.yaml:[0-9]*:[0-9]*: .backends.dangling.ssh_options. ends with .-o. without its value" err
'

test_done
