#!/bin/sh
# MLA (deepseek_v3's multi-head latent attention) in the calculator and on
# the analytic device, against numbers computed here from the config JSON:
# the KV bytes a token are the latent's, layers x (kv_lora_rank +
# qk_rope_head_dim) x dtype bytes (DeepSeek-V3 at bf16: 61 x 576 x 2 =
# 70,272), not 2 x heads x head_dim; the attention's FLOPs and bytes; what
# the analytic engine allocates and traces; over --tp the latent whole on
# every GPU, the heads split. Then refusals in one line.
# (The numbers MLA computes are checked in check_reference.sh.)
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
OUT=build/mla
V3=tests/data/deepseek-v3.config.json
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT" || exit 1
fail=0

for kv in bf16 int8; do
  "$HIPATH" bounds --json --breakdown --config $V3 --device h100 --prompt-len 512 --context 4096 --batch 4 --kv-dtype $kv \
    > "$OUT/bounds-$kv.json" 2> "$OUT/bounds-$kv.err" || { echo "FAIL bounds --kv-dtype $kv: $(head -n 1 "$OUT/bounds-$kv.err")"; fail=1; }
done
"$HIPATH" bounds --config $V3 --device h100 --prompt-len 512 > "$OUT/bounds.txt" 2>/dev/null || fail=1
# Every layer dense (first_k_dense_replace = layers): the figures below are
# MLA's alone, with no experts among them (check_moe runs the whole model).
python3 -c "import json, sys; c = json.load(open('$V3')); c['first_k_dense_replace'] = c['num_hidden_layers']; json.dump(c, sys.stdout)" \
  > "$OUT/v3-dense.json"
"$HIPATH" bounds --json --config "$OUT/v3-dense.json" --device h100 --prompt-len 512 --tp 8 > "$OUT/bounds-tp8.json" 2>/dev/null || fail=1
"$HIPATH" run --analytic --config "$OUT/v3-dense.json" --device mi300x --max-tokens 3 --trace-db "$OUT/trace.db" \
  --perfetto "$OUT/trace.pftrace" "Hi" > "$OUT/run.out" 2> "$OUT/run.err" ||
  { echo "FAIL analytic run: $(tail -n 1 "$OUT/run.err")"; fail=1; }
"$HIPATH" run --analytic --config "$OUT/v3-dense.json" --device mi300x --tp 2 --max-tokens 2 --trace-db "$OUT/tp2.db" \
  --perfetto "$OUT/tp2.pftrace" "Hi" > "$OUT/tp2.out" 2> "$OUT/tp2.err" || { echo "FAIL analytic --tp 2: $(tail -n 1 "$OUT/tp2.err")"; fail=1; }
[ $fail -eq 0 ] || exit 1

