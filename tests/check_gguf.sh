#!/bin/sh
# GGUF loading, checked two ways.
# (a) Broken files, crafted here byte by byte (and a valid one cut at every
#     length), weights and tokenizer metadata: each must be refused with
#     exit 1 and one line on stderr naming the file and the field, never a
#     signal.
# (b) SmolLM2-135M-Instruct Q4_1 (scripts/get-smollm2.sh; exit 77 if it
#     cannot be fetched, or torch/transformers/gguf are missing) against
#     Hugging Face transformers reading the same file (tests/ref/gguf_ref.py):
#     token ids of a mixed corpus equal; for ten chat prompts the prompt ids
#     equal, greedy ids equal for 16 tokens (or up to a step where the
#     reference's top two are within NEAR_TIE, reported), and every top-5
#     logprob within 1e-2.
cd "$(dirname "$0")/.." || exit 1
# The broken files go to the sanitizer build when there is one (make test builds it).
[ -z "$HIPATH" ] && [ -x build/asan/hipath ] && BAD_HIPATH=build/asan/hipath
HIPATH=${HIPATH:-build/hipath}
BAD_HIPATH=${BAD_HIPATH:-$HIPATH}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_gguf.XXXXXX") || exit 1   # private: make test may run beside another copy
trap 'rm -rf "$OUT"' EXIT
TOL=1e-2
NEAR_TIE=0.02
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
mkdir -p "$OUT/bad" || exit 1

# (a) ------------------------------------------------------------------
python3 - "$OUT/bad" <<'PY' || { echo "FAIL: crafting the broken files"; exit 1; }
import os, struct, sys
d = sys.argv[1]
def s(x): x = x.encode(); return struct.pack("<Q", len(x)) + x
def kv_str(k, v): return s(k) + struct.pack("<I", 8) + s(v)
def kv_u32(k, v): return s(k) + struct.pack("<I", 4) + struct.pack("<I", v)
def tensor(name, dims, typ, off): return s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", x) for x in dims) + struct.pack("<IQ", typ, off)
def gguf(magic=b"GGUF", version=3, kvs=None, tensors=None, data=b"\0" * 512, pad=True):
    kvs = [kv_str("general.architecture", "llama"), kv_u32("general.alignment", 32)] if kvs is None else kvs
    tensors = [tensor("token_embd.weight", [32, 4], 0, 0)] if tensors is None else tensors
    h = magic + struct.pack("<IQQ", version, len(tensors), len(kvs)) + b"".join(kvs) + b"".join(tensors)
    return h + b"\0" * ((-len(h) % 32) if pad else 0) + data
