#!/usr/bin/env python3
"""check_lab12.py OUT/lab12/lab12.json -- lab 12's figures recomputed here,
apart from hipath: each GPU's weights and KV a token under each split from
the Hugging Face configs (tests/data/*.config.json) and the formulas
labs/lab12-parallel4.md states (Megatron/vLLM's splits, vLLM's
get_pp_indices); every collective's time from the profile JSON
(layers/gpu/profiles/); the Zipf router's hot GPU by Rosén's inclusion
probabilities; and the measured side read again from the trace (lab12.db)
without the lab's SQL: the all-reduces and all-to-alls counted, each GPU's
busy share, each GPU's prefill rows."""
import json
import math
import sqlite3
import sys

CONFIGS = {"llama-2-70b": ("tests/data/llama-2-70b.config.json", 2), "qwen3-30b-a3b": ("tests/data/qwen3-30b-a3b.config.json", 2),
           "deepseek-v3": ("tests/data/deepseek-v3.config.json", 1)}
N = 8


def profile(name):
    return json.load(open(f"layers/gpu/profiles/{name}.json"))


def layer_params(c, tp, moe):
    """One layer's parameters on a GPU of tp: attention, FFN or experts, norms."""
    d, H = c["hidden_size"], c["num_attention_heads"]
    hd = c.get("head_dim") or d // H
    if c.get("kv_lora_rank"):   # MLA: q_a and kv_a whole; q_b, kv_b, o split by heads
        qr, rank, rope = c["q_lora_rank"], c["kv_lora_rank"], c["qk_rope_head_dim"]
        h = H / tp
        attn = d * qr + qr * h * (c["qk_nope_head_dim"] + rope) + d * (rank + rope) + rank * h * (c["qk_nope_head_dim"] + c["v_head_dim"]) \
            + h * c["v_head_dim"] * d
        norms = 2 * d + qr + rank
    else:
        kv = max(c["num_key_value_heads"] // tp, 1) * hd
        q = H * hd / tp
        attn = 2 * d * q + 2 * d * kv
        norms = 2 * d + (2 * hd if c.get("model_type") == "qwen3_moe" else 0)
    if moe:
        E = c.get("num_experts") or c["n_routed_experts"]
        h = c["moe_intermediate_size"] / tp
        ffn = d * E + E * 3 * d * h + 3 * d * h * (c.get("n_shared_experts") or 0)
        norms += E if c.get("scoring_func") == "sigmoid" else 0   # e_score_correction_bias
    else:
        ffn = 3 * d * c["intermediate_size"] / tp
    return attn + ffn + norms


def stage_weights(c, b, tp, pp):
    """Each stage's GPU's weight bytes: its layers (vLLM's get_pp_indices), the
    embedding on the first, the final norm and LM head on the last, tables by vocabulary over tp."""
    L, d, V = c["num_hidden_layers"], c["hidden_size"], c["vocab_size"]
    dense = c.get("first_k_dense_replace", 0 if (c.get("num_experts") or c.get("n_routed_experts")) else L)
    per, extra, out, start = L // pp, L % pp, [], 0
    for i in range(pp):
        n = per + (i >= pp - 1 - extra and i < pp - 1)
        p = sum(layer_params(c, tp, l >= dense) for l in range(start, start + n))
        p += V / tp * d * ((i == 0) + (i == pp - 1)) + (d if i == pp - 1 else 0)
        out.append((p * b, n))
        start += n
    return out


def kv_token(c, tp, layers):
    if c.get("kv_lora_rank"):
        return layers * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * 2
    hd = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    return 2 * layers * max(c["num_key_value_heads"] // tp, 1) * hd * 2


def rosen_hot(E, k, s, n):
    """N x GPU 0's share of the rows: pi_e = 1 - exp(-lam p_e), sum pi_e = k."""
    if s <= 0:
        return 1.0
    w = [(e + 1.0) ** -s for e in range(E)]
    p = [x / sum(w) for x in w]
    lo, hi = 0.0, 1e9
    for _ in range(200):
        lam = (lo + hi) / 2
        lo, hi = (lam, hi) if sum(1 - math.exp(-lam * x) for x in p) < k else (lo, lam)
    return sum(1 - math.exp(-lo * x) for x in p[:E // n]) / k * n


def main():
    path = sys.argv[1]
    doc = json.load(open(path))
    rows = {(r["quantity"], r["model"], r["device"]): r for r in doc["rows"]}
    fails, checked = [], 0

    def near(what, got, want, rel=1e-6):
        nonlocal checked
        checked += 1
        if got is None or abs(got - want) > rel * abs(want) + 1e-12:
            fails.append(f"{what}: lab 12 says {got}, recomputed {want:.6g}")

    # (a) each split: the weights and KV a token on its fullest GPU
    splits = {"tp 8": (8, 1), "pp 8": (1, 8), "tp 4 x pp 2": (4, 2), "dp 8": (1, 1)}
    for (q, model, dev), r in rows.items():
        if q not in ("weights_bytes_gpu", "kv_bytes_token_gpu"):
            continue
        cfg, b = CONFIGS[model]
        c = json.load(open(cfg))
        tp, pp = splits[dev.split(",")[0]]
        stages = stage_weights(c, b, tp, pp)
        want = [w for w, _ in stages] if q == "weights_bytes_gpu" else [kv_token(c, tp, n) for _, n in stages]
        checked += 1
        if not any(abs(r["predicted"] - w) <= 1e-9 * w for w in want):
            fails.append(f"{q} {model} @ {dev}: lab 12 says {r['predicted']}, the stages hold {[f'{w:.6g}' for w in want]}")

    # the MoEs' parameters, all and a token's (k of E experts), and E (1 - (1 - k/E)^B) experts read
    for model in ("qwen3-30b-a3b", "deepseek-v3"):
        c = json.load(open(CONFIGS[model][0]))
        E, k = c.get("num_experts") or c["n_routed_experts"], c["num_experts_per_tok"]
        every = sum(w for w, _ in stage_weights(c, 1, 1, 1))
        active = sum(w for w, _ in stage_weights(dict(c, **{("num_experts" if "num_experts" in c else "n_routed_experts"): k}), 1, 1, 1))
        moe = c["num_hidden_layers"] - c.get("first_k_dense_replace", 0)
        # the router [d, E] and the sigmoid gate's bias [E] stay whole: only the experts count k of E
        active += (E - k) * (c["hidden_size"] + (c.get("scoring_func") == "sigmoid")) * moe
        for r in doc["rows"]:
            if r["model"] != model or r["quantity"] not in ("params", "params_active", "experts_read"):
                continue
            want = {"params": every, "params_active": active, "experts_read": E * (1 - (1 - k / E) ** r["batch"])}[r["quantity"]]
            near(f"{r['quantity']} {model} B {r['batch']}", r["predicted"], want, 1e-9 if r["quantity"] == "experts_read" else 2e-9)

    h100 = profile("h100")
    link = h100["interconnect"]
    ring = link["links"] * link["link_bytes_per_s"]   # NVSwitch: all links to any peer
    alpha = link["latency_s"]
    llama = json.load(open(CONFIGS["llama-2-70b"][0]))
    d, nL = llama["hidden_size"], llama["num_hidden_layers"]
    # TP 8: 2 n_L ring all-reduces of B d bf16 activations
    r = rows[("all_reduce_s", "llama-2-70b", "tp 8, 8 x analytic:h100")]
    near("all_reduce_s predicted", r["predicted"], 2 * nL * (2 * (N - 1) / N * d * 2 / ring + 2 * (N - 1) * alpha))
    # PP 8: one hand-off of B d bf16 over a pair's links
    r = rows[("send_s", "llama-2-70b", "pp 8, 8 x analytic:h100")]
    near("send_s predicted", r["predicted"], d * 2 / ring + alpha)
    near("busy_share_1 predicted", rows[("busy_share_1", "llama-2-70b", "pp 8, 8 x analytic:h100")]["predicted"], 1 / N)
    R = 3   # passes a request: its prefill and TOK - 1 decode steps
    near("busy_share_m predicted", rows[("busy_share_m", "llama-2-70b", "pp 8, 8 x analytic:h100")]["predicted"], R * N / (R * N + N - 1))
    # EP 8: 2 all-to-alls a MoE layer, k (N-1)/N rows of d f32 sent, N - 1 peers
    qw = json.load(open(CONFIGS["qwen3-30b-a3b"][0]))
    k, E = qw["num_experts_per_tok"], qw["num_experts"]
    for s in (0, 2):
        dev = f"ep 8, 8 x analytic:h100, skew {s}"
        near(f"all_to_all_s predicted, skew {s}", rows[("all_to_all_s", "qwen3-30b-a3b", dev)]["predicted"],
             2 * qw["num_hidden_layers"] * (k * (N - 1) / N * qw["hidden_size"] * 4 / ring + (N - 1) * alpha))
        near(f"hot_rows predicted, skew {s}", rows[("hot_rows", "qwen3-30b-a3b", dev)]["predicted"], rosen_hot(E, k, s, N), 1e-4)

    # The measured side, from the trace itself: runs 1 (TP 8), 2 (PP 8), 3-4 (EP 8, skew 0 and 2)
    db = sqlite3.connect(path.replace(".json", ".db"))

    def steps_of(run, req):
        """(step, n_prefill) of each step of run that held request req (layer 6's step slices)."""
        return [(s, a["n_prefill"]) for s, a in ((s, json.loads(a)) for (s, a) in db.execute(
            "SELECT step, args FROM slices WHERE run_id = ? AND layer = 6 AND name = 'step' ORDER BY step", (run,)))
            if req in json.loads(a["requests"])]

    def decode_steps(run):
        return [s for s, n in steps_of(run, 2) if n == 0]

    def per_step(run, name):
        steps = decode_steps(run)
        n = db.execute(f"SELECT count(*) FROM slices WHERE run_id = ? AND layer = 1 AND track = 1 AND name = ? "
                       f"AND step IN ({','.join(map(str, steps))})", (run, name)).fetchone()[0]
        return n / len(steps)

    near("all_reduces measured (TP 8)", rows[("all_reduces", "llama-2-70b", "tp 8, 8 x analytic:h100")]["measured"], per_step(1, "allReduce"))
    # PP 8, request 1 alone: each GPU's kernels over the span of its steps
    st = ",".join(str(s) for s, _ in steps_of(2, 1))
    t0, t1 = db.execute(f"SELECT min(ts_ns), max(ts_ns + dur_ns) FROM slices WHERE run_id = 2 AND layer = 1 AND step IN ({st})").fetchone()
    busy = [b / (t1 - t0) for (b,) in db.execute(
        f"SELECT sum(dur_ns) FROM slices WHERE run_id = 2 AND layer = 1 AND kind = 'slice' AND name NOT IN ('send', 'recv') "
        f"AND step IN ({st}) GROUP BY track ORDER BY track")]
    near("busy_share_1 measured (PP 8)", rows[("busy_share_1", "llama-2-70b", "pp 8, 8 x analytic:h100")]["measured"], sum(busy) / len(busy))
    for run, s in ((3, 0), (4, 2)):
        dev = f"ep 8, 8 x analytic:h100, skew {s}"
        first = steps_of(run, 2)[0][0]
        per = [0] * N
        for (a,) in db.execute("SELECT args FROM slices WHERE run_id = ? AND layer = 4 AND name = 'moe_dispatch' AND step = ?", (run, first)):
            for g, x in enumerate(json.loads(a)["gpu_rows"].split()):
                per[g] += int(x)
        near(f"hot_rows measured, skew {s}", rows[("hot_rows", "qwen3-30b-a3b", dev)]["measured"], max(per) / (sum(per) / N))
        r = rows[("hot_rows", "qwen3-30b-a3b", dev)]
        if s and abs(r["measured"] / r["predicted"] - 1) > 0.05:
            fails.append(f"hot_rows, skew {s}: measured {r['measured']:.3f} is not within 5% of Rosén's {r['predicted']:.3f}")
        near(f"all_to_alls measured, skew {s}", rows[("all_to_alls", "qwen3-30b-a3b", dev)]["measured"], per_step(run, "allToAll"))
    for f in fails:
        print(f"FAIL lab 12: {f}")
    print(f"{'FAIL' if fails else 'ok'} lab 12: {checked} figures recomputed from the configs, the profile and the trace")
    return 1 if fails else 0


sys.exit(main())
