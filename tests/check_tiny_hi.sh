#!/bin/sh
# The default model answers "Hi" with exactly 你好！ through the C engine
# (generate: layers 7-4) and through the whole path (run: client, HTTP,
# server, simulated GPU), and the run's trace covers all eight layers.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/asan/hipath}
[ -x "$HIPATH" ] || HIPATH=build/hipath
export ASAN_OPTIONS=detect_leaks=0
fail() { echo "FAIL: $*"; exit 1; }
out=$($HIPATH generate --model models/tiny-hi --prompt Hi --json) || fail "generate exited $?"
python3 - "$out" <<'PY' || exit 1
import json, sys
j = json.loads(sys.argv[1])
assert j["text"] == "你好！", j["text"]
assert j["finish_reason"] == "stop", j["finish_reason"]
print("generate: Hi ->", j["text"], j["ids"])
PY
d=$(mktemp -d)
# generate's trace: the tokenizer's own layer-7 events for request 1, their
# token count against Hugging Face's tokenizer (the --json prompt ids where
# transformers is missing), the reply's text rebuilt from the detokenize
# instants, and tokenize's flow on to the step that prefills request 1.
gen=$($HIPATH generate --model models/tiny-hi --prompt Hi --json --trace-db $d/g.db) || fail "generate --trace-db exited $?"
python3 - "$gen" $d/g.db <<'PY' || exit 1
import json, sqlite3, sys
j = json.loads(sys.argv[1])
db = sqlite3.connect(sys.argv[2])
def args(name):
    rows = db.execute("SELECT s.id, s.request, s.direction, a.key, a.value FROM slices s JOIN args a ON a.slice_id = s.id "
                      "WHERE s.layer = 7 AND s.name = ? ORDER BY s.ts_ns, s.id", (name,)).fetchall()
    ev = {}
    for sid, req, dirn, k, v in rows:
        ev.setdefault(sid, {"request": req, "direction": dirn})[k] = v
    return list(ev.values())
try:
    from transformers import AutoTokenizer
    hf = AutoTokenizer.from_pretrained("models/tiny-hi")
    prompt = hf.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False)
    ref, src = hf.encode(prompt), "transformers"
except ImportError:
    prompt, ref, src = None, j["prompt_ids"], "--json prompt_ids"
tpl, tok, detok = args("chat_template"), args("tokenize"), args("detokenize")
assert len(tpl) == 1 and tpl[0]["messages"] == 1 and tpl[0]["direction"] == "down", tpl
assert prompt is None or tpl[0]["bytes"] == len(prompt.encode()), (tpl, prompt)
assert len(tok) == 1 and tok[0]["direction"] == "down", tok
assert tok[0]["tokens"] == len(ref) and json.loads(tok[0]["ids"]) == ref, (tok, ref)
assert prompt is None or tok[0]["text"] == prompt, tok
stop = j["ids"][-1] if j["finish_reason"] == "stop" else None
shown = [i for i in j["ids"] if i != stop]
assert [e["id"] for e in detok] == shown, (detok, j["ids"])
assert "".join(e["text"] for e in detok) == j["text"] and all(e["direction"] == "up" for e in detok), detok
reqs = {r for (r,) in db.execute("SELECT DISTINCT request FROM slices WHERE layer IN (5, 6, 7) AND request IS NOT NULL")}
assert reqs == {1}, reqs
# The request's arrows from tokenize: down to the step that prefills it and
# the forward pass, back up through the sample to the first detokenize.
path = [f"{l}{n}" for l, n in db.execute("""
    WITH RECURSIVE c(slice, n) AS (
      SELECT id, 0 FROM slices WHERE layer = 7 AND name = 'tokenize' AND request = 1
      UNION ALL SELECT f.to_slice, n + 1 FROM c JOIN flows f ON f.from_slice = c.slice WHERE n < 64)
    SELECT s.layer, s.name FROM c JOIN slices s ON s.id = c.slice ORDER BY c.n""")]
assert path[:4] == ["7tokenize", "6admit", "6step", "5forward"] and path[-2:] == ["4sample", "7detokenize"], path
print(f"generate --trace-db: layer 7 chat_template, tokenize ({len(ref)} ids = {src}), {len(detok)} detokenize -> {j['text']}")
PY
reply=$($HIPATH run "Hi" --trace-db $d/t.db --perfetto $d/t.pftrace 2>$d/err) || { cat $d/err; fail "run exited"; }
[ "$reply" = "你好！" ] || fail "run printed '$reply'"
grep -q "the journey" $d/err || fail "no journey table"
layers=$(sqlite3 $d/t.db "SELECT count(DISTINCT layer) FROM slices")
[ "$layers" = 8 ] || fail "trace has events on $layers layers, not 8"
# The arrows from the client's request reach every layer, down and back up
# to the client's first token.
path=$(sqlite3 $d/t.db "WITH RECURSIVE c(slice, n) AS (
    SELECT id, 0 FROM slices WHERE layer = 8 AND name = 'request'
    UNION ALL SELECT f.to_slice, n + 1 FROM c JOIN flows f ON f.from_slice = c.slice WHERE n < 64)
  SELECT group_concat(s.layer || s.name, '>') FROM (SELECT * FROM c ORDER BY n) c JOIN slices s ON s.id = c.slice")
case "$path" in 8request\>7tokenize\>6admit\>6step\>5forward\>*\>4sample\>7detokenize\>6sse_chunk\>8token) ;; *) fail "request flows: '$path'";; esac
for l in 1 2 3 4 5 6 7 8; do case "$path" in *"$l"[a-z]*) ;; *) fail "request flows miss layer $l: '$path'";; esac; done
echo "run: Hi -> $reply, events on all 8 layers, flows $path"
rm -rf $d
