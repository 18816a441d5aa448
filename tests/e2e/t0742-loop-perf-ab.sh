#!/usr/bin/env bash
# gdnctl loop --perf-ab: the champion (from its own worktree under the log
# dir) and the candidate profiled alternately, the decision on the paired
# interval. The profile (noisy-profile.sh) drifts by a slow sine of +-10%
# and has +-3% of seeded noise: a no-op is not promoted, a true +8% is.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-loop.sh"

agent noop <<'EOF2'
echo "note $(date +%s%N)" >>notes.txt && git add notes.txt && git commit -qm "agent: no-op"
EOF2
agent win <<'EOF2'
awk '{ printf "%.6f\n", $1 * 1.08 }' value.txt >v && mv v value.txt &&
git add value.txt && git commit -qm "agent: +8%"
EOF2
agent winlog <<'EOF2'
n=$(sed -n 's/^Iteration //p' "$1")
awk '{ printf "%.6f\n", $1 * 1.08 }' value.txt >v && mv v value.txt &&
printf '\n### Iteration %s - +8%%\n\n- Commit: (pending)\n- Hypothesis: 8%% faster\n' "$n" >>log.md &&
git add value.txt log.md && git commit -qm "agent: +8% with a log entry"
EOF2
printf 'Iteration {{ITERATION}}\n' >"$TRASH/prompt.md"

new_repo() {
	rm -rf "$TRASH/repo" "$TRASH/logs" "$TRASH/noise" &&
		test_create_repo "$TRASH/repo" &&
		(cd "$TRASH/repo" && echo 1.0 >value.txt && git add . && git commit -qm "value")
}

run_ab() {
	local a=$1
	shift
	(cd "$TRASH/repo" && NOISE_STATE=$TRASH/noise NOISE_SEED=${SEED:-1} \
		GDNCTL_PROFILE_COMMAND="sh $GDNCTL_SOURCE_DIR/tests/e2e/noisy-profile.sh" \
		gdnctl loop --agent command --agent-cmd "$AG/$a {prompt_file}" \
		--prompt-file "$TRASH/prompt.md" --log-dir "$TRASH/logs" --sleep-seconds 0 \
		--retry-sleep-seconds 0 --max-failures 5 --validation-mode profile-only \
		--perf-mode on --perf-within-threshold-policy revert "$@")
}

decisions() {
	sed -n 's/.*"event":"perf_decision","iteration":\([1-9][0-9]*\),.*"decision":"\([a-z_]*\)".*/\2/p' \
		logs/loop.jsonl | tr "\n" " "
}

test_expect_success 'no-op candidates are not promoted; the interval is journaled and kept' '
	new_repo &&
	run_ab noop --iterations 2 --perf-repeats 3 --perf-max-repeats 6 >out 2>err &&
	test "$(decisions)" = "within_threshold within_threshold " &&
	test_grep "^\[gdnctl [0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] validation profile-champion attempt 1$" out &&
	test_grep "performance within hold band vs champion: .* [0-9.]*% interval \[[-+][0-9.]*%, [-+][0-9.]*%\] over [3-6] A/B pairs" err &&
	test_grep "\"event\":\"champion_worktree\",\"iteration\":1,\"path\":\"$TRASH/logs/champion\"" logs/loop.jsonl &&
	test_grep "\"event\":\"perf_ab_look\",\"iteration\":1,\"pairs\":3," logs/loop.jsonl &&
	test_grep "\"event\":\"perf_ab\",\"iteration\":2,.*\"ci_low_pct\":" logs/loop.jsonl &&
	python3 - logs/perf_state.json <<-\EOF2 &&
	import json, sys
	h = json.load(open(sys.argv[1]))["history"][-1]
	ab = h["ab"]
	assert ab["pairs"] >= 3 and len(ab["champion_samples"]) == ab["pairs"], ab
	assert len(h["samples"]) == ab["pairs"], h["samples"]
	assert ab["ci_low_pct"] <= ab["improvement_pct"] <= ab["ci_high_pct"], ab
	assert ab["confidence"] > 0.95 and ab["statistic"].startswith("paired log-ratio"), ab
	EOF2
	: the champion worktree goes at the end of the run &&
	test ! -e logs/champion &&
	test -z "$(git -C repo worktree list | grep logs/champion)"
'

