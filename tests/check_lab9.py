#!/usr/bin/env python3
"""check_lab9.py OUT/lab9/lab9.json -- lab 9's figures recomputed here, apart
from the C that printed them: every percentile, hit rate, goodput, preemption
and recompute count from the requests' own times and counts (the JSON's
"runs"), and every prediction from the model's config and the H100's profile
by the formulas labs/lab9-scheduler.md states; and the traced sample
(lab9.db) as the key's question 8 reads it. Percentiles by nearest rank:
the ceil(p n / 100)-th smallest. Prints `N passed, N failed`; exit 1 on any
failure."""
import json
import math
import sqlite3
import sys

from tally import check, close, done
from step_model import pairs_of, step_model
from step_model import t_step as step_model_t_step

ROOT = __file__.rsplit("/tests/", 1)[0]
doc = json.load(open(sys.argv[1]))
cfg = json.load(open(f"{ROOT}/tests/data/llama-3-8b.config.json"))
gpu = json.load(open(f"{ROOT}/layers/gpu/profiles/h100.json"))


def row(q, reading=None, batch=None, prompt=None):
    """The one row of quantity q (and reading, batch, prompt_len when given)."""
    got = [r for r in doc["rows"] if r["quantity"] == q and (reading is None or r["reading"] == reading)
           and (batch is None or r["batch"] == batch) and (prompt is None or r["prompt_len"] == prompt)]
    check(len(got) == 1, f"one row {q} {reading} {batch} {prompt}: {len(got)}")
    return got[0] if got else {"predicted": None, "measured": None}


def nearest_rank(values, p):
    v = sorted(values)
    return v[max(1, math.ceil(p / 100 * len(v))) - 1]


def ttft(q):
    return q["first"] - q["arrive"]


def tpot(q):
    return (q["last"] - q["first"]) / (q["tokens"] - 1)


# The step-time model, from the config and the profile (tests/step_model.py).
M = step_model(cfg, gpu)


def t_step(n, pairs, positions, sampled):
    return step_model_t_step(M, n, pairs, positions, sampled)


runs = {}
for r in doc["runs"]:
    runs.setdefault(r["part"], []).append(r)
    qs = r["requests"]
    check(r["clock"] == "modeled", f"{r['name']}: the clock is modeled")
    check(all(q["arrive"] <= q["first"] <= q["last"] <= q["finish"] for q in qs), f"{r['name']}: arrive <= first <= last <= finish")
    check(sum(q["preempted"] for q in qs) == r["preemptions"], f"{r['name']}: preempted requests add up to the counter")
    check(sum(q["cached"] for q in qs) <= r["prefix_hits"], f"{r['name']}: first admissions' cached tokens within the hits")
    check(all(q["tokens"] >= 1 for q in qs), f"{r['name']}: every request answered")

# (a) the pool against concurrency
for r in runs["a"]:
    qs, name = r["requests"], r["name"]
    P, reply, cap, blocks, bs = qs[0]["prompt"], qs[0]["tokens"], qs[0]["max_tokens"], r["kv_blocks"], r["block_size"]
    worst, at_admit, at_end = blocks // math.ceil((P + cap) / bs), blocks // math.ceil(P / bs), blocks // math.ceil((P + reply) / bs)
    opt = not r["reserve_worst_case"]
    check(close(row("running_max", name)["predicted"], min(at_admit, len(qs)) if opt else worst), f"{name}: running_max predicted")
    check(close(row("running_mean", name)["predicted"], at_end if opt else worst), f"{name}: running_mean predicted")
    check(row("running_max", name)["measured"] == r["max_seqs"], f"{name}: running_max measured")
    check(close(row("running_mean", name)["measured"], r["seqs"] / r["steps"]), f"{name}: running_mean measured")
    if not opt:
        check(r["max_seqs"] <= worst and r["preemptions"] == 0, f"{name}: never more than the reserved {worst}, never preempted")
    check(row("preemptions", name)["measured"] == r["preemptions"], f"{name}: preemptions")
    recomputed = r["computed_tokens"] - sum(q["prompt"] + q["tokens"] - 1 for q in qs)
    check(row("recomputed_tokens", name)["measured"] == recomputed, f"{name}: recomputed tokens {recomputed}")
    check((recomputed > 0) == (r["preemptions"] > 0), f"{name}: recompute exactly when preempted")
    check(close(row("recomputed_tokens", name)["predicted"], (min(at_admit, len(qs)) - at_end) * (P + reply / 2) if opt else 0),
          f"{name}: recomputed tokens predicted")
    end = max(q["finish"] for q in qs)
    check(close(row("makespan", name)["measured"], end), f"{name}: makespan")
    check(close(row("throughput", name)["measured"], sum(q["tokens"] for q in qs) / end), f"{name}: throughput")

