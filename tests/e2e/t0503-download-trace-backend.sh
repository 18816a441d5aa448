#!/usr/bin/env bash
# download-trace BACKEND:PATH: traces copied back from a real OpenSSH
# server (the ssh backend's own options, rsync over ssh, names quoted for
# the remote shell, a glob matched here), from a real Slurm job's output
# on the shared file system (and over ssh from the "login host" when the
# path is not visible here), and from the local backend; .part staging,
# no second copy of a file already there, --pattern, --include-xplane,
# --dry-run, --json, a missing path, a backend that cannot copy.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC
command -v rsync >/dev/null 2>&1 || skip_all "rsync is not installed"
sshd_start

R=$TRASH/remote
mkdir -p "$R/wd/traces/sub" "$R/jobs" "$XDG_CONFIG_HOME/gdnctl"
CFG=$XDG_CONFIG_HOME/gdnctl/config.yaml
{
	echo "backends:"
	sshd_config_yaml box "workdir: $R/wd" "jobdir: $R/jobs"
	cat <<-EOF
	  ray1:
	    type: ray
	  here:
	    type: local
	    workdir: $R/wd
	  hpc:
	    type: slurm
	    workdir: $R/wd
	    jobdir: $R/jobs
	EOF
	cat <<-EOF
	  tpu:
	    type: dev-tpu
	    tpu_name: gdn1
	    workdir: $R/wd
	EOF
	# a Slurm cluster whose shared file system is seen here only through its login host
	sshd_config_yaml far "workdir: $R/wd" "jobdir: $R/jobs" | sed "s/type: ssh/type: slurm/"
} >"$CFG"

printf 'one' | gzip >"$R/wd/traces/a.trace.json.gz"
printf 'two' | gzip >"$R/wd/traces/sub/b.trace.json.gz"
printf 'x' >"$R/wd/traces/c.xplane.pb"
printf 'y' >"$R/wd/traces/notes.txt"
printf 'q' | gzip >"$R/wd/traces/it's \$(touch PWNED) a.trace.json.gz"

# a port where nothing listens, held for this script (lib.sh)
test_closed_port || skip_all "cannot hold a closed port on 127.0.0.1"

test_expect_success 'ssh: a directory, filtered by the default pattern, staged and renamed' '
	gdnctl download-trace box:traces --output-dir got >out 2>err &&
	test_grep "^\[gdnctl\] \$ ssh -o BatchMode=yes -p $SSHD_PORT -i $SSHD_KEY -l $SSHD_USER .* 127.0.0.1 -- .cd -- $R/wd || exit 3; if test -d traces; then" err &&
	test_grep "^\[gdnctl\] \$ rsync -s -t --partial --files-from=$TRASH/got/.gdnctl-part.list -e .ssh -o BatchMode=yes -p $SSHD_PORT .* 127.0.0.1:$R/wd/traces/ $TRASH/got/.gdnctl-part/$" err &&
	test_grep "^\[gdnctl\] downloading 3 files to $TRASH/got$" out &&
	test_grep "^\[gdnctl\] a.trace.json.gz -> $TRASH/got/a.trace.json.gz$" out &&
	test_grep "^\[gdnctl\] sub/b.trace.json.gz -> $TRASH/got/sub/b.trace.json.gz$" out &&
	test "$(gzip -dc got/a.trace.json.gz)" = one &&
	test "$(gzip -dc got/sub/b.trace.json.gz)" = two &&
	test "$(gzip -dc "got/it'"'"'s \$(touch PWNED) a.trace.json.gz")" = q &&
	test ! -e got/c.xplane.pb && test ! -e got/notes.txt &&
	test ! -e got/.gdnctl-part && test ! -e got/.gdnctl-part.list &&
	test ! -e "$R/wd/PWNED" && test ! -e PWNED && test ! -e "$HOME/PWNED" &&
	test "$(stat -c %Y got/a.trace.json.gz)" = "$(stat -c %Y "$R/wd/traces/a.trace.json.gz")"
'

test_expect_success 'ssh: a file already there (same size and time) is not copied again' '
	gdnctl download-trace box:traces --output-dir got >out 2>err &&
	test_grep ! "rsync" err &&
	test_grep "^\[gdnctl\] a.trace.json.gz -> $TRASH/got/a.trace.json.gz$" out &&
	touch -d "2001-01-01" got/a.trace.json.gz &&
	gdnctl download-trace box:traces --output-dir got >out 2>err &&
	test_grep "rsync" err &&
	test "$(gzip -dc got/a.trace.json.gz)" = one
'

test_expect_success 'ssh: a glob (matched here), --include-xplane, --pattern, a single file' '
	gdnctl download-trace "box:traces/*.trace.json.gz" --output-dir g1 >out 2>err &&
	test -e g1/a.trace.json.gz && test ! -e g1/sub &&
	test_grep "maxdepth 1" err &&
	gdnctl download-trace "box:traces/**" --include-xplane --output-dir g2 >out 2>err &&
	test -e g2/sub/b.trace.json.gz && test -e g2/c.xplane.pb && test ! -e g2/notes.txt &&
	gdnctl download-trace box:traces --pattern "notes" --output-dir g3 >out 2>err &&
	test "$(cat g3/notes.txt)" = y && test_line_count = 1 <(find g3 -type f) &&
	gdnctl download-trace box:traces/sub/b.trace.json.gz --output-dir g4 >out 2>err &&
	test "$(gzip -dc g4/b.trace.json.gz)" = two &&
	gdnctl download-trace "box:$R/wd/traces/sub" --output-dir g5 >out 2>err &&
	test -e g5/b.trace.json.gz
