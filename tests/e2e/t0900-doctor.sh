#!/usr/bin/env bash
# gdnctl doctor: an ssh backend against a real OpenSSH server on 127.0.0.1
# (ok), a port nothing listens on and a host that never answers (FAIL with
# a fix hint, exit 1, within --timeout), programs missing from PATH (FAIL
# naming them), tokens shown as "set (from VAR)" and never by value, a
# configuration error, the agent checks, and --json that parses.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"

unset GDNCTL_BACKEND GDNCTL_SECRETS GDNCTL_SSH GDNCTL_RSYNC GDNCTL_SBATCH GDNCTL_SQUEUE \
	GDNCTL_SACCT GDNCTL_SCONTROL GDNCTL_SCANCEL GDNCTL_UV GDNCTL_RAY GDNCTL_CODEX GDNCTL_CLAUDE \
	HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_TOKEN_PATH HF_HOME WANDB_API_KEY WANDB_BASE_URL NETRC \
	OPENAI_API_KEY CODEX_API_KEY CODEX_HOME ANTHROPIC_API_KEY CLAUDE_CODE_OAUTH_TOKEN \
	CLAUDE_CONFIG_DIR CC TMPDIR
sshd_start

test_closed_port || skip_all "cannot hold a closed port on 127.0.0.1"
DEAD_PORT=$CLOSED_PORT
CFG=$XDG_CONFIG_HOME/gdnctl/config.yaml
mkdir -p "$XDG_CONFIG_HOME/gdnctl"

# A TCP server that accepts connections and never says a word (a hung host).
python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(8)
print(s.getsockname()[1], flush=True)
held = []
while True:
    held.append(s.accept())
' >"$TRASH/mute.port" &
MUTE_PID=$!
test_atexit "kill $MUTE_PID"
test_wait_for_file "$TRASH/mute.port"
MUTE_PORT=$(cat "$TRASH/mute.port")

{
	echo "backends:"
	sshd_config_yaml box
	sshd_config_yaml dead "port: $DEAD_PORT" | sed '/^    port: '"$SSHD_PORT"'$/d'
	sshd_config_yaml mute "port: $MUTE_PORT" | sed '/^    port: '"$SSHD_PORT"'$/d'
	echo "  hpc:"
	echo "    type: slurm"
} >"$CFG"

test_expect_success 'setup: a repository' '
	test_create_repo repo &&
	grep -c "^    port: " "$CFG" >count &&
	echo 3 >expect && test_cmp expect count &&
	test -n "$MUTE_PORT"
'

test_expect_success 'a reachable ssh backend is ok; exit 0' '
	(cd repo && gdnctl doctor -b box --no-agent >../out 2>../err) &&
	test_grep "^ok    backend box: reachable  *$SSHD_USER@127.0.0.1:$SSHD_PORT logged in" out &&
	test_grep "^ok    backend box: programs  .*/ssh$" out &&
	test_grep "^ok    backend box  *type ssh$" out &&
	test_grep "^ok    git  *git version" out &&
	test_grep "^ok    repository  *$TRASH/repo (main at [0-9a-f]\{12\})$" out &&
	test_grep "^ok    repository: clean  *no uncommitted changes$" out &&
	test_grep "^ok    configuration  *$CFG$" out &&
	test_grep "^skip  agent  *--no-agent$" out &&
	test_grep "^\[gdnctl\] [0-9]* ok, [0-9]* warnings\{0,1\}, 0 failed, 1 skipped$" out &&
	test_grep ! "^FAIL" out &&
	test_grep ! "backend hpc" out
'

test_expect_success 'a port nothing listens on: FAIL with a fix hint, exit 1, fast' '
	start=$(date +%s) &&
	(cd repo && test_expect_code 1 gdnctl doctor -b dead --no-agent --timeout 5s >../out 2>../err) &&
	test $(($(date +%s) - start)) -le 6 &&
	test_grep "^FAIL  backend dead: reachable  *ssh exited 255: .*Connection refused" out &&
	test_grep "^      fix: nothing accepts connections on 127.0.0.1 port $DEAD_PORT: check backends.dead.host and .port" out &&
	test_grep "try: ssh -o BatchMode=yes -o ConnectTimeout=5 -p $DEAD_PORT " out &&
	test_grep "1 failed" out
'

