#!/bin/sh
# `hipath bounds --tp N --pp M` against a model of Megatron-style tensor and
# pipeline parallelism written here from the config's sizes and the
# profiles' figures (docs/bounds.md, "More than one GPU"): Llama-2-70B bf16
# per GPU at tp 2, 4 and 8 (and against a figure worked by hand), the ring
# all-reduce on a switch (h100) and a mesh (mi300x) for N = 2, 4, 8, the
# pipeline's stages and hand-offs; --tp 1 --pp 1 the same bytes as no flag;
# bad input refused with one line, exit 1.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
OUT=build/parallel
L70=tests/data/llama-2-70b.config.json
QWEN7=tests/data/qwen2.5-7b-instruct.config.json
SMOL=labs/configs/smollm2-135m.config.json   # tied embeddings; 9 heads, 3 KV heads, 30 layers
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
mkdir -p "$OUT" || exit 1
fail=0

# The profiles as shipped; one without an interconnect gets a stand-in (the
# HGX H100's NVLink 4: 18 links of 25 GB/s through NVSwitch; the MI300X
# platform's xGMI: 7 links of 64 GB/s, one to each peer), so that the
# arithmetic is checked either way, against whichever figures are used.
# Also: configs to refuse (KV heads 6 under tp 4, an FFN of 28673) and one
# with 2 KV heads (tp 4 and 8 keep one on each GPU, copied).
python3 - "$OUT" <<'PY' || exit 1
import json, sys
out = sys.argv[1]
STAND_IN = {
    "h100": {"name": "NVLink 4 via NVSwitch (stand-in)", "topology": "switch", "links": 18,
             "link_bytes_per_s": 25e9, "latency_s": 3e-6, "max_gpus": 8, "source": "tests/check_parallel.sh"},
    "mi300x": {"name": "Infinity Fabric xGMI mesh (stand-in)", "topology": "mesh", "links": 7,
               "link_bytes_per_s": 64e9, "latency_s": 3e-6, "max_gpus": 8, "source": "tests/check_parallel.sh"},
}
for dev, link in STAND_IN.items():
    p = json.load(open(f"layers/gpu/profiles/{dev}.json"))
    print(f"{dev}: {'the shipped interconnect' if 'interconnect' in p else 'a stand-in interconnect'}")
    p.setdefault("interconnect", link)
    json.dump(p, open(f"{out}/{dev}.json", "w"))
    del p["interconnect"]
    json.dump(p, open(f"{out}/{dev}-alone.json", "w"))
c = json.load(open("tests/data/llama-2-70b.config.json"))
for name, change in (("kv6", dict(num_attention_heads=48, num_key_value_heads=6, hidden_size=6144)),
                     ("ffn-odd", dict(intermediate_size=28673)), ("kv2", dict(num_key_value_heads=2))):
    json.dump({**c, **change}, open(f"{out}/{name}.json", "w"))
PY

