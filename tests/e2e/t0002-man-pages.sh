#!/usr/bin/env bash
# Man pages generated from the command and option tables (`gdnctl help --man`)
# and the JSON description behind them (`gdnctl help --json`): every command
# has a page that renders without roff warnings and names every option its -h
# prints; the build wrote the same pages to man/.
# ctest: cost 75
. "$(dirname "$0")/lib.sh"

command -v groff >/dev/null 2>&1 || skip_all "groff is not installed (Debian: groff-base)"

# Every command of the table, from --help (a source independent of --json).
commands=$(gdnctl --help | sed -n "/^Commands:/,/^$/p" | awk "NR>1 && NF {print \$1}")
aliases=$(gdnctl --help | sed -n "/^Aliases:/,/^$/p" | awk "NR>1 && NF {print \$1}")

# The long options `gdnctl CMD -h` prints.
help_options() {
	gdnctl "$@" -h | grep -oE -- "--(\[no-\])?[a-z][a-z0-9-]*" | sed "s/\[no-\]//" | sort -u
}

test_must_be_empty() {
	if [ -s "$1" ]; then
		echo "$1 is not empty:" && cat "$1"
		return 1
	fi
}

# The long options of the option lines of `gdnctl CMD -h` (not those its text mentions).
table_options() {
	gdnctl "$@" -h | sed -nE "s/^    (-[a-zA-Z], )?--(\[no-\])?([a-z][a-z0-9-]*).*/--\3/p" | sort -u
}

# Render a page to plain text; roff warnings (all of them: -ww) go to $2.
render() {
	groff -ww -man -Tutf8 -P-cbou "$1" 2>"$2" | sed 's/\xe2\x80\x90/-/g'
}

test_expect_success 'help --commands lists the table: every command and alias of --help' '
	gdnctl help --commands >names &&
	printf "%s\n" $commands $aliases | sort >expect &&
	sort names >actual &&
	test_cmp expect actual
'

test_expect_success 'help --json: one entry per command, each with its options' '
	gdnctl help --json >all.json &&
	python3 - all.json $commands <<-\EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["schema"] == "gdnctl.commands.v1", d["schema"]
	names = [c["name"] for c in d["commands"]]
	for c in sys.argv[2:]:
	    assert c in names, c
	loop = [c for c in d["commands"] if c["name"] == "loop"][0]
	assert "codex-loop" in loop["aliases"], loop["aliases"]
	opts = {o["long"]: o for o in loop["options"]}
	pm = opts["perf-mode"]
	assert pm["type"] == "choice" and len(pm["choices"]) >= 2, pm
	trace = [c for c in d["commands"] if c["name"] == "trace"][0]
	subs = {s["name"]: s for s in trace["subcommands"]}
	assert sorted(subs) == ["diff", "summary"], subs
	fmt = [o for o in subs["summary"]["options"] if o["long"] == "format"][0]
	assert fmt["choices"] == ["table", "markdown", "json"], fmt
	assert fmt["default"] == "table", fmt
	EOF
'

# (one python for all the commands' JSON: CMD.json -> CMD.json-opts)
test_expect_success 'help --json CMD: the same options as -h, exit 0, nothing run' '
	mkdir json-opts.d &&
	for c in $commands $aliases; do
		gdnctl help --json $c >json-opts.d/$c.json || { echo "help --json $c failed"; exit 1; }
	done &&
	python3 - $commands $aliases <<-\EOF &&
	import json, sys
	for c in sys.argv[1:]:
	    d = json.load(open("json-opts.d/%s.json" % c))
	    longs = {"--" + o["long"] for o in d["options"] if o["long"] and not o["hidden"]}
	    with open("json-opts.d/%s.json-opts" % c, "w") as f:
	        f.write("".join(o + "\n" for o in sorted(longs | {"--help"})))
	EOF
	for c in $commands $aliases; do
		LC_ALL=C sort -u json-opts.d/$c.json-opts >json-opts &&
		table_options $c >h-opts &&
		test -s h-opts &&
		{ test_cmp h-opts json-opts || { echo "in $c"; exit 1; }; }
	done
'

test_expect_success 'describe mode loads no configuration' '
	test_create_repo repo &&
	echo "not: [valid" >repo/gdnctl.yaml &&
	(cd repo && test_must_fail =3 gdnctl lint-log 2>err && test_grep "gdnctl.yaml" err) &&
	(cd repo && gdnctl help --json config >out && test_grep "\"name\": \"config\"" out) &&
	(cd repo && gdnctl help --json loop >out && test_grep "\"perf-mode\"" out) &&
	(cd repo && gdnctl help --man lint-log >out && test_grep "log\\\\-file" out)
