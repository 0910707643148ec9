#!/bin/sh
# The independent references the tests check against: numpy, safetensors,
# Hugging Face transformers on CPU torch, gguf (pinned in
# tests/requirements.txt). Installs only when an import fails, so a
# machine that has them pays nothing. npm packages are installed by the
# checks that use them (tests/tokenizer, tests/server).
cd "$(dirname "$0")/.." || exit 1
python3 -c "import numpy, safetensors, torch, transformers, tokenizers, accelerate, gguf" 2>/dev/null && exit 0
echo "deps-test: installing the Python references (tests/requirements.txt)"
python3 -m pip install -q -r tests/requirements.txt || echo "deps-test: pip failed; checks that need these will say so and skip"
