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

from tally import check, close, done
from step_model import pairs_of, step_model, t_step

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
done()
