#!/usr/bin/env bash
# The agent drivers through `gdnctl loop`: claude (a fake that prints the
# documented stream-json shapes), the command driver's word splitting and
# placeholders, the output filter, and clear errors for missing programs.
. "$(dirname "$0")/lib.sh"

BIN=$TRASH/bin
mkdir -p "$BIN"

# A fake `claude`: logs its argv, reads the prompt, acts per $FAKE_CLAUDE.
cat >"$BIN/claude" <<'EOF'
#!/bin/sh
printf '%s\n' "$*" >"$(dirname "$0")/claude.args"
cat >"$(dirname "$0")/claude.stdin"
echo '{"type":"system","subtype":"init","cwd":".","session_id":"0b3c5e1a","tools":["Bash","Edit"],"model":"claude-opus-4-1","permissionMode":"bypassPermissions"}'
case "$FAKE_CLAUDE" in
ok)
	echo "claude was here" >>notes.txt && git add notes.txt && git commit -q -m "claude: notes"
	echo '{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"Adding a note."},{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"git commit -m notes"}}]},"session_id":"0b3c5e1a"}'
	echo '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"[main abc] notes"}]}}'
	echo '{"type":"result","subtype":"success","is_error":false,"duration_ms":2100,"num_turns":3,"result":"Committed the note.","session_id":"0b3c5e1a","total_cost_usd":0.01}'
	;;
usage)
	echo "claude was here" >>notes.txt && git add notes.txt && git commit -q -m "claude: usage"
	echo '{"type":"result","subtype":"success","is_error":false,"result":"Done.","total_cost_usd":0.0375,"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":34}}'
	;;
noresult)
	echo '{"type":"assistant","message":{"content":[{"type":"text","text":"thinking about it"}]}}'
	;;
limited)
	echo '{"type":"rate_limit_event","rate_limit_info":{"status":"rejected","resetsAt":1771390800,"rateLimitType":"five_hour"}}'
	echo '{"type":"result","subtype":"success","is_error":true,"result":"Claude AI usage limit reached|1771390800"}'
	exit 1
	;;
esac
EOF
chmod +x "$BIN/claude"

# A command agent whose path has a space: records its argv, commits.
cat >"$BIN/my agent" <<'EOF'
#!/bin/sh
for a in "$@"; do printf '[%s]\n' "$a"; done >"$(dirname "$0")/agent.args"
cat >"$(dirname "$0")/agent.stdin"
echo "codex"
echo "Editing data.txt."
echo "file update"
echo "M $PWD/data.txt"
echo "@@ -1 +1 @@"
echo "-v1"
echo "+v2"
echo "apply_patch(auto_approved=true) exited 0 in 1ms:"
echo "- a bullet the user must see"
echo "  an indented line the user must see"
echo v2 >data.txt && git commit -q -am "agent: v2"
echo "the agent's summary" >"$2"
EOF
chmod +x "$BIN/my agent"

loop() {
	gdnctl loop --iterations 1 --sleep-seconds 0 --workdir "$TRASH/repo" \
		--log-dir "$TRASH/logs" "$@"
}

test_expect_success 'setup' '
	test_create_repo repo &&
	(cd repo && echo v1 >data.txt && git add data.txt && git commit -q -m data)
'

test_expect_success 'claude: stream-json rendered, result decides, last message written' '
	rm -rf logs &&
	FAKE_CLAUDE=ok loop --agent claude --codex-bin "$BIN/claude" --model opus \
		--reasoning-effort high >out 2>err &&
	echo "-p --output-format stream-json --verbose --dangerously-skip-permissions --model opus --effort high" >expect &&
	test_cmp expect bin/claude.args &&
	test_grep "^# Hill-climb iteration 1 of 1$" bin/claude.stdin &&
	test "$(git -C repo log -1 --format=%s)" = "claude: notes" &&
	test_grep "^claude session 0b3c5e1a (model claude-opus-4-1)$" out &&
	test_grep "^Adding a note.$" out &&
	test_grep "^tool Bash: git commit -m notes$" out &&
	test_grep "^result: success, 3 turns, 2.100 s, \$0.0100$" out &&
	test_grep ! "\"type\"" out &&
	test_grep "\"type\":\"result\"" logs/iteration-001-transcript.log &&
	echo "Committed the note." >expect &&
	test_cmp expect logs/iteration-001-last-message.txt
