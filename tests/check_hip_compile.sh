#!/bin/sh
# The HIP kernels compile for AMD (clang++ -x hip: gfx90a, gfx942, gfx1100;
# hipcc: gfx90a, gfx1100) and NVIDIA (nvcc: sm_80, sm_90) without a GPU, so
# a kernel that stops compiling fails CI. Installs the compilers first if
# missing. tests/check_hip_cpu.sh runs the same kernels on the CPU.
cd "$(dirname "$0")/.." || exit 1
sh scripts/deps-hip.sh || { echo "could not install hipcc/nvcc"; exit 1; }
make --no-print-directory -j2 hip-check