# (b) chunked prefill: the chats' percentiles and stalls, the long prompts' TTFT
for r in runs["b"]:
    qs, name = r["requests"], r["name"]
    chats, longs = [q for q in qs if q["prompt"] == 256], [q for q in qs if q["prompt"] != 256]
    for p in (50, 90, 99):
        check(close(row(f"ttft_p{p}", name, prompt=256)["measured"], nearest_rank([ttft(q) for q in chats], p)), f"{name}: ttft_p{p}")
        check(close(row(f"tpot_p{p}", name, prompt=256)["measured"], nearest_rank([tpot(q) for q in chats], p)), f"{name}: tpot_p{p}")
    stall = max(b - a for q in chats for a, b in zip(q["t"], q["t"][1:]))
    check(close(row("stall_max", name)["measured"], stall), f"{name}: stall_max {stall}")
    check(all(len(q["t"]) == q["tokens"] and q["t"][0] == q["first"] and q["t"][-1] == q["last"] for q in qs), f"{name}: every token's time")
    check(close(row("long_ttft_p50", name)["measured"], nearest_rank([ttft(q) for q in longs], 50)), f"{name}: long_ttft_p50")
    # the prediction: the long prompt in chunks of what the budget leaves after the chats decoding (Little's law)
    span, rate = max(q["arrive"] for q in qs), len(chats) / max(q["arrive"] for q in qs)
    P, reply, Pl = 256, chats[0]["tokens"], longs[0]["prompt"]
    B = 1
    for _ in range(20):
        B = rate * reply * t_step(B, 0, B * (P + reply / 2), B)
    budget = r["max_num_batched_tokens"] if r["chunked_prefill"] else 0
    chunk = budget - math.ceil(B) if budget else Pl
    t_long, stall_p, a = 0, 0, 0
    while a < Pl:
        b = min(a + chunk, Pl)
        ts = t_step(b - a + B, pairs_of(a, b), B * (P + reply / 2), B + (b == Pl))
        t_long, stall_p, a = t_long + ts, max(stall_p, ts), b
    check(close(row("stall_max", name)["predicted"], stall_p, 1e-3), f"{name}: stall_max predicted {stall_p}")
    check(close(row("long_ttft_p50", name)["predicted"], t_long, 1e-3), f"{name}: long_ttft_p50 predicted {t_long}")
    s = min(1, len(longs) * t_long / span)
    t_own = t_step(P + B, pairs_of(0, P), B * (P + reply / 2), B + 1)
    check(close(row("ttft_p99", name, prompt=256)["predicted"], t_own + t_long * max(0, (0.99 - (1 - s)) / s), 1e-3), f"{name}: ttft_p99 predicted")
    steps = math.ceil(Pl / chunk)
    t_dec = t_step(B, 0, B * (P + reply / 2), B)
    s2 = min(1, len(longs) * (t_long + (reply - 1) * t_dec) / span)
    worst = (min(reply - 1, steps) * t_long / steps + max(0, reply - 1 - steps) * t_dec) / (reply - 1)
    check(close(row("tpot_p99", name, prompt=256)["predicted"], t_dec + (worst - t_dec) * max(0, (0.99 - (1 - s2)) / s2), 1e-3), f"{name}: tpot_p99 predicted")

