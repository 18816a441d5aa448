#!/usr/bin/env bash
# gdnctl run/wait/logs/stop on the local backend: exit codes, --env,
# --shell, --timeout killing the whole process group, --no-wait jobs,
# --dry-run, --json, secrets masked in echoes and traces, SIGINT/SIGTERM,
# and names that must be rejected.
. "$(dirname "$0")/lib.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS

# Is process $1 gone? (A zombie not reaped yet by init counts as gone.)
gone() {
	local s
	s=$(ps -o stat= -p "$1") || return 0
	case $s in Z*) return 0 ;; esac
	return 1
}

test_expect_success 'run: output streams, the exit code is the command'"'"'s' '
	test_expect_code 3 gdnctl run -- sh -c "echo out; echo err >&2; exit 3" >out 2>err &&
	test_grep "^\[gdnctl\] \$ sh -c '"'"'echo out; echo err >&2; exit 3'"'"'$" err &&
	test_grep "^out$" out &&
	test_grep "^err$" out &&
	test_grep "^\[gdnctl\] command on local finished: FAILED (exit 3)$" err &&
	test_line_count = 2 out &&
	gdnctl run -- true >out 2>err &&
	test_line_count = 0 out &&
	test_line_count = 1 err
'

test_expect_success 'run: argv words are not split or expanded' '
	gdnctl run -- printf "<%s>\n" "a b" "\$(touch pwned)" "*" ";" >out &&
	test_grep "^<a b>$" out &&
	test_grep "^<\$(touch pwned)>$" out &&
	test_grep "^<\*>$" out &&
	test ! -e pwned
'

test_expect_success 'run --shell runs a bash -c string (no login shell locally)' '
	gdnctl run --shell "echo \$((6 * 7)) | tr 4 X" >out 2>err &&
	test_grep "^\[gdnctl\] \$ bash -c " err &&
	test_grep "^X2$" out
'

test_expect_success 'run: --env sets variables, exactly' '
	gdnctl run -e "A=x y" -e "B=\$(touch pwned)" -- sh -c "echo \"[\$A][\$B]\"" >out &&
	test_grep "^\[x y\]\[\$(touch pwned)\]$" out &&
	test ! -e pwned
'

test_expect_success 'run: a missing program exits 127 with the reason' '
	test_expect_code 127 gdnctl run -- ./no-such-program >out 2>&1 &&
	test_grep "cannot run '"'"'./no-such-program'"'"'" out
'

test_expect_success 'run --timeout stops the whole process group, exit 124' '
	start=$(date +%s) &&
	test_expect_code 124 gdnctl -c backends.local.kill_grace=1s run --timeout 1s -- sh -c "sleep 60 & echo \$! >bg.pid; sleep 61" 2>out &&
	test $(($(date +%s) - start)) -lt 6 &&
	test_grep "finished: TIMEOUT (stopped after the timeout of 1s)" out &&
	gone "$(cat bg.pid)"
'

test_expect_success 'secrets are masked in the echo and in GDNCTL_TRACE' '
	GDNCTL_TRACE=1 gdnctl run -e HF_TOKEN=hf_sekrit -e MY_PASSWORD="p w" -e PLAIN=shown \
		-- sh -c "test \"\$HF_TOKEN\" = hf_sekrit" >out 2>err &&
	test_grep "HF_TOKEN=\*\*\*" err &&
	test_grep "PLAIN=shown" err &&
	test_grep "trace: spawn:" err &&
	test_grep ! -e sekrit -e "p w" out err
'

test_expect_success 'configured secrets names are masked too' '
	GDNCTL_SECRETS=DB_URL gdnctl run --dry-run -e DB_URL=postgres://u:pw@h -- true >out &&
	test_grep "DB_URL=\*\*\*" out &&
	test_grep ! "pw@h" out
'

test_expect_success 'run --dry-run runs nothing' '
	gdnctl run --dry-run -- touch made >out &&
	test_grep "^\[gdnctl\] \$ touch made$" out &&
	test ! -e made &&
	gdnctl run --no-wait --dry-run -- touch made >out &&
	test_grep "bash -s -- run .* bg touch made$" out &&
	test ! -e made &&
	test ! -d "$HOME/.cache/gdnctl/jobs"
'

