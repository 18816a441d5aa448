#!/usr/bin/env bash
# download-trace wandb:ENTITY/PROJECT/RUN_ID[@ALIAS], W&B run URLs and
# wandb-artifact:ENTITY/PROJECT/NAME:ALIAS against the W&B GraphQL
# look-alike of the loopback test server (tests/e2e/hubserver.py): a run's
# outputArtifacts of several types and aliases (paginated), the alias else
# the most recently updated jax_profile, the artifact's files connection
# (paginated), the manifest's md5 digest and size verified, signed URLs on
# another port that must never receive the API key (the server refuses
# and records any Authorization header there), a wrong digest failing
# verification, and the key in no output.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset WANDB_API_KEY WANDB_BASE_URL NETRC XDG_CACHE_HOME
KEY=wandbE2eArtifactKey0123456789abcdef012345
FAST="--retry-base-delay 10ms --retry-max-delay 40ms"

mkdir -p files
python3 - <<'EOF'
import gzip, json, os
ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}}]
def trace(path, dur):
    e = list(ev)
    for i in range(20):
        e.append({"ph": "X", "name": "fusion.%d" % (i % 3), "pid": 1, "tid": 2,
                  "ts": i * 100, "dur": dur + i % 3})
    with gzip.open(path, "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": e}, f)
trace("files/a.trace.json.gz", 10)
trace("files/b.trace.json.gz", 20)
open("files/xplane.bin", "wb").write(os.urandom(2000))
open("files/model.bin", "wb").write(os.urandom(500))
ab = lambda p: os.path.abspath(p)
db = {"e/p": {"runs": [{"name": "runA", "createdAt": "2025-01-01"},
                       {"name": "runB", "createdAt": "2025-01-02"},
                       {"name": "runC", "createdAt": "2025-01-03"},
                       {"name": "runD", "createdAt": "2025-01-04"}],
  "artifacts": [
   {"id": "A1", "name": "run-runA-profiler", "versionIndex": 0, "type": "jax_profile",
    "aliases": ["v0", "baseline"], "updatedAt": "2025-01-01T00:00:00", "run": "runA",
    "files": [{"name": "plugins/profile/2025_01_01/host.trace.json.gz", "src": ab("files/a.trace.json.gz")}]},
   {"id": "A2", "name": "run-runA-model", "versionIndex": 0, "type": "model",
    "aliases": ["latest"], "updatedAt": "2025-01-05T00:00:00", "run": "runA",
    "files": [{"name": "model.trace.json.gz", "src": ab("files/model.bin")}]},
   {"id": "A3", "name": "run-runA-profiler", "versionIndex": 1, "type": "jax_profile",
    "aliases": ["latest", "v1"], "updatedAt": "2025-01-02T00:00:00", "run": "runA",
    "files": [{"name": "plugins/profile/2025_01_02/host.trace.json.gz", "src": ab("files/a.trace.json.gz")},
              {"name": "plugins/profile/2025_01_02/host.xplane.pb", "src": ab("files/xplane.bin")},
              {"name": "plugins/profile/2025_01_02/extra.trace.json.gz", "src": ab("files/b.trace.json.gz")}]},
   {"id": "B1", "name": "run-runB-profiler", "versionIndex": 0, "type": "jax_profile",
    "aliases": ["v0"], "updatedAt": "2025-01-03T00:00:00", "run": "runB",
    "files": [{"name": "plugins/profile/2025_01_03/host.trace.json.gz", "src": ab("files/b.trace.json.gz")}]},
   {"id": "B2", "name": "run-runB-profiler", "versionIndex": 1, "type": "jax_profile",
    "aliases": ["v1"], "updatedAt": "2025-01-04T00:00:00", "run": "runB",
    "files": [{"name": "plugins/profile/2025_01_04/host.trace.json.gz", "src": ab("files/b.trace.json.gz")}]},
   {"id": "C1", "name": "run-runC-profiler", "versionIndex": 0, "type": "jax_profile",
    "aliases": ["latest"], "updatedAt": "2025-01-03T00:00:00", "run": "runC",
    "files": [{"name": "plugins/profile/2025_01_03/host.trace.json.gz", "src": ab("files/b.trace.json.gz"),
               "bad_digest": True}]},
   {"id": "D1", "name": "run-runD-model", "versionIndex": 0, "type": "model",
    "aliases": ["latest"], "updatedAt": "2025-01-03T00:00:00", "run": "runD",
    "files": [{"name": "w.bin", "src": ab("files/model.bin")}]}
  ]}}
json.dump(db, open("wandb.json", "w"))
EOF

test_start_hubserver --root "$TRASH" --wandb "$TRASH/wandb.json" --wandb-key "$KEY"
export WANDB_BASE_URL=http://127.0.0.1:$HUB_PORT WANDB_API_KEY=$KEY
reset() { rm -rf out && : >"$TRASH/requests.log"; }
dl() { gdnctl download-trace "$@" --output-dir out $FAST; }
# Every request to the signed-URL server carried no Authorization header, and
# the server recorded no leak.
key_stays_home() {
	python3 -c '
import json, sys
n = 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    assert "LEAK" not in e, e
    if e["server"] == "cdn":
        n += 1
        assert "Authorization" not in e["headers"], e
print(n)
' "$TRASH/requests.log" >cdn.count && test "$(cat cdn.count)" -ge 1
}
key_nowhere() {
	! grep -rlF "$KEY" "$TRASH" --exclude=requests.log --exclude=.test-out --exclude=.netrc
}
queries() { grep -o "query [A-Za-z]*(" "$TRASH/requests.log"; }

