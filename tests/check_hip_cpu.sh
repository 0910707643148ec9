#!/bin/sh
# The HIP kernels executed, without a GPU: every kernel of the HIP backend
# (the real kernels/hip/*_kernels.h) runs on the CPU runtime
# layers/runtime/hip/hip_cpu.h, a thread per lane, against its CPU twin at
# wavefront sizes 32 and 64, under AddressSanitizer and UBSan
# (tests/hip_cpu/hip_cpu_test.cpp, docs/hip-cpu.md). One line a case, then
# "N passed, N failed". `make hip-cpu-tsan` runs it under ThreadSanitizer,
# `make hip-cpu-mutants` checks that broken kernels fail it.
cd "$(dirname "$0")/.." || exit 1
command -v "${CXX:-g++}" > /dev/null || { echo "skip: no C++ compiler"; exit 77; }
make --no-print-directory -j2 hip-cpu
