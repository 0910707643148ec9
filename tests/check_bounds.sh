#!/bin/sh
# `hipath bounds` on real model configs against numbers computed here from
# the published parameter counts, the config and the device datasheets
# (layers/gpu/profiles), and bad input refused with one line, exit 1.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
OUT=build/bounds
QWEN7=tests/data/qwen2.5-7b-instruct.config.json
R1_14=tests/data/deepseek-r1-distill-qwen-14b.config.json
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
mkdir -p "$OUT" || exit 1
fail=0

run() { # run NAME ARGS...: the JSON into $OUT/NAME.json
  name=$1; shift
  "$HIPATH" bounds --json "$@" > "$OUT/$name.json" 2> "$OUT/$name.err" ||
    { echo "FAIL $name: exit $?: $(head -n 1 "$OUT/$name.err")"; fail=1; }
}

for dev in w7900 h100; do
  run qwen7-$dev --config $QWEN7 --device $dev --prompt-len 512
done
run r1-14b-4k --config $R1_14 --device w7900 --prompt-len 512 --context 4096
run r1-14b-128k --config $R1_14 --device w7900 --prompt-len 512 --context 131072
run r1-14b-128k-int8 --config $R1_14 --device w7900 --prompt-len 512 --context 131072 --dtype int8
[ $fail -eq 0 ] || exit 1

# Mixture-of-experts models (issue 46): total and active parameters, the
# experts a decode step reads by batch and B*, from tests/moe/bounds_model.py.
for m in "qwen3-30b-a3b 30.5 3.3" "mixtral-8x7b 46.7 12.9" "deepseek-v3 671 37"; do
  set -- $m
  run moe-$1 --config tests/data/$1.config.json --device h100 &&
    python3 tests/moe/bounds_model.py tests/data/$1.config.json "$OUT/moe-$1.json" layers/gpu/profiles/h100.json $2 $3 || fail=1
  # the figures count the experts: nothing may say they were left out (it did for deepseek_v3)
  if [ -s "$OUT/moe-$1.err" ]; then echo "FAIL moe-$1: bounds wrote: $(cat "$OUT/moe-$1.err")"; fail=1; fi
done

python3 - "$OUT" <<'PY' || fail=1
import json, sys
out = sys.argv[1]
bad = 0
def check(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad |= not ok
def near(a, b, tol): return abs(a - b) <= tol * abs(b)
def load(name): return json.load(open(f"{out}/{name}.json"))
def profile(dev): return json.load(open(f"layers/gpu/profiles/{dev}.json"))

# Qwen2.5-7B: the model card gives 7.61B parameters, 6.53B without embeddings.
cfg = json.load(open("tests/data/qwen2.5-7b-instruct.config.json"))
d, V, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
kvd = cfg["num_key_value_heads"] * d // cfg["num_attention_heads"]
for dev in ("w7900", "h100"):
    r, p = load(f"qwen7-{dev}"), profile(dev)
    beta, pi = p["memory_bandwidth_bytes_per_s"], p["peak_flops"]["bf16"]
    check(near(r["params"], 7.62e9, 0.01), f"{dev}: params {r['params']:.4g} within 1% of 7.62e9")
    check(near(r["params"] - 2 * V * d, 6.53e9, 0.01), f"{dev}: non-embedding params within 1% of 6.53e9")
    check(r["weights_bytes"] == 2 * r["params"], f"{dev}: bf16 weights bytes = 2 x params")
    check(r["decode"]["bound"] == "memory", f"{dev}: decode at batch 1 is memory-bound")
    # A decode step reads every weight but the embedding table (one row of it),
    # plus 512 positions of KV: 2 x 28 layers x 4 heads x 128 x 2 bytes each.
    kv = 512 * 2 * L * kvd * 2
    R = 2 * (r["params"] - V * d + d) + kv
    check(near(r["decode"]["t_memory_s"], R / beta, 0.01), f"{dev}: decode t_memory {r['decode']['t_memory_s']*1e3:.3f} ms = R/beta {R/beta*1e3:.3f} ms within 1%")
    # Against weights/bandwidth: lower by the embedding table (7.2%), no more.
    ratio = r["decode"]["t_memory_s"] / (r["weights_bytes"] / beta)
    check(0.92 < ratio < 0.94, f"{dev}: t_memory / (weights_bytes / beta) = {ratio:.4f} (the untouched 545M-parameter embedding table)")
    check(near(r["b_star"], 2 * pi / (2 * beta), 1e-9), f"{dev}: b_star {r['b_star']:.1f} = 2 Pi / (2 beta)")
    check(near(r["decode"]["t_lower_s"], max(r["decode"]["flops"] / pi, r["decode"]["bytes"] / beta), 1e-9), f"{dev}: t_lower = max(F/Pi, R/beta)")
    # 2 FLOPs per weight per token, to within the attention's share.
    check(near(r["decode"]["flops"], 2 * (r["params"] - V * d), 0.02), f"{dev}: decode FLOPs ~ 2 x matmul parameters")

# DeepSeek-R1-Distill-Qwen-14B on the W7900 (48 GiB): 14.77B parameters
# (Qwen2.5-14B's card says 14.7B) x 2 = 29.5 GB of bf16 weights, well under
# 51.5e9 bytes, so it fits -- the course's story runs it at FP16 on this card.
# KV is 2 x 48 x 8 x 128 x 2 = 196,608 bytes a token: at 4096 tokens 0.8 GB,
# fits; at the full 131072 tokens 25.8 GB, and 29.5 + 25.8 > 51.5: no fit.
# At int8 weights (14.8 GB) that same 128k context fits again.
mem = profile("w7900")["memory_bytes"]
a, b, c = load("r1-14b-4k"), load("r1-14b-128k"), load("r1-14b-128k-int8")
check(near(a["params"], 14.77e9, 0.01), f"r1-14b: params {a['params']:.4g} within 1% of 14.77e9")
check(a["kv_bytes_per_token"] == 2 * 48 * 8 * 128 * 2, "r1-14b: KV 196608 bytes a token")
for r, ctx, wb, fits in ((a, 4096, 2, True), (b, 131072, 2, False), (c, 131072, 1, True)):
    cap = r["capacity"]
    check(cap["kv_bytes"] == ctx * 196608, f"r1-14b ctx {ctx}: KV held {cap['kv_bytes']/1e9:.2f} GB")
    check(cap["weights_bytes"] == wb * r["params"], f"r1-14b ctx {ctx}: weights {cap['weights_bytes']/1e9:.2f} GB")
    total = cap["weights_bytes"] + cap["kv_bytes"] + cap["workspace_bytes"]
    check(cap["fits"] == fits and (total <= mem) == fits and cap["device_bytes"] == mem,
          f"r1-14b {wb}-byte weights ctx {ctx}: {total/1e9:.1f} of {mem/1e9:.1f} GB, fits = {fits}")
sys.exit(bad)
PY

# Bad input: exit 1, one line on stderr naming the value.
refuse() { # refuse WORD ARGS...
  word=$1; shift
  "$HIPATH" bounds "$@" > /dev/null 2> "$OUT/refuse.err"
  rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l < "$OUT/refuse.err")" -ne 1 ] || ! grep -q -- "$word" "$OUT/refuse.err"; then
    echo "FAIL refuse '$word': exit $rc: $(cat "$OUT/refuse.err")"; fail=1
  else echo "ok   refused: $(cat "$OUT/refuse.err")"; fi
}
printf '{"architectures": ["Qwen2ForCausalLM"], "hidden_size": 64}\n' > "$OUT/partial.json"
refuse intermediate_size --config "$OUT/partial.json" --device w7900
refuse "unknown device 'b200'" --config $QWEN7 --device b200
refuse "batch" --config $QWEN7 --device w7900 --batch 0
refuse "context" --config $QWEN7 --device w7900 --context 0
refuse "context 32769" --config $QWEN7 --device w7900 --context 32769
refuse "prompt length 40000" --config $QWEN7 --device w7900 --prompt-len 40000
python3 -c "import json, sys; c = json.load(open('$QWEN7')); c.update(hidden_size=10**9, intermediate_size=10**9,
  vocab_size=10**9, num_hidden_layers=10**9, num_attention_heads=1, num_key_value_heads=1); json.dump(c, sys.stdout)" > "$OUT/absurd.json"
