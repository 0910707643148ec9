#!/bin/sh
# Tensor parallelism, modeled (--tp N, issue 30), checked in the trace
# against the profile's own figures and hand arithmetic, not hipath's
# earlier output:
# - --tp 1 is today's run: the same reply, the same GPU slices and times,
#   one "stream 0" track, no collective; --tp 2 on sim computes the same reply;
# - N GPUs: N lane groups (a column split launches 1/N of the grid, a row
#   split the whole grid, each workgroup 1/N of the input); "GPU g/stream 0", the same kernels on each;
#   2 n_layers + 1 all-reduces a forward, each lasting the ring's
#   2(N-1)/N x bytes / beta_ring + 2(N-1) alpha (beta_ring by the
#   topology's rule, from the profile JSON); the gather (N-1) bytes / beta_ring
#   + alpha; a split op's kernel does 1/N of its op's FLOPs, a norm all;
# - flows fan out from the forward to each GPU and join at GPU 0's gather;
# - Perfetto (protoc --decode): a group track per GPU under layer 1;
# - a decode step's modeled GPU busy time falls with N (modeled values only);
# - impossible splits are refused with a one-line reason.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
command -v sqlite3 >/dev/null && command -v protoc >/dev/null || { echo "skip: sqlite3 or protoc missing"; exit 77; }
tmp=$(mktemp -d) || exit 1
. tests/server/serve.sh
OUT=$tmp
trap 'rm -rf "$tmp"' EXIT
fail=0

# 1. --tp 1 is the run without it; --tp 2 on sim computes the same reply.
for tp in none 1 2; do
  flag=; [ $tp = none ] || flag="--tp $tp"
  "$HIPATH" run --device sim:h100 $flag --max-tokens 8 --temperature 0 --trace-db "$tmp/sim-$tp.db" Hi \
    > "$tmp/sim-$tp.txt" 2> "$tmp/sim-$tp.err" || { echo "FAIL: sim:h100 $flag: $(tail -n 1 "$tmp/sim-$tp.err")"; fail=1; }
done
for tp in 1 2; do
  cmp -s "$tmp/sim-none.txt" "$tmp/sim-$tp.txt" && echo "ok sim:h100 --tp $tp: the same reply" ||
    { echo "FAIL: sim:h100 --tp $tp replied $(head -n 1 "$tmp/sim-$tp.txt"), without --tp $(head -n 1 "$tmp/sim-none.txt")"; fail=1; }
done
q="SELECT name || ' ' || dur_ns FROM slices WHERE layer = 1 ORDER BY ts_ns, name"
if [ "$(sqlite3 "$tmp/sim-none.db" "$q")" = "$(sqlite3 "$tmp/sim-1.db" "$q")" ] &&
   [ "$(sqlite3 "$tmp/sim-1.db" "SELECT group_concat(name) FROM tracks WHERE layer = 1")" = "stream 0" ] &&
   [ "$(sqlite3 "$tmp/sim-1.db" "SELECT count(*) FROM slices WHERE name IN ('allReduce', 'ncclAllReduce', 'gather')")" = 0 ]; then
  echo "ok --tp 1: the same GPU slices and modeled times, one stream 0, no collective"
else
  echo "FAIL: --tp 1 is not the run without --tp"; fail=1
fi

# Past N = KV heads a GPU keeps one KV head, repeated (as vLLM): its KV work is
# 1/KV heads of the op's, its query work 1/N (tiny-hi: 4 heads, 2 KV heads).
"$HIPATH" run --device sim:h100 --tp 4 --max-tokens 3 --trace-db "$tmp/kv4.db" Hi > /dev/null 2>&1 || { echo "FAIL: sim:h100 --tp 4"; fail=1; }
python3 - "$tmp/kv4.db" models/tiny-hi/config.json <<'PY' || fail=1
import json, sqlite3, sys
db, c = sqlite3.connect(sys.argv[1]), json.load(open(sys.argv[2]))
N, kv = 4, min(4, c.get("num_key_value_heads", c["num_attention_heads"]))
ops = dict(db.execute("SELECT name, sum(json_extract(args, '$.flops')) FROM slices WHERE layer = 4 AND step = 1 GROUP BY name"))
gpu = dict(db.execute("SELECT json_extract(args, '$.op'), sum(json_extract(args, '$.flops')) FROM slices "
                      "WHERE layer = 1 AND track = 1 AND step = 1 GROUP BY 1"))
