#!/usr/bin/env bash
# trace summary and trace diff take source spellings (gs://, wandb:,
# wandb-artifact:) directly: they download to a cache under
# $XDG_CACHE_HOME/gdnctl/traces (else ~/.cache/gdnctl/traces), keyed by
# source, and read what came; the figures are those of the same files read
# locally. xprof-compare-runs is the original's name for the same, with
# its flags. Servers: the GCS and W&B look-alikes of tests/e2e/hubserver.py.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset WANDB_API_KEY WANDB_BASE_URL NETRC XDG_CACHE_HOME GOOGLE_OAUTH_ACCESS_TOKEN GDNCTL_GCLOUD
KEY=wandbE2eTraceKey0123456789abcdef0123456789
TOKEN=ya29.e2eTraceSourcesToken0123456789

mkdir -p local gcs/bkt/xprof/runA/plugins/profile/steps-1-to-5 \
	gcs/bkt/xprof/runA/plugins/profile/steps-6-to-9
python3 - <<'EOF'
import gzip, json, os
ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}}]
def trace(path, dur, n):
    e = list(ev)
    for i in range(n):
        e.append({"ph": "X", "name": "fusion.%d" % (i % 4), "pid": 1, "tid": 2,
                  "ts": i * 100, "dur": dur + i % 4})
    with gzip.open(path, "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": e}, f)
trace("local/before.trace.json.gz", 10, 40)
trace("local/after.trace.json.gz", 14, 40)
trace("local/old.trace.json.gz", 99, 5)
import shutil
os.makedirs("datasets/org/traces/main/run1/plugins/profile/2025_01_01_00_00_00")
shutil.copy("local/after.trace.json.gz", "datasets/org/traces/main/run1/plugins/profile/2025_01_01_00_00_00/host.trace.json.gz")
os.makedirs("datasets/org/traces/main/run2")
shutil.copy("local/old.trace.json.gz", "datasets/org/traces/main/run2/host.trace.json.gz")
shutil.copy("local/old.trace.json.gz", "gcs/bkt/xprof/runA/plugins/profile/steps-1-to-5/host.trace.json.gz")
shutil.copy("local/before.trace.json.gz", "gcs/bkt/xprof/runA/plugins/profile/steps-6-to-9/host.trace.json.gz")
ab = os.path.abspath
db = {"e/p": {"runs": [{"name": "runA", "createdAt": "2025-01-01"},
                       {"name": "runB", "createdAt": "2025-01-02"}],
  "artifacts": [
   {"id": "A1", "name": "run-runA-profiler", "versionIndex": 0, "type": "jax_profile",
    "aliases": ["latest", "v0"], "updatedAt": "2025-01-01T00:00:00", "run": "runA",
    "files": [{"name": "plugins/profile/2025_01_01/host.trace.json.gz", "src": ab("local/before.trace.json.gz")}]},
   {"id": "B1", "name": "run-runB-profiler", "versionIndex": 0, "type": "jax_profile",
    "aliases": ["latest", "v0"], "updatedAt": "2025-01-02T00:00:00", "run": "runB",
    "files": [{"name": "plugins/profile/2025_01_02/host.trace.json.gz", "src": ab("local/after.trace.json.gz")}]}]}}
json.dump(db, open("wandb.json", "w"))
EOF

test_start_hubserver --root "$TRASH" --wandb "$TRASH/wandb.json" --wandb-key "$KEY" \
	--gcs-root "$TRASH/gcs" --gcs-token "$TOKEN"
export WANDB_BASE_URL=http://127.0.0.1:$HUB_PORT WANDB_API_KEY=$KEY
export STORAGE_EMULATOR_HOST=127.0.0.1:$HUB_PORT GOOGLE_OAUTH_ACCESS_TOKEN=$TOKEN
export XDG_CACHE_HOME=$TRASH/cache
export HF_ENDPOINT=http://127.0.0.1:$HUB_PORT
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_HOME HF_TOKEN_PATH
secrets_nowhere() {
	! grep -rlF -e "$KEY" -e "$TOKEN" "$TRASH" --exclude=requests.log --exclude=.test-out
}
# The report without its first line (which names the file read).
body() { sed 1d "$1"; }

