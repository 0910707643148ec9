#!/bin/sh
# What the web front end refuses and limits (tests/web/security.py): paths
# that climb out of the static folder (../, %2e%2e, %252e, overlong UTF-8,
# backslashes, symlinks planted in a copy of web/static, in and out of it),
# content types and headers, bad parameters and bodies (the OpenAI error
# shape), the API key on /api/ as on /v1/, loopback unless --host says
# otherwise, and the trace's size cap (--trace-cap-mb). Runs the ASan build.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/asan/hipath}
[ -x "$HIPATH" ] || HIPATH=build/hipath
MODEL=${HIPATH_TEST_MODEL:-models/tiny-hi}
OUT=build/check_web_security
KEY=web-key-456
[ -f "$MODEL/config.json" ] || { echo "no model at $MODEL: skipped"; exit 77; }
for c in curl python3 sqlite3; do command -v $c >/dev/null || { echo "$c missing"; exit 1; }; done
rm -rf $OUT && mkdir -p $OUT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
fail=0
. tests/server/serve.sh
hi() {   # one streamed "Hi" on port $1 (args after: curl's)
  p=$1; shift
  curl -s -N "http://127.0.0.1:$p/v1/chat/completions" -H "Content-Type: application/json" "$@" \
    -d '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"temperature":0,"stream":true}' >/dev/null
}

# A copy of the pages with symlinks planted: out of the folder, and inside it.
cp -r web/static $OUT/root
ln -s /etc/passwd $OUT/root/passwd.txt
ln -s /etc $OUT/root/outside
ln -s . $OUT/root/inside
echo hidden >$OUT/root/.hidden.txt

start open "$MODEL" --web $OUT/root --trace-db $OUT/open.db --labs-dir $OUT/labs   # a lab runs from the page: its result stays here
OPEN=$PORT OPEN_PID=$PID
start keyed "$MODEL" --api-key $KEY --trace-db $OUT/keyed.db
KEYED=$PORT
hi $OPEN
hi $KEYED -H "Authorization: Bearer $KEY"
python3 tests/web/security.py $OPEN $OUT/root $KEYED $KEY || fail=1

# Loopback only, unless --host says otherwise: the listening socket's address in /proc/net/tcp.
python3 - $OPEN <<'PY' || fail=1
import sys
port = "%04X" % int(sys.argv[1])
addrs = [l.split()[1] for l in open("/proc/net/tcp").read().splitlines()[1:] if l.split()[3] == "0A" and l.split()[1].endswith(":" + port)]
ok = addrs == ["0100007F:" + port]
print(("ok   " if ok else "FAIL ") + f"the server listens on 127.0.0.1 only by default: {addrs}")
sys.exit(0 if ok else 1)
PY
stop keyed
PID=$OPEN_PID
stop open

# The cap: past half of --trace-cap-mb the oldest events go, details (layers
# 1-5) first, so the pages in use stay under it.
start capped "$MODEL" --trace-db $OUT/capped.db --trace-cap-mb 0.25
CAP=$((256 * 1024))
used() { sqlite3 $OUT/capped.db "SELECT (p.page_count - f.freelist_count) * s.page_size FROM pragma_page_count p, pragma_freelist_count f, pragma_page_size s"; }
for i in 1 2 3 4 5 6 7 8; do hi $PORT; sleep 0.3; done
# request 1's details: the layer 1-5 slices no later than its last event (none when it is gone whole)
old_details() { sqlite3 $OUT/capped.db "SELECT count(*) FROM slices WHERE layer <= 5 AND id <= (SELECT max(id) FROM slices WHERE request = 1)"; }
n=0   # no more requests: the last writes must have brought it under the cap, request 1's details gone
while [ $n -lt 150 ] && { [ "$(used)" -gt $CAP ] || [ "$(old_details)" -gt 0 ]; }; do n=$((n+1)); sleep 0.2; done
if grep -q "oldest events" $OUT/capped.log && [ "$(used)" -le $CAP ] && [ "$(old_details)" -eq 0 ]; then
  echo "ok   the trace passed half of 0.25 MiB; its oldest details went: $(used) B in use, request 1's layer 1-5 slices 0," \
       "its own events $(sqlite3 $OUT/capped.db 'SELECT count(*) FROM slices WHERE request = 1')"
else
  echo "FAIL: the cap: $(used) B in use, request 1's layer 1-5 slices $(old_details)"; tail -3 $OUT/capped.log; fail=1
fi
stop capped

# A workshop against a hostile student (tests/web/workshop_security.py,
# docs/security.md): run 1 is an earlier class whose teacher typed a
# secret; run 2, on the same trace, is the room.
TKEY=teacher-key-0123456789
start class1 "$MODEL" --workshop --host 127.0.0.1 --api-key $TKEY --trace-db $OUT/ws.db
curl -s "http://127.0.0.1:$PORT/v1/chat/completions" -H "Authorization: Bearer $TKEY" -H "Content-Type: application/json" \
  -d '{"messages":[{"role":"user","content":"my password is hunter2"}],"max_tokens":4}' >/dev/null
stop class1
start room "$MODEL" --workshop --host 127.0.0.1 --api-key $TKEY --workshop-rate 0 --workshop-max-tokens 16 \
  --workshop-max-prompt-tokens 64 --trace-db $OUT/ws.db
CODE=$(sed -n 's/.*join code \([A-Z0-9]*\) .*/\1/p' $OUT/room.log)
python3 tests/web/workshop_security.py room $PORT "$CODE" $TKEY $OUT/ws.db || fail=1
stop room
start joins "$MODEL" --workshop --host 127.0.0.1 --api-key $TKEY --no-trace
CODE=$(sed -n 's/.*join code \([A-Z0-9]*\) .*/\1/p' $OUT/joins.log)
python3 tests/web/workshop_security.py join $PORT "$CODE" $TKEY || fail=1
stop joins
start slow "$MODEL" --no-trace --read-timeout 2 --max-connections 40 --max-connections-per-ip 40
python3 tests/web/workshop_security.py slow $PORT 2 30 || fail=1
stop slow
[ $fail -eq 0 ] && echo "check_web_security: passed" || echo "check_web_security: FAILED"
exit $fail
