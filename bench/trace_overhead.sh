#!/bin/sh
# Tracing overhead, two ways, for each model (default: models/tiny-hi and a
# random model with Qwen2.5-0.5B's shapes), on the simulated GPU so that
# every op and every kernel launch is traced (SQLite + Perfetto):
# 1. the generation: build/bench/trace_overhead loads the model and times
#    the same greedy generation untraced and traced, alternately, in
#    pairs, each run 20 ms after the one before (PAIRS, default 200 for
#    tiny-hi, BIG_PAIRS=8 for the large model):
#    the median of the pairs' ratios and its 95% interval. This is what
#    tracing distorts: the engine's work on the host clock.
# 2. the whole process (RUNS=5): `hipath generate` untraced and traced,
#    which also opens the files and, in trace_close, writes what the
#    idle-priority writer had not written yet and builds the indexes; with
#    rows written, the writer's CPU time during the run, and the engine
#    steps' longest vs median duration (a recording thread held up by trace
#    writing shows as one long step).
#   sh bench/trace_overhead.sh [MODEL_DIR ...]
set -e
cd "$(dirname "$0")/.."
make --no-print-directory bench >/dev/null
M05=build/bench/qwen2.5-0.5b
[ $# -gt 0 ] || { [ -f $M05/model.safetensors ] || python3 bench/make_random_model.py $M05 >/dev/null; set -- models/tiny-hi $M05; }
for model in "$@"; do
  case "$model" in *tiny*) pairs=${PAIRS:-200};; *) pairs=${BIG_PAIRS:-8};; esac
  build/bench/trace_overhead "$model" sim:w7900 32 "$pairs"
done
python3 - "$@" <<'PY'
import os, re, resource, sqlite3, statistics, subprocess, sys, time
def gen(model, trace):
    cmd = ["build/hipath", "generate", "--model", model, "--device", "sim:w7900", "--max-tokens", "32", "--json"]
    cmd += ["--prompt", "What is a token?"] if os.path.exists(model + "/tokenizer.json") else ["--prompt-ids", "1,2,3,4,5,6,7,8"]
    if trace:
        for f in ("/tmp/ovh.db", "/tmp/ovh.db-wal", "/tmp/ovh.db-shm", "/tmp/ovh.pftrace"):
            if os.path.exists(f): os.remove(f)
        cmd += ["--trace-db", "/tmp/ovh.db", "--perfetto", "/tmp/ovh.pftrace"]
    r0, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, check=True, capture_output=True, text=True, env=dict(os.environ, HIPATH_TRACE_STATS="1"))
    wall, r1 = time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN)
    stats = re.search(r"writing ([0-9.]+) ms of CPU during the run, close ([0-9.]+) ms", p.stderr)
    for line in p.stderr.splitlines():
        if line.startswith("trace:"): print("  " + line)       # waits or losses, if any
    close = float(stats.group(2)) / 1e3 if stats else 0.0
    return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, close, stats
for model in sys.argv[1:]:
    gen(model, False)                                   # warm the page cache
    off, on = [], []
    for _ in range(int(os.environ.get("RUNS", 5))):
        off.append(gen(model, False)); on.append(gen(model, True))
    db = sqlite3.connect("/tmp/ovh.db")
    rows = sum(db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("slices", "counters", "flows"))
    steps = [r[0] for r in db.execute("SELECT dur_ns FROM slices WHERE layer = 6 AND name = 'step'")]
    med = lambda runs, i: statistics.median(x[i] for x in runs)
    a, ca, b, cb = med(off, 0), med(off, 1), med(on, 0), med(on, 1)
    close_b = med(on, 2)
    write_cpu = float(on[-1][3].group(1)) if on[-1][3] else float("nan")
    print(f"{model}: process wall off {a*1e3:.1f} ms, on {b*1e3:.1f} ms ({100*(b-a)/a:+.1f}%), of which trace_close {close_b*1e3:.1f} ms;"
          f" cpu off {ca*1e3:.0f} ms, on {cb*1e3:.0f} ms ({100*(cb-ca)/ca:+.1f}%);"
          f" {rows} rows ({rows/b:.0f} rows/s of traced wall), writer CPU during the run {write_cpu:.0f} ms,"
          f" pftrace {os.path.getsize('/tmp/ovh.pftrace')/1e3:.0f} kB;"
          f" steps: longest {max(steps)/1e6:.2f} ms, median {statistics.median(steps)/1e6:.2f} ms;"
          f" load {os.getloadavg()[0]:.1f}")
PY
