#!/bin/sh
# `hipath replay` (issue 45): the first 20 requests of the real vLLM run of
# Llama-3.1-8B on an RTX PRO 6000 Server Edition (tests/data/replay/)
# replayed; every statistic recomputed in Python, the real ones from the
# recorded timestamps and the modeled ones from per_request; the first
# request alone against a by-hand step-time model (check_replay.py); bad
# input (a line not JSON, a missing field, timestamps out of order, an
# unknown flag, a block size hipath has not) refused in one line naming it;
# the chart script's SVG well-formed; --trace gives the same figures and
# a layer-6 step slice per step, --kernel-sample 100 the kernels of every
# 100th step; the excerpt's every step by hand (check_replay.py: which
# requests, which chunks, each step's device time from the sampled steps'
# kernels, each request's first and last token).
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_replay.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
RUN=tests/data/replay/llama-3.1-8b
ARGS="--config tests/data/llama-3.1-8b.config.json --device rtx-pro-6000-server --engine-meta $RUN/meta.json --json"
head -n 20 $RUN/requests.jsonl > "$OUT/excerpt.jsonl"
head -n 1 $RUN/requests.jsonl > "$OUT/one.jsonl"
"$HIPATH" replay "$OUT/excerpt.jsonl" $ARGS > "$OUT/excerpt.json" 2> "$OUT/err" || { echo "FAIL: replay of 20: exit $?: $(cat "$OUT/err")"; exit 1; }
"$HIPATH" replay "$OUT/excerpt.jsonl" $ARGS --trace "$OUT/excerpt.db" --kernel-sample 100 > "$OUT/traced.json" 2> "$OUT/err" || { echo "FAIL: traced replay of 20: exit $?: $(cat "$OUT/err")"; exit 1; }
"$HIPATH" replay "$OUT/one.jsonl" $ARGS > "$OUT/one.json" 2> "$OUT/err" || { echo "FAIL: replay of 1: exit $?: $(cat "$OUT/err")"; exit 1; }
python3 tests/check_replay.py "$OUT" > "$OUT/py" 2>&1
PY=$?
grep -v "passed, .* failed" "$OUT/py"
set -- $(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$OUT/py")
pass=${1:-0} fail=${2:-1}
[ $PY -eq 0 ] || [ "$fail" -gt 0 ] || fail=1

# traced, --kernel-sample 100: the same figures; a step slice per step, an admission per
# request; layers 4-1 only in steps 0, 100, 200, ... (and between steps), each marked
# kernel_detail and holding its kernels
python3 - "$OUT" <<'PY' && pass=$((pass + 1)) || fail=$((fail + 1))
import json, sqlite3, sys
out = sys.argv[1]
a, b = json.load(open(f"{out}/excerpt.json")), json.load(open(f"{out}/traced.json"))
db = sqlite3.connect(f"{out}/excerpt.db")
n = dict(db.execute("SELECT name, count(*) FROM slices WHERE layer = 6 GROUP BY name").fetchall())
low = {s for (s,) in db.execute("SELECT DISTINCT step FROM slices WHERE layer < 5 AND step IS NOT NULL")}
marked = {s for (s,) in db.execute("SELECT step FROM slices WHERE name = 'kernel_detail'")}
with_kernels = {s for (s,) in db.execute("SELECT DISTINCT step FROM slices WHERE layer = 1 AND name = 'gemm'")}
want = set(range(0, a["engine"]["steps"], 100))
ok = a["metrics"] == b["metrics"] and n.get("step") == a["engine"]["steps"] and n.get("admit") == 20 and low == marked == with_kernels == want
ok or print(f"FAIL: traced replay: same figures {a['metrics'] == b['metrics']}, steps {n.get('step')} of {a['engine']['steps']}, admits {n.get('admit')}, "
            f"steps below layer 5 {sorted(low)}, marked {sorted(marked)}, with kernels {sorted(with_kernels)}, want {sorted(want)}")
sys.exit(not ok)
PY

# the chart: well-formed SVG with its 8 lines (2 CDFs x real/modeled, 2 counts x real/modeled)
if python3 labs/replay_chart.py "$OUT/excerpt.json" "$OUT/chart.svg" &&
   python3 -c "import sys, xml.etree.ElementTree as E; n = len(E.parse(sys.argv[1]).getroot().findall('{http://www.w3.org/2000/svg}polyline')); sys.exit(n != 8)" "$OUT/chart.svg"; then
  pass=$((pass + 1))
else echo "FAIL: replay_chart.py: no SVG of 8 lines"; fail=$((fail + 1)); fi

# refused: one line on stderr, naming what (and the line), non-zero exit
refused() {   # $1 what, $2 a string the line must hold, then the arguments
  what=$1 want=$2; shift 2
  if "$HIPATH" replay "$@" > /dev/null 2> "$OUT/bad.err"; then echo "FAIL: $what: taken"; fail=$((fail + 1)); return; fi
  if [ "$(wc -l < "$OUT/bad.err")" -ne 1 ] || ! grep -q -- "$want" "$OUT/bad.err"; then
    echo "FAIL: $what: not one line with '$want': $(cat "$OUT/bad.err")"; fail=$((fail + 1)); return
  fi
  pass=$((pass + 1))
}
{ head -n 2 $RUN/requests.jsonl; echo '{"request_id": "x", "input_toks": 12, '; sed -n 3p $RUN/requests.jsonl; } > "$OUT/bad1.jsonl"
refused "a line not JSON" "bad1.jsonl:3: not a JSON object" "$OUT/bad1.jsonl" $ARGS
{ head -n 3 $RUN/requests.jsonl; echo '{"input_toks": 12, "output_toks": 3, "queued_ts": 479760.0, "first_token_ts": 479760.5}'; } > "$OUT/bad2.jsonl"
refused "a missing field" "bad2.jsonl:4: no number 'last_token_ts'" "$OUT/bad2.jsonl" $ARGS
{ sed -n 2p $RUN/requests.jsonl; sed -n 1p $RUN/requests.jsonl; } > "$OUT/bad3.jsonl"
refused "out of order" "bad3.jsonl:2: queued_ts before" "$OUT/bad3.jsonl" $ARGS
refused "an unknown flag" "unknown or incomplete option '--speculate'" "$OUT/one.jsonl" $ARGS --speculate
refused "a block size of 32" "block-size" "$OUT/one.jsonl" $ARGS --block-size 32
refused "no config" "--config and --device" "$OUT/one.jsonl" --device rtx-pro-6000-server
refused "no such file" "cannot open" "$OUT/none.jsonl" $ARGS
refused "a kernel sample without a trace" "give --trace" "$OUT/one.jsonl" $ARGS --kernel-sample 10
refused "a kernel sample of 0" "kernel-sample must be" "$OUT/one.jsonl" $ARGS --trace "$OUT/x.db" --kernel-sample 0
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
