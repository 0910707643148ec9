"""replay_by_hand.py -- the first steps of a replay, by hand (check_replay.py):
vLLM V1's scheduling policy as hipath's sheets state it, written apart from
the C, run on the recorded arrivals and engine settings, and the analytic
device's formulas (layers/gpu/sim.h, docs/devices.md) on the profile JSON.

schedule(): each step holds, in this order, one id of every running request
that is decoding, the next chunk of every running request still in its
prompt, then waiting requests in arrival order while seats are left, each a
chunk of its prompt, while the step's budget (max_num_batched_tokens) lasts;
a request that arrived by the step's start waits in the queue. The clock
advances by each step's device time and jumps to the next arrival when
nothing is in the engine; a request's first token comes at the end of the
step that computes its prompt's last id, then one a step.

kernel_s(): a kernel of G workgroups (in `waves` rounds over the CUs) doing
F FLOPs and R bytes takes max(waves (F/G) / (Pi/CUs), R / (beta min(1,
G/CUs))) + the launch latency, Pi the bf16 peak for a GEMM, fp32's for any
other kernel; a copy takes its bytes over the host link (H2D, D2H) or twice
its bytes at beta (D2D), plus the link's latency."""
import math


def schedule(reqs, budget, seats, device_s):
    """reqs: [(arrival s, prompt ids, output tokens)], in arrival order;
    device_s(k): step k's device time. Yields, a step at a time, (the
    step's chunks [(i, from, to)], the decoding requests [i], the clock at
    its end); finally the first and last token's times per request."""
    t, nxt, waiting, running = 0.0, 0, [], []
    done = [0] * len(reqs)          # prompt ids computed
    out = [0] * len(reqs)
    first, last, k = [None] * len(reqs), [None] * len(reqs), 0
    while nxt < len(reqs) or waiting or running:
        while nxt < len(reqs) and reqs[nxt][0] <= t:
            waiting.append(nxt)
            nxt += 1
        if not waiting and not running:
            t = reqs[nxt][0]
            continue
        left = budget
        decoding = [i for i in running if done[i] == reqs[i][1]][:left]
        left -= len(decoding)
        chunks = []
        for i in running:
            if done[i] < reqs[i][1] and left > 0:
                n = min(reqs[i][1] - done[i], left)
                chunks.append((i, done[i], done[i] + n))
                left -= n
        while waiting and left > 0 and len(running) < seats:
            i = waiting.pop(0)
            running.append(i)
            n = min(reqs[i][1], left)
            chunks.append((i, 0, n))
            left -= n
        t += device_s(k)
        k += 1
        for i, _, to in chunks:
            done[i] = to
        for i in decoding + [i for i, _, to in chunks if to == reqs[i][1]]:
            out[i] += 1
            if out[i] == 1:
                first[i] = t
            if out[i] == reqs[i][2]:
                last[i] = t
                running.remove(i)
        yield chunks, decoding, t
    yield first, last


def kernel_s(gpu, name, cls, a):
    """A layer-1 slice's modeled time (s) from its args, by sim.h's formula."""
    beta, lat = gpu["memory_bandwidth_bytes_per_s"], gpu["launch_latency_s"]
    if name.startswith("copy"):
        return (2 * a["bytes"] / beta if a["direction"] == "D2D" else a["bytes"] / gpu["host_link_bytes_per_s"]) + lat
    cus, G = gpu["compute_units"], a["workgroups"]
    pi = gpu["peak_flops"]["bf16" if cls.startswith("gemm") else "fp32"]
    waves = math.ceil(G / cus)
    return max(waves * (a["flops"] / G) / (pi / cus), a["bytes"] / (beta * min(1, G / cus))) + lat
