#!/bin/sh
# How the web front end sends what it serves. tests/web/slow.py: a slow
# request (a Perfetto export, a report's flush), held by the test
# (HIPATH_WEB_HOLD) on a server with one HTTP thread, while other requests
# are answered.
cd "$(dirname "$0")/.." || exit 1
. tests/server/serve.sh
setup check_web_serving
command -v python3 >/dev/null || { echo "python3 missing"; exit 1; }

mkfifo $OUT/hold
export HIPATH_WEB_HOLD=$OUT/hold
start slow "$MODEL" --trace-db $OUT/slow.db --device cpu --http-threads 1
unset HIPATH_WEB_HOLD
python3 tests/web/slow.py $PORT $OUT/hold || fail=1
stop slow
[ $fail -eq 0 ] && echo "check_web_serving: passed" || echo "check_web_serving: FAILED"
exit $fail
