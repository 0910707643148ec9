#!/bin/sh
# The HIP backend's host side executed, without a GPU: `make hip-host`
# builds make HIP=cpu under AddressSanitizer + UBSan, where the launchers
# (kernels/hip/*.hip), attention.hip's per-step upload and layer 2's rt_hip
# driver (layers/runtime/hip/runtime_hip.hip) compile with the host compiler
# over layers/runtime/hip/hip_cpu_api.h and the kernels run on hip_cpu.h
# (docs/hip-cpu.md). `--device hip:0` must give the ids `--device cpu`
# gives, greedy, each chosen and top-5 logprob within TOL, at wavefronts
# of 32 and 64:
#   generate on models/tiny-hi (a chat prompt of 42 tokens: three KV
#     blocks of 16, prefill then 8 decodes; and once on 304 CUs at 64, where
#     a GEMM splits K) and on the random models of tests/ref/make_models.py
#     (f32, f16, bf16, biases, q/k norms, GQA and MQA, two shards, MLA; 36
#     prompt ids, 12 tokens), each at one wavefront, the two taking turns;
#   serve with three requests (tiny-hi, /v1/completions), against serve
#     --device cpu: one of 1 token and 16 out, streamed; once its first
#     token is back, two more (44 and 4 tokens, 8 out). Their prefills
#     join its decodes (the trace must show such a step), so the batched
#     attention runs and attention.hip's upload grows past its first
#     step's; the only timing assumed is that two requests are sent before
#     15 decode steps end.
# A traced generate checks the driver's bookkeeping: one launch a layer-4
# op, one measured kernel slice a launch, inside it and in order, and the
# device named as what it is; check_layers.py checks the HIP objects'
# calls. A greedy id may differ only where the CPU's top two are within
# NEAR_TIE (said); nothing here asserts on time.
cd "$(dirname "$0")/.." || exit 1
command -v "${CXX:-g++}" > /dev/null || { echo "skip: no C++ compiler"; exit 77; }
python3 -c "import numpy, safetensors" 2> /dev/null || { echo "skip: numpy/safetensors missing (tests/ref/make_models.py)"; exit 77; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_hip_host.XXXXXX") || exit 1
PID=""
trap '[ -n "$PID" ] && kill $PID 2> /dev/null; rm -rf "$OUT"' EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}:abort_on_error=0"
TOL=1e-3
NEAR_TIE=1e-3
HIPATH=build/hip-cpu/host-asan/hipath
make --no-print-directory -j2 hip-host > "$OUT/build.log" 2>&1 || { echo "FAIL: make hip-host"; tail -n 20 "$OUT/build.log"; exit 1; }
python3 tests/ref/make_models.py "$OUT/models" > /dev/null || { echo "FAIL: make_models.py"; exit 1; }
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
no() { fail=$((fail + 1)); echo "FAIL $1"; }

# same NAME CPU.json HIP.json: ids equal (up to a near tie), logprobs within TOL.
same() {
  python3 - "$2" "$3" $TOL $NEAR_TIE <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
tol, near = float(sys.argv[3]), float(sys.argv[4])
dist = lambda p, q: abs(p - q) if p is not None and q is not None else float("nan")   # null: NaN printed
worst, n, tie = 0.0, 0, ""
for i, (x, y) in enumerate(zip(a["logprobs"], b["logprobs"])):
    top = sorted((lp for _, lp in x["top"]), reverse=True)
    if x["id"] != y["id"]:
        if len(top) > 1 and top[0] - top[1] < near: tie = f", then a near tie at step {i}"; break
        sys.exit(f"step {i}: id {y['id']} != cpu's {x['id']}, logprob gap {top[0] - top[1]:.2e}")
    mine = dict(map(tuple, y["top"]))
    diffs = [dist(x["logprob"], y["logprob"])] + [dist(lp, mine[t]) for t, lp in x["top"] if t in mine]
    worst, n = max([worst] + diffs), n + 1
    if not max(diffs) <= tol: sys.exit(f"step {i}: logprobs differ by {max(diffs):.2e} > {tol}")
else:
    if len(a["ids"]) != len(b["ids"]): sys.exit(f"{len(b['ids'])} ids, cpu {len(a['ids'])}")
print(f"{n} ids equal{tie}, logprobs within {worst:.1e}")
PY
}

# why [FILE]: its first sanitizer line, else its last hipath line, else its last ($OUT/err).
why() {
  f=${1:-$OUT/err}
  grep -m1 -E 'ERROR: AddressSanitizer|runtime error' "$f" || grep '^hipath:' "$f" | tail -n 1 | grep . || tail -n 1 "$f"
}

