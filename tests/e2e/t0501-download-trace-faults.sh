#!/usr/bin/env bash
# download-trace under faults injected by the loopback hub server: 500s,
# 429 with Retry-After, a connection dropped mid-body, a stall, a wrong
# sha256, lying Content-Lengths, a server that ignores Range, a listing
# page that fails, a next-page link to another host, retries exhausted and
# the overall deadline. For each: the exit code, and what is on disk (only
# complete, verified files at final paths; no .part after success), and
# the token nowhere but with the hub.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset HF_TOKEN HUGGING_FACE_HUB_TOKEN HF_HOME HF_TOKEN_PATH HF_ENDPOINT XDG_CACHE_HOME
TOKEN=hf_faultTestToken9876543210
export HF_TOKEN=$TOKEN
FAST="--retries 3 --retry-base-delay 10ms --retry-max-delay 40ms --stall-timeout 1s"

repo=$TRASH/root/datasets/org/traces/main
mkdir -p "$repo/run1" "$repo/run2"
head -c 200000 /dev/urandom >"$repo/run1/perfetto_trace.json.gz" # LFS: via the CDN
head -c 3000 /dev/urandom >"$repo/run2/host.trace.json.gz"	   # LFS: via the CDN
echo '{"small": true}' >"$repo/run2/profile.json"		   # from the hub itself
BIG=run1/perfetto_trace.json.gz

test_start_hubserver --root "$TRASH/root" --page-size 2 --lfs-min-size 100 --token "$TOKEN" --private org/traces
export HF_ENDPOINT=http://127.0.0.1:$HUB_PORT

