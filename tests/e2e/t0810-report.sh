#!/usr/bin/env bash
# gdnctl report on a real loop run (tests/e2e/lib-report.sh): seven
# iterations with every kind of decision. The text summary, the JSON
# figures (checked against the journal and the state with python) and the
# HTML elements; run selection, defaults, atomic output, bad journals.
. "$(dirname "$0")/lib.sh"
. "$GDNCTL_SOURCE_DIR/tests/e2e/lib-report.sh"

D=$TRASH/f

test_expect_success 'setup: a seven-iteration loop run' '
	report_fixture "$D" &&
	test_grep "7 iterations, 3 commits, 3 failed iterations (3 counted" "$D/loop.out"
'

test_expect_success 'text summary: one line per iteration with decision, metric, delta, commit' '
	gdnctl report --log-dir "$D/logs" >out 2>err &&
	test_grep "^run [0-9TZ-]*: 7 iterations, completed, exit 0$" out &&
	test_grep "^metric throughput/mfu (higher is better), champion 3 @ $(git -C "$D/repo" rev-parse --short=12 HEAD)$" out &&
	base=$(git -C "$D/repo" log -1 --format=%H --grep="^benchmark with a trace" | cut -c1-12) &&
	test_grep "^    0  baseline  *1  *-  $base  benchmark with a trace$" out &&
	test_grep "^    1  promoted  *2  *+100.00%  [0-9a-f]\{12\}  blocked scan: 2x faster <b>&\"'"'"'$" out &&
	test_grep "^    2  failed tests  *-  *-  [0-9a-f]\{12\}  unroll: breaks the tests$" out &&
	test_grep "^    3  regression  *0.5  *-75.00%  [0-9a-f]\{12\}  slower variant$" out &&
	test_grep "^    4  no commit  *-  *-  -  *$" out &&
	test_grep "^    5  within band  *2.001  *+0.05%  [0-9a-f]\{12\}  tiny tweak$" out &&
	test_grep "^    6  gate regression  *2.03  *+1.50%  [0-9a-f]\{12\}  while grows$" out &&
	test_grep "^       trace: step +10.000 ms, category while +10.000 ms$" out &&
	test_grep "^    7  promoted  *3  *+50.00%  [0-9a-f]\{12\}  second speed-up$" out &&
	test_grep "^totals: time in agent [0-9]*\.[0-9]\{3\} s, time in validation [0-9]*\.[0-9]\{3\} s, commits kept 3, commits reverted 3, failures 3, promoted 2, wall [0-9.]* s$" out &&
	test_grep "^\[gdnctl\] report written to $D/logs/report.html$" out &&
	test ! -s err
'

test_expect_success 'JSON: figures agree with the journal and the state' '
	gdnctl report --log-dir "$D/logs" --json >out.json &&
	python3 - "$D/logs/loop.jsonl" "$D/logs/perf_state.json" out.json <<-\EOF2
		import json, sys
		ev = [json.loads(l) for l in open(sys.argv[1])]
		st = json.load(open(sys.argv[2]))
		doc = json.load(open(sys.argv[3]))
		assert doc["schema"] == "gdnctl.report.v1", doc["schema"]
		its = doc["iterations"]
		got = [(i["iteration"], i["decision"]) for i in its]
		want = list(enumerate(["baseline", "promoted", "failed_tests", "regression", "no_commit",
		                       "within_band", "gate_regression", "promoted"]))
		assert got == want, got
		# metric and delta from the perf decisions of the journal
		for e in ev:
		    if e["event"] == "perf_decision":
		        i = its[e["iteration"]]
		        assert i["metric"] == e["candidate"], (i, e)
		        assert i["commit"] == e["commit"], (i, e)
		        if e["champion"] is not None:
		            d = (e["candidate"] - e["champion"]) / abs(e["champion"]) * 100
		            assert abs(i["delta_pct"] - d) < 1e-9, (i, d)
		assert [i["champion_after"] for i in its] == [1, 2, 2, 2, 2, 2, 2, 3], its
		t = doc["totals"]
		assert t["agent_ms"] == sum(e["duration_ms"] for e in ev if e["event"] == "agent_end"), t
		assert t["validation_ms"] == sum(e["duration_ms"] for e in ev if e["event"] == "validation"), t
		assert t["commits_kept"] == 3 and t["commits_reverted"] == 3, t
		assert t["failures"] == 3 and t["promoted"] == 2 and t["iterations"] == 7, t
		assert doc["champion"]["commit"] == st["champion"]["commit"], doc["champion"]
		assert doc["champion"]["value"] == st["champion"]["metric_value"]
		# reverted commits: the discarded refs
		assert [i["discarded_ref"] for i in its if i["reverted"]] == [
		    "refs/gdnctl/discarded/%d" % n for n in (2, 3, 6)], its
		# trace deltas of the gate regression: `while` 10 -> 20 ms/step against the champion
		g = its[6]["trace_deltas"]
		assert g[0] == {"kind": "step", "name": None, "candidate_ms": 40.0,
		                "champion_ms": 30.0, "delta_ms": 10.0}, g
		assert g[1]["kind"] == "category" and g[1]["name"] == "while" and g[1]["delta_ms"] == 10.0, g
		assert its[1]["hypothesis"] == "blocked scan: 2x faster <b>&\"'"'"'", its[1]
		assert doc["output"].endswith("/logs/report.html")
	EOF2
