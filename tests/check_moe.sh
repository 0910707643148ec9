#!/bin/sh
# Mixture-of-experts models (issue 46): qwen3_moe, mixtral and deepseek_v3 checkpoints of
# random weights written by transformers' own classes (tests/moe/make_models.py)
# run by hipath: greedy ids and top-5 logprobs within 1e-3 of transformers on
# CPU torch (run as tests/ref/hf_ref.py runs it), on sim and cpu; deepseek_v3's routing against
# transformers' DeepseekV3TopkRouter (tests/moe/route_ref.py). Analytic runs of the public
# Qwen3-30B-A3B and Mixtral-8x7B configs: the trace's routing and the grouped
# matmuls' bytes and FLOPs against the config (tests/moe/check_trace.py).
# Inconsistent expert settings are refused with one line.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
OUT=build/moe
PROMPT=3,17,42,5,9,100,7 MAX=8 TOP=5
GEN="--prompt-ids $PROMPT --max-tokens $MAX --top-logprobs $TOP"
fail=0
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
python3 -c "import torch, transformers, safetensors" 2>/dev/null || { echo "skip: torch/transformers not importable"; exit 77; }
command -v sqlite3 >/dev/null || { echo "skip: sqlite3 missing"; exit 77; }
rm -rf "$OUT" && mkdir -p "$OUT" || exit 1
python3 tests/moe/make_models.py "$OUT" $PROMPT $MAX $TOP > "$OUT/make.log" 2>&1 ||
  { echo "FAIL: make_models.py: $(tail -n 1 "$OUT/make.log")"; exit 1; }

for c in qwen3-moe qwen3-moe-norm-step2 mixtral deepseek-v3; do
  m=$OUT/$c
  for dev in sim:w7900 cpu; do
    if "$HIPATH" generate --model "$m" --device $dev $GEN --temperature 0 --json > "$m.$dev.json" 2> "$m.err"; then
      python3 tests/ref/compare.py "$m.hf.json" "$m.$dev.json" --tol 1e-3 --name "$c on $dev vs transformers" || fail=1
    else
      echo "FAIL $c on $dev: hipath generate: $(head -n 1 "$m.err")"; fail=1
    fi
  done
done

# deepseek_v3's router (sigmoid, the bias for the choice only, group-limited
# top-k) against transformers' DeepseekV3TopkRouter itself.
[ -x build/tests/moe_route ] || { echo "FAIL: build/tests/moe_route is not built (run make)"; exit 1; }
python3 tests/moe/route_ref.py build/tests/moe_route || fail=1

analytic() { # analytic CONFIG DTYPE BYTES DEVICE
  db=$OUT/$(basename "$1" .config.json).db
  if "$HIPATH" run --analytic --config "$1" --dtype $2 --device $4 --max-tokens 3 --ignore-eos --trace-db "$db" Hi \
      > "$db.out" 2> "$db.err"; then
    python3 tests/moe/check_trace.py "$db" "$1" $3 || fail=1
  else
    echo "FAIL analytic $1: $(tail -n 1 "$db.err")"; fail=1
  fi
}
analytic tests/data/qwen3-30b-a3b.config.json bf16 2 h100
analytic tests/data/mixtral-8x7b.config.json bf16 2 h200

refuse() { # refuse NAME JSON-EDIT TEXT (BASE=model: another config than qwen3-moe's)
  python3 -c "import json,sys; c=json.load(open('$OUT/${BASE:-qwen3-moe}/config.json')); c.update($2); json.dump(c, open('$OUT/bad.json','w'))"
  timeout 60 "$HIPATH" run --analytic --config "$OUT/bad.json" --device h100 Hi > /dev/null 2> "$OUT/bad.err"
  rc=$?
  if [ $rc -ne 0 ] && [ $rc -lt 128 ] && [ "$(wc -l < "$OUT/bad.err")" -eq 1 ] && grep -qF "$3" "$OUT/bad.err"; then
    echo "ok refuse $1: $(cat "$OUT/bad.err")"
  else
    echo "FAIL refuse $1: exit $rc: $(head -n 2 "$OUT/bad.err" | tr '\n' '|')"; fail=1
  fi
}
refuse top-k-over-experts '{"num_experts_per_tok": 9}' "inconsistent experts"
refuse no-experts '{"num_local_experts": 0}' "inconsistent experts"
refuse mlp-only-range '{"mlp_only_layers": [999]}' "mlp_only_layers"
# tables of experts the loader would name and bind for hours (it did: 3e8 experts of one layer)
refuse experts-absurd '{"num_experts": 300000000}' "at most 65536 experts"
refuse experts-over-layers '{"num_experts": 65536, "num_hidden_layers": 32}' "1048576 over all layers"
refuse top-k-absurd '{"num_experts": 4096, "num_experts_per_tok": 4096}' "top 1024"
# a float's inf: every logit was NaN (ids 0, no logprob)
BASE=deepseek-v3 refuse scaling-inf '{"routed_scaling_factor": 1e39}' "routed_scaling_factor inf"

[ $fail -eq 0 ] && echo "check_moe: all passed"
exit $fail
