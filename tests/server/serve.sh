# Sourced by the checks that run `hipath serve`: start and stop a server.
# Needs HIPATH (the binary), OUT (a folder for logs); fail is set to 1 on a failure.
PIDS=""
trap 'for p in $PIDS; do kill $p 2>/dev/null; done' EXIT

# setup NAME: what most checks start with: HIPATH (unless set: the ASan
# build when there is one), MODEL (tiny-hi; skipped without it), OUT (a
# private folder, removed at exit, servers stopped), ASAN_OPTIONS, fail=0.
setup() {
  HIPATH=${HIPATH:-build/asan/hipath}
  [ -x "$HIPATH" ] || HIPATH=build/hipath
  [ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
  MODEL=models/tiny-hi
  [ -f $MODEL/tokenizer.json ] || { echo "no $MODEL: skipped"; exit 77; }
  OUT=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX") || exit 1
  trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$OUT"' EXIT
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
  fail=0
}

# start NAME MODEL ARGS...: serve MODEL on a free port (--port 0); sets PID and PORT.
# MODEL "": none (an analytic model's --analytic --config CONFIG are in ARGS).
start() {
  name=$1 model=$2; shift 2
  [ -n "$model" ] && set -- --model "$model" "$@"
  : >$OUT/$name.log   # empty now: the sed below must not read an earlier run's port
  "$HIPATH" serve --port 0 "$@" >$OUT/$name.log 2>&1 &
  PID=$!
  PIDS="$PIDS $PID"
  for i in $(seq 1 300); do
    PORT=$(sed -n 's/.*at http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' $OUT/$name.log)
    [ -n "$PORT" ] && return 0
    kill -0 $PID 2>/dev/null || break
    sleep 0.1
  done
  echo "FAIL: the server did not start:"; cat $OUT/$name.log; exit 1
}

# stop NAME: SIGTERM (unless already sent), then it must exit 0 with no sanitizer report.
stop() {
  kill -TERM $PID 2>/dev/null
  wait $PID
  rc=$?
  if [ $rc -ne 0 ] || grep -q -e "ERROR: AddressSanitizer" -e "runtime error:" -e "LeakSanitizer" $OUT/$1.log; then
    echo "FAIL: server '$1' exit $rc or sanitizer report:"; tail -n 40 $OUT/$1.log; fail=1
  else
    echo "ok   server '$1' stopped cleanly"
  fi
}

# refuse WANT ARGS...: `hipath run ARGS... Hi` must fail with one line that
# says WANT (a bad option, an impossible split).
refuse() {
  want=$1; shift
  if "$HIPATH" run --max-tokens 2 "$@" Hi > /dev/null 2> "$OUT/refused.err"; then echo "FAIL: $* was not refused"; fail=1; return; fi
  if [ "$(wc -l < "$OUT/refused.err")" -eq 1 ] && grep -q "$want" "$OUT/refused.err"; then echo "ok refused: $(cat "$OUT/refused.err")"
  else echo "FAIL: $* refused with: $(cat "$OUT/refused.err")"; fail=1; fi
}
