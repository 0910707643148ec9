#!/usr/bin/env python3
"""The MoE calculator re-derived from config.json alone, against `hipath bounds --json`.

    bounds_model.py CONFIG.json BOUNDS.json PROFILE.json PARAMS_B ACTIVE_B

Counts every tensor transformers builds for the architecture (qwen3_moe, mixtral,
deepseek_v3 with MLA), the parameters a token uses (its top-k experts, not all E),
the weight bytes a bf16 decode step reads at batch B (a MoE layer reads
E (1 - (1 - k/E)^B) distinct experts, expected), and B* where 2 B A / Pi = bytes(B) / beta;
checks hipath's figures against them (1e-9) and the model card's published totals (2%).
"""
import json
import sys

cfg, res, prof = (json.load(open(p)) for p in sys.argv[1:4])
pub_total, pub_active = float(sys.argv[4]) * 1e9, float(sys.argv[5]) * 1e9
arch = cfg["architectures"][0]
d, V, L = cfg["hidden_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
H = cfg["num_attention_heads"]
E = cfg.get("num_experts") or cfg.get("num_local_experts") or cfg.get("n_routed_experts")
k = cfg["num_experts_per_tok"]
h = cfg["intermediate_size"] if arch == "MixtralForCausalLM" else cfg["moe_intermediate_size"]
f = cfg["intermediate_size"]
shared = cfg.get("n_shared_experts", 0) if arch == "DeepseekV3ForCausalLM" else 0
tied = cfg.get("tie_word_embeddings", False)


def is_moe(l):
    if l < cfg.get("first_k_dense_replace", 0) or l in cfg.get("mlp_only_layers", []):
        return False
    return (l + 1) % cfg.get("decoder_sparse_step", 1) == 0


if arch == "DeepseekV3ForCausalLM":   # MLA: q_a (+ its norm), q_b, kv_a_proj_with_mqa (+ norm), kv_b, o
    ql, kl = cfg["q_lora_rank"] or 0, cfg["kv_lora_rank"]
    nope, rope, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    attn = (d * ql + ql + ql * H * (nope + rope) if ql else d * H * (nope + rope)) \
        + d * (kl + rope) + kl + kl * H * (nope + vd) + H * vd * d
else:
    hd = cfg.get("head_dim") or d // H
    kvh = cfg.get("num_key_value_heads", H)
    attn = 2 * d * H * hd + 2 * d * kvh * hd + (2 * hd if arch == "Qwen3MoeForCausalLM" else 0)
moe_layers = sum(is_moe(l) for l in range(L))
router = d * E + (E if arch == "DeepseekV3ForCausalLM" else 0)   # + e_score_correction_bias
expert = 3 * d * h
shared_p = 3 * d * shared * h
total = V * d * (1 if tied else 2) + d + L * (2 * d + attn) + (L - moe_layers) * 3 * d * f \
    + moe_layers * (router + E * expert + shared_p)
active = total - moe_layers * (E - k) * expert


def read(B):   # distinct experts a MoE layer reads for B tokens, expected
    return E * (1 - (1 - k / E) ** B)


def decode_bytes(B):   # bf16: every weight but the table's unread rows and the unchosen experts
    table = V * d   # the untied table: only B rows read; tied, it is the LM head, read whole
    return 2 * (total - (0 if tied else table) + B * d - moe_layers * (E - read(B)) * expert)


pi = prof["peak_flops"]["bf16"]
bad = 0


def check(ok, what):
    global bad
    print(("ok   " if ok else "FAIL ") + what)
    bad |= not ok


def near(a, b, tol):
    return abs(a - b) <= tol * abs(b)


name = sys.argv[1].split("/")[-1]
check(res["params"] == total, f"{name}: params {res['params']:.6g} = {total:.6g} counted here")
check(res["params_active"] == active, f"{name}: params_active {res['params_active']:.6g} = {active:.6g}")
check(near(total, pub_total, 0.02) and near(active, pub_active, 0.02),
      f"{name}: {total/1e9:.2f} B total, {active/1e9:.2f} B active within 2% of the model card's {pub_total/1e9:g} B, {pub_active/1e9:g} B")
m = res["moe"]
check(m["moe_layers"] == moe_layers and m["experts"] == E and m["top_k"] == k, f"{name}: {moe_layers} MoE layers, top {k} of {E}")
for row in m["decode_by_batch"]:
    B = row["batch"]
    check(near(row["experts_read"], read(B), 1e-12) and near(row["weight_bytes"], decode_bytes(B), 1e-9),
          f"{name}: decode at B {B}: {read(B):.2f} experts a layer, {decode_bytes(B)/1e9:.3f} GB read")
beta = res["memory_bandwidth_bytes_per_s"]
check(res["peak_flops"] == pi, f"{name}: Pi is the profile's bf16 peak")
A = active - (0 if tied else V * d)   # the matmul parameters a token uses
x = moe_layers * expert
lo, hi = 0.0, 1.0
gap = lambda B: 2 * B * A * beta - 2 * (A - k * x + read(B) * x) * pi
while gap(hi) < 0:
    hi *= 2
for _ in range(200):
    mid = (lo + hi) / 2
    lo, hi = (mid, hi) if gap(mid) < 0 else (lo, mid)
check(near(m["b_star"], hi, 1e-6), f"{name}: B* with the experts read {m['b_star']:.1f} = {hi:.1f} (dense formula: {res['b_star']:.1f})")
sys.exit(bad)
