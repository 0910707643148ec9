#!/usr/bin/env python3
"""check_replay.py OUT -- `hipath replay` (issue 45) checked apart from its C.
OUT holds excerpt.json (the first 20 requests of the Llama-3.1-8B run,
--json) and one.json (its first request alone). Every statistic recomputed
here: the real ones from the requests.jsonl timestamps themselves, the
modeled ones from per_request, percentiles as numpy.percentile's default
(linear between closest ranks), written out below; and the lone request's
TTFT and latency by hand from the model's config and the profile's
datasheet figures (lab 9's step-time model: a step is max(weights / beta,
ids x 2 x linear params / Pi) + launches + attention pairs at the fp32
peak + cached positions read + per sample the LM head and the logits'
copy): its prompt of 2358 ids in chunks of the 2048 budget, then one decode
step a token. Prints `N passed, N failed`."""
import json
import math
import sys

import sqlite3

from tally import check, close, done
from step_model import pairs_of, step_model, t_step
from replay_by_hand import kernel_s, schedule

ROOT = __file__.rsplit("/tests/", 1)[0]
out = sys.argv[1]


def percentile(values, p):
    v = sorted(values)
    h = p / 100 * (len(v) - 1)
    lo = math.floor(h)
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo]) if lo + 1 < len(v) else v[-1]


def stats(values):
    return dict(mean=sum(values) / len(values), median=percentile(values, 50), p90=percentile(values, 90),
                p95=percentile(values, 95), p99=percentile(values, 99))


lines = [json.loads(x) for x in open(f"{ROOT}/tests/data/replay/llama-3.1-8b/requests.jsonl")][:20]
doc = json.load(open(f"{out}/excerpt.json"))
check(doc["requests"] == 20 and len(doc["per_request"]) == 20, "20 requests replayed")
real = dict(ttft_ms=[1e3 * (q["first_token_ts"] - q["queued_ts"]) for q in lines],
            tpot_ms=[1e3 * (q["last_token_ts"] - q["first_token_ts"]) / (q["output_toks"] - 1) for q in lines if q["output_toks"] > 1],
            latency_ms=[1e3 * (q["last_token_ts"] - q["queued_ts"]) for q in lines])
modeled = {m: [q["modeled"][m] for q in doc["per_request"] if q["modeled"][m] is not None] for m in real}
for m in real:
    for kind, values in (("real", real[m]), ("modeled", modeled[m])):
        want = stats(values)
        for s, v in want.items():
            check(close(doc["metrics"][m][kind][s], v, 1e-9), f"{m} {kind} {s}: {doc['metrics'][m][kind][s]} != {v}")
for q, r in zip(doc["per_request"], lines):
    check(q["input_toks"] == r["input_toks"] and q["output_toks"] == r["output_toks"], "lengths as recorded")
    check(close(q["arrival_ms"], 1e3 * (r["queued_ts"] - lines[0]["queued_ts"]), 1e-9) or q["arrival_ms"] == 0, "arrival at queued_ts")
    md = q["modeled"]
    check(0 < md["ttft_ms"] <= md["latency_ms"], "modeled 0 < TTFT <= latency")
e = doc["engine"]
check((e["max_num_seqs"], e["max_num_batched_tokens"], e["tp"], e["dtype"]) == (128, 2048, 1, "bf16"), f"meta.json's engine settings: {e}")

# The lone first request by hand.
cfg = json.load(open(f"{ROOT}/tests/data/llama-3.1-8b.config.json"))
gpu = json.load(open(f"{ROOT}/layers/gpu/profiles/rtx-pro-6000-server.json"))
M = step_model(cfg, gpu)
P, N, B = lines[0]["input_toks"], lines[0]["output_toks"], 2048
ttft = t_step(M, B, pairs_of(0, B), 0, 0) + t_step(M, P - B, pairs_of(B, P), 0, 1)
latency = ttft + sum(t_step(M, 1, 0, P + k, 1) for k in range(1, N))
one = json.load(open(f"{out}/one.json"))["per_request"][0]["modeled"]
# The hand model is the roofline of each step: the device model is no
# faster, and slower by what it adds per kernel (each wave's tail; a
# decode's attention of 32 workgroups on 188 SMs gets 32/188 of the
# bandwidth; the norms, RoPE and SwiGLU the hand model leaves out): 30% at most.
for what, got, hand in (("TTFT", one["ttft_ms"], 1e3 * ttft), ("latency", one["latency_ms"], 1e3 * latency)):
    check(hand * (1 - 1e-9) <= got <= 1.3 * hand, f"lone request {what} {got:.3f} ms, by hand {hand:.3f} ms (modeled must be within [1, 1.3] x)")
# Request 0 is alone until request 1 arrives (285 ms, after its first
# token): in the excerpt its TTFT is the lone run's, to the nanosecond.
check(close(doc["per_request"][0]["modeled"]["ttft_ms"], one["ttft_ms"], 1e-9), "request 0's TTFT in the excerpt is its lone TTFT")
print(f"lone request: TTFT {one['ttft_ms']:.2f} ms (by hand {1e3 * ttft:.2f}), latency {one['latency_ms']:.1f} ms (by hand {1e3 * latency:.1f})")

