#!/usr/bin/env python3
"""deepseek_v3's routing, hipath's k_moe_route against transformers' own DeepseekV3TopkRouter.

    route_ref.py BUILD/tests/moe_route

For each case (group-limited or not, renormalized or not), random hidden states and
router weights and an e_score_correction_bias go through DeepseekV3TopkRouter (the
module transformers runs: sigmoid scores, the bias for the choice only, the best
topk_group of n_group groups by their top-2 sums, top-k, renormalized, times
routed_scaling_factor); its logits go to hipath's kernel. Each token's set of experts
must be equal and each weight within 1e-5.
"""
import subprocess
import sys

import torch
import transformers as tf
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3TopkRouter

torch.set_num_threads(1)   # make test runs two tests on two cores: a second thread mostly spins (tests/ref/hf_ref.py)

CASES = [dict(n_routed_experts=16, num_experts_per_tok=4, n_group=4, topk_group=2, norm_topk_prob=True, routed_scaling_factor=2.5),
         dict(n_routed_experts=32, num_experts_per_tok=6, n_group=8, topk_group=3, norm_topk_prob=False, routed_scaling_factor=1.0),
         dict(n_routed_experts=12, num_experts_per_tok=3, n_group=1, topk_group=1, norm_topk_prob=True, routed_scaling_factor=1.5)]
T, D = 24, 32
fail = 0
for i, kw in enumerate(CASES):
    cfg = tf.DeepseekV3Config(hidden_size=D, **kw)
    router = DeepseekV3TopkRouter(cfg)
    g = torch.Generator().manual_seed(7 + i)
    E = kw["n_routed_experts"]
    with torch.no_grad():
        router.weight.copy_(torch.randn(E, D, generator=g) / D ** 0.5)
        router.e_score_correction_bias.copy_(0.3 * torch.randn(E, generator=g))
        h = torch.randn(T, D, generator=g)
        logits, weights, idx = router(h)
    header = [E, kw["num_experts_per_tok"], 1, int(kw["norm_topk_prob"]), kw["routed_scaling_factor"], kw["n_group"],
              kw["topk_group"], 1, T]
    text = " ".join(map(str, header)) + "\n" + " ".join(f"{b:.9g}" for b in router.e_score_correction_bias.tolist()) + "\n" \
        + "\n".join(" ".join(f"{v:.9g}" for v in row) for row in logits.tolist()) + "\n"
    out = subprocess.run([sys.argv[1]], input=text, capture_output=True, text=True)
    if out.returncode:
        print(f"FAIL case {i}: moe_route: {out.stderr.strip()}")
        fail = 1
        continue
    bad = 0
    for t, line in enumerate(out.stdout.split("\n")[:T]):
        got = {int(e): float(w) for e, w in (p.split(":") for p in line.split())}
        want = dict(zip(idx[t].tolist(), weights[t].tolist()))
        if set(got) != set(want) or any(abs(got[e] - want[e]) > 1e-5 for e in want):
            print(f"FAIL case {i} token {t}: hipath {sorted(got.items())} vs transformers {sorted(want.items())}")
            bad = 1
    print(("FAIL" if bad else "ok") + f" deepseek_v3 routing, {E} experts top {kw['num_experts_per_tok']} in the best "
          f"{kw['topk_group']} of {kw['n_group']} groups, norm {kw['norm_topk_prob']}: {T} tokens as DeepseekV3TopkRouter")
    fail |= bad
sys.exit(fail)
