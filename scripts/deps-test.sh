#!/bin/sh
# What the tests need beyond the build: clang for the fuzzers, and the
# independent references the tests check against: numpy, safetensors,
# Hugging Face transformers on CPU torch, gguf, markdown-it-py for
# the sheets' CommonMark and the official openai Python SDK (pinned in
# tests/requirements.txt); Debian's chromium (and a CJK font for its
# screenshots) with npm's playwright-core (pinned in tests/web/) for the
# web pages. Installs only what is missing, so a machine that has them
# pays nothing. The other npm packages are installed by the checks that
# use them (tests/tokenizer, tests/server).
cd "$(dirname "$0")/.." || exit 1
missing=""
for p in chromium fonts-wqy-microhei; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# The fuzzers (tests/check_fuzz.sh) are built by clang with libFuzzer: any version.
have_clang=""
for c in clang clang-19 clang-18 clang-17 clang-16 clang-15 clang-14; do command -v $c >/dev/null && have_clang=$c; done
[ -n "$have_clang" ] || missing="$missing clang"
if [ -n "$missing" ]; then
  echo "deps-test: installing$missing"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $missing; } >/dev/null 2>&1 ||
    echo "deps-test: apt-get failed; tests/check_web.sh and check_fuzz.sh will say so and skip"
fi
NPM=build/npm-web
if ! cmp -s tests/web/package-lock.json $NPM/package-lock.json || [ ! -d $NPM/node_modules/playwright-core ]; then
  mkdir -p $NPM && cp tests/web/package.json tests/web/package-lock.json $NPM/
  npm ci --prefix $NPM --no-audit --no-fund >$NPM/npm.log 2>&1 ||
    echo "deps-test: npm ci playwright-core failed (see $NPM/npm.log); tests/check_web.sh will say so"
fi
python3 -c "import numpy, safetensors, torch, transformers, tokenizers, accelerate, gguf, markdown_it, openai" 2>/dev/null && exit 0
echo "deps-test: installing the Python references (tests/requirements.txt)"
python3 -m pip install -q -r tests/requirements.txt || echo "deps-test: pip failed; checks that need these will say so and skip"