# The excerpt's steps by hand (tests/replay_by_hand.py), against its trace
# (--kernel-sample 100): every step's requests and chunks from the arrivals
# and meta.json's settings, the clock advanced by each step's device_ns;
# each request's first and last token from that clock, against the replay's.
db = sqlite3.connect(f"{out}/excerpt.db")
steps = db.execute("SELECT step, json_extract(args, '$.device_ns'), json_extract(args, '$.chunks'), json_extract(args, '$.requests'), "
                   "json_extract(args, '$.tokens') FROM slices WHERE name = 'step' ORDER BY step").fetchall()
check([s[0] for s in steps] == list(range(len(steps))), "the steps numbered 0, 1, ...")
reqs = [(q["queued_ts"] - lines[0]["queued_ts"], q["input_toks"], q["output_toks"]) for q in lines]
walk = schedule(reqs, e["max_num_batched_tokens"], e["max_num_seqs"], lambda k: steps[k][1] * 1e-9)
same = 0
for (k, _, got_chunks, got_reqs, _), (chunks, decoding, _) in zip(steps, walk):   # steps first: zip stops on them
    want = [{"req": i + 1, "from": a, "to": b, "of": reqs[i][1]} for i, a, b in chunks]
    ok = json.loads(got_chunks) == want and sorted(json.loads(got_reqs)) == sorted(i + 1 for i in decoding + [c[0] for c in chunks])
    check(ok, f"step {k}: the trace's chunks {got_chunks} and requests {got_reqs}, by hand {want} and decodes {decoding}")
    same += ok
first, last = next(walk)
traced = json.load(open(f"{out}/traced.json"))["per_request"]
for i, q in enumerate(traced):
    check(close(q["modeled"]["ttft_ms"], 1e3 * (first[i] - reqs[i][0]), 1e-9) and close(q["modeled"]["latency_ms"], 1e3 * (last[i] - reqs[i][0]), 1e-9),
          f"request {i}: TTFT and latency by hand {1e3 * (first[i] - reqs[i][0])}, {1e3 * (last[i] - reqs[i][0])}, replayed {q['modeled']}")
# The sampled steps' device time by hand: each kernel and copy from its
# grid, FLOPs and bytes and the profile (sim.h's formula), each GEMM's FLOPs
# and bytes from the config (bf16 weights, f32 activations); the step's
# device_ns their sum (each slice rounded to the ns).
d, f, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
hd = cfg.get("head_dim") or d // cfg["num_attention_heads"]
qd, kvd = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
SHAPE = dict(q_proj=(d, qd), k_proj=(d, kvd), v_proj=(d, kvd), o_proj=(qd, d), gate_proj=(d, f), up_proj=(d, f), down_proj=(f, d), lm_head=(d, V))
def cdiv(a, b): return -(-a // b)
def split_k(T, N, K, cus):
    """geometry.h's split-K rule: S slices of a whole number of 32-deep tiles when the GEMM's
    32x32 tiles are fewer than the CUs (S = min(cus / tiles, K / 256))."""
    S = min(cus // (cdiv(N, 32) * cdiv(T, 32)), K // 256)
    return cdiv(K, cdiv(cdiv(K, 32), S) * 32) if S > 1 else 1
for k in range(0, len(steps), 100):
    ids = steps[k][4]
    sampled = len(json.loads(steps[k][3])) - sum(c["to"] < c["of"] for c in json.loads(steps[k][2]))
    kernels = [(name, dur, json.loads(a)) for name, dur, a in
               db.execute("SELECT name, dur_ns, args FROM slices WHERE layer = 1 AND step = ? AND kind = 'slice' AND track <= 1", (k,))]
    hand = [kernel_s(gpu, name, a.get("class", ""), a) * 1e9 for name, _, a in kernels]
    check(kernels and all(abs(h - dur) <= 1 for h, (_, dur, _) in zip(hand, kernels)), f"step {k}: each of its {len(kernels)} kernels and copies by sim.h's formula")
    check(abs(sum(hand) - steps[k][1]) <= len(kernels), f"step {k}: device_ns {steps[k][1]} against {sum(hand):.0f} by hand")
    gemms = [(a["op"], a) for name, _, a in kernels if name == "gemm"]
    for op, a in gemms:
        i, o = SHAPE[op]
        m = sampled if op == "lm_head" else ids
        S = split_k(m, o, i, gpu["compute_units"])   # split: a first pass writes y, then S read-modify-writes of it
        check(a["flops"] == 2 * m * i * o and a["bytes"] == 2 * i * o + 4 * m * (i + o) + (4 * m * o * (2 * S - 1) if S > 1 else 0),
              f"step {k} {op}: FLOPs and bytes from the config (split-K in {S})")
    check(len(gemms) == 7 * cfg["num_hidden_layers"] + (sampled > 0), f"step {k}: 7 GEMMs a layer and the LM head when it samples: {len(gemms)}")
print(f"the excerpt by hand: {same} of {len(steps)} steps composed alike; steps {list(range(0, len(steps), 100))} timed kernel by kernel")
done()
