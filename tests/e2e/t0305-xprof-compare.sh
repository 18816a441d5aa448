#!/usr/bin/env bash
# gdnctl xprof-compare (the original's command, run locally) and the payload
# in trace diff --json, against numbers computed by an independent reader:
# a small protobuf wire decoder and xprof's selection written in Python here.
. "$(dirname "$0")/lib.sh"

traces=$GDNCTL_SHARED_DIR/traces
[ -d "$traces" ] || skip_all "no shared traces in $traces"
command -v python3 >/dev/null 2>&1 || skip_all "python3 is not installed"
export PYTHONPATH=$GDNCTL_SOURCE_DIR/tests/e2e # xplane_wire.py

A=$traces/DERIVED_tpu-inference_2026_01_11_21_26_41_t1v-n-9eb622fc-w-0.xplane.pb
B=$traces/DERIVED_tpu-inference_2026_01_12_01_08_50_t1v-n-9eb622fc-w-0.xplane.pb

cat >expect.py <<'PY'
import json, re, struct, sys
from xplane_wire import fields

def stats(raw_stats, smeta):
    out = {}
    for raw in raw_stats:
        st = dict(fields(raw))
        name = smeta.get(st.get(1, 0), "")
        if 7 in st:
            out[name] = smeta.get(st[7], "")
        elif 5 in st:
            out[name] = st[5].decode()
        elif 3 in st or 4 in st:
            out[name] = st.get(3, st.get(4))
    return out

def self_times(path):
    """{(tf_op, category): self ps} over the XLA Ops lines of /device: planes"""
    acc = {}
    for f, plane in fields(open(path, "rb").read()):
        if f != 1:
            continue
        pname, lines, emeta_raw, smeta = "", [], {}, {}
        for pf, pv in fields(plane):
            if pf == 2:
                pname = pv.decode()
            elif pf == 3:
                lines.append(pv)
            elif pf == 4:
                e = dict(fields(pv)); emeta_raw[e.get(1, 0)] = e.get(2, b"")
            elif pf == 5:
                e = dict(fields(pv)); m = dict(fields(e.get(2, b"")))
                smeta[e.get(1, 0)] = m.get(2, b"").decode()
        if "/device:" not in pname:
            continue
        emeta = {}
        for k, raw in emeta_raw.items():
            name, sts = "", []
            for mf, mv in fields(raw):
                if mf == 2:
                    name = mv.decode()
                elif mf == 5:
                    sts.append(mv)
            emeta[k] = (name, stats(sts, smeta))
        for raw in lines:
            lname, ts, evs = "", 0, []
            for lf, lv in fields(raw):
                if lf == 2:
                    lname = lv.decode()
                elif lf == 3:
                    ts = lv
                elif lf == 4:
                    evs.append(lv)
            if lname not in ("XLA Ops", "Sparse Core Ops"):
                continue
            items = []
            for raw_ev in evs:
                e, sts = {}, []
                for ef, ev in fields(raw_ev):
                    if ef == 4:
                        sts.append(ev)
                    else:
                        e[ef] = ev
                if 5 in e:
                    continue
                name, mst = emeta.get(e.get(1, 0), ("", {}))
                st = dict(mst); st.update(stats(sts, smeta))  # the event wins
                cat = st.get("hlo_category") or re.sub(r"(?<=.)\.[0-9]+$", "", name)
                start = ts * 1000 + e.get(2, 0)
                items.append((start, start + e.get(3, 0), st.get("tf_op") or "(no tf_op)", cat))
            items.sort(key=lambda x: (x[0], -x[1]))
            stack = []  # [start, end, cover_end, covered, key]
            def close():
                s, e, _, cov, key = stack.pop()
                acc[key] = acc.get(key, 0) + (e - s) - cov
            def charge(p, s, e):
                s = max(s, p[2]); e = min(e, p[1])
                if e > s:
                    p[3] += e - s; p[2] = e
            for s, e, tf, cat in items:
                while stack and stack[-1][1] <= s:
                    close()
                while stack and e > stack[-1][1]:
                    charge(stack[-1], s, stack[-1][1]); close()
                if stack:
                    charge(stack[-1], s, e)
                stack.append([s, e, s, 0, (tf, cat)])
            while stack:
                close()
    return acc

