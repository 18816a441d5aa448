#!/usr/bin/env bash
# gdnctl metrics against the W&B GraphQL API of the loopback test server
# (tests/e2e/hubserver.py): summary values (summaryMetrics is JSON inside
# JSON), history windows with median/mean and a minimum of points, run
# lookup by id, URL and display name, discovery by exact PREFIX_, missing
# and non-finite values reported as such, the API key (WANDB_API_KEY or
# ~/.netrc) sent as Basic auth and never printed, retries on 500.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset WANDB_API_KEY WANDB_BASE_URL NETRC
KEY=wandbKey0123456789abcdef0123456789abcdef
FAST="--retry-base-delay 10ms --retry-max-delay 40ms"

mkdir -p root
cat >wandb.json <<'EOF'
{"marin-community/marin": {"runs": [
 {"name": "old1", "displayName": "gdn_tinyprof_iter001_a", "createdAt": "2025-01-01T00:00:00",
  "summary": {"throughput/mfu": 4.0, "throughput/tokens_per_second": 900, "throughput/duration": 2.5}},
 {"name": "r2", "displayName": "gdn_tinyprof_iter001_b", "createdAt": "2025-01-02T00:00:00",
  "summaryRaw": "{\"throughput/mfu\": 5.5, \"throughput/duration\": NaN, \"throughput/tokens_per_second\": 1000, \"note\": \"text\", \"_wandb\": {\"runtime\": 12}}",
  "history": [{"_step": 0, "throughput/mfu": 1.0}, {"_step": 10, "throughput/mfu": 5.0},
              {"_step": 11, "throughput/mfu": 6.0}, {"_step": 12, "throughput/mfu": 7.0},
              {"_step": 13, "throughput/mfu": 8.0}, {"_step": 14, "throughput/mfu": 9.5},
              {"_step": 18, "throughput/mfu": 100.0}, {"_step": 19, "throughput/mfu": 1000.0},
              {"_step": 12, "throughput/duration": 2.0}, {"_step": 13, "throughput/duration": NaN},
              {"_step": 14, "throughput/duration": Infinity}]},
 {"name": "r3", "displayName": "gdn_tinyprof_iter0010_x", "createdAt": "2025-01-03T00:00:00",
  "summary": {"throughput/mfu": 9.9}}
]}}
EOF

test_start_hubserver --root "$TRASH/root" --wandb "$TRASH/wandb.json" --wandb-key "$KEY"
export WANDB_BASE_URL=http://127.0.0.1:$HUB_PORT WANDB_API_KEY=$KEY

test_expect_success 'summary by ENTITY/PROJECT/RUN: values, and NaN reported, not invented' '
	test_must_fail =1 gdnctl metrics --run marin-community/marin/r2 $FAST >stdout 2>stderr &&
	test_grep "^\[gdnctl\] run: http://127.0.0.1:$HUB_PORT/marin-community/marin/runs/r2 (gdn_tinyprof_iter001_b)$" stdout &&
	test_grep "^\[gdnctl\] source: wandb-summary$" stdout &&
	test_grep "^throughput/mfu  *5.5  ok  *1$" stdout &&
	test_grep "^throughput/tokens_per_second  *1000  ok" stdout &&
	test_grep "^throughput/duration  *-  non-finite" stdout &&
	test_grep "WARNING: throughput/duration: non-finite" stderr
'

test_expect_success 'summary: every key present, exit 0; --keys takes a comma list' '
	gdnctl metrics --run marin-community/marin/old1 $FAST >stdout &&
	gdnctl metrics --run marin-community/marin/r2 --keys throughput/mfu,_wandb.runtime \
		--keys throughput/tokens_per_second $FAST >stdout &&
	test_grep "^_wandb.runtime  *12  ok" stdout &&
	test_line_count = 7 stdout
'

