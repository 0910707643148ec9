#!/bin/sh
# `hipath serve` under abuse (tests/server/limits.py): 2,000 idle
# connections held from other loopback addresses while GET /health
# answers (its time printed, not checked) and a chat completion is served; one address past
# --max-connections-per-ip is refused; every idle connection is closed
# after --connection-timeout (30 s here). Needs file descriptors
# for 2,000 sockets on each side: skipped (77) where the hard limit is lower.
cd "$(dirname "$0")/.." || exit 1
ulimit -n 4096 2>/dev/null || ulimit -n "$(ulimit -H -n)" 2>/dev/null
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -ge 2200 ] ||
  { echo "skipped: $(ulimit -n) file descriptors at most (ulimit -H -n), 2,200 needed for 2,000 connections"; exit 77; }
. tests/server/serve.sh
setup check_server_limits
PER_IP=64
# A timeout long enough that opening 2,000 connections on a busy machine
# does not run into it before they are counted held.
start limits $MODEL --max-connections-per-ip $PER_IP --connection-timeout 30
python3 tests/server/limits.py 127.0.0.1 $PORT $PER_IP 30 || fail=1
stop limits
[ $fail -eq 0 ] && echo "check_server_limits: all passed" || echo "check_server_limits: FAILED"
exit $fail
