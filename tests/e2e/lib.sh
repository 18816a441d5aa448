# Shell library for end-to-end tests (sourced, bash). TAP output.
#
#   . "$(dirname "$0")/lib.sh"
#   test_expect_success 'what it checks' '
#       gdnctl lint-log --log-file x.md >out 2>err &&
#       test_cmp expect out
#   '
#   test_done
#
# Each script runs in its own trash directory ($TRASH), removed at exit
# unless GDNCTL_TEST_KEEP=1. `gdnctl` runs the binary under test, through
# $GDNCTL_TEST_EXEC_PREFIX when set (e.g. 'valgrind -q --error-exitcode=99').
# Cleanup commands registered with test_atexit run at exit, in reverse.

set -u
: "${GDNCTL_BIN:?GDNCTL_BIN must point at the gdnctl binary (run through ctest)}"
: "${GDNCTL_SOURCE_DIR:?}"
GDNCTL_SHARED_DIR=${GDNCTL_SHARED_DIR:-$GDNCTL_SOURCE_DIR/../shared}
TEST_NAME=$(basename "$0" .sh)
TRASH=$(mktemp -d "${TMPDIR:-/tmp}/gdnctl-$TEST_NAME.XXXXXX")
TEST_DATA=$GDNCTL_SOURCE_DIR/tests/data
export HOME="$TRASH/home" XDG_CONFIG_HOME="$TRASH/home/.config"
mkdir -p "$HOME"
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.com
export GIT_COMMITTER_NAME=Test GIT_COMMITTER_EMAIL=test@example.com
export LC_ALL=C NO_COLOR=1
unset GDNCTL_TRACE
cd "$TRASH" || exit 1

test_count=0
test_failed=0
test_skipped=0
_atexit_cmds=()

test_atexit() { _atexit_cmds+=("$1"); }

_run_atexit() {
	local i
	for ((i = ${#_atexit_cmds[@]} - 1; i >= 0; i--)); do
		eval "${_atexit_cmds[$i]}" >/dev/null 2>&1
	done
	cd / && if [ "${GDNCTL_TEST_KEEP:-0}" = 1 ]; then
		echo "# kept $TRASH"
	else
		rm -rf "$TRASH"
	fi
}
trap _run_atexit EXIT

gdnctl() {
	# shellcheck disable=SC2086
	${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@"
}

say() { echo "# $*"; }

test_expect_success() {
	local desc=$1 body=$2
	test_count=$((test_count + 1))
	if (eval "$body") >"$TRASH/.test-out" 2>&1; then
		echo "ok $test_count - $desc"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $desc"
		sed 's/^/#   /' "$TRASH/.test-out"
		echo "#   body:"
		printf '%s\n' "$body" | sed 's/^/#     /'
	fi
}

test_skip() {
	test_count=$((test_count + 1))
	test_skipped=$((test_skipped + 1))
	echo "ok $test_count - $1 # SKIP $2"
}

# Skip the whole script (CTest sees exit 77 as skipped).
skip_all() {
	echo "1..0 # SKIP $*"
	exit 77
}

# Compare expected and actual files, showing a diff on mismatch.
test_cmp() {
	diff -u "$1" "$2"
}

# Run a command that must fail with a non-zero exit code, but not crash
# (signals, sanitizer reports with exit 99). With `=N` as the first
# argument, the exit code must be exactly N.
test_must_fail() {
	local want=
	case "$1" in =*) want=${1#=}; shift ;; esac
	"$@"
	local rc=$?
	if [ $rc -eq 0 ]; then
		echo "test_must_fail: command succeeded: $*" >&2
		return 1
	elif [ $rc -ge 129 ] && [ $rc -le 192 ] && [ "$want" != "$rc" ]; then
		echo "test_must_fail: command died by signal $((rc - 128)): $*" >&2
		return 1
	elif [ $rc -eq 99 ] && [ "$want" != 99 ]; then
		echo "test_must_fail: sanitizer or valgrind error: $*" >&2
		return 1
	elif [ -n "$want" ] && [ "$rc" -ne "$want" ]; then
		echo "test_must_fail: exit $rc, expected $want: $*" >&2
		return 1
	fi
	return 0
}

# Exit code must be exactly N: test_expect_code N cmd args...
test_expect_code() {
	local want=$1
	shift
	"$@"
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		echo "test_expect_code: exit $rc, expected $want: $*" >&2
		return 1
	fi
}

# grep that shows the file when the pattern is missing.
test_grep() {
	if [ "$1" = "!" ]; then
		shift
		if grep "$@"; then
			echo "test_grep: unexpected match for: $*" >&2
			return 1
		fi
		return 0
	fi
	if ! grep "$@"; then
		echo "test_grep: no match for: $*" >&2
		local last
		for last; do :; done
		[ -f "$last" ] && sed 's/^/|  /' "$last" >&2
		return 1
	fi
}

# Count lines of a file: test_line_count = N file (or -lt, -gt, ...)
test_line_count() {
	local n op=$1
	n=$(wc -l <"$3")
	case "$op" in "=") op=-eq ;; "<") op=-lt ;; ">") op=-gt ;; esac
	if ! test "$n" "$op" "$2"; then
		echo "test_line_count: $3 has $n lines, expected $1 $2" >&2
		return 1
	fi
}

# A fresh git repository with one commit, in directory $1.
test_create_repo() {
	git init -q -b main "$1" &&
		(cd "$1" && echo seed >README && git add README && git commit -q -m seed)
}

# A free TCP port on 127.0.0.1, chosen by the OS.
test_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Start the loopback test server (tests/e2e/hubserver.py serve ARGS...,
# with --ports $TRASH/ports and --log $TRASH/requests.log), killed at exit;
# wait for its ports file and source it (HUB_PORT, ...). Skips the whole
# script when the server does not start.
test_start_hubserver() {
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" serve --ports "$TRASH/ports" \
		--log "$TRASH/requests.log" "$@" >"$TRASH/server.out" 2>&1 &
	test_atexit "kill $!"
	for _ in $(seq 200); do [ -f "$TRASH/ports" ] && break; sleep 0.05; done
	[ -f "$TRASH/ports" ] || { cat "$TRASH/server.out"; skip_all "the test server did not start"; }
	. "$TRASH/ports"
}

test_done() {
	echo "1..$test_count"
	if [ "$test_failed" -gt 0 ]; then
		echo "# failed $test_failed of $test_count"
		exit 1
	fi
	echo "# passed all $test_count tests${test_skipped:+ ($test_skipped skipped)}"
	exit 0
}
