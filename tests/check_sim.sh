#!/bin/sh
# The simulated GPU computes with the CPU twins, so `--device sim:w7900` must
# give the very ids `--device cpu` gives, on every reference model shape
# (GQA, tied f16, qwen2 biases, qwen3 q/k norms); and its decode step must
# take at least the model's modeled kernel time (a launch latency per kernel).
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
python3 -c "import numpy, safetensors" 2>/dev/null || { echo "skip: numpy/safetensors missing"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
python3 tests/ref/make_models.py "$tmp" >/dev/null || { echo "FAIL: make_models.py"; exit 1; }
GEN="--prompt-ids 3,17,42,5,9,100,7 --max-tokens 12 --json"
fail=0
for m in "$tmp"/*/; do
  name=$(basename "$m")
  case "$name" in bad-*) continue;; esac   # the loader's refusals: check_reference.sh
  good=$m
  "$HIPATH" generate --model "$m" $GEN --device cpu > "$tmp/cpu.json" || { echo "FAIL $name: cpu run"; fail=1; continue; }
  "$HIPATH" generate --model "$m" $GEN --device sim:w7900 > "$tmp/sim.json" 2> "$tmp/sim.err" ||
    { echo "FAIL $name: sim run: $(cat "$tmp/sim.err")"; fail=1; continue; }
  python3 - "$tmp/cpu.json" "$tmp/sim.json" "$name" <<'PY' || fail=1
import json, sys
cpu, sim = (json.load(open(p)) for p in sys.argv[1:3])
name = sys.argv[3]
if cpu["ids"] != sim["ids"]:
    sys.exit(f"FAIL {name}: sim ids {sim['ids']} != cpu ids {cpu['ids']}")
# >= ~10 kernels per layer, each at least the W7900's 5 us launch latency
if not sim["decode_s_per_token"] > 50e-6:
    sys.exit(f"FAIL {name}: modeled decode step {sim['decode_s_per_token']} s is below the kernels' launch latencies")
print(f"ok {name}: {len(sim['ids'])} ids equal; modeled decode step {sim['decode_s_per_token']*1e6:.0f} us")
PY
done
# The trace: on sim each op (layer 4) is one slice holding its one kernel
# launch (layer 3); on cpu the ops have no launches and take measured time.
for dev in sim:w7900 cpu; do
  rm -f "$tmp"/t.db*
  "$HIPATH" generate --model "$good" $GEN --device $dev --trace-db "$tmp/t.db" > /dev/null 2>&1 ||
    { echo "FAIL: traced $dev run"; fail=1; continue; }
  python3 - "$tmp/t.db" "$dev" <<'PY' || fail=1
import sqlite3, sys
db, dev = sqlite3.connect(sys.argv[1]), sys.argv[2]
q = lambda sql: db.execute(sql).fetchone()[0]
ops = q("SELECT count(*) FROM slices WHERE layer = 4 AND direction = 'down' AND step IS NOT NULL")
launches = q("SELECT count(*) FROM slices WHERE layer = 3")
if dev == "cpu":
    if launches or not ops or q("SELECT count(*) FROM slices WHERE layer = 4 AND dur_ns <= 0"):
        sys.exit(f"FAIL cpu trace: {ops} ops, {launches} launches, ops with no time")
    print(f"ok cpu trace: {ops} ops, each with measured time, no launches")
    sys.exit()
outside = q("""SELECT count(*) FROM slices l WHERE l.layer = 3 AND NOT EXISTS (
                 SELECT 1 FROM slices o WHERE o.layer = 4 AND o.step = l.step AND o.thread = l.thread
                   AND o.ts_ns <= l.ts_ns AND l.ts_ns + l.dur_ns <= o.ts_ns + o.dur_ns)""")
if ops != launches or outside:
    sys.exit(f"FAIL sim trace: {ops} ops, {launches} launches, {outside} launches outside their op")
print(f"ok sim trace: {ops} ops, each holding its launch")
PY
done
# Device selection: bad names are refused with one line, auto says what it chose.
"$HIPATH" generate --model "$good" $GEN --device sim:nosuch 2> "$tmp/e" && { echo "FAIL: sim:nosuch accepted"; fail=1; }
[ "$(wc -l < "$tmp/e")" -eq 1 ] && grep -q "unknown device 'nosuch'" "$tmp/e" || { echo "FAIL: sim:nosuch message: $(cat "$tmp/e")"; fail=1; }
"$HIPATH" generate --model "$good" $GEN --device auto 2> "$tmp/e" > /dev/null || { echo "FAIL: --device auto"; fail=1; }
grep -q "device auto -> " "$tmp/e" || { echo "FAIL: auto did not say which device it chose"; fail=1; }
[ $fail -eq 0 ] && echo "sim: ids match the CPU on every model"
exit $fail