run() { # run NAME ARGS...: the JSON into $OUT/NAME.json
  name=$1; shift
  "$HIPATH" bounds --json "$@" > "$OUT/$name.json" 2> "$OUT/$name.err" ||
    { echo "FAIL $name: exit $?: $(head -n 1 "$OUT/$name.err")"; fail=1; }
}
# name:config:device:tp:pp:batch:prompt:context:extra
CASES="
l70-h100-tp1:$L70:h100:1:1:1:512:512:
l70-mi300x-tp1:$L70:mi300x:1:1:1:512:512:
l70-h100-tp2:$L70:h100:2:1:1:512:512:
l70-h100-tp4:$L70:h100:4:1:1:512:512:
l70-h100-tp8:$L70:h100:8:1:1:512:512:
l70-mi300x-tp2:$L70:mi300x:2:1:1:512:512:
l70-mi300x-tp4:$L70:mi300x:4:1:1:512:512:
l70-mi300x-tp8:$L70:mi300x:8:1:1:512:512:
l70-h100-tp8-b64:$L70:h100:8:1:64:1024:4096:
l70-mi300x-tp4-b16:$L70:mi300x:4:1:16:2048:2048:
l70-h100-tp2-pp2:$L70:h100:2:2:8:512:4096:
l70-h100-pp4:$L70:h100:1:4:4:512:512:
l70-mi300x-pp3:$L70:mi300x:1:3:1:512:512:
l70-mi300x-tp2-pp3:$L70:mi300x:2:3:32:512:2048:--workspace=2GiB
l70-h100-tp8-int8:$L70:h100:8:1:4:512:512:--dtype=int8 --group-size=128 --compute-dtype=bf16
kv2-h100-tp8:$OUT/kv2.json:h100:8:1:2:512:512:
kv2-h100-tp4-pp2:$OUT/kv2.json:h100:4:2:2:512:512:
qwen7-mi300x-tp4:$QWEN7:mi300x:4:1:4:512:1024:
qwen7-h100-tp2-fp32:$QWEN7:h100:2:2:1:256:256:--dtype=fp32 --kv-dtype=fp32
qwen7-mi300x-tp2-pp3:$QWEN7:mi300x:2:3:2:512:512:
smol-h100-tp3:$SMOL:h100:3:1:4:512:1024:
smol-mi300x-tp3-pp2:$SMOL:mi300x:3:2:4:512:1024:
smol-h100-pp4:$SMOL:h100:1:4:1:128:128:
"
echo "$CASES" | while IFS=: read -r name cfg dev tp pp b p l extra; do
  [ -n "$name" ] || continue
  # shellcheck disable=SC2086
  "$HIPATH" bounds --json --config "$cfg" --device "$OUT/$dev.json" --tp "$tp" --pp "$pp" --batch "$b" \
    --prompt-len "$p" --context "$l" $extra > "$OUT/$name.json" 2> "$OUT/$name.err" ||
    { echo "FAIL $name: exit $?: $(head -n 1 "$OUT/$name.err")"; echo 1 > "$OUT/failed"; }
  echo "$name $cfg $dev $tp $pp $b $p $l $extra" >> "$OUT/cases.new"
done
mv "$OUT/cases.new" "$OUT/cases"
[ -e "$OUT/failed" ] && { rm -f "$OUT/failed"; exit 1; }

python3 - "$OUT" <<'PY' || fail=1
import json, math, sys
out = sys.argv[1]
bad = 0
def check(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad |= not ok
def near(a, b, tol=1e-9): return abs(a - b) <= tol * abs(b) + 1e-15

# The model, written from the config on its own: one GPU of a stage of n
# layers, tp N. Megatron: q k v gate up split by columns, o down by rows,
# heads N ways (KV heads too, or one on each GPU when fewer than N), the
# embedding table and LM head by vocabulary; norms whole, q/k/v biases with
# their columns. Weight bytes b (a scale of 2 bytes per G along the input
# with groups, the rest at 2), act 2 bytes (4 for fp32 compute).
BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "int8": 1}
def gpu(cfg, n, first, last, N, B, P, Lc, dtype="bf16", kv_dtype="bf16", G=0, act=2, fixed=0):
    d, f, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    h, kvh = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hd = cfg.get("head_dim") or d // h
    bias = "Qwen2" in cfg["architectures"][0]
    tied = cfg.get("tie_word_embeddings", False)
    hq, hk, fn = h // N, max(kvh // N, 1), f // N
    b = BYTES[dtype]
    b_o = 2 if G else b
    mats = [(d, hq * hd), (d, hk * hd), (d, hk * hd), (hq * hd, d), (d, fn), (d, fn), (fn, d)]
    macs = sum(i * o for i, o in mats)                       # a layer's multiply-adds a token
    mat_bytes = sum(i * o * b + (o * math.ceil(i / G) * 2 if G else 0) for i, o in mats)
    small = 2 * d + ((hq + 2 * hk) * hd if bias else 0)      # norms, and the biases
    tables = (1 if first else 0) + (1 if last and not (tied and first) else 0)
    vshare = V / N
    W = n * mat_bytes + (n * small + (d if last else 0) + tables * vshare * d) * b_o
    kv_tok = 2 * n * hk * hd * BYTES[kv_dtype]
    ctx = max(P, Lc)
    ws_seq = P * (2 * d + 2 * hq * hd + 2 * hk * hd + 2 * fn) * act + (V * 4 if last else 0)
    ws = fixed if fixed else B * ws_seq
    read_w = W - (vshare * d * b_o if first and not (tied and last) else 0)   # the embedding rows only
    head = d * vshare if last else 0
    dec = dict(F=B * (2 * (n * macs + head) + 4 * n * hq * hd * Lc),
               R=read_w + (B * d * b_o / N if first else 0) + B * Lc * kv_tok)
    pre = dict(F=B * (2 * P * n * macs + 4 * n * hq * hd * P * (P + 1) / 2) + 2 * B * head,
               R=read_w + (B * P * d * b_o / N if first else 0) + B * P * kv_tok)
    per_seq = ctx * kv_tok + (0 if fixed else ws_seq)
    return dict(W=W, kv_tok=kv_tok, KV=B * ctx * kv_tok, ws=ws, total=W + B * ctx * kv_tok + ws,
                dec=dec, pre=pre, per_seq=per_seq, room=lambda mem: mem - W - fixed)

