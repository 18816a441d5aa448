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
# Nothing is shared between scripts that run at the same time (ctest -j):
# a home, caches, state and temporary files of their own. What the tests
# need from outside (packages, the pinned npm CLIs) is installed by
# `bash .ci/setup test` beforehand; a script installs nothing.
export HOME="$TRASH/home" XDG_CONFIG_HOME="$TRASH/home/.config"
export XDG_CACHE_HOME="$TRASH/home/.cache" XDG_STATE_HOME="$TRASH/home/.local/state"
export TMPDIR="$TRASH/tmp"
mkdir -p "$HOME" "$TMPDIR"
# Every commit of a fixture or an agent would start `git maintenance run
# --auto` (a process, and a gc check that finds nothing in a test's small
# repository): a tenth of a loop script's processes.
printf '[maintenance]\n\tauto = false\n' >"$HOME/.gitconfig"
# python3 as CMake resolved it (GDNCTL_TEST_PYTHON), first on PATH, so that a
# version manager's shim does not run at every start.
if [ -n "${GDNCTL_TEST_PYTHON:-}" ] && [ -x "$GDNCTL_TEST_PYTHON" ]; then
	mkdir -p "$TRASH/.python/bin" &&
		ln -s "$GDNCTL_TEST_PYTHON" "$TRASH/.python/bin/python3" &&
		export PATH="$TRASH/.python/bin:$PATH"
fi
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.com
export GIT_COMMITTER_NAME=Test GIT_COMMITTER_EMAIL=test@example.com
export LC_ALL=C NO_COLOR=1
unset GDNCTL_TRACE
cd "$TRASH" || exit 1
_test_start=${EPOCHREALTIME:-0}

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

# The loop's --isolation under test. A script with the line
# "# ctest: isolation-both" runs twice (tests/CMakeLists.txt): as it is
# (the default, worktree) and with GDNCTL_TEST_ISOLATION=in-place, which
# `gdnctl loop` then gets as its first option (a later one wins).
ISOLATION=${GDNCTL_TEST_ISOLATION:-worktree}
ISOLATION_ARGS=() # for scripts that run "$GDNCTL_BIN" loop themselves
[ -z "${GDNCTL_TEST_ISOLATION:-}" ] || ISOLATION_ARGS=(--isolation "$GDNCTL_TEST_ISOLATION")
# A script with the line "# ctest: workers N" also runs with
# GDNCTL_TEST_WORKERS=N: `gdnctl loop` then gets --workers N first (and
# with GDNCTL_TEST_TARGETS=M, --targets M: agents and targets apart).
WORKERS=${GDNCTL_TEST_WORKERS:-1}
WORKERS_ARGS=()
[ "$WORKERS" = 1 ] || WORKERS_ARGS=(--workers "$WORKERS")
[ "$WORKERS" = 1 ] || [ -z "${GDNCTL_TEST_TARGETS:-}" ] ||
	WORKERS_ARGS+=(--targets "$GDNCTL_TEST_TARGETS")
