# A big TPU trace for the benchmarks (tests/bench/trace-summary.sh, xplane.sh):
# the events of a real trace repeated with shifted timestamps until about
# TARGET_MB of JSON, written gzip level 6. Prints the number of repeats.
#
#   python3 tests/bench/gen_trace.py SRC.trace.json.gz DST.json.gz TARGET_MB
import gzip, json, sys
src, dst, target = sys.argv[1], sys.argv[2], int(sys.argv[3]) << 20
ev = json.load(gzip.open(src))["traceEvents"]
meta = [e for e in ev if e.get("ph") == "M"]
body = [e for e in ev if e and e.get("ph") != "M"]
lo = min(e["ts"] for e in body)
span = max(e["ts"] + e.get("dur", 0) for e in body) - lo + 1000.0
with gzip.open(dst, "wt", compresslevel=6) as out:
    out.write('{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":[')
    out.write(",".join(json.dumps(e, separators=(",", ":")) for e in meta))
    written, rep = 0, 0
    while written < target:
        parts = []
        for e in body:
            e2 = dict(e)
            e2["ts"] = round(e["ts"] + rep * span, 6)
            parts.append(json.dumps(e2, separators=(",", ":")))
        s = "," + ",".join(parts)
        out.write(s)
        written += len(s)
        rep += 1
    out.write(",{}]}")
print(rep)