'

test_expect_success 'HTML: one point per iteration, champion line, rows, escaped titles' '
	h="$D/logs/report.html" &&
	test "$(grep -o "class=\"point " "$h" | wc -l)" = 8 &&
	test "$(grep -o "class=\"point decision-promoted\"" "$h" | wc -l)" = 2 &&
	test "$(grep -o "class=\"point unmeasured decision-failed_tests\"" "$h" | wc -l)" = 1 &&
	test "$(grep -o "class=\"point unmeasured decision-no_commit\"" "$h" | wc -l)" = 1 &&
	test "$(grep -o "class=\"point decision-gate_regression\"" "$h" | wc -l)" = 1 &&
	test "$(grep -o "id=\"champion-line\"" "$h" | wc -l)" = 1 &&
	test "$(grep -o "class=\"iter-row " "$h" | wc -l)" = 8 &&
	test "$(grep -o "<title>iteration " "$h" | wc -l)" = 8 &&
	test_grep "hypothesis: blocked scan: 2x faster &lt;b&gt;&amp;&quot;&#39;&#10;" "$h" &&
	test_grep ! "<b>&" "$h" &&
	test_grep "id=\"total-commits-kept\" data-value=\"3\"" "$h" &&
	test_grep "id=\"total-commits-reverted\" data-value=\"3\"" "$h" &&
	: self-contained: nothing loaded, the only links the traces kept under the log dir &&
	sed "s|<a href=\"traces/iteration-[0-9]*/run-[0-9]*/[a-z.]*\">||g" "$h" >h.nolinks &&
	test_grep ! -i -E "(src|href)=|url\(|https?://" h.nolinks &&
	test_grep "<svg id=\"metric-chart\"" "$h"
'

test_expect_success 'the story: a headline in the text, the JSON and the HTML' '
	gdnctl report --log-dir "$D/logs" >out &&
	sed -n 2p out >line &&
	test_grep -E "^baseline 1 -> 3 \(x3\) in 7 iterations: 3 kept, 3 reverted, 1 without a commit, [0-9.]+ (ms|s)$" line &&
	gdnctl report --log-dir "$D/logs" --json >out.json &&
	python3 - out.json "$(cat line)" "$D/logs/report.html" <<-\EOF2
		import html, json, re, sys
		doc = json.load(open(sys.argv[1]))
		assert doc["headline"] == sys.argv[2], (doc["headline"], sys.argv[2])
		page = open(sys.argv[3]).read()
		m = re.search(r"<p id=\"headline\" class=\"headline\">([^<]*)</p>", page)
		assert m and html.unescape(m.group(1)) == sys.argv[2], m
		t = doc["totals"]
		assert t["iterations_kept"] == 3 and t["iterations_reverted"] == 3, t
		assert t["active_ms"] == t["wall_ms"] and t["idle_ms"] == 0 and t["resumes"] == 0, t
		m = re.search(r"ran <span id=\"duration\" data-ms=\"(\d+)\">", page)
		assert m and int(m.group(1)) == t["active_ms"], m
	EOF2
