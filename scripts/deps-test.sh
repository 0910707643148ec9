#!/bin/sh
# What the tests need beyond the build: clang for the fuzzers, and the
# independent references the tests check against: numpy, safetensors,
# Hugging Face transformers on CPU torch, gguf (pinned in
# tests/requirements.txt). Installs only when an import fails, so a
# machine that has them pays nothing. npm packages are installed by the
# checks that use them (tests/tokenizer, tests/server).
cd "$(dirname "$0")/.." || exit 1
# The fuzzers (tests/check_fuzz.sh) are built by clang with libFuzzer.
have_clang=""
for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do command -v $c >/dev/null && have_clang=$c; done
if [ -z "$have_clang" ]; then
  echo "deps-test: installing clang (the fuzzers)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq clang >/dev/null || echo "deps-test: no clang; check_fuzz will skip"
fi
python3 -c "import numpy, safetensors, torch, transformers, tokenizers, accelerate, gguf" 2>/dev/null && exit 0
echo "deps-test: installing the Python references (tests/requirements.txt)"
python3 -m pip install -q -r tests/requirements.txt || echo "deps-test: pip failed; checks that need these will say so and skip"
