# Real agent CLIs from npm for the offline driver tests (sourced after lib.sh).
#
# The CLIs are pinned in tests/npm-tools.txt and installed by
# `bash .ci/setup test` into $GDNCTL_TEST_TOOLS (default /opt/gdnctl-test-tools,
# passed by CTest), before any test starts: a test never installs anything.
#
# give_up MSG: skip the script (exit 77), except in CI ($CI = true) where
# it is a failure.
#
# npm_tool NAME [PRESET]: sets NPM_CLI to the working binary of the pinned
# tool NAME (a name of tests/npm-tools.txt) and NPM_VERSION to its pinned
# version; its --version output is in $TRASH/version. PRESET, when not
# empty, is used as is. When the set-up recorded that it could not install
# the tool (NAME-VERSION.failed beside it: offline), the script is skipped
# with that reason, in CI too; a tool missing without such a record means
# the set-up was not run: a failure in CI, a skip elsewhere.
#
# start_model_server SCRIPT NAME [ARGS...]: starts tests/e2e/SCRIPT (a
# scripted model server) logging requests to $TRASH/NAME.jsonl, killed at
# exit; waits for its port and sets PORT. Gives up when it does not start.

in_ci() { [ "${CI:-}" = true ]; }
give_up() {
	if in_ci; then
		echo "not ok 1 - $*"
		echo "1..1"
		exit 1
	fi
	skip_all "$*"
}

npm_tool() {
	local name=$1 pkg ver bin dir line
	line=$(awk -v n="$name" '$1 == n { print $2, $3, $4 }' "$GDNCTL_SOURCE_DIR/tests/npm-tools.txt")
	[ -n "$line" ] || give_up "no tool '$name' in tests/npm-tools.txt"
	read -r pkg ver bin <<<"$line"
	NPM_VERSION=$ver
	NPM_CLI=${2:-}
	if [ -z "$NPM_CLI" ]; then
		dir=${GDNCTL_TEST_TOOLS:-/opt/gdnctl-test-tools}/$name-$ver
		NPM_CLI=$dir/node_modules/.bin/$bin
		if ! [ -x "$NPM_CLI" ]; then
			if [ -f "$dir.failed" ]; then
				skip_all "$pkg@$ver could not be installed by the set-up: $(head -n 1 "$dir.failed")"
			fi
			give_up "$pkg@$ver is not installed in $dir (run: bash .ci/setup test)"
		fi
	fi
	[ -x "$NPM_CLI" ] || give_up "no $bin binary at $NPM_CLI"
	"$NPM_CLI" --version >"$TRASH/version" 2>&1 || give_up "$NPM_CLI --version failed: $(cat "$TRASH/version")"
}

start_model_server() {
	local script=$1 name=$2 port_file=$TRASH/$2.port
	shift 2
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/$script" --port-file "$port_file" \
		--log "$TRASH/$name.jsonl" "$@" >"$TRASH/$name.server.log" 2>&1 &
	test_atexit "kill $!"
	test_wait_for_file "$port_file" || give_up "the $script server did not start: $(cat "$TRASH/$name.server.log")"
	PORT=$(cat "$port_file")
}