'

test_expect_success 'reasons in words, not tokens' '
	h="$D/logs/report.html" &&
	test_grep ! "within_threshold" "$h" &&
	test_grep ! "performance gate_regression" "$h" &&
	test_grep "<td class=\"reason\">a trace gate regressed (throughput/mfu)</td>" "$h" &&
	python3 - out.json <<-\EOF2
		import json, sys
		its = json.load(open(sys.argv[1]))["iterations"]
		# the token stays for programs, the words are for people
		assert its[6]["reason"] == "performance gate_regression: throughput/mfu", its[6]
		assert its[6]["reason_text"] == "a trace gate regressed (throughput/mfu)", its[6]
		assert its[3]["reason_text"] == "slower than the champion (throughput/mfu)", its[3]
	EOF2
'

test_expect_success 'a readable axis: round ticks, log scale beyond 5x, values on the points' '
	python3 - "$D/logs/report.html" out.json <<-\EOF2
		import json, math, re, sys
		page = open(sys.argv[1]).read()
		its = json.load(open(sys.argv[2]))["iterations"]
		vals = [i["metric"] for i in its if i["metric"] is not None]
		scale = re.search(r"<svg id=\"metric-chart\"[^>]* data-scale=\"(\w+)\"", page).group(1)
		# 0.5 .. 3: more than 5x
		assert max(vals) / min(vals) > 5 and scale == "log", (vals, scale)
		ticks = [float(t) for t in re.findall(r"<text class=\"tick y-tick\"[^>]*>([^<]*)</text>", page)]
		assert len(ticks) >= 3, ticks
		for t in ticks:
		    m = t / 10 ** math.floor(math.log10(t))
		    assert any(abs(m - k) < 1e-9 for k in (1, 2, 5)), ticks
		assert ticks[0] <= min(vals) and ticks[-1] >= max(vals), (ticks, vals)
		assert "(log scale)" in page
		# every measured value is written on the chart
		labels = re.findall(r"<text class=\"value-label\" data-iteration=\"(\d+)\"[^>]*>([^<]*)</text>", page)
		want = [(str(i["iteration"]), "%.4g" % i["metric"]) for i in its if i["metric"] is not None]
		assert labels == want, (labels, want)
	EOF2
'

test_expect_success 'trace deltas under the noise are hidden (< 0.01 ms or < 0.1 %)' '
	mkdir noise && cp "$D/logs/loop.jsonl" noise/ &&
	python3 - "$D/logs/perf_state.json" noise/perf_state.json <<-\EOF2
		import json, sys
		st = json.load(open(sys.argv[1]))
		for rec in st["history"]:
		    cats = rec["trace"]["categories"]
		    big = rec.get("iteration") == 6
		    cats["tiny"] = 1.0 + (0.005 if big else 0)        # +0.005 ms: under 0.01 ms
		    cats["relative"] = 1000.0 + (0.5 if big else 0)   # +0.05 %: under 0.1 %
		    cats["real"] = 1.0 + (0.02 if big else 0)         # +0.02 ms and +2 %: shown
		json.dump(st, open(sys.argv[2], "w"))
	EOF2
	gdnctl report --log-dir noise --json >noise.json &&
	python3 - noise.json <<-\EOF2
		import json, sys
		its = json.load(open(sys.argv[1]))["iterations"]
		names = [d["name"] for i in its for d in i["trace_deltas"]]
		assert "tiny" not in names and "relative" not in names, names
		assert "real" in names, names
	EOF2
'

