#!/usr/bin/env bash
# gdnctl config: every layer and its precedence, origins, one-line
# file:line:col errors with exit 3, get, keys, and the --json document.
. "$(dirname "$0")/lib.sh"

unset GDNCTL_LOG_FILE GDNCTL_SECRETS GDNCTL_LINT_SCOPE GDNCTL_LINT_SINCE \
	GDNCTL_LINT_REQUIRE_FIELDS GDNCTL_LINT_CHECK_COMMITS

test_expect_success 'setup: a repository with gdnctl.yaml, and a user config' '
	test_create_repo repo &&
	printf "lint:\n  scope: all\n  since: 4\n" >repo/gdnctl.yaml &&
	mkdir -p "$XDG_CONFIG_HOME/gdnctl" &&
	printf "lint:\n  since: 2\n  require_fields: [Date, Commit]\n" \
		>"$XDG_CONFIG_HOME/gdnctl/config.yaml"
'
root=$(cd repo && pwd -P)
user=$XDG_CONFIG_HOME/gdnctl/config.yaml

test_expect_success 'config show: values and sources of every layer' '
	(cd repo && gdnctl config show) >out &&
	test_grep -E "^KEY +VALUE +SOURCE$" out &&
	test_grep -E "^lint\.scope +all +repo$" out &&
	test_grep -E "^lint\.since +4 +repo$" out &&
	test_grep -E "^lint\.require_fields +Date,Commit +user$" out &&
	test_grep -E "^lint\.check_commits +false +default$" out &&
	test_grep -E "^log_file +lib/levanter/\.agents/projects/gdn_pallas_tpu_hillclimb\.md +default$" out &&
	gdnctl config keys --json >keys.json &&
	n=$(python3 -c "import json,sys; print(sum(1 for k in json.load(open(sys.argv[1]))[\"keys\"] if k[\"type\"] != \"map\" and \"*\" not in k[\"key\"]))" keys.json) &&
	test "$n" -ge 6 &&
	test_line_count = $((n + 1)) out
'

test_expect_success 'config alone is config show' '
	(cd repo && gdnctl config show) >expect &&
	(cd repo && gdnctl config) >actual &&
	test_cmp expect actual
'

test_expect_success 'the columns line up' '
	(cd repo && gdnctl config --origin) >out &&
	col=$(head -1 out | sed "s/SOURCE.*//" | wc -c) &&
	while read -r line; do
		test "$(printf "%s\n" "$line" | cut -c"$col"- | cut -c1)" != " " || exit 1
	done <out
'

test_expect_success '--origin names file:line:col' '
	(cd repo && gdnctl config show --origin) >out &&
	test_grep -E "^lint\.since +4 +repo +$root/gdnctl\.yaml:3:10$" out &&
	test_grep -E "^lint\.scope +all +repo +$root/gdnctl\.yaml:2:10$" out &&
	test_grep -E "^lint\.require_fields +Date,Commit +user +$user:3:19$" out &&
	test_grep -E "^lint\.check_commits +false +default +default$" out
'

test_expect_success 'the environment beats the files' '
	(cd repo && GDNCTL_LINT_SINCE=7 GDNCTL_LOG_FILE=my/log.md gdnctl config --origin) >out &&
	test_grep -E "^lint\.since +7 +env +GDNCTL_LINT_SINCE$" out &&
	test_grep -E "^log_file +my/log\.md +env +GDNCTL_LOG_FILE$" out
'

test_expect_success 'an empty environment variable counts as unset' '
	(cd repo && GDNCTL_LINT_SINCE= gdnctl config) >out &&
	test_grep -E "^lint\.since +4 +repo$" out
'

test_expect_success '-c beats the environment' '
	(cd repo && GDNCTL_LINT_SINCE=7 gdnctl -c lint.since=9 -c lint.check_commits=yes \
		config show --origin) >out &&
	test_grep -E "^lint\.since +9 +command-line +-c$" out &&
	test_grep -E "^lint\.check_commits +true +command-line +-c$" out
'

