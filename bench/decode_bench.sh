#!/bin/sh
# Decode and prefill speed on the CPU for a random model with
# Qwen2.5-0.5B's shapes (bf16), next to this machine's memory bandwidth.
#   sh bench/decode_bench.sh [THREADS]
# Reports tokens/s, effective weight bandwidth (weight bytes read per token
# x tokens/s) as a share of measured bandwidth, prefill GFLOP/s, peak RSS.
set -e
cd "$(dirname "$0")/.."
T=${1:-2}
M=build/bench/qwen2.5-0.5b
[ -f $M/model.safetensors ] || python3 bench/make_random_model.py $M >/dev/null
mkdir -p build/bench
cc -O3 -march=native -fopenmp bench/membw.c -o build/bench/membw
BW=$(OMP_NUM_THREADS=$T build/bench/membw)
PROMPT=$(python3 -c "print(','.join(str(i % 1000 + 10) for i in range(512)))")
export OMP_NUM_THREADS=$T
# Warm the page cache, then measure: decode after a short prompt, prefill of 512.
build/hipath generate --model $M --prompt-ids 1,2,3 --max-tokens 2 >/dev/null 2>&1
/usr/bin/time -f "%M" -o build/bench/rss.txt build/hipath generate --model $M --prompt-ids 1,2,3,4,5,6,7,8 --max-tokens 64 --json > build/bench/decode.json
build/hipath generate --model $M --prompt-ids "$PROMPT" --max-tokens 1 --json > build/bench/prefill.json
python3 - "$M" "$BW" "$T" <<'PY'
import json, sys
m, bw, threads = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
cfg = json.load(open(m + "/config.json"))
h, f, L, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
hd = h // cfg["num_attention_heads"]; kv = cfg["num_key_value_heads"] * hd
linear = L * (h * h * 2 + 2 * h * kv + 3 * h * f)            # q, o, k, v, gate, up, down
per_token_bytes = 2 * (linear + v * h + h)                    # + LM head (tied) + one embedding row
d = json.load(open("build/bench/decode.json")); p = json.load(open("build/bench/prefill.json"))
rss = int(open("build/bench/rss.txt").read().split()[-1]) * 1024
tps = 1 / d["decode_s_per_token"]
eff = per_token_bytes * tps / 1e9
flops = 2 * (linear * 512 + v * h)                            # LM head for the last position only
print(f"threads {threads}; memory: copy {bw['copy_GBps']:.2f} GB/s, read {bw['read_GBps']:.2f} GB/s")
print(f"decode: {tps:.2f} tokens/s, {per_token_bytes/1e6:.0f} MB of weights per token, "
      f"effective {eff:.2f} GB/s = {100*eff/bw['read_GBps']:.0f}% of read, {100*eff/bw['copy_GBps']:.0f}% of copy bandwidth")
print(f"prefill 512 tokens: {p['prefill_s']:.2f} s, {flops/p['prefill_s']/1e9:.1f} GFLOP/s")
print(f"peak RSS {rss/1e6:.0f} MB (weights {2*(linear+v*h)/1e6:.0f} MB mmap'd)")
PY
