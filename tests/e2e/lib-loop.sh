# Scaffolding shared by the `gdnctl loop` tests (sourced after lib.sh).
#
# agent NAME <<'EOF' ... EOF: the shell script on stdin becomes the
# executable fake agent $AG/NAME (for --agent-cmd "$AG/NAME {prompt_file}").
# With AGENT_PID_FILE set, the agent first writes its pid (= its process
# group) there.

AG=$TRASH/agents
mkdir -p "$AG"
agent() {
	{
		echo '#!/bin/sh'
		[ -z "${AGENT_PID_FILE:-}" ] || printf 'echo $$ >"%s"\n' "$AGENT_PID_FILE"
		cat
	} >"$AG/$1" && chmod +x "$AG/$1"
}