test_expect_success 'outside a repository: user file and defaults only' '
	mkdir -p norepo &&
	(cd norepo && GIT_CEILING_DIRECTORIES="$TRASH" gdnctl config) >out &&
	test_grep -E "^lint\.since +2 +user$" out &&
	test_grep -E "^lint\.scope +last-entry +default$" out
'

test_expect_success 'HOME/.config when XDG_CONFIG_HOME is unset' '
	(cd repo && unset XDG_CONFIG_HOME && gdnctl config --origin) >out &&
	test_grep -E "^lint\.require_fields +Date,Commit +user +$HOME/\.config/gdnctl/config\.yaml:3:19$" out
'

test_expect_success 'config get prints the bare value' '
	(cd repo && gdnctl config get lint.since) >out &&
	echo 4 >expect &&
	test_cmp expect out &&
	(cd repo && gdnctl config get lint.require_fields) >out &&
	echo Date,Commit >expect &&
	test_cmp expect out
'

test_expect_success 'config get of an unknown key: exit 2' '
	(cd repo && test_must_fail =2 gdnctl config get lint.nope) >out 2>err &&
	test ! -s out &&
	test_grep "unknown configuration key '\''lint.nope'\''" err &&
	(cd repo && test_must_fail =2 gdnctl config get lint) 2>err
'

test_expect_success 'an unknown key in gdnctl.yaml: exit 3, one line with file:line:col' '
	test_create_repo bad &&
	printf "lint:\n  foo: 1\n" >bad/gdnctl.yaml &&
	bad=$(cd bad && pwd -P) &&
	(cd bad && test_must_fail =3 gdnctl config show) >out 2>err &&
	echo "[gdnctl] error: $bad/gdnctl.yaml:2:3: unknown key '\''lint.foo'\''" >expect &&
	test_cmp expect err &&
	test ! -s out
'

test_expect_success 'a value of the wrong type: exit 3, file:line:col' '
	printf "lint:\n  since: abc\n" >bad/gdnctl.yaml &&
	bad=$(cd bad && pwd -P) &&
	(cd bad && test_must_fail =3 gdnctl config) 2>err &&
	echo "[gdnctl] error: $bad/gdnctl.yaml:2:10: '\''lint.since'\'' expects an integer, got '\''abc'\''" >expect &&
	test_cmp expect err
'

test_expect_success 'YAML syntax errors and refused features: exit 3, one line' '
	bad=$(cd bad && pwd -P) &&
	for y in "lint:\n  scope: \"open" "log_file: a\n lint: b" "- a" "log_file: &x a" \
		"lint: {}\nlint: {}" "log_file: \xff"; do
		printf "%b\n" "$y" >bad/gdnctl.yaml &&
		(cd bad && test_must_fail =3 gdnctl config) 2>err &&
		test_line_count = 1 err &&
		test_grep -E "^\[gdnctl\] error: $bad/gdnctl\.yaml:[0-9]+:[0-9]+: " err || exit 1
	done
'

test_expect_success 'a YAML syntax error carries the libyaml problem' '
	printf "log_file: a\n  lint: b\n" >bad/gdnctl.yaml &&
	bad=$(cd bad && pwd -P) &&
	(cd bad && test_must_fail =3 gdnctl config) 2>err &&
	echo "[gdnctl] error: $bad/gdnctl.yaml:2:7: mapping values are not allowed in this context" >expect &&
	test_cmp expect err
'

test_expect_success 'the lint-log command reads the same configuration' '
	printf "lint:\n  nope: 1\n" >bad/gdnctl.yaml &&
	(cd bad && test_must_fail =3 gdnctl lint-log) 2>err &&
	test_grep "unknown key '\''lint.nope'\''" err
'

test_expect_success 'a bad environment variable or -c: exit 3' '
	(cd repo && GDNCTL_LINT_SCOPE=some test_must_fail =3 gdnctl config) 2>err &&
	echo "[gdnctl] error: GDNCTL_LINT_SCOPE: '\''lint.scope'\'' expects one of last-entry, all, got '\''some'\''" >expect &&
	test_cmp expect err &&
	(cd repo && test_must_fail =3 gdnctl -c lint.scop=all config) 2>err &&
	echo "[gdnctl] error: -c: unknown key '\''lint.scop'\''; did you mean '\''lint.scope'\''?" >expect &&
	test_cmp expect err
