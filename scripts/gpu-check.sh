#!/bin/sh
# On a machine with a GPU: build for it, run the default model, a
# Qwen2.5-0.5B-shaped random model and SmolLM2-135M Q4_1 (GGUF) on hip:0,
# compare greedy ids and logprobs with the CPU backend, and time prefill
# and decode with each op's achieved bandwidth and FLOP/s against the
# device's measured D2D copy bandwidth; then the default model with --jit
# (kernels compiled at run time), twice; then decode of a Qwen2.5-7B-shaped
# bf16 model against the issue's bar (GEMVs >= 80% of the D2D copy
# bandwidth, the whole step >= 70%).   usage: scripts/gpu-check.sh [amd|nvidia]
# Dry run without a GPU (checks the script, not the kernels):
#   BIN=build/hipath DEV=sim:h200 BIG=qwen2.5-0.5b NO_JIT=1 sh scripts/gpu-check.sh
set -e
cd "$(dirname "$0")/.."
kind=${1:-$(command -v nvidia-smi >/dev/null 2>&1 && echo nvidia || echo amd)}
DEV=${DEV:-hip:0}
BIG=${BIG:-qwen2.5-7b}
if [ -z "$BIN" ]; then
  make -j"$(nproc)" HIP="$kind" build/hip-"$kind"/hipath
  BIN=build/hip-"$kind"/hipath
fi
bin=$BIN
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
$bin device --device "$DEV" | tee "$tmp/device.json"
python3 bench/make_random_model.py "$tmp/qwen05b" qwen2.5-0.5b
PROMPT=$(python3 -c 'print(",".join(str(i) for i in range(1, 129)))')   # 128 prompt tokens
# Tolerance on |d logprob|. bf16 weights, f32 activations, different
# summation orders: ~1e-2. Q4_1: the CPU rounds x to 16 bits for its integer
# dot products (kernels/cpu/quant_dot.c, under 4e-3 against f32) while the
# GPU dequantizes the weights and multiplies f32 x; a CPU build without
# AVX2, which computes as the GPU does, moved the top-5 logprobs of this
# prompt by at most 9e-4 over 32 tokens. 1e-2 leaves room for the summation
# order, as tests/check_gguf.sh allows against Hugging Face.
fail=0
for spec in "models/tiny-hi 2e-2" "$tmp/qwen05b 2e-2" "models/SmolLM2-135M-Instruct.Q4_1.gguf 1e-2"; do
  set -- $spec; m=$1 tol=$2
  [ -f "$m/config.json" ] || [ -f "$m" ] || { echo "skip $m: not there (scripts/get-smollm2.sh fetches SmolLM2)"; continue; }
  for d in cpu gpu; do
    dev=cpu; [ $d = gpu ] && dev=$DEV
    HIPATH_KERNEL_STATS="$tmp/stats.$d" $bin generate --model "$m" --prompt-ids "$PROMPT" --max-tokens 32 \
      --top-logprobs 5 --json --device "$dev" > "$tmp/out.$d"
  done
  python3 - "$tmp" "$m" "$tol" <<'PY' || fail=1
import json, sys
tmp, m, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
cpu, gpu = (json.load(open(f"{tmp}/out.{d}")) for d in ("cpu", "gpu"))
dev = json.load(open(f"{tmp}/device.json"))
# Greedy ids agree until the first near-tie.
same = next((i for i, (a, b) in enumerate(zip(cpu["ids"], gpu["ids"])) if a != b), len(cpu["ids"]))
dlp = max(abs(a["logprob"] - b["logprob"]) for a, b in zip(cpu["logprobs"][:same], gpu["logprobs"][:same]))
ok = same >= min(8, len(cpu["ids"])) and dlp < tol
print(f"{m}: {same}/{len(cpu['ids'])} greedy ids equal, max |d logprob| {dlp:.2e} -> {'ok' if ok else 'FAIL'}")
print(f"  prefill {gpu['prefill_s']*1e3:.2f} ms (cpu {cpu['prefill_s']*1e3:.1f}), "
      f"decode {gpu['decode_s_per_token']*1e3:.3f} ms/token (cpu {cpu['decode_s_per_token']*1e3:.2f})")