test_expect_success 'run --json: the document on stdout, the rest on stderr' '
	test_expect_code 5 gdnctl run --json -- sh -c "echo hi; exit 5" >out 2>err &&
	python3 -c "
import json, sys
d = json.load(open(\"out\"))
assert d[\"schema\"] == \"gdnctl.run.v1\", d
assert d[\"backend\"] == \"local\" and d[\"job_id\"] is None, d
assert d[\"state\"] == \"failed\" and d[\"exit_code\"] == 5 and d[\"native\"] == \"FAILED\", d
" &&
	test_grep "^hi$" err
'

test_expect_success 'run --no-wait, wait --show-logs, logs --tail' '
	gdnctl run --no-wait -- sh -c "echo one; sleep 1; echo two; exit 4" >out &&
	id=$(tail -n1 out) &&
	test_grep "^[0-9]\{8\}-[0-9]\{6\}-[0-9a-f]\{6\}$" out &&
	test_expect_code 1 gdnctl wait --poll 200ms --show-logs "$id" >wait.out 2>wait.err &&
	test_grep "^one$" wait.out &&
	test_grep "^two$" wait.out &&
	test_line_count = 2 wait.out &&
	test_grep "^\[gdnctl\] job $id finished: FAILED (exit 4)$" wait.err &&
	gdnctl logs --tail 1 "$id" >logs.out &&
	test_grep "^two$" logs.out &&
	test_grep ! "^one$" logs.out &&
	gdnctl wait --tail 5 --json "$id" >w.json 2>/dev/null;
	test $? = 1 &&
	python3 -c "
import json
d = json.load(open(\"w.json\"))
assert d[\"schema\"] == \"gdnctl.wait.v1\" and d[\"state\"] == \"failed\" and d[\"exit_code\"] == 4, d
"
'

test_expect_success 'wait --timeout: 124, one progress line, the job keeps running; stop kills it' '
	gdnctl run --no-wait --json -- sh -c "sleep 60 & echo \$! >$TRASH/bg2.pid; sleep 61" >out &&
	id=$(python3 -c "import json; print(json.load(open(\"out\"))[\"job_id\"])") &&
	test_expect_code 124 gdnctl wait --timeout 1s --poll 200ms "$id" >wout 2>werr &&
	test_grep "^\[gdnctl\] waiting for job $id on local (RUNNING) for 0s$" werr &&
	test_line_count = 0 wout &&
	test_line_count = 3 werr &&
	test_grep "timed out after 1s waiting for job $id on local (RUNNING)" werr &&
	! gone "$(cat bg2.pid)" &&
	gdnctl stop "$id" 2>sout &&
	test_grep "stopped job $id on local" sout &&
	gone "$(cat bg2.pid)" &&
	test_expect_code 1 gdnctl wait "$id" 2>wout &&
	test_grep "finished: STOPPED" wout &&
	gdnctl stop "$id" 2>sout &&
	test_grep "had already finished: STOPPED" sout
'

# The binary itself in the background (not the gdnctl shell function), so
# that $! is its pid and signals reach it.
gdnctl_bg() {
	# shellcheck disable=SC2086
	${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@" &
}

test_expect_success 'SIGINT during run stops the command group and exits 130' '
	gdnctl_bg -c backends.local.kill_grace=1s run -- sh -c "sleep 60 & echo \$! >$TRASH/int.pid; sleep 61" >out
	pid=$!
	for i in $(seq 50); do test -s int.pid && break; sleep 0.1; done &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } &&
	test $rc = 130 &&
	gone "$(cat int.pid)"
'

test_expect_success 'SIGTERM during wait exits 143 and leaves the job alone' '
	id=$(gdnctl run --no-wait -- sleep 60 | tail -n1) &&
	test -n "$id" &&
	{ gdnctl_bg wait --poll 100ms "$id" >out 2>err; pid=$!; } &&
	sleep 0.5 &&
	kill -TERM $pid &&
	{ wait $pid; rc=$?; } &&
	test $rc = 143 &&
	test_grep "interrupted while waiting for job $id" err &&
	gdnctl stop "$id" 2>out &&
	test_grep "stopped job" out
'

test_expect_success 'job ids that are not ours are refused before anything runs' '
	for bad in "; rm -rf x" "\$(touch pwned)" "\`id\`" "--help" "a b" "../../etc" "a
b"; do
		test_expect_code 2 gdnctl wait -- "$bad" >out 2>err &&
		test_grep "invalid job id" err &&
		test_grep ! "\[gdnctl\] \\$" out || exit 1
	done &&
	test ! -e pwned &&
	test_expect_code 4 gdnctl logs nosuchjob 2>err &&
	test_grep "no job '"'"'nosuchjob'"'"' on backend '"'"'local'"'"'" err
'

test_expect_success 'usage errors' '
	test_expect_code 2 gdnctl run 2>err &&
	test_grep "nothing to run" err &&
	test_expect_code 2 gdnctl run --shell "x" -- y 2>err &&
	test_expect_code 2 gdnctl run --no-wait --timeout 5s -- true 2>err &&
	test_expect_code 2 gdnctl run -e "1X=y" -- true 2>err &&
	test_expect_code 2 gdnctl wait 2>err &&
	test_expect_code 2 gdnctl wait a b 2>err &&
	test_expect_code 2 gdnctl wait --poll 1ms x 2>err &&
	test_expect_code 2 gdnctl run --backend nope -- true 2>err &&
	test_grep "unknown backend '"'"'nope'"'"' (known: local" err &&
	test_expect_code 2 gdnctl run --backend "-x" -- true 2>err
'

test_expect_success 'configuration: the default backend, workdir, bad keys' '
	mkdir -p wd "$XDG_CONFIG_HOME/gdnctl" &&
	cat >"$XDG_CONFIG_HOME/gdnctl/config.yaml" <<-EOF &&
	backend: here
	backends:
	  here:
	    type: local
	    workdir: $TRASH/wd
	    jobdir: $TRASH/jobs
	EOF
	gdnctl run -- pwd >out &&
	test_grep "^$TRASH/wd$" out &&
	id=$(gdnctl run --no-wait -- true | tail -n1) &&
	test -d "jobs/$id" &&
	gdnctl wait "$id" 2>out &&
	test_grep "finished: COMPLETED" out &&
	test_expect_code 3 gdnctl -c backends.here.type=nope run -- true 2>err &&
	test_expect_code 3 gdnctl -c backends.other.host=x run --backend other -- true 2>err &&
	test_grep "'"'"'backends.other.type'"'"' is not set" err &&
	test_expect_code 3 gdnctl -c "backends.here.workdir=a
b" run -- true 2>err &&
	test_grep "newline" err &&
	rm "$XDG_CONFIG_HOME/gdnctl/config.yaml"
'

# The caller's python3 (a virtual environment first on PATH) is the one the
# user's command runs, although a login shell would put another first: the
# system profile resets PATH for root, and ~/.bash_profile puts a "shim" first.
test_expect_success 'local commands run the python3 first on the caller'"'"'s PATH' '
	mkdir -p venv/bin shim/bin &&
	printf "#!/bin/sh\necho venv-python\n" >venv/bin/python3 &&
	printf "#!/bin/sh\necho shim-python\n" >shim/bin/python3 &&
	chmod +x venv/bin/python3 shim/bin/python3 &&
	echo "PATH=\"$TRASH/shim/bin:\$PATH\"" >"$HOME/.bash_profile" &&
	bash -lc "python3" >login.out &&
	test_grep "^shim-python$" login.out &&
	PATH="$TRASH/venv/bin:$PATH" gdnctl run --shell "python3" >out &&
	test_grep "^venv-python$" out &&
	id=$(PATH="$TRASH/venv/bin:$PATH" gdnctl run --no-wait --shell "python3" | tail -n1) &&
	gdnctl wait --show-logs "$id" >out 2>/dev/null &&
	test_grep "^venv-python$" out &&
	git init -q proj &&
	printf "project:\n  test_command: python3\n  profile_command: python3\n" >proj/gdnctl.yaml &&
	(cd proj && PATH="$TRASH/venv/bin:$PATH" gdnctl test --backend local) >out 2>err &&
	test_grep "^venv-python$" out &&
	(cd proj && PATH="$TRASH/venv/bin:$PATH" gdnctl profile --backend local) >out 2>err &&
	test_grep "^venv-python$" out &&
	rm "$HOME/.bash_profile"
'

test_done
