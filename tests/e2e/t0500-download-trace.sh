#!/usr/bin/env bash
# download-trace (alias hf-download-trace) against the loopback hub server
# (tests/e2e/hubserver.py): paginated listing, selection, /resolve/ with a
# redirect to the CDN port, verification, skipping, resuming, revisions,
# repository types, JSON, and the token: used with the hub, never sent to
# the CDN, never printed or written anywhere.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_HOME HF_TOKEN_PATH HF_ENDPOINT XDG_CACHE_HOME
TOKEN=hf_e2eSecretToken0123456789
FAST="--retry-base-delay 10ms --retry-max-delay 50ms --stall-timeout 2s"

# ---- the repository fixture ----
repo=$TRASH/root/datasets/org/traces/main
mkdir -p "$repo/run1/plugins/profile/2025_01_01_00_00_00" "$repo/run2" "$repo/run 3" \
	"$repo/deep/a/b/c" "$TRASH/root/datasets/org/traces/refs%2Fpr%2F1/pr" \
	"$TRASH/root/models/org/model/main/weights"
python3 - "$repo/run1/perfetto_trace.json.gz" <<'EOF'
import gzip, json, sys
ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}}]
for i in range(40):
    ev.append({"ph": "X", "name": "fusion.%d" % (i % 3), "pid": 1, "tid": 2,
               "ts": i * 10, "dur": 5 + i % 3})
with gzip.open(sys.argv[1], "wt") as f:
    json.dump({"displayTimeUnit": "ns", "traceEvents": ev}, f)
EOF
head -c 5000 /dev/urandom >"$repo/run1/plugins/profile/2025_01_01_00_00_00/host1.trace.json.gz"
head -c 3000 /dev/urandom >"$repo/run1/plugins/profile/2025_01_01_00_00_00/host1.xplane.pb"
echo '{"a": 1}' >"$repo/run2/profile.json"
echo '{}' >"$repo/run2/trace.json"
head -c 700 /dev/urandom >"$repo/run 3/x.trace.json.gz"
head -c 400 /dev/urandom >"$repo/deep/a/b/c/host.trace.json.gz"
echo "hello" >"$repo/README.md"
echo '{"pr": 1}' >"$TRASH/root/datasets/org/traces/refs%2Fpr%2F1/pr/profile.json"
echo '{"m": 1}' >"$TRASH/root/models/org/model/main/weights/profile.json"
cp -r "$TRASH/root/datasets/org/traces" "$TRASH/root/datasets/org/private"
mkdir -p "$TRASH/root/datasets/org/coll/main"
echo one >"$TRASH/root/datasets/org/coll/main/a.json"
echo two >"$TRASH/root/datasets/org/coll/main/a.json.part"

# ---- the server ----
test_start_hubserver --root "$TRASH/root" --page-size 3 --lfs-min-size 100 --token "$TOKEN" --private org/private
export HF_ENDPOINT=http://127.0.0.1:$HUB_PORT

# Requests seen by one server ("hub" or "cdn"), as "METHOD PATH" lines.
requests() {
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["server"] == sys.argv[2]:
        print(e["method"], e["path"])
' "$TRASH/requests.log" "$1"
}
# The value of header $2 in requests to server $1, one a line ("-" when absent).
header_values() {
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["server"] == sys.argv[2]:
        print(e["headers"].get(sys.argv[3], "-"))
' "$TRASH/requests.log" "$1" "$2"
}
reset_log() { : >"$TRASH/requests.log"; }
# The token must appear nowhere under the trash directory but in the token
# file and the server's own request log (checked separately).
token_nowhere() {
	! grep -rlF "$TOKEN" "$TRASH" --exclude=requests.log --exclude=token --exclude=.test-out
}

expected_default() {
	cat <<-EOF
	deep/a/b/c/host.trace.json.gz
	run 3/x.trace.json.gz
	run1/perfetto_trace.json.gz
	run1/plugins/profile/2025_01_01_00_00_00/host1.trace.json.gz
	run2/profile.json
	EOF
}

