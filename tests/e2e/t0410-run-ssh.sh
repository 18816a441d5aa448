#!/usr/bin/env bash
# The ssh backend against a real OpenSSH server on 127.0.0.1: exit codes,
# quoting of every value for the remote shell, rsync sync, a command that
# outlives its timeout (and one interrupted by SIGINT) killed on the
# server, detached jobs with wait/logs/stop, masked secrets, and names
# that must be refused before ssh runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC
sshd_start

R=$TRASH/remote
mkdir -p "$R/wd" "$R/jobs" "$XDG_CONFIG_HOME/gdnctl"
CFG=$XDG_CONFIG_HOME/gdnctl/config.yaml
{
	echo "backends:"
	sshd_config_yaml box "workdir: $R/wd" "jobdir: $R/jobs" "poll: 300ms" "kill_grace: 1s"
} >"$CFG"

gdnctl_bg() {
	# shellcheck disable=SC2086
	${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@" &
}

# On the server: is process $1 gone? (A zombie that init has not reaped yet
# counts as gone: it runs nothing.)
remote_gone() {
	! sshd_ssh "s=\$(ps -o stat= -p $1) && case \$s in Z*) exit 1 ;; esac" 2>/dev/null
}

# a port where nothing listens, held for this script (lib.sh)
test_closed_port || skip_all "cannot hold a closed port on 127.0.0.1"

test_expect_success 'run: the remote exit code, output, workdir' '
	test_expect_code 7 gdnctl run -b box -- sh -c "pwd; echo err >&2; exit 7" >out 2>&1 &&
	test_grep "^\[gdnctl\] \$ ssh -o BatchMode=yes -p $SSHD_PORT -i $SSHD_KEY -l $SSHD_USER .* 127.0.0.1 -- '"'"'cd -- $R/wd && bash -s -- run $R/jobs/[0-9a-f-]* fg sh -c " out &&
	test_grep "^$R/wd$" out &&
	test_grep "^err$" out &&
	test_grep "finished: FAILED (exit 7)" out &&
	gdnctl run -b box -- true &&
	test_expect_code 255 gdnctl run -b box -- sh -c "exit 255" >out 2>&1 &&
	test_grep "finished: FAILED (exit 255)" out
'

test_expect_success 'run: nasty argv words and env values arrive exactly; nothing else runs' '
	gdnctl run -b box -e "V=\$(touch pwned) \`id\` ; rm -rf x it'"'"'s" -- \
		printf "<%s>\n" "; rm -rf x" "\$(touch pwned)" "\`id\`" "--help" "a b" "it'"'"'s" "\"q\"" "*" >out &&
	test_grep "^<; rm -rf x>$" out &&
	test_grep "^<\$(touch pwned)>$" out &&
	test_grep "^<\`id\`>$" out &&
	test_grep "^<--help>$" out &&
	test_grep "^<a b>$" out &&
	test_grep "^<it'"'"'s>$" out &&
	test_grep "^<\"q\">$" out &&
	test_grep "^<\*>$" out &&
	gdnctl run -b box -e "V=\$(touch pwned) \`id\` ; rm -rf x it'"'"'s" -- sh -c "printf \"%s\n\" \"\$V\"" >out &&
	test_grep "^\$(touch pwned) \`id\` ; rm -rf x it'"'"'s$" out &&
	test ! -e "$R/wd/pwned" && test ! -e pwned && test ! -e "$HOME/pwned" && test -d "$R/wd"
'

test_expect_success 'run --shell on the server' '
	gdnctl run -b box --shell "cd .. && basename \$PWD" >out &&
	test_grep "^remote$" out
'

test_expect_success 'a workdir with metacharacters is quoted, not run' '
	wd="$R/\$(touch pwned) a b; it'"'"'s" &&
	mkdir -p "$wd" &&
	gdnctl -c "backends.box.workdir=$wd" run -b box -- pwd >out &&
	test_grep -F -x "$wd" out &&
	test_expect_code 1 gdnctl -c "backends.box.workdir=$R/\`touch pwned\`" run -b box -- pwd >out 2>&1 &&
	test ! -e "$R/pwned" && test ! -e "$wd/pwned" && test ! -e pwned
'

test_expect_success 'a command past its timeout is killed on the server (exit 124)' '
	start=$(date +%s) &&
	test_expect_code 124 gdnctl run -b box --timeout 2s -- \
		sh -c "sleep 60 & echo \$! >$R/bg.pid; echo \$\$ >$R/fg.pid; wait" >out 2>&1 ||
		{ cat out; false; } &&
	test $(($(date +%s) - start)) -lt 15 &&
	test_grep "^\[gdnctl\] stopping job [0-9a-f-]* on box$" out &&
	test_grep "bash -s -- stop $R/jobs/[0-9a-f-]* 1 1'"'"'$" out &&
	test_grep "finished: TIMEOUT (stopped after the timeout of 2s)" out &&
	test -s "$R/fg.pid" && test -s "$R/bg.pid" &&
	remote_gone "$(cat "$R/fg.pid")" &&
	remote_gone "$(cat "$R/bg.pid")" &&
	test_line_count = 0 <(ls "$R/jobs")
'

test_expect_success 'SIGINT during an ssh run: the remote command is killed, exit 130' '
	rm -f "$R/int.pid" &&
	gdnctl_bg run -b box -- sh -c "echo \$\$ >$R/int.pid; exec sleep 60" >out 2>&1
	pid=$!
	for i in $(seq 100); do test -s "$R/int.pid" && break; sleep 0.1; done &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } &&
	test $rc = 130 &&
	remote_gone "$(cat "$R/int.pid")"
'

test_expect_success 'run --no-wait, then wait --show-logs, logs, stop' '
	gdnctl run -b box --no-wait -- sh -c "echo one; sleep 1; echo two" >out &&
	id=$(tail -n1 out) &&
	test -d "$R/jobs/$id" &&
	gdnctl wait -b box --show-logs "$id" >out 2>wait.err &&
	test_grep "^one$" out && test_grep "^two$" out &&
	test_grep "^\[gdnctl\] job $id finished: COMPLETED$" wait.err &&
	gdnctl logs -b box --tail 1 "$id" >out 2>logs.err &&
	test_grep "^two$" out &&
	test_grep "bash -s -- logs $R/jobs/$id 1'"'"'$" logs.err &&

	gdnctl run -b box --no-wait -- sh -c "sleep 60 & echo \$! >$R/bg3.pid; wait" >out &&
	id=$(tail -n1 out) &&
	for i in $(seq 50); do test -s "$R/bg3.pid" && break; sleep 0.1; done &&
	test_expect_code 124 gdnctl wait -b box --timeout 1s "$id" >/dev/null 2>&1 &&
	! remote_gone "$(cat "$R/bg3.pid")" &&
	gdnctl stop -b box "$id" 2>out &&
	test_grep "stopped job $id on box" out &&
	remote_gone "$(cat "$R/bg3.pid")" &&
	test_expect_code 1 gdnctl wait -b box "$id" 2>out &&
	test_grep "finished: STOPPED" out &&
	test_expect_code 4 gdnctl logs -b box 20000101-000000-abcdef 2>err &&
	test_grep "no job" err
'

test_expect_success 'secrets are masked in echoes and --dry-run runs nothing' '
	gdnctl run -b box --dry-run -e HF_TOKEN=hf_abc123 -e DB_PASSWORD="it'"'"'s" -e PLAIN=ok -- touch "$R/made" >out &&
	test_grep "^\[gdnctl\] \$ ssh " out &&
	test_grep "PLAIN=ok" out &&
	test_grep ! -e hf_abc123 -e "it'"'"'\\\\'"'"''"'"'s" -e "it.s" out &&
	test ! -e "$R/made" &&
	GDNCTL_TRACE=1 gdnctl run -b box -e WANDB_API_KEY=wandb_xyz -- true >out 2>err &&
	test_grep ! wandb_xyz out err &&
	for c in wait logs stop; do
		gdnctl $c -b box --dry-run 20000101-000000-abcdef >out &&
		test_grep "^\[gdnctl\] \$ ssh " out || exit 1
	done
'

test_expect_success 'sync: rsync copies the repository to the workdir first' '
	test_create_repo repo &&
	(cd repo && mkdir -p "sub dir" && echo synced >"sub dir/f.txt" && echo big >skip.bin) &&
	{
		echo "backends:"
		sshd_config_yaml sync "workdir: $R/synced/wd" "jobdir: $R/jobs" "sync: rsync" \
			"sync_exclude: [\"*.bin\"]"
	} >repo/gdnctl.yaml &&
	(cd repo && gdnctl run -b sync -- cat "sub dir/f.txt") >out 2>&1 &&
	test_grep "^\[gdnctl\] \$ ssh .* -- '"'"'mkdir -p -- $R/synced/wd'"'"'$" out &&
	test_grep "^\[gdnctl\] \$ rsync -a -s --checksum '"'"'--exclude=\*.bin'"'"' -e '"'"'ssh -o BatchMode=yes -p $SSHD_PORT .*'"'"' $TRASH/repo/ 127.0.0.1:$R/synced/wd/$" out &&
	test_grep "^synced$" out &&
	test -f "$R/synced/wd/README" &&
	test ! -e "$R/synced/wd/skip.bin"
'

test_expect_success 'sync: a file changed to the same size and mtime is copied again' '
	: the second sync of the loop in t0730 once read the baseline file: the agent &&
	: wrote "2.0" over "1.0" within the second rsync had copied, and rsync -a &&
	: compares size and whole-second mtime only &&
	(cd repo && echo 1.0 >speed.txt && touch -d @1700000000 speed.txt &&
		gdnctl run -b sync -- cat speed.txt) >out 2>&1 &&
	test_grep "^1\.0$" out &&
	(cd repo && echo 2.0 >speed.txt && touch -d @1700000000 speed.txt &&
		gdnctl run -b sync -- cat speed.txt) >out 2>&1 &&
	test_grep "^2\.0$" out
'

test_expect_success 'hosts and users that could be options or shell code are refused' '
	for h in "-oProxyCommand=touch $TRASH/pwned" "; touch pwned" "\$(touch pwned)" "\`touch pwned\`" "a b" "--help"; do
		test_expect_code 3 gdnctl -c "backends.box.host=$h" run -b box -- true >out 2>err &&
		test_grep "invalid backends.box.host" err &&
		test_grep ! "\[gdnctl\] \\$" out || exit 1
	done &&
	for u in "-oProxyCommand=x" "\$(touch pwned)" "a b"; do
		test_expect_code 3 gdnctl -c "backends.box.user=$u" run -b box -- true >out 2>err &&
		test_grep "invalid backends.box.user" err || exit 1
	done &&
	test_expect_code 3 gdnctl -c "backends.box.workdir=a
b" run -b box -- true 2>err &&
	test ! -e pwned && test ! -e "$TRASH/pwned"
'

test_expect_success 'a connection that fails is a backend error (exit 4)' '
	port=$CLOSED_PORT &&
	test_expect_code 4 gdnctl -c backends.box.port=$port run -b box -- true >out 2>err &&
	test_grep "failed (exit 255): ssh: connect to host 127.0.0.1 port $port: Connection refused" err &&
	test_expect_code 4 gdnctl -c backends.box.port=$port wait -b box 20000101-000000-abcdef 2>err
'

test_done