'

test_expect_success 'help --json trace summary: the subcommand table' '
	gdnctl help --json trace summary >s.json &&
	test_grep "\"name\": \"trace summary\"" s.json &&
	test_grep "\"long\": \"by\"" s.json &&
	test_must_fail =2 gdnctl help --json trace frob 2>err &&
	test_grep "not a subcommand" err
'

test_expect_success 'gdnctl(1) renders without warnings and lists every command' '
	gdnctl help --man >gdnctl.1 &&
	render gdnctl.1 warn >page &&
	test_must_be_empty warn &&
	for c in $commands; do grep -q "^ *$c\b" page || { echo "gdnctl(1) lacks $c"; exit 1; }; done &&
	for c in $aliases; do grep -q "$c" page || { echo "gdnctl(1) lacks alias $c"; exit 1; }; done &&
	for s in NAME SYNOPSIS DESCRIPTION "GLOBAL OPTIONS" COMMANDS "EXIT STATUS" ENVIRONMENT FILES "SEE ALSO"; do
		grep -q "^$s" page || { echo "no section $s"; exit 1; }
	done &&
	test_grep -e "-C DIR" page &&
	test_grep "GDNCTL_BACKEND" page &&
	test_grep "^ *124" page
'

for c in $commands $aliases; do
	test_expect_success "the man page of $c renders cleanly and has every option of $c -h" '
		gdnctl help --man '"$c"' >page.1 &&
		render page.1 warn >page &&
		test_must_be_empty warn &&
		test_grep "^SYNOPSIS" page &&
		test_grep "^OPTIONS" page &&
		test_grep "^EXIT STATUS" page &&
		help_options '"$c"' >opts &&
		: every option as a word on the page, found in one pass: options end in a letter or digit &&
		missing=$(awk "NR == FNR { want[\$0]; next }
			{ for (o in want) if (\$0 ~ o \"([^A-Za-z0-9_]|\$)\") delete want[o] }
			END { for (o in want) printf \" %s\", o }" opts page) &&
		if [ -n "$missing" ]; then echo "not in the page:$missing"; false; fi
	'
done

test_expect_success 'an alias is documented on the page of its command' '
	gdnctl help --man codex-loop >a.1 &&
	gdnctl help --man loop >b.1 &&
	test_cmp a.1 b.1 &&
	render b.1 warn >page &&
	test_grep "^ALIASES" page &&
	test_grep "codex-loop" page
'

test_expect_success 'roff special characters are escaped' '
	gdnctl help --man trace >t.1 &&
	test_grep -F "\\-\\-format" t.1 &&
	test_grep -F "gdnctl.trace_summary.v1" t.1 &&
	! grep -n "\(^\|[^\\]\)-" t.1 &&
	! grep -vE "^\.(TH|SH|SS|TP|PP|nf|fi|nh|ad|B|BR|I|RS|RE)( |$)" t.1 | grep -n "^[.'"'"']"
'

test_expect_success 'man -l shows a page' '
	if command -v man >/dev/null 2>&1; then
		gdnctl help --man lint-log >l.1 &&
		MANWIDTH=120 man -l l.1 >out 2>err &&
		test_grep "gdnctl-lint-log - check the markdown running log" out &&
		test_grep -e "--log-file PATH" out
	fi
'

test_expect_success 'help --man of an unknown command: exit 2' '
	test_must_fail =2 gdnctl help --man frob 2>err &&
	test_grep "not a gdnctl command" err
'

# The build wrote the pages to man/ (docs/gdnctl-docs.cmake, after linking).
test_expect_success 'the build generated man/*.1 for every command, equal to help --man' '
	test -n "${GDNCTL_BUILD_DIR:-}" && test -d "$GDNCTL_BUILD_DIR/man" &&
	gdnctl help --man >expect && test_cmp expect "$GDNCTL_BUILD_DIR/man/gdnctl.1" &&
	for c in $commands; do
		gdnctl help --man $c >expect &&
		test_cmp expect "$GDNCTL_BUILD_DIR/man/gdnctl-$c.1" || exit 1
	done &&
	ls "$GDNCTL_BUILD_DIR/man" | sort >have &&
	{ echo gdnctl.1; for c in $commands; do echo gdnctl-$c.1; done; } | sort >want &&
	test_cmp want have
'

test_done