def stages(nL, M):   # vLLM's get_pp_indices: the leftovers to the stages before the last
    s = [nL // M] * M
    for i in range(2, nL % M + 2): s[-i] += 1
    return s

def ring(link, N):
    if N < 2: return 0
    k = {"switch": link["links"], "mesh": min(link["links"], N - 1), "host": 1}[link["topology"]]
    return k * link["link_bytes_per_s"]

def all_reduce(link, N, nbytes):   # the ring: 2(N-1)/N x bytes / ring + 2(N-1) hops
    if N < 2: return 0, 0
    return 2 * (N - 1) / N * nbytes / ring(link, N), 2 * (N - 1) * link["latency_s"]

def send(link, nbytes):
    pair = link["links"] * link["link_bytes_per_s"] if link["topology"] == "switch" else link["link_bytes_per_s"]
    return nbytes / pair + link["latency_s"]

for line in open(f"{out}/cases"):
    name, cfgp, dev, N, M, B, P, Lc, *extra = line.split()
    N, M, B, P, Lc = int(N), int(M), int(B), int(P), int(Lc)
    opts = dict(e.lstrip("-").split("=") for e in extra)
    cfg, prof, r = json.load(open(cfgp)), json.load(open(f"{out}/{dev}.json")), json.load(open(f"{out}/{name}.json"))
    if N * M == 1:
        check("parallel" not in r, f"{name}: no parallel object on one GPU")
        continue
    x = r["parallel"]
    link, mem = prof["interconnect"], prof["memory_bytes"]
    comp = opts.get("compute-dtype", "int8" if opts.get("dtype") == "int8" else opts.get("dtype", "bf16"))
    pi, beta, act = prof["peak_flops"][comp], prof["memory_bandwidth_bytes_per_s"], 4 if comp == "fp32" else 2
    fixed = 2 * 2**30 if opts.get("workspace") == "2GiB" else 0
    lay = stages(cfg["num_hidden_layers"], M)
    g = [gpu(cfg, n, i == 0, i == M - 1, N, B, P, Lc, opts.get("dtype", "bf16"), opts.get("kv-dtype", "bf16"),
             int(opts.get("group-size", 0)), act, fixed) for i, n in enumerate(lay)]
    full = max(range(M), key=lambda i: (g[i]["total"], -i))
    check(x["tp"] == N and x["pp"] == M and x["gpus"] == N * M and x["stage_layers"] == lay,
          f"{name}: {N} x {M} GPUs, stages {lay}")
    check(x["interconnect"] == link["name"] and near(x["ring_bandwidth_bytes_per_s"], ring(link, N)),
          f"{name}: ring {ring(link, N) / 1e9:g} GB/s a GPU ({link['topology']}, {link['links']} links)")
    c, k = x["per_gpu"], g[full]
    check(x["fullest_stage"] == full and near(c["weights_bytes"], k["W"]) and near(c["kv_bytes"], k["KV"])
          and near(c["workspace_bytes"], k["ws"]) and near(c["total_bytes"], k["total"]) and c["device_bytes"] == mem
          and c["fits"] == (k["total"] <= mem),
          f"{name}: per GPU (stage {full}) weights {k['W'] / 1e9:.3f} + KV {k['KV'] / 1e9:.3f} + workspace "
          f"{k['ws'] / 1e9:.3f} = {k['total'] / 1e9:.3f} of {mem / 1e9:.2f} GB, fits {k['total'] <= mem}")
    check(x["kv_bytes_per_token_per_gpu"] == k["kv_tok"], f"{name}: KV {k['kv_tok']} bytes a token on a GPU")
    b_fit = min(max(0, math.floor(s["room"](mem) / s["per_seq"])) for s in g)
    check(x["b_fit"] == b_fit, f"{name}: B_fit {b_fit}")
    for ph, obj, step, nbytes in (("dec", x, "decode_step_s", B * cfg["hidden_size"] * act),
                                 ("pre", x["prefill"], "step_s", B * P * cfg["hidden_size"] * act)):
        bw, lat = all_reduce(link, N, nbytes)
        per = 2 * cfg["num_hidden_layers"] if N > 1 else 0
        a = obj["all_reduce"]
        check(a["per_step"] == per and near(a["bandwidth_s"], per * bw) and near(a["latency_s"], per * lat)
              and near(a["total_s"], per * (bw + lat)) and a["bytes"] == (nbytes if N > 1 else 0),
              f"{name} {ph}: {per} all-reduces of {nbytes} bytes: {per * bw * 1e3:.4f} ms bandwidth + {per * lat * 1e3:.4f} ms latency")
        tc = sum(s[ph]["F"] / pi for s in g)
        tm = sum(s[ph]["R"] / beta for s in g)
        sends = (M - 1) * send(link, nbytes) if M > 1 else 0
        t = sum(max(s[ph]["F"] / pi, s[ph]["R"] / beta) for s in g) + per * (bw + lat) + sends
        check(near(obj["t_compute_s"], tc) and near(obj["t_memory_s"], tm) and near(obj["pp_send_s"], sends)
              and near(obj[step], t) and near(obj["comm_share"], (per * (bw + lat) + sends) / t),
              f"{name} {ph}: F/Pi {tc * 1e3:.4f} ms, R/beta {tm * 1e3:.4f} ms, hand-offs {sends * 1e3:.4f} ms -> "
              f"{t * 1e3:.4f} ms, {100 * (per * (bw + lat) + sends) / t:.1f}% communication")

# By hand, Llama-2-70B (d 8192, f 28672, 80 layers, 64 heads, 8 KV heads,
# head 128, vocabulary 32000) at tp 8: a layer's matrices 2 x 8192^2 + 2 x
# 8192 x 1024 + 3 x 8192 x 28672 = 855,638,016 / 8 = 106,954,752, + 16,384
# norm weights = 106,971,136; x 80 = 8,557,690,880; the two tables 2 x
# 32000 x 8192 / 8 = 65,536,000; the final norm 8192: 8,623,235,072
# parameters, 17,246,470,144 bytes at bf16 (137.95 GB / 8 but for the
# norms, whole on every GPU). KV: 1 head x 128 x 2 x 80 x 2 = 40,960 bytes
# a token. With 2 KV heads instead of 8, each GPU still keeps one: the same.
r = json.load(open(f"{out}/l70-h100-tp8.json"))["parallel"]
check(r["per_gpu"]["weights_bytes"] == 17_246_470_144, "l70 tp 8: 17,246,470,144 bytes a GPU, as by hand")
check(r["kv_bytes_per_token_per_gpu"] == 40960 and r["kv_heads_per_gpu"] == 1, "l70 tp 8: one KV head, 40,960 bytes a token")
r = json.load(open(f"{out}/kv2-h100-tp8.json"))["parallel"]
check(r["kv_bytes_per_token_per_gpu"] == 40960 and r["kv_heads_per_gpu"] == 1, "2 KV heads at tp 8: one on each GPU, copied")
# vLLM's get_pp_indices: the layers left over go to the stages before the
# last, from the last but one back: 80 in 3 stages 27 + 27 + 26, 28 in 3
# 9 + 10 + 9, 30 in 4 7 + 8 + 8 + 7.
for name, lay in (("l70-mi300x-pp3", [27, 27, 26]), ("qwen7-mi300x-tp2-pp3", [9, 10, 9]), ("smol-h100-pp4", [7, 8, 8, 7])):
    check(json.load(open(f"{out}/{name}.json"))["parallel"]["stage_layers"] == lay, f"{name}: stages {lay}")
sys.exit(bad)
PY

# One GPU: --tp 1 and --pp 1 change no byte of the output.
for args in "--config $L70 --device $OUT/h100.json" "--config $L70 --device mi300x --batch 8 --context 4096 --json --breakdown" \
            "--config $QWEN7 --device w7900 --dtype int8 --group-size 128 --compute-dtype bf16 --json" \
            "--config $QWEN7 --device h100 --breakdown --workspace 2GiB --device-gb decimal"; do
  # shellcheck disable=SC2086
  "$HIPATH" bounds $args > "$OUT/one.txt" 2>&1
  for flags in "--tp 1" "--pp 1" "--tp 1 --pp 1"; do
    # shellcheck disable=SC2086
    "$HIPATH" bounds $args $flags > "$OUT/one-flag.txt" 2>&1
    if cmp -s "$OUT/one.txt" "$OUT/one-flag.txt"; then echo "ok   $flags: the same bytes ($args)"
    else echo "FAIL $flags changes the output of: $args"; fail=1; fi
  done
done

# Bad input: exit 1, one line on stderr naming the value.
refuse() { # refuse WORD ARGS...
  word=$1; shift
  "$HIPATH" bounds "$@" > /dev/null 2> "$OUT/refuse.err"
  rc=$?
  if [ $rc -ne 1 ] || [ "$(wc -l < "$OUT/refuse.err")" -ne 1 ] || ! grep -q -- "$word" "$OUT/refuse.err"; then
    echo "FAIL refuse '$word': exit $rc: $(cat "$OUT/refuse.err")"; fail=1
  else echo "ok   refused: $(cat "$OUT/refuse.err")"; fi
}
refuse "tp 3: it must divide the 64 attention heads" --config $L70 --device "$OUT/h100.json" --tp 3
refuse "tp 8: it must divide the 28 attention heads" --config $QWEN7 --device "$OUT/h100.json" --tp 8
refuse "tp 4: it must divide the 6 KV heads, or be a multiple of them" --config "$OUT/kv6.json" --device "$OUT/h100.json" --tp 4
refuse "tp 2: it must divide intermediate_size 28673" --config "$OUT/ffn-odd.json" --device "$OUT/h100.json" --tp 2
refuse "pp 81: more stages than the 80 layers" --config $L70 --device "$OUT/h100.json" --pp 81
refuse "tp 16 x pp 1: 16 GPUs: .* joins at most 8 in one server" --config $L70 --device "$OUT/h100.json" --tp 16
refuse "tp 4 x pp 4: 16 GPUs: .*; pipeline stages across servers are not modeled" --config $L70 --device "$OUT/mi300x.json" --tp 4 --pp 4
refuse "the profile gives no interconnect" --config $L70 --device "$OUT/h100-alone.json" --tp 2
refuse "the profile gives no interconnect" --config $L70 --device "$OUT/h100-alone.json" --pp 2
refuse "--tp must be a whole number from 1, got '0'" --config $L70 --device "$OUT/h100.json" --tp 0
refuse "--pp must be a whole number from 1, got '-2'" --config $L70 --device "$OUT/h100.json" --pp -2
exit $fail