# (c) prefix caching: hit rate in tokens, TTFT
for r in runs["c"]:
    qs, name = r["requests"], r["name"]
    P, system = qs[0]["prompt"], 1000
    hit = system // r["block_size"] * r["block_size"]
    if r["prefix_caching"]:
        check(r["prefix_queries"] == sum(q["prompt"] for q in qs), f"{name}: queries are every prompt token")
        check([q["cached"] for q in qs] == [0] + [hit] * (len(qs) - 1), f"{name}: the first finds nothing, each later {hit} tokens")
        check(close(row("hit_rate", name)["measured"], r["prefix_hits"] / r["prefix_queries"]), f"{name}: hit rate measured")
        check(close(row("hit_rate", name)["predicted"], (len(qs) - 1) * hit / (len(qs) * P)), f"{name}: hit rate predicted")
    else:
        check(r["prefix_queries"] == 0 and all(q["cached"] == 0 for q in qs), f"{name}: nothing looked up")
    a = hit if r["prefix_caching"] else 0
    check(close(row("ttft_p50", name, prompt=P)["measured"], nearest_rank([ttft(q) for q in qs], 50)), f"{name}: ttft_p50")
    check(close(row("ttft_p50", name, prompt=P)["predicted"], t_step(P - a, pairs_of(a, P), 0, 1), 1e-3), f"{name}: ttft_p50 predicted")

# (d) goodput under the SLO, and the rate the steady step reaches the TPOT SLO
for r in runs["d"]:
    qs, name, rate = r["requests"], r["name"], r["rate"]
    good = sum(ttft(q) <= r["slo_ttft_s"] and tpot(q) <= r["slo_tpot_s"] for q in qs)
    check(close(row("goodput", name)["measured"], rate * good / len(qs)), f"{name}: goodput {rate * good / len(qs)}")
    for p, q in ((50, "tpot_p50"), (99, "tpot_p99")):
        check(close(row(q, name)["measured"], nearest_rank([tpot(x) for x in qs], p)), f"{name}: {q}")
    check(close(row("ttft_p99", name)["measured"], nearest_rank([ttft(x) for x in qs], 99)), f"{name}: ttft_p99")
P, reply = runs["d"][0]["requests"][0]["prompt"], runs["d"][0]["requests"][0]["tokens"]
work_a = pairs_of(0, P) * M["per_pair"] + reply * (P + reply / 2) * M["per_position"] + reply * M["per_sample"]
work_c = (P + reply) * M["per_id"]
slo = runs["d"][0]["slo_tpot_s"]
# t = max((W + launches) / (1 - r a), launches / (1 - r (c + a))) = slo, solved for r
rate_slo = min((1 - (M["weights"] + M["launches"]) / slo) / work_a, (1 - M["launches"] / slo) / (work_c + work_a))
check(close(row("slo_rate", "")["predicted"], rate_slo, 1e-6), f"slo_rate predicted {rate_slo}")
best = max([r["rate"] for r in runs["d"] if row("goodput", r["name"])["measured"] >= 0.9 * r["rate"]], default=0)
check(row("slo_rate", "")["measured"] == best, f"slo_rate measured {best}")

# The traced sample (lab9.db, run 1): the sheet's question 8 and its SQL.
db = sqlite3.connect(sys.argv[1].replace(".json", ".db"))
steps = db.execute("SELECT tokens, n_prefill FROM v_steps WHERE run_id = 1").fetchall()
check(steps and max(t for t, _ in steps) <= 512, f"sample: every step within the budget of 512 ids ({max(t for t, _ in steps)})")
check(sum(p > 0 for _, p in steps) >= 3, "sample: the long prompt prefilled over several steps")
ev = db.execute("SELECT request, name, args FROM slices WHERE run_id = 1 AND layer = 6 AND name IN ('preempt', 'resume', 'prefix_cache_hit') "
                "ORDER BY ts_ns").fetchall()
pre = [(r, json.loads(a)) for r, n, a in ev if n == "preempt"]
res = [(r, json.loads(a)) for r, n, a in ev if n == "resume"]
check(len(pre) == 1 and [r for r, _ in res] == [r for r, _ in pre], f"sample: one request preempted and resumed: {pre} {res}")
if pre and res:
    p, q = pre[0][1], res[0][1]
    check((p["computed_tokens"], p["generated"], q["tokens"], q["cached_tokens"], q["chunk"]) == (320, 1, 321, 288, 33),
          f"sample: the key's question 8: preempted at 320 ids and 1 token, resumed with 288 of 321 cached, 33 computed: {p} {q}")
hits = sorted(r for r, n, _ in ev if n == "prefix_cache_hit")
check(set(hits) == {3, 4, 5, 6, 7}, f"sample: every chat but the first finds the system prompt: {hits}")

done()
