#!/bin/sh
# Runs every test and prints one summary line: "N passed, N failed".
# Unit tests (cmocka): build/asan/tests/test_* under AddressSanitizer, built
# for any x86-64, and build/tests/test_* built for this CPU (-march=native),
# so the AVX2 / AVX512 kernels are tested too.
# Checks: tests/check_*.sh (end-to-end, against independent references).
# A check that cannot run here (e.g. a registry unreachable) exits 77: skipped.
#
# TEST_JOBS tests run at once (default 2: most checks wait on a server, a
# browser or python for much of their time). Each one's output is held in
# build/test-logs/ and printed whole, with its wall time, when it ends; the
# longest start first (their times from the last run, build/test-logs/times,
# else from tests/durations: a 2-core machine's, for a fresh clone).
#   sh tests/run.sh [TEST ...]     every test, or the ones named
cd "$(dirname "$0")/.." || exit 1
LOGS=build/test-logs
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"

if [ "$1" = --one ]; then   # one test (xargs calls this): its log, then its block
  t=$2 log=$LOGS/$(echo "$2" | tr / _)
  t0=$(date +%s)
  case "$t" in *.sh) sh "$t";; *) "$t";; esac > "$log.log" 2>&1 < /dev/null
  rc=$?
  secs=$(( $(date +%s) - t0 ))
  echo "$rc $secs $t" > "$log.rc"
  flock "$LOGS/.lock" sh -c 'echo "=== $1 (${2} s)"; cat "$3"; case $4 in 0) ;; 77) echo "--- skipped: $1";; *) echo "--- FAILED: $1 (exit $4)";; esac' \
    - "$t" "$secs" "$log.log" "$rc"
  exit 0
fi

mkdir -p $LOGS && touch $LOGS/times && rm -f $LOGS/*.log $LOGS/*.rc
if [ $# -eq 0 ]; then
  set --
  for t in build/asan/tests/test_* build/tests/test_* tests/check_*.sh; do
    [ -e "$t" ] || continue
    case "$t" in *.d|*.o) continue;; esac
    set -- "$@" "$t"
  done
fi
t0=$(date +%s)
# Longest first (unknown ones first of all: a new test may be long).
for t in "$@"; do echo "$(cat $LOGS/times tests/durations | awk -v t="$t" '$3 == t && s == "" { s = $2 } END { print (s == "" ? 99999 : s) }') $t"; done |
  sort -k1,1nr -s | cut -d' ' -f2 | xargs -P "${TEST_JOBS:-2}" -n 1 sh tests/run.sh --one

pass=0 fail=0 skip=0 failed=""
for t in "$@"; do
  f=$LOGS/$(echo "$t" | tr / _).rc
  rc=$(cut -d' ' -f1 "$f" 2>/dev/null || echo 1)
  case "$rc" in 0) pass=$((pass+1));; 77) skip=$((skip+1));; *) fail=$((fail+1)); failed="$failed $t";; esac
done
{ cat $LOGS/*.rc; cat $LOGS/times; } 2>/dev/null | awk '!seen[$3]++' > $LOGS/times.new && mv $LOGS/times.new $LOGS/times
echo "tests took $(( $(date +%s) - t0 )) s with TEST_JOBS=${TEST_JOBS:-2} (the longest: $(cat $LOGS/*.rc | sort -k2,2nr | head -n 3 | awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $3, $2 }'))"
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