# gen NAME MODEL ARGS...: cpu once, then hip:0 at each wavefront ($WAVES: 32 and 64).
gen() {
  name=$1 model=$2; shift 2
  "$HIPATH" generate --model "$model" --device cpu --json --top-logprobs 5 --ignore-eos "$@" > "$OUT/cpu.json" 2> "$OUT/err" ||
    { no "$name cpu: $(why)"; return; }
  for w in ${WAVES:-32 64}; do
    HIPATH_CPU_WAVE=$w "$HIPATH" generate --model "$model" --device hip:0 --json --top-logprobs 5 --ignore-eos "$@" \
      > "$OUT/hip.json" 2> "$OUT/err" || { no "$name wave $w: $(why)"; continue; }
    if r=$(same "$name" "$OUT/cpu.json" "$OUT/hip.json" 2>&1); then ok "$name wave $w: $r"; else no "$name wave $w: $r"; fi
  done
}

gen tiny-hi models/tiny-hi --max-tokens 8 \
  --prompt "Hi! This message is long enough that its prompt fills three blocks of the KV cache."
# MI300X's 304 CUs: the prompt's down_proj (4 tiles, K = 512) splits K in 2 (matmul.hip's split-K),
# at MI300X's own wavefront (tests/hip_cpu runs the split kernel at both)
HIPATH_CPU_CUS=304 WAVES=64 gen "tiny-hi on 304 CUs" models/tiny-hi --max-tokens 8 \
  --prompt "Hi! This message is long enough that its prompt fills three blocks of the KV cache."
