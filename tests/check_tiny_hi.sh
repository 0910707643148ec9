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
reply=$($HIPATH run "Hi" --trace-db $d/t.db --perfetto $d/t.pftrace 2>$d/err) || { cat $d/err; fail "run exited"; }
[ "$reply" = "你好！" ] || fail "run printed '$reply'"
grep -q "the journey" $d/err || fail "no journey table"
layers=$(sqlite3 $d/t.db "SELECT count(DISTINCT layer) FROM slices")
[ "$layers" = 8 ] || fail "trace has events on $layers layers, not 8"
path=$(sqlite3 $d/t.db "SELECT group_concat(a.layer || a.name || '>' || b.layer || b.name, ' ') FROM flows f
  JOIN slices a ON a.id = f.from_slice JOIN slices b ON b.id = f.to_slice WHERE f.flow_id < 0")
[ "$path" = "8request>7tokenize 7tokenize>6step" ] || fail "request flows: '$path'"
echo "run: Hi -> $reply, events on all 8 layers, flows $path"
rm -rf $d
