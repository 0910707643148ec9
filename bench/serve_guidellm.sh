#!/bin/sh
# serve_bench.sh's workloads measured by an independent client, GuideLLM
# (pip install guidellm; 0.8.1 runs offline from a prompts file, no
# tokenizer): streaming chat requests, max_completion_tokens and ignore_eos
# as it sends them, N streams at once (its "concurrent" profile), TTFT and
# tokens/s as GuideLLM times them (this host's wall clock: measured).
# usage: bench/serve_guidellm.sh [MODEL_DIR] (default models/tiny-hi)
# env: GUIDELLM (default guidellm), HIPATH (build/hipath), DEVICE (cpu),
#      LEVELS ("8 32"), REQUESTS_PER_CLIENT (3), MAX_TOKENS (32),
#      SYSTEM_WORDS (unset; N: every prompt opens with the same text of about
#      N words, serve_bench.sh's shared prefix), SERVE_ARGS (as serve_bench.sh)
cd "$(dirname "$0")/.." || exit 1
GUIDELLM=${GUIDELLM:-guidellm}
HIPATH=${HIPATH:-build/hipath}
MODEL=${1:-models/tiny-hi}
LEVELS=${LEVELS:-"8 32"}
PER_CLIENT=${REQUESTS_PER_CLIENT:-3}
MAX_TOKENS=${MAX_TOKENS:-32}
OUT=build/serve_guidellm
command -v "$GUIDELLM" >/dev/null || { echo "$GUIDELLM missing: pip install guidellm (or GUIDELLM=path)"; exit 1; }
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
mkdir -p $OUT
# load.py's prompts, each opened by the shared text when SYSTEM_WORDS is set
python3 - "$OUT/prompts.jsonl" "$MAX_TOKENS" "${SYSTEM_WORDS:-0}" <<'PY'
import json, sys
sys.path.insert(0, "tests/server")
from load import PROMPTS
out, n, words = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
system = " ".join(f"Rule {i + 1}: be careful, brief and exact, and check every figure twice." for i in range(words // 12))
with open(out, "w") as f:
    for p in PROMPTS:
        f.write(json.dumps({"prompt": (system + "\n\n" if system else "") + p, "output_tokens_count": n}) + "\n")
PY
: >$OUT/server.log
"$HIPATH" serve --model "$MODEL" --device ${DEVICE:-cpu} --no-trace --port 0 --max-batch 32 $SERVE_ARGS >$OUT/server.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null' EXIT
for i in $(seq 1 300); do
  PORT=$(sed -n 's/.*at http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' $OUT/server.log)
  [ -n "$PORT" ] && break
  kill -0 $PID 2>/dev/null || { cat $OUT/server.log; exit 1; }
  sleep 0.1
done
echo "model $MODEL on ${DEVICE:-cpu} ($SERVE_ARGS), $MAX_TOKENS tokens per request, ${SYSTEM_WORDS:-no} shared words, GuideLLM $("$GUIDELLM" --version 2>&1 | tail -1)"
printf "%-12s %9s %9s %12s %12s %12s\n" concurrency requests "tokens/s" "TTFT p50 ms" "TTFT p99 ms" "TPOT p50 ms"
for c in $LEVELS; do
  "$GUIDELLM" run --backend kind=openai_http,target=http://127.0.0.1:$PORT --profile kind=concurrent,streams=$c \
    --data kind=json_file,path=$OUT/prompts.jsonl --constraint kind=max_requests,count=$((c * PER_CLIENT)) \
    --output kind=json,path=$OUT/c$c.json --disable-console >$OUT/c$c.log 2>&1 || { tail -20 $OUT/c$c.log; exit 1; }
  python3 - $OUT/c$c.json $c <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))["benchmarks"][0]
b = run["metrics"]
m = lambda k: b[k]["successful"]
print("%-12s %9d %9.0f %12.1f %12.1f %12.2f" % (sys.argv[2], m("time_to_first_token_ms")["count"], m("output_token_count")["total_sum"] / run["duration"],
      m("time_to_first_token_ms")["percentiles"]["p50"], m("time_to_first_token_ms")["percentiles"]["p99"],
      m("time_per_output_token_ms")["percentiles"]["p50"]))
PY
done
