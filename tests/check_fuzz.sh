#!/bin/sh
# The fuzzers (tests/fuzz/README.md) for a short while, as part of make
# test: built by clang with ASan and UBSan (make fuzz-build), each run
# FUZZ_SECONDS (default 10), two at a time, on the corpora seeded from the
# repository. A crash, a sanitizer report or a leak fails the check. The
# long runs are `make fuzz FUZZ_SECONDS=...` (the issue's goal: 10 M
# executions each). Skipped (77) where no clang with libFuzzer is installed.
cd "$(dirname "$0")/.." || exit 1
make --no-print-directory -j"$(nproc)" fuzz-build > build/fuzz-build.log 2>&1 ||
  { grep -q "no clang" build/fuzz-build.log && { echo "skipped: $(cat build/fuzz-build.log)"; exit 77; }
    echo "FAIL: make fuzz-build:"; tail -n 20 build/fuzz-build.log; exit 1; }
FUZZ_JOBS=${FUZZ_JOBS:-2} sh tests/fuzz/run.sh "${FUZZ_SECONDS:-10}"