test_expect_success 'trace summary gs://...: the newest session, read from the cache' '
	gdnctl trace summary gs://bkt/xprof/runA >remote 2>stderr &&
	gdnctl trace summary local/before.trace.json.gz >here &&
	body remote >r && body here >h && test_cmp h r &&
	dir=$(ls -d cache/gdnctl/traces/gcs/bkt_xprof_runA-*) &&
	test -f $dir/xprof/runA/plugins/profile/steps-6-to-9/host.trace.json.gz &&
	test_grep "^Trace: *$TRASH/$dir/xprof/runA/plugins/profile/steps-6-to-9/host.trace.json.gz$" remote &&
	test_grep "gs://bkt/xprof/runA: 2 files in $TRASH/$dir" stderr
'

test_expect_success 'a second read takes the cached copies (verified, nothing fetched)' '
	: >"$TRASH/requests.log" &&
	gdnctl trace summary gs://bkt/xprof/runA --json >remote.json &&
	! grep -q "/download/" "$TRASH/requests.log" &&
	gdnctl trace summary local/before.trace.json.gz --json >here.json &&
	python3 -c "
import json
a, b = json.load(open(\"remote.json\")), json.load(open(\"here.json\"))
a.pop(\"path\", None); b.pop(\"path\", None)
a.get(\"input\", {}).pop(\"path\", None); b.get(\"input\", {}).pop(\"path\", None)
assert a == b
"
'

test_expect_success 'trace diff wandb:e/p/runA wandb:e/p/runB = the diff of the two files' '
	gdnctl trace diff wandb:e/p/runA wandb:e/p/runB >remote 2>stderr &&
	gdnctl trace diff local/before.trace.json.gz local/after.trace.json.gz >here &&
	sed 1,2d remote >r && sed 1,2d here >h && test_cmp h r &&
	test_grep "wandb:e/p/runA -> e/p/run-runA-profiler:v0: 1 file in $TRASH/cache/gdnctl/traces/wandb/e_p_runA-" stderr &&
	gdnctl trace diff wandb:e/p/runA@v0 wandb-artifact:e/p/run-runB-profiler:latest --json >rj &&
	gdnctl trace diff local/before.trace.json.gz local/after.trace.json.gz --json >hj &&
	python3 -c "
import json
a, b = json.load(open(\"rj\")), json.load(open(\"hj\"))
for d in (a, b):
    for k in list(d):
        if \"path\" in k or k in (\"before\", \"after\", \"before_xplane\", \"after_xplane\"):
            d.pop(k)
assert a == b, (a, b)
"
'

test_expect_success 'without XDG_CACHE_HOME the cache is ~/.cache/gdnctl/traces' '
	mkdir -p home &&
	env -u XDG_CACHE_HOME HOME=$TRASH/home "$GDNCTL_BIN" trace summary wandb:e/p/runB >out &&
	ls -d home/.cache/gdnctl/traces/wandb/e_p_runB-* &&
	test_must_fail =1 env -u XDG_CACHE_HOME HOME=$TRASH/home "$GDNCTL_BIN" trace summary \
		wandb:e/p/nosuch 2>stderr &&
	test_grep "no W&B run .e/p/nosuch." stderr
'

test_expect_success 'hf:ORG/REPO/PATH is --repo-id with --path-prefix, for download-trace and trace' '
	gdnctl download-trace hf:org/traces/run1 --output-dir hfout >stdout &&
	gdnctl download-trace --repo-id org/traces --path-prefix run1 --output-dir hfout2 >stdout2 &&
	(cd hfout && find . -type f | sort) >a && (cd hfout2 && find . -type f | sort) >b &&
	test_cmp a b && test_line_count = 1 a &&
	test_must_fail =2 gdnctl download-trace hf:org/traces/run1 --path-prefix x 2>stderr &&
	test_grep "not both" stderr &&
	gdnctl trace summary hf:org/traces/run2 >remote &&
	gdnctl trace summary local/old.trace.json.gz >here &&
	body remote >r && body here >h && test_cmp h r
'

test_expect_success 'download-trace SOURCE --summarize summarises what came' '
	gdnctl download-trace gs://bkt/xprof/runA --output-dir sumout --summarize >stdout &&
	test_grep "summary of xprof/runA/plugins/profile/steps-6-to-9/host.trace.json.gz:" stdout &&
	test_grep "summary of xprof/runA/plugins/profile/steps-1-to-5/host.trace.json.gz:" stdout
'

test_expect_success 'local paths still win: a file, a missing file' '
	gdnctl trace summary local/old.trace.json.gz >out &&
	test_must_fail =1 gdnctl trace summary local/missing.trace.json.gz 2>stderr
'

test_expect_success 'xprof-compare-runs: the original flags, the same payload as xprof-compare' '
	gdnctl xprof-compare-runs --before-run-target runA --after-run-target runB \
		--entity e --project p --alias latest --download-root dr --top-k 3 \
		--normalize-positive-deltas-ms 1.5 --output cmp.json >stdout 2>stderr &&
	test "$(cat stdout)" = cmp.json &&
	test -f dr/before/plugins/profile/2025_01_01/host.trace.json.gz &&
	test -f dr/after/plugins/profile/2025_01_02/host.trace.json.gz &&
	gdnctl xprof-compare --before-xplane local/before.trace.json.gz \
		--after-xplane local/after.trace.json.gz --top-k 3 \
		--normalize-positive-deltas-ms 1.5 >ref.json &&
	python3 -c "
import json
a, b = json.load(open(\"cmp.json\")), json.load(open(\"ref.json\"))
assert a[\"before_run_target\"] == \"runA\" and a[\"after_run_target\"] == \"runB\", a
assert a[\"before_artifact_ref\"] == \"e/p/run-runA-profiler:v0\", a
assert a[\"after_artifact_ref\"] == \"e/p/run-runB-profiler:v0\", a
assert a[\"before_xplane_local\"].endswith(\"dr/before/plugins/profile/2025_01_01/host.trace.json.gz\")
assert a[\"after_xplane_local\"].endswith(\"dr/after/plugins/profile/2025_01_02/host.trace.json.gz\")
for k in (\"before_run_target\", \"after_run_target\", \"before_artifact_ref\",
          \"after_artifact_ref\", \"before_xplane_local\", \"after_xplane_local\",
          \"before_xplane\", \"after_xplane\"):
    a.pop(k, None); b.pop(k, None)
assert a == b, (a, b)
"
'

test_expect_success 'xprof-compare-runs: the download root is emptied first; URLs; usage' '
	echo stale >dr/before/stale &&
	gdnctl xprof-compare-runs --before-run-target e/p/runA \
		--after-run-target https://wandb.ai/e/p/runs/runB --download-root dr >out.json &&
	test ! -e dr/before/stale &&
	test_grep "\"after_run_target\": \"https://wandb.ai/e/p/runs/runB\"" out.json &&
	test_must_fail =2 gdnctl xprof-compare-runs --before-run-target runA 2>stderr &&
	test_grep "needs --before-run-target and --after-run-target" stderr &&
	gdnctl xprof-compare-runs --before-run-target e/p/runA --after-run-target e/p/runB \
		--download-root dr --tpu-name x >/dev/null 2>stderr &&
	test_grep "tpu-name is no longer needed" stderr
'

test_expect_success 'no secret in any output' '
	secrets_nowhere
'

test_done