python3 - "$OUT" "$V3" <<'PY' || fail=1
import json, sqlite3, sys
out, v3 = sys.argv[1], sys.argv[2]
bad = 0
def check(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad |= not ok
def near(a, b, tol=1e-9): return abs(a - b) <= tol * abs(b)

c = json.load(open(v3))
L, H = c["num_hidden_layers"], c["num_attention_heads"]
r, dr, dn, dv, qr, d = (c["kv_lora_rank"], c["qk_rope_head_dim"], c["qk_nope_head_dim"], c["v_head_dim"],
                        c["q_lora_rank"], c["hidden_size"])

for kv, b in (("bf16", 2), ("int8", 1)):
    j = json.load(open(f"{out}/bounds-{kv}.json"))
    per_token = L * (r + dr) * b
    check(j["kv_bytes_per_token"] == per_token, f"{kv}: KV {j['kv_bytes_per_token']:.0f} B a token = {L} x ({r} + {dr}) x {b}")
    expanded = L * H * (dn + dr + dv) * b
    check(j["mla"]["kv_bytes_per_token_expanded"] == expanded,
          f"{kv}: every head's own K and V would be {expanded} B ({expanded / per_token:.0f}x)")
    ops = {o["name"]: o for o in j["ops"]}
    B, ctx, P = j["batch"], j["context"], j["prompt_len"]
    att = ops["attn"]
    # absorbed: each (query, key) pair scores rank + rope and sums rank, per head
    pair = 2 * H * (2 * r + dr)
    check(near(att["decode"]["flops"], B * L * pair * ctx), f"{kv}: decode attention FLOPs {att['decode']['flops']:.4g}")
    check(near(att["decode"]["kv_bytes"], B * ctx * per_token), f"{kv}: decode reads {B} x {ctx} latent rows")
    check(near(att["prefill"]["flops"], B * L * pair * P * (P + 1) / 2), f"{kv}: prefill attention FLOPs (causal)")
    for name, k_in, n_out in (("q_a", d, qr), ("q", qr, H * (dn + dr)), ("kv_a", d, r + dr), ("kv_b", r, H * (dn + dv)),
                              ("o", H * dv, d)):
        check(near(ops[name]["decode"]["weight_bytes"], L * k_in * n_out * 2), f"{kv}: {name} reads {L} x {k_in} x {n_out} bf16 weights")
        check(near(ops[name]["decode"]["flops"], B * 2 * L * k_in * n_out), f"{kv}: {name} decode FLOPs")

text = open(f"{out}/bounds.txt").read()
check("61 layers x (kv_lora_rank 512 + qk_rope_head_dim 64) x 2 B = 70272 B" in text, "bounds says why the KV is small")

# The analytic engine: a cache of one plane (the latent; no V) in f32, and
# the traced ops' costs from the shapes.
db = sqlite3.connect(f"{out}/trace.db")
def args(sid): return dict(db.execute("SELECT key, value FROM args WHERE slice_id = ?", (sid,)).fetchall())
allocs = [args(s)["what"] for (s,) in db.execute("SELECT id FROM slices WHERE layer = 2 AND name IN ('alloc', 'hipMalloc', 'malloc')")
          if args(s).get("purpose") == "kv"]
check(allocs == ["kv.k"], f"the KV pool is one plane, the latent rows: {allocs}")
kv_b = [args(s) for (s,) in db.execute("SELECT id FROM slices WHERE layer = 2 AND name IN ('alloc', 'hipMalloc', 'malloc')")
        if args(s).get("what") == "kv.k"][0]["bytes"]
row = L * 16 * (r + dr) * 4   # a block of 16 tokens, every layer, f32
check(kv_b % row == 0, f"the pool ({kv_b:.0f} B) is whole blocks of 16 tokens x {L} layers x ({r} + {dr}) x 4 B")
n = 0
for (sid,) in db.execute("SELECT id FROM slices WHERE layer = 4 AND name = 'mla_attention'"):
    a = args(sid)
    T, keys = a["tokens"], a["keys"]
    if T != 1: continue   # a decode step: one row, its keys 0..pos
    n += 1
    ok = near(a["flops"], 2 * keys * H * (2 * r + dr)) and near(a["bytes"], 4 * keys * (r + dr) + 4 * H * (2 * r + dr))
    if not ok or n == 1:
        check(ok, f"decode mla_attention at {keys} keys: {a['flops']:.4g} FLOPs, {a['bytes']:.4g} B (latent rows f32 + q, o)")
check(n == 2 * L, f"{n} decode mla_attention ops (2 decode steps x {L} layers)")
a = args(db.execute("SELECT id FROM slices WHERE layer = 4 AND name = 'mla_kv_append' LIMIT 1").fetchone()[0])
check(a["kv_bytes_per_token_layer"] == (r + dr) * 4 and a["kv_lora_rank"] == r, f"mla_kv_append stores {(r + dr) * 4} B a token a layer")
kernels = {k for (k,) in db.execute("SELECT DISTINCT name FROM slices WHERE layer = 1 AND name LIKE 'mla%'")}
check(kernels == {"mla_absorb", "mla_kv_append", "mla_prefill", "mla_decode", "mla_up_v"}, f"the GPU ran {sorted(kernels)}")

# Over GPUs (vLLM's split): the heads divide, the latent cache and its
# projections (q_a, kv_a) are whole on every GPU.
N, b = 8, 2
p = json.load(open(f"{out}/bounds-tp8.json"))["parallel"]
check(p["kv_bytes_per_token_per_gpu"] == L * (r + dr) * b, f"tp 8: every GPU holds the whole latent, {L * (r + dr) * b} B a token")
V, f_ = c["vocab_size"], c["intermediate_size"]
per_layer = d * qr + d * (r + dr) + (qr * H * (dn + dr) + r * H * (dn + dv) + H * dv * d + 3 * d * f_) / N + 2 * d + qr + r
w = (L * per_layer + 2 * V * d / N + d) * b
check(near(p["per_gpu"]["weights_bytes"], w, 1e-9), f"tp 8: a GPU's weights {w / 1e9:.3f} GB (q_a, kv_a whole; q_b, kv_b, o, MLP 1/8)")
db = sqlite3.connect(f"{out}/tp2.db")
rows = [json.loads(a) for (a,) in db.execute("SELECT args FROM slices WHERE layer = 1 AND name = 'mla_decode' AND args IS NOT NULL")]
rows = [a for a in rows if "bytes" in a]
ops = [json.loads(a) for (a,) in db.execute("SELECT args FROM slices WHERE layer = 4 AND name = 'mla_attention'")]
keys = [a["keys"] for a in ops if a["tokens"] == 1]
want = 4 * keys[0] * (r + dr) + 4 * H / 2 * (2 * r + dr)
check(rows and all(a["bytes"] == want for a in rows[:2 * L]), f"tp 2: each GPU's mla_decode reads all {keys[0]} latent rows and its 64 heads' q and o: {want:.0f} B")
sys.exit(bad)
PY

refuse() { # refuse WORD CMD ARGS...: exit 1, one line on stderr containing WORD
  word=$1; shift
  "$HIPATH" "$@" > /dev/null 2> "$OUT/refuse.err"
  rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l < "$OUT/refuse.err")" -ne 1 ] || ! grep -q -- "$word" "$OUT/refuse.err"; then
    echo "FAIL refuse '$word': exit $rc: $(cat "$OUT/refuse.err")"; fail=1
  else echo "ok   refused: $(cat "$OUT/refuse.err")"; fi
}
refuse "divide the 128 attention heads" bounds --config $V3 --device h100 --tp 3
refuse "does not fit" run --analytic --config $V3 --device mi300x --max-tokens 1 --trace-db "$OUT/r.db" --perfetto "$OUT/r.pftrace" Hi
python3 -c "import json, sys; c = json.load(open('$OUT/v3-dense.json')); c['qk_rope_head_dim'] = 63; json.dump(c, sys.stdout)" > "$OUT/odd.json"
refuse "roped head dim 63 is odd" bounds --config "$OUT/odd.json" --device h100
# A real checkpoint whose yarn scales cos and sin (attention_factor != 1:
# mscale != mscale_all_dim) is refused rather than run wrong; DeepSeek's
# own yarn (equal mscales) runs, checked in check_reference.sh.
python3 tests/ref/make_models.py "$OUT/models" > /dev/null || { echo "FAIL make_models.py"; exit 1; }
python3 - "$OUT/models/deepseek-mla-yarn/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["rope_scaling"]["mscale"] = 1.0
json.dump(c, open(sys.argv[1], "w"))
PY
refuse "rope_scaling is not supported" generate --model "$OUT/models/deepseek-mla-yarn" --prompt-ids 3,17 --max-tokens 1 --json
exit $fail
