#!/bin/sh
# Data parallelism, modeled (--dp N, issue 46): N engine replicas behind one
# server, checked in the trace and /metrics against what the load balancers
# must do by their rules, not hipath's earlier output:
# - --dp 1 is the run without it: the same GPU slices and modeled times, the
#   same steps, no replica's arg or counter;
# - round_robin gives requests to the replicas in turn; shortest_queue to the
#   lowest 4 x waiting + running (vLLM's score), the lowest replica on a tie:
#   with a long request A running on replica 0, short B, C, D sent one after
#   another go 1, 0, 1 in turn and 1, 1, 1 by score;
# - each replica runs on its own GPUs (tp 2: GPUs 2r, 2r + 1) with its own
#   KV pool; /metrics' per-replica computed tokens equal the sum of that
#   replica's steps' tokens in the trace, and the imbalance is their max over
#   their mean; the trace has each replica's running/waiting counters;
# - --dp is refused on a device that computes data, and bad values, in one line.
cd "$(dirname "$0")/.." || exit 1
. tests/server/serve.sh
setup check_dp
command -v sqlite3 >/dev/null && command -v curl >/dev/null || { echo "skip: sqlite3 or curl missing"; exit 77; }
tmp=$OUT
CFG=tests/data/llama-2-7b.config.json
A="--analytic --config $CFG --dtype bf16 --device h100"

# 1. --dp 1 is the run without it.
for dp in none 1; do
  flag=; [ $dp = none ] || flag="--dp $dp"
  "$HIPATH" run $A $flag --max-tokens 4 --ignore-eos --trace-db "$tmp/a-$dp.db" Hi > /dev/null 2> "$tmp/a-$dp.err" ||
    { echo "FAIL: run $flag: $(tail -n 1 "$tmp/a-$dp.err")"; fail=1; }
done
q="SELECT name || ' ' || dur_ns FROM slices WHERE layer = 1 ORDER BY ts_ns, name"
s="SELECT step || ' ' || json_remove(args, '$.modeled_ns') FROM slices WHERE layer = 6 AND name = 'step' ORDER BY step"
c="SELECT DISTINCT name FROM counters ORDER BY name"
if [ "$(sqlite3 "$tmp/a-none.db" "$q")" = "$(sqlite3 "$tmp/a-1.db" "$q")" ] && [ "$(sqlite3 "$tmp/a-none.db" "$s")" = "$(sqlite3 "$tmp/a-1.db" "$s")" ] &&
   [ "$(sqlite3 "$tmp/a-none.db" "$c")" = "$(sqlite3 "$tmp/a-1.db" "$c")" ] && ! grep -q "data parallel" "$tmp/a-1.err"; then
  echo "ok --dp 1: the same GPU slices and modeled times, the same steps and counters, no replica named"
else
  echo "FAIL: --dp 1 is not the run without --dp"; fail=1
fi

# 2. Two replicas of tp 2, each load balancer.
for lb in round_robin shortest_queue; do
  db="$tmp/$lb.db"
  start $lb "" $A --tp 2 --dp 2 --dp-lb $lb --trace-db "$db"
  python3 tests/server/dp_lb.py "http://127.0.0.1:$PORT" > "$tmp/usage" || { echo "FAIL $lb: the client failed"; fail=1; }
  for _ in $(seq 1 100); do   # A's cancellation: its replica's next step
    curl -s "http://127.0.0.1:$PORT/metrics" > "$tmp/metrics"
    grep -q '^hipath_requests_running 0$' "$tmp/metrics" && break
    sleep 0.05
  done
  stop $lb
  python3 - "$db" "$lb" "$tmp/metrics" "$tmp/usage" <<'PY' || { fail=1; tail -n 3 "$tmp/$lb.log"; }