test_expect_success 'after a resume, the idle gap is not counted in the duration' '
	mkdir resumed && cp "$D/logs/perf_state.json" resumed/ &&
	python3 - "$D/logs/loop.jsonl" resumed/loop.jsonl <<-\EOF2
		import datetime, json, sys
		ev = [json.loads(l) for l in open(sys.argv[1])]
		run = [e["run"] for e in ev if e["event"] == "run_start"][0]
		ev = [e for e in ev if e["run"] == run]
		fmt = "%Y-%m-%dT%H:%M:%S.%fZ"
		def ts(e): return datetime.datetime.strptime(e["ts"], fmt)
		cut = [k for k, e in enumerate(ev) if e["event"] == "iteration_end" and e["iteration"] == 3][0] + 1
		gap = datetime.timedelta(hours=3)
		out = ev[:cut] + [{"ts": ev[cut - 1]["ts"], "run": run, "event": "run_resume",
		                   "iterations": 7, "after": 3}] + ev[cut:]
		with open(sys.argv[2], "w") as f:
		    for k, e in enumerate(out):
		        if k >= cut:
		            e["ts"] = (ts(e) + gap).strftime(fmt)[:-4] + "Z"
		        f.write(json.dumps(e) + "\n")
	EOF2
	gdnctl report --log-dir resumed >out &&
	test_grep -E "^baseline 1 -> 3 .*, [0-9.]+ (ms|s) \(resumed 1 time: 3 h 0 min idle not counted\)$" out &&
	gdnctl report --log-dir resumed --json >res.json &&
	python3 - res.json <<-\EOF2
		import json, sys
		t = json.load(open(sys.argv[1]))["totals"]
		assert t["resumes"] == 1 and t["idle_ms"] == 3 * 3600 * 1000, t
		assert t["active_ms"] == t["wall_ms"] - t["idle_ms"] and t["active_ms"] < 3600 * 1000, t
	EOF2
'

test_expect_success 'the HTML is written atomically: no temporary files left, 0644' '
	ls -A "$D/logs" >list &&
	test_grep ! "\.tmp\." list &&
	test "$(stat -c %a "$D/logs/report.html")" = 644
'

test_expect_success '--output and --perf-state-file; a missing default state is fine' '
	gdnctl report --log-dir "$D/logs" --output "$D/logs/r.html" >out 2>&1 &&
	test_must_fail =1 gdnctl report --log-dir "$D/logs" --output "$TRASH/nodir/r.html" 2>err &&
	test_grep "cannot create .*nodir/r.html.tmp" err &&
	test -s "$D/logs/r.html" && cmp "$D/logs/r.html" "$D/logs/report.html" &&
	mkdir nostate && cp "$D/logs/loop.jsonl" nostate/ &&
	gdnctl report --log-dir nostate >out 2>err &&
	test_grep ! "trace:" out && test_grep "^    7  promoted" out &&
	test_must_fail =1 gdnctl report --log-dir nostate --perf-state-file nostate/none.json 2>err &&
	test_grep "none.json" err &&
	echo "{" >bad.json &&
	test_must_fail =1 gdnctl report --log-dir nostate --perf-state-file bad.json 2>err &&
	test_line_count = 1 err && test_grep "bad.json" err
'

test_expect_success 'default log directory: the loop default, in the git directory, per branch' '
	br=$(git -C "$D/repo" symbolic-ref --short HEAD) &&
	def="$D/repo/.git/gdnctl/$br" &&
	mkdir -p "$D/repo/.git/gdnctl" && cp -r "$D/logs" "$def" &&
	(cd "$D/repo" && gdnctl report >../default.out) &&
	test_grep "report written to $def/report.html" "$D/default.out" &&
	test -s "$def/report.html" &&
	(cd "$D/repo" && git checkout -q -b feature/x &&
	 test_must_fail =1 gdnctl report 2>../feature.err && git checkout -q "$br") &&
	test_grep "gdnctl/feature%2Fx/loop.jsonl" "$D/feature.err" &&
	mkdir norepo && (cd norepo && test_must_fail =2 gdnctl report 2>err) &&
	test_grep "not inside a git repository" norepo/err
'

