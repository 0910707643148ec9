#!/usr/bin/env python3
"""check_lab10.py OUT/lab10/lab10.json -- lab 10's figures recomputed here,
apart from the C that printed them: (a) from the recorded vLLM run
(tests/data/replay/llama-3.1-8b) and the model's config and the profile
alone: Little's batch at the bandwidth bound, the TPOT it gives, the batch a
token saw, the most requests decoding at once, the requests the KV pool
holds and the seat queues' TTFT; (b) the excerpt's means, modeled from the
JSON's runs and real from the timestamps; (c) request 0's chunked TTFT by
lab 9's step-time model (tests/step_model.py), the pool of 1024 blocks'
admissions, preemptions and waits by hand, each measured figure from the
runs. Prints `N passed, N failed`; exit 1 on any failure."""
import json
import math
import sys

from tally import check, close, done
from step_model import pairs_of, step_model, t_step

ROOT = __file__.rsplit("/tests/", 1)[0]
RUN = f"{ROOT}/tests/data/replay/llama-3.1-8b"
doc = json.load(open(sys.argv[1]))
cfg = json.load(open(f"{ROOT}/tests/data/llama-3.1-8b.config.json"))
gpu = json.load(open(f"{ROOT}/layers/gpu/profiles/rtx-pro-6000-server.json"))
meta = json.load(open(f"{RUN}/meta.json"))["engine_kwargs"]
reqs = [json.loads(x) for x in open(f"{RUN}/requests.jsonl") if x.strip()]
M = step_model(cfg, gpu)
beta = gpu["memory_bandwidth_bytes_per_s"]
W, KV = M["weights"] * beta, M["per_position"] * beta      # a step's weight bytes, a token's K and V bytes
SEATS, BS = meta["max_num_seqs"], 16


def row(q, reading):
    got = [r for r in doc["rows"] if r["quantity"] == q and r["reading"] == reading]
    check(len(got) == 1, f"one row {q} [{reading}]: {len(got)}")
    return got[0] if got else {"predicted": None, "measured": None}


def bound(B, ctx):
    return (W + B * ctx * KV) / beta


def mean(v):
    return sum(v) / len(v)


def queue(seats, t):
    """Mean TTFT of a first-come first-served queue for `seats` seats, each held output x t, the first token a step t after admission."""
    free, out = [0.0] * seats, []
    for q in reqs:
        s = min(range(seats), key=lambda k: free[k])
        admit = max(q["queued_ts"], free[s])
        free[s] = admit + q["output_toks"] * t
        out.append(admit - q["queued_ts"] + t)
    return mean(out)


# (a) the recorded run alone
n = len(reqs)
ins, outs = mean([q["input_toks"] for q in reqs]), mean([q["output_toks"] for q in reqs])
rate = (n - 1) / (reqs[-1]["queued_ts"] - reqs[0]["queued_ts"])
B = 1
for _ in range(100):
    B = min(SEATS, rate * outs * bound(B, ins + outs / 2))
tpot_real = mean([(q["last_token_ts"] - q["first_token_ts"]) / (q["output_toks"] - 1) for q in reqs if q["output_toks"] > 1])
ttft_real = mean([q["first_token_ts"] - q["queued_ts"] for q in reqs])
dec = [(q["first_token_ts"], q["last_token_ts"]) for q in reqs]
seen = sum(max(0, min(b1, b2) - max(a1, a2)) for a1, b1 in dec for a2, b2 in dec) / sum(b - a for a, b in dec)
most = max(sum(a2 <= a1 < b2 for a2, b2 in dec) for a1, _ in dec)
r = row("batch", "300 requests, recorded")
check(close(r["predicted"], B) and close(r["measured"], seen), f"batch: {r['predicted']} {r['measured']} against {B} {seen}")
check(B == SEATS, f"Little's batch at the bound is the seats: {B}")
r = row("tpot_mean", "the bound against vLLM")
check(close(r["predicted"], bound(B, ins + outs / 2)) and close(r["measured"], tpot_real), f"tpot bound {r}")
runs = doc["runs"]
blocks = runs[0]["kv_blocks"]
# vLLM's sizing: 0.9 of the memory less the weights and a step's activations (a few GiB at most), over a token's KV
check((0.9 * gpu["memory_bytes"] - W - 4 * 2**30) / KV / BS <= blocks <= (0.9 * gpu["memory_bytes"] - W) / KV / BS, f"KV pool {blocks} blocks")
fit = blocks // mean([math.ceil((q["input_toks"] + q["output_toks"]) / BS) for q in reqs])
r = row("kv_requests", "300 requests, recorded")
check(close(r["predicted"], fit) and r["measured"] == most == SEATS, f"kv_requests {r} against {fit}, {most}")
for reading, seats, t in (("128 seats", SEATS, bound(B, ins + outs / 2)), ("128 seats, vLLM's TPOT", SEATS, tpot_real),
                          ("the KV pool's seats", int(fit), bound(B, ins + outs / 2))):
    r = row("ttft_mean", reading)
    check(close(r["predicted"], queue(seats, t)) and close(r["measured"], ttft_real), f"ttft {reading}: {r['predicted']} against {queue(seats, t)}")
check(abs(queue(SEATS, tpot_real) / ttft_real - 1) < 0.25, "the seats at vLLM's TPOT give vLLM's TTFT within 25%")

# (b) the whole run: modeled from the run's requests, real from the timestamps; p99 as numpy's default
whole_run, base, small, pool = runs


def p99(values):
    v = sorted(values)
    h = 0.99 * (len(v) - 1)
    lo = math.floor(h)
    return v[lo] + (h - lo) * (v[lo + 1] - v[lo]) if lo + 1 < len(v) else v[-1]


