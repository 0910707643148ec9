#!/bin/sh
# Tracing overhead: the same greedy generation with tracing off and fully on
# (SQLite + Perfetto, every op and every kernel launch traced on the
# simulated GPU), median wall time of several runs each, alternating.
#   sh bench/trace_overhead.sh [MODEL_DIR ...]
# Default: models/tiny-hi and a random model with Qwen2.5-0.5B's shapes.
set -e
cd "$(dirname "$0")/.."
M05=build/bench/qwen2.5-0.5b
[ $# -gt 0 ] || { [ -f $M05/model.safetensors ] || python3 bench/make_random_model.py $M05 >/dev/null; set -- models/tiny-hi $M05; }
python3 - "$@" <<'PY'
import os, sqlite3, statistics, subprocess, sys, time
def gen(model, trace):
    cmd = ["build/hipath", "generate", "--model", model, "--device", "sim:w7900", "--max-tokens", "32"]
    cmd += ["--prompt", "What is a token?"] if os.path.exists(model + "/tokenizer.json") else ["--prompt-ids", "1,2,3,4,5,6,7,8"]
    if trace:
        for f in ("/tmp/ovh.db", "/tmp/ovh.db-wal", "/tmp/ovh.db-shm", "/tmp/ovh.pftrace"):
            if os.path.exists(f): os.remove(f)
        cmd += ["--trace-db", "/tmp/ovh.db", "--perfetto", "/tmp/ovh.pftrace"]
    t = time.perf_counter(); subprocess.run(cmd, check=True, capture_output=True); return time.perf_counter() - t
for model in sys.argv[1:]:
    gen(model, False)                                   # warm the page cache
    off, on = [], []
    for _ in range(5):
        off.append(gen(model, False)); on.append(gen(model, True))
    db = sqlite3.connect("/tmp/ovh.db")
    events = sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("slices", "counters", "args"))
    a, b = statistics.median(off), statistics.median(on)
    print(f"{model}: off {a*1e3:.1f} ms, on {b*1e3:.1f} ms, overhead {100*(b-a)/a:+.1f}% of wall, "
          f"{events} rows written ({events/b:.0f} rows/s of wall), pftrace {os.path.getsize('/tmp/ovh.pftrace')/1e3:.0f} kB")
PY