test_expect_success 'several runs: the last by default, --run selects' '
	first=$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" "$D/logs/loop.jsonl") &&
	AG=$D/agents agent idle <<-\EOF2 &&
		echo "nothing to do"
	EOF2
	report_loop "$D" idle 1 >/dev/null 2>&1 &&
	gdnctl report --log-dir "$D/logs" >out &&
	test_grep "^run [0-9TZ-]*: 1 iteration, completed, exit 0$" out &&
	test_grep ! "^run $first" out &&
	test_grep "^    1  no commit" out &&
	test_grep "champion 3 @" out &&
	gdnctl report --log-dir "$D/logs" --run "$first" >out &&
	test_grep "^run $first: 7 iterations" out &&
	gdnctl report --log-dir "$D/logs" --json >out.json &&
	python3 -c "import json,sys; d=json.load(open(\"out.json\")); assert len(d[\"runs\"]) == 2 and d[\"runs\"][0] == sys.argv[1], d[\"runs\"]" "$first" &&
	test_must_fail =1 gdnctl report --log-dir "$D/logs" --run nosuch 2>err &&
	test_line_count = 1 err && test_grep "has no run .nosuch." err
'

test_expect_success 'missing and malformed journals: one line, exit 1, the line number' '
	test_must_fail =1 gdnctl report --log-dir "$TRASH/none" 2>err &&
	test_line_count = 1 err && test_grep "^\[gdnctl\] error: cannot open .*none/loop.jsonl.: No such file" err &&
	mkdir bad && head -3 "$D/logs/loop.jsonl" >bad/loop.jsonl &&
	echo "not json" >>bad/loop.jsonl && tail -2 "$D/logs/loop.jsonl" >>bad/loop.jsonl &&
	test_must_fail =1 gdnctl report --log-dir bad 2>err &&
	test_line_count = 1 err && test_grep "journal .*bad/loop.jsonl. line 4: " err &&
	test ! -e bad/report.html &&
	echo "[1]" >bad/loop.jsonl &&
	test_must_fail =1 gdnctl report --log-dir bad 2>err &&
	test_grep "line 1: not an event object" err &&
	: >bad/loop.jsonl &&
	test_must_fail =1 gdnctl report --log-dir bad 2>err && test_grep "has no run" err
'

test_expect_success 'a torn last line (killed loop) is ignored with a warning' '
	mkdir torn && cp "$D/logs/perf_state.json" torn/ &&
	head -c -1 "$D/logs/loop.jsonl" >torn/loop.jsonl && printf "{\"ts\":\"2026" >>torn/loop.jsonl &&
	gdnctl report --log-dir torn >out 2>err &&
	test_grep "WARNING: journal .* ignored an incomplete last line" err
'

test_expect_success 'an iteration without commits: the agent'"'"'s last message is the hypothesis' '
	first=$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" "$D/logs/loop.jsonl") &&
	mkdir msg && cp "$D/logs/loop.jsonl" "$D/logs/perf_state.json" msg/ &&
	printf "\n  I found nothing <worth> changing\nmore\n" >msg/iteration-004-last-message.txt &&
	gdnctl report --log-dir msg --run "$first" >out &&
	test_grep "^    4  no commit  *-  *-  -  *I found nothing <worth> changing$" out &&
	test_grep "hypothesis: I found nothing &lt;worth&gt; changing" msg/report.html
'

test_expect_success 'a one-worker run has no lanes: no workers section, no worker column' '
	gdnctl report --log-dir "$D/logs" --run "$(sed -n "1s/.*\"run\":\"\([^\"]*\)\".*/\1/p" "$D/logs/loop.jsonl")" \
		--output one.html >out &&
	test_grep "^ iter  decision " out &&
	test_grep ! -i "worker" out && test_grep ! "^promotions" out &&
	test_grep ! -i -E "worker|lane|promotion" one.html &&
	gdnctl report --log-dir "$D/logs" --json >one.json &&
	python3 -c "import json,sys; d=json.load(open(\"one.json\")); assert \"workers\" not in d and \"promotions\" not in d and all(\"worker\" not in i for i in d[\"iterations\"]), d.keys()"
'

# tests/data/report/workers-2.jsonl: the demo's journal, re-timed as two workers
# over 37.6 s: worker 1 runs the baseline (no "worker": worker 1) and
# iterations 1 (promoted), 3 (failed tests), 5 (beats its base, then conflicts
# with iteration 6); worker 2 runs 2 (promoted after a clean rebase),
# 4 (regression), 6 (promoted).
test_expect_success 'workers: one lane per worker with agent, validation, idle and busy fractions' '
	mkdir workers && cp "$TEST_DATA/report/workers-2.jsonl" workers/loop.jsonl &&
	gdnctl report --log-dir workers >out 2>err &&
	test ! -s err &&
	test_grep "^baseline 1 -> 3 (x3) in 6 iterations: 3 kept, 2 reverted, 1 in conflict, 38 s$" out &&
	test_grep "^ iter  worker  decision " out &&
	test_grep "^    5       1  rebase conflict  *2.8  *+12.00%  [0-9a-f]\{12\}  $" out &&
	test_grep "^    6       2  promoted  *3  *+20.00%  [0-9a-f]\{12\}  $" out &&
	test_grep "promoted 3, wall 37.600 s$" out &&
	test_grep "^workers: 2, active time 37.600 s; busy 94.4% (agent + validation), accelerators busy 26.6% (validation)$" out &&
	test_grep "^worker  iterations         agent    validation          idle    busy  accel busy  promotions$" out &&
	test_grep "^     1           3      28.000 s       9.000 s       0.600 s   98.4%       23.9%           1$" out &&
	test_grep "^     2           3      23.000 s      11.000 s       3.600 s   90.4%       29.3%           2$" out &&
	test_grep "^   all           6      51.000 s      20.000 s       4.200 s   94.4%       26.6%           3$" out &&
	test_grep "^promotions on the champion line, in order:$" out &&
	test_grep "^     1  iteration 1 by worker 1 at 15.098 s: champion 2 @ [0-9a-f]\{12\}$" out &&
	test_grep "^     2  iteration 2 by worker 2 at 19.098 s: champion 2.5 @ [0-9a-f]\{12\}$" out &&
	test_grep "^     3  iteration 6 by worker 2 at 36.398 s: champion 3 @ [0-9a-f]\{12\}$" out
'

