#!/usr/bin/env bash
# gdnctl loop --perf-mode on with --sync-main-policy: when the sync moves
# HEAD (upstream work merged under the champion), the champion is
# re-profiled on the new HEAD before the agent runs, so the next candidate
# is compared with the code it was built on. Here upstream makes the
# benchmark 3x faster and the agent changes nothing that matters: without
# the re-profile the agent's commit would be "promoted" by +200%.
. "$(dirname "$0")/lib.sh"
. "$GDNCTL_SOURCE_DIR/tests/e2e/lib-loop.sh"

agent notes <<'EOF2'
echo "note $(date +%s%N)" >>notes.txt && git add notes.txt && git commit -qm "agent: notes"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

# repo (the loop's tree) and other (an upstream clone) share upstream.git
new_repos() {
	rm -rf repo other upstream.git logs &&
		test_create_repo "$TRASH/repo" &&
		(
			cd repo &&
				printf '#!/bin/sh\necho "throughput/mfu=$(cat speed.txt)"\n' >bench.sh &&
				chmod +x bench.sh && echo 1.0 >speed.txt &&
				git add . && git commit -qm "bench" &&
				git init -q --bare -b main ../upstream.git &&
				git remote add origin ../upstream.git && git push -q origin main
		) &&
		git clone -q upstream.git other &&
		git -C other config user.name up && git -C other config user.email up@example.com
}

run_loop() {
	(cd repo && GDNCTL_PROFILE_COMMAND=./bench.sh \
		gdnctl loop --agent command --agent-cmd "$AG/notes {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--iterations 1 --validation-mode profile-only --perf-mode on \
		--sync-main-policy each-iteration "$@")
}

test_expect_success 'upstream made it faster: the champion is re-profiled, the no-op is not promoted' '
	new_repos &&
	base=$(git -C repo rev-parse HEAD) &&
	: the baseline is measured before iteration 1, then upstream moves &&
	(
		cd other && echo 3.0 >speed.txt && git commit -qam "upstream: 3x faster" &&
		git push -q origin main
	) &&
	up=$(git -C other rev-parse HEAD) &&
	run_loop >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance baseline initialized: throughput/mfu=1 @ " out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] the sync moved HEAD to ${up:0:12}: re-profiling the champion (was ${base:0:12})$" out &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] performance champion re-profiled: throughput/mfu=3 @ ${up:0:12}$" out &&
	test_grep "\"event\":\"perf_reprofile\",\"iteration\":1,\"commit\":\"$up\",\"was\":\"$base\",\"metric\":\"throughput/mfu\",\"metric_value\":3" logs/loop.jsonl &&
	test_grep "performance within hold band vs champion: 3 -> 3 " out &&
	test_grep ! "champion promoted" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: notes" &&
	python3 - logs/perf_state.json "$up" "$base" <<-\EOF2
	import json, sys
	s = json.load(open(sys.argv[1]))
	c = s["champion"]
	assert c["commit"] == sys.argv[2], c
	assert c["reprofiled_from"] == sys.argv[3], c
	assert c["reprofiled"] is True and c["metric_value"] == 3.0, c
	assert [h["decision"] for h in s["history"]] == ["baseline", "within_threshold"], s["history"]
	EOF2
'

test_expect_success 'a sync that brings nothing new re-profiles nothing' '
	new_repos &&
	run_loop >out 2>err &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] syncing branch with origin/main$" out &&
	test_grep ! "re-profil" out &&
	test_grep ! "\"event\":\"perf_reprofile\"" logs/loop.jsonl &&
	test_grep "performance within hold band vs champion: 1 -> 1 " out
'

test_expect_success 'a profile that fails while re-profiling is an iteration error, nothing promoted' '
	new_repos &&
	(
		cd other && echo BROKEN >speed.txt && printf "#!/bin/sh\nexit 7\n" >bench.sh &&
		git commit -qam "upstream: breaks the bench" && git push -q origin main
	) &&
	test_must_fail run_loop >out 2>err &&
	test_grep "re-profiling the champion after the sync failed: profile exit 7" err &&
	test_grep ! "\"event\":\"perf_reprofile\"" logs/loop.jsonl &&
	test_grep ! "agent: notes" logs/loop.jsonl
'

test_done