test_expect_success 'wandb:E/P/RUN: the latest jax_profile artifact (not the newer model one)' '
	reset &&
	dl wandb:e/p/runA >stdout 2>stderr &&
	test_grep "^\[gdnctl\] wandb:e/p/runA: e/p/run-runA-profiler:v1$" stdout &&
	cmp files/a.trace.json.gz out/plugins/profile/2025_01_02/host.trace.json.gz &&
	cmp files/b.trace.json.gz out/plugins/profile/2025_01_02/extra.trace.json.gz &&
	test ! -e out/plugins/profile/2025_01_02/host.xplane.pb &&
	test ! -e out/model.trace.json.gz &&
	key_stays_home && key_nowhere
'

test_expect_success 'the artifact list and the files connection are read page by page' '
	queries | grep -c "RunOutputArtifacts" >n && test "$(cat n)" = 2 &&
	queries | grep -c "ArtifactFiles" >n && test "$(cat n)" = 2
'

test_expect_success 'GraphQL requests carry the key (Basic api:KEY); signed URLs never do' '
	python3 -c "
import base64, json, sys
want = \"Basic \" + base64.b64encode(b\"api:$KEY\").decode()
hub = [json.loads(l) for l in open(\"$TRASH/requests.log\")]
g = [e for e in hub if e[\"server\"] == \"hub\"]
assert g and all(e[\"headers\"].get(\"Authorization\") == want for e in g), g
" &&
	key_stays_home
'

test_expect_success '@ALIAS picks that version; an unknown alias the most recently updated' '
	reset &&
	dl wandb:e/p/runA@baseline --include-xplane >stdout &&
	test_grep ": e/p/run-runA-profiler:v0$" stdout &&
	cmp files/a.trace.json.gz out/plugins/profile/2025_01_01/host.trace.json.gz &&
	reset &&
	dl wandb:e/p/runB@nosuch >stdout &&
	test_grep ": e/p/run-runB-profiler:v1$" stdout &&
	test -e out/plugins/profile/2025_01_04/host.trace.json.gz &&
	reset &&
	dl wandb:e/p/runB >stdout &&
	test_grep ": e/p/run-runB-profiler:v1$" stdout
'

test_expect_success 'a run URL, and wandb-artifact:E/P/NAME:ALIAS' '
	reset &&
	dl "https://wandb.ai/e/p/runs/runB?nw=1" >stdout &&
	test_grep ": e/p/run-runB-profiler:v1$" stdout &&
	reset &&
	dl wandb-artifact:e/p/run-runA-profiler:v0 >stdout &&
	test_grep "^\[gdnctl\] wandb-artifact:e/p/run-runA-profiler:v0: e/p/run-runA-profiler:v0$" stdout &&
	cmp files/a.trace.json.gz out/plugins/profile/2025_01_01/host.trace.json.gz &&
	queries | grep -q "ArtifactByName" &&
	key_stays_home
'

test_expect_success '--include-xplane, --json: md5 and size from the manifest' '
	reset &&
	dl wandb:e/p/runA --include-xplane --json >doc.json &&
	cmp files/xplane.bin out/plugins/profile/2025_01_02/host.xplane.pb &&
	python3 -c "
import base64, hashlib, json
d = json.load(open(\"doc.json\"))
assert d[\"kind\"] == \"wandb\" and d[\"resolved\"] == \"e/p/run-runA-profiler:v1\", d
assert d[\"token_source\"] == \"WANDB_API_KEY\" and d[\"ok\"], d
for f in d[\"files\"]:
    data = open(f[\"local_path\"], \"rb\").read()
    assert f[\"md5\"] == base64.b64encode(hashlib.md5(data).digest()).decode(), f
    assert f[\"size\"] == len(data) and f[\"state\"] == \"downloaded\", f
assert len(d[\"files\"]) == 3
" &&
	key_stays_home
'

test_expect_success 'a wrong digest in the manifest fails verification: exit 1' '
	reset &&
	test_must_fail =1 dl wandb:e/p/runC >stdout 2>stderr &&
	test_grep "md5 mismatch" stderr &&
	test ! -e out/plugins/profile/2025_01_03/host.trace.json.gz &&
	test ! -e out/plugins/profile/2025_01_03/host.trace.json.gz.part
'

test_expect_success 'no jax_profile artifact, no such run, a bad key: one line, exit 1' '
	test_must_fail =1 dl wandb:e/p/runD 2>stderr &&
	test_grep "W&B run .e/p/runD. logged no artifact of type .jax_profile." stderr &&
	test_must_fail =1 dl wandb:e/p/nosuch 2>stderr &&
	test_grep "no W&B run .e/p/nosuch." stderr &&
	WANDB_API_KEY=wrongKey test_must_fail =1 dl wandb:e/p/runA --retries 0 2>stderr &&
	test_grep "HTTP 401" stderr &&
	test_must_fail =2 dl wandb:e/p 2>stderr &&
	test_must_fail =2 dl wandb-artifact:e/p 2>stderr
'

test_expect_success 'the key from ~/.netrc works the same' '
	reset &&
	printf "machine 127.0.0.1\n  login user\n  password %s\n" "$KEY" >.netrc &&
	env -u WANDB_API_KEY NETRC=$TRASH/.netrc "$GDNCTL_BIN" download-trace wandb:e/p/runA \
		--output-dir out $FAST --json >doc.json &&
	test_grep "\"token_source\": \"netrc machine 127.0.0.1\"" doc.json &&
	key_stays_home
'

test_expect_success 'the key is in no output' '
	key_nowhere
'

test_done