gdnctl() {
	if [ "$WORKERS" != 1 ] && { [ "${1:-}" = loop ] || [ "${1:-}" = codex-loop ]; } &&
		[ "${2:-}" != status ] && [ "${2:-}" != --help ]; then
		local sub=$1
		shift
		set -- "$sub" "${WORKERS_ARGS[@]}" "$@"
	fi
	if [ -n "${GDNCTL_TEST_ISOLATION:-}" ] && { [ "${1:-}" = loop ] || [ "${1:-}" = codex-loop ]; } &&
		[ "${2:-}" != status ] && [ "${2:-}" != --help ]; then
		local sub=$1
		shift
		set -- "$sub" --isolation "$GDNCTL_TEST_ISOLATION" "$@"
	fi
	# shellcheck disable=SC2086
	${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@"
}

# test_expect_isolation MODE DESC BODY: a test of one isolation mode's own
# behaviour (the in-place stash, the worktree's promotions); reported
# skipped under the other.
test_expect_isolation() {
	if [ "$ISOLATION" = "$1" ]; then
		test_expect_success "$2" "$3"
	else
		test_skip "$2" "--isolation $1 only"
	fi
}

# test_expect_bound DESC BODY: a case whose bound (a peak RSS, a time to
# stop) only a binary without sanitizers keeps; its script has the line
# "# ctest: unsanitized". With GDNCTL_TEST_BOUNDS_ONLY=1 (.ci/test's run of
# those scripts in the dev build, beside the whole suite under the
# sanitizers) only these cases run, and the others are reported skipped.
test_expect_bound() {
	_test_bound_case=1
	test_expect_success "$@"
	_test_bound_case=
}
_test_bound_case=

say() { echo "# $*"; }

test_expect_success() {
	local desc=$1 body=$2 start=${EPOCHREALTIME:-}
	if [ "${GDNCTL_TEST_BOUNDS_ONLY:-}" = 1 ] && [ -z "$_test_bound_case" ]; then
		test_skip "$desc" "no bound: checked in the sanitizer run"
		return 0
	fi
	test_count=$((test_count + 1))
	# fd 9: the case's own output, for _test_complain
	if (exec 9>&2 && eval "$body") >"$TRASH/.test-out" 2>&1; then
		echo "ok $test_count - $desc"
		_test_time "$start"
	else
		test_failed=$((test_failed + 1))
		echo "not ok $test_count - $desc"
		sed 's/^/#   /' "$TRASH/.test-out"
		echo "#   body:"
		printf '%s\n' "$body" | sed 's/^/#     /'
	fi
}

# GDNCTL_TEST_TIMING=1: a TAP comment with each passing test's wall time,
# to find where a slow script spends it.
_test_time() {
	[ -n "${GDNCTL_TEST_TIMING:-}" ] && [ -n "$1" ] || return 0
	local now=$EPOCHREALTIME
	awk -v a="$1" -v b="$now" 'BEGIN { printf "# time: %.3f s\n", b - a }'
}

# With GDNCTL_TEST_TIMING=1, test_done also prints the script's wall time and
# the CPU time of the script and everything it waited for, and with
# GDNCTL_TEST_CPU_LOG=FILE appends "NAME WALL USER SYS" to FILE: a script that
# spends its wall time sleeping shows little CPU.
_test_cpu() {
	[ -n "${GDNCTL_TEST_TIMING:-}" ] || return 0
	local name=$TEST_NAME
	[ -z "${GDNCTL_TEST_ISOLATION:-}" ] || name="$name@$GDNCTL_TEST_ISOLATION"
	[ "$WORKERS" = 1 ] || name="$name@workers$WORKERS"
	# `times`: "0m0.01s 0m0.00s" for the shell, then the same for its children
	# (run here, not in a pipeline: a subshell would count only itself)
	times >"$TRASH/.times"
	tr '\n' ' ' <"$TRASH/.times" | sed 's/\([0-9]*\)m\([0-9.]*\)s/\1 \2/g' |
		awk -v a="$_test_start" -v b="$EPOCHREALTIME" -v n="$name" \
			-v logf="${GDNCTL_TEST_CPU_LOG:-}" '{
		user = $1 * 60 + $2 + $5 * 60 + $6; sys = $3 * 60 + $4 + $7 * 60 + $8
		printf "# cpu: wall %.1f s, user %.1f s, sys %.1f s\n", b - a, user, sys
		if (logf != "") printf "%s %.1f %.1f %.1f\n", n, b - a, user, sys >>logf
	}'
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

# A helper's complaint goes to the case's output (fd 9, opened by
# test_expect_success) even when the caller sent the command's stderr to a
# file (`test_expect_code 1 gdnctl ... 2>err`), where it used to vanish.
_test_complain() {
	if { true >&9; } 2>/dev/null; then
		echo "$*" >&9
	else
		echo "$*" >&2
	fi
}

# Run a command that must fail with a non-zero exit code, but not crash
# (signals, sanitizer reports with exit 99). With `=N` as the first
# argument, the exit code must be exactly N.
test_must_fail() {
	local want=
	case "$1" in =*) want=${1#=}; shift ;; esac
	"$@" 9>&-
	local rc=$?
	if [ $rc -eq 0 ]; then
		_test_complain "test_must_fail: command succeeded: $*"
		return 1
	elif [ $rc -ge 129 ] && [ $rc -le 192 ] && [ "$want" != "$rc" ]; then
		_test_complain "test_must_fail: command died by signal $((rc - 128)): $*"
		return 1
	elif [ $rc -eq 99 ] && [ "$want" != 99 ]; then
		_test_complain "test_must_fail: sanitizer or valgrind error: $*"
		return 1
	elif [ -n "$want" ] && [ "$rc" -ne "$want" ]; then
		_test_complain "test_must_fail: exit $rc, expected $want: $*"
		return 1
	fi
	return 0
}

# Exit code must be exactly N: test_expect_code N cmd args...
test_expect_code() {
	local want=$1
	shift
	"$@" 9>&-
	local rc=$?
	if [ "$rc" -ne "$want" ]; then
		local why=
		[ "$rc" != 99 ] || why=" (a sanitizer or valgrind report: in its stderr)"
		_test_complain "test_expect_code: exit $rc$why, expected $want: $*"
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

# Make directory $1 (default .) look like a Marin checkout to gdnctl (the
# files src/backend/marin.c gdn_marin_checkout looks for), so that the Marin
# defaults apply there.
marin_checkout() {
	mkdir -p "${1:-.}/lib/levanter" "${1:-.}/lib/marin/src/marin/run" &&
		: >"${1:-.}/lib/marin/src/marin/run/ray_run.py"
}

# A free TCP port on 127.0.0.1, chosen by the OS.
test_free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# CLOSED_PORT: a TCP port on 127.0.0.1 where nothing listens, for the rest
# of the script: a socket bound to it and never listening, held by a
# background python3 (killed at exit). A connection is refused, and no
# other test (the suites run side by side) can take the port meanwhile, as
# it could a port from test_free_port that nobody holds. Not in a $(...):
# the cleanup must be registered in this shell.
test_closed_port() {
	local f="$TRASH/closed-port.$BASHPID.$RANDOM"
	python3 -c '
import os, signal, socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write("%d\n" % s.getsockname()[1])
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
signal.pause()
' "$f" </dev/null >/dev/null 2>&1 &
	test_atexit "kill $!"
	test_wait_for_file "$f" && CLOSED_PORT=$(cat "$f")
}

# Run CMD... every 0.05 s until it succeeds, for about SECS seconds (a
# whole number): test_wait_until SECS CMD... Returns 1 when it never did.
test_wait_until() {
	local i n=$(($1 * 20))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.05
	done
	"$@"
}

# Wait up to SECS seconds (default 10) for FILE to exist and not be empty
# (a server's port file): test_wait_for_file FILE [SECS].
test_wait_for_file() {
	test_wait_until "${2:-10}" test -s "$1"
}

# Start the loopback test server (tests/e2e/hubserver.py serve ARGS...,
# with --ports $TRASH/ports and --log $TRASH/requests.log), killed at exit;
# wait for its ports file and source it (HUB_PORT, ...). Skips the whole
# script when the server does not start.
test_start_hubserver() {
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" serve --ports "$TRASH/ports" \
		--log "$TRASH/requests.log" "$@" >"$TRASH/server.out" 2>&1 &
	test_atexit "kill $!"
	test_wait_for_file "$TRASH/ports" ||
		{ cat "$TRASH/server.out"; skip_all "the test server did not start"; }
	. "$TRASH/ports"
}

# ---- daemons (sshd, Slurm): lib-sshd.sh, lib-slurm.sh ----

# Whether process $1 still runs (a zombie that init has not reaped yet does not).
test_proc_alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	case $s in Z*) return 1 ;; esac
	return 0
}