bad = [(op, share) for op, share in [("q_proj", N), ("k_proj", kv), ("v_proj", kv), ("attention", kv)]
       if abs(gpu[op] * share - ops[op]) > 1e-6 * ops[op]]
if bad: sys.exit(f"FAIL --tp 4 past {kv} KV heads: not 1/share of the op: {bad}")
print(f"ok --tp 4 past {kv} KV heads: q_proj 1/{N} a GPU, k v and attention 1/{kv}")
PY

# 2. N GPUs on a switch (NVLink), a mesh (xGMI) and the host (PCIe).
for run in "h100 1" "h100 4" "mi300x 2" "w7900 2" "h100 2"; do
  set -- $run
  "$HIPATH" run --analytic --config tests/data/llama-2-7b.config.json --dtype bf16 --device "$1" --tp "$2" \
    --max-tokens 3 --ignore-eos --trace-db "$tmp/$1-$2.db" --perfetto "$tmp/$1-$2.pftrace" Hi > /dev/null 2> "$tmp/err" ||
    { echo "FAIL: analytic $1 --tp $2: $(tail -n 1 "$tmp/err")"; fail=1; continue; }
  [ "$2" = 1 ] && continue
  protoc --decode=perfetto.protos.Trace -I trace trace/perfetto_trace.proto < "$tmp/$1-$2.pftrace" > "$tmp/$1-$2.txt" 2>/dev/null ||
    { echo "FAIL: protoc cannot decode $1 --tp $2"; fail=1; continue; }
  python3 - "$tmp/$1-$2.db" "layers/gpu/profiles/$1.json" "$2" "$tmp/$1-$2.txt" "$tmp/$1-1.db" <<'PY' || fail=1
import json, os, re, sqlite3, sys
from collections import Counter
db, prof, N, pf = sqlite3.connect(sys.argv[1]), json.load(open(sys.argv[2])), int(sys.argv[3]), open(sys.argv[4]).read()
cfg = json.load(open("tests/data/llama-2-7b.config.json"))
L = prof["interconnect"]
tag = f"{prof['name']} x{N}"
err = []
tracks = [r[0] for r in db.execute("SELECT name FROM tracks WHERE layer = 1 ORDER BY track")]
if tracks != [f"GPU {g}/stream 0" for g in range(N)]:
    err.append(f"layer 1's tracks {tracks}")
# the same kernels, at the same modeled times, on every GPU
per = [Counter(db.execute("SELECT name, ts_ns, dur_ns FROM slices WHERE layer = 1 AND track = ? AND name != 'copy D2H'", (g + 1,)))
       for g in range(N)]
if any(p != per[0] for p in per):
    err.append("the GPUs' streams differ")
# the ring, by hand from the profile JSON
link = L["link_bytes_per_s"]
ring = {"switch": L["links"] * link, "mesh": min(L["links"], N - 1) * link, "host": link}[L["topology"]]
alpha = L["latency_s"]
forwards = db.execute("SELECT count(*) FROM slices WHERE layer = 5 AND name = 'forward'").fetchone()[0]
ar = db.execute("SELECT dur_ns, json_extract(args, '$.bytes') FROM slices WHERE layer = 1 AND track = 1 AND name = 'allReduce'").fetchall()
if len(ar) != forwards * (2 * cfg["num_hidden_layers"] + 1):
    err.append(f"{len(ar)} all-reduces in {forwards} forwards, not 2 x {cfg['num_hidden_layers']} + 1 each")
for dur, nbytes in ar:
    want = 2 * (N - 1) / N * nbytes / ring + 2 * (N - 1) * alpha
    if abs(dur - want * 1e9) > 1:
        err.append(f"all-reduce of {nbytes:.0f} B took {dur} ns, the ring {want * 1e9:.1f}"); break