test_expect_success 'a run URL, and a display name where the id goes (the original fallback)' '
	gdnctl metrics --run "https://wandb.ai/marin-community/marin/runs/r2?nw=1" \
		--keys throughput/mfu $FAST >stdout &&
	test_grep "runs/r2 " stdout &&
	gdnctl metrics --run marin-community/marin/gdn_tinyprof_iter001_a --keys throughput/mfu $FAST >stdout &&
	test_grep "runs/old1 (gdn_tinyprof_iter001_a)" stdout &&
	test_grep "^throughput/mfu  *4  ok" stdout
'

test_expect_success 'discovery by --prefix: the newest run named exactly PREFIX_*' '
	gdnctl metrics --prefix gdn_tinyprof_iter001 --keys throughput/mfu $FAST >stdout &&
	test_grep "runs/r2 (gdn_tinyprof_iter001_b)" stdout &&
	gdnctl metrics --prefix gdn_tinyprof_iter0010 --entity marin-community --project marin \
		--keys throughput/mfu $FAST >stdout &&
	test_grep "runs/r3 " stdout &&
	test_must_fail =1 gdnctl metrics --prefix gdn_nothing $FAST >stdout 2>stderr &&
	test_grep "no W&B run named .gdn_nothing_\*. in .marin-community/marin." stderr
'

test_expect_success 'the prefix is sent as an anchored, escaped $regex filter, newest first' '
	: >requests.log &&
	test_must_fail =1 gdnctl metrics --prefix "a.b" --keys x $FAST >/dev/null 2>stderr &&
	test_grep "no W&B run named .a.b_\*." stderr &&
	python3 - requests.log <<-\EOF
	import json, sys
	v = [json.loads(json.loads(l)["body"])["variables"] for l in open(sys.argv[1])]
	runs = [x for x in v if "filters" in x]
	assert runs, v
	f = json.loads(runs[0]["filters"])
	assert f == {"$or": [{"display_name": {"$regex": "^a\\.b_"}},
	                     {"name": {"$regex": "^a\\.b_"}}]}, f
	assert runs[0]["order"] == "-created_at", runs[0]
	EOF
'

test_expect_success 'history window: median over steps 10..18 with enough points' '
	gdnctl metrics --run marin-community/marin/r2 --history --keys throughput/mfu $FAST >stdout &&
	test_grep "^\[gdnctl\] source: wandb-history-median\[10:18\]$" stdout &&
	test_grep "^throughput/mfu  *7.5  ok  *6$" stdout
'

test_expect_success 'history window: --agg mean, --steps, open ends' '
	gdnctl metrics --run marin-community/marin/r2 --history --agg mean --steps 10:14 \
		--keys throughput/mfu $FAST >stdout &&
	test_grep "^throughput/mfu  *7.1  ok  *5$" stdout &&
	gdnctl metrics --run marin-community/marin/r2 --history --steps 19: --min-points 1 \
		--keys throughput/mfu $FAST >stdout &&
	test_grep "^throughput/mfu  *1000  ok  *1$" stdout
'

test_expect_success 'history window: too few points and non-finite points are reported' '
	test_must_fail =1 gdnctl metrics --run marin-community/marin/r2 --history --min-points 7 \
		--keys throughput/mfu,throughput/duration,absent $FAST >stdout 2>stderr &&
	test_grep "^throughput/mfu  *-  too-few-points  *6$" stdout &&
	test_grep "^throughput/duration  *-  too-few-points  *1 (+2 non-finite)$" stdout &&
	test_grep "^absent  *-  missing  *0$" stdout &&
	test_grep "insufficient samples for: throughput/mfu(6<7), throughput/duration(1<7) in steps \[10, 18\]" stderr
'

test_expect_success '--json: one document with statuses and null values' '
	test_must_fail =1 gdnctl metrics --run marin-community/marin/r2 --json $FAST >doc.json &&
	python3 - doc.json <<-\EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["schema"] == "gdnctl.metrics.v1"
	assert d["run"]["name"] == "r2" and d["mode"] == "summary" and d["ok"] is False
	m = {x["key"]: x for x in d["metrics"]}
	assert m["throughput/mfu"]["value"] == 5.5 and m["throughput/mfu"]["status"] == "ok"
	assert m["throughput/duration"]["value"] is None
	assert m["throughput/duration"]["status"] == "non-finite"
	EOF
