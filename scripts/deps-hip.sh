#!/bin/sh
# The compilers for the HIP path, for `make hip-check` (CI) and
# `make HIP=amd|nvidia`: Debian's hipcc (ROCm 5.2, hiprtc included),
# clang-19 and its linker lld-19 (gfx942, which hipcc's LLVM 15 does not
# know: kernels/hip/hip.mk) and, where no CUDA toolkit is installed, nvcc
# and nvrtc (--jit) from PyPI's wheels. Only what is missing.
set -e
missing=""
for p in hipcc libamdhip64-dev llvm-15 clang-19 lld-19; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "deps-hip: installing$missing"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq $missing >/dev/null
fi
if ! command -v nvcc >/dev/null && ! python3 -c 'import nvidia, os, sys; sys.exit(not os.path.exists(list(nvidia.__path__)[0] + "/cu13/bin/nvcc"))' 2>/dev/null; then
  echo "deps-hip: installing nvcc from PyPI"
  python3 -m pip install -q "nvidia-cuda-nvcc>=13,<14" "nvidia-cuda-runtime>=13,<14"
fi
if ! command -v nvcc >/dev/null && ! python3 -c 'import nvidia, os, sys; sys.exit(not os.path.exists(list(nvidia.__path__)[0] + "/cu13/lib/libnvrtc.so.13"))' 2>/dev/null; then
  echo "deps-hip: installing nvrtc from PyPI"
  python3 -m pip install -q "nvidia-cuda-nvrtc>=13,<14"
fi