test_expect_success 'the default pattern downloads the traces and profile.json (the original bug is fixed)' '
	reset_log &&
	gdnctl download-trace --repo-id org/traces --output-dir out $FAST >stdout 2>stderr &&
	echo "[gdnctl] downloading 5 files to $TRASH/out" >expect &&
	head -1 stdout >actual &&
	test_cmp expect actual &&
	expected_default | while read -r p; do
		grep -qxF "[gdnctl] $p -> $TRASH/out/$p" stdout || { echo "missing line for $p"; exit 1; }
		cmp "$repo/$p" "out/$p" || exit 1
	done &&
	(cd out && find . -type f | sed "s|^\./||" | sort) >actual &&
	expected_default >expect &&
	test_cmp expect actual &&
	test ! -s stderr
'

test_expect_success 'the listing followed Link rel=next over 3+ pages (absolute and relative links)' '
	requests hub | grep "^GET /api/datasets/org/traces/tree/main?recursive=true" >pages &&
	test_line_count -ge 4 pages &&
	test_grep "cursor=3" pages &&
	test_grep "cursor=6" pages &&
	test_grep "cursor=9" pages
'

test_expect_success 'LFS files were redirected to the CDN port; small files came from the hub' '
	requests cdn >cdn &&
	test_line_count = 4 cdn &&
	requests hub | grep /resolve/ >resolves &&
	test_line_count = 5 resolves &&
	test_grep -F "GET /datasets/org/traces/resolve/main/run%203/x.trace.json.gz" resolves
'

test_expect_success 'a second run fetches nothing: every file is present and verified' '
	reset_log &&
	gdnctl download-trace --repo-id org/traces --output-dir out $FAST >stdout &&
	test_grep -F "[gdnctl] run1/perfetto_trace.json.gz -> $TRASH/out/run1/perfetto_trace.json.gz" stdout &&
	! requests hub | grep -q /resolve/ &&
	requests cdn >cdn &&
	test ! -s cdn
'

test_expect_success 'a damaged local file is fetched again and replaced' '
	printf garbage >"out/run 3/x.trace.json.gz" &&
	printf "{}\n\n" >out/run2/profile.json &&
	reset_log &&
	gdnctl download-trace --repo-id org/traces --output-dir out $FAST >stdout &&
	cmp "$repo/run 3/x.trace.json.gz" "out/run 3/x.trace.json.gz" &&
	cmp "$repo/run2/profile.json" out/run2/profile.json &&
	requests hub | grep /resolve/ >resolves &&
	test_line_count = 2 resolves &&
	test -z "$(find out -name "*.part")"
'

test_expect_success '--path-prefix, --include-xplane and --limit (after sorting)' '
	gdnctl download-trace --repo-id org/traces --output-dir sel --path-prefix /run1/ \
		--include-xplane --limit 3 $FAST >stdout &&
	(cd sel && find . -type f | sed "s|^\./||" | sort) >actual &&
	cat >expect <<-\EOF &&
	run1/perfetto_trace.json.gz
	run1/plugins/profile/2025_01_01_00_00_00/host1.trace.json.gz
	run1/plugins/profile/2025_01_01_00_00_00/host1.xplane.pb
	EOF
	test_cmp expect actual &&
	cmp "$repo/run1/plugins/profile/2025_01_01_00_00_00/host1.xplane.pb" \
		sel/run1/plugins/profile/2025_01_01_00_00_00/host1.xplane.pb
'

test_expect_success '--pattern is a POSIX extended regex searched in the path' '
	gdnctl download-trace --repo-id org/traces --output-dir pat --pattern "^(README|run2/trace)\.(md|json)$" $FAST >stdout &&
	(cd pat && find . -type f | sed "s|^\./||" | sort) >actual &&
	printf "README.md\nrun2/trace.json\n" >expect &&
	test_cmp expect actual
'

test_expect_success 'nothing matched: the original message, exit 0, nothing created' '
	gdnctl download-trace --repo-id org/traces --output-dir none --pattern "nomatch$" $FAST >stdout 2>stderr &&
	echo "[gdnctl] No matching files found." >expect &&
	test_cmp expect stdout &&
	test ! -e none
'

test_expect_success '--revision is one encoded path segment (refs/pr/1 -> refs%2Fpr%2F1)' '
	reset_log &&
	gdnctl download-trace --repo-id org/traces --revision refs/pr/1 --output-dir pr $FAST >stdout &&
	cmp "$TRASH/root/datasets/org/traces/refs%2Fpr%2F1/pr/profile.json" pr/pr/profile.json &&
	requests hub >reqs &&
	test_grep -F "GET /api/datasets/org/traces/tree/refs%2Fpr%2F1?recursive=true&expand=false" reqs &&
	test_grep -F "GET /datasets/org/traces/resolve/refs%2Fpr%2F1/pr/profile.json" reqs
