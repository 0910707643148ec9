#!/bin/sh
# `hipath lab 1..10` end to end on the default model on the simulated GPU:
# each exits 0 and writes its CSV/JSON with the sheet's columns and at least
# one row carrying both a prediction and a measurement, prints the same JSON
# with --json, draws its chart where matplotlib is (and says in one line,
# exit 0, where it is not), prints its 'done' line after the table and
# leaves its database as one file; lab 1's counts against the config read
# here; lab 9's figures recomputed from its requests (tests/check_lab9.py), lab
# 10's from the recorded vLLM run (tests/check_lab10.py);
# every figure the answer keys quote against this run (tests/check_lab_keys.py); each labs/sql/ query, and each SQL block of the
# sheets, run by hand in the sqlite3 shell; lab 7's by-hand 2x profile made
# without lab 7; lab 8's JSON the same twice. `run --analytic`: the 14B
# model on a W7900 traces as analytic (every layer-1 slice modeled, weights
# accounted as the config's parameter count says, little host memory); a
# 70B model is refused on it.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
OUT=build/labs
MODEL=models/tiny-hi
[ -f $MODEL/model.safetensors ] || MODEL=/tmp/thi
[ -f $MODEL/model.safetensors ] || { echo "skip: no models/tiny-hi weights (python3 models/tiny-hi/train.py)"; exit 77; }
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
command -v sqlite3 >/dev/null || { echo "skip: sqlite3 missing"; exit 77; }
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
rm -rf "$OUT"; mkdir -p "$OUT" || exit 1
fail=0

for n in 1 2 3 4 5 6 7 8 9 10; do
  "$HIPATH" lab $n --json --device sim:w7900 --model $MODEL --out $OUT/lab$n > $OUT/lab$n.stdout.json 2> $OUT/lab$n.err ||
    { echo "FAIL lab $n: exit $?: $(grep hipath: $OUT/lab$n.err | head -n 1)"; fail=1; }
  cmp -s $OUT/lab$n.stdout.json $OUT/lab$n/lab$n.json || { echo "FAIL lab $n --json: stdout is not lab$n.json"; fail=1; }
  ls $OUT/lab$n/lab$n.db-wal $OUT/lab$n/lab$n.db-shm 2>/dev/null | grep -q . && { echo "FAIL lab $n: -wal/-shm left beside lab$n.db"; fail=1; }
done

# Lab 8 is modeled and calculated throughout (analytic runs): a second run
# prints the same JSON, every figure of it.
"$HIPATH" lab 8 --json --device sim:w7900 --model $MODEL --out $OUT/lab8-again > $OUT/lab8-again.json 2> /dev/null &&
  cmp -s $OUT/lab8-again.json $OUT/lab8.stdout.json || { echo "FAIL lab 8 --json: a second run printed other figures"; fail=1; }
rm -rf $OUT/lab8-again   # its trace is the first's: 0.2 GB more on disk

# The charts, where some python3 has matplotlib (the lab's own rule); without
# it (an import that fails, through PYTHONPATH) one line, exit 0, the numbers written.
if python3 -c 'import matplotlib' 2>/dev/null || /usr/bin/python3 -c 'import matplotlib' 2>/dev/null; then
  for n in 1 2 3 4 5 6 7 8 9 10; do
    [ -s $OUT/lab$n/lab$n.png ] && [ -s $OUT/lab$n/lab$n.svg ] || { echo "FAIL lab $n: no chart: $(tail -n 3 $OUT/lab$n.err)"; fail=1; }
  done
else
  echo "note: no python3 with matplotlib here: the charts are not checked"
fi
mkdir -p $OUT/nompl/matplotlib && echo 'raise ImportError("hidden by check_labs.sh")' > $OUT/nompl/matplotlib/__init__.py
PYTHONPATH=$OUT/nompl "$HIPATH" lab 1 --device sim:w7900 --model $MODEL --out $OUT/nompl/lab1 > /dev/null 2> $OUT/nompl.err ||
  { echo "FAIL lab 1 without matplotlib: exit $?"; fail=1; }
[ "$(grep -c 'no charts' $OUT/nompl.err)" -eq 1 ] && [ -s $OUT/nompl/lab1/lab1.json ] && [ ! -e $OUT/nompl/lab1/lab1.png ] ||
  { echo "FAIL lab 1 without matplotlib: not one line and the numbers: $(cat $OUT/nompl.err)"; fail=1; }

# The table, then the done line: stdout and stderr into one file, in order.
"$HIPATH" lab 1 --device sim:w7900 --model $MODEL --out $OUT/order > $OUT/order.txt 2>&1
last_row=$(grep -n '^e2e_ms' $OUT/order.txt | cut -d: -f1); done_at=$(grep -n '^lab 1: done' $OUT/order.txt | cut -d: -f1)
[ -n "$last_row" ] && [ -n "$done_at" ] && [ "$done_at" -gt "$last_row" ] || { echo "FAIL lab 1: the done line is not after the table"; fail=1; }

