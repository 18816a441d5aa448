#!/usr/bin/env bash
# House rules that the compiler does not check: formatting, the first
# include, and no shell-spawning calls anywhere in the sources.
. "$(dirname "$0")/lib.sh"
cd "$GDNCTL_SOURCE_DIR" || exit 1

mapfile -t c_files < <(find src include tests/unit tests/fuzz -name '*.[ch]' | sort)

test_expect_success 'there are sources to check' '
	test ${#c_files[@]} -gt 10
'

if command -v clang-format >/dev/null 2>&1; then
	test_expect_success 'sources follow .clang-format' '
		clang-format --dry-run --Werror "${c_files[@]}"
	'
else
	test_skip 'sources follow .clang-format' 'clang-format is not installed (bash .ci/setup test installs it)'
fi

test_expect_success 'every .c file includes gdnctl/compat.h first' '
	bad=0
	for f in $(printf "%s\n" "${c_files[@]}" | grep "\.c$"); do
		first=$(grep -m1 "^#include" "$f")
		if [ "$first" != "#include \"gdnctl/compat.h\"" ]; then
			echo "$f: first include is: $first"
			bad=1
		fi
	done
	test $bad = 0
'

# A shell runs only the user's own command string (a --shell STRING, a
# post-check, project.test_command): such a line follows a comment saying so.
test_expect_success 'no system(), popen() or "sh -c" command strings in src/' '
	test_grep ! -rnE "\b(system|popen)[[:space:]]*\(" src/ &&
	grep -rnE -B1 "\"(/bin/)?(ba)?sh\",[[:space:]]*\"-c\"" src/ >"$TRASH/shell-c" &&
	awk "/-[0-9]+-/ { prev = \$0; next } /:[0-9]+:/ { if (prev !~ /the user.s own command string/) print; prev = \"\" }" "$TRASH/shell-c" >"$TRASH/bad" &&
	{ test ! -s "$TRASH/bad" || { cat "$TRASH/bad"; false; }; }
'

test_expect_success 'banned.h is what compat.h includes last' '
	test "$(grep "^#include" include/gdnctl/compat.h | tail -1)" = "#include \"gdnctl/banned.h\""
'

test_done
