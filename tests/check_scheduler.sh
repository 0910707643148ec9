#!/bin/sh
# The scheduler's features change no answer (issue 43): SmolLM2 on the CPU
# at temperature 0 (ignore_eos, 24 tokens), six chat prompts (three share a
# long system prompt, the others SmolLM2's default one; 38 to 115 tokens),
# through the official openai Python SDK (tests/server/scheduler.py). The
# reference computes one request at a time, each prompt whole, nothing
# cached; against it, each with the same text and top-5 logprobs within
# check_gguf's 1e-2:
#   chunked prefill with budgets of 16, 64 and 2048 tokens (cache off);
#   the prefix cache cold, then warm: the same prompts again, each with
#     usage.prompt_tokens_details.cached_tokens = its whole blocks but the
#     one of its last token (vLLM's rule), > 0 and less than the prompt;
#   a pool of 20 blocks that 16 streams must share: preempted
#     (hipath_num_preemptions_total > 0).
# On every server at the end: every KV block back (hipath_kv_blocks_used 0),
# and hipath_prefix_cache_queries_total / hits_total the sums of the
# replies' prompt_tokens / cached_tokens (0 with the cache off); each exits
# 0 on SIGTERM.
# Skipped (77) without the model or the openai package (tests/requirements.txt).
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}   # six servers at once: not the ASan build
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
MODEL=$(sh scripts/get-smollm2.sh) || { echo "skipped: SmolLM2 GGUF cannot be fetched"; exit 77; }
python3 -c "import openai" 2>/dev/null || { echo "skipped: no openai Python package (pip install -r tests/requirements.txt)"; exit 77; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_scheduler.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
python3 tests/server/scheduler.py "$HIPATH" "$MODEL" "$OUT" || { tail -n 5 "$OUT"/*.log; exit 1; }