python3 - "$OUT" "$MODEL" <<'PY' || fail=1
import csv, json, sys
out, model = sys.argv[1], sys.argv[2]
cols = "lab,run_id,model,device,dtype,kv_dtype,batch,prompt_len,context,quantity,unit,predicted,measured,ratio,predicted_from,measured_from,reading".split(",")
bad = 0
for n in range(1, 11):
    try:
        rows = list(csv.DictReader(open(f"{out}/lab{n}/lab{n}.csv")))
        j = json.load(open(f"{out}/lab{n}/lab{n}.json"))
    except Exception as e:
        print(f"FAIL lab {n}: {e}"); bad = 1; continue
    with open(f"{out}/lab{n}/lab{n}.csv") as f:
        if f.readline().strip().split(",") != cols: print(f"FAIL lab {n}: CSV columns"); bad = 1
    both = [r for r in rows if r["predicted"] and r["measured"]]
    if not both: print(f"FAIL lab {n}: no row with both predicted and measured"); bad = 1
    if j.get("lab") != n or len(j.get("rows", [])) != len(rows): print(f"FAIL lab {n}: JSON rows differ from the CSV"); bad = 1
    for r in both:
        p, m, q = float(r["predicted"]), float(r["measured"]), r["ratio"]
        if p and abs(float(q) - m / p) > 1e-3 * abs(m / p) + 1e-9: print(f"FAIL lab {n}: {r['quantity']} ratio {q} != {m}/{p}"); bad = 1
    print(f"ok lab {n}: {len(rows)} rows, {len(both)} predicted and measured")
# lab 1 against the config, read here
c = json.load(open(f"{model}/config.json"))
r1 = {r["quantity"]: r for r in csv.DictReader(open(f"{out}/lab1/lab1.csv"))}
want = {"ops_per_pass": 3 + 16 * c["num_hidden_layers"], "d2h_bytes_per_token": 4 * c["vocab_size"]}
for q, v in want.items():
    for col in ("predicted", "measured"):
        if abs(float(r1[q][col]) - v) > 1e-6: print(f"FAIL lab 1: {q} {col} {r1[q][col]} != {v}"); bad = 1
r2 = {r["quantity"]: r for r in csv.DictReader(open(f"{out}/lab2/lab2.csv")) if r["measured"]}
kvpt = 2 * 4 * c["num_hidden_layers"] * c["num_key_value_heads"] * c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])
if abs(float(r2["kv_bytes_per_token"]["measured"]) - kvpt) > 1e-6: print(f"FAIL lab 2: measured kv_bytes_per_token != {kvpt}"); bad = 1
sys.exit(bad)
PY

# Every figure the answer keys quote, against this run (host time reported,
# not checked: docs/testing.md); first the keys' grammar on made-up rows.
python3 tests/check_lab_keys.py --self-test || fail=1
python3 tests/check_lab_keys.py "$OUT" || fail=1
# Lab 9's percentiles, hit rate, goodput and recompute from its requests' own
# times, and its predictions from the config and the profile, recomputed in Python.
python3 tests/check_lab9.py $OUT/lab9/lab9.json || fail=1
# Lab 10's bound, queues and pool by hand from the recorded vLLM run, its
# replays' figures from their requests (tests/check_lab10.py).
python3 tests/check_lab10.py $OUT/lab10/lab10.json || fail=1

# Each SQL block of the sheets (en, zh), as a student would paste it, on its
# lab's trace with :run 1 and :req 2: no error, and some rows.
for f in labs/lab[1-9]*-*.md; do
  n=$(basename "$f" | sed 's/^lab\([0-9]*\)-.*/\1/')
  got=$(awk '/^```sql/{f=1;next} /^```/{f=0} f' "$f" | { echo ".param set :run 1"; echo ".param set :req 2"; cat; } |
        sqlite3 -bail $OUT/lab$n/lab$n.db 2>&1)
  case "$got" in
    *rror*|"") echo "FAIL $f: its SQL in the sqlite3 shell: $(echo "$got" | grep -m 2 rror)"; fail=1;;
    *) echo "ok $f: its SQL, $(echo "$got" | wc -l) rows";;
  esac
done

# Lab 7's sheet makes its 2x profile by hand (hipath lab 7 need not have run):
# its python3 block, run as written, gives a profile `run --device sim:FILE` takes.
mkdir -p $OUT/byhand/traces
awk '/^python3 - <<.EOF.$/{f=1} f{print} /^EOF$/{f=0}' labs/lab7-amdahl.md > $OUT/byhand/profile.sh
sed -i "s|layers/gpu/profiles/|$PWD/layers/gpu/profiles/|" $OUT/byhand/profile.sh
( cd $OUT/byhand && sh profile.sh ) && "$HIPATH" run --device sim:$OUT/byhand/traces/w7900-2x.json --model $MODEL --max-tokens 2 \
  --trace-db $OUT/byhand/run.db --perfetto $OUT/byhand/run.pftrace "Hi" > /dev/null 2> $OUT/byhand.err ||
  { echo "FAIL lab 7's by-hand 2x profile: $(tail -n 2 $OUT/byhand.err)"; fail=1; }