bw = dev["d2d_copy_bytes_per_s"]
print(f"  per op on {dev['name']} (D2D copy {bw/1e9:.0f} GB/s):")
rows = [l.rstrip("\n").split("\t") for l in open(f"{tmp}/stats.gpu")][1:]
for op, calls, s, fl, by, gbs, gfs in sorted(rows, key=lambda r: -float(r[2])):
    print(f"    {op:12s} {int(calls):6d} calls {float(s)*1e3:9.3f} ms {float(gbs):8.1f} GB/s "
          f"({float(gbs)*1e9/bw:5.1%} of copy) {float(gfs):9.1f} GFLOP/s")
sys.exit(0 if ok else 1)
PY
done
if [ -z "$NO_JIT" ]; then
# --jit: the kernels compiled at run time must give the built-in ones' ids;
# the first run's trace shows jit_compile, the second's jit_cache_hit.
export HIPATH_JIT_CACHE="$tmp/jit"
for r in 1 2; do
  $bin generate --model models/tiny-hi --prompt-ids "$PROMPT" --max-tokens 16 --json --device "$DEV" --jit \
    --trace-db "$tmp/jit$r.db" > "$tmp/jit$r.json"
done
$bin generate --model models/tiny-hi --prompt-ids "$PROMPT" --max-tokens 16 --json --device "$DEV" > "$tmp/aot.json"
python3 - "$tmp" <<'PY' || fail=1
import json, sqlite3, sys
tmp = sys.argv[1]
ids = [json.load(open(f"{tmp}/{n}.json"))["ids"] for n in ("aot", "jit1", "jit2")]
ok = ids[0] == ids[1] == ids[2]
for r, want in ((1, "jit_compile"), (2, "jit_cache_hit")):
    db = sqlite3.connect(f"{tmp}/jit{r}.db")
    rows = db.execute("SELECT name, dur_ns FROM slices WHERE layer = 2 AND name IN "
                      "('jit_compile', 'jit_cache_hit', 'code_object_load') ORDER BY ts_ns").fetchall()
    ok &= [n for n, _ in rows] == [want, "code_object_load"]
    print(f"--jit run {r}: " + ", ".join(f"{n} {d / 1e6:.1f} ms" for n, d in rows))
print(f"--jit: greedy ids {'equal' if ids[0] == ids[1] == ids[2] else 'DIFFER'} to the built-in kernels' -> {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
fi
# Decode bandwidth on a 7B-shaped bf16 model: two runs, 1 and 33 tokens, so
# the difference is 32 decode steps alone (prefill cancels out).
python3 bench/make_random_model.py "$tmp/big" "$BIG"
for n in 1 33; do
  HIPATH_KERNEL_STATS="$tmp/big.$n" $bin generate --model "$tmp/big" --prompt-ids "$PROMPT" --max-tokens $n \
    --ignore-eos --json --device "$DEV" > "$tmp/big.$n.json"
done
python3 - "$tmp" "$BIG" <<'PY' || fail=1
import json, sys
tmp, big = sys.argv[1], sys.argv[2]
dev = json.load(open(f"{tmp}/device.json"))
bw = dev["d2d_copy_bytes_per_s"]
def stats(n):
    return {r[0]: (float(r[2]), float(r[4])) for r in (l.rstrip("\n").split("\t") for l in open(f"{tmp}/big.{n}"))
            if r[0] != "op"}
a, b = stats(1), stats(33)
d = {op: (b[op][0] - a.get(op, (0, 0))[0], b[op][1] - a.get(op, (0, 0))[1]) for op in b}
steps = 32
step_s = json.load(open(f"{tmp}/big.33.json"))["decode_s_per_token"]
total_bytes = sum(by for _, by in d.values()) / steps
print(f"{big} decode on {dev['name']}: {step_s*1e3:.2f} ms/step, {total_bytes/1e9:.2f} GB/step "
      f"-> {total_bytes/step_s/1e9:.0f} GB/s = {total_bytes/step_s/bw:.0%} of D2D copy ({bw/1e9:.0f} GB/s; bar 70%)")
gemv = [(op, s, by) for op, (s, by) in d.items() if op.endswith("proj") or op == "lm_head"]
gs, gb = sum(s for _, s, _ in gemv), sum(by for _, _, by in gemv)
if gs > 0:
    print(f"  GEMVs: {gb/gs/1e9:.0f} GB/s = {gb/gs/bw:.0%} of copy (bar 80%)")
for op, (s, by) in sorted(d.items(), key=lambda kv: -kv[1][0]):
    if s > 0: print(f"    {op:12s} {s/steps*1e6:9.1f} us/step {by/s/1e9:8.1f} GB/s ({by/s/bw:5.1%} of copy)")
PY
exit $fail
