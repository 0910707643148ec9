#!/bin/sh
# hipath against llama.cpp on the same GGUF file (SmolLM2-135M-Instruct Q4_1,
# or QUANT=Q4_0 / Q8_0: the Q4_1 file requantized by llama.cpp's own
# quantizer, every tensor that type, into models/), the same prompt ids, the
# same thread count, batch 1, greedy: prefill tok/s, decode tok/s, peak RSS
# (/usr/bin/time -v), the median of RUNS runs each.
#
#   sh bench/llamacpp_race.sh            THREADS=2 RUNS=5 N=64 QUANT=Q4_1 by default
#   HIPATH_ENV="GOMP_SPINCOUNT=0" sh bench/llamacpp_race.sh
#                                        extra environment for hipath alone (this
#                                        one: no spin, every region a futex wake)
#                                        (llama.cpp runs its own libgomp, spinning)
#
# llama.cpp comes from PyPI's llama-cpp-python (pinned below), compiled from
# source into build/llamacpp-venv on first use (about 20 minutes on 2 cores).
# Its timings are llama.cpp's own counters (llama_perf_context); its RSS
# includes the Python interpreter, shown separately as "python alone".
# llama.cpp runs twice: as it comes, and with use_extra_bufts off ("no
# repack"). On a CPU with AMX (this machine's) it repacks every Q4_1 matrix
# at load into an AMX/AVX512-VNNI tile layout; without that it runs its
# generic Q4_1 x Q8_1 AVX2 dot products, the method hipath's kernels follow.
cd "$(dirname "$0")/.." || exit 1
THREADS=${THREADS:-2}
RUNS=${RUNS:-5}
N=${N:-64}
PROMPT=${PROMPT:-"Write a short story about a robot who learns to paint."}
VENV=${LLAMACPP_VENV:-build/llamacpp-venv}
LLAMA_CPP_PYTHON=llama-cpp-python==0.3.16
HIPATH=${HIPATH:-build/hipath}
HIPATH_ENV=${HIPATH_ENV:-}
QUANT=${QUANT:-Q4_1}
OUT=build/race/$QUANT.t$THREADS

[ -x "$HIPATH" ] || { echo "$HIPATH is not built (run make)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing (apt-get install time)" >&2; exit 1; }
MODEL=$(sh scripts/get-smollm2.sh) || exit 1
case $QUANT in Q4_1|Q4_0|Q8_0) ;; *) echo "QUANT must be Q4_1, Q4_0 or Q8_0, got '$QUANT'" >&2; exit 1;; esac
if ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
  echo "building $LLAMA_CPP_PYTHON into $VENV (compiles llama.cpp; takes a while)..." >&2
  python3 -m venv "$VENV" &&
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) CMAKE_ARGS="-DGGML_NATIVE=ON" \
      "$VENV/bin/pip" install --no-cache-dir "$LLAMA_CPP_PYTHON" >&2 ||
    { echo "cannot build $LLAMA_CPP_PYTHON" >&2; exit 1; }
fi
mkdir -p "$OUT" || exit 1
if [ "$QUANT" != Q4_1 ]; then   # pure: every tensor QUANT (else the tied embedding would be Q6_K)
  SRC=$MODEL MODEL=models/SmolLM2-135M-Instruct.$QUANT.gguf
  if [ ! -f "$MODEL" ]; then "$VENV/bin/python" - "$SRC" "$MODEL.part" "$QUANT" <<'PY' >&2 && mv "$MODEL.part" "$MODEL" || exit 1
import ctypes, sys, llama_cpp as c
p = c.llama_model_quantize_default_params()
p.ftype = {"Q4_0": c.LLAMA_FTYPE_MOSTLY_Q4_0, "Q8_0": c.LLAMA_FTYPE_MOSTLY_Q8_0}[sys.argv[3]]
p.allow_requantize, p.pure = True, True
sys.exit(c.llama_model_quantize(sys.argv[1].encode(), sys.argv[2].encode(), ctypes.byref(p)))
PY
  fi