'

test_expect_success '--repo-type model uses /api/models and resolve URLs without a prefix' '
	reset_log &&
	gdnctl download-trace --repo-id org/model --repo-type model --output-dir model $FAST >stdout &&
	test -f model/weights/profile.json &&
	requests hub >reqs &&
	test_grep -F "GET /api/models/org/model/tree/main" reqs &&
	test_grep -F "GET /org/model/resolve/main/weights/profile.json" reqs
'

test_expect_success 'the alias hf-download-trace takes the original flags' '
	gdnctl hf-download-trace --repo-id org/traces --repo-type dataset --revision main \
		--path-prefix run2 --pattern "profile\.json$" --limit 1 --output-dir alias >stdout &&
	test_grep -F "[gdnctl] downloading 1 files to $TRASH/alias" stdout &&
	test_grep -F "[gdnctl] run2/profile.json -> $TRASH/alias/run2/profile.json" stdout &&
	gdnctl hf-download-trace -h >help &&
	test_grep "^usage: gdnctl hf-download-trace --repo-id ID" help
'

test_expect_success '--dry-run lists and downloads nothing' '
	gdnctl download-trace --repo-id org/traces --output-dir dry --dry-run $FAST >stdout &&
	test_grep -F "[gdnctl] would download run1/perfetto_trace.json.gz (" stdout &&
	test_line_count = 5 stdout &&
	test ! -e dry
'

test_expect_success '--json: one document with every file state' '
	rm -rf out/run2 &&
	gdnctl download-trace --repo-id org/traces --output-dir out --json $FAST >doc.json &&
	python3 - doc.json <<-\EOF
	import json, sys
	d = json.load(open(sys.argv[1]))
	assert d["schema"] == "gdnctl.download_trace.v1", d
	assert d["ok"] is True and d["exit_code"] == 0
	assert d["pages"] >= 4 and d["listed"] == 8, d
	states = {f["path"]: f["state"] for f in d["files"]}
	assert states["run2/profile.json"] == "downloaded", states
	assert states["run1/perfetto_trace.json.gz"] == "present", states
	lfs = {f["path"]: f["sha256"] for f in d["files"] if f["lfs"]}
	assert len(lfs["run1/perfetto_trace.json.gz"]) == 64
	assert d["authenticated"] is False
	EOF
'

test_expect_success 'a .part left by an earlier run is resumed with Range' '
	rm -rf res && mkdir -p "res/run 3" &&
	head -c 300 "$repo/run 3/x.trace.json.gz" >"res/run 3/x.trace.json.gz.part" &&
	reset_log &&
	gdnctl download-trace --repo-id org/traces --output-dir res --pattern "x\.trace" --json $FAST >doc.json &&
	cmp "$repo/run 3/x.trace.json.gz" "res/run 3/x.trace.json.gz" &&
	test ! -e "res/run 3/x.trace.json.gz.part" &&
	header_values cdn Range >ranges &&
	echo "bytes=300-" >expect &&
	test_cmp expect ranges &&
	python3 -c "import json,sys; f=json.load(open(\"doc.json\"))[\"files\"][0]; assert f[\"resumed_bytes\"] == 300 and f[\"fetched_bytes\"] == 400, f"
'

test_expect_success 'a .part with wrong bytes fails verification once, then starts over' '
	rm -rf res && mkdir -p "res/run 3" &&
	head -c 300 /dev/zero >"res/run 3/x.trace.json.gz.part" &&
	reset_log &&
	gdnctl download-trace --repo-id org/traces --output-dir res --pattern "x\.trace" $FAST >stdout 2>stderr &&
	cmp "$repo/run 3/x.trace.json.gz" "res/run 3/x.trace.json.gz" &&
	header_values cdn Range >ranges &&
	printf "bytes=300-\n-\n" >expect &&
	test_cmp expect ranges
'

test_expect_success '--jobs 4 gives the same files' '
	gdnctl download-trace --repo-id org/traces --output-dir par --jobs 4 $FAST >stdout &&
	(cd par && find . -type f | sed "s|^\./||" | sort) >actual &&
	expected_default >expect &&
	test_cmp expect actual &&
	expected_default | while read -r p; do cmp "$repo/$p" "par/$p" || exit 1; done