fault() { python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" ctl "$TRASH/ports" fault "$@"; }
reset() {
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" ctl "$TRASH/ports" reset &&
		: >"$TRASH/requests.log" && rm -rf "$TRASH/out"
}
# "SERVER METHOD PATH RANGE" per request.
requests() {
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print(e["server"], e["method"], e["path"].split("?")[0], e["headers"].get("Range", "-"))
' "$TRASH/requests.log"
}
# Seconds between the first and the second request whose path contains $1.
gap() {
	python3 -c '
import json, sys
t = [json.loads(l)["time"] for l in open(sys.argv[1]) if sys.argv[2] in json.loads(l)["path"]]
print("%.3f" % (t[1] - t[0]))
' "$TRASH/requests.log" "$1"
}
dl() { gdnctl download-trace --repo-id org/traces --output-dir out $FAST "$@"; }
# Only complete, verified files at their final paths, and no .part.
all_good() {
	for p in run1/perfetto_trace.json.gz run2/host.trace.json.gz run2/profile.json; do
		cmp "$repo/$p" "out/$p" || return 1
	done
	test -z "$(find out -name "*.part")"
}
token_nowhere() {
	! grep -rlF "$TOKEN" "$TRASH" --exclude=requests.log --exclude=.test-out &&
		python3 -c '
import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["server"] == "cdn" and (sys.argv[2] in l or "Authorization" in e["headers"]):
        sys.exit("the CDN saw the token: " + l)
' "$TRASH/requests.log" "$TOKEN"
}

# a port where nothing listens, held for this script (lib.sh)
test_closed_port || skip_all "cannot hold a closed port on 127.0.0.1"

test_expect_success '500 twice on resolve: retried, then done' '
	reset && fault $BIG 500 2 &&
	dl >stdout 2>stderr &&
	all_good &&
	requests | grep -c "resolve/main/$BIG" >n && echo 3 >expect && test_cmp expect n &&
	test ! -s stderr &&
	token_nowhere
'

test_expect_success '429 with Retry-After: 1 is honoured' '
	reset && fault $BIG 429 1 1 &&
	dl >stdout 2>stderr &&
	all_good &&
	awk "BEGIN { exit !($(gap "resolve/main/$BIG") >= 0.95) }" &&
	token_nowhere
'

test_expect_success 'connection dropped mid-body twice: resumed with Range' '
	reset && fault $BIG drop 2 &&
	dl >stdout 2>stderr &&
	all_good &&
	requests | grep "^cdn GET /cdn/" | grep -v "host.trace" >cdn &&
	test_line_count = 3 cdn &&
	test_grep "bytes=100000-$" cdn &&
	test_grep "bytes=150000-$" cdn &&
	token_nowhere
'

test_expect_success 'a stalled transfer is abandoned after --stall-timeout and resumed' '
	reset && fault $BIG stall 1 1000 &&
	start=$(date +%s) &&
	dl >stdout 2>stderr &&
	test $(($(date +%s) - start)) -lt 10 &&
	all_good &&
	requests | grep "^cdn GET /cdn/" | grep -c "bytes=1000-" >n && echo 1 >expect && test_cmp expect n &&
	token_nowhere
'

test_expect_success 'a wrong sha256: exit 1, no file and no .part left' '
	reset && fault $BIG badsha -1 &&
	test_must_fail =1 dl >stdout 2>stderr &&
	test_grep "sha256 mismatch: expected [0-9a-f]\{64\}, got [0-9a-f]\{64\}" stderr &&
	test ! -e out/$BIG &&
	test ! -e out/$BIG.part &&
	cmp "$repo/run2/profile.json" out/run2/profile.json &&
	cmp "$repo/run2/host.trace.json.gz" out/run2/host.trace.json.gz &&
	token_nowhere
'

test_expect_success 'a Content-Length larger than the body: the complete data verifies' '
	reset && fault $BIG lie-more 1 &&
	dl >stdout 2>stderr &&
	all_good &&
	token_nowhere
'

test_expect_success 'a Content-Length smaller than the file: the rest is fetched with Range' '
	reset && fault $BIG lie-less 1 &&
	dl >stdout 2>stderr &&
	all_good &&
	requests | grep "^cdn" | grep -c "bytes=199900-" >n && echo 1 >expect && test_cmp expect n &&
	token_nowhere
'

test_expect_success 'a server that ignores Range: the download starts over from byte 0' '
	reset && fault $BIG drop 1 && fault $BIG norange 1 &&
	dl >stdout 2>stderr &&
	all_good &&
	token_nowhere
'

test_expect_success 'a non-LFS file served by the hub survives a drop too' '
	reset && fault run2/profile.json drop 1 5 &&
	dl >stdout 2>stderr &&
	all_good &&
	requests | grep "resolve/main/run2/profile.json bytes=5-" >r &&
	test_line_count = 1 r &&
	token_nowhere
'

test_expect_success 'retries exhausted: exit 5, the .part kept for a later resume, others done' '
	reset && fault $BIG drop -1 &&
	test_must_fail =5 dl >stdout 2>stderr &&
	test_grep "cannot fetch .*resolve/main/$BIG.*(4 attempts)" stderr &&
	test_grep "1 of 3 files failed" stderr &&
	test ! -e out/$BIG &&
	test -s out/$BIG.part &&
	cmp "$repo/run2/host.trace.json.gz" out/run2/host.trace.json.gz &&
	token_nowhere
'

test_expect_success '... and the next run resumes that .part' '
	python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" ctl "$TRASH/ports" reset &&
	size=$(stat -c %s out/$BIG.part) &&
	: >"$TRASH/requests.log" &&
	dl >stdout 2>stderr &&
	all_good &&
	requests | grep "^cdn" >cdn &&
	test_line_count = 1 cdn &&
	test_grep "bytes=$size-" cdn &&
	token_nowhere
'

test_expect_success 'a failing listing page is retried' '
	reset && fault tree 500 1 &&
	dl >stdout 2>stderr &&
	all_good &&
	token_nowhere
'

test_expect_success 'a next-page link to another host is refused (the token stays home)' '
	reset && fault tree offhost 1 &&
	test_must_fail =1 dl >stdout 2>stderr &&
	test_grep "links its next page to another host" stderr &&
	! requests | grep -q "^cdn GET /api/" &&
	test ! -e out &&
	token_nowhere
'

test_expect_success '--deadline stops a transfer that keeps stalling: exit 124' '
	reset && fault $BIG stall -1 100 &&
	start=$(date +%s) &&
	test_must_fail =124 dl --stall-timeout 20s --deadline 2s >stdout 2>stderr &&
	test $(($(date +%s) - start)) -lt 8 &&
	test_grep "deadline" stderr &&
	test ! -e out/$BIG &&
	token_nowhere
'

test_expect_success 'SIGTERM stops the transfers: exit 143, the .part kept for a resume' '
	{ reset && fault $BIG stall -1 1000 || exit 1; } &&
	{ ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" download-trace --repo-id org/traces \
		--output-dir out $FAST --stall-timeout 20s >stdout 2>stderr & } &&
	pid=$! &&
	for _ in $(seq 100); do requests | grep -q "^cdn GET /cdn/.* -$" && break; sleep 0.05; done &&
	sleep 0.3 &&
	kill -TERM $pid &&
	{ wait $pid; rc=$?; } ;
	test "$rc" = 143 &&
	test_grep "interrupted" stderr &&
	test ! -e out/$BIG &&
	test "$(stat -c %s out/$BIG.part)" = 1000 &&
	token_nowhere
'

test_expect_success 'connection refused (nothing listening): exit 5 after the retries' '
	port=$CLOSED_PORT &&
	HF_ENDPOINT=http://127.0.0.1:$port test_must_fail =5 dl >stdout 2>stderr &&
	test_grep "cannot fetch .*(4 attempts)" stderr &&
	token_nowhere
'

test_expect_success 'the token is nowhere but in requests to the hub' '
	token_nowhere
'

test_done