fi

# The prompt as hipath's chat template and tokenizer make it; both engines get these ids.
IDS=$("$HIPATH" generate --model "$MODEL" --prompt "$PROMPT" --max-tokens 1 --temperature 0 --json |
      python3 -c "import json, sys; print(','.join(map(str, json.load(sys.stdin)['prompt_ids'])))") || exit 1

# bench/llamacpp_run.py with llama_model_default_params patched to turn repacking off
NO_REPACK='import runpy, sys, llama_cpp.llama_cpp as c
default = c.llama_model_default_params
def no_repack():
    p = default(); p.use_extra_bufts = False; return p
c.llama_model_default_params = no_repack
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")'

for r in $(seq "$RUNS"); do
  env OMP_NUM_THREADS="$THREADS" $HIPATH_ENV /usr/bin/time -v "$HIPATH" generate --model "$MODEL" --prompt-ids "$IDS" \
    --max-tokens "$N" --temperature 0 --json > "$OUT/hipath.$r.json" 2> "$OUT/hipath.$r.time" || exit 1
  /usr/bin/time -v "$VENV/bin/python" bench/llamacpp_run.py "$MODEL" "$IDS" "$N" "$THREADS" \
    > "$OUT/llamacpp.$r.json" 2> "$OUT/llamacpp.$r.time" || { cat "$OUT/llamacpp.$r.time" >&2; exit 1; }
  /usr/bin/time -v "$VENV/bin/python" -c "$NO_REPACK" bench/llamacpp_run.py "$MODEL" "$IDS" "$N" "$THREADS" \
    > "$OUT/norepack.$r.json" 2> "$OUT/norepack.$r.time" || { cat "$OUT/norepack.$r.time" >&2; exit 1; }
done
/usr/bin/time -v "$VENV/bin/python" -c "import llama_cpp" 2> "$OUT/python.time" || exit 1

exec python3 - "$OUT" "$RUNS" "$THREADS" "$N" "$QUANT" <<'PY'
import json, re, statistics, sys
out, runs, threads, n, quant = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def rss_mb(path):
    return int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", open(path).read()).group(1)) / 1024
def runs_of(name):
    rows = []
    for r in range(1, runs + 1):
        j = json.load(open(f"{out}/{name}.{r}.json"))
        n_prompt = j.get("n_prompt", len(j.get("prompt_ids", [])))
        rows.append({"prefill": n_prompt / j["prefill_s"], "decode": 1 / j["decode_s_per_token"],
                     "rss": rss_mb(f"{out}/{name}.{r}.time"), "n_prompt": n_prompt, "n_out": len(j["ids"])})
    return {k: statistics.median(x[k] for x in rows) for k in rows[0]}
h, l, nr = runs_of("hipath"), runs_of("llamacpp"), runs_of("norepack")
py = rss_mb(f"{out}/python.time")
kernel = json.load(open(f"{out}/hipath.1.json")).get("cpu_kernel", "?")
print(f"SmolLM2-135M-Instruct {quant}, {h['n_prompt']:.0f} prompt tokens, {h['n_out']:.0f} / {l['n_out']:.0f} / {nr['n_out']:.0f} generated, "
      f"{threads} threads, batch 1, greedy, median of {runs}; hipath's kernel {kernel}")
print(f"{'':18}{'hipath':>9}{'llama.cpp':>11}{'no repack':>11}{'hipath / llama.cpp':>20}{'/ no repack':>13}")
for key, label, unit in (("prefill", "prefill", "tok/s"), ("decode", "decode", "tok/s"), ("rss", "peak RSS", "MB")):
    print(f"{label + ' (' + unit + ')':18}{h[key]:9.1f}{l[key]:11.1f}{nr[key]:11.1f}{h[key] / l[key]:20.2f}{h[key] / nr[key]:13.2f}")
print(f"{'python alone (MB)':18}{'':9}{py:11.1f}   (inside llama.cpp's RSS)")
PY