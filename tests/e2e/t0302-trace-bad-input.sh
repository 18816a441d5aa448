#!/usr/bin/env bash
# Bad input never crashes: one line on stderr with the byte offset, exit 1,
# bounded memory and time (token and depth caps).
. "$(dirname "$0")/lib.sh"

D=$TEST_DATA/trace

# One-line error, exit exactly 1.
fails_with() {
	local pattern=$1
	shift
	test_must_fail =1 "$@" >out 2>err &&
		test_line_count = 1 err &&
		test_grep -E "$pattern" err &&
		test ! -s out
}

test_expect_success 'a missing file' '
	fails_with "^\[gdnctl\] error: cannot read .nope.json.: No such file" gdnctl trace summary nope.json
'

test_expect_success 'an empty file' '
	: >empty.json &&
	fails_with "^\[gdnctl\] error: .empty.json.: invalid JSON at byte offset 0: unexpected end of input \(empty document\)$" \
		gdnctl trace summary empty.json
'

test_expect_success 'a JSON document that is not a trace' '
	fails_with "error: .*: not a trace: the top-level object has no \"traceEvents\" array$" \
		gdnctl trace summary "$D/not-a-trace/input.json" &&
	echo "[1,2,3]" >arr.json &&
	gdnctl trace summary arr.json >out 2>err &&
	test_grep "no device ops found" err &&
	echo "\"just a string\"" >str.json &&
	fails_with "not a trace: the top-level value is a string" gdnctl trace summary str.json
'

test_expect_success 'invalid JSON names the byte offset' '
	fails_with "^\[gdnctl\] error: .*invalid-json/input.json.: invalid JSON at byte offset 71: unexpected .\"., expected .,. or .\}.$" \
		gdnctl trace summary "$D/invalid-json/input.json"
'

test_expect_success 'a truncated gzip file' '
	fails_with "truncated gzip data: the input ends inside member 1 after 40 compressed bytes$" \
		gdnctl trace summary "$D/truncated-gzip/input.json.gz"
'

test_expect_success 'a corrupt gzip file' '
	gzip -c "$D/xla-nested/input.json" >good.gz &&
	python3 -c "
import sys
b = bytearray(open(\"good.gz\", \"rb\").read())
for i in range(12, len(b) - 8):
    b[i] ^= 0xA5
open(\"bad.gz\", \"wb\").write(bytes(b))" &&
	fails_with "corrupt gzip data at compressed byte offset [0-9]+: " gdnctl trace summary bad.gz
'

test_expect_success 'truncated at every byte: an error at that offset, exit 1' '
	doc="$D/xla-metadata-last/input.json" &&
	n=$(wc -c <"$doc") &&
	for cut in $(seq 0 37 $((n - 2))) $((n - 2)); do
		head -c $cut "$doc" >cut.json &&
		fails_with "invalid JSON at byte offset $cut: unexpected end of input" \
			gdnctl trace summary cut.json || return 1
	done
'

# Every third byte set to 00, 7D, 22 and FF in turn: all these variants go
# through the reader in one process (the fuzz target's replay: a crash, a
# sanitizer report or a multi-line error fails it; its first byte picks
# the options and chunking, 0 the default), and one position in 213
# through `gdnctl trace summary` (exit 0 or 1, one line).
test_expect_success 'a byte changed anywhere: exit 0 or 1, one line, never a crash' '
	python3 - "$D/xla-nested/input.json" <<-\PY &&
	import os, sys
	doc = open(sys.argv[1], "rb").read()
	os.mkdir("flips")
	for pos in range(0, len(doc), 3):
	    for byte in (0x00, 0x7D, 0x22, 0xFF):
	        b = bytearray(doc)
	        b[pos] = byte
	        open("flips/%04d-%02x" % (pos, byte), "wb").write(b"\0" + bytes(b))
	        if pos % 213 == 0:
	            open("bad-%d-%02x.json" % (pos, byte), "wb").write(bytes(b))
	PY
	"$GDNCTL_BUILD_DIR/tests/fuzz_trace_replay" flips >replay.out &&
	test "$(cat replay.out)" = "replayed $(ls flips | wc -l) inputs" &&
	test "$(ls flips | wc -l)" -gt 2000 &&
	test_trace_summary_each bad-*.json
'

test_expect_success '10^6-deep nesting fails at the depth cap' '
	python3 -c "import sys; sys.stdout.write(\"[\" * 1000000)" >deep.json &&
	fails_with "invalid JSON at byte offset 512: nesting deeper than 512 levels$" \
		gdnctl trace summary deep.json
'

# A generator of a 1 GB string on standard input; it reports how much it could write.
cat >gen.py <<'PY'
import sys
where = sys.argv[1]
head = {"name": '{"traceEvents":[{"ph":"X","name":"',
        "skipped": '{"traceEvents":[{"ph":"X","args":{"long_name":"',
        "toplevel": '{"otherKey":"'}[where]
out = sys.stdout.buffer
written = 0
try:
    out.write(head.encode())
    chunk = b"x" * (1 << 20)
    while written < (1 << 30):
        out.write(chunk)
        written += len(chunk)
    out.write(b'"}]}')
    out.flush()
except BrokenPipeError:
    pass
sys.stderr.write("%d\n" % written)
PY

for where in name skipped toplevel; do
	test_expect_success "a 1 GB string ($where) fails fast on the token cap, in bounded memory" '
		if [ -x /usr/bin/time ]; then timer="/usr/bin/time -f %M -o rss"; else timer=; fi &&
		{ python3 gen.py '"$where"' 2>written | $timer "$GDNCTL_BIN" trace summary - >out 2>err; rc=$?; } &&
		test $rc = 1 &&
		test_grep "^\[gdnctl\] error: .-.: invalid JSON at byte offset [0-9]*: string longer than the 16777216-byte token cap$" err &&
		written=$(cat written) &&
		echo "generator wrote $written bytes" &&
		test "$written" -lt $((256 << 20)) &&
		if [ -f rss ]; then
			echo "peak RSS $(tail -1 rss) KB" &&
			test "$(tail -1 rss)" -lt $((300 * 1024))
		fi
	'
done

test_done
