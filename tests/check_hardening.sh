#!/bin/sh
# The reproducers of issue 15 (an attack on every input of hipath), each
# under AddressSanitizer (build/asan/hipath, made by `make test`): what
# once read or wrote out of bounds must now give the right answer.
#  1. sampling with nothing to draw from: generate --temperature 1e-45
#     --top-p 0.5 is the greedy reply;
#  2. vocabulary tokens longer than any fixed buffer (300 B and 100 kB, as
#     a GGUF's 1 KiB tokens or a hostile tokenizer.json may hold): generate
#     detokenize and the server, streamed and not, give them whole;
#  3. text that NFC makes longer (U+0344, 2 bytes, becomes 4): tokenize
#     prints every id (and only those), generate prefills every id; and
#     special-token text typed as text, with and without --split-special-tokens.
# HIPATH=path overrides the binary (e.g. an older build, to see it fail).
cd "$(dirname "$0")/.." || exit 1
. tests/server/serve.sh
setup check_hardening

# ok WHAT COND: one line, and fail=1 when COND (a shell test) is false.
ok() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
# gen ARGS...: the reply of generate --json on tiny-hi ("" when it failed);
# FIELD=prompt_ids: how many prompt ids it prefilled.
gen() { "$HIPATH" generate --model "${GEN_MODEL:-$MODEL}" --max-tokens 8 --json "$@" 2>$OUT/gen.err |
        python3 -c "import json, sys; v = json.load(sys.stdin)[sys.argv[1]]; print(v if isinstance(v, str) else len(v))" \
          "${FIELD:-text}" 2>/dev/null; }
sanitized() { ! grep -q -e "ERROR: AddressSanitizer" -e "runtime error:" "$@"; }

# 1 -----------------------------------------------------------------------
greedy=$(gen --prompt Hi --temperature 0)
tiny=$(gen --prompt Hi --temperature 1e-45 --top-p 0.5 --seed 1)
ok "generate --temperature 1e-45 --top-p 0.5 gives the greedy reply ('$tiny' = '$greedy')" \
   '[ -n "$greedy" ] && [ "$tiny" = "$greedy" ] && sanitized $OUT/gen.err'

# 2 -----------------------------------------------------------------------
# tiny-hi answers "Hi" with token 469 first ("你"); each copy's tokenizer
# spells that id as N letters A.
for n in 300 100000; do
  d=$OUT/long$n
  mkdir -p $d
  for f in config.json generation_config.json model.safetensors tokenizer_config.json; do ln -s "$PWD/$MODEL/$f" $d/$f; done
  python3 - $MODEL/tokenizer.json $d/tokenizer.json $n <<'EOF'
import json, sys
t = json.load(open(sys.argv[1]))
t["added_tokens"].append({"id": 469, "content": "A" * int(sys.argv[3]), "special": False})
json.dump(t, open(sys.argv[2], "w"))
EOF
  got=$(GEN_MODEL=$d gen --prompt Hi --temperature 0 --max-tokens 2)
  ok "generate prints a $n-byte token whole" \
     '[ "$(printf %s "$got" | tr -d A | wc -c)" -gt 0 ] && [ "$(printf %s "$got" | tr -cd A | wc -c)" -eq $n ] && sanitized $OUT/gen.err'
  got=$(echo "[469, 475]" | "$HIPATH" detokenize --tokenizer $d/tokenizer.json 2>$OUT/gen.err)
  ok "detokenize prints a $n-byte token whole" \
     '[ "$(printf %s "$got" | tr -cd A | wc -c)" -eq $n ] && [ "$(printf %s "$got" | tr -d A)" = "！" ] && sanitized $OUT/gen.err'
  start long$n $d
  python3 - 127.0.0.1 $PORT $n <<'EOF' || fail=1
import http.client, json, sys
host, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def chat(stream):
    c = http.client.HTTPConnection(host, port, timeout=120)
    c.request("POST", "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": "Hi"}],
              "max_tokens": 2, "temperature": 0, "stream": stream}), {"Content-Type": "application/json"})
    r = c.getresponse()
    body = r.read().decode()
    if not stream:
        return json.loads(body)["choices"][0]["message"]["content"]
    return "".join(json.loads(l[6:])["choices"][0]["delta"].get("content", "") for l in body.split("\n")
                   if l.startswith("data: {") and json.loads(l[6:])["choices"])