# Each query of labs/sql/ in the sqlite3 shell as its header tells a student
# (its .param set lines, then .read), on its lab's trace (lab 1's for the
# shared ones): no error, and a number in what it prints.
for f in labs/sql/*.sql; do
  n=$(basename "$f" | sed -n 's/^lab\([0-9]\)-.*/\1/p')
  db=$OUT/lab${n:-1}/lab${n:-1}.db
  got=$(sed -n 's/^--   \(\.param set .*\)$/\1/p; s/^--   \(\.read .*\)$/\1/p' "$f" | sqlite3 -bail "$db" 2>&1)
  case "$got" in
    *rror*|"") echo "FAIL $f in the sqlite3 shell: $(echo "$got" | head -n 2)"; fail=1;;
    *[0-9]*) echo "ok $f in the sqlite3 shell: $(echo "$got" | wc -l) rows";;
    *) echo "FAIL $f in the sqlite3 shell: no number in: $got"; fail=1;;
  esac
done

# analytic: 14B on a W7900
R14=tests/data/deepseek-r1-distill-qwen-14b.config.json
/usr/bin/env time -f %M -o $OUT/analytic.rss "$HIPATH" run --analytic --config $R14 --device w7900 --max-tokens 4 \
  --trace-db $OUT/analytic.db --perfetto $OUT/analytic.pftrace "Hi" > $OUT/analytic.txt 2> $OUT/analytic.err ||
  { echo "FAIL run --analytic 14B: $(grep hipath: $OUT/analytic.err | head -n 1)"; fail=1; }
grep -q "analytic: token" $OUT/analytic.txt || { echo "FAIL run --analytic: the reply does not say it is a placeholder"; fail=1; }
python3 - "$OUT" "$R14" <<'PY' || fail=1
import json, sqlite3, sys
out, cfg = sys.argv[1], json.load(open(sys.argv[2]))
db = sqlite3.connect(f"{out}/analytic.db")
dev, dom = db.execute("SELECT device, clock_domain FROM runs").fetchone()
n, modeled = db.execute("SELECT count(*), sum(clock = 'modeled') FROM slices WHERE layer = 1").fetchone()
wb = db.execute("SELECT max(value) FROM counters WHERE name = 'mem_weights_bytes'").fetchone()[0]
d, h, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
q = d; kv = cfg["num_key_value_heads"] * d // cfg["num_attention_heads"]
mat = V * d * (1 if cfg.get("tie_word_embeddings") else 2) + L * (d * q + 2 * d * kv + q * d + 3 * d * h)
vec = d + L * (2 * d + q + 2 * kv)          # norms and qwen2's q/k/v biases, resident as f32
want = 2 * mat + 4 * vec
bad = 0
if dev != "analytic:w7900" or dom != "analytic": print(f"FAIL analytic: runs says {dev}, {dom}"); bad = 1
if not n or modeled != n: print(f"FAIL analytic: {modeled} of {n} layer-1 slices modeled"); bad = 1
if abs(wb - want) > 1e-6 * want: print(f"FAIL analytic: weights accounted {wb:.0f} B, the config says {want:.0f}"); bad = 1
rss = int(open(f"{out}/analytic.rss").read().split()[-1])
if rss > 512 * 1024: print(f"FAIL analytic: {rss} kB resident for a {want/1e9:.0f} GB model"); bad = 1
if not bad: print(f"ok analytic: {n} modeled layer-1 slices, weights {wb/1e9:.2f} GB accounted, {rss/1024:.0f} MB resident")
sys.exit(bad)
PY

# a 70B model does not fit a W7900: refused before running, with the three terms
R70=labs/configs/deepseek-r1-distill-llama-70b.config.json
if "$HIPATH" run --analytic --config $R70 --device w7900 --trace-db $OUT/refused.db "Hi" > /dev/null 2> $OUT/refused.err; then
  echo "FAIL run --analytic 70B on w7900: not refused"; fail=1
else
  msg=$(cat $OUT/refused.err)
  case "$msg" in *"weights 141."*"KV"*"workspace"*"51.54 GB"*) echo "ok refused: $msg";;
    *) echo "FAIL refusal message: $msg"; fail=1;; esac
  [ "$(wc -l < $OUT/refused.err)" -eq 1 ] || { echo "FAIL refusal: not one line"; fail=1; }
  [ ! -s $OUT/refused.db ] || { echo "FAIL refusal: a trace was written"; fail=1; }
fi
exit $fail