'

test_expect_success 'a private repository with HF_TOKEN: the hub gets the token, the CDN never does' '
	reset_log &&
	HF_TOKEN=$TOKEN gdnctl download-trace --repo-id org/private --output-dir priv $FAST >stdout 2>stderr &&
	expected_default | while read -r p; do cmp "$repo/$p" "priv/$p" || exit 1; done &&
	header_values hub Authorization | sort -u >auth &&
	echo "Bearer $TOKEN" >expect &&
	test_cmp expect auth &&
	header_values cdn Authorization | sort -u >auth &&
	echo - >expect &&
	test_cmp expect auth &&
	requests cdn >cdn && test_line_count = 4 cdn &&
	! grep -F "$TOKEN" "$TRASH/requests.log" | grep -q "\"server\": \"cdn\"" &&
	token_nowhere
'

test_expect_success 'the token from --token and from the token file ($HF_HOME/token)' '
	mkdir -p hfhome && printf "%s\n" "$TOKEN" >hfhome/token &&
	HF_HOME=$TRASH/hfhome gdnctl download-trace --repo-id org/private --output-dir priv2 \
		--pattern README --json $FAST >doc.json 2>stderr &&
	test -f priv2/README.md &&
	test_grep "\"token_source\": \"$TRASH/hfhome/token\"" doc.json &&
	gdnctl download-trace --repo-id org/private --output-dir priv3 --pattern README \
		--token "$TOKEN" $FAST >stdout 2>stderr &&
	test -f priv3/README.md &&
	HUGGING_FACE_HUB_TOKEN=$TOKEN gdnctl download-trace --repo-id org/private \
		--output-dir priv4 --pattern README $FAST >stdout 2>stderr &&
	test -f priv4/README.md &&
	token_nowhere
'

test_expect_success 'without a token a private repository answers 401: exit 1 and a hint' '
	test_must_fail =1 gdnctl download-trace --repo-id org/private --output-dir nope $FAST >stdout 2>stderr &&
	test_grep "HTTP 401: Invalid credentials" stderr &&
	test_grep "hint: a private repository needs a token" stderr &&
	test ! -e nope
'

test_expect_success 'a token with a newline or space is refused without echoing it' '
	test_must_fail =2 gdnctl download-trace --repo-id org/traces --token "bad token" >stdout 2>stderr &&
	test_grep "contains spaces or control characters" stderr &&
	! grep -q "bad token" stderr
'

test_expect_success '--summarize summarises the downloaded traces' '
	gdnctl download-trace --repo-id org/traces --output-dir sum --pattern "perfetto" --summarize $FAST >stdout 2>stderr &&
	test_grep -F "[gdnctl] summary of run1/perfetto_trace.json.gz:" stdout &&
	test_grep "fusion.1" stdout
'

test_expect_success 'a file whose NAME.part is also selected is refused, the other kept' '
	test_must_fail =1 gdnctl download-trace --repo-id org/coll --pattern . --output-dir coll $FAST >stdout 2>stderr &&
	test_grep "its temporary file .a.json.part. is also a file of the repository" stderr &&
	test ! -e coll/a.json &&
	echo two >expect && test_cmp expect coll/a.json.part
'

test_expect_success 'usage errors exit 2' '
	test_must_fail =2 gdnctl download-trace 2>err && test_grep "repo-id" err &&
	test_must_fail =2 gdnctl download-trace --repo-id org/traces --pattern "(" 2>err &&
	test_grep "invalid --pattern" err &&
	test_must_fail =2 gdnctl download-trace --repo-id org/traces --repo-type datasets 2>err &&
	test_must_fail =2 gdnctl download-trace --repo-id org/traces --jobs 0 2>err &&
	test_must_fail =2 gdnctl download-trace --repo-id ../etc 2>err &&
	test_grep "invalid --repo-id" err &&
	test_must_fail =2 gdnctl download-trace --repo-id org/traces extra 2>err
'

test_expect_success 'HF_ENDPOINT must be an http(s) URL' '
	HF_ENDPOINT=ftp://x test_must_fail =2 gdnctl download-trace --repo-id org/traces 2>err &&
	test_grep "not an http(s) URL" err
'

test_expect_success 'no .part files anywhere after these successes' '
	test -z "$(find "$TRASH" -name "*.part" -not -path "*/root/*" -not -path "*/coll/*")"
'

test_done