def figures(pairs):
    """{metric: values} of (first, last, output) triples, s from queued."""
    return dict(ttft=[f for f, _, _ in pairs], tpot=[(l - f) / (o - 1) for f, l, o in pairs if o > 1], latency=[l for _, l, _ in pairs])


got = whole_run["requests"]
check(len(got) == n and all(g["input_toks"] == q["input_toks"] and g["output_toks"] == q["output_toks"] for g, q in zip(got, reqs)), "the whole run's lengths")
check(all(close(g["real_first_s"], q["first_token_ts"] - q["queued_ts"], 1e-9) for g, q in zip(got, reqs)), "the whole run's real times")
mod = figures([(g["first_s"], g["last_s"], g["output_toks"]) for g in got])
rea = figures([(q["first_token_ts"] - q["queued_ts"], q["last_token_ts"] - q["queued_ts"], q["output_toks"]) for q in reqs])
for m in mod:
    for stat, f in (("mean", mean), ("p99", p99)):
        r = row(f"{m}_{stat}", "whole run replayed")
        check(close(r["predicted"], f(mod[m])) and close(r["measured"], f(rea[m])), f"whole run {m} {stat}: {r} against {f(mod[m])} {f(rea[m])}")
check(whole_run["max_seqs"] == SEATS and whole_run["preemptions"] == 0, "the whole run fills the seats, preempts none")

# (b) the excerpt: modeled from the runs, real from the timestamps
ex = reqs[:20]
got = base["requests"]
check(len(got) == 20 and all(g["input_toks"] == q["input_toks"] and g["output_toks"] == q["output_toks"] for g, q in zip(got, ex)), "the excerpt's lengths")
for g, q in zip(got, ex):
    check(close(g["arrival_s"], q["queued_ts"] - ex[0]["queued_ts"], 1e-9) or g["arrival_s"] == 0, "arrival at queued_ts")
modeled = dict(ttft_mean=mean([g["first_s"] for g in got]), tpot_mean=mean([(g["last_s"] - g["first_s"]) / (g["output_toks"] - 1) for g in got]),
               latency_mean=mean([g["last_s"] for g in got]))
real = dict(ttft_mean=mean([q["first_token_ts"] - q["queued_ts"] for q in ex]),
            tpot_mean=mean([(q["last_token_ts"] - q["first_token_ts"]) / (q["output_toks"] - 1) for q in ex]),
            latency_mean=mean([q["last_token_ts"] - q["queued_ts"] for q in ex]))
for q in modeled:
    r = row(q, "excerpt replayed alone")
    check(close(r["predicted"], modeled[q]) and close(r["measured"], real[q]), f"excerpt {q}: {r} against {modeled[q]} {real[q]}")
xin, xout = mean([q["input_toks"] for q in ex]), mean([q["output_toks"] for q in ex])
r = row("tpot_mean", "the bound against the replay")
check(close(r["predicted"], bound(20, xin + xout / 2)) and close(r["measured"], modeled["tpot_mean"]), f"excerpt bound {r}")
check(r["predicted"] <= r["measured"], "the replay is no faster than the bound")
check(base["max_seqs"] == 20 and base["preemptions"] == 0, "the excerpt: all 20 at once, none preempted")

# (c) a budget of 512: request 0 alone, its prompt in chunks
P = ex[0]["input_toks"]
for budget, run in ((meta["max_num_batched_tokens"], base), (512, small)):
    cuts = list(range(0, P, budget)) + [P]
    hand = sum(t_step(M, b - a, pairs_of(a, b), 0, b == P) for a, b in zip(cuts, cuts[1:]))
    r = row("ttft_first", f"max_num_batched_tokens {budget}")
    check(close(r["predicted"], hand) and close(r["measured"], run["requests"][0]["first_s"]), f"ttft_first {budget}: {r} against {hand}")
    check(hand <= r["measured"] <= 1.3 * hand, f"the device model within [1, 1.3] x the step-time model at {budget}")
r = row("tpot_mean", "max_num_batched_tokens 512")
check(close(r["measured"], mean([(g["last_s"] - g["first_s"]) / (g["output_toks"] - 1) for g in small["requests"]])), "tpot at 512")
check(small["max_num_batched_tokens"] == 512 and pool["kv_blocks"] == 1024, "the changed settings")

# (c) a pool of 1024 blocks
cum = lambda f: [sum(f(q) for q in ex[:k + 1]) for k in range(20)]
admitted = sum(c <= 1024 for c in cum(lambda q: math.ceil(q["input_toks"] / BS)))
whole = sum(c <= 1024 for c in cum(lambda q: math.ceil((q["input_toks"] + q["output_toks"]) / BS)))
finish = sorted((g["arrival_s"] + g["last_s"], math.ceil((q["input_toks"] + q["output_toks"]) / BS)) for g, q in zip(got[:admitted], ex))
waits, freed, need, k = [], 0, 0, 0
for i in range(admitted, 20):
    need += math.ceil(ex[i]["input_toks"] / BS)
    while freed < need:
        freed += finish[k][1]
        k += 1
    waits.append(finish[k - 1][0] - got[i]["arrival_s"])
rs = pool["requests"]
for q, want, got_ in (("running_max", admitted, pool["max_seqs"]), ("preemptions", admitted - whole, pool["preemptions"]),
                      ("ttft_waiting", mean(waits), mean([g["first_s"] for g in rs[admitted:]]))):
    r = row(q, "a pool of 1024 blocks")
    check(close(r["predicted"], want) and close(r["measured"], got_), f"pool {q}: {r} against {want} {got_}")
check(sum(g["preempted"] for g in rs) == pool["preemptions"], "the pool's preempted requests add up to its counter")
check(all(g["first_s"] <= g["last_s"] for run in runs for g in run["requests"]), "first <= last")
done()