IDS=$(python3 -c "print(','.join(str((7 * i * i + 3) % 251 + 3) for i in range(36)))")
# each reference model at one wavefront, the two taking turns (tiny-hi above runs both;
# tests/hip_cpu runs every kernel at both): each model still against the cpu
w=32
for m in "$OUT"/models/*/; do
  case $(basename "$m") in bad-*) continue;; esac
  WAVES=$w gen "$(basename "$m")" "$m" --prompt-ids "$IDS" --max-tokens 12
  w=$((96 - w))
done

# The driver's bookkeeping, from a trace.
HIPATH_CPU_WAVE=32 "$HIPATH" generate --model models/tiny-hi --device hip:0 --prompt "Hi" --max-tokens 4 \
  --trace-db "$OUT/t.db" --perfetto "$OUT/t.pftrace" > /dev/null 2> "$OUT/err" || no "traced generate: $(why)"
if r=$(python3 - "$OUT/t.db" <<'PY' 2>&1
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda sql: db.execute(sql).fetchone()
dev, dom = q("SELECT device, clock_domain FROM runs")
ops = q("SELECT count(*) FROM slices WHERE layer = 4 AND direction = 'down' AND step IS NOT NULL")[0]
launches = q("SELECT count(*) FROM slices WHERE layer = 3")[0]
kernels, measured = q("SELECT count(*), sum(clock = 'measured' AND dur_ns >= 0) FROM slices WHERE layer = 1 AND track = 1")
# One stream: launch i's kernel is kernel slice i, it ran inside its launch
# call here (the stream is synchronous), and the kernels do not overlap.
L = db.execute("SELECT name, dur_ns FROM slices WHERE layer = 3 ORDER BY ts_ns").fetchall()
K = db.execute("SELECT name, ts_ns, dur_ns FROM slices WHERE layer = 1 AND track = 1 ORDER BY ts_ns").fetchall()
pairs = [i for i, (l, k) in enumerate(zip(L, K)) if l[0] != k[0] or not 0 <= k[2] <= l[1]]
overlaps = [i for i in range(len(K) - 1) if K[i][1] + K[i][2] > K[i + 1][1]]
load = q("SELECT args FROM slices WHERE name = 'code_object_load'")
arch, name = (json.loads(load[0])["arch"], json.loads(load[0])["name"]) if load else (None, None)
bad = []
if dev != "hip:0" or dom != "host-monotonic": bad.append(f"run on {dev}, clock {dom}")
if not ops or launches != ops: bad.append(f"{ops} ops, {launches} launches")
if kernels != launches or measured != kernels: bad.append(f"{launches} launches, {kernels} kernel slices, {measured} measured")
if pairs: bad.append(f"launch {pairs[0]} ({L[pairs[0]]}) and its kernel slice ({K[pairs[0]]}) disagree")
if overlaps: bad.append(f"kernel slices {overlaps[0]} and {overlaps[0] + 1} overlap")
if arch != "cpu-wave32" or name != "HIP emulated on the CPU by hip_cpu.h": bad.append(f"code_object_load on {name}, arch {arch}")
if bad: sys.exit("; ".join(bad))
print(f"{ops} ops, each one launch and one measured kernel slice within it, in order; arch {arch}")
PY
); then ok "trace: $r"; else no "trace: $r"; fi

# serve: three requests at once, on hip:0 and on cpu.
serve() {   # serve NAME ARGS...: start on a free port, set PORT and PID
  : > "$OUT/$1.log"
  n=$1; shift
  "$HIPATH" serve --model models/tiny-hi --port 0 --kv-cache-mb 4 --max-model-len 128 "$@" > "$OUT/$n.log" 2>&1 &
  PID=$!
  for i in $(seq 1 600); do
    PORT=$(sed -n 's/.*at http:\/\/127\.0\.0\.1:\([0-9]*\)\/v1.*/\1/p' "$OUT/$n.log")
    [ -n "$PORT" ] && return 0
    kill -0 $PID 2> /dev/null || break
    sleep 0.1
  done
  no "serve $n did not start: $(why "$OUT/$n.log")"
  return 1
}
ask() {   # ask NAME: the three requests; then SIGTERM, a clean exit
  python3 - "$PORT" "$OUT/$1.json" <<'PY' || no "serve $1: the requests failed"
import json, sys, threading, urllib.request
port, out = sys.argv[1], sys.argv[2]
LONG = "Hello, memory is the thing that holds every token of the prompt in blocks, and this prompt is long enough for three"
def post(body):
    body.update(temperature=0, ignore_eos=True, logprobs=1)
    r = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    return urllib.request.urlopen(r, timeout=600)
res, first = [None] * 3, threading.Event()
def streamed():   # request 0, streamed: the others are sent once its first token is back
    got = {"tokens": [], "token_logprobs": []}
    with post({"prompt": "Hello", "max_tokens": 16, "stream": True}) as r:
        for line in r:
            line = line.decode().strip()
            c = json.loads(line[6:])["choices"] if line.startswith("data: {") else None
            if c and c[0].get("logprobs"):
                for k in got: got[k] += c[0]["logprobs"][k]
                first.set()
    first.set()
    res[0] = got
def later(i, prompt):
    first.wait()
    res[i] = json.load(post({"prompt": prompt, "max_tokens": 8}))["choices"][0]["logprobs"]
ts = [threading.Thread(target=streamed), threading.Thread(target=later, args=(1, LONG)), threading.Thread(target=later, args=(2, "Good morning"))]
for t in ts: t.start()
for t in ts: t.join()
json.dump(res, open(out, "w"))
PY
  kill -TERM $PID; wait $PID; rc=$?; PID=""
  [ $rc -eq 0 ] || no "serve $1: exit $rc: $(why "$OUT/$1.log")"
}
if serve cpu --device cpu; then ask cpu; fi
export HIPATH_CPU_WAVE=64
if serve hip --device hip:0 --trace-db "$OUT/s.db" --perfetto "$OUT/s.pftrace"; then ask hip; fi
unset HIPATH_CPU_WAVE
if [ -s "$OUT/cpu.json" ] && [ -s "$OUT/hip.json" ]; then
  if r=$(python3 - "$OUT/cpu.json" "$OUT/hip.json" "$OUT/s.db" $TOL <<'PY' 2>&1
import json, sqlite3, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
tol, worst = float(sys.argv[4]), 0.0
for i, (x, y) in enumerate(zip(a, b)):
    if not x["tokens"]: sys.exit(f"request {i}: no tokens on cpu (the end of the turn is not listed): nothing to compare")
    if x["tokens"] != y["tokens"]: sys.exit(f"request {i}: tokens {y['tokens']} != cpu's {x['tokens']}")
    worst = max([worst] + [abs(p - q) if p is not None and q is not None else float("nan") for p, q in zip(x["token_logprobs"], y["token_logprobs"])])
if not worst <= tol: sys.exit(f"logprobs differ by {worst:.2e} > {tol}")
db = sqlite3.connect(sys.argv[3])
steps = db.execute("SELECT json_extract(args, '$.seqs') AS s, json_extract(args, '$.tokens') FROM slices WHERE name = 'forward'").fetchall()
multi = [(s, t) for s, t in steps if s >= 2]
mixed = [(s, t) for s, t in multi if t > s]
if not mixed: sys.exit(f"no step of the {len(steps)} ran a prefill beside another sequence: {steps}")
print(f"3 requests' tokens equal, logprobs within {worst:.1e}; {len(multi)} of {len(steps)} steps ran several "
      f"sequences (up to {max(s for s, _ in multi)}), {len(mixed)} of them a prefill beside a decode")
PY
  ); then ok "serve: $r"; else no "serve: $r"; fi
fi

# The HIP objects obey the layer diagram too (calls, by nm).
if r=$(python3 tests/check_layers.py build/hip-cpu/host-asan 2>&1); then ok "layers: $r"; else no "layers: $r"; fi

# The device says what it is.
if r=$(HIPATH_CPU_WAVE=32 "$HIPATH" device --device hip:0 2>&1) && echo "$r" | grep -q '"name":"HIP emulated on the CPU' &&
   echo "$r" | grep -q '"wavefront_size":32'; then ok "device: $r"; else no "device: $r"; fi

# --jit has no compiler here: one line, and the built-in kernels run.
"$HIPATH" generate --model models/tiny-hi --device hip:0 --jit --prompt-ids 1,2,3 --max-tokens 2 --json > /dev/null 2> "$OUT/err" &&
  [ "$(grep -c . "$OUT/err")" -eq 1 ] && grep -q "no run-time compiler" "$OUT/err" && ok "--jit refused: $(cat "$OUT/err")" ||
  no "--jit: $(cat "$OUT/err")"

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