def family(op):
    last = op.rsplit("/", 1)[-1]
    if ":" in last:
        a, b = last.split(":", 1)
        last = b if b and not b.startswith(":") else a
    last = re.sub(r"(?<=.)\.[0-9]+$", "", last)
    return last or op

def section(before, after, which, top_k, norm):
    b, a = {}, {}
    for src, dst in ((before, b), (after, a)):
        for key, ps in src.items():
            dst[key[which]] = dst.get(key[which], 0) + ps
    rows = []
    for k in set(b) | set(a):
        d = a.get(k, 0) - b.get(k, 0)
        rows.append({"name": k, "before": b.get(k, 0) / 1e9, "after": a.get(k, 0) / 1e9,
                     "delta": d / 1e9, "normalized_ms": d / 1e9, "_d": d})
    ptot = sum(r["_d"] for r in rows if r["_d"] > 0)
    ntot = sum(r["_d"] for r in rows if r["_d"] < 0)
    if norm is not None:
        for r in rows:
            if r["_d"] > 0:
                r["normalized_ms"] = r["_d"] / ptot * norm
    pos = sorted((r for r in rows if r["_d"] > 0), key=lambda r: (-r["_d"], r["name"]))
    neg = sorted((r for r in rows if r["_d"] < 0), key=lambda r: (r["_d"], r["name"]))
    out = {"positive_delta_total": ptot / 1e9, "negative_delta_total": ntot / 1e9,
           "positive_deltas": pos[:top_k] if top_k else pos,
           "negative_deltas": neg[:top_k] if top_k else neg, "_pos": pos}
    if which == 0:
        fam = {}
        for r in pos:
            f = family(r["name"]); r["family"] = f
            fam[f] = fam.get(f, 0) + r["normalized_ms"]
        for r in neg:
            r["family"] = family(r["name"])
        out["_fam"] = fam
    return out

def close_to(x, y):
    return abs(x - y) <= 2e-9 + 1e-12 * abs(y)

got = json.load(open(sys.argv[1]))
top_k, norm = int(sys.argv[2]), (float(sys.argv[3]) if sys.argv[3] != "-" else None)
before, after = self_times(sys.argv[4]), self_times(sys.argv[5])
for which, key in ((0, "framework_op_stats"), (1, "op_profile_category")):
    want, g = section(before, after, which, top_k, norm), got[key]
    for t in ("positive_delta_total", "negative_delta_total"):
        assert close_to(g[t], want[t]), (key, t, g[t], want[t])
    for lst in ("positive_deltas", "negative_deltas"):
        assert len(g[lst]) == len(want[lst]), (key, lst, len(g[lst]), len(want[lst]))
        for gr, wr in zip(g[lst], want[lst]):
            assert gr["name"] == wr["name"], (key, lst, gr["name"], wr["name"])
            for f in ("before", "after", "delta", "normalized_ms"):
                assert close_to(gr[f], wr[f]), (key, lst, gr["name"], f, gr[f], wr[f])
            if which == 0:
                assert gr["family"] == wr["family"], (gr["family"], wr["family"])
    if which == 0:
        fams = got["derived_metrics"]["framework_family_normalized_ms"]
        assert set(fams) == set(want["_fam"]), (sorted(fams), sorted(want["_fam"]))
        for f, v in want["_fam"].items():
            assert close_to(fams[f], v), (f, fams[f], v)
        rows = {r["family"]: r["normalized_ms"] for r in g["family_positive_deltas"]}
        assert rows.keys() == fams.keys()
    else:
        cats = got["derived_metrics"]["op_profile_category_normalized_ms"]
        assert len(cats) == len(want["_pos"])
        for r in want["_pos"]:
            assert close_to(cats[r["name"]], r["normalized_ms"]), r["name"]
