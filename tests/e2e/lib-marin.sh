# The Marin/Ray test doubles for end-to-end tests (sourced after lib.sh):
# tests/e2e/bin/uv (Marin's ray_run.py, cluster.py, dev_tpu.py) and
# tests/e2e/bin/ray (the Ray job CLI) and tests/e2e/bin/iris (Marin's Iris
# job CLI), run by python3 through small wrappers in $TRASH/bin that gdnctl
# finds through GDNCTL_UV, GDNCTL_RAY and GDNCTL_IRIS.
# Each call of a double appends its argv as one JSON array to
# $GDNCTL_FAKE_LOG; state (job status, allocation pid files) lives in
# $GDNCTL_FAKE_STATE.
#
#   . "$(dirname "$0")/lib.sh"
#   . "$(dirname "$0")/lib-marin.sh"
#   marin_setup
#   gdnctl ray-test && expect_call 1 uv run lib/marin/src/marin/run/ray_run.py ...

marin_setup() {
	local py tool
	command -v jq >/dev/null 2>&1 || skip_all "jq is needed to read the doubles' argv logs"
	# the system python starts in ~20 ms; a pyenv shim takes 100 ms or more
	py=/usr/bin/python3
	[ -x "$py" ] || py=$(command -v python3) || skip_all "python3 is needed for the uv/ray doubles"
	mkdir -p "$TRASH/bin" "$TRASH/state"
	for tool in uv ray iris; do
		printf '#!/bin/sh\nexec "%s" -u "%s" "$@"\n' "$py" \
			"$GDNCTL_SOURCE_DIR/tests/e2e/bin/$tool" >"$TRASH/bin/$tool"
		chmod +x "$TRASH/bin/$tool"
	done
	export GDNCTL_UV=$TRASH/bin/uv GDNCTL_RAY=$TRASH/bin/ray GDNCTL_IRIS=$TRASH/bin/iris
	export IRIS_USER=tester
	unset IRIS_FAKE_GEN IRIS_FAKE_FAULTS IRIS_FAKE_FAULT IRIS_FAKE_LOST IRIS_FAKE_EXEC IRIS_FAKE_RC
	export GDNCTL_FAKE_LOG=$TRASH/calls.jsonl GDNCTL_FAKE_STATE=$TRASH/state
	unset GDNCTL_PROJECT_BACKEND GDNCTL_TEST_COMMAND GDNCTL_PROFILE_COMMAND GDNCTL_TRACE_GLOB
	unset FAKE_JOB_ID FAKE_NO_ID FAKE_JOB_STATUS FAKE_JOB_OUTPUT FAKE_EXEC FAKE_RC
	unset FAKE_WAIT_TIMEOUT FAKE_ALLOC_FAIL FAKE_ALLOC_READY FAKE_ALLOC_NOISE
	unset FAKE_ALLOC_IGNORE_INT FAKE_ALLOC_EXIT FAKE_RAY_ID FAKE_PENDING_POLLS FAKE_RUNNING_POLLS
	: >"$GDNCTL_FAKE_LOG"
	marin_checkout "$TRASH"
}

# Start gdnctl ARGS... in the background with stdout and stderr in file $1;
# $gpid is gdnctl's own pid (not a subshell's), for kill -INT/-TERM.
# The file is emptied before the start, so a wait on it never sees an
# earlier run's lines (and signals a gdnctl that has not started yet).
gdnctl_bg() {
	local out=$1
	shift
	: >"$out"
	# shellcheck disable=SC2086
	(exec ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" "$@" >"$out" 2>&1) &
	gpid=$!
}

# Forget the recorded calls.
calls_reset() {
	: >"$GDNCTL_FAKE_LOG"
}

# The number of recorded calls.
calls_count() {
	wc -l <"$GDNCTL_FAKE_LOG" | tr -d ' '
}

# expect_call N WORD...: the Nth recorded call is exactly WORD..., element by element.
expect_call() {
	local n=$1
	shift
	printf '%s\n' "$@" >"$TRASH/.expect-args"
	sed -n "${n}p" "$GDNCTL_FAKE_LOG" | jq -r '.[]' >"$TRASH/.actual-args" &&
		test "$(sed -n "${n}p" "$GDNCTL_FAKE_LOG" | jq length)" = $# &&
		test_cmp "$TRASH/.expect-args" "$TRASH/.actual-args"
}

# Wait up to $2 seconds (default 10) for file $1 to appear.
wait_for_file() {
	test_wait_until "${2:-10}" test -e "$1" && return 0
	echo "wait_for_file: $1 did not appear" >&2
	return 1
}

# Wait up to $3 seconds (default 10) for a line matching $1 in file $2.
wait_for_line() {
	test_wait_until "${3:-10}" grep -q -- "$1" "$2" 2>/dev/null && return 0
	echo "wait_for_line: no '$1' in $2" >&2
	[ -f "$2" ] && sed 's/^/|  /' "$2" >&2
	return 1
}

# Wait up to $2 seconds (default 30) for background process $1 to end, its
# exit status in $rc; when it does not, kill it (rc=timeout) and fail.
wait_rc() {
	rc=
	if ! test_wait_until "${2:-30}" _gone "$1"; then
		echo "wait_rc: process $1 did not end in ${2:-30} s; killing it" >&2
		kill -KILL "$1" 2>/dev/null
		wait "$1" 2>/dev/null
		rc=timeout
		return 1
	fi
	wait "$1"
	rc=$?
}

# Whether process $1 is gone (waiting up to $2 seconds, default 10).
_gone() { ! kill -0 "$1" 2>/dev/null; }
wait_gone() {
	test_wait_until "${2:-10}" _gone "$1" && return 0
	echo "wait_gone: process $1 is still there" >&2
	return 1
}

# No allocation process of the double is alive ($GDNCTL_FAKE_STATE).
no_allocation_left() {
	local pid
	test -s "$GDNCTL_FAKE_STATE/allocate.pids" || return 1
	while read -r pid; do
		wait_gone "$pid" 5 || return 1
	done <"$GDNCTL_FAKE_STATE/allocate.pids"
	! ls "$GDNCTL_FAKE_STATE"/allocate-*.pid 2>/dev/null
}

# calls_with WORD...: how many recorded calls contain all the words (as JSON strings).
calls_with() {
	local pat=. w
	for w in "$@"; do
		pat="$pat | select(index([\"$w\"]))"
	done
	jq -c "$pat" "$GDNCTL_FAKE_LOG" | wc -l | tr -d ' '
}