# Stop the process whose pid is in FILE: TERM, then KILL after 5 s.
test_stop_pidfile() {
	local pid
	[ -s "$1" ] || return 0
	pid=$(cat "$1")
	kill -TERM "$pid" 2>/dev/null || return 0
	test_wait_until 5 test_proc_gone "$pid" || kill -KILL "$pid" 2>/dev/null
	return 0
}
test_proc_gone() { ! test_proc_alive "$1"; }

# Fail the whole script: "Bail out! MSG", then the tail of each LOG that is
# not empty: test_bail_out MSG [LOG...].
test_bail_out() {
	local f
	echo "Bail out! $1"
	shift
	for f; do
		[ -s "$f" ] && { echo "# --- $f"; tail -n 30 "$f" | sed 's/^/# /'; }
	done
	exit 1
}

# Unless every PROG is installed (a path, or a name looked up in PATH),
# skip the script, or fail it in CI ($CI = true): test_need_programs WHAT
# HINT PROG..., messages "WHAT is not installed (missing: ...; HINT)".
test_need_programs() {
	local what=$1 hint=$2 p missing=
	shift 2
	for p; do
		case $p in
		/*) [ -x "$p" ] ;;
		*) command -v "$p" >/dev/null 2>&1 ;;
		esac || missing="$missing ${p##*/}"
	done
	[ -z "$missing" ] && return 0
	[ "${CI:-}" = true ] && test_bail_out "$what is not installed (missing:$missing)"
	skip_all "$what is not installed (missing:$missing; $hint)"
}

# Start a daemon: test_start_daemon FAIL NAME PIDFILE CMD... runs CMD (which
# forks and writes PIDFILE), output in NAME.out beside PIDFILE; the daemon
# is stopped by that pid at exit. When CMD fails, FAIL (a function) is
# called with "NAME did not start (exit N): OUTPUT".
test_start_daemon() {
	local fail=$1 name=$2 pidfile=$3 out
	shift 3
	out=$(dirname "$pidfile")/$name.out
	test_atexit "test_stop_pidfile '$pidfile'"
	"$@" >"$out" 2>&1 || "$fail" "$name did not start (exit $?): $(cat "$out")"
}

test_done() {
	echo "1..$test_count"
	_test_cpu
	if [ "$test_failed" -gt 0 ]; then
		echo "# failed $test_failed of $test_count"
		exit 1
	fi
	echo "# passed all $test_count tests${test_skipped:+ ($test_skipped skipped)}"
	exit 0
}

# For each FILE, `gdnctl trace summary --json FILE` either succeeds or exits 1
# with a one-line error (leaves out and err); anything else fails, saying so.
test_trace_summary_each() {
	local f rc
	for f in "$@"; do
		{ gdnctl trace summary --json "$f" >out 2>err; rc=$?; } &&
		if [ $rc = 1 ]; then
			test_line_count = 1 err || return 1
		elif [ $rc != 0 ]; then
			echo "$f: exit $rc"; cat err; return 1
		fi
	done
}