for dur, nbytes in db.execute("SELECT dur_ns, json_extract(args, '$.bytes') FROM slices WHERE layer = 1 AND track = 1 AND name = 'gather'"):
    want = (N - 1) * nbytes / ring + alpha
    if abs(dur - want * 1e9) > 1: err.append(f"gather of {nbytes:.0f} B took {dur} ns, by hand {want * 1e9:.1f}"); break
if not ar: err.append("no all-reduce")
# a split op's kernel is 1/N of its op; a norm runs whole on every GPU
ops = dict(db.execute("SELECT name, sum(json_extract(args, '$.flops')) FROM slices WHERE layer = 4 AND step = 1 GROUP BY name"))
gpu = dict(db.execute("SELECT json_extract(args, '$.op'), sum(json_extract(args, '$.flops')) FROM slices "
                      "WHERE layer = 1 AND track = 1 AND step = 1 AND json_extract(args, '$.op') IS NOT NULL GROUP BY 1"))
for op, share in [("q_proj", N), ("o_proj", N), ("down_proj", N), ("lm_head", N), ("attention", N), ("attn_norm", 1)]:
    if abs(gpu.get(op, -1) * share - ops.get(op, 0)) > 1e-6 * ops.get(op, 1):
        err.append(f"{op}: GPU 0 does {gpu.get(op)} FLOPs of the op's {ops.get(op)}, not 1/{share}")
