#!/usr/bin/env bash
# The report in a real browser: Debian's chromium renders the HTML of the
# loop run of lib-report.sh headless to a PNG and to a DOM dump. The PNG must show the
# chart; the DOM must hold one point per iteration (counted from the
# journal), the champion line and one table row per iteration. No network:
# the HTML references nothing outside itself, and chromium's network log of
# the page's loads has no request (a control page proves the log sees them).
. "$(dirname "$0")/lib.sh"
. "$GDNCTL_SOURCE_DIR/tests/e2e/lib-report.sh"

command -v chromium >/dev/null 2>&1 || skip_all "chromium is not installed (bash .ci/setup test)"

chrome() {
	rm -rf "$TRASH/chrome" &&
		timeout 120 chromium --headless --no-sandbox --disable-gpu --no-first-run \
			--user-data-dir="$TRASH/chrome" --disable-background-networking \
			--disable-component-update --disable-sync --disable-default-apps \
			--disable-extensions --host-resolver-rules="MAP * ~NOTFOUND" "$@" \
			2>>"$TRASH/chrome.err"
}

# The page's own network requests in a chromium --log-net-log file, one per line.
page_requests() {
	python3 - "$1" <<-\EOF2
		import json, sys
		d = json.load(open(sys.argv[1]))
		start = d["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
		for e in d["events"]:
		    p = e.get("params", {})
		    # the page's loads carry its file:// isolation key; chromium's own do not
		    if e["type"] == start and "url" in p and "file://" in p.get("network_isolation_key", ""):
		        print(p["url"])
	EOF2
}

# The report of a real loop run (lib-report.sh: seven iterations with a
# speed-up, a broken change, a slower one, a no-op, traces). The demo's own
# report is checked by t0800; running the demo again here cost a minute of
# CPU per build for the same page.
test_expect_success 'setup: a loop run and its report' '
	report_fixture "$TRASH/d" &&
	gdnctl report --log-dir "$TRASH/d/logs" --output "$TRASH/d/report.html" >/dev/null
'
HTML=$TRASH/d/report.html JOURNAL=$TRASH/d/logs/loop.jsonl

test_expect_success 'expected counts from the journal' '
	python3 - "$JOURNAL" >expect <<-\EOF2
		import json, sys
		ev = [json.loads(l) for l in open(sys.argv[1]) if l.endswith("\n")]
		run = [e["run"] for e in ev if e["event"] == "run_start"][-1]
		ev = [e for e in ev if e.get("run") == run]
		its = {e["iteration"] for e in ev if e["event"] == "iteration_start"}
		its |= {e["iteration"] for e in ev if e["event"] == "perf_decision"}
		promoted = sum(1 for e in ev if e["event"] == "perf_decision" and e["decision"] == "promoted")
		print(len(its), promoted)
	EOF2
	read n promoted <expect && test "$n" -ge 5 && test "$promoted" -ge 1
'
read -r N PROMOTED <expect 2>/dev/null || N=0 PROMOTED=0

test_expect_success 'the HTML needs no network: no URL, src, href or url() anywhere' '
	: the only links: the traces kept under the log dir, relative, opened by the user &&
	sed "s|<a href=\"\(logs/\)\{0,1\}traces/iteration-[0-9]*/run-[0-9]*/[a-z.]*\">||g" "$HTML" >nolinks.html &&
	test_grep ! -i -E "(src|href|action|srcset|poster|data)=|url\(|@import|https?:|//[a-z0-9]" nolinks.html &&
	test_grep "Content-Security-Policy\" content=\"default-src .none.;" "$HTML"
'

test_expect_success 'chromium renders a screenshot of the chart' '
	chrome --screenshot="$TRASH/shot.png" --window-size=1200,900 "file://$HTML" >/dev/null &&
	python3 - "$TRASH/shot.png" <<-\EOF2
		import struct, sys, zlib
		data = open(sys.argv[1], "rb").read()
		assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
		pos, idat, hdr = 8, b"", None
		while pos < len(data):
		    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
		    chunk = data[pos + 8:pos + 8 + n]
		    pos += 12 + n
		    if kind == b"IHDR":
		        hdr = struct.unpack(">IIBBBBB", chunk)
		    elif kind == b"IDAT":
		        idat += chunk
		w, h, depth, ctype, _, _, interlace = hdr
		assert (w, h) == (1200, 900), (w, h)
		assert depth == 8 and ctype in (2, 6) and interlace == 0, hdr
		bpp = 3 if ctype == 2 else 4
		raw, stride, prev, rows = zlib.decompress(idat), w * bpp, bytearray(w * bpp), []
		for y in range(h):
		    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
		    for i in range(stride):
		        a = line[i - bpp] if i >= bpp else 0
		        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
		        if f == 1: line[i] = (line[i] + a) & 255
		        elif f == 2: line[i] = (line[i] + b) & 255
		        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
		        elif f == 4:
		            pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
		            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
		    rows.append(line)
		    prev = line
		colours = {}
		for line in rows:
		    for x in range(0, stride, bpp):
		        px = bytes(line[x:x + 3])
		        colours[px] = colours.get(px, 0) + 1
		print("# %d colours, %d bytes" % (len(colours), len(data)))
		assert len(colours) > 50, "a blank page"
		# the promoted points (#2e7d32) and the baseline point (#546e7a) are on screen
		assert colours.get(bytes([0x2e, 0x7d, 0x32]), 0) > 100, "no promoted-green pixels"
		assert colours.get(bytes([0x54, 0x6e, 0x7a]), 0) > 50, "no baseline pixels"
	EOF2
'

test_expect_success 'the DOM: one point per iteration with a title, the champion line, the rows' '
	chrome --dump-dom "file://$HTML" >dom.html &&
	python3 - dom.html "$N" "$PROMOTED" <<-\EOF2
		import sys
		from html.parser import HTMLParser
		class P(HTMLParser):
		    def __init__(self):
		        super().__init__()
		        self.points, self.titled, self.rows, self.line, self.promoted = [], 0, 0, None, 0
		        self.stack = []
		    def handle_starttag(self, tag, attrs):
		        a = dict(attrs)
		        cls = (a.get("class") or "").split()
		        if tag in ("circle", "rect") and "point" in cls:
		            self.points.append(cls)
		            self.promoted += "decision-promoted" in cls
		        if tag == "title" and self.stack and self.stack[-1] in ("circle", "rect"):
		            self.titled += 1
		        if tag == "tr" and "iter-row" in cls:
		            self.rows += 1
		        if tag == "path" and a.get("id") == "champion-line":
		            self.line = a.get("d", "")
		        if tag not in ("br", "meta", "line", "path"):
		            self.stack.append(tag)
		    def handle_endtag(self, tag):
		        while self.stack and self.stack.pop() != tag:
		            pass
		p = P()
		p.feed(open(sys.argv[1]).read())
		n, promoted = int(sys.argv[2]), int(sys.argv[3])
		assert len(p.points) == n, (len(p.points), n)
		assert p.titled == n, (p.titled, n)
		assert p.rows == n, (p.rows, n)
		assert p.promoted == promoted, (p.promoted, promoted)
		assert all(any(c.startswith("decision-") for c in cls) for cls in p.points), p.points
		assert p.line and p.line.startswith("M") and " V" in p.line, p.line
		print("# %d points, %d rows, champion line %s" % (n, p.rows, p.line[:40]))
	EOF2
'

test_expect_success 'no sideways scroll at 1000 px, and the values are on the chart' '
	# a copy of the page with a script that writes its widths into the DOM
	# (the report itself forbids scripts: its CSP is taken out of the copy)
	sed -e "s/<meta http-equiv=\"Content-Security-Policy\"[^>]*>//" \
		-e "s#</body>#<script>document.body.setAttribute(\"data-widths\", document.documentElement.scrollWidth + \" \" + document.documentElement.clientWidth);</script></body>#" \
		"$HTML" >measure.html &&
	test_grep "<script>" measure.html &&
	chrome --window-size=1000,800 --dump-dom "file://$TRASH/measure.html" >mdom.html &&
	python3 - mdom.html "$N" <<-\EOF2
		import re, sys
		dom = open(sys.argv[1]).read()
		m = re.search(r"data-widths=\"(\d+) (\d+)\"", dom)
		assert m, "the measuring script did not run"
		scroll, client = int(m.group(1)), int(m.group(2))
		print("# at 1000 px: scrollWidth %d, clientWidth %d" % (scroll, client))
		assert client > 900 and scroll <= client, (scroll, client)
		labels = re.findall(r"<text class=\"value-label\"[^>]*>([^<]+)</text>", dom)
		points = re.findall(r"<circle class=\"point ", dom)
		assert labels and len(labels) == len(points), (labels, len(points))
		assert re.search(r"<p id=\"headline\" class=\"headline\">baseline [^<]* in \d+ iterations: \d+ kept, \d+ reverted", dom), "no headline"
	EOF2
'

test_expect_success 'workers: the lanes render, one per worker, and no sideways scroll at 1000 px' '
	mkdir -p "$TRASH/w" && cp "$TEST_DATA/report/workers-2.jsonl" "$TRASH/w/loop.jsonl" &&
	gdnctl report --log-dir "$TRASH/w" >/dev/null &&
	test_grep ! -i -E "(src|href|action|srcset|poster|data)=|url\(|@import|https?:|//[a-z0-9]" "$TRASH/w/report.html" &&
	sed -e "s/<meta http-equiv=\"Content-Security-Policy\"[^>]*>//" \
		-e "s#</body>#<script>var l = document.getElementById(\"worker-lanes\").getBoundingClientRect(); document.body.setAttribute(\"data-widths\", document.documentElement.scrollWidth + \" \" + document.documentElement.clientWidth + \" \" + Math.round(l.width) + \" \" + Math.round(l.height));</script></body>#" \
		"$TRASH/w/report.html" >wmeasure.html &&
	chrome --window-size=1000,800 --dump-dom "file://$TRASH/wmeasure.html" >wdom.html &&
	python3 - wdom.html <<-\EOF2
		import re, sys
		dom = open(sys.argv[1]).read()
		m = re.search(r"data-widths=\"(\d+) (\d+) (\d+) (\d+)\"", dom)
		assert m, "the measuring script did not run"
		scroll, client, lw, lh = map(int, m.groups())
		print("# workers page at 1000 px: scrollWidth %d, clientWidth %d, lanes %dx%d" % (scroll, client, lw, lh))
		assert client > 900 and scroll <= client, (scroll, client)
		assert 600 < lw <= client and lh > 50, (lw, lh)
		assert len(re.findall(r"<g class=\"lane\" data-worker=\"\d\"", dom)) == 2
		assert len(re.findall(r"<path class=\"promotion-mark\"", dom)) == 3
	EOF2
'

test_expect_success 'no network: the page makes no request (a control page does)' '
	test -s "$HTML" &&
	printf "<p><img src=\"http://example.invalid/x.png\"></p>\n" >control.html &&
	chrome --log-net-log="$TRASH/control.json" --dump-dom "file://$TRASH/control.html" >/dev/null &&
	page_requests "$TRASH/control.json" >control.req &&
	test_grep "^http://example.invalid/x.png$" control.req &&
	chrome --log-net-log="$TRASH/net.json" --dump-dom "file://$HTML" >/dev/null &&
	page_requests "$TRASH/net.json" >page.req &&
	test_line_count = 0 page.req
'

test_done
