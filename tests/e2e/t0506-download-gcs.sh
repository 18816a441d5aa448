#!/usr/bin/env bash
# download-trace gs://BUCKET/PREFIX against the GCS look-alike of the
# loopback test server (tests/e2e/hubserver.py), reached through
# STORAGE_EMULATOR_HOST: listing pages (nextPageToken), media downloads
# with the object name URL-encoded ('/' as %2F), md5Hash verification,
# Range resume after a body cut short, retries on 503, clear errors for
# 401, 403 and 404, the token from GOOGLE_OAUTH_ACCESS_TOKEN or gcloud
# (through the proc API, with a deadline), and a 200,000-object listing
# that SIGTERM or --deadline stops at once, with one summary line. The
# token never appears in any output.
#
# "Stopped within 2 s" holds for a binary without sanitizers (LeakSanitizer
# scans the heap at exit: 15 s there), so it also runs in the dev build:
# ctest: unsanitized
# ctest: cost 75
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY all_proxy ALL_PROXY no_proxy NO_PROXY
unset GOOGLE_OAUTH_ACCESS_TOKEN GDNCTL_GCLOUD XDG_CACHE_HOME
TOKEN=ya29.e2eGcsSecretToken0123456789
FAST="--retry-base-delay 10ms --retry-max-delay 50ms --stall-timeout 2s"

sess=gcs/bkt/xprof/run1/plugins/profile/steps-1-to-5
mkdir -p "$sess" "gcs/bkt/xprof/run1/other dir" gcs/bkt/elsewhere
python3 - "$sess/host1.trace.json.gz" <<'EOF'
import gzip, json, sys
ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:TPU:0"}},
      {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "XLA Ops"}}]
for i in range(30):
    ev.append({"ph": "X", "name": "fusion.%d" % (i % 3), "pid": 1, "tid": 2,
               "ts": i * 10, "dur": 5 + i % 3})
with gzip.open(sys.argv[1], "wt") as f:
    json.dump({"displayTimeUnit": "ns", "traceEvents": ev}, f)
EOF
head -c 300000 /dev/urandom >"$sess/host2.trace.json.gz"
head -c 3000 /dev/urandom >"$sess/host1.xplane.pb"
head -c 700 /dev/urandom >"gcs/bkt/xprof/run1/other dir/a b.trace.json.gz"
echo notes >gcs/bkt/xprof/run1/notes.txt
echo other >gcs/bkt/elsewhere/x.trace.json.gz
BIG=xprof/run1/plugins/profile/steps-1-to-5/host2.trace.json.gz

test_start_hubserver --root "$TRASH" --gcs-root "$TRASH/gcs" --gcs-token "$TOKEN" \
	--gcs-page-size 2 --gcs-synthetic big/p:200000
export STORAGE_EMULATOR_HOST=127.0.0.1:$HUB_PORT
ctl() { python3 "$GDNCTL_SOURCE_DIR/tests/e2e/hubserver.py" ctl "$TRASH/ports" "$@"; }
reset() { ctl reset && rm -rf out && : >"$TRASH/requests.log"; }
# "METHOD PATH" of every request.
requests() {
	python3 -c '
import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    print(e["method"], e["path"])
' "$TRASH/requests.log"
}
dl() { GOOGLE_OAUTH_ACCESS_TOKEN=$TOKEN gdnctl download-trace gs://bkt/xprof/run1 \
	--output-dir out $FAST "$@"; }
token_nowhere() {
	! grep -rlF "$TOKEN" "$TRASH" --exclude=requests.log --exclude=.test-out --exclude-dir=bin
}
all_good() {
	for f in xprof/run1/plugins/profile/steps-1-to-5/host1.trace.json.gz $BIG \
		"xprof/run1/other dir/a b.trace.json.gz"; do
		cmp "gcs/bkt/$f" "out/$f" || return 1
	done
	test ! -e out/xprof/run1/notes.txt &&
	test ! -e out/xprof/run1/plugins/profile/steps-1-to-5/host1.xplane.pb &&
	! find out -name "*.part" | grep -q .
}

