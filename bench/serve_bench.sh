#!/bin/sh
# Serving throughput and latency of `hipath serve` at concurrency 1, 2, 4, 8,
# 16, 32: streaming chat requests of a fixed length (ignore_eos, --max-tokens,
# temperature 1 so the text keeps flowing past an end-of-turn), timed
# at the client (tests/server/load.py). Throughput rises with the batch while
# each user's time per output token rises too: both are reported, with what
# says where the rise stops: throughput over concurrency 1's, the mean batch
# of an engine step and its time (/metrics), the CPU the server and the
# clients took (cores, from /proc and load.py: the clients share the machine),
# and the tokens a CPU-second of the server's made (what other processes on
# the cores do not change: where it stops rising, compute is the limit).
# usage: bench/serve_bench.sh [MODEL_DIR] (default models/tiny-hi)
# env: HIPATH (default build/hipath), MAX_TOKENS (64), LEVELS ("1 2 4 8 16 32"),
#      REQUESTS_PER_CLIENT (8), OMP_WAIT_POLICY / GOMP_SPINCOUNT (unset: hipath's own,
#      passive after a spin of ~100 us: kernels/cpu/threads.c),
#      DEVICE (cpu: the batch's compute is this host's), TRACE (unset: --no-trace,
#      the serving alone; 1: serve's default trace, whose cost then shows here),
#      SERVE_ARGS (more options for hipath serve, e.g. "--kv-cache-mb 256", or the
#      scheduler of before #43: "--no-chunked-prefill --no-enable-prefix-caching --reserve-worst-case"),
#      SYSTEM_WORDS (unset: none; N: every request starts with the same system
#      message of about N words, a shared prefix for the prefix cache),
#      CLIENT (unset: tests/server/load.py; guidellm: GuideLLM, an independent
#      client, `pip install guidellm`, 0.8.1 runs offline: the same prompts and
#      lengths, N streams at once, timed by it; GUIDELLM: its command),
#      SERVE_BENCH_OUT (build/serve_bench: the server's log, each level's JSON)
# The last two columns: preemptions and the prefix cache's hit rate (hits over
# queries, in prompt tokens: /metrics) during the level.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
MODEL=${1:-models/tiny-hi}
MAX_TOKENS=${MAX_TOKENS:-64}
LEVELS=${LEVELS:-"1 2 4 8 16 32"}
PER_CLIENT=${REQUESTS_PER_CLIENT:-8}
GUIDELLM=${GUIDELLM:-guidellm}
SYSTEM=$([ -n "$SYSTEM_WORDS" ] && python3 -c 'import sys; print(" ".join(f"Rule {i + 1}: be careful, brief and exact, and check every figure twice." for i in range(int(sys.argv[1]) // 12)))' "$SYSTEM_WORDS")
DEVICE=${DEVICE:-cpu}
OUT=${SERVE_BENCH_OUT:-build/serve_bench}
TRACE_OPT=$([ -n "$TRACE" ] && echo "--trace-db $OUT/serve.db" || echo --no-trace)
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
[ "$CLIENT" != guidellm ] || command -v "$GUIDELLM" >/dev/null || { echo "$GUIDELLM missing: pip install guidellm"; exit 1; }
mkdir -p $OUT
: >$OUT/server.log
"$HIPATH" serve --model "$MODEL" --device $DEVICE $TRACE_OPT --port 0 --max-batch 32 $SERVE_ARGS >$OUT/server.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null' EXIT
for i in $(seq 1 300); do
  PORT=$(sed -n 's/.*at http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' $OUT/server.log)
  [ -n "$PORT" ] && break
  kill -0 $PID 2>/dev/null || { cat $OUT/server.log; exit 1; }
  sleep 0.1
