# A private OpenSSH server for end-to-end tests (sourced after lib.sh):
# sshd on 127.0.0.1 with a port chosen by the OS, its own host key, a
# generated user key and configuration, every file under $TRASH/sshd.
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/lib-sshd.sh"
#   sshd_start         # skips or fails the script; sets the variables below
#
#   SSHD_PORT  SSHD_USER  SSHD_KEY (client private key)  SSHD_KNOWN_HOSTS
#   sshd_config_yaml NAME [EXTRA_YAML_LINES]  prints a gdnctl backend section
#   sshd_ssh CMD...    runs CMD on the server with the test key (checks
#                      done "on the remote side")
#
# When OpenSSH is not installed the script is skipped outside CI and fails
# in CI ($CI = true). An sshd that does not start fails the script with its
# log. sshd is stopped at exit by its pid.

SSHD_DIR=$TRASH/sshd

_sshd_fail() { test_bail_out "$*" "$SSHD_DIR/log"; }

# The remote user's home is the test's own ($HOME from lib.sh), as on the
# client side: the remote login shell (gdnctl runs `bash -lc` there) then
# reads no profile of the machine's user, which can take seconds (a version
# manager's init) and differs from machine to machine.
_sshd_config() {
	cat <<EOF
Port $SSHD_PORT
ListenAddress 127.0.0.1
HostKey $SSHD_DIR/host_key
PidFile $SSHD_DIR/pid
AuthorizedKeysFile $SSHD_DIR/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM no
PrintMotd no
Subsystem sftp internal-sftp
SetEnv HOME=$HOME
EOF
}

sshd_start() {
	local sshd=/usr/sbin/sshd
	test_need_programs OpenSSH "bash .ci/setup test installs it" "$sshd" ssh ssh-keygen
	mkdir -p "$SSHD_DIR" && chmod 700 "$SSHD_DIR" || _sshd_fail "cannot create $SSHD_DIR"
	# the privilege separation directory sshd insists on
	[ -d /run/sshd ] || mkdir -p /run/sshd 2>/dev/null ||
		_sshd_fail "sshd needs /run/sshd and it cannot be created (not root?)"
	ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/host_key" >/dev/null &&
		ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/id" >/dev/null &&
		cp "$SSHD_DIR/id.pub" "$SSHD_DIR/authorized_keys" ||
		_sshd_fail "ssh-keygen failed"
	SSHD_USER=$(id -un)
	SSHD_KEY=$SSHD_DIR/id
	SSHD_KNOWN_HOSTS=$SSHD_DIR/known_hosts
	# The port the OS gave another socket a moment ago can be taken again
	# before sshd binds it (another test's server, an outgoing connection):
	# sshd, which daemonizes first, then logs "Address already in use" and
	# exits; it is started again on a new port.
	local attempt
	test_atexit "test_stop_pidfile '$SSHD_DIR/pid'"
	for attempt in 1 2 3 4 5; do
		SSHD_PORT=$(test_free_port)
		_sshd_config >"$SSHD_DIR/sshd_config"
		: >"$SSHD_DIR/log"
		"$sshd" -f "$SSHD_DIR/sshd_config" -E "$SSHD_DIR/log" >"$SSHD_DIR/sshd.out" 2>&1 ||
			_sshd_fail "sshd did not start (exit $?): $(cat "$SSHD_DIR/sshd.out")"
		test_wait_until 10 _sshd_up
		grep -q "Address already in use" "$SSHD_DIR/log" || break
	done
	if sshd_ssh true 2>/dev/null; then
		say "sshd: listening on 127.0.0.1:$SSHD_PORT (pid $(cat "$SSHD_DIR/pid"))"
		return 0
	fi
	_sshd_fail "cannot log in to the test sshd on port $SSHD_PORT: $(sshd_ssh true 2>&1)"
}

# sshd answers, or gave up on its port.
_sshd_up() {
	grep -q "Address already in use" "$SSHD_DIR/log" || sshd_ssh true 2>/dev/null
}

sshd_ssh() {
	ssh -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile="$SSHD_KNOWN_HOSTS" \
		-o LogLevel=ERROR -i "$SSHD_KEY" -p "$SSHD_PORT" -l "$SSHD_USER" 127.0.0.1 -- "$@"
}

# A gdnctl.yaml backend section for the test server: sshd_config_yaml NAME [LINE...]
sshd_config_yaml() {
	local name=$1 line
	shift
	cat <<EOF
  $name:
    type: ssh
    host: 127.0.0.1
    port: $SSHD_PORT
    user: $SSHD_USER
    identity: $SSHD_KEY
    ssh_options: [StrictHostKeyChecking=no, UserKnownHostsFile=$SSHD_KNOWN_HOSTS, LogLevel=ERROR]
EOF
	for line; do
		echo "    $line"
	done
}
