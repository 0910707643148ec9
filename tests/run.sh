#!/bin/sh
# Runs every test and prints one summary line: "N passed, N failed".
# Unit tests (cmocka): build/asan/tests/test_* under AddressSanitizer, built
# for any x86-64, and build/tests/test_* built for this CPU (-march=native),
# so the AVX2 / AVX512 kernels are tested too.
# Checks: tests/check_*.sh (end-to-end, against independent references).
# A check that cannot run here (e.g. a registry unreachable) exits 77: skipped.
cd "$(dirname "$0")/.." || exit 1
pass=0; fail=0; skip=0; failed=""
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
for t in build/asan/tests/test_* build/tests/test_* tests/check_*.sh; do
  [ -e "$t" ] || continue
  case "$t" in *.d|*.o) continue;; esac
  echo "=== $t"
  case "$t" in *.sh) sh "$t";; *) "$t";; esac
  rc=$?
  if [ $rc -eq 0 ]; then pass=$((pass+1));
  elif [ $rc -eq 77 ]; then skip=$((skip+1)); echo "--- skipped: $t";
  else fail=$((fail+1)); failed="$failed $t"; echo "--- FAILED: $t (exit $rc)"; fi
done
[ -n "$failed" ] && echo "failed:$failed"
echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
