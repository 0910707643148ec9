#!/bin/sh
# Serving throughput and latency of `hipath serve` at concurrency 1, 4, 16, 32:
# streaming chat requests of a fixed length (ignore_eos, --max-tokens,
# temperature 1 so the text keeps flowing past an end-of-turn), timed
# at the client (tests/server/load.py). Throughput rises with the batch while
# each user's time per output token rises too: both are reported.
# usage: bench/serve_bench.sh [MODEL_DIR] (default models/tiny-hi)
# env: HIPATH (default build/hipath), MAX_TOKENS (64), LEVELS ("1 4 16 32"),
#      REQUESTS_PER_CLIENT (8), OMP_WAIT_POLICY (passive: see tests/check_load.sh)
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
MODEL=${1:-models/tiny-hi}
MAX_TOKENS=${MAX_TOKENS:-64}
LEVELS=${LEVELS:-"1 4 16 32"}
PER_CLIENT=${REQUESTS_PER_CLIENT:-8}
OUT=build/serve_bench
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
mkdir -p $OUT
: >$OUT/server.log
"$HIPATH" serve --model "$MODEL" --port 0 --max-batch 32 >$OUT/server.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null' EXIT
for i in $(seq 1 300); do
  PORT=$(sed -n 's/.*at http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' $OUT/server.log)
  [ -n "$PORT" ] && break
  kill -0 $PID 2>/dev/null || { cat $OUT/server.log; exit 1; }
  sleep 0.1
done
URL=http://127.0.0.1:$PORT
echo "model $MODEL, $MAX_TOKENS tokens per request, $(nproc) CPUs, OMP_WAIT_POLICY=$OMP_WAIT_POLICY"
python3 tests/server/load.py $URL --concurrency 4 --requests 8 --max-tokens 8 >/dev/null   # warm-up
printf "%-12s %10s %12s %14s %14s %14s\n" concurrency requests "tokens/s" "TTFT p50 ms" "TTFT p99 ms" "TPOT p50 ms"
for c in $LEVELS; do
  python3 tests/server/load.py $URL --concurrency $c --requests $((c * PER_CLIENT)) --max-tokens $MAX_TOKENS \
    --ignore-eos --temperature 1 --json $OUT/c$c.json >$OUT/c$c.txt || { cat $OUT/c$c.txt; exit 1; }
  python3 -c "import json; s = json.load(open('$OUT/c$c.json')); print('%-12d %10d %12.0f %14.1f %14.1f %14.2f' % (s['concurrency'], s['requests'], s['tokens_per_s'], s['ttft_p50_ms'], s['ttft_p99_ms'], s['tpot_p50_ms']))"
done
curl -s $URL/metrics | grep -E '^hipath_batch_size_(sum|count) ' | tr '\n' ' '
echo
