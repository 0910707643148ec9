#!/bin/sh
# Expert parallelism, modeled (--ep N with --tp N, issue 46), checked in the
# trace against the profile JSON and the routing the trace records, not
# hipath's earlier output (Qwen3-30B-A3B, analytic: 48 MoE layers, 128 experts, top 8):
# - --ep 1 is the run without it: the same GPU slices and times, the same steps;
# - a MoE layer: attention's reduce-scatter, the dispatch all-to-all, each
#   GPU's grouped matmul, the combine all-to-all, the all-gather; no all-reduce;
# - every all-to-all: the bytes each GPU sends and receives are those its
#   tokens' experts imply (token t sent by GPU t N / T, expert e on GPU
#   e / (E / N), a row of dim f32 each way), recomputed here from each
#   decode step's token_experts, and it lasts the busiest GPU's bytes /
#   beta_ring + (N - 1) alpha (beta_ring by the topology's rule);
# - each GPU's moe_gemm does 2 x its rows x N x K FLOPs;
# - Zipf routing (--expert-skew 2) makes GPU 0, which holds experts 0-31,
#   the straggler: its expert matmuls take longer than the rest's, and the
#   decode step longer than with uniform routing;
# - refusals in one line: experts not divisible, --ep without --tp, a dense model.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
. tests/server/serve.sh
setup check_ep
command -v sqlite3 >/dev/null || { echo "skip: sqlite3 missing"; exit 77; }
Q=tests/data/qwen3-30b-a3b.config.json
A="--analytic --config $Q --dtype bf16"
run() {   # db args...
  db=$1; shift
  "$HIPATH" run $A "$@" --max-tokens 4 --ignore-eos --trace-db "$OUT/$db.db" Hi > /dev/null 2> "$OUT/$db.err" ||
    { echo "FAIL: run $*: $(tail -n 1 "$OUT/$db.err")"; fail=1; }
}

# 1. --ep 1 is the run without it.
run none --device h100 --tp 2
run one --device h100 --tp 2 --ep 1
q="SELECT name || ' ' || dur_ns FROM slices WHERE layer = 1 ORDER BY ts_ns, name"
s="SELECT step || ' ' || json_remove(args, '$.modeled_ns') FROM slices WHERE layer = 6 AND name = 'step' ORDER BY step"
if [ "$(sqlite3 "$OUT/none.db" "$q")" = "$(sqlite3 "$OUT/one.db" "$q")" ] && [ "$(sqlite3 "$OUT/none.db" "$s")" = "$(sqlite3 "$OUT/one.db" "$s")" ]; then
  echo "ok --ep 1: the same GPU slices and modeled times, the same steps"
else
  echo "FAIL: --ep 1 is not the run without --ep"; fail=1
fi

# 2-3. 4 H100s (NVSwitch) and 2 MI300Xs (xGMI mesh), uniform; 4 H100s skewed.
run h100-4 --device h100 --tp 4 --ep 4
run mi300x-2 --device mi300x --tp 2 --ep 2
run h100-4-skew --device h100 --tp 4 --ep 4 --expert-skew 2
for r in "h100-4 h100 4" "mi300x-2 mi300x 2" "h100-4-skew h100 4"; do
  set -- $r
  python3 - "$OUT/$1.db" "layers/gpu/profiles/$2.json" "$3" $Q "$OUT/h100-4.db" <<'PY' || fail=1
import json, sqlite3, sys
db, prof, N, cfg = sqlite3.connect(sys.argv[1]), json.load(open(sys.argv[2])), int(sys.argv[3]), json.load(open(sys.argv[4]))
E, dim, moe_ffn, L = cfg["num_experts"], cfg["hidden_size"], cfg["moe_intermediate_size"], cfg["num_hidden_layers"]
tag = f"{prof['name']} x {N}" + (" skewed" if "skew" in sys.argv[1] else "")
err = []
I = prof["interconnect"]
ring = {"switch": I["links"] * I["link_bytes_per_s"], "mesh": min(I["links"], N - 1) * I["link_bytes_per_s"], "host": I["link_bytes_per_s"]}[I["topology"]]
names = lambda step: [n for (n,) in db.execute("SELECT name FROM slices WHERE layer = 1 AND track = 1 AND step = ? ORDER BY ts_ns", (step,))]
seq = names(1)
want = {"reduceScatter": L, "allGather": L, "allToAll": 2 * L, "allReduce": 0}
got = {n: sum(1 for x in seq if x == n) for n in want}
if got != {**want, "allReduce": got["allReduce"] and 1}:   # the embedding's all-reduce stays
    err.append(f"decode step's collectives {got}, want {want} and the embedding's all-reduce")
# every all-to-all: its duration from its busiest GPU's bytes
a2a = {}
for track, step, ts, dur, a in db.execute("SELECT track, step, ts_ns, dur_ns, args FROM slices WHERE layer = 1 AND name = 'allToAll' ORDER BY ts_ns"):
    a = json.loads(a)
    a2a.setdefault((step, ts), {})[track - 1] = (a["sent_bytes"], a["received_bytes"], dur, a["bytes"])
