#!/bin/sh
# How the web front end sends what it serves. tests/web/encoding.py: gzip
# when the client's Accept-Encoding takes it (the pages, the events JSON,
# the Perfetto download), inflated by Python's gzip module to exactly the
# plain response; q-values; tiny bodies and the SSE stream as they are.
# tests/web/slow.py: a slow request (a Perfetto export, a report's flush),
# held by the test (HIPATH_WEB_HOLD) on a server with one HTTP thread,
# while other requests are answered.
cd "$(dirname "$0")/.." || exit 1
. tests/server/serve.sh
setup check_web_serving
for c in curl python3; do command -v $c >/dev/null || { echo "$c missing"; exit 1; }; done
hi() {
  curl -s "http://127.0.0.1:$PORT/v1/chat/completions" -H "Content-Type: application/json" \
    -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"temperature":0,"stream":true}' >/dev/null
}

start gzip "$MODEL" --trace-db $OUT/gzip.db
hi
n=0   # the trace is written when the server is quiet
until curl -sf "http://127.0.0.1:$PORT/api/requests/1" >/dev/null || [ $n -ge 300 ]; do n=$((n+1)); sleep 0.1; done
python3 tests/web/encoding.py $PORT web/static 1 || fail=1
stop gzip

mkfifo $OUT/hold
export HIPATH_WEB_HOLD=$OUT/hold
start slow "$MODEL" --trace-db $OUT/slow.db --device cpu --http-threads 1
unset HIPATH_WEB_HOLD
python3 tests/web/slow.py $PORT $OUT/hold || fail=1
stop slow
[ $fail -eq 0 ] && echo "check_web_serving: passed" || echo "check_web_serving: FAILED"
exit $fail
