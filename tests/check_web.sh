#!/bin/sh
# The web front end in a real browser: Debian's chromium, headless, driven
# by playwright-core (pinned in tests/web/package-lock.json, installed into
# build/npm-web by scripts/deps-test.sh), against `hipath serve` (the ASan build, so a memory error
# in web/server/ fails it). tests/web/check.js chats "Hi", follows it to its
# timeline, hovers a kernel, downloads the .pftrace, draws a lab chart and
# runs a lab for another profile; here protoc decodes the download and
# sqlite3 counts what it must hold. tests/web/charts.js: labs 1, 4, 5, 7, 8, 9 and 10's
# legends cover no data, each draws a predicted series beside its measurements
# (labs/charts.json), lab 5's log axes have inner ticks, lab 10 draws its replay real beside modeled. Then tests/web/tp.js: a --tp 2 run's GPU
# rows and journey. Screenshots and page weights: build/check_web/.
# Skipped (77) without chromium or playwright-core.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/asan/hipath}
[ -x "$HIPATH" ] || HIPATH=build/hipath
MODEL=${HIPATH_TEST_MODEL:-models/tiny-hi}
NPM=build/npm-web
OUT=build/check_web
[ -x /usr/bin/chromium ] || { echo "no /usr/bin/chromium (scripts/deps-test.sh installs it): skipped"; exit 77; }
for c in node npm protoc sqlite3 python3; do command -v $c >/dev/null || { echo "$c missing"; exit 1; }; done
[ -f "$MODEL/config.json" ] || { echo "no model at $MODEL: skipped"; exit 77; }
cmp -s tests/web/package-lock.json $NPM/package-lock.json && [ -d $NPM/node_modules/playwright-core ] ||
  { echo "no playwright-core in $NPM (scripts/deps-test.sh installs it; make test runs it): skipped"; exit 77; }
rm -rf $OUT && mkdir -p $OUT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
fail=0
. tests/server/serve.sh

# The labs the page charts: lab 3's roofline; lab 7's bars (told apart by label); lab 1,
# which the page runs again on another profile; labs 4, 5, 7, 8, 9 and 10's legends and predictions.
for n in 1 3 4 5 7 8 9 10; do
  build/hipath lab $n --out $OUT/labs/lab$n >$OUT/lab$n.log 2>&1 || { echo "FAIL: hipath lab $n:"; tail -5 $OUT/lab$n.log; fail=1; }
done

start web "$MODEL" --trace-db $OUT/serve.db --labs-dir $OUT/labs
EXPECT=""
[ "$(basename "$MODEL")" = tiny-hi ] && EXPECT="你好！"
node tests/web/check.js "http://127.0.0.1:$PORT" $OUT $NPM $OUT/serve.db "$EXPECT" || fail=1
node tests/web/charts.js "http://127.0.0.1:$PORT" $OUT $NPM || fail=1

# The download: a Perfetto trace protoc decodes, holding every event of the request's window.
if [ -s $OUT/request.pftrace ] && protoc -I. --decode=perfetto.protos.Trace trace/perfetto_trace.proto \
     <$OUT/request.pftrace >$OUT/request.txt 2>$OUT/protoc.err; then
  want=$(sqlite3 $OUT/serve.db "WITH w AS (SELECT min(ts_ns) a, max(ts_ns + coalesce(dur_ns, 0)) b FROM slices WHERE request = 1)
    SELECT count(*) FROM slices, w WHERE run_id = 1 AND layer BETWEEN 1 AND 8 AND ts_ns <= w.b AND ts_ns + coalesce(dur_ns, 0) >= w.a")
  python3 - $OUT/request.txt "$want" <<'EOF' || fail=1
import re, sys
text, want = open(sys.argv[1]).read(), int(sys.argv[2])
begins, instants = text.count("type: TYPE_SLICE_BEGIN"), text.count("type: TYPE_INSTANT")
lanes = [n for n in range(8, 0, -1) if re.search(r'name: "%d [a-z]+"' % n, text)]
ok = lambda c, w: print(("ok   " if c else "FAIL ") + "perfetto download: " + w) or c
good = ok(begins + instants == want, f"{begins} slices + {instants} instants = the {want} events of the window in the SQLite trace")
good &= ok(len(lanes) == 8, f"the eight layer tracks: {lanes}")
good &= ok("flow_ids:" in text and "terminating_flow_ids:" in text, "flow arrows")
good &= ok('name: "gemv"' in text and "flops" in text, "a gemv kernel with its flops")
sys.exit(0 if good else 1)
EOF
else
  echo "FAIL: the download does not decode:"; head -5 $OUT/protoc.err 2>/dev/null; fail=1
fi
stop web

# --tp 2 (#30): a small analytic run kept up by --web; tests/web/tp.js checks its page against its trace.
"$HIPATH" run --analytic --config tests/data/llama-2-7b.config.json --dtype bf16 --device h100 --tp 2 --max-tokens 2 \
  --ignore-eos --trace-db $OUT/tp.db --perfetto $OUT/tp.pftrace --web "Hi" >$OUT/tp.log 2>&1 &
PID=$!
PIDS="$PIDS $PID"
for i in $(seq 1 300); do
  URL=$(sed -n 's/.*follow it at \(http[^ ]*\) .*/\1/p' $OUT/tp.log)
  [ -n "$URL" ] && break
  kill -0 $PID 2>/dev/null || break
  sleep 0.1
done
if [ -n "$URL" ]; then node tests/web/tp.js "$URL" $OUT $NPM $OUT/tp.db || fail=1
else echo "FAIL: hipath run --tp 2 --web did not start:"; tail -5 $OUT/tp.log; fail=1; fi
stop tp
ls $OUT/*.png 2>/dev/null | tr '\n' ' '; echo
[ $fail -eq 0 ] && echo "check_web: passed" || echo "check_web: FAILED"
exit $fail
