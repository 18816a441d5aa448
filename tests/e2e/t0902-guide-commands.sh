#!/usr/bin/env bash
# docs/guide.md stays true to the binary: every `gdnctl ...` command line in
# its code blocks names an existing command, and every --option it uses is
# one that command's -h prints (trace: the subcommand's -h).
. "$(dirname "$0")/lib.sh"

GUIDE=$GDNCTL_SOURCE_DIR/docs/guide.md

# The command lines of a markdown file's code blocks: "CMD<TAB>--opt --opt...".
extract() {
	python3 - "$1" <<-\EOF
	import shlex, sys
	blocks, cur, lang = [], None, None
	for line in open(sys.argv[1]).read().splitlines():
	    if line.lstrip().startswith("```"):
	        if cur is None:
	            cur, lang = [], line.strip()[3:]
	        else:
	            if lang in ("", "sh", "bash"):
	                blocks.append("\n".join(cur))
	            cur = None
	    elif cur is not None:
	        cur.append(line)
	for block in blocks:
	    for line in block.replace("\\\n", " ").splitlines():
	        line = line.split(" #")[0].strip()
	        i = line.find("gdnctl ")
	        if i < 0 or (i > 0 and line[i - 1] not in " (|&"):
	            continue
	        try:
	            words = shlex.split(line[i:])
	        except ValueError:
	            continue
	        words = words[1:]
	        while words and words[0] in ("-C", "-c"):
	            words = words[2:]
	        if not words or words[0].startswith("-"):
	            continue
	        cmd = words[0]
	        if cmd == "trace" and len(words) > 1:
	            cmd = "trace " + words[1]
	        if "--" in words:
	            words = words[:words.index("--")]  # the rest is the command's own argv
	        opts = sorted({w.split("=")[0] for w in words[1:] if w.startswith("--") and len(w) > 2})
	        print(cmd + "\t" + " ".join(opts))
	EOF
}

# Print "[CMD OPT]" for each option (or command) the binary does not know.
unknown() {
	local cmd opts o
	while IFS="	" read -r cmd opts; do
		# shellcheck disable=SC2086
		if ! gdnctl $cmd -h >help 2>&1; then
			printf "[%s: no such command]\n" "$cmd"
			continue
		fi
		for o in $opts; do
			grep -qe "$o\b" help || grep -qe "--\[no-\]${o#--no-}\b" help ||
				grep -qe "--\[no-\]${o#--}\b" help ||
				printf "[%s %s]\n" "$cmd" "$o"
		done
	done
}

test_expect_success 'the guide has command lines' '
	extract "$GUIDE" >cmds &&
	test_line_count -gt 30 cmds &&
	grep -q "^loop	" cmds &&
	grep -q "^doctor	" cmds &&
	grep -q "^trace summary	" cmds
'

test_expect_success 'every command and option in the guide exists' '
	unknown <cmds >missing &&
	if test -s missing; then cat missing; false; fi
'

test_expect_success 'the check finds a made-up option and command' '
	printf "%s\n" "\`\`\`sh" "gdnctl doctor --timeout 3s --no-such-option" \
		"gdnctl -C x no-such-command --json" "gdnctl loop --iterations 1 \\\\" \
		"    --codex-ephemeral --no-codex-ephemeral --bogus-flag" \
		"gdnctl run -b x -- prog --not-checked" "\`\`\`" >fake.md &&
	extract fake.md >fake &&
	unknown <fake >missing &&
	printf "%s\n" "[doctor --no-such-option]" "[no-such-command: no such command]" \
		"[loop --bogus-flag]" >expect &&
	test_cmp expect missing
'

test_done