test_expect_success 'a true +8% is promoted, then measured against the new champion' '
	new_repo &&
	run_ab win --iterations 2 --perf-repeats 3 --perf-max-repeats 6 >out 2>err &&
	test "$(decisions)" = "promoted promoted " &&
	test_grep "performance champion promoted: .* interval \[+[0-9.]*%, +[0-9.]*%\] over 3 A/B pairs: promote" out &&
	test "$(git -C repo log -1 --format=%s)" = "agent: +8%" &&
	test "$(grep -c "\"event\":\"champion_worktree\"" logs/loop.jsonl)" = 2 &&
	: the report draws the intervals as error bars, and its JSON has them &&
	gdnctl report --log-dir logs >rout 2>rerr &&
	test "$(grep -o "class=\"error-bar\"" logs/report.html | wc -l)" = 2 &&
	test_grep "interval \[+[0-9.]*%, +[0-9.]*%\] over 3 A/B pairs</title>" logs/report.html &&
	gdnctl report --log-dir logs --json >out.json &&
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); its=[i for i in d[\"iterations\"] if i.get(\"ab\")]; assert len(its) == 2 and its[0][\"ab\"][\"pairs\"] >= 3 and its[0][\"ab\"][\"ci_low_pct\"] > 0.25, its" out.json &&
	: the text table: the delta with the journal interval &&
	python3 - rout logs/loop.jsonl out.json <<-\EOF2
	import json, re, sys
	text = open(sys.argv[1]).read().splitlines()
	ab = {e["iteration"]: e for e in map(json.loads, open(sys.argv[2])) if e["event"] == "perf_ab"}
	its = {i["iteration"]: i for i in json.load(open(sys.argv[3]))["iterations"]}
	assert sorted(ab) == [1, 2], ab
	for n, e in ab.items():
	    want = "%+.2f%% [%+.2f, %+.2f]" % (its[n]["delta_pct"], e["ci_low_pct"], e["ci_high_pct"])
	    rows = [l for l in text if re.match(r" *%d  promoted " % n, l)]
	    assert len(rows) == 1 and re.search(r" " + re.escape(want) + r"  [0-9a-f]{12}  ", rows[0]), (rows, want)
	head = [l for l in text if l.lstrip().startswith("iter  decision")][0]
	assert head.index("delta") + 5 == rows[0].index("]") + 1, (head, rows)
	EOF2
'

# --log-measurements: the kept entry carries the A/B figures, the same as
# the journal's perf_ab event (and the candidate's samples of perf_state.json)
test_expect_success '--log-measurements: the A/B interval and samples in the kept entry' '
	new_repo &&
	printf "# Hill-climb log\n\n## Entry Template\n\n\`\`\`markdown\n### Iteration <N> - <title>\n\n- Commit: <sha>\n- Hypothesis:\n\`\`\`\n\n## Iterations\n" >repo/log.md &&
	git -C repo add log.md && git -C repo commit -qm "log" &&
	run_ab winlog --iterations 1 --perf-repeats 3 --perf-max-repeats 6 --log-measurements \
		--hillclimb-log-file log.md >out 2>err &&
	test "$(decisions)" = "promoted " &&
	test -z "$(git -C repo status --porcelain)" &&
	git -C repo log --format=%s -3 >subjects &&
	test_grep "^gdnctl: record measured figures for throughput/mfu" subjects &&
	sed -n "/^### Iteration 1/,\$p" repo/log.md >entry &&
	test_grep "^- Measured: throughput/mfu [0-9.]* -> [0-9.]* (+[0-9.]*%)$" entry &&
	: the samples in as few digits as read back the same: the profile printed six decimals &&
	test_grep "^- A/B samples: champion \[[0-9.]*,[0-9.,]*\], candidate \[[0-9.]*,[0-9.,]*\]$" entry &&
	sed "/^- Commit: /d" entry >entry-figures && test_grep ! "[0-9]\{9\}" entry-figures &&
	(cd repo && gdnctl lint-log --log-file log.md --require-fields --check-commits) &&
	python3 - entry logs/loop.jsonl logs/perf_state.json <<-\EOF2
	import json, re, sys
	entry = open(sys.argv[1]).read().splitlines()
	ev = [e for e in map(json.loads, open(sys.argv[2])) if e["event"] == "perf_ab"]
	assert len(ev) == 1, ev
	ab = ev[0]
	cand = [s["value"] for s in json.load(open(sys.argv[3]))["history"][-1]["samples"]]
	want = ("- A/B: %+.2f%%, %.4g%% interval [%+.2f%%, %+.2f%%] over %d pairs "
	        "(paired log-ratio, bootstrap; %s)" % (ab["improvement_pct"], ab["confidence"] * 100,
	        ab["ci_low_pct"], ab["ci_high_pct"], ab["pairs"], ab["verdict"]))
	lines = [l for l in entry if l.startswith("- A/B: ")]
	assert lines == [want], (lines, want)
	assert ab["verdict"] == "promote" and ab["ci_low_pct"] > 0 and ab["pairs"] >= 3, ab
	m = [re.fullmatch(r"- A/B samples: champion (\[.*\]), candidate (\[.*\])", l) for l in entry]
	m = [x for x in m if x]
	assert len(m) == 1, entry
	assert json.loads(m[0].group(1)) == ab["ab"]["champion_samples"], (m[0].group(1), ab)
	assert json.loads(m[0].group(2)) == cand, (m[0].group(2), cand)
	assert len(cand) == ab["pairs"], cand
	EOF2
'

test_expect_success '--no-perf-ab, and --perf-repeats 1 (the default): no champion runs' '
	new_repo &&
	run_ab noop --iterations 1 --perf-repeats 3 --no-perf-ab >out 2>err &&
	test_grep ! "profile-champion" out &&
	test_grep -c "validation profile attempt" out >n && test "$(cat n)" = 6 &&
	new_repo &&
	run_ab noop --iterations 1 >out 2>err &&
	test_grep ! "profile-champion" out &&
	test_grep ! "\"ab\":" logs/perf_state.json
'

test_expect_success '--perf-confidence must lie between 0 and 1' '
	new_repo &&
	test_must_fail =2 run_ab noop --iterations 1 --perf-repeats 2 --perf-confidence 1.5 2>err &&
	test_grep "perf-confidence must lie between 0 and 1" err
'

test_done
