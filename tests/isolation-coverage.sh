#!/usr/bin/env bash
# What a loop script's in-place run (GDNCTL_TEST_ISOLATION=in-place, the
# e2e/<name>@in-place twin of "# ctest: isolation-both") reaches in src/
# that the worktree runs of the loop scripts do not: the measure behind
# which scripts carry the mark (tests/CMakeLists.txt, issue 23).
#
#   tests/isolation-coverage.sh [NAME...]     (default: every t06xx/t07xx script)
#
# Builds a gcov build of the dev configuration in $GDNCTL_COV_DIR (default
# build/cov), runs the worktree run of every t06xx/t07xx script (the
# baseline), then each NAME's in-place run alone (its counts under a
# GCOV_PREFIX of its own), and prints per NAME the lines and branches it
# reaches that the baseline does not, then a count. "none" means its twin
# adds no line or branch over worktree runs (it may still hold cases of
# its own: test_expect_isolation in-place). Needs gcc's gcov and python3.
# Takes about 10 minutes on two cores for a few NAMEs, 30 for all;
# nothing is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
cov=$(realpath -m "${GDNCTL_COV_DIR:-$src/build/cov}")
jobs=$(nproc 2>/dev/null || echo 2)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
command -v gcov >/dev/null || { echo "isolation-coverage: gcov (gcc) is needed" >&2; exit 2; }

echo "=== the gcov build in $cov"
cmake -S . -B "$cov" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O0 --coverage" \
	-DCMAKE_EXE_LINKER_FLAGS=--coverage >/dev/null
cmake --build "$cov" -j"$jobs" >/dev/null

loop_scripts=$(cd tests/e2e && ls t06[0-9][0-9]-*.sh t07[0-9][0-9]-*.sh | sed 's/\.sh$//')
names=("$@")
[ ${#names[@]} -gt 0 ] || mapfile -t names <<<"$loop_scripts"

# dump DIR OUT.json: the lines executed and branches taken in src/, from
# every .gcda under DIR (its .gcno from the build beside it).
dump() {
	python3 - "$1" "$2" "$cov" <<'PY'
import glob, gzip, json, os, shutil, subprocess, sys, tempfile
root, out, cov = sys.argv[1:4]
res, tmp = {}, tempfile.mkdtemp()
for i, g in enumerate(glob.glob(os.path.join(root, "**", "*.gcda"), recursive=True)):
    g = os.path.abspath(g)
    gcno = g[:-5] + ".gcno"
    if not os.path.exists(gcno):  # under a GCOV_PREFIX: the build's own .gcno
        built = g[g.index(cov):-5] + ".gcno"
        if not os.path.exists(built):
            continue
        shutil.copy(built, gcno)
    d = os.path.join(tmp, str(i))
    os.mkdir(d)
    subprocess.run(["gcov", "-j", "-b", "-o", os.path.dirname(g), g], cwd=d, capture_output=True)
for f in glob.glob(os.path.join(tmp, "*", "*.gcov.json.gz")):
    for fi in json.load(gzip.open(f))["files"]:
        name = fi["file"]
        if "/src/" not in name:
            continue
        lines = res.setdefault(name[name.index("/src/") + 1:], {})
        for l in fi["lines"]:
            br = [int(b["count"] > 0) for b in l.get("branches", [])]
            old = lines.get(str(l["line_number"]), [0, [0] * len(br)])
            if len(old[1]) != len(br):
                old[1] = [0] * len(br)
            lines[str(l["line_number"])] = [max(old[0], int(l["count"] > 0)),
                                            [max(a, b) for a, b in zip(old[1], br)]]
shutil.rmtree(tmp)
json.dump(res, open(out, "w"))
PY
}

# run_one NAME ISOLATION [PREFIX]: the script as CTest runs it (its
# environment from `ctest --show-only=json-v1`, read once into $tests).
run_one() {
	python3 - "$tests" "$1" "$2" "${3:-}" <<'PY'
import json, os, subprocess, sys
tests_json, name, iso, prefix = sys.argv[1:5]
tests = json.load(open(tests_json))["tests"]
t = next(t for t in tests if t["name"] == "e2e/" + name)
env = dict(os.environ)
for p in t.get("properties", []):
    if p["name"] == "ENVIRONMENT":
        env.update(v.split("=", 1) for v in p["value"])
env.pop("GDNCTL_TEST_ISOLATION", None)
if iso == "in-place":
    env["GDNCTL_TEST_ISOLATION"] = "in-place"
if prefix:
    env["GCOV_PREFIX"] = prefix
r = subprocess.run(t["command"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if r.returncode not in (0, 77):
    print("isolation-coverage: %s (%s) failed: exit %d" % (name, iso, r.returncode), file=sys.stderr)
    sys.exit(1)
PY
}
tests=$out/tests.json
ctest --test-dir "$cov" --show-only=json-v1 >"$tests"
export -f run_one
export cov tests

echo "=== the baseline: the worktree run of each t06xx/t07xx script"
find "$cov" -name '*.gcda' -delete
xargs -P"$jobs" -I{} bash -c 'run_one {} worktree' <<<"$loop_scripts"
dump "$cov" "$out/base.json"

echo "=== each in-place run alone, against the baseline"
printf '%s\n' "${names[@]}" | xargs -P"$jobs" -I{} bash -c 'run_one {} in-place "$0/{}"' "$out"
for n in "${names[@]}"; do
	dump "$out/$n" "$out/$n.json"
	python3 - "$out/base.json" "$out/$n.json" "$n" <<'PY'
import json, sys
base, new, name = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
found = []
for f, lines in sorted(new.items()):
    for ln, (hit, br) in sorted(lines.items(), key=lambda x: int(x[0])):
        b_hit, b_br = base.get(f, {}).get(ln, [0, [0] * len(br)])
        if hit and not b_hit:
            found.append("%s:%s line" % (f, ln))
        elif len(br) == len(b_br) and any(x and not y for x, y in zip(br, b_br)):
            found.append("%s:%s branch" % (f, ln))
for x in found:
    print("%s: %s" % (name, x))
print("%s: %s" % (name, "%d new" % len(found) if found else "none"))
PY
done