done
URL=http://127.0.0.1:$PORT
# the server's CPU seconds so far, and its counters
snap() {
  awk -v hz="$(getconf CLK_TCK)" '{ print "cpu_s", ($14 + $15) / hz }' /proc/$PID/stat
  curl -s $URL/metrics | grep -E '^hipath_(batch_size_(sum|count)|engine_steps_total|num_preemptions_total|prefix_cache_(queries|hits)_total) '
}
echo "model $MODEL on $DEVICE ($TRACE_OPT $SERVE_ARGS), $MAX_TOKENS tokens per request, ${SYSTEM_WORDS:-no} shared system words, client ${CLIENT:-load.py}, $(nproc) CPUs, server's OpenMP: $(tr '\0' '\n' </proc/$PID/environ | grep -E '^(OMP_WAIT_POLICY|GOMP_SPINCOUNT)=' | tr '\n' ' ')"
python3 tests/server/load.py $URL --concurrency 4 --requests 8 --max-tokens 8 >/dev/null   # warm-up
printf "%-12s %9s %9s %6s %12s %12s %12s %7s %8s %11s %11s %10s %8s %8s\n" concurrency requests "tokens/s" ratio "TTFT p50 ms" "TTFT p99 ms" \
  "TPOT p50 ms" batch "step ms" "server CPU" "client CPU" "tok/CPU-s" preempt "hit %"
for c in $LEVELS; do
  snap > $OUT/c$c.before
  if [ "$CLIENT" = guidellm ]; then   # its chat requests: streamed, max_completion_tokens, ignore_eos, temperature unset (1)
    python3 bench/guidellm.py prompts $OUT/prompts.jsonl $((c * PER_CLIENT)) $MAX_TOKENS "$SYSTEM"
    "$GUIDELLM" run --backend kind=openai_http,target=$URL --profile kind=concurrent,streams=$c --data kind=json_file,path=$OUT/prompts.jsonl \
      --constraint kind=max_requests,count=$((c * PER_CLIENT)) --output kind=json,path=$OUT/c$c.guidellm.json --disable-console >$OUT/c$c.txt 2>&1 &&
      python3 bench/guidellm.py summary $OUT/c$c.guidellm.json $c >$OUT/c$c.json || { tail -20 $OUT/c$c.txt; exit 1; }
  else
    python3 tests/server/load.py $URL --concurrency $c --requests $((c * PER_CLIENT)) \
      --max-tokens $MAX_TOKENS --ignore-eos --temperature 1 ${SYSTEM:+--system "$SYSTEM"} --json $OUT/c$c.json >$OUT/c$c.txt || { cat $OUT/c$c.txt; exit 1; }
  fi
  snap > $OUT/c$c.after
  python3 - $OUT $c "$LEVELS" <<'PY'
import json, sys
out, c, first = sys.argv[1], sys.argv[2], sys.argv[3].split()[0]
s, s1 = json.load(open(f"{out}/c{c}.json")), json.load(open(f"{out}/c{first}.json"))
def kv(name): return {k: float(v) for k, v in (l.split() for l in open(f"{out}/c{c}.{name}"))}
b, a = kv("before"), kv("after")
d = {k: a[k] - b[k] for k in a}
steps = d["hipath_engine_steps_total"]
print("%-12d %9d %9.0f %6.2f %12.1f %12.1f %12.2f %7.1f %8.2f %11.2f %11.2f %10.0f %8d %8.1f" % (
    s["concurrency"], s["requests"], s["tokens_per_s"], s["tokens_per_s"] / s1["tokens_per_s"], s["ttft_p50_ms"], s["ttft_p99_ms"],
    s["tpot_p50_ms"], d["hipath_batch_size_sum"] / max(d["hipath_batch_size_count"], 1), s["wall_s"] / max(steps, 1) * 1e3,
    d["cpu_s"] / s["wall_s"], s["client_cpu_s"] / s["wall_s"], s["tokens"] / max(d["cpu_s"], 1e-9),
    d["hipath_num_preemptions_total"], 100 * d["hipath_prefix_cache_hits_total"] / max(d["hipath_prefix_cache_queries_total"], 1)))
PY
done
