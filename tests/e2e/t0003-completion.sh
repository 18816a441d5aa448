#!/usr/bin/env bash
# Shell completion generated from the command and option tables: the bash
# script is sourced into a real bash and its function called with
# COMP_WORDS/COMP_CWORD; the zsh script is driven in a real interactive zsh
# through zsh/zpty, with compadd wrapped to print what would be offered.
. "$(dirname "$0")/lib.sh"

commands=$(gdnctl --help | sed -n "/^Commands:/,/^$/p" | awk "NR>1 && NF {print \$1}")
aliases=$(gdnctl --help | sed -n "/^Aliases:/,/^$/p" | awk "NR>1 && NF {print \$1}")

# The choices -h prints for an option: "--perf-mode {a|b|c}" -> "a b c", sorted.
choices_of() {
	local cmd=$1 opt=$2
	shift 2
	gdnctl $cmd "$@" -h | sed -nE "s/^ .*$opt \\{([^}]*)\\}.*/\\1/p" | tr '|' '\n' | sort
}

# The long options of the option lines of -h that start with a prefix, sorted.
options_of() {
	local prefix=$1
	shift
	gdnctl "$@" -h | sed -nE "s/^    (-[a-zA-Z], )?--(\\[no-\\])?([a-z][a-z0-9-]*).*/--\\3 \\2/p" |
		while read -r o no; do
			echo "$o"
			[ -z "$no" ] || echo "--no-${o#--}"
		done | grep -- "^$prefix" | sort -u
}