for (step, ts), per in a2a.items():
    most = max(max(s, r) for s, r, _, _ in per.values())
    t = most / ring + (N - 1) * I["latency_s"]
    if sorted(per) != list(range(N)) or any(abs(d - t * 1e9) > 1 or b != most for _, _, d, b in per.values()):
        err.append(f"step {step}: all-to-all of {most:.0f} B busiest took {[p[2] for p in per.values()]} ns, by hand {t * 1e9:.1f}"); break
# decode steps: each GPU's bytes and rows from the routing the trace records
tops = db.execute("SELECT step, args FROM slices WHERE layer = 4 AND name = 'moe_topk' AND step > 0 ORDER BY ts_ns").fetchall()
gemm = {}
for track, step, ts, a in db.execute("SELECT track, step, ts_ns, args FROM slices WHERE layer = 1 AND name = 'moe_gemm' AND step > 0 ORDER BY ts_ns"):
    gemm.setdefault((step, ts), {})[track - 1] = json.loads(a)["flops"]
by_step = {}
for (step, ts), per in sorted(a2a.items()):
    by_step.setdefault(step, []).append(per)
g_by_step = {}
for (step, ts), per in sorted(gemm.items()):
    g_by_step.setdefault(step, []).append(per)
checked = 0
for i, (step, a) in enumerate(tops):
    a = json.loads(a)
    toks = [list(map(int, t.split())) for t in a["token_experts"].split("|")]
    T, layer_i = len(toks), sum(1 for s2, _ in tops[:i] if s2 == step)
    sent, recv, rows = [0] * N, [0] * N, [0] * N
    for t, experts in enumerate(toks):
        src = t * N // T
        for e in experts:
            dst = e // (E // N)
            rows[dst] += 1
            if src != dst: sent[src] += 4 * dim; recv[dst] += 4 * dim
    dispatch, combine = by_step[step][2 * layer_i], by_step[step][2 * layer_i + 1]
    if [dispatch[g][:2] for g in range(N)] != list(zip(sent, recv)) or [combine[g][:2] for g in range(N)] != list(zip(recv, sent)):
        err.append(f"step {step} layer {layer_i}: all-to-all bytes {[dispatch[g][:2] for g in range(N)]}, by the routing {list(zip(sent, recv))}"); break
    up = g_by_step[step][3 * layer_i + 1]   # gate, up, down: up's K is dim, N the experts' FFN
    if any(abs(up.get(g, 0) - 2 * rows[g] * moe_ffn * dim) > 1e-6 * max(1, up.get(g, 0)) for g in range(N)):
        err.append(f"step {step} layer {layer_i}: moe_gemm FLOPs {up}, by the rows {rows}"); break
    checked += 1
if not checked: err.append("no decode step's routing checked")
# the straggler: GPU 0's expert matmuls against the others'
busy = [db.execute("SELECT sum(dur_ns) FROM slices WHERE layer = 1 AND track = ? AND name = 'moe_gemm'", (g + 1,)).fetchone()[0] or 0
        for g in range(N)]
step_ns = lambda d: d.execute("SELECT sum(dur_ns) FROM slices WHERE layer = 1 AND track = 1 AND step = 2").fetchone()[0]
note = ""
if "skew" in sys.argv[1]:
    uni = sqlite3.connect(sys.argv[5])
    rest = sum(busy[1:]) / (N - 1)
    if busy[0] < 2 * rest or step_ns(db) <= step_ns(uni):
        err.append(f"no straggler: GPU 0's expert matmuls {busy[0]} ns, the others' mean {rest:.0f}; decode step {step_ns(db)} ns, uniform {step_ns(uni)}")
    note = f"; GPU 0's expert matmuls {busy[0] / 1e6:.2f} ms against {rest / 1e6:.2f} the others', a decode step {step_ns(db) / 1e6:.2f} ms against {step_ns(uni) / 1e6:.2f} uniform"
if err: sys.exit(f"FAIL {tag}: " + "; ".join(err))
print(f"ok {tag}: {len(a2a)} all-to-alls at the busiest GPU's bytes / {ring / 1e9:g} GB/s + {N - 1} x {I['latency_s'] * 1e6:g} us; "
      f"{checked} MoE layers' bytes and rows a GPU from their routing{note}")
PY
done

# 4. Refusals, one line each (a 16-GPU server for Mixtral's 8 experts).
python3 -c "import json; p = json.load(open('layers/gpu/profiles/h100.json')); p['interconnect']['max_gpus'] = 16; json.dump(p, open('$OUT/h100x16.json', 'w'))"
refuse "must divide the 8 experts" --analytic --config tests/data/mixtral-8x7b.config.json --device "$OUT/h100x16.json" --tp 16 --ep 16
refuse "give --tp 2 too" $A --device h100 --ep 2
refuse "no experts" --analytic --config tests/data/llama-2-7b.config.json --device h100 --tp 2 --ep 2
refuse "Zipf exponent" $A --device h100 --expert-skew -1
[ $fail = 0 ] && echo "check_ep: passed"
exit $fail
