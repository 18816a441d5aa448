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

# journal_count EVENT: how many EVENT lines logs/loop.jsonl has (0 before it exists).
journal_count() {
	[ -f logs/loop.jsonl ] || {
		echo 0
		return 0
	}
	grep -c "\"event\":\"$1\"" logs/loop.jsonl || true
}

# wait_journal EVENT N: wait (10 s at most) until logs/loop.jsonl has N EVENT lines.
wait_journal() {
	local i
	for i in $(seq 100); do
		[ "$(journal_count "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	echo "wait_journal: $(journal_count "$1") $1 events after 10 s, not $2" >&2
	return 1
}

# integrity_project [YAML]: a fresh $TRASH/repo (and no $TRASH/logs), not yet
# committed, for the integrity gate's tests: ./profile.sh writes a trace of
# $(cat dev_us.txt) microseconds per step (tests/e2e/fake-trace.sh) and
# prints throughput/duration_ms=$(cat cost.txt) (40000 and 7 to start);
# gdnctl.yaml names them under project: and ends with YAML.
integrity_project() {
	rm -rf "$TRASH/repo" "$TRASH/logs" &&
		test_create_repo "$TRASH/repo" &&
		(
			cd "$TRASH/repo" &&
				cat >profile.sh <<-EOF2 &&
					#!/bin/sh
					mkdir -p out && sh "$GDNCTL_SOURCE_DIR/tests/e2e/fake-trace.sh" "\$(cat dev_us.txt)" >out/trace.json
					echo "throughput/duration_ms=\$(cat cost.txt)"
				EOF2
				chmod +x profile.sh && echo 7 >cost.txt && echo 40000 >dev_us.txt &&
				printf "out/\n" >.gitignore &&
				printf "project:\n  profile_command: ./profile.sh\n  trace_glob: out/*.json\n%s" \
					"${1:-}" >gdnctl.yaml
		)
}