test_expect_success 'a host that never answers: FAIL within --timeout' '
	start=$(date +%s) &&
	(cd repo && test_expect_code 1 gdnctl doctor -b mute --no-agent --timeout 2s >../out 2>../err) &&
	elapsed=$(($(date +%s) - start)) &&
	say "mute host: doctor took ${elapsed}s with --timeout 2s" &&
	test "$elapsed" -le 5 &&
	test_grep -E "^FAIL  backend mute: reachable  *(no answer from .127.0.0.1. within 2s|ssh exited 255: .*timed out)" out &&
	test_grep "^      fix: " out
'

test_expect_success 'a key the server refuses, an unknown host key: FAIL with the matching fix' '
	ssh-keygen -q -t ed25519 -N "" -f "$TRASH/other_key" &&
	(cd repo && test_expect_code 1 gdnctl -c "backends.box.identity=$TRASH/other_key" \
		-c "backends.box.ssh_options=IdentitiesOnly=yes,StrictHostKeyChecking=no,UserKnownHostsFile=$SSHD_KNOWN_HOSTS,LogLevel=ERROR" \
		doctor -b box --no-agent >../out 2>../err) &&
	test_grep "^FAIL  backend box: reachable  *ssh exited 255: .*Permission denied" out &&
	test_grep "^      fix: the server refused the login: set backends.box.user and .identity" out &&
	(cd repo && test_expect_code 1 gdnctl \
		-c "backends.box.ssh_options=StrictHostKeyChecking=yes,UserKnownHostsFile=$TRASH/empty_known_hosts" \
		doctor -b box --no-agent >../out 2>../err) &&
	test_grep "^FAIL  backend box: reachable  *ssh exited 255: Host key verification failed" out &&
	test_grep "^      fix: accept the host key once" out
'