'

test_expect_success 'an unreadable user file is an error, a missing one is not' '
	mv "$user" "$user.away" &&
	(cd repo && gdnctl config) >out &&
	test_grep -E "^lint\.require_fields +default$" out &&
	mkdir "$user" &&
	(cd repo && test_must_fail =3 gdnctl config) 2>err &&
	test_grep "cannot read '\''$user'\''" err &&
	rmdir "$user" &&
	mv "$user.away" "$user"
'

test_expect_success 'config show --json: schema and typed entries' '
	(cd repo && GDNCTL_SECRETS=MY_VAR gdnctl -c lint.check_commits=on config show --json) >out.json &&
	python3 -c "
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc[\"schema\"] == \"gdnctl.config.v1\", doc
e = {x[\"key\"]: x for x in doc[\"entries\"]}
want = {\"lint.check_commits\", \"lint.require_fields\", \"lint.scope\", \"lint.since\", \"log_file\", \"secrets\"}
assert want <= set(e), sorted(e)
assert not any(\"*\" in k for k in e), sorted(e)
for x in doc[\"entries\"]:
    assert set(x) == {\"key\", \"value\", \"source\", \"origin\"}, x
assert e[\"lint.since\"][\"value\"] == 4 and e[\"lint.since\"][\"source\"] == \"repo\"
assert e[\"lint.since\"][\"origin\"] == sys.argv[2] + \"/gdnctl.yaml:3:10\", e[\"lint.since\"]
assert e[\"lint.require_fields\"][\"value\"] == [\"Date\", \"Commit\"]
assert e[\"lint.require_fields\"][\"source\"] == \"user\"
assert e[\"lint.check_commits\"] == {\"key\": \"lint.check_commits\", \"value\": True, \"source\": \"command-line\", \"origin\": \"-c\"}
assert e[\"secrets\"][\"value\"] == [\"MY_VAR\"] and e[\"secrets\"][\"origin\"] == \"GDNCTL_SECRETS\"
assert e[\"log_file\"][\"source\"] == \"default\" and e[\"log_file\"][\"origin\"] == \"default\"
" out.json "$root"
'

test_expect_success 'config keys lists every key, also as JSON' '
	gdnctl config keys >out &&
	for k in log_file lint.scope lint.require_fields lint.since lint.check_commits secrets; do
		test_grep -q "^$k (" out || exit 1
	done &&
	gdnctl config keys --json >out.json &&
	python3 -c "
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc[\"schema\"] == \"gdnctl.config-keys.v1\"
k = {x[\"key\"]: x for x in doc[\"keys\"]}
assert k[\"lint.scope\"][\"choices\"] == [\"last-entry\", \"all\"], k[\"lint.scope\"]
assert k[\"log_file\"][\"env\"] == \"GDNCTL_LOG_FILE\"
assert k[\"lint.since\"][\"type\"] == \"int\" and k[\"lint.since\"][\"default\"] == \"0\"
" out.json
'

test_expect_success 'usage errors: exit 2' '
	test_must_fail =2 gdnctl config frob 2>err &&
	test_grep "unknown subcommand '\''frob'\''" err &&
	test_must_fail =2 gdnctl config show extra 2>err &&
	test_must_fail =2 gdnctl config get 2>err &&
	test_must_fail =2 gdnctl config get lint.since --json 2>err &&
	test_must_fail =2 gdnctl config --frob 2>err &&
	test_grep "see '\''gdnctl config -h'\''" err
'

test_expect_success 'config -h and help config print the same help' '
	gdnctl config -h >a &&
	gdnctl help config >b &&
	test_cmp a b &&
	test_grep "^usage: gdnctl config \[show\] \[--json\] \[--origin\]$" a
'

test_done
