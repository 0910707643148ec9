#!/bin/sh
# A workshop's load (docs/workshop.md): `hipath serve --workshop` and
# bench/workshop_load.js: STUDENTS (60) students chatting through the
# openai SDK for SECONDS (300), max_tokens MAX_TOKENS (32), while chromium
# opens a student's timeline and the teacher's page three times; the
# trace's size (the database and its WAL on disk; the pages in use, which the
# cap keeps under it) read every second.
# usage: sh bench/workshop_load.sh MODEL                      (a model folder or .gguf)
#        sh bench/workshop_load.sh --analytic CONFIG DEVICE   (shapes only, every device time modeled; --reply)
# Every student comes from 127.0.0.1 here, so --max-connections-per-ip is raised and
# --workshop-seats-per-address lifted (a room has an address each).
# A benchmark: it prints figures, checks no time. Needs build/npm-web and build/npm-server (make test installs them).
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
STUDENTS=${STUDENTS:-60} SECONDS_=${SECONDS_:-300} MAX_TOKENS=${MAX_TOKENS:-32} CAP=${CAP:-256}
OUT=${OUT:-build/workshop_load}
REPLY="A GPU runs thousands of small threads at once, so one step serves the whole batch."
mkdir -p $OUT && rm -f $OUT/serve.db*
if [ "$1" = --analytic ]; then
  set -- --analytic --config "$2" --device "$3" --dtype bf16 --reply "$REPLY"
else
  set -- --model "$1"
fi
"$HIPATH" serve "$@" --port 0 --workshop --host 127.0.0.1 --workshop-max-tokens $MAX_TOKENS \
  --workshop-students $STUDENTS --workshop-seats-per-address 0 --max-connections-per-ip 1024 --trace-db $OUT/serve.db --trace-cap-mb $CAP >$OUT/serve.log 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null' EXIT
for i in $(seq 1 600); do
  PORT=$(sed -n 's/.*at http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' $OUT/serve.log)
  [ -n "$PORT" ] && break
  kill -0 $PID 2>/dev/null || { cat $OUT/serve.log; exit 1; }
  sleep 0.1
done
CODE=$(sed -n 's/.*join code \([A-Z0-9]*\) .*/\1/p' $OUT/serve.log)
TKEY=$(sed -n 's/.*#key=\([0-9a-f]*\)$/\1/p' $OUT/serve.log)
( while kill -0 $PID 2>/dev/null; do
    echo $(( $(stat -c %s $OUT/serve.db 2>/dev/null || echo 0) + $(stat -c %s $OUT/serve.db-wal 2>/dev/null || echo 0) )) \
      $(sqlite3 -readonly $OUT/serve.db "SELECT (p.page_count - f.freelist_count) * s.page_size FROM pragma_page_count p,
        pragma_freelist_count f, pragma_page_size s" 2>/dev/null); sleep 1
  done ) >$OUT/sizes &
SAMPLER=$!
/usr/bin/time -f "%e s wall, %U s user, %S s sys (the students and chromium)" \
  node bench/workshop_load.js http://127.0.0.1:$PORT $CODE $TKEY build/npm-web build/npm-server $OUT $STUDENTS $SECONDS_ $MAX_TOKENS \
  | tee $OUT/result.json
kill -TERM $PID; wait $PID; echo "server exit $?"
kill $SAMPLER 2>/dev/null
echo "trace: largest $(cut -d' ' -f1 $OUT/sizes | sort -n | tail -1) B on disk (database + WAL), $(cut -d' ' -f2 $OUT/sizes | sort -n | tail -1) B in use" \
  "(pages less the free list), against a cap of $CAP MiB = $((CAP * 1048576)) B; now $(stat -c %s $OUT/serve.db) B"
grep -c "" $OUT/sizes | sed 's/^/size samples: /'
