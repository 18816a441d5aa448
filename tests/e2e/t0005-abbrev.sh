#!/usr/bin/env bash
# Option abbreviations as argparse takes them (a unique prefix of a long
# option, of its --no- form or of --help; an exact name always wins; an
# ambiguous prefix lists the candidates), "did you mean" for unknown
# commands, options and configuration keys, `help CMD SUB`, and time flags
# that take durations.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

unset GDNCTL_LOG_FILE GDNCTL_BACKEND

cat >pending.md <<\EOF2
# Log

### Iteration 1 - first
- Date: 2026-01-01
- Commit: (pending)
EOF2

agent commit-one <<'EOF2'
echo "one $(date +%s%N)" >>work.txt && git add work.txt && git commit -qm "agent: one change"
EOF2

run_loop() {
	(cd repo && gdnctl loop --agent command --agent-cmd "$AG/commit-one {prompt_file}" \
		--log-dir "$TRASH/logs" --retry-sleep-seconds 0 "$@")
}

test_expect_success 'lint-log --allow-p and --log: unique prefixes, as the original took them' '
	test_must_fail =1 gdnctl lint-log --log-file pending.md >out 2>&1 &&
	gdnctl lint-log --allow-p --log pending.md >out &&
	test_grep "log lint passed" out &&
	gdnctl lint-log --allow-pe --log=pending.md >out &&
	test_grep "log lint passed" out
'

test_expect_success 'ray-test --no-w is --no-wait; ray-wait --pri is --print-only' '
	gdnctl ray-test --no-w --dry-run >out 2>&1 &&
	test_grep -e "--no_wait --" out &&
	gdnctl ray-wait --pri JOB >out 2>&1 &&
	test_grep "wait-job JOB --poll 5.0 --tail 200$" out
'

test_expect_success 'the --no- form of a negatable flag abbreviates too' '
	printf "# Log\n\n### Iteration 1 - one\n- Commit: none\n" >nofields.md &&
	test_must_fail =1 gdnctl lint-log --log nofields.md --require-fields >out 2>&1 &&
	gdnctl lint-log --log nofields.md --require-fields --no-req >out 2>&1 &&
	test_grep "log lint passed" out
'

test_expect_success 'an exact name wins over the longer names it starts' '
	gdnctl lint-log --log pending.md --require-field Date --allow-pending >out &&
	test_grep "log lint passed" out
'

test_expect_success 'an ambiguous prefix: exit 2, one error line listing the candidates' '
	test_must_fail =2 gdnctl loop --iter 1 >out 2>err &&
	echo "[gdnctl] error: ambiguous option '\''--iter'\'': could be --iterations, --iteration-error-policy" >expect &&
	head -n 1 err >actual &&
	test_cmp expect actual &&
	test_grep "see '\''gdnctl loop -h'\''" err &&
	test_line_count = 2 err &&
	test_must_fail =2 gdnctl loop --va 2>err &&
	test_grep "^\[gdnctl\] error: ambiguous option '\''--va'\'': could be --validation-mode, --validation-policy, .* and [0-9][0-9]* more$" err &&
	test_must_fail =2 gdnctl lint-log --require-fi 2>err &&
	test_grep "could be --require-fields, --require-field$" err
'

test_expect_success '--he is --help; a value for it is an error' '
	gdnctl lint-log -h >expect &&
	gdnctl lint-log --he >actual &&
	test_cmp expect actual &&
	test_must_fail =2 gdnctl lint-log --help=x 2>err &&
	test_grep "option '\''--help'\'' takes no value" err
'

test_expect_success 'global options: --vers is --version; a typo gets a did you mean' '
	gdnctl --version >expect &&
	gdnctl --vers >actual &&
	test_cmp expect actual &&
	test_must_fail =2 gdnctl --verison 2>err &&
	test_grep "unknown global option '\''--verison'\''; did you mean '\''--version'\''?$" err
'