# bash: complete WORDS... (the last word is the one under the cursor).
bcomp() {
	bash -c '
		source ./gdnctl.bash || exit 1
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="$*" COMP_POINT=${#COMP_LINE}
		_gdnctl
		printf "%s\n" "${COMPREPLY[@]}"
	' bcomp "$@" | sed "/^$/d" | sort
}

test_expect_success 'completion bash prints a script bash accepts' '
	gdnctl completion bash >gdnctl.bash &&
	bash -n gdnctl.bash &&
	bash -c "source ./gdnctl.bash && complete -p gdnctl" >out &&
	test_grep "complete -F _gdnctl gdnctl" out
'

test_expect_success 'completion without a shell, or an unknown one: exit 2' '
	test_must_fail =2 gdnctl completion 2>err &&
	test_grep "usage: gdnctl completion" err &&
	test_must_fail =2 gdnctl completion fish 2>err &&
	test_grep "unknown shell '\''fish'\''" err
'

test_expect_success 'bash: gdnctl lo<TAB> offers the commands starting with lo' '
	bcomp gdnctl lo >actual &&
	printf "%s\n" $commands $aliases | grep "^lo" | sort >expect &&
	test_line_count -ge 2 expect &&
	test_cmp expect actual
'

test_expect_success 'bash: gdnctl <TAB> offers every command and alias' '
	bcomp gdnctl "" >actual &&
	printf "%s\n" $commands $aliases | sort >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: gdnctl loop --perf-m<TAB> offers --perf-mode and --perf-metric' '
	bcomp gdnctl loop --perf-m >actual &&
	test_grep -x -e "--perf-mode" actual &&
	test_grep -x -e "--perf-metric" actual &&
	options_of --perf-m loop >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: gdnctl loop --perf-mode <TAB> offers its choices' '
	choices_of loop --perf-mode >expect &&
	test_line_count -ge 2 expect &&
	bcomp gdnctl loop --perf-mode "" >actual &&
	test_cmp expect actual &&
	bcomp gdnctl loop --perf-mode = "" >actual &&
	test_cmp expect actual &&
	bcomp gdnctl -C . loop --iterations 3 --perf-mode "" >actual &&
	test_cmp expect actual
'

test_expect_success 'bash: gdnctl trace <TAB> offers summary and diff' '
	bcomp gdnctl trace "" >actual &&
	printf "%s\n" diff summary >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: a subcommand completes its own options and choices' '
	bcomp gdnctl trace summary --b >actual &&
	echo "--by" >expect &&
	test_cmp expect actual &&
	choices_of "trace summary" --by >expect &&
	bcomp gdnctl trace summary --by "" >actual &&
	test_cmp expect actual &&
	bcomp gdnctl trace diff --b >actual &&
	echo "--by" >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: config subcommands, and its options after one' '
	bcomp gdnctl config "" >actual &&
	printf "%s\n" get keys show >expect &&
	test_cmp expect actual &&
	bcomp gdnctl config show --or >actual &&
	echo "--origin" >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: PATH options and trace inputs complete files, DIR ones directories' '
	mkdir -p dir.d && touch log.md &&
	bcomp gdnctl lint-log --log-file lo >actual &&
	echo log.md >expect &&
	test_cmp expect actual &&
	bcomp gdnctl trace summary lo >actual &&
	test_cmp expect actual &&
	bcomp gdnctl -C di >actual &&
	echo dir.d >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: negatable flags complete --no-NAME; help completes commands' '
	bcomp gdnctl lint-log --no-check >actual &&
	echo "--no-check-commits" >expect &&
	test_cmp expect actual &&
	bcomp gdnctl help tr >actual &&
	echo trace >expect &&
	test_cmp expect actual
'

test_expect_success 'bash: every command completes exactly the options its -h lists' '
	for c in $commands $aliases; do
		bcomp gdnctl $c -- >actual &&
		options_of -- $c >expect &&
		{ test_cmp expect actual || { echo "in $c"; exit 1; }; }
	done
'

# zsh, driven for real: an interactive zsh in a pseudo-terminal (zsh/zpty)
# loads the script after compinit; compadd is wrapped to print each match.
if ! command -v zsh >/dev/null 2>&1; then
	test_skip 'zsh completion' 'zsh is not installed (Debian: zsh)'
	test_done
fi

cat >capture.zsh <<'EOF'
PROMPT='' RPROMPT=''
autoload -U compinit && compinit -u -D
zstyle ':completion:*' list-grouped false
zstyle ':completion:*' insert-tab false
compadd() {
	if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then
		builtin compadd "$@"
		return $?
	fi
	local -a __hits
	builtin compadd -A __hits "$@"
	local ret=$? h
	for h in $__hits; do print -r -- "<M>$h</M>"; done
	return $ret
}
_capture_done() { print -r -- "<END>"; exit }
zle -N _capture_done
bindkey '^X' _capture_done
bindkey '^I' complete-word
source "$1"
EOF

cat >drive.zsh <<'EOF'
zmodload zsh/zpty || exit 1
zpty z "zsh -f -i"
zpty -w z "source ${(q)PWD}/capture.zsh ${(q)1}; print READY"
zpty -r z line '*READY*'
zpty -r z line '*READY*'
zpty -w -n z "$2"$'\t'
zpty -w -n z $'\C-x'
local out=''
while zpty -r z line; do out+=$line; [[ $line == *'<END>'* ]] && break; done
zpty -d z
[[ $out == *'<END>'* ]] || { print -u2 "no end marker: $out"; exit 1; }
print -r -- ${(F)${(M)${(s:</M>:)out}:#*<M>*}//*<M>/}
EOF

# zsh: complete the line "$1" (ends where the cursor is).
zcomp() {
	timeout 30 zsh -f drive.zsh "$PWD/_gdnctl" "$1" | tr -d '\r' | sed "/^$/d" | sort -u
}

test_expect_success 'completion zsh prints a script zsh loads, defining _gdnctl for gdnctl' '
	gdnctl completion zsh >_gdnctl &&
	zsh -n _gdnctl &&
	zsh -fc "autoload -U compinit && compinit -u -D && source ./_gdnctl &&
		print -r -- \$_comps[gdnctl] && (( \$+functions[_gdnctl_cmd_loop] ))" >out &&
	echo _gdnctl >expect &&
	test_cmp expect out
'

test_expect_success 'zsh from $fpath: #compdef autoloads it' '
	mkdir -p fp && cp _gdnctl fp/ &&
	zsh -fc "fpath=(\$PWD/fp \$fpath); autoload -U compinit && compinit -u -D &&
		print -r -- \$_comps[gdnctl]" >out &&
	echo _gdnctl >expect &&
	test_cmp expect out
'

test_expect_success 'zsh: gdnctl lo<TAB> offers the commands starting with lo' '
	zcomp "gdnctl lo" >actual &&
	printf "%s\n" $commands $aliases | grep "^lo" | sort >expect &&
	test_cmp expect actual
'

test_expect_success 'zsh: gdnctl loop --perf-m<TAB> offers --perf-mode and --perf-metric' '
	zcomp "gdnctl loop --perf-m" >actual &&
	options_of --perf-m loop >expect &&
	test_cmp expect actual
'

test_expect_success 'zsh: gdnctl loop --perf-mode <TAB> offers its choices' '
	zcomp "gdnctl loop --perf-mode " >actual &&
	choices_of loop --perf-mode >expect &&
	test_cmp expect actual
'

test_expect_success 'zsh: gdnctl trace <TAB> and a subcommand option' '
	zcomp "gdnctl trace " >actual &&
	printf "%s\n" diff summary >expect &&
	test_cmp expect actual &&
	zcomp "gdnctl trace summary --format " >actual &&
	choices_of "trace summary" --format >expect &&
	test_cmp expect actual
'

test_done