bad = 0
for stream in (False, True):
    text = chat(stream)
    good = text.startswith("A" * n) and text[n:] and "A" not in text[n:]
    bad += not good
    print("%s the server (stream %s) sends a %d-byte token whole: %d bytes, then %r" % ("ok  " if good else "FAIL", stream, n, len(text), text[n:n + 20]))
sys.exit(bad)
EOF
  stop long$n
done

# 3 -----------------------------------------------------------------------
for n in 50 500000; do
  python3 -c "import sys; sys.stdout.write('\u0344' * $n)" > $OUT/u344.txt
  "$HIPATH" tokenize --tokenizer $MODEL/tokenizer.json < $OUT/u344.txt > $OUT/ids.json 2> $OUT/tok.err
  ok "tokenize: $n x U+0344 gives $((4 * n)) ids of the vocabulary" \
     "python3 -c \"import json; a = json.load(open('$OUT/ids.json')); exit(not (len(a) == 4 * $n and all(0 <= i < 1539 for i in a)))\" 2>/dev/null && sanitized $OUT/tok.err"
done
# hf_same WHAT TOKENIZER TEXTFILE [--split-special-tokens]: hipath tokenize
# gives the ids Hugging Face's tokenizers library gives.
hf_same() {
  "$HIPATH" tokenize --tokenizer "$2" $4 < "$3" > $OUT/ids.json 2> $OUT/tok.err
  ok "$1" "python3 -c \"import json, tokenizers; t = tokenizers.Tokenizer.from_file('$2'); t.encode_special_tokens = bool('$4');
exit(json.load(open('$OUT/ids.json')) != t.encode(open('$3').read(), add_special_tokens=False).ids)\" 2>/dev/null && sanitized $OUT/tok.err"
}
if python3 -c "import tokenizers" 2>/dev/null; then
  python3 -c "import sys; sys.stdout.write('a\u0344b' * 50)" > $OUT/u344.txt
  hf_same "tokenize: 'a U+0344 b' x 50 gives Hugging Face's ids" $MODEL/tokenizer.json $OUT/u344.txt
  printf '%s' 'a<|im_start|>b<|im_end|><|endoftext|>c <|im_start|' > $OUT/special.txt
  hf_same "tokenize: special-token text gives Hugging Face's ids" $MODEL/tokenizer.json $OUT/special.txt
  hf_same "tokenize --split-special-tokens: ... those of encode_special_tokens=True" $MODEL/tokenizer.json $OUT/special.txt --split-special-tokens
  # a Split pre-tokenizer on a literal string (the fuzzers' seeds found PCRE2 refusing it)
  mkdir -p $OUT/split
  python3 -c "import json, sys; t = json.load(open('$MODEL/tokenizer.json')); t['pre_tokenizer'] = {'type': 'Sequence', 'pretokenizers': [
    {'type': 'Split', 'pattern': {'String': '.'}, 'behavior': 'Isolated', 'invert': False},
    {'type': 'ByteLevel', 'add_prefix_space': False, 'trim_offsets': True, 'use_regex': True}]}; json.dump(t, sys.stdout)" > $OUT/split/tokenizer.json
  printf '%s' 'a.b..c. d.你好.' > $OUT/split.txt
  hf_same "tokenize: a Split pre-tokenizer on a literal string gives Hugging Face's ids" $OUT/split/tokenizer.json $OUT/split.txt
fi
got=$(FIELD=prompt_ids gen --prompt "$(python3 -c "import sys; sys.stdout.write('\u0344' * 50)")" --max-tokens 1)
ok "generate prefills all $got ids of a prompt that NFC lengthens (200 and the template's 8)" '[ "$got" = 208 ] && sanitized $OUT/gen.err'

[ $fail -eq 0 ] && echo "check_hardening: all passed" || echo "check_hardening: FAILED"
exit $fail