'

test_expect_success 'ssh: --dry-run lists and copies nothing; --json' '
	gdnctl download-trace box:traces --dry-run --output-dir dry >out 2>err &&
	test_grep "^\[gdnctl\] would download sub/b.trace.json.gz (" out &&
	test ! -e dry &&
	gdnctl download-trace box:traces --json --output-dir js >out 2>err &&
	jq -e ".schema == \"gdnctl.download_trace.v1\" and .backend == \"box\" and .ok and (.files | length) == 3 and .files[0].state == \"downloaded\"" out &&
	test_grep ! "gdnctl" err
'

test_expect_success 'a missing path, an unreachable host, a backend that cannot copy' '
	test_expect_code 1 gdnctl download-trace box:nope --output-dir m >out 2>err &&
	test_grep "^\[gdnctl\] error: no such file or directory .nope. on box under $R/wd$" err &&
	test_expect_code 4 gdnctl -c backends.box.port=$CLOSED_PORT download-trace box:traces >out 2>err &&
	test_grep "error: listing .traces. on backend .box. failed (exit 255): .*Connection refused" err &&
	test_expect_code 2 gdnctl download-trace ray1:traces >out 2>err &&
	test_grep "backend .ray1. (type ray) cannot copy files back" err &&
	test_must_fail gdnctl download-trace nosuch:traces >out 2>err
'

test_expect_success '--deadline stops the copy at once (exit 124)' '
	printf "#!/bin/sh\nsleep 30\nexec ssh \"\$@\"\n" >slow-ssh && chmod +x slow-ssh &&
	start=$(date +%s) &&
	test_expect_code 124 env GDNCTL_SSH=$TRASH/slow-ssh "$GDNCTL_BIN" download-trace box:traces \
		--deadline 1s --output-dir dl >out 2>err &&
	test $(($(date +%s) - start)) -lt 10 &&
	test_grep "error: timed out listing .traces. on box" err &&
	test ! -e dl
'

test_expect_success 'dev-tpu: over ssh to the dev-tpu-NAME alias dev_tpu.py writes' '
	: an ssh that knows the alias, as the ssh config dev_tpu.py writes would &&
	cat >tpu-ssh <<-EOF &&
	#!/bin/sh
	for a; do shift; [ "\$a" = dev-tpu-gdn1 ] && a=127.0.0.1; set -- "\$@" "\$a"; done
	echo "\$*" >>"$TRASH/tpu-ssh.log"
	exec ssh -p $SSHD_PORT -i $SSHD_KEY -l $SSHD_USER -o StrictHostKeyChecking=no \
		-o UserKnownHostsFile=$SSHD_KNOWN_HOSTS -o LogLevel=ERROR "\$@"
	EOF
	chmod +x tpu-ssh &&
	GDNCTL_SSH=$TRASH/tpu-ssh gdnctl download-trace "tpu:traces/sub/*.gz" --output-dir t1 >out 2>err ||
		{ cat err; false; } &&
	test_grep "^\[gdnctl\] \$ $TRASH/tpu-ssh -o BatchMode=yes dev-tpu-gdn1 -- .cd -- $R/wd || exit 3;" err &&
	test_grep "^\[gdnctl\] \$ rsync -s -t --partial --files-from=.* -e .$TRASH/tpu-ssh -o BatchMode=yes. dev-tpu-gdn1:$R/wd/traces/sub/ $TRASH/t1/.gdnctl-part/$" err &&
	test "$(gzip -dc t1/b.trace.json.gz)" = two &&
	test_grep "127.0.0.1 rsync --server --sender" tpu-ssh.log
'

test_expect_success 'local backend: read in place, FILE.part renamed into place' '
	gdnctl download-trace here:traces --output-dir loc >out 2>err &&
	test "$(gzip -dc loc/sub/b.trace.json.gz)" = two &&
	test_line_count = 3 <(find loc -type f)
'

test_expect_success 'slurm: read from the shared file system when it is visible here' '
	gdnctl download-trace hpc:traces --output-dir s1 >out 2>err &&
	test_grep ! "ssh" err &&
	test "$(gzip -dc s1/a.trace.json.gz)" = one
'

# gdnctl in a mount namespace where the workdir is hidden by an empty tmpfs:
# sshd (outside it) still sees the files, as a login host would
hidden_gdnctl() {
	unshare -m sh -c 'mount -t tmpfs none "$1" && shift && exec "$@"' - "$R/wd" "$GDNCTL_BIN" "$@"
}

test_expect_success 'slurm: not visible here: over ssh from the login host (backends.NAME.host)' '
	if ! hidden_gdnctl version >/dev/null 2>&1; then
		say "# skipped: no mount namespace (unshare -m) here"
	else
		hidden_gdnctl download-trace far:traces --output-dir s2 >out 2>err &&
		test_grep "^\[gdnctl\] \$ ssh -o BatchMode=yes -p $SSHD_PORT -i $SSHD_KEY -l $SSHD_USER .* 127.0.0.1 -- .cd -- $R/wd || exit 3;" err &&
		test_grep "^\[gdnctl\] \$ rsync -s -t --partial" err &&
		test "$(gzip -dc s2/sub/b.trace.json.gz)" = two &&
		test_expect_code 1 hidden_gdnctl download-trace hpc:traces >out 2>err &&
		test_grep "error: .$R/wd/traces. is not on this machine, and backends.hpc.host (the login host to copy from) is not set" err
	fi
'

test_done