# tests/data/report/workers-2-engine.jsonl: a real journal of the engine
# (gdnctl loop --workers 2, six iterations of lib-report.sh's kind): iteration
# 2 beat its base but conflicted with iteration 1, promoted meanwhile.
test_expect_success 'workers: the JSON lanes agree with the journal, the HTML has one lane per worker' '
	mkdir engine && cp "$TEST_DATA/report/workers-2-engine.jsonl" engine/loop.jsonl &&
	for d in workers engine
	do
		gdnctl report --log-dir $d --json >$d.json &&
		python3 - $d/loop.jsonl $d.json $d/report.html <<-\EOF2 || return 1
			import datetime, json, re, sys
			ev = [json.loads(l) for l in open(sys.argv[1])]
			doc = json.load(open(sys.argv[2]))
			page = open(sys.argv[3]).read()
			def ms(e):
			    t = datetime.datetime.strptime(e["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
			    return round(t.timestamp() * 1000)
			t0, t1 = ms(ev[0]), ms(ev[-1])
			spans, open_ = {}, {}
			for e in ev:
			    k = e.get("worker", 1)
			    if e["event"] == "agent_start":
			        open_[k] = ms(e)
			    elif e["event"] == "agent_end":
			        spans.setdefault(k, []).append(("agent", open_.pop(k), ms(e)))
			    elif e["event"] == "validation":
			        spans.setdefault(k, []).append(("validation", ms(e) - e["duration_ms"], ms(e)))
			def union(iv):
			    tot, lo, hi = 0, None, None
			    for a, b in sorted((max(a, t0), min(b, t1)) for a, b in iv):
			        if lo is None or a > hi:
			            tot += 0 if lo is None else hi - lo
			            lo, hi = a, b
			        else:
			            hi = max(hi, b)
			    return tot + (0 if lo is None else hi - lo)
			w = doc["workers"]
			active = t1 - t0
			assert w["count"] == 2 and w["active_ms"] == active == doc["totals"]["active_ms"], w
			assert [l["worker"] for l in w["lanes"]] == [1, 2], w["lanes"]
			busy_all = accel_all = 0
			for lane in w["lanes"]:
			    sp = spans[lane["worker"]]
			    agent = union([(a, b) for k, a, b in sp if k == "agent"])
			    val = union([(a, b) for k, a, b in sp if k == "validation"])
			    busy = union([(a, b) for k, a, b in sp])
			    assert (lane["agent_ms"], lane["validation_ms"], lane["busy_ms"]) == (agent, val, busy), (lane, agent, val, busy)
			    assert lane["idle_ms"] == active - busy, lane
			    assert abs(lane["busy_fraction"] - busy / active) < 1e-12, lane
			    assert abs(lane["accelerator_busy_fraction"] - val / active) < 1e-12, lane
			    assert len(lane["spans"]) == len(sp), (lane["spans"], sp)
			    busy_all += busy
			    accel_all += val
			    # the HTML lane: one rect per span, the fractions in its attributes
			    m = re.search(r"<g class=\"lane\" data-worker=\"%d\" data-busy=\"([0-9.]+)\" "
			                  r"data-accelerator-busy=\"([0-9.]+)\">(.*?)</g>" % lane["worker"], page, re.S)
			    assert m, lane["worker"]
			    assert abs(float(m.group(1)) - busy / active) < 1e-4 and abs(float(m.group(2)) - val / active) < 1e-4, m.groups()[:2]
			    assert len(re.findall(r"class=\"span span-agent\"", m.group(3))) == sum(1 for s in sp if s[0] == "agent")
			    assert len(re.findall(r"class=\"span span-validation\"", m.group(3))) == sum(1 for s in sp if s[0] == "validation")
			assert abs(w["busy_fraction"] - busy_all / (2 * active)) < 1e-12, w
			assert abs(w["accelerator_busy_fraction"] - accel_all / (2 * active)) < 1e-12, w
			assert len(re.findall(r"<g class=\"lane\" ", page)) == 2
			assert len(re.findall(r"<tr class=\"lane-row\"", page)) == 2
			# the promotions: the promote events, in their order, with their worker
			want = [(e["iteration"], e["worker"], e["champion"]) for e in ev if e["event"] == "promote"]
			got = [(p["iteration"], p["worker"], p["champion"]) for p in doc["promotions"]]
			assert got == want and [p["order"] for p in doc["promotions"]] == [1, 2, 3], got
			marks = re.findall(r"<path class=\"promotion-mark\" data-order=\"(\d+)\" data-worker=\"(\d+)\" data-iteration=\"(\d+)\"", page)
			assert marks == [(str(i + 1), str(k), str(n)) for i, (n, k, _) in enumerate(want)], marks
		EOF2
	done &&
	python3 - workers.json engine.json <<-\EOF2
		import json, sys
		doc, eng = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
		assert [i["worker"] for i in doc["iterations"]] == [1, 1, 2, 1, 2, 1, 2], doc["iterations"]
		assert doc["iterations"][5]["decision"] == "conflict", doc["iterations"][5]
		assert doc["iterations"][5]["discarded_ref"] == "refs/gdnctl/discarded/5", doc["iterations"][5]
		assert doc["champion"]["value"] == 3.0, doc["champion"]
		# the champion line: never down, stepping at the promotions
		assert [i["champion_after"] for i in doc["iterations"]] == [1, 2, 2.5, 2.5, 2.5, 2.5, 3], doc["iterations"]
		assert doc["totals"]["iterations_conflicted"] == 1, doc["totals"]
		assert [i["worker"] for i in eng["iterations"]] == [1, 1, 2, 1, 2, 1, 1], eng["iterations"]
		assert [i["decision"] for i in eng["iterations"]] == ["baseline", "promoted", "conflict",
		    "failed_tests", "within_band", "no_commit", "promoted"], eng["iterations"]
		# iteration 4 kept within the band advanced the branch, not the champion value
		assert [p["best"] for p in eng["promotions"]] == [True, False, True], eng["promotions"]
		assert [i["champion_after"] for i in eng["iterations"]] == [1, 2, 2, 2, 2, 2, 3], eng["iterations"]
		assert eng["totals"]["iterations_conflicted"] == 1 and eng["totals"]["promoted"] == 2, eng["totals"]
	EOF2
'

# links FILE: the href targets of an HTML page, one a line.
links() {
	grep -o "href=\"[^\"]*\"" "$1" | sed "s/^href=\"//; s/\"$//"
}

# links_resolve FILE: each link of FILE names a file that exists, seen from FILE's directory.
links_resolve() {
	local dir l
	dir=$(dirname "$1")
	links "$1" >links.out && test -s links.out || return 1
	while read -r l; do
		case $l in
		/*) test -f "$l" ;;
		*) test -f "$dir/$l" ;;
		esac || { echo "dead link in $1: $l"; return 1; }
	done <links.out
}

test_expect_success 'trace links resolve wherever the report is written (-o)' '
	: the fixture with a trace kept for iteration 1, journaled as the loop does &&
	cp -R "$D/logs" L &&
	mkdir -p L/traces/iteration-001/run-1 &&
	printf "{\"traceEvents\":[]}" | gzip >L/traces/iteration-001/run-1/t.trace.json.gz &&
	run=$(sed -n "s/.*\"run\":\"\([^\"]*\)\".*/\1/p" L/loop.jsonl | tail -1) &&
	printf "{\"ts\":\"2026-01-01T00:00:00.000Z\",\"run\":\"%s\",\"event\":\"trace\",\"iteration\":1,\"attempt\":1,\"source\":\"local\",\"path\":\"%s\",\"file\":\"traces/iteration-001/run-1/t.trace.json.gz\",\"origin\":\"*.trace.json.gz\"}\n" \
		"$run" "$TRASH/L/traces/iteration-001/run-1/t.trace.json.gz" >>L/loop.jsonl &&
	gdnctl report --log-dir L >out &&
	links_resolve L/report.html &&
	links L/report.html >in-logdir &&
	test_grep "^traces/iteration-001/" in-logdir &&
	mkdir -p elsewhere/deep &&
	gdnctl report --log-dir L -o elsewhere/deep/r.html >out &&
	links_resolve elsewhere/deep/r.html &&
	links elsewhere/deep/r.html >deep &&
	test_grep "^\.\./\.\./L/traces/iteration-001/" deep &&
	mkdir -p L/sub &&
	gdnctl report --log-dir L -o L/sub/r.html >out &&
	links_resolve L/sub/r.html &&
	links L/sub/r.html >up &&
	test_grep "^\.\./traces/iteration-001/" up &&
	: through a symbolic link to the log dir &&
	ln -s L L-link &&
	gdnctl report --log-dir L-link -o L/same.html >out 2>err &&
	links_resolve L/same.html &&
	links L/same.html >same &&
	test_grep "^traces/iteration-001/" same
'

test_expect_success 'usage: positional arguments and unknown options' '
	test_must_fail =2 gdnctl report extra 2>err &&
	test_must_fail =2 gdnctl report --nosuch 2>err &&
	gdnctl report -h >out &&
	for o in --log-dir --perf-state-file --output --run --json --format; do test_grep -e "$o" out || return 1; done
'

test_expect_success '--format text|json|html, --json the same as --format json' '
	gdnctl report --log-dir "$D/logs" --format text >text.out &&
	gdnctl report --log-dir "$D/logs" >default.out &&
	test_cmp default.out text.out &&
	gdnctl report --log-dir "$D/logs" --format json >fj.json &&
	gdnctl report --log-dir "$D/logs" --json >j.json &&
	test_cmp j.json fj.json &&
	test_grep "\"schema\": \"gdnctl.report.v1\"" fj.json &&
	rm -f "$D/logs/report.html" &&
	gdnctl report --log-dir "$D/logs" --format html >page.html 2>err &&
	test_grep "^<!DOCTYPE html>" page.html && test_grep "<svg id=\"metric-chart\"" page.html &&
	test ! -e "$D/logs/report.html" &&
	test_must_fail =2 gdnctl report --log-dir "$D/logs" --format html -o x.html 2>err &&
	test_grep "drop --output" err &&
	test_must_fail =2 gdnctl report --log-dir "$D/logs" --format html --json 2>err &&
	test_grep "contradicts --format html" err &&
	test_must_fail =2 gdnctl report --log-dir "$D/logs" --format pdf 2>err
'

test_done