if norm is not None:
    assert close_to(got["normalize_positive_deltas_ms"], norm)
    s = sum(got["derived_metrics"]["op_profile_category_normalized_ms"].values())
    assert abs(s - norm) < 1e-6, s
else:
    assert got["normalize_positive_deltas_ms"] is None
PY

test_expect_success 'xprof-compare: the payload against the independent reader' '
	gdnctl xprof-compare --before-xplane "$A" --after-xplane "$B" >p.json &&
	python3 expect.py p.json 20 - "$A" "$B" &&
	python3 -c "
import json
d = json.load(open(\"p.json\"))
assert set(d) == {\"before_xplane\", \"after_xplane\", \"normalize_positive_deltas_ms\",
                  \"framework_op_stats\", \"op_profile_category\", \"derived_metrics\"}, sorted(d)
"
'

test_expect_success 'xprof-compare --top-k 0 --normalize-positive-deltas-ms, and the reverse order' '
	gdnctl xprof-compare --before-xplane "$A" --after-xplane "$B" --top-k 0 \
		--normalize-positive-deltas-ms 12.5 >p.json &&
	python3 expect.py p.json 0 12.5 "$A" "$B" &&
	gdnctl xprof-compare --before-xplane "$B" --after-xplane "$A" --top-k 3 >r.json &&
	python3 expect.py r.json 3 - "$B" "$A"
'

test_expect_success 'trace diff --json carries the same payload' '
	gdnctl trace diff --json --top-k 5 --normalize-positive-deltas-ms 7 "$A" "$B" >d.json &&
	python3 expect.py d.json 5 7 "$A" "$B" &&
	gdnctl xprof-compare --before-xplane "$A" --after-xplane "$B" --top-k 5 \
		--normalize-positive-deltas-ms 7 >p.json &&
	python3 -c "
import json
d, p = json.load(open(\"d.json\")), json.load(open(\"p.json\"))
for k in p:
    assert d[k] == p[k], k
"
'

test_expect_success '--output writes the file and prints its path; sorted keys, 2-space indent' '
	gdnctl xprof-compare --before-xplane "$A" --after-xplane "$B" --output cmp.json >out &&
	echo cmp.json >want && test_cmp want out &&
	head -2 cmp.json >head &&
	printf "{\n  \"after_xplane\": \"%s\",\n" "$B" >want &&
	test_cmp want head &&
	python3 -c "import json; json.load(open(\"cmp.json\"))"
'

test_expect_success 'the dev-TPU flags are accepted and said to be no longer needed' '
	gdnctl xprof-compare --tpu-name t --cluster us-east5-a --remote-stage-dir x --sync-repo \
		--keep-remote --before-xplane "$A" --after-xplane "$B" >p.json 2>err &&
	test_line_count = 5 err &&
	test_grep "WARNING: --tpu-name is no longer needed" err &&
	test_grep "WARNING: --sync-repo is no longer needed" err &&
	python3 expect.py p.json 20 - "$A" "$B"
'

test_expect_success 'missing files and usage errors' '
	test_expect_code 1 gdnctl xprof-compare --before-xplane nope --after-xplane "$B" 2>err &&
	test_grep "Missing --before-xplane file: nope" err &&
	test_expect_code 2 gdnctl xprof-compare --before-xplane "$A" 2>err &&
	test_expect_code 2 gdnctl xprof-compare --before-xplane "$A" --after-xplane "$B" \
		--normalize-positive-deltas-ms abc 2>err &&
	test_expect_code 1 gdnctl xprof-compare --before-xplane "$traces/CORRUPTED_xprof_tpu_inference_2.xplane.pb" \
		--after-xplane "$B" 2>err &&
	test_line_count = 1 err
'

test_done
