#!/bin/sh
# The timeline of a 64-token SmolLM2-135M request in headless chromium:
# bytes transferred, the first paint, the timeline drawn, and how long a
# redraw takes while zooming and panning. A benchmark (numbers, no limits).
#   sh bench/web_bench.sh [MODEL]   (default: SmolLM2 from `make model-smollm2`)
cd "$(dirname "$0")/.." || exit 1
MODEL=${1:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
OUT=build/web_bench
NPM=build/npm-web
[ -f "$MODEL" ] || [ -d "$MODEL" ] || { echo "no $MODEL (make model-smollm2)"; exit 1; }
[ -d $NPM/node_modules/playwright-core ] || { echo "run tests/check_web.sh first (it installs playwright-core)"; exit 1; }
rm -rf $OUT && mkdir -p $OUT
build/hipath run --web --model "$MODEL" --max-tokens 64 --ignore-eos --trace-db $OUT/bench.db \
  --perfetto $OUT/bench.pftrace "Hi" >$OUT/run.out 2>$OUT/run.err &
PID=$!
for i in $(seq 1 600); do grep -q "follow it at" $OUT/run.err && break; kill -0 $PID 2>/dev/null || break; sleep 0.2; done
URL=$(sed -n 's/.*follow it at \(http[^ ]*\).*/\1/p' $OUT/run.err)
[ -n "$URL" ] || { echo "hipath run --web did not start:"; tail $OUT/run.err; kill $PID 2>/dev/null; exit 1; }
echo "events in the trace: $(sqlite3 $OUT/bench.db "SELECT count(*) FROM slices")"
node tests/web/check.js --measure "$URL" $OUT $NPM
kill -INT $PID
wait $PID
