# Real agent CLIs from npm for the offline driver tests (sourced after
# lib.sh; set REAL_HOME to the HOME from before lib.sh first).
#
# give_up MSG: skip the script (exit 77), except in CI ($CI = true) where
# it is a failure.
#
# npm_cli PACKAGE VERSION BIN NAME [CACHE_ROOT] [PRESET]: sets NPM_CLI to a
# working BIN of PACKAGE@VERSION (its --version output in $TRASH/version).
# PRESET, when not empty, is used as is; otherwise the package is
# installed once with `npm install --prefix` into
# CACHE_ROOT/NAME-VERSION (CACHE_ROOT: ~/.cache/gdnctl by default) and
# reinstalled when its BIN is missing or its --version fails. Gives up
# without node or npm, or when the install fails.
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

npm_cli() {
	local pkg=$1 ver=$2 bin=$3 cache
	cache=${5:-${XDG_CACHE_HOME:-$REAL_HOME/.cache}/gdnctl}/$4-$ver
	NPM_CLI=${6:-}
	if [ -z "$NPM_CLI" ]; then
		NPM_CLI=$cache/node_modules/.bin/$bin
		if ! [ -x "$NPM_CLI" ] || ! "$NPM_CLI" --version >/dev/null 2>&1; then
			command -v node >/dev/null 2>&1 || give_up "node is not installed (needed by $pkg)"
			command -v npm >/dev/null 2>&1 || give_up "npm is not installed"
			say "installing $pkg@$ver into $cache"
			mkdir -p "$cache" 2>/dev/null || give_up "cannot create $cache"
			if ! HOME=$REAL_HOME timeout 600 npm install --no-audit --no-fund --loglevel=error \
				--prefix "$cache" "$pkg@$ver" >"$TRASH/npm.log" 2>&1; then
				sed 's/^/# npm: /' "$TRASH/npm.log" | tail -20
				give_up "npm install $pkg@$ver failed (offline?)"
			fi
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