'

test_expect_success 'claude: the result event usage and total_cost_usd are journaled' '
	rm -rf logs &&
	FAKE_CLAUDE=usage loop --agent claude --codex-bin "$BIN/claude" >out 2>err &&
	test_grep "\"event\":\"usage\",\"iteration\":1,\"input_tokens\":1112,\"output_tokens\":34,\"tokens\":1146,\"cost_usd\":0.03749" logs/loop.jsonl &&
	test_grep "agent usage: 1146 tokens (input 1112, output 34) in 1 iteration, .0.0375" out
'

test_expect_success 'claude: exit 0 without a result event is a failed iteration' '
	rm -rf logs &&
	FAKE_CLAUDE=noresult test_must_fail loop --agent claude --codex-bin "$BIN/claude" \
		>out 2>err &&
	cat out err >all &&
	test_grep "exited 0 without a result event" all &&
	test_grep "^thinking about it$" out
'

test_expect_success 'claude: a rejected rate_limit_event is the reason' '
	rm -rf logs &&
	FAKE_CLAUDE=limited test_must_fail loop --agent claude --codex-bin "$BIN/claude" \
		>out 2>err &&
	cat out err >all &&
	test_grep "rate limited (rate_limit_event rejected: five_hour, resets at 1771390800)" all &&
	test_grep "^rate limit: rejected (five_hour, resets at 1771390800)$" out
'

test_expect_success 'command: quoting, placeholders, prompt on stdin; diff hidden, bullets shown' '
	rm -rf logs &&
	loop --agent command \
		--agent-cmd "\"$BIN/my agent\" {prompt_file} {last_message_file} \"two words\" '\''\$HOME'\'' a\\ b" \
		>out 2>err &&
	printf "[%s]\n" "$TRASH/logs/iteration-001-prompt.txt" "$TRASH/logs/iteration-001-last-message.txt" \
		"two words" "\$HOME" "a b" >expect &&
	test_cmp expect bin/agent.args &&
	test_cmp logs/iteration-001-prompt.txt bin/agent.stdin &&
	test "$(git -C repo log -1 --format=%s)" = "agent: v2" &&
	test_grep "^Editing data.txt.$" out &&
	test_grep "^- a bullet the user must see$" out &&
	test_grep "^  an indented line the user must see$" out &&
	test_grep "^apply_patch(auto_approved=true) exited 0 in 1ms:$" out &&
	test_grep ! "^+v2$" out &&
	test_grep ! "^file update$" out &&
	test_grep "^+v2$" logs/iteration-001-transcript.log &&
	test_grep "^==== gdnctl: command agent started " logs/iteration-001-transcript.log &&
	echo "the agent'\''s summary" >expect &&
	test_cmp expect logs/iteration-001-last-message.txt
'

test_expect_success '--show-file-updates shows the diff block' '
	rm -rf logs &&
	git -C repo reset -q --hard HEAD~1 &&
	loop --agent command --show-file-updates --agent-cmd "\"$BIN/my agent\" x {last_message_file}" \
		>out 2>err &&
	test_grep "^+v2$" out &&
	test_grep "^file update$" out
'

test_expect_success 'command: unbalanced quotes are a clear error' '
	test_must_fail loop --agent command --agent-cmd "prog '\''unbalanced" >out 2>err &&
	test_grep "unbalanced single quote in agent command" err
'

test_expect_success 'missing agent programs are clear errors, not crashes' '
	test_must_fail loop --agent codex --codex-bin /nonexistent/codex >out 2>err &&
	test_grep "codex binary '\''/nonexistent/codex'\'' does not exist or is not executable" err &&
	PATH="$TRASH/no-such-dir" GDNCTL_CLAUDE= test_must_fail loop --agent claude >out 2>err &&
	test_grep "claude binary '\''claude'\'' not found" err &&
	test_must_fail loop --agent command --agent-cmd "no-such-agent-program {prompt_file}" >out 2>err &&
	test_grep "agent program '\''no-such-agent-program'\'' not found in PATH" err
'

test_done
