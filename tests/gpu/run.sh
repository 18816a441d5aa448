#!/usr/bin/env bash
# The GPU check of gdnctl's trace reading and loop decisions on a real
# accelerator (docs/guide.md, "Checking on a GPU"). Not run by CI.
#
#   tests/gpu/run.sh [GDNCTL]     (default: $GDNCTL, else build/dev/gdnctl)
#
# Skips with one line (exit 0) where no GPU (nvidia-smi) or no python3 `jax`
# is found. Otherwise, in about 2-4 minutes on one GPU:
#  1. profiles a small JAX attention program, each step wrapped in
#     jax.profiler.StepTraceAnnotation("train", step_num=i), writing
#     <host>.xplane.pb, <host>.trace.json.gz and perfetto_trace.json.gz;
#  2. checks that the XPlane and both JSON twins select the same device ops
#     with the same totals, and that the steps are found (10, per step);
#  3. runs `gdnctl loop --perf-metric trace/step_ms` (3 iterations, local
#     backend) with a script agent: a real speed-up (heads batched, bf16
#     matmuls), a change that breaks the test, a no-op; and prints each
#     decision with its figures.
# Exit status: 0 all checks passed (or skipped), 1 a check failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
gdnctl=${1:-${GDNCTL:-$src/build/dev/gdnctl}}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
	echo "tests/gpu/run.sh: skipped: no GPU (nvidia-smi not found or no device)"
	exit 0
fi
if ! python3 -c "import jax" >/dev/null 2>&1; then
	echo "tests/gpu/run.sh: skipped: python3 cannot import jax"
	exit 0
fi
if [ ! -x "$gdnctl" ]; then
	echo "tests/gpu/run.sh: no gdnctl at $gdnctl (build it, or pass its path)" >&2
	exit 1
