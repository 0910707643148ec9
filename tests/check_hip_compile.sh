#!/bin/sh
# The HIP kernels compile for AMD (hipcc: gfx90a, gfx1100) and NVIDIA
# (nvcc: sm_80, sm_90) without a GPU, so a kernel that stops compiling
# fails CI. Installs the compilers first if missing.
cd "$(dirname "$0")/.." || exit 1
sh scripts/deps-hip.sh || { echo "could not install hipcc/nvcc"; exit 1; }
make --no-print-directory -j2 hip-check
