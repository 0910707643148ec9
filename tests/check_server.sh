#!/bin/sh
# `hipath serve` from the outside: the official OpenAI Node SDK (openai,
# pinned by tests/server/package-lock.json, installed into build/npm-server),
# curl for the raw SSE framing, raw HTTP for bad input, a client hanging up
# mid-stream, and a KV cache too small for everyone at once (a stream queued
# there gets keep-alive comments). Runs the ASan
# build (build/asan/hipath, made by `make test`) so a memory error or a leak
# fails the test; the server must also exit cleanly at the end.
# HIPATH=path overrides the binary, HIPATH_TEST_MODEL the model folder
# (default models/tiny-hi; skipped if it is not there).
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/asan/hipath}
[ -x "$HIPATH" ] || HIPATH=build/hipath
MODEL=${HIPATH_TEST_MODEL:-models/tiny-hi}
NPM=build/npm-server
OUT=build/check_server
KEY=test-key-123
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
[ -f "$MODEL/config.json" ] && [ -f "$MODEL/tokenizer.json" ] ||
  { echo "no model at $MODEL (train it: python3 models/tiny-hi/train.py): skipped"; exit 77; }
command -v curl >/dev/null && command -v python3 >/dev/null || { echo "curl/python3 missing"; exit 1; }
mkdir -p $OUT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
fail=0
. tests/server/serve.sh

MAX_LEN=256
start main "$MODEL" --api-key $KEY --max-model-len $MAX_LEN
URL=http://127.0.0.1:$PORT
echo "server: $HIPATH on $URL, model $MODEL"

# (b) raw SSE framing, with curl.
curl -sN "$URL/v1/chat/completions" -H "Content-Type: application/json" -H "Authorization: Bearer $KEY" \
  -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":16,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}' \
  >$OUT/sse.txt
python3 - $OUT/sse.txt <<'EOF' || fail=1
import json, sys
raw = open(sys.argv[1], "rb").read().decode()
events = raw.split("\n\n")
ok = lambda c, w: print(("ok   " if c else "FAIL ") + "SSE: " + w) or c
good = ok(raw.endswith("\n\n") and events[-1] == "", "the stream ends with a blank line")
# comment lines (": ...", the virtual clock's stamp under a simulated device) carry nothing: SSE clients skip them
events = ["\n".join(l for l in e.split("\n") if not l.startswith(":")) for e in events[:-1]]
good &= ok(all(e.startswith("data: ") and "\n" not in e for e in events), "every event is one 'data: ' line (and comments), events split by blank lines")
good &= ok(events[-1] == "data: [DONE]", "'data: [DONE]' is last")
chunks = [json.loads(e[6:]) for e in events[:-1]]
good &= ok(chunks[0]["choices"][0]["delta"].get("role") == "assistant", "the first chunk has delta.role")
good &= ok(any(c["choices"] and c["choices"][0]["finish_reason"] for c in chunks), "a chunk has finish_reason")
good &= ok(chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0, "the usage chunk comes last")
sys.exit(0 if good else 1)
EOF

# (a) the OpenAI Node SDK.
if command -v node >/dev/null && command -v npm >/dev/null; then
  if ! cmp -s tests/server/package-lock.json $NPM/package-lock.json || [ ! -d $NPM/node_modules/openai ]; then
    mkdir -p $NPM
    cp tests/server/package.json tests/server/package-lock.json $NPM/
    if ! npm ci --prefix $NPM --no-audit --no-fund >$NPM/npm.log 2>&1; then
      if npm ping >/dev/null 2>&1; then echo "FAIL: npm ci:"; cat $NPM/npm.log; fail=1; fi
    fi
  fi
  EXPECT=""
  [ "$(basename "$MODEL")" = tiny-hi ] && EXPECT="你好！"   # what train.py checked with transformers
  if [ -d $NPM/node_modules/openai ]; then node tests/server/check.js "$URL" $KEY $NPM "$EXPECT" || fail=1
  else echo "skip: the npm registry is unreachable, no OpenAI SDK checks"; fi
else
  echo "skip: node/npm missing, no OpenAI SDK checks"
fi

# (c) bad input, a hang-up mid-stream.
python3 tests/server/raw.py errors 127.0.0.1 $PORT $KEY $MAX_LEN || fail=1
stop main

# A KV cache of 128 tokens: what can never fit gets 503, the rest waits its turn.
MB=$(python3 -c "import json; c = json.load(open('$MODEL/config.json')); h = c.get('head_dim') or c['hidden_size'] // c['num_attention_heads']; print(128 * 8 * c['num_hidden_layers'] * c.get('num_key_value_heads', c['num_attention_heads']) * h / 2**20)")
start kv "$MODEL" --kv-cache-mb "$MB" --max-model-len $MAX_LEN --split-special-tokens --sse-keepalive 0.05
echo "server: KV cache of 128 tokens on port $PORT"
python3 tests/server/raw.py kv 127.0.0.1 $PORT || fail=1
python3 tests/server/raw.py keepalive 127.0.0.1 $PORT || fail=1
python3 tests/server/raw.py shutdown 127.0.0.1 $PORT $PID || fail=1
stop kv

[ $fail -eq 0 ] && echo "check_server: all passed" || echo "check_server: FAILED"
exit $fail