fi
gdnctl=$(cd "$(dirname "$gdnctl")" && pwd)/$(basename "$gdnctl")
export GIT_AUTHOR_NAME=gdnctl-gpu GIT_AUTHOR_EMAIL=gpu@localhost
export GIT_COMMITTER_NAME=gdnctl-gpu GIT_COMMITTER_EMAIL=gpu@localhost
work=$(mktemp -d "${TMPDIR:-/tmp}/gdnctl-gpu.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}
say() { echo "== $*"; }
say "$(nvidia-smi -L | head -1); jax $(python3 -c 'import jax; print(jax.__version__, jax.devices()[0])')"

# ---- the program, its test, its profile ----
repo=$work/repo
mkdir -p "$repo" && cd "$repo" || exit 1
cat >attn.py <<'PY'
import jax
import jax.numpy as jnp

BATCHED = False  # the agent's speed-up: all heads at once, bf16 matmuls
SCALE = 1.0      # the agent's broken change sets 2.0


def attention(q, k, v):
    d = q.shape[-1]
    if BATCHED:
        s = jnp.einsum("hqd,hkd->hqk", q.astype(jnp.bfloat16), k.astype(jnp.bfloat16),
                       preferred_element_type=jnp.float32) * (SCALE / d ** 0.5)
        p = jax.nn.softmax(s, axis=-1)
        return jnp.einsum("hqk,hkd->hqd", p.astype(jnp.bfloat16), v.astype(jnp.bfloat16),
                          preferred_element_type=jnp.float32)
    outs = []
    for h in range(q.shape[0]):  # one head at a time, float32
        s = (q[h] @ k[h].T) * (SCALE / d ** 0.5)
        outs.append(jax.nn.softmax(s, axis=-1) @ v[h])
    return jnp.stack(outs)
PY
cat >test_attn.py <<'PY'
import numpy as np
import jax, jax.numpy as jnp
from attn import attention
q, k, v = (jax.random.normal(jax.random.PRNGKey(i), (4, 128, 64), jnp.float32) for i in range(3))
s = np.einsum("hqd,hkd->hqk", np.asarray(q), np.asarray(k)) / 8.0
p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
want = np.einsum("hqk,hkd->hqd", p, np.asarray(v))
got = np.asarray(jax.jit(attention)(q, k, v))
err = float(np.abs(got - want).max())
print("max abs error", err)
assert err < 5e-2, err
PY
cat >profile_attn.py <<'PY'
import sys, time
import jax, jax.numpy as jnp
from attn import attention
q, k, v = (jax.random.normal(jax.random.PRNGKey(i), (32, 4096, 128), jnp.float32) for i in range(3))
f = jax.jit(attention)
f(q, k, v).block_until_ready()  # compile outside the profile
t = time.time()
with jax.profiler.trace(sys.argv[1], create_perfetto_trace=True):
    for i in range(10):
        with jax.profiler.StepTraceAnnotation("train", step_num=i):
            f(q, k, v).block_until_ready()
print("wall_ms_per_step %.3f" % ((time.time() - t) * 100))
PY
printf 'prof/\n__pycache__/\nlogs/\n' >.gitignore
cat >gdnctl.yaml <<'YAML'
project:
  test_command: "python3 test_attn.py"
  profile_command: "rm -rf prof && python3 profile_attn.py prof"
  trace_glob: "prof/plugins/profile/*/*.xplane.pb"
YAML
git init -q && git add . && git -c user.name=gpu -c user.email=gpu@localhost commit -qm "attention, one head at a time" || exit 1

# ---- 1-2: the XPlane and its JSON twins agree; steps are found ----
say "profiling (10 steps)"
python3 test_attn.py >/dev/null || fail "the program's own test fails"
python3 profile_attn.py "$work/prof" || fail "profiling failed"
run=$(ls -d "$work"/prof/plugins/profile/*/ | tail -1)
xp=$(ls "$run"*.xplane.pb | head -1)
js=$(ls "$run"*.trace.json.gz | head -1)
pf=$run/perfetto_trace.json.gz
[ -f "$xp" ] && [ -f "$js" ] && [ -f "$pf" ] || fail "the profile lacks a file: $(ls "$run")"
for f in "$xp" "$js" "$pf"; do
	"$gdnctl" trace summary --json --top 0 "$f" >"$work/$(basename "$f").json" ||
		fail "gdnctl trace summary $f"
done
python3 - "$work/$(basename "$xp").json" "$work/$(basename "$js").json" \
	"$work/$(basename "$pf").json" <<'PY' || fail "the XPlane and its JSON twins disagree"
import json, sys
docs = [json.load(open(p)) for p in sys.argv[1:]]
for name, d in zip(["xplane", "trace.json.gz", "perfetto"], docs):
    print("   %-13s %5d device ops, total %.3f us, self %.3f us, %s steps (%s), %.3f us/step"
          % (name, d["events"]["selected"], d["total_us"], d["self_us"], d["steps"],
             d["steps_from"], d["self_us_per_step"] or 0))
x = docs[0]
assert x["events"]["selected"] > 0, "no device ops selected"
assert x["steps"] == 10 and x["steps_from"] == 'host step annotations "train"', x["steps_from"]
assert len(x["per_step"]) == 10
for d in docs[1:]:
    for k in ("total_us", "self_us", "steps", "steps_from", "per_step", "ops"):
        assert d[k] == x[k], (k, str(d[k])[:200], str(x[k])[:200])
    assert d["events"]["selected"] == x["events"]["selected"]
print("   per step (us):", " ".join("%.1f" % s["self_us"] for s in x["per_step"]))
PY
say "the XPlane and both JSON twins agree"

# ---- 3: the loop ----
cat >"$work/agent.sh" <<'SH'
#!/bin/sh
n=$(sed -n 's/^Iteration //p' "$1")
case $n in
1) sed -i 's/^BATCHED = False/BATCHED = True/' attn.py && msg="batch the heads, bf16 matmuls" ;;
2) sed -i 's/^SCALE = 1.0/SCALE = 2.0/' attn.py && msg="scale the scores (breaks the test)" ;;
*) echo "# a comment" >>attn.py && msg="a comment (no-op)" ;;
esac
git add attn.py && git -c user.name=agent -c user.email=agent@localhost commit -qm "agent: $msg"
SH
chmod +x "$work/agent.sh"
printf 'Iteration {{ITERATION}}\n' >"$work/prompt.md"
say "gdnctl loop --perf-metric trace/step_ms: speed-up, broken test, no-op"
"$gdnctl" loop --agent command --agent-cmd "$work/agent.sh {prompt_file}" \
	--prompt-file "$work/prompt.md" --log-dir "$work/logs" --iterations 3 \
	--sleep-seconds 0 --retry-sleep-seconds 0 --max-failures 5 \
	--validation-mode required --perf-mode on --perf-metric trace/step_ms \
	--perf-min-improvement-pct 1 --perf-within-threshold-policy revert \
	>"$work/loop.out" 2>&1
rc=$?
grep -E "performance|validation .*fail|tests? failed|reverted|steps in the trace" "$work/loop.out" |
	sed 's/^/   /'
[ $rc = 0 ] || { tail -20 "$work/loop.out"; fail "gdnctl loop exited $rc"; }
python3 - "$work/logs/perf_state.json" "$work/logs/loop.jsonl" <<'PY' || fail "unexpected decisions"
import json, sys
h = json.load(open(sys.argv[1]))["history"]
for r in h:
    print("   iteration %s: %-16s %s = %.4f ms (%d samples), improvement %s"
          % (r["iteration"], r["decision"], r["metric"], r["metric_value"] or 0,
             len(r["samples"]), "%+.2f%%" % r["improvement_pct"]
             if r.get("improvement_pct") is not None else "-"))
by = {r["iteration"]: r["decision"] for r in h}
assert by.get(0) == "baseline", by
assert by.get(1) == "promoted", by
assert 2 not in by, "the broken change was measured: %r" % by  # its test failed first
assert by.get(3) == "within_threshold", by
assert all(len(r["samples"]) == 10 for r in h), [len(r["samples"]) for r in h]
PY
git -C "$repo" log --format='   %h %s' | head -5
say "ok: the speed-up kept, the broken change and the no-op reverted"