cases = {
    # name: (bytes, a word the one-line error must contain)
    "valid-header": (gguf(), "embedding_length"),   # parses; fails later, on the config
    "wrong-magic": (gguf(magic=b"GGUX"), "magic"),
    "bad-version": (gguf(version=7), "version"),
    "string-past-eof": (gguf(kvs=[s("general.architecture") + struct.pack("<IQ", 8, 1 << 40) + b"llama"]), "runs past"),
    "array-past-eof": (gguf(kvs=[s("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 1 << 60)]), "runs past"),
    "nested-array-past-eof": (gguf(kvs=[s("x") + struct.pack("<IIQ", 9, 9, 2) + struct.pack("<IQ", 4, 1 << 50)]), "runs past"),
    "bad-value-type": (gguf(kvs=[s("general.architecture") + struct.pack("<I", 77)]), "value type"),
    "huge-counts": (b"GGUF" + struct.pack("<IQQ", 3, 1 << 62, 1 << 62), "more than the file"),
    "tensor-data-past-end": (gguf(data=b"\0" * 100), "runs past"),
    "tensor-offset-past-end": (gguf(tensors=[tensor("token_embd.weight", [32, 4], 0, 1 << 40)]), "runs past"),
    "misaligned-offset": (gguf(tensors=[tensor("token_embd.weight", [32, 4], 0, 4)], data=b"\0" * 1024), "alignment"),
    "bad-alignment": (gguf(kvs=[kv_u32("general.alignment", 24)]), "alignment"),
    "unknown-tensor-type": (gguf(tensors=[tensor("token_embd.weight", [32, 4], 99, 0)]), "ggml type"),
    "k-quant-tensor-type": (gguf(tensors=[tensor("token_embd.weight", [256, 4], 14, 0)], data=b"\0" * 4096), "ggml type"),
    "too-many-dims": (gguf(tensors=[s("t") + struct.pack("<I", 9)]), "dims"),
    "zero-dim": (gguf(tensors=[tensor("token_embd.weight", [32, 0], 0, 0)]), "dimension"),
    "partial-block": (gguf(tensors=[tensor("token_embd.weight", [48, 4], 3, 0)]), "block"),
}
# A whole llama config, so that the tensors themselves are looked at (issue 15):
# two tensors on the same bytes, and alignment 1 with f32 data at an odd address.
config = [kv_str("general.architecture", "llama")] + [kv_u32("llama." + k, v) for k, v in [
    ("embedding_length", 32), ("feed_forward_length", 32), ("block_count", 1), ("attention.head_count", 2)]]
cases["overlapping-tensors"] = (gguf(kvs=config, tensors=[tensor("token_embd.weight", [32, 4], 0, 0),
                                                          tensor("output_norm.weight", [32], 0, 256)]), "and model.norm.weight overlap")
odd = config + [kv_u32("general.alignment", 1), kv_str("general.name", "x")]
odd_header = gguf(kvs=odd, data=b"", pad=False)
cases["alignment-1"] = (gguf(kvs=odd[:-1] + [kv_str("general.name", "x" * (1 + (len(odd_header) % 4 == 0)))],
                             pad=False), "multiple of 4")
# Tokenizer metadata (read by `hipath tokenize --tokenizer FILE`): 256 byte tokens in GPT-2's spelling.
def arr_str(k, xs): return s(k) + struct.pack("<IIQ", 9, 8, len(xs)) + b"".join(s(x) for x in xs)
byte_chars = [chr(c) for c in range(33, 127)] + [chr(c) for c in range(161, 173)] + [chr(c) for c in range(174, 256)]
byte_chars += [chr(256 + i) for i in range(256 - len(byte_chars))]
def tok_file(model="gpt2", pre="smollm", merges=()):
    kvs = [kv_str("tokenizer.ggml.model", model), kv_str("tokenizer.ggml.pre", pre), arr_str("tokenizer.ggml.tokens", byte_chars)]
    return gguf(kvs=kvs + ([arr_str("tokenizer.ggml.merges", merges)] if merges is not None else []), tensors=[], data=b"")
cases.update({
    "tok-model-llama": (tok_file(model="llama"), "tokenizer.ggml.model"),
    "tok-pre-unknown": (tok_file(pre="made-up"), "tokenizer.ggml.pre"),
    "tok-no-merges": (tok_file(merges=None), "tokenizer.ggml.merges"),
    "tok-merge-not-in-vocab": (tok_file(merges=["a b"]), "merges[0]"),
})
full = gguf()
# The valid file cut short at every length through its header and padding
# and into its data; past that every cut fails the one test (the tensor's
# end past the file's), so of those only the sharpest: one byte short.
data_at = len(full) - 512
for n in list(range(0, data_at + 8)) + [len(full) - 1]:
    cases["cut-%03d" % n] = (full[:n], "")
for name, (b, word) in cases.items():
    open(os.path.join(d, name + ".gguf"), "wb").write(b)
    open(os.path.join(d, name + ".want"), "w").write(word)
PY
fail=0; n=0
for f in "$OUT"/bad/*.gguf; do
  n=$((n+1))
  case "$f" in
    */tok-*) echo hi | "$BAD_HIPATH" tokenize --tokenizer "$f" > /dev/null 2> "$OUT/bad.err";;
    *) "$BAD_HIPATH" generate --model "$f" --prompt-ids 1 --max-tokens 1 > /dev/null 2> "$OUT/bad.err";;
  esac
  rc=$?
  want=$(cat "${f%.gguf}.want")
  lines=$(wc -l < "$OUT/bad.err")
  if [ $rc -ne 1 ] || [ "$lines" -ne 1 ] || ! grep -q -F "$f" "$OUT/bad.err" || ! grep -q -F -- "$want" "$OUT/bad.err"; then
    echo "FAIL $(basename "$f"): exit $rc, $lines stderr lines, want one naming the file and '$want':"; head -n 3 "$OUT/bad.err"; fail=1
  fi
done
echo "broken GGUF files: $n tried with $BAD_HIPATH"
[ $fail -eq 0 ] || exit 1

# (b) ------------------------------------------------------------------
python3 -c "import torch, transformers, gguf, accelerate" 2>/dev/null ||
  { echo "skip (b): torch, transformers, gguf or accelerate missing"; exit 77; }
MODEL=$(sh scripts/get-smollm2.sh) || { echo "skip (b): SmolLM2 GGUF cannot be fetched"; exit 77; }

cat > "$OUT/cases.json" <<'EOF'
{"max_tokens": 16, "top": 5,
 "corpus": ["Hello world", " Hello  world\n\n", "The year 2024 had 366 days; 3.14159 is pi.",
            "def f(x):\n    return x**2  # square\n", "naïve café résumé Ångström", "你好，世界！こんにちは 안녕하세요",
            "emoji 🤖🎉 and 👩‍👩‍👧", "<|im_start|>user\nHi<|im_end|>", "   leading spaces and\ttabs\t\t",
            "don't won't it's I'm we'll they've", "URL https://example.com/a?b=c&d=1", "ALLCAPS and MiXeD CaSe 123456789",
            "a  2 and x² and ٣٤ and ½", "control \u0004 bytes \u0013 the vocabulary lacks"],
 "chats": ["Hi", "What is the capital of France?", "Write a haiku about the sea.", "Explain what a GPU is in one sentence.",
           "List three primary colors.", "Translate 'good morning' into Spanish.", "What is 12 times 7?",
           "Give me one tip for learning to code.", "Who wrote Romeo and Juliet?", "Describe a cat in five words."]}
EOF
# The reference (transformers on the GGUF's weights, about a minute of CPU)
# is kept in build/ref-cache/ under a hash of all it depends on: the model,
# the cases, gguf_ref.py and the versions of torch, transformers and gguf.
key=$( { cat "$MODEL" "$OUT/cases.json" tests/ref/gguf_ref.py | sha256sum;
         python3 -c 'import importlib.metadata as m; print([m.version(p) for p in ("torch", "transformers", "gguf")])'; } |
       sha256sum | cut -c1-16)
CACHED=build/ref-cache/gguf-$key.json
if [ -s "$CACHED" ]; then
  cp "$CACHED" "$OUT/ref.json" && echo "reference: transformers' answers from $CACHED (the same inputs)"
else
  python3 tests/ref/gguf_ref.py "$MODEL" "$OUT/cases.json" > "$OUT/ref.json" 2> "$OUT/ref.err" ||
    { echo "FAIL: gguf_ref.py:"; tail -n 3 "$OUT/ref.err"; exit 1; }
  mkdir -p build/ref-cache && cp "$OUT/ref.json" "$CACHED.tmp" && mv "$CACHED.tmp" "$CACHED"
fi

python3 - "$HIPATH" "$MODEL" "$OUT/ref.json" $TOL $NEAR_TIE <<'PY'
import json, subprocess, sys
hipath, model, ref_path, tol, near_tie = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
ref = json.load(open(ref_path, encoding="utf-8"))
bad = 0
for c in ref["corpus"]:
    r = subprocess.run([hipath, "tokenize", "--tokenizer", model], input=c["text"].encode(), capture_output=True)
    got = json.loads(r.stdout) if r.returncode == 0 else r.stderr.decode().strip()
    if got != c["ids"]:
        bad += 1
        print(f"FAIL tokenize {c['text']!r}:\n  hf     {c['ids']}\n  hipath {got}")
print(f"tokenizer: {len(ref['corpus']) - bad}/{len(ref['corpus'])} corpus strings match")

worst = 0.0
for c in ref["chats"]:
    r = subprocess.run([hipath, "generate", "--model", model, "--prompt", c["prompt"], "--max-tokens", "16",
                        "--top-logprobs", "5", "--temperature", "0", "--json"], capture_output=True)
    if r.returncode:
        bad += 1; print(f"FAIL {c['prompt']!r}: hipath exit {r.returncode}: {r.stderr.decode().strip()}"); continue
    h = json.loads(r.stdout)
    if h["prompt_ids"] != c["prompt_ids"]:
        bad += 1; print(f"FAIL {c['prompt']!r}: prompt ids differ (chat template or tokenizer)\n  hf     {c['prompt_ids']}\n  hipath {h['prompt_ids']}"); continue
    steps, note = len(c["ids"]), ""
    for i, (a, b) in enumerate(zip(h["ids"], c["ids"])):
        if a != b:
            ref_lp = dict(map(tuple, c["logprobs"][i]["top"]))
            gap = c["logprobs"][i]["logprob"] - ref_lp.get(a, -1e9)
            if gap >= near_tie:
                bad += 1; print(f"FAIL {c['prompt']!r}: step {i}: hipath {a}, hf {b} (hf prefers it by {gap:.4f})")
            note = f" (near-tie at step {i}: hf's top two {gap:.4f} apart; compared up to it)"
            steps = i + 1
            break
    else:
        if len(h["ids"]) != len(c["ids"]):
            bad += 1; print(f"FAIL {c['prompt']!r}: {len(h['ids'])} tokens, hf {len(c['ids'])}")
    for i in range(min(steps, len(h["logprobs"]))):
        ref_lp = dict(map(tuple, c["logprobs"][i]["top"]))
        for tid, lp in h["logprobs"][i]["top"]:
            d = abs(lp - ref_lp[tid]) if tid in ref_lp else float("inf")
            worst = max(worst, d)
            if d > tol:
                bad += 1; print(f"FAIL {c['prompt']!r}: step {i}: token {tid} logprob {lp:.5f}, hf {ref_lp.get(tid)}")
    print(f"{c['prompt']!r}: {steps} steps agree{note}: {h['text']!r}")
print(f"largest top-5 logprob difference: {worst:.2e} (tolerance {tol:g})")
sys.exit(1 if bad else 0)
PY
