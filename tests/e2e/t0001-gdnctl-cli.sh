#!/usr/bin/env bash
# The top-level command line: help, version, dispatch, exit codes, and
# that the docs list every option every command has.
# ctest: cost 60
. "$(dirname "$0")/lib.sh"

test_expect_success '--help lists the commands and exit codes' '
	gdnctl --help >out &&
	test_grep "^usage: gdnctl" out &&
	test_grep "^   lint-log  *check the markdown running log" out &&
	test_grep "^   config  " out &&
	test_grep "124 timed out" out
'

test_expect_success 'no command: help on stderr, exit 2' '
	test_must_fail =2 gdnctl >out 2>err &&
	test_grep "^usage: gdnctl" err &&
	test ! -s out
'

test_expect_success '--version and version agree' '
	gdnctl --version >a &&
	gdnctl version >b &&
	test_cmp a b &&
	test_grep -E "^gdnctl version [0-9]+\.[0-9]+\.[0-9]+$" a
'

test_expect_success 'unknown command: one line, exit 2' '
	test_must_fail =2 gdnctl frobnicate >out 2>err &&
	echo "[gdnctl] error: '\''frobnicate'\'' is not a gdnctl command; see '\''gdnctl --help'\''" >expect &&
	test_cmp expect err
'

test_expect_success 'no prefix matching of command names' '
	test_must_fail =2 gdnctl lint 2>err &&
	test_grep "not a gdnctl command" err
'

test_expect_success 'unknown global option: exit 2' '
	test_must_fail =2 gdnctl --frob 2>err &&
	test_grep "unknown global option '\''--frob'\''" err
'

test_expect_success '-C into a missing directory: exit 2' '
	test_must_fail =2 gdnctl -C "$TRASH/nope" version 2>err &&
	test_grep "cannot change to" err
'

test_expect_success '-c without = is a usage error' '
	test_must_fail =2 gdnctl -c novalue config 2>err &&
	test_grep "expected KEY=VALUE" err
'

commands=$(gdnctl --help | sed -n "/^Commands:/,/^$/p" | awk "NR>1 && NF {print \$1}")
aliases=$(gdnctl --help | sed -n "/^Aliases:/,/^$/p" | awk "NR>1 && NF {print \$1}")

test_expect_success 'the command list is not empty' '
	test -n "$commands"
'

for c in $commands; do
	test_expect_success "help $c equals $c -h" '
		gdnctl help '"$c"' >a &&
		gdnctl '"$c"' -h >b &&
		test_cmp a b &&
		test -s a
	'
done

test_expect_success 'an unknown option of a command: one-line error and a hint, exit 2' '
	test_must_fail =2 gdnctl lint-log --frob >out 2>err &&
	test_grep "^\[gdnctl\] error: unknown option '\''--frob'\''$" err &&
	test_grep "see '\''gdnctl lint-log -h'\''" err &&
	test_line_count = 2 err
'

# Every option a command prints in -h must be documented in docs/.
# The original tool's names (aliases) are documented in compatibility.md.
for c in $commands $aliases; do
	case "$c" in help | version) doc=$GDNCTL_SOURCE_DIR/docs/gdnctl.md ;;
	*) doc=$GDNCTL_SOURCE_DIR/docs/gdnctl-$c.md ;;
	esac
	case " $(echo $aliases) " in *" $c "*) doc=$GDNCTL_SOURCE_DIR/docs/compatibility.md ;; esac
	test_expect_success "docs list every option of $c" '
		test -f '"$doc"' &&
		gdnctl '"$c"' -h | grep -oE -- "--(\[no-\])?[a-z][a-z0-9-]*" | sed "s/\[no-\]//" | sort -u >opts &&
		missing= &&
		while read -r o; do
			grep -qe "$o" '"$doc"' || missing="$missing $o"
		done <opts &&
		if [ -n "$missing" ]; then echo "undocumented in '"$doc"':$missing"; false; fi
	'
done

test_expect_success 'gdnctl.md documents every command and exit code' '
	for c in $commands; do grep -q "^| \`$c\` |" "$GDNCTL_SOURCE_DIR/docs/gdnctl.md" || { echo "missing $c"; exit 1; }; done &&
	for code in 0 1 2 3 4 5 124; do grep -qE "^\| *$code *\|" "$GDNCTL_SOURCE_DIR/docs/gdnctl.md" || { echo "missing exit $code"; exit 1; }; done
'

test_expect_success 'a write error on stdout is reported' '
	if [ -w /dev/full ]; then
		test_must_fail =1 gdnctl --help >/dev/full 2>err &&
		test_grep "write failure on standard output" err
	fi
'

test_expect_success 'gdnctl starts without libcurl (loaded at the first request)' '
	readelf -d "$GDNCTL_BIN" >dyn &&
	test_grep "(NEEDED)" dyn &&
	test_grep ! "(NEEDED).*libcurl" dyn
'

test_done