test_expect_success 'every page of the listing, every matching object, verified' '
	reset &&
	dl >stdout 2>stderr &&
	all_good &&
	test_grep "downloading 3 files to $TRASH/out" stdout &&
	requests | grep "^GET /storage/v1/b/bkt/o?prefix=xprof%2Frun1&" >list &&
	test_line_count -ge 3 list &&
	grep -q "pageToken=" list &&
	requests | grep "^GET /download/storage/v1/b/bkt/o/xprof%2Frun1%2Fother%20dir%2Fa%20b.trace.json.gz?alt=media$" &&
	token_nowhere
'

test_expect_success 'the token goes as a Bearer token (the server refuses anything else)' '
	grep -c "\"Authorization\": \"Bearer $TOKEN\"" "$TRASH/requests.log" >n &&
	test "$(cat n)" -ge 6
'

test_expect_success 'a second run finds everything present and verified: no media request' '
	: >"$TRASH/requests.log" &&
	dl --json >doc.json 2>stderr &&
	! requests | grep -q "^GET /download/" &&
	python3 -c "
import json, sys
d = json.load(open(\"doc.json\"))
assert d[\"schema\"] == \"gdnctl.download_trace.v1\" and d[\"kind\"] == \"gcs\", d
assert d[\"token_source\"] == \"GOOGLE_OAUTH_ACCESS_TOKEN\" and d[\"authenticated\"]
assert d[\"listed\"] == 5 and d[\"ok\"], d
assert [f[\"state\"] for f in d[\"files\"]] == [\"present\"] * 3, d[\"files\"]
assert all(len(f[\"md5\"]) == 24 for f in d[\"files\"])
"
'

test_expect_success '--include-xplane, --pattern, --limit, --dry-run' '
	reset &&
	dl --include-xplane --dry-run >stdout &&
	test_grep "would download xprof/run1/plugins/profile/steps-1-to-5/host1.xplane.pb (3000 bytes)" stdout &&
	test_line_count = 4 stdout &&
	test ! -e out &&
	dl --pattern "notes" >stdout &&
	test_cmp gcs/bkt/xprof/run1/notes.txt out/xprof/run1/notes.txt &&
	rm -rf out && dl --limit 1 >stdout &&
	test "$(find out -type f | wc -l)" = 1
'

test_expect_success 'a body cut short is resumed with Range' '
	reset && ctl fault $BIG drop 1 100000 &&
	dl >stdout 2>stderr &&
	all_good &&
	requests | grep "^GET /download/.*host2" >media &&
	test_line_count = 2 media &&
	grep -c "\"Range\": \"bytes=100000-\"" "$TRASH/requests.log" >n && test "$(cat n)" = 1
'

test_expect_success 'a wrong body fails the md5Hash check: exit 1, nothing left behind' '
	reset && ctl fault $BIG badsha -1 &&
	test_must_fail =1 dl >stdout 2>stderr &&
	test_grep "md5 mismatch: expected" stderr &&
	test_grep "1 of 3 files failed" stderr &&
	test ! -e out/$BIG && test ! -e out/$BIG.part
'

test_expect_success '503 (media and listing) is retried' '
	reset && ctl fault $BIG 503 2 && ctl fault gcs-list 503 1 &&
	dl >stdout 2>stderr &&
	all_good &&
	requests | grep "^GET /download/.*host2" >media &&
	test_line_count = 3 media
'

test_expect_success 'a body cut short every time: exit 5 after the retries, the .part kept' '
	reset && ctl fault $BIG drop -1 1000 &&
	test_must_fail =5 dl >stdout 2>stderr &&
	test_grep "(5 attempts)" stderr &&
	test -s out/$BIG.part && test ! -e out/$BIG
'

test_expect_success '401, 403 and 404: one clear line each, exit 1' '
	reset &&
	GOOGLE_OAUTH_ACCESS_TOKEN=wrong test_must_fail =1 gdnctl download-trace gs://bkt/x \
		$FAST 2>stderr &&
	test_grep "^\[gdnctl\] error: cannot list gs://bkt/x: the credentials were refused (HTTP 401); set GOOGLE_OAUTH_ACCESS_TOKEN" stderr &&
	test_line_count = 1 stderr &&
	GOOGLE_OAUTH_ACCESS_TOKEN=$TOKEN test_must_fail =1 gdnctl download-trace gs://forbidden/x \
		$FAST 2>stderr &&
	test_grep "permission denied (HTTP 403)" stderr && test_line_count = 1 stderr &&
	GOOGLE_OAUTH_ACCESS_TOKEN=$TOKEN test_must_fail =1 gdnctl download-trace gs://nosuch/x \
		$FAST 2>stderr &&
	test_grep "cannot list gs://nosuch/x: no such bucket (HTTP 404)" stderr &&
	test_line_count = 1 stderr &&
	token_nowhere
'

test_expect_success 'an object gone after the listing (404): that file fails, exit 1, others done' '
	reset && ctl fault $BIG 404 -1 &&
	test_must_fail =1 dl >stdout 2>stderr &&
	test_grep "cannot fetch .*/download/storage/v1/b/bkt/o/xprof%2Frun1%2Fplugins%2Fprofile%2Fsteps-1-to-5%2Fhost2.trace.json.gz.: HTTP 404: No such object: bkt/$BIG" stderr &&
	test_grep "1 of 3 files failed" stderr &&
	cmp "gcs/bkt/xprof/run1/other dir/a b.trace.json.gz" "out/xprof/run1/other dir/a b.trace.json.gz" &&
	test ! -e out/$BIG
'

test_expect_success 'bad spellings are usage errors' '
	test_must_fail =2 gdnctl download-trace gs:///x 2>stderr &&
	test_grep "names no bucket" stderr &&
	test_must_fail =2 gdnctl download-trace ftp://x 2>stderr &&
	test_grep "is not a source" stderr &&
	test_must_fail =2 gdnctl download-trace gs://bkt/x --repo-id a/b 2>stderr &&
	test_grep "not both" stderr
'

mkdir -p bin
cat >bin/gcloud-ok <<EOF
#!/bin/sh
echo "\$*" >>"$TRASH/gcloud.argv"
echo "WARNING: a warning line first"
echo "$TOKEN"
EOF
cat >bin/gcloud-fail <<'EOF'
#!/bin/sh
echo "ERROR: (gcloud.auth.print-access-token) You do not currently have an active account selected." >&2
exit 1
EOF
cat >bin/gcloud-hang <<'EOF'
#!/bin/sh
sleep 30
EOF
chmod +x bin/*

test_expect_success 'no GOOGLE_OAUTH_ACCESS_TOKEN: gcloud auth print-access-token gives the token' '
	reset &&
	GDNCTL_GCLOUD=$TRASH/bin/gcloud-ok gdnctl download-trace gs://bkt/xprof/run1 \
		--output-dir out $FAST --json >doc.json 2>stderr &&
	all_good &&
	test "$(cat gcloud.argv)" = "auth print-access-token" &&
	test_grep "\"token_source\": \".*gcloud-ok auth print-access-token\"" doc.json &&
	token_nowhere
'

test_expect_success 'gcloud fails: its message summarised on one line, exit 1' '
	GDNCTL_GCLOUD=$TRASH/bin/gcloud-fail test_must_fail =1 gdnctl download-trace \
		gs://bkt/x $FAST 2>stderr &&
	test_grep "no GCS access token: .*gcloud-fail auth print-access-token. failed (exit 1): ERROR: (gcloud.auth.print-access-token) You do not currently have an active account selected.; set GOOGLE_OAUTH_ACCESS_TOKEN" stderr &&
	test_line_count = 1 stderr
'

test_expect_success 'gcloud hangs: --deadline stops it (exit 124)' '
	start=$(date +%s) &&
	GDNCTL_GCLOUD=$TRASH/bin/gcloud-hang test_must_fail =124 gdnctl download-trace \
		gs://bkt/x $FAST --deadline 1s 2>stderr &&
	test $(($(date +%s) - start)) -lt 6 &&
	test_grep "did not answer within" stderr
'

# ---- a 200,000-object listing ----
ms_now() { date +%s%3N; }
# How long stopping may take: 2 s, more under sanitizers (LeakSanitizer
# scans the heap at exit) or valgrind.
stop_ms=2000
[ -z "${GDNCTL_TEST_SANITIZED:-}${GDNCTL_TEST_EXEC_PREFIX:-}" ] || stop_ms=15000

# The first case notes how long the listing took (until 50 files are in),
# for the second's deadline; the second lists once more alone without it.
test_expect_bound 'SIGTERM during a 200,000-file queue: gone at once, one summary line, exit 143' '
	reset &&
	t_start=$(ms_now) &&
	{ GOOGLE_OAUTH_ACCESS_TOKEN=$TOKEN ${GDNCTL_TEST_EXEC_PREFIX:-} "$GDNCTL_BIN" \
		download-trace gs://big/p --output-dir out $FAST --jobs 8 >stdout 2>stderr & } &&
	pid=$! &&
	for _ in $(seq 1200); do
		test -d out/p && test "$(ls out/p | wc -l)" -ge 50 && break; sleep 0.05
	done &&
	test -d out/p &&
	echo $(($(ms_now) - t_start)) >"$TRASH/listing-ms" &&
	t0=$(ms_now) && kill -TERM $pid &&
	{ wait $pid; rc=$?; } ;
	t1=$(ms_now) &&
	say "alive $((t1 - t0)) ms after SIGTERM" &&
	test "$rc" = 143 &&
	test $((t1 - t0)) -lt $stop_ms &&
	test_grep "downloading 200000 files" stdout &&
	test_grep "^\[gdnctl\] error: interrupted: [0-9]* of 200000 files done, 0 failed, [0-9]* stopped, [0-9]* not started$" stderr &&
	test_line_count = 1 stderr &&
	test "$(grep -c " -> " stdout)" -lt 100000
'

test_expect_bound '--deadline during a 200,000-file queue: exit 124 just after it, one line' '
	reset &&
	if [ -s "$TRASH/listing-ms" ]; then
		listing=$(cat "$TRASH/listing-ms")
	else
		t0=$(ms_now) &&
		GOOGLE_OAUTH_ACCESS_TOKEN=$TOKEN gdnctl download-trace gs://big/p --dry-run --json >/dev/null &&
		listing=$(($(ms_now) - t0))
	fi &&
	deadline=$((listing * 3 / 2 + 3000)) &&
	say "the listing takes $listing ms: --deadline ${deadline}ms" &&
	start=$(ms_now) &&
	GOOGLE_OAUTH_ACCESS_TOKEN=$TOKEN test_must_fail =124 gdnctl download-trace gs://big/p \
		--output-dir out $FAST --jobs 8 --deadline ${deadline}ms >stdout 2>stderr &&
	took=$(($(ms_now) - start)) &&
	say "exited after $took ms" &&
	test $took -lt $((deadline + 2000 + stop_ms)) &&
	test_grep "downloading 200000 files" stdout &&
	test_grep "^\[gdnctl\] error: the deadline passed: [0-9]* of 200000 files done, 0 failed, [0-9]* stopped, [0-9]* not started$" stderr &&
	test_line_count = 1 stderr
'

test_expect_success 'the token is in no output' '
	token_nowhere
'

test_done
