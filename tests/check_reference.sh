#!/bin/sh
# The inference engine against independent references (tests/ref/README.md):
# small random HF models, greedy ids and top-5 logprobs within 1e-3 of a float64
# numpy forward pass and (if installed) of Hugging Face transformers; then broken
# models and requests that must be refused with one line on stderr, no crash.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}   # the binaries under test; override to try another build
OUT=build/ref
CASES="llama-gqa-untied llama-tied-f16 qwen2-bias qwen3-qknorm llama-sharded deepseek-mla-qlora deepseek-mla-direct deepseek-mla-yarn"
PROMPT=3,17,42,5,9,100,7
GEN="--prompt-ids $PROMPT --max-tokens 12 --top-logprobs 5"
TOL=1e-3
fail=0

if ! python3 -c "import numpy, safetensors" 2>/dev/null; then
  pip install -q numpy safetensors ||
    { echo "skip: numpy/safetensors missing and pip cannot install them"; exit 77; }
fi
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
rm -rf "$OUT" && mkdir -p "$OUT" || exit 1
python3 tests/ref/make_models.py "$OUT/models" || { echo "FAIL: make_models.py"; exit 1; }

compare() { # compare REF OTHER NAME
  python3 tests/ref/compare.py "$1" "$2" --tol $TOL --name "$3" || fail=1
}

for c in $CASES; do
  m=$OUT/models/$c
  python3 tests/ref/numpy_ref.py "$m" $GEN > "$OUT/$c.numpy.json" ||
    { echo "FAIL $c: numpy_ref.py"; fail=1; continue; }
  "$HIPATH" generate --model "$m" $GEN --temperature 0 --json \
    > "$OUT/$c.engine.json" 2> "$OUT/$c.engine.err"
  rc=$?
  if [ $rc -ne 0 ]; then
    echo "FAIL $c: hipath generate exit $rc: $(head -n 1 "$OUT/$c.engine.err")"
    rm -f "$OUT/$c.engine.json"; fail=1; continue
  fi
  compare "$OUT/$c.numpy.json" "$OUT/$c.engine.json" "$c engine vs numpy"
done

if python3 -c "import torch, transformers" 2>/dev/null; then
  # every model in one process: torch is imported once
  python3 tests/ref/hf_ref.py $(for c in $CASES; do echo "$OUT/models/$c"; done) --out-dir "$OUT" $GEN 2> "$OUT/hf.err"
  for c in $CASES; do
    [ -s "$OUT/$c.hf.json" ] ||
      { echo "FAIL $c: hf_ref.py: $(grep -F "hf_ref: $c:" "$OUT/hf.err" || tail -n 1 "$OUT/hf.err")"; fail=1; continue; }
    compare "$OUT/$c.numpy.json" "$OUT/$c.hf.json" "$c hf vs numpy"
    [ -f "$OUT/$c.engine.json" ] && compare "$OUT/$c.hf.json" "$OUT/$c.engine.json" "$c engine vs hf"
  done
else
  echo "skip: torch/transformers not importable, Hugging Face cross-check skipped"
fi

# Refusals run under ASan when `make test` built it: an out-of-bounds read prints a report.
NEG=${NEG_HIPATH:-$HIPATH}
[ -z "$NEG_HIPATH" ] && [ -x build/asan/hipath ] && NEG=build/asan/hipath
refuse() { # refuse NAME MODEL PROMPT_IDS MAX_TOKENS [TEXT the error must contain]
  ASAN_OPTIONS=detect_leaks=0 "$NEG" generate --model "$OUT/models/$2" --prompt-ids "$3" \
    --max-tokens "$4" --temperature 0 --json > /dev/null 2> "$OUT/refuse.err"
  rc=$?
  lines=$(awk 'END { print NR }' "$OUT/refuse.err")
  why=""
  if [ $rc -eq 0 ]; then why="exit 0"
  elif [ $rc -ge 128 ]; then why="killed by signal $((rc - 128))"
  elif [ "$lines" -ne 1 ]; then why="$lines lines on stderr, want 1"
  elif [ -n "$5" ] && ! grep -qF "$5" "$OUT/refuse.err"; then why="error does not name '$5'"
  fi
  if [ -n "$why" ]; then
    echo "FAIL refuse $1: $why: $(head -n 3 "$OUT/refuse.err" | tr '\n' '|')"; fail=1
  else
    echo "PASS refuse $1: exit $rc: $(cat "$OUT/refuse.err")"
  fi
}
for bad in truncated header-length offsets-past-end overlap dtype-size config-hidden arch; do
  refuse "$bad" "bad-$bad" 3,17,42 4
done
refuse missing-tensor bad-missing-tensor 3,17,42 4 model.layers.1.mlp.up_proj.weight
refuse misaligned bad-misaligned 3,17,42 4 "not a multiple of 2 as F16"
refuse layers-huge bad-layers-huge 3,17,42 4 "1000000000 layers but the weights hold 2"
refuse layers-fewer bad-layers-fewer 3,17,42 4 "1 layers but the weights hold 2"
refuse eps bad-eps 3,17,42 4 rms_norm_eps
refuse theta bad-theta 3,17,42 4 rope_theta
refuse prompt-id-vocab llama-tied-f16 3,257,42 4
refuse max-tokens-context llama-tied-f16 3,17,42 100

[ $fail -eq 0 ] && echo "check_reference: all passed"
exit $fail
