#!/bin/sh
# What the tests need beyond the build: clang for the fuzzers, and the
# independent references the tests check against: numpy, safetensors,
# Hugging Face transformers on CPU torch, gguf, markdown-it-py for
# the sheets' CommonMark and the official openai Python SDK (pinned in
# tests/requirements.txt); Debian's chromium (and a CJK font for its
# screenshots) with npm's playwright-core (pinned in tests/web/) for the
# web pages, and npm's openai (pinned in tests/server/) for the servers.
# Installs only what is missing, so a machine that has them pays nothing.
# tests/tokenizer's npm packages are installed by the check that uses them.
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
# Before any check runs, so that none waits on (or races) another's install:
# the workshop's browser test needs both.
for pair in "tests/web build/npm-web playwright-core" "tests/server build/npm-server openai"; do
  set -- $pair
  if ! cmp -s $1/package-lock.json $2/package-lock.json || [ ! -d $2/node_modules/$3 ]; then
    mkdir -p $2 && cp $1/package.json $1/package-lock.json $2/
    npm ci --prefix $2 --no-audit --no-fund >$2/npm.log 2>&1 ||
      echo "deps-test: npm ci $3 failed (see $2/npm.log); the checks that need it will say so"
  fi
done
# Found, not imported: importing torch and transformers costs seconds of
# CPU before any test starts; a package that is there but broken fails
# (or skips) the checks that use it, with the reason.
python3 -c "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) is None for m in
  ('numpy', 'safetensors', 'torch', 'transformers', 'tokenizers', 'accelerate', 'gguf', 'markdown_it', 'openai')))" 2>/dev/null && exit 0
echo "deps-test: installing the Python references (tests/requirements.txt)"
python3 -m pip install -q -r tests/requirements.txt || echo "deps-test: pip failed; checks that need these will say so and skip"