test_expect_success 'SIGINT stops the running check at once: skipped, exit 130' '
	start=$(date +%s)
	# shellcheck disable=SC2086
	${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" -C repo doctor -b mute -b box --no-agent \
		--timeout 60s >out 2>err &
	pid=$!
	sleep 1.5 &&
	kill -INT $pid &&
	{ wait $pid; rc=$?; } &&
	test "$rc" = 130 &&
	test $(($(date +%s) - start)) -le 8 &&
	test_grep "^skip  backend mute: reachable  *interrupted$" out &&
	test_grep "^skip  interrupted  *stopped by signal 2" out &&
	test_grep ! "backend box" out
'

test_expect_success 'every configured backend and local by default' '
	(cd repo && test_expect_code 1 gdnctl doctor --no-agent --timeout 3s >../out 2>../err) &&
	for b in box dead mute hpc local; do
		test_grep "^[a-zA-Z]*  *backend $b  *type" out || return 1
	done &&
	test_grep "^ok    backend local: programs  .*/bash$" out
'

test_expect_success 'programs missing from PATH: FAIL naming them, checks that need them skipped' '
	mkdir -p tools &&
	for p in git bash; do ln -sf "$(command -v $p)" tools/$p || return 1; done &&
	# the binary itself (not through $GDNCTL_TEST_EXEC_PREFIX, which this PATH would hide)
	(cd repo && PATH=$TRASH/tools test_expect_code 1 "$GDNCTL_BIN" doctor -b hpc -b box \
		--no-agent >../out 2>../err) &&
	test_grep "^FAIL  backend hpc: programs  *not found in PATH: .sbatch., .squeue., .sacct., .scancel., .scontrol.$" out &&
	test_grep "^      fix: install the Slurm client tools.*set programs.sbatch, programs.squeue, programs.sacct, programs.scancel, programs.scontrol to the program.s path$" out &&
	test_grep "^skip  backend hpc: controller  *scontrol is missing$" out &&
	test_grep "^FAIL  backend box: programs  *not found in PATH: .ssh.$" out &&
	test_grep "^skip  backend box: reachable" out &&
	test_grep "^warn  c compiler  *.cc. not found in PATH$" out &&
	test_grep "^ok    git " out
'

test_expect_success 'a configured program name that does not exist is named' '
	(cd repo && test_expect_code 1 gdnctl -c programs.ssh=ssh-gdnctl-missing doctor -b box \
		--no-agent >../out 2>../err) &&
	test_grep "^FAIL  backend box: programs  *not found in PATH: .ssh-gdnctl-missing.$" out &&
	test_grep "or set programs.ssh to the program.s path" out
'

test_expect_success 'tokens: "set (from VAR)", the value appears nowhere' '
	(cd repo && HF_TOKEN=secret-value-hf-1234 WANDB_API_KEY=secret-value-wandb-5678 GDNCTL_TRACE=1 \
		gdnctl doctor -b box -b local --no-agent >../out 2>../err) &&
	test_grep "^ok    token: hf  *set (from HF_TOKEN)$" out &&
	test_grep "^ok    token: wandb  *set (from WANDB_API_KEY)$" out &&
	(cd repo && HF_TOKEN=secret-value-hf-1234 WANDB_API_KEY=secret-value-wandb-5678 \
		gdnctl doctor -b local --no-agent --json >../json 2>>../err) &&
	test_grep "\"detail\": \"set (from HF_TOKEN)\"" json &&
	test_grep ! "secret-value" out err json
'

test_expect_success 'tokens: absent is a warning with a fix; a netrc entry counts for W&B' '
	(cd repo && gdnctl doctor -b local --no-agent >../out 2>../err) &&
	test_grep "^warn  token: hf  *not set" out &&
	test_grep "^      fix: export HF_TOKEN" out &&
	test_grep "^warn  token: wandb  *not set" out &&
	printf "machine api.wandb.ai\n  login user\n  password netrc-secret-9999\n" >"$HOME/.netrc" &&
	(cd repo && gdnctl doctor -b local --no-agent >../out 2>../err) &&
	rm "$HOME/.netrc" &&
	test_grep "^ok    token: wandb  *set (from netrc machine api.wandb.ai)$" out &&
	test_grep ! "netrc-secret" out err
'

test_expect_success '--json parses, matches the exit status and the text' '
	(cd repo && test_expect_code 1 gdnctl doctor -b box -b dead --no-agent --json >../json 2>../err) &&
	python3 -m json.tool json >/dev/null &&
	python3 - json <<-EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["schema"] == "gdnctl.doctor.v1", d
	assert d["ok"] is False
	names = {c["name"]: c for c in d["checks"]}
	assert names["backend box: reachable"]["status"] == "ok", names
	assert names["backend box: reachable"]["fix"] is None
	dead = names["backend dead: reachable"]
	assert dead["status"] == "fail" and "Connection refused" in dead["detail"], dead
	assert dead["fix"].startswith("nothing accepts connections"), dead
	assert all(c["status"] in ("ok", "warn", "fail", "skip") for c in d["checks"])
	assert d["counts"]["fail"] == sum(c["status"] == "fail" for c in d["checks"]) == 1
	EOF
	test_grep ! "gdnctl" err
'

test_expect_success 'a configuration error is a FAIL naming file:line; backends are skipped' '
	printf "bogus_key: 1\n" >repo/gdnctl.yaml &&
	(cd repo && test_expect_code 1 gdnctl doctor --no-agent >../out 2>../err) &&
	rm repo/gdnctl.yaml &&
	test_grep "^FAIL  configuration  *$TRASH/repo/gdnctl.yaml:1:1: .*bogus_key" out &&
	test_grep "^skip  backends  *not checked: the configuration did not load$" out &&
	test_grep "^warn  repository: clean " out
'

test_expect_success 'an unknown backend name is a FAIL' '
	(cd repo && test_expect_code 1 gdnctl doctor -b nosuch --no-agent >../out 2>../err) &&
	test_grep "^FAIL  backend nosuch  *" out &&
	test_grep "^      fix: define it under backends:" out
'

test_expect_success 'outside a repository: a warning, not a failure' '
	mkdir -p plain &&
	(cd plain && gdnctl doctor -b local --no-agent >../out 2>../err) &&
	test_grep "^warn  repository  *.$TRASH/plain. is not inside a git repository$" out &&
	test_grep "^ok    configuration " out
'

test_expect_success 'the agent: command driver; a missing binary fails with a fix' '
	(cd repo && gdnctl doctor -b local --agent command --agent-cmd "cat {prompt_file}" >../out 2>../err) &&
	test_grep "^ok    agent: command  .*/cat$" out &&
	test_grep "^skip  agent: command login" out &&
	(cd repo && test_expect_code 1 gdnctl doctor -b local --agent codex \
		--agent-bin "$TRASH/no/codex" >../out 2>../err) &&
	test_grep "^FAIL  agent: codex  *codex binary .$TRASH/no/codex. does not exist" out &&
	test_grep "^      fix: install the Codex CLI" out &&
	(cd repo && test_expect_code 1 gdnctl doctor -b local --agent command >../out 2>../err) &&
	test_grep "^FAIL  agent: command  *the command driver needs a command line" out
'

# A stand-in for Claude Code (the real one needs an account): answers --version.
mkdir -p "$TRASH/bin"
cat >"$TRASH/bin/claude" <<'EOF'
#!/bin/sh
[ -n "${FAKE_HANG:-}" ] && exec sleep 60
[ "$1" = --version ] && { echo "2.0.0 (Claude Code)"; exit 0; }
exit 3
EOF
chmod +x "$TRASH/bin/claude"

test_expect_success 'the agent: claude --version and its login (presence only)' '
	(cd repo && gdnctl doctor -b local --agent claude --agent-bin "$TRASH/bin/claude" \
		>../out 2>../err) &&
	test_grep "^ok    agent: claude  *2.0.0 (Claude Code) ($TRASH/bin/claude)$" out &&
	test_grep "^warn  agent: claude login  *no ANTHROPIC_API_KEY" out &&
	(cd repo && ANTHROPIC_API_KEY=sk-ant-secret-0000 gdnctl doctor -b local --agent claude \
		--agent-bin "$TRASH/bin/claude" >../out 2>../err) &&
	test_grep "^ok    agent: claude login  *set (from ANTHROPIC_API_KEY)$" out &&
	test_grep ! "sk-ant-secret" out err &&
	mkdir -p "$HOME/.claude" && echo "{}" >"$HOME/.claude/.credentials.json" &&
	(cd repo && gdnctl doctor -b local --agent claude --agent-bin "$TRASH/bin/claude" \
		>../out 2>../err) &&
	rm -r "$HOME/.claude" &&
	test_grep "^ok    agent: claude login  *credentials file $HOME/.claude/.credentials.json$" out
'

test_expect_success 'the agent: a --version that hangs is stopped at --timeout' '
	start=$(date +%s) &&
	(cd repo && FAKE_HANG=1 test_expect_code 1 gdnctl doctor -b local --agent claude \
		--agent-bin "$TRASH/bin/claude" --timeout 1s >../out 2>../err) &&
	test $(($(date +%s) - start)) -le 4 &&
	test_grep "^FAIL  agent: claude  *.$TRASH/bin/claude --version. failed: no answer within 1s$" out
'

CODEX_BIN=${GDNCTL_TEST_CODEX_BIN:-$(ls "${GDNCTL_TEST_TOOLS:-/opt/gdnctl-test-tools}"/codex-*/node_modules/.bin/codex 2>/dev/null | tail -n 1)}
if [ -n "$CODEX_BIN" ] && [ -x "$CODEX_BIN" ]; then
	test_expect_success 'the agent: the real Codex CLI answers --version; auth file counts' '
		(cd repo && gdnctl doctor -b local --agent-bin "$CODEX_BIN" >../out 2>../err) &&
		test_grep "^ok    agent: codex  *codex-cli [0-9.]* ($CODEX_BIN)$" out &&
		test_grep "^warn  agent: codex login  *no CODEX_API_KEY/OPENAI_API_KEY and no $HOME/.codex/auth.json$" out &&
		mkdir -p "$HOME/.codex" && echo "{}" >"$HOME/.codex/auth.json" &&
		(cd repo && gdnctl doctor -b local --agent-bin "$CODEX_BIN" >../out 2>../err) &&
		test_grep "^ok    agent: codex login  *auth file $HOME/.codex/auth.json$" out
	'
else
	test_skip 'the agent: the real Codex CLI answers --version' \
		'no Codex CLI installed (bash .ci/setup test installs one; or set GDNCTL_TEST_CODEX_BIN)'
fi

test_expect_success 'disk space under --min-free is a warning with a fix; exit 0' '
	(cd repo && gdnctl doctor -b local --no-agent --min-free 1000000T --log-dir "$TRASH/logs/x" \
		>../out 2>../err) &&
	test_grep "^warn  disk: log dir  *.* free of .* at $TRASH$" out &&
	test_grep "^warn  disk: tmp  *.* free of .* at /tmp$" out &&
	test_grep "^      fix: free space there (less than 976.6 PiB)" out &&
	(cd repo && gdnctl doctor -b local --no-agent --min-free 1K >../out 2>../err) &&
	test_grep "^ok    disk: log dir  *.* at $TRASH/repo/.git$" out
'

test_expect_success 'usage errors exit 2' '
	test_expect_code 2 gdnctl doctor --min-free lots 2>err &&
	test_grep "invalid size .lots." err &&
	test_expect_code 2 gdnctl doctor --timeout 0 2>err &&
	test_expect_code 2 gdnctl doctor --agent gemini 2>err &&
	test_expect_code 2 gdnctl doctor extra 2>err
'

test_done
