#!/usr/bin/env python3
"""The loop's promotions against its journals (issue 27).

    pipeline_check.py JOURNAL...

For each journal (one loop run, resumes appended): every line parses;
no iteration is decided twice; and every `promote` lands exactly the tree
that the iteration's last validation passed on: its champion is the head
the iteration's tests ran on (the agent's `head`, or the last clean
`rebase` before them: onto the champion or the train's tip), with a
passing `tests` phase, and, where a performance decision was made, the
candidate that decision measured. Prints one line per violation and the
figures (promotions, decisions, re-checks, speculative rebases, the
deepest speculation); exits 1 on a violation, 2 on usage.
"""
import json
import sys


def check(path, out):
    bad = 0
    decided = {}
    state = {}  # iteration -> {"tree", "tests": (tree, rc), "perf": tree}
    heads = {}  # a candidate's validated head -> the head it was carried onto
    promotions = rechecks = spec = deepest = 0
    champions = set()
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
        except ValueError as exc:
            if n == len(lines):  # a kill -9 may cut the last line short
                continue
            out.append("%s:%d: the journal does not parse: %s" % (path, n, exc))
            bad += 1
            continue
        ev, it = e.get("event"), e.get("iteration")
        s = state.setdefault(it, {"tree": None, "tests": None, "perf": None})
        s.setdefault("recheck", False)
        s.setdefault("validated", set())
        if ev == "run_start" and e.get("champion"):
            champions.add(e["champion"])
        elif ev == "iteration_start":
            state[it] = {"tree": e.get("head"), "tests": None, "perf": None,
                         "recheck": False, "validated": set()}
        elif ev == "head":
            s["tree"], s["tests"], s["perf"] = e.get("after"), None, None
            heads.setdefault(e.get("after"), e.get("before"))
        elif ev == "rebase" and e.get("result") == "clean":
            s["tree"], s["tests"], s["perf"] = e.get("head"), None, None
            heads[e.get("head")] = e.get("onto")
            if e.get("train"):
                spec += 1
                # the depth: how many candidates still to be decided were below it
                d, onto = 0, e.get("onto")
                while onto in heads and onto not in champions:
                    d, onto = d + 1, heads[onto]
                deepest = max(deepest, d)
        elif ev == "recheck":
            rechecks += 1
            s["tests"], s["perf"], s["recheck"] = None, None, True
            s["tree"] = e.get("candidate") or s["tree"]  # it rebuilds from the agent's commits
        elif ev == "validation" and e.get("phase") == "tests":
            s["tests"] = (s["tree"], e.get("rc"))
            if s["recheck"] and s["tree"] in s["validated"]:
                out.append("%s:%d: iteration %s re-checked on %s, a tree it was validated on"
                           % (path, n, it, s["tree"]))
                bad += 1
            s["recheck"] = False
            s["validated"].add(s["tree"])
        elif ev == "perf_decision" and e.get("candidate"):
            s["perf"] = e.get("candidate")
        elif ev == "decision":
            decided[it] = decided.get(it, 0) + 1
            if decided[it] > 1:
                out.append("%s:%d: iteration %s decided twice" % (path, n, it))
                bad += 1
        elif ev == "promote":
            promotions += 1
            sha = e.get("champion")
            champions.add(sha)
            if not s["tests"] or s["tests"][0] != sha or s["tests"][1] != 0:
                out.append(
                    "%s:%d: iteration %s promoted %s, but its tests passed on %s"
                    % (path, n, it, sha, s["tests"]))
                bad += 1
            if s["perf"] and s["perf"] != sha:
                out.append("%s:%d: iteration %s promoted %s, measured %s" %
                           (path, n, it, sha, s["perf"]))
                bad += 1
    return bad, (promotions, sum(decided.values()), rechecks, spec, deepest)


def main(argv):
    if len(argv) < 2:
        print("usage: pipeline_check.py JOURNAL...", file=sys.stderr)
        return 2
    total = 0
    for path in argv[1:]:
        out = []
        bad, (prom, dec, rech, spec, deep) = check(path, out)
        total += bad
        for line in out:
            print("VIOLATION " + line)
        print("%s: %d promotions, %d decisions, %d re-checks, %d speculative rebases, "
              "deepest %d, %d violations" % (path, prom, dec, rech, spec, deep, bad))
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
