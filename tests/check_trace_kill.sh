#!/bin/sh
# Crash safety and concurrency of the SQLite sink, checked with the sqlite3
# shell: (1) a process flushing batches of 100 slices is SIGKILLed; the
# database passes integrity_check and holds every batch it reported
# committed, each complete; the .pftrace holds a prefix protoc can decode.
# (2) two processes write one database at once; both land all their rows.
cd "$(dirname "$0")/.." || exit 1
bin=build/tests/test_trace
[ -x "$bin" ] || { echo "no $bin: run make first"; exit 77; }
command -v sqlite3 >/dev/null 2>&1 || { echo "no sqlite3 shell"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# (1) kill mid-run
"$bin" loop "$tmp/k.db" "$tmp/k.pftrace" > "$tmp/out" &
pid=$!
sleep 2
kill -9 $pid
wait $pid 2>/dev/null
n=$(tail -n 1 "$tmp/out")
[ -n "$n" ] && [ "$n" -gt 0 ] || fail "the loop reported no committed batch"
[ "$(sqlite3 "$tmp/k.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after kill"
rows=$(sqlite3 "$tmp/k.db" "SELECT count(*) FROM args WHERE key = 'batch' AND value <= $n")
[ "$rows" -eq $((n * 100)) ] || fail "$rows rows for $n committed batches, want $((n * 100))"
partial=$(sqlite3 "$tmp/k.db" "SELECT count(*) FROM (SELECT value FROM args WHERE key = 'batch'
                               GROUP BY value HAVING count(*) != 100)")
[ "$partial" -eq 0 ] || fail "$partial partially written batches"
[ "$(sqlite3 "$tmp/k.db" 'SELECT ended_at IS NULL FROM runs')" = 1 ] || fail "killed run marked ended"
echo "killed after $n batches: all $rows rows there, integrity ok"

# The complete packets of the killed .pftrace decode.
python3 - "$tmp/k.pftrace" "$tmp/prefix.pftrace" <<'EOF' || fail "pftrace prefix"
import sys
data = open(sys.argv[1], "rb").read()
pos = 0
while pos < len(data) and data[pos] == 0x0A:   # field 1, length-delimited
    n, shift, p, whole = 0, 0, pos + 1, False
    while p < len(data):
        b = data[p]; p += 1
        n |= (b & 0x7F) << shift; shift += 7
        if b < 0x80:
            whole = True
            break
    if not whole or p + n > len(data):   # the length itself, or the packet, was cut
        break
    pos = p + n
open(sys.argv[2], "wb").write(data[:pos])
print(f"pftrace: {pos} of {len(data)} bytes are whole packets")
sys.exit(0 if pos > 0 else 1)
EOF
if command -v protoc >/dev/null 2>&1; then
    protoc -I. --decode=perfetto.protos.Trace trace/perfetto_trace.proto \
        < "$tmp/prefix.pftrace" > "$tmp/prefix.txt" || fail "protoc cannot decode the killed trace"
    grep -q 'name: "op"' "$tmp/prefix.txt" || fail "no events in the killed trace"
fi

# (2) two writers, one database
"$bin" write "$tmp/c.db" 20000 > "$tmp/a" & a=$!
"$bin" write "$tmp/c.db" 20000 > "$tmp/b" & b=$!
wait $a || fail "writer 1 failed"
wait $b || fail "writer 2 failed"
got=$(sqlite3 "$tmp/c.db" "SELECT group_concat(n) FROM (SELECT count(*) n FROM slices
                           WHERE dur_ns IS NOT NULL GROUP BY run_id)")
[ "$got" = "20000,20000" ] || fail "two writers: rows per run $got, want 20000,20000"
[ "$(sqlite3 "$tmp/c.db" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after two writers"
echo "two writers: 20000 + 20000 rows"