import json, re, sqlite3, sys
db, lb, metrics, usage = sqlite3.connect(sys.argv[1]), sys.argv[2], open(sys.argv[3]).read(), json.load(open(sys.argv[4]))
err = []
steps = [(json.loads(a)) for (a,) in db.execute("SELECT args FROM slices WHERE layer = 6 AND name = 'step' ORDER BY ts_ns")]
where, tokens = {}, [0, 0]
for a in steps:
    tokens[a["engine"]] += a["tokens"]
    for r in json.loads(a["requests"]):
        if where.setdefault(r, a["engine"]) != a["engine"]: err.append(f"request {r} on both replicas")
# A (request 1) first, then B, C, D: in turn, or by 4 x waiting + running (A runs on replica 0)
want = {"round_robin": {1: 0, 2: 1, 3: 0, 4: 1}, "shortest_queue": {1: 0, 2: 1, 3: 1, 4: 1}}[lb]
if where != want: err.append(f"requests went to replicas {where}, {lb} sends them to {want}")
# B, C, D computed their prompts and 3 decodes each (the 4th token is sampled, not computed)
short = {2: usage[0], 3: usage[1], 4: usage[2]}
for r, u in short.items():
    done = sum(a["tokens"] for a in steps if a["engine"] == where.get(r) and json.loads(a["requests"]) == [r])
    if where.get(r) != where.get(1) and done != u["prompt_tokens"] + u["completion_tokens"] - 1:
        err.append(f"request {r}: its replica's steps computed {done} tokens alone, not {u['prompt_tokens']} + {u['completion_tokens']} - 1")
# /metrics: each replica's tokens as the trace sums them, and their imbalance
m = dict(re.findall(r'^hipath_dp_computed_tokens_total\{engine="(\d)"\} (\d+)$', metrics, re.M))
if [int(m.get(str(r), -1)) for r in (0, 1)] != tokens: err.append(f"/metrics says {m} tokens a replica, the trace's steps {tokens}")
imb = re.search(r'^hipath_dp_load_imbalance (\S+)$', metrics, re.M)
if not imb or abs(float(imb.group(1)) - max(tokens) / (sum(tokens) / 2)) > 1e-4 * float(imb.group(1)):
    err.append(f"imbalance {imb and imb.group(1)}, by hand {max(tokens) / (sum(tokens) / 2):.6g}")
# each replica on its own two GPUs: replica r's kernels on GPUs 2r and 2r + 1 only
lanes = [n for (n,) in db.execute("SELECT name FROM tracks WHERE layer = 1 ORDER BY track")]
if lanes != [f"GPU {g}/stream 0" for g in range(4)]: err.append(f"GPU lanes {lanes}")
busy = dict(db.execute("SELECT track, count(*) FROM slices WHERE layer = 1 AND step IS NOT NULL GROUP BY track"))
if not all(busy.get(t, 0) > 0 for t in range(1, 5)): err.append(f"kernels per lane {busy}")
counters = {n for (n,) in db.execute("SELECT DISTINCT name FROM counters")}
need = {f"engine {r}/{c}" for r in (0, 1) for c in ("running", "waiting", "computed_tokens", "kv_blocks_used")}
if need - counters: err.append(f"no trace counters {sorted(need - counters)}")
if err: sys.exit(f"FAIL --dp 2 --dp-lb {lb}: " + "; ".join(err))
print(f"ok --dp 2 --tp 2 --dp-lb {lb}: requests A B C D to replicas {[where[r] for r in (1, 2, 3, 4)]}; "
      f"computed tokens {tokens} (trace = /metrics), imbalance {float(imb.group(1)):.3f}; 4 GPU lanes, per-replica counters")
PY
done

# 3. Refusals, one line each.
refuse "analytic:PROFILE only" --device sim:h100 --dp 2
refuse "not a modeled GPU" --device cpu --dp 2
refuse "1 to 64 replicas" $A --dp 0
refuse "round_robin or shortest_queue" $A --dp 2 --dp-lb fastest
[ $fail = 0 ] && echo "check_dp: passed"
exit $fail
