#!/bin/sh
# `hipath serve` under abuse (tests/server/limits.py): 2,000 idle
# connections held from other loopback addresses while GET /health must
# answer within 100 ms and a chat completion is served; one address past
# --max-connections-per-ip is refused; every idle connection is closed
# after the default --connection-timeout (10 s). Needs file descriptors
# for 2,000 sockets on each side: skipped (77) where the hard limit is lower.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/asan/hipath}
[ -x "$HIPATH" ] || HIPATH=build/hipath
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
MODEL=models/tiny-hi
[ -f $MODEL/tokenizer.json ] || { echo "no $MODEL: skipped"; exit 77; }
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -H -n)" 2>/dev/null
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 2200 ] ||
  { echo "skipped: $(ulimit -n) file descriptors at most (ulimit -H -n), 2,200 needed for 2,000 connections"; exit 77; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_server_limits.XXXXXX") || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
fail=0
. tests/server/serve.sh
trap 'for p in $PIDS; do kill $p 2>/dev/null; done; rm -rf "$OUT"' EXIT
PER_IP=64
start limits $MODEL --max-connections-per-ip $PER_IP
python3 tests/server/limits.py 127.0.0.1 $PORT $PER_IP 10 || fail=1
stop limits
[ $fail -eq 0 ] && echo "check_server_limits: all passed" || echo "check_server_limits: FAILED"
exit $fail
