#!/bin/sh
# The client (`hipath run --url`, layer 8) against hostile servers
# (tests/client/hostile.py): one that never accepts, one that never
# answers, one that stalls after the headers, keep-alives or empty events
# only, a stream without a newline and an error body of 300 MiB each, and
# absurd usage numbers. Each must end within its timeouts with one line
# saying why, its memory bounded. Runs the ASan build when there is one.
cd "$(dirname "$0")/.." || exit 1
. tests/server/serve.sh
setup check_client
python3 tests/client/hostile.py "$HIPATH" "$OUT" || fail=1
[ $fail -eq 0 ] && echo "check_client: all passed" || echo "check_client: FAILED"
exit $fail