refuse "e+27 parameters" --config "$OUT/absurd.json" --device h100   # issue 15: was a negative count
refuse "q8" --config $QWEN7 --device w7900 --dtype q8
refuse "only int8 and int4" --config $QWEN7 --device w7900 --group-size 128
refuse "compute dtype 'q4_1'" --config $QWEN7 --device w7900 --dtype int8 --compute-dtype q4_1
refuse "device-gb" --config $QWEN7 --device w7900 --device-gb GiB
refuse "workspace" --config $QWEN7 --device w7900 --workspace 2TiB
# Sizes whose product wraps an int64 (it printed -9223372036 B params).
printf '{"architectures": ["LlamaForCausalLM"], "hidden_size": 1000000000, "intermediate_size": 1000000000,
 "num_hidden_layers": 1000000, "num_attention_heads": 1000, "vocab_size": 1000}\n' > "$OUT/absurd.json"
refuse "parameters, more than 2^53" --config "$OUT/absurd.json" --device w7900

# A profile gives only the peaks its questions use (docs/devices.md): the
# H100's without int8 answers a bf16 question and refuses an int8 one by
# file and key; the simulated device, which times f32 kernels, needs fp32.
python3 - "$OUT" <<'PY'
import json, sys
for drop in ("int8", "fp32"):
    p = json.load(open("layers/gpu/profiles/h100.json"))
    del p["peak_flops"][drop]
    json.dump(p, open(f"{sys.argv[1]}/h100-no-{drop}.json", "w"))
PY
if "$HIPATH" bounds --config $QWEN7 --device "$OUT/h100-no-int8.json" > /dev/null 2>&1; then echo "ok   a profile without int8 answers bf16"
else echo "FAIL a profile without int8 refused a bf16 question"; fail=1; fi
refuse "h100-no-int8.json: missing or non-numeric key peak_flops.int8" --config $QWEN7 --device "$OUT/h100-no-int8.json" --dtype int8
"$HIPATH" device --device "sim:$OUT/h100-no-fp32.json" > /dev/null 2> "$OUT/refuse.err"
if [ $? -eq 1 ] && grep -q "h100-no-fp32.json: missing or non-numeric key peak_flops.fp32" "$OUT/refuse.err"; then
  echo "ok   refused: $(cat "$OUT/refuse.err")"
else echo "FAIL sim without peak_flops.fp32: $(cat "$OUT/refuse.err")"; fail=1; fi
exit $fail