'

test_expect_success 'a missing run or project: exit 1' '
	test_must_fail =1 gdnctl metrics --run marin-community/marin/nope $FAST 2>stderr &&
	test_grep "no W&B run .nope. in .marin-community/marin." stderr &&
	test_must_fail =1 gdnctl metrics --run someone/else/r1 $FAST 2>stderr &&
	test_grep "no W&B project .someone/else." stderr
'

test_expect_success 'the key goes as Basic auth with user api; without it: 401, exit 1, a hint' '
	python3 -c "
import base64, json, sys
want = \"Basic \" + base64.b64encode(b\"api:$KEY\").decode()
auth = {json.loads(l)[\"headers\"].get(\"Authorization\") for l in open(\"requests.log\")}
assert auth == {want}, auth
" &&
	(unset WANDB_API_KEY && test_must_fail =1 gdnctl metrics --run marin-community/marin/r2 $FAST >stdout 2>stderr) &&
	test_grep "HTTP 401: user is not logged in" stderr &&
	test_grep "hint: set WANDB_API_KEY" stderr
'

test_expect_success 'the key from ~/.netrc (machine <host>)' '
	printf "machine example.com password nope\nmachine 127.0.0.1\n  login user\n  password %s\n" "$KEY" >"$HOME/.netrc" &&
	(unset WANDB_API_KEY && gdnctl metrics --run marin-community/marin/old1 $FAST >stdout 2>stderr) &&
	test_grep "^throughput/mfu  *4  ok" stdout &&
	rm "$HOME/.netrc"
'

test_expect_success 'a 500 from the API is retried' '
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" ctl "$TRASH/ports" fault graphql 500 2 &&
	gdnctl metrics --run marin-community/marin/old1 $FAST >stdout 2>stderr &&
	test_grep "^throughput/mfu  *4  ok" stdout &&
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" ctl "$TRASH/ports" fault graphql 500 -1 &&
	test_must_fail =5 gdnctl metrics --run marin-community/marin/old1 --retries 1 $FAST 2>stderr &&
	test_grep "HTTP 500.*(2 attempts)" stderr &&
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" ctl "$TRASH/ports" reset
'

test_expect_success 'usage errors exit 2' '
	test_must_fail =2 gdnctl metrics 2>err &&
	test_must_fail =2 gdnctl metrics --run a/b/c --prefix p 2>err &&
	test_must_fail =2 gdnctl metrics --run a/b/c --steps 1:2 2>err &&
	test_grep "need --history" err &&
	test_must_fail =2 gdnctl metrics --run a/b/c --summary --history 2>err &&
	test_must_fail =2 gdnctl metrics --run a/b/c --history --steps 9:1 2>err &&
	test_must_fail =2 gdnctl metrics --run a/b --history 2>err &&
	test_grep "cannot parse the W&B run" err &&
	test_must_fail =2 gdnctl metrics --run a/b/c --entity x 2>err &&
	test_must_fail =2 gdnctl metrics --run a/b/c --history --agg max 2>err
'

test_expect_success 'a run id a NUL byte cuts short is no run (never the cut id)' '
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d[\"nul/proj\"]={\"runs\": [{\"name\": \"r9\u0000x\", \"displayName\": \"gdn_nulcut_a\", \"createdAt\": \"2025-01-05T00:00:00\", \"summary\": {\"throughput/mfu\": 1.0}}]}; json.dump(d, open(sys.argv[1], \"w\"))" wandb.json &&
	test_must_fail =1 gdnctl metrics --prefix gdn_nulcut --entity nul --project proj \
		--keys throughput/mfu $FAST >stdout 2>stderr &&
	test_grep "no W&B run named .gdn_nulcut_\*. in .nul/proj." stderr &&
	! grep "r9" stdout stderr
'

test_expect_success 'the API key is never printed or written' '
	! grep -rlF "$KEY" "$TRASH" --exclude=requests.log --exclude=.test-out --exclude=server.out
'

test_done