# a column split launches 1/N of the grid; a row split (o, down) the whole grid, each workgroup 1/N of K
one = sys.argv[5]
if os.path.exists(one):
    q = ("SELECT json_extract(args, '$.op'), max(json_extract(args, '$.workgroups')) FROM slices WHERE layer = 1 AND track = 1 "
         "AND step = 1 GROUP BY 1")
    g1, gn = dict(sqlite3.connect(one).execute(q)), dict(db.execute(q))
    for op, want in [("q_proj", -(-g1["q_proj"] // N)), ("gate_proj", -(-g1["gate_proj"] // N)), ("o_proj", g1["o_proj"]), ("down_proj", g1["down_proj"])]:
        if gn[op] != want: err.append(f"{op}: {gn[op]} workgroups a GPU, not {want}")
# v_steps' device time is one GPU's (each runs the same), not the sum of N
vs = dict(db.execute("SELECT step, gpu_ns FROM v_steps"))
g0 = dict(db.execute("SELECT step, sum(dur_ns) FROM slices WHERE layer = 1 AND track = 1 AND kind = 'slice' AND step IS NOT NULL GROUP BY step"))
if not vs or any(vs[k] != g0.get(k) for k in vs):
    err.append(f"v_steps.gpu_ns {vs} is not GPU 0's {g0}")
# flows: the forward fans out to every GPU; every other GPU's gather joins GPU 0's
fan = db.execute("SELECT count(DISTINCT b.track) FROM flows f JOIN slices a ON a.id = f.from_slice JOIN slices b ON b.id = f.to_slice "
                 "WHERE a.layer = 5 AND a.name = 'forward' AND b.layer = 1 AND a.step = 1").fetchone()[0]
join = db.execute("SELECT count(*) FROM flows f JOIN slices a ON a.id = f.from_slice JOIN slices b ON b.id = f.to_slice "
                  "WHERE a.name = 'gather' AND b.name = 'gather' AND b.track = 1 AND a.track != 1 AND a.step = 1").fetchone()[0]
if fan != N or join != N - 1:
    err.append(f"flows: forward to {fan} GPUs, {join} into GPU 0's gather")
# Perfetto: "1 gpu" holds a group per GPU, each holding its stream
uuid = dict((n, u) for u, n in re.findall(r'uuid: (\d+)\s+name: "([^"]+)"', pf))
parent = dict((u, p) for u, p in re.findall(r'uuid: (\d+)\s+name: "[^"]+"\s+parent_uuid: (\d+)', pf))
groups = [g for g in range(N) if parent.get(uuid.get(f"GPU {g}")) == uuid.get("1 gpu")]
streams = re.findall(r'uuid: (\d+)\s+name: "stream 0"\s+parent_uuid: (\d+)', pf)
if len(groups) != N or sorted(p for _, p in streams) != sorted(uuid[f"GPU {g}"] for g in range(N)):
    err.append(f"Perfetto: {len(groups)} GPU groups under layer 1, streams under {len(streams)}")
if err:
    sys.exit(f"FAIL {tag}: " + "; ".join(err))
print(f"ok {tag}: {len(ar)} all-reduces on the ring ({ring / 1e9:g} GB/s, alpha {alpha * 1e6:g} us), gathers, "
      f"1/{N} shards, fan-out and join, {N} Perfetto lane groups")
PY
done
# 3. A decode step's modeled GPU busy time falls as the 7B splits (H100: 1 > 2 > 4).
busy() { sqlite3 "$tmp/h100-$1.db" "SELECT sum(dur_ns) FROM slices WHERE layer = 1 AND track = 1 AND step = 2"; }
b1=$(busy 1) b2=$(busy 2) b4=$(busy 4)
if [ -n "$b1" ] && [ "$b1" -gt "$b2" ] && [ "$b2" -gt "$b4" ]; then
  echo "ok decode step, GPU busy (modeled): $b1 ns at 1 GPU, $b2 at 2, $b4 at 4"
else
  echo "FAIL: decode step GPU busy $b1 / $b2 / $b4 ns at 1 / 2 / 4 GPUs"; fail=1
fi

# 4. serve --analytic --tp 2 answers an OpenAI request; its trace has both GPUs' lanes.
"$HIPATH" serve --analytic --config tests/data/llama-2-7b.config.json --dtype bf16 --device h100 --tp 2 --port 0 \
  --trace-db "$tmp/serve.db" > "$tmp/serve.log" 2>&1 &
pid=$! port=
for _ in $(seq 1 300); do
  port=$(sed -n 's/.*at http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' "$tmp/serve.log")
  [ -n "$port" ] || ! kill -0 $pid 2>/dev/null && break
  sleep 0.1
done
reply=$(curl -s "http://127.0.0.1:$port/v1/chat/completions" -H "Content-Type: application/json" \
  -d '{"model": "llama-2-7b", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "ignore_eos": true}')
kill -TERM $pid 2>/dev/null; wait $pid
python3 - "$reply" "$tmp/serve.db" <<'PY' || { fail=1; tail -n 5 "$tmp/serve.log"; }
import json, sqlite3, sys
try: r = json.loads(sys.argv[1])
except ValueError: sys.exit(f"FAIL serve --tp 2: no JSON reply: {sys.argv[1][:200]!r}")
db = sqlite3.connect(sys.argv[2])
tracks = [t for (t,) in db.execute("SELECT name FROM tracks WHERE layer = 1 ORDER BY track")]
forwards = db.execute("SELECT count(*) FROM slices WHERE layer = 5 AND name = 'forward'").fetchone()[0]
ar = db.execute("SELECT count(*) FROM slices WHERE layer = 1 AND name = 'allReduce'").fetchone()[0]
calls = db.execute("SELECT count(*) FROM slices WHERE layer = 2 AND name = 'ncclAllReduce'").fetchone()[0]
if r.get("usage", {}).get("completion_tokens") != 3 or tracks != ["GPU 0/stream 0", "GPU 1/stream 0"] or forwards != 3 \
        or ar != 2 * forwards * (2 * 32 + 1) or calls != forwards * (2 * 32 + 1):
    sys.exit(f"FAIL serve --tp 2: usage {r.get('usage')}, tracks {tracks}, {forwards} forwards, {ar} allReduce slices, {calls} calls")
print(f"ok serve --analytic --tp 2: 3 tokens over HTTP; {forwards} forwards, {calls} ncclAllReduce calls, each on both GPUs")
PY

# 5. Refusals, one line each.
python3 -c "import json; p = json.load(open('layers/gpu/profiles/h100.json')); p.pop('interconnect'); json.dump(p, open('$tmp/nolink.json', 'w'))"
A="--analytic --config tests/data/llama-2-7b.config.json"
refuse "32 attention heads" $A --device h100 --tp 3
refuse "at most 4" $A --device w7900 --tp 8
refuse "no interconnect" $A --device "$tmp/nolink.json" --tp 2
refuse "not a modeled GPU" --device cpu --tp 2
refuse "1 to 64" $A --device h100 --tp 0
[ $fail = 0 ] && echo "check_tp_trace: passed"
exit $fail
