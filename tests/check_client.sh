#!/bin/sh
# The client (`hipath run --url`, layer 8) against hostile servers
# (tests/client/hostile.py): one that never accepts, one that never
# answers, one that stalls after the headers, keep-alives or empty events
# only, a stream without a newline and an error body of 300 MiB each, and
# absurd usage numbers. Each must end within its timeouts with one line
# saying why, its memory bounded. Runs the ASan build when there is one.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/asan/hipath}
[ -x "$HIPATH" ] || HIPATH=build/hipath
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_client.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
python3 tests/client/hostile.py "$HIPATH" "$OUT"
