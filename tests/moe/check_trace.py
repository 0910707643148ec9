#!/usr/bin/env python3
"""Checks an analytic MoE run's trace against the config (not hipath's earlier output).

    check_trace.py TRACE.db CONFIG.json BYTES_PER_WEIGHT

Every moe_topk op routes each token to top_k distinct experts: its per-expert
counts sum to tokens x top_k and name experts_touched experts; each grouped matmul
after it reads the weights of exactly those experts once (touched x N x K x bytes),
its FLOPs 2 x tokens x top_k x N x K; the MoE layers are the ones the config says.
"""
import json
import sqlite3
import sys

db, cfg_path, wbytes = sys.argv[1], sys.argv[2], float(sys.argv[3])
c = json.load(open(cfg_path))
E = c.get("num_experts") or c.get("num_local_experts") or c.get("n_routed_experts")
k, dim = c["num_experts_per_tok"], c["hidden_size"]
hid = c.get("moe_intermediate_size") or c["intermediate_size"]
L = c["num_hidden_layers"]
dense = set(c.get("mlp_only_layers", [])) | set(range(c.get("first_k_dense_replace", 0)))
step = c.get("decoder_sparse_step", 1)
moe_layers = [l for l in range(L) if l not in dense and (l + 1) % step == 0]

con = sqlite3.connect(db)
rows = con.execute("SELECT name, args FROM slices WHERE layer = 4 AND name IN "
                   "('moe_topk', 'experts_gate_proj', 'experts_up_proj', 'experts_down_proj') ORDER BY ts_ns").fetchall()
fail, routes, last = 0, 0, None


def check(ok, what):
    global fail
    if not ok:
        print("FAIL:", what)
        fail = 1


layers_seen = []
for name, args in rows:
    a = json.loads(args)
    if name == "moe_topk":
        routes += 1
        counts = {int(e): int(n) for e, n in (p.split(":") for p in a["expert_tokens"].split())}
        T = a["tokens"]
        layers_seen.append(a["layer"])
        check(a["experts"] == E and a["top_k"] == k, f"moe_topk experts {a['experts']} top_k {a['top_k']}")
        check(sum(counts.values()) == T * k, f"layer {a['layer']}: counts sum {sum(counts.values())} != {T} x {k}")
        check(len(counts) == a["experts_touched"] and all(0 <= e < E for e in counts), "experts_touched")
        if T <= 16:
            toks = [list(map(int, t.split())) for t in a["token_experts"].split("|")]
            check(len(toks) == T and all(len(set(t)) == k for t in toks), f"token_experts {a['token_experts']}")
        last = (T, len(counts))
    else:
        T, touched = last
        N, K = (dim, hid) if name == "experts_down_proj" else (hid, dim)
        check(a["experts_touched"] == touched, f"{name}: touched {a['experts_touched']} != router's {touched}")
        check(abs(a["weight_bytes"] - touched * N * K * wbytes) < 1, f"{name}: weight_bytes {a['weight_bytes']} != {touched} x {N} x {K} x {wbytes}")
        check(abs(a["flops"] - 2.0 * T * k * N * K) < 1, f"{name}: flops {a['flops']} != 2 x {T} x {k} x {N} x {K}")
steps = routes // max(len(moe_layers), 1)
check(routes > 0 and layers_seen == moe_layers * steps, f"MoE layers {sorted(set(layers_seen))} x {steps}, config says {moe_layers}")
print(("FAIL" if fail else "ok") + f" {cfg_path}: {routes} routings over layers {moe_layers[:3]}..{moe_layers[-1]}, "
      f"each token {k} distinct of {E} experts, grouped matmuls read the touched experts once")
sys.exit(fail)