test_expect_success 'did you mean: an unknown command, exit 2' '
	test_must_fail =2 gdnctl lodp >out 2>err &&
	echo "[gdnctl] error: '\''lodp'\'' is not a gdnctl command; see '\''gdnctl --help'\''; did you mean '\''loop'\''?" >expect &&
	test_cmp expect err &&
	test_must_fail =2 gdnctl help lint-lgo 2>err &&
	test_grep "did you mean '\''lint-log'\''?$" err &&
	test_must_fail =2 gdnctl xyzzy 2>err &&
	test_grep -v "did you mean" err
'

test_expect_success 'did you mean: an unknown option, exit 2' '
	test_must_fail =2 gdnctl loop --iteratons 1 2>err &&
	test_grep "^\[gdnctl\] error: unknown option '\''--iteratons'\''; did you mean '\''--iterations'\''?$" err &&
	test_must_fail =2 gdnctl lint-log --alow-pending 2>err &&
	test_grep "did you mean '\''--allow-pending'\''?$" err
'

test_expect_success 'did you mean: an unknown key in gdnctl.yaml, exit 3, file:line:col' '
	test_create_repo cfg &&
	printf "backnd: ray\n" >cfg/gdnctl.yaml &&
	(cd cfg && test_must_fail =3 gdnctl config) 2>err &&
	root=$(cd cfg && pwd -P) &&
	echo "[gdnctl] error: $root/gdnctl.yaml:1:1: unknown key '\''backnd'\''; did you mean '\''backend'\''?" >expect &&
	test_cmp expect err
'

test_expect_success 'did you mean: config get of an unknown key, exit 2' '
	test_must_fail =2 gdnctl config get lint.scop 2>err &&
	test_grep "unknown configuration key '\''lint.scop'\''.*; did you mean '\''lint.scope'\''?$" err
'

test_expect_success 'help trace summary is trace summary -h' '
	gdnctl trace summary -h >expect &&
	gdnctl help trace summary >actual &&
	test_cmp expect actual &&
	gdnctl trace diff -h >expect &&
	gdnctl help trace diff >actual &&
	test_cmp expect actual &&
	test_must_fail =2 gdnctl help trace sumary 2>err &&
	test_grep "'\''sumary'\'' is not a subcommand of '\''trace'\''.*did you mean '\''summary'\''?$" err &&
	test_must_fail =2 gdnctl help lint-log extra 2>err &&
	test_grep "not a subcommand of '\''lint-log'\''" err
'

test_expect_success 'loop time flags take durations; plain seconds still work' '
	test_create_repo repo &&
	run_loop --iterations 2 --prompt-file /dev/null --sleep-seconds 5m --codex-timeout-seconds 1.5h \
		--codex-idle-timeout-seconds 15m --retry-sleep-seconds 1m --dev-tpu-ready-timeout 15m \
		--dev-tpu-stop-timeout 2m --validation-retry-sleep 2m --dry-run >out 2>err &&
	run_loop --iterations 2 --prompt-file /dev/null --sleep-seconds 0.5 --retry-sleep-seconds=30 \
		--dry-run >out 2>err &&
	test_must_fail =2 run_loop --iterations 1 --sleep-seconds 5min 2>err &&
	test_grep "option '\''--sleep-seconds'\'': expected seconds or a duration like 90s, 15m or 1.5h, got '\''5min'\''" err
'

test_expect_success '--max-agent-minutes 1ms: a duration, not 1 minute' '
	rm -rf logs &&
	run_loop --iterations 3 --prompt-file /dev/null --sleep-seconds 0 --max-agent-minutes 1ms \
		>out 2>err &&
	test_grep "stopping before iteration 2: agent-budget" out
'

test_expect_success '--until-time +1.5h and a 1.5h duration flag parse' '
	rm -rf logs &&
	run_loop --iterations 1 --prompt-file /dev/null --sleep-seconds 0 --until-time +1.5h \
		--agent-timeout 1.5h >out 2>err &&
	test_grep "1 iteration" out
'

test_expect_success 'ray-wait --poll and --timeout take durations' '
	gdnctl ray-wait --poll 1.5m --timeout 1h --print-only JOB >out 2>&1 &&
	test_grep "wait-job JOB --poll 90.0 --timeout 3600.0 --tail 200$" out
'

test_done
