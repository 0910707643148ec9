#!/bin/sh
# `hipath validate` (issue 29): the published measurements
# (tests/data/gpu_measurements.json) parse and are sourced (60 rows or more
# over the 7 profiles, 10 prefill rows or more at several prompt lengths, at
# most half calibrate; a first-token latency is the prompt over it, a batch's
# latency its generated tokens over it); every row runs on its
# analytic profile; its figures are modeled or published, so a row run
# alone gives the same as in the whole run, and the summary trace the same
# as the full one (--full-trace); each modeled figure is its time's
# arithmetic and at least as slow as the calculator's bound; the kernel-class
# fit (issue 44) recomputed here with numpy from the rows' own fields (its own
# column rule, the profiles' peaks, its own count of each row's requests, its
# own Levenberg-Marquardt) gives the same efficiencies, calibrated and
# leave-one-source-out figures, and the medians per phase (and per split: one
# GPU, tp, pp); a bad table is refused in one line. Multi-GPU rows (issue
# 46): 10 or more; a tp row's all-reduces are in its time, a per-GPU figure is
# its tokens over the GPUs; a pp row's kernels are those of the same shape on
# one GPU (its stages run one after another) and its hand-offs (pp - 1) x
# (T x dim x 4 bytes / the pair's bandwidth + alpha) from the profile JSON,
# with tp x pp the same beside tp's all-reduces (rows made here from the
# table's own); an ep row (one made here) is listed, not modeled, in no figure;
# a served row's concurrency is its batch.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_validate.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
"$HIPATH" validate --json --out "$OUT/all" > "$OUT/all.json" 2> "$OUT/all.err" || { echo "FAIL: validate exit $?: $(tail -n 3 "$OUT/all.err")"; exit 1; }
for id in rtx4090-l2-7b-q4_0-tg128 w7900-l2-7b-q4_0-pp3968 a100-llama-2-7b-fp16-trt090-b32-2048-128 h100-llama-2-70b-fp8-trt080-tp8-ttft-2048 rtx4090x8-l3-8b-f16-pp512-pp8; do
  "$HIPATH" validate --json --only $id --out "$OUT/one" > "$OUT/$id.json" 2>> "$OUT/one.err" || { echo "FAIL: validate --only $id: exit $?"; exit 1; }
  "$HIPATH" validate --json --full-trace --only $id --out "$OUT/full" > "$OUT/$id.full.json" 2>> "$OUT/one.err" || { echo "FAIL: validate --full-trace --only $id: exit $?"; exit 1; }
done
# two pp rows of the table, each beside its twins on one GPU, on tp 2, and as tp 2 x pp 4
python3 - "$OUT/twins.json" <<'PY'
import json, sys
rows = {r["id"]: r for r in json.load(open("tests/data/gpu_measurements.json"))["rows"]}
out = []
for i in ("rtx4090x8-l3-8b-f16-pp512-pp8", "rtx4090x8-l3-8b-f16-tg512-pp8"):
    r = rows[i]
    out += [r, {**r, "id": i + "-one", "pp": 1}, {**r, "id": i + "-tp2", "pp": 1, "tp": 2}, {**r, "id": i + "-tp2pp4", "pp": 4, "tp": 2}]
json.dump({"rows": out}, open(sys.argv[1], "w"))
PY
"$HIPATH" validate --json --data "$OUT/twins.json" --out "$OUT/twins" > "$OUT/twins.out.json" 2>> "$OUT/one.err" || { echo "FAIL: validate of the pp twins: exit $?"; exit 1; }
printf '{"rows": [{"id": "x", "gpu": "h100", "model": "m", "config": "c", "dtype": "fp4", "engine": "e", "batch": 1,
  "prompt_len": 1, "gen_len": 1, "phase": "decode", "measured_tokens_per_s": 1, "source": {"url": "u"}}]}' > "$OUT/bad.json"
"$HIPATH" validate --data "$OUT/bad.json" --out "$OUT/bad" > /dev/null 2> "$OUT/bad.err" && { echo "FAIL: a bad dtype was taken"; exit 1; }
sed 's/"fp4"/"bf16", "kv_dtype": "bf16", "ep": 2/; s/"config": "c"/"config": "tests\/data\/llama-2-7b.config.json"/' "$OUT/bad.json" > "$OUT/ep.json"
"$HIPATH" validate --json --data "$OUT/ep.json" --out "$OUT/ep" > "$OUT/ep.out.json" 2>> "$OUT/one.err" || { echo "FAIL: validate of an ep row: exit $?"; exit 1; }
sed 's/"fp4"/"fp8", "kv_dtype": "fp8", "tp": 0.5/' "$OUT/bad.json" > "$OUT/badtp.json"
"$HIPATH" validate --data "$OUT/badtp.json" --out "$OUT/bad" > /dev/null 2> "$OUT/badtp.err" && { echo "FAIL: tp 0.5 was taken"; exit 1; }
sed 's/"fp4"/"fp8", "kv_dtype": "fp8"/; s/"measured_tokens_per_s"/"measured_latency_s"/' "$OUT/bad.json" > "$OUT/badlat.json"
"$HIPATH" validate --data "$OUT/badlat.json" --out "$OUT/bad" > /dev/null 2> "$OUT/badlat.err" && { echo "FAIL: a decode row's batch latency was taken"; exit 1; }
python3 - "$OUT" "$HIPATH" <<'PY'
import json, statistics, subprocess, sys
out, hipath = sys.argv[1], sys.argv[2]
table = json.load(open("tests/data/gpu_measurements.json"))
got = json.load(open(f"{out}/all.json"))
bad = 0
def check(ok, what):
    global bad
    bad += not ok
    print(("ok   " if ok else "FAIL ") + what)

rows = table["rows"]
gpus = {r["gpu"] for r in rows}
src = [r for r in rows if all(r["source"].get(k) for k in ("title", "date", "where", "url"))]
check(len(rows) >= 60 and len(gpus) >= 7, f"{len(rows)} published rows over {len(gpus)} profiles ({', '.join(sorted(gpus))})")
def gpus_of(r):
    return r.get("tp", 1) * r.get("pp", 1) * r.get("ep", 1) * r.get("dp", 1)
multi = [r for r in rows if gpus_of(r) > 1]
check(len(multi) >= 10 and all(all(isinstance(r.get(k, 1), int) and r.get(k, 1) >= 1 for k in ("tp", "pp", "ep", "dp")) for r in multi),
      f"{len(multi)} multi-GPU rows (tp {sorted({r.get('tp', 1) for r in multi})}, pp {sorted({r.get('pp', 1) for r in multi})})")
pre = [r for r in rows if r["phase"] == "prefill"]
check(len(pre) >= 10 and len({r["prompt_len"] for r in pre}) >= 4, f"{len(pre)} prefill rows at prompt lengths {sorted({r['prompt_len'] for r in pre})}")
check(len(src) == len(rows), f"{len(src)} of {len(rows)} rows name their source's title, date, place and address")
check(sum(r["calibrate"] for r in rows) * 2 <= len(rows), f"{sum(r['calibrate'] for r in rows)} of {len(rows)} rows calibrate: at most half")
check(len({r["id"] for r in rows}) == len(rows), "the ids are unique")

by = {r["id"]: r for r in got["rows"]}
lat = [r for r in rows if "measured_first_token_ms" in r]
check(all("measured_tokens_per_s" not in r and r["phase"] == "prefill" and abs(by[r["id"]]["measured_tokens_per_s"] -
          r["prompt_len"] / (r["measured_first_token_ms"] / 1e3)) < 1e-9 * by[r["id"]]["measured_tokens_per_s"] for r in lat),
      f"{len(lat)} first-token latencies: prefill rows, measured tokens/s = the prompt over the published time")
blat = [r for r in rows if "measured_latency_s" in r]
check(blat and all("measured_tokens_per_s" not in r and "concurrency" not in r and r["phase"] == "e2e" and by[r["id"]]["measured_latency_s"] == r["measured_latency_s"]
                   and abs(by[r["id"]]["measured_tokens_per_s"] - r["batch"] * r["gen_len"] / r["measured_latency_s"]) < 1e-9 * by[r["id"]]["measured_tokens_per_s"] for r in blat),
      f"{len(blat)} batch latencies: e2e rows at a stated batch, measured tokens/s = batch x gen_len over the published time")
later = [r for r in rows if max(r.get(k, 1) for k in ("ep", "dp")) > 1]
listed = [r for r in got["rows"] if "not_modeled_yet" in r]
check({r["id"] for r in listed} == {r["id"] for r in later} and all(r["modeled_tokens_per_s"] is None and r["loso_tokens_per_s"] is None for r in listed),
      f"{len(listed)} ep/dp rows listed as not modeled yet, with no figure")
ep = json.load(open(f"{out}/ep.out.json"))["rows"][0]
check(ep["not_modeled_yet"] == "ep" and ep["modeled_tokens_per_s"] is None and ep["loso_tokens_per_s"] is None,
      "an ep row (none in the table; one made here) is listed as not modeled yet (ep), with no figure")
ran = [r for r in got["rows"] if "not_run" not in r and "not_modeled_yet" not in r and r["modeled_tokens_per_s"]]
check(len(ran) == len(rows) - len(later), f"{len(ran)} of {len(rows) - len(later)} modeled rows ran on their analytic profile")
conc = [r for r in rows if "concurrency" in r]
check(all(by[r["id"]]["batch"] == r["concurrency"] == by[r["id"]]["concurrency"] and r["phase"] == "e2e" for r in conc),
      f"{len(conc)} served rows at a stated concurrency, each run as a batch of it")

# Modeled: tokens (per GPU where the figure is) over the modeled time, the
# all-reduces of a tp row in it, and that time no faster than the bound.
def tokens(r):
    n = r["batch"] * (r["prompt_len"] if r["phase"] == "prefill" else 1 if r["phase"] == "decode" else r["gen_len"])
    return n / (r["tp"] * r["pp"] * r["ep"] * r["dp"]) if r["measured_per_gpu"] else n
def step_s(r):
    return r["modeled_waves_s"] + r["modeled_launch_s"] + r["modeled_collective_s"] + r["modeled_handoff_s"]
arith = [r["id"] for r in ran if abs(r["modeled_tokens_per_s"] * step_s(r) - tokens(r)) > 1e-6 * tokens(r)
         or abs(r["ratio"] - r["modeled_tokens_per_s"] / r["measured_tokens_per_s"]) > 1e-9 * r["ratio"]]
check(not arith, f"each modeled figure is its tokens over its modeled time, its ratio modeled / measured {arith[:3]}")
tpr = [r for r in ran if r["tp"] > 1]
check(tpr and all(r["modeled_collective_s"] > 0 for r in tpr) and all(r["modeled_collective_s"] == 0 for r in ran if r["tp"] == 1),
      f"{len(tpr)} tp rows ran with their all-reduces timed (none on one GPU)")
ppr = [r for r in ran if r["pp"] > 1]
check(len(ppr) >= 18 and all(r["modeled_handoff_s"] > 0 and r["loso_tokens_per_s"] for r in ppr) and all(r["modeled_handoff_s"] == 0 for r in ran if r["pp"] == 1),
      f"{len(ppr)} pp rows ran with their hand-offs timed (none on one stage), each predicted leave-one-source-out")

# A pp row against the same shape on one GPU (and tp 2 x pp 4 against tp 2):
# the same kernels, now spread over stages that run one after another, so the
# same waves and launches; the all-reduces of its tp; and pp - 1 hand-offs of
# x (T x dim f32) a step, each bytes / beta_pair + alpha, from the profile JSON.
tw = {r["id"]: r for r in json.load(open(f"{out}/twins.out.json"))["rows"]}
link = json.load(open("layers/gpu/profiles/rtx4090.json"))["interconnect"]
beta = link["link_bytes_per_s"] * (link["links"] if link["topology"] == "switch" else 1)
dim = json.load(open("tests/data/llama-3-8b.config.json"))["hidden_size"]
for i in ("rtx4090x8-l3-8b-f16-pp512-pp8", "rtx4090x8-l3-8b-f16-tg512-pp8"):
    for pp, tp, base in ((8, 1, i + "-one"), (4, 2, i + "-tp2")):
        r, one = tw[i if tp == 1 else i + "-tp2pp4"], tw[base]
        T = r["prompt_len"] if r["phase"] == "prefill" else r["batch"]
        hand = (pp - 1) * (T * dim * 4 / beta + link["latency_s"])
        kern = abs(r["modeled_waves_s"] + r["modeled_launch_s"] - one["modeled_waves_s"] - one["modeled_launch_s"]) / (one["modeled_waves_s"] + one["modeled_launch_s"])
        t = one["modeled_waves_s"] + one["modeled_launch_s"] + one["modeled_collective_s"] + hand
        check(kern < 1e-6 and abs(r["modeled_collective_s"] - one["modeled_collective_s"]) < 1e-9 and abs(r["modeled_handoff_s"] / hand - 1) < 1e-6
              and abs(r["modeled_tokens_per_s"] * t / tokens(r) - 1) < 1e-6,
              f"{r['id']}: tp {tp} x pp {pp}: kernels as on {tp} GPU(s) (relative difference {kern:.1e}), hand-offs "
              f"{r['modeled_handoff_s'] * 1e3:.4f} ms, by hand {hand * 1e3:.4f} ms, tokens/s {r['modeled_tokens_per_s']:.5g} = {tokens(r) / t:.5g}")
for r in ran:
    if r["phase"] != "decode":
        continue
    t = rows[[x["id"] for x in rows].index(r["id"])]
    dt = {"fp8": "int8", "q8_0": "int8"}.get(t["dtype"], t["dtype"])
    b = json.loads(subprocess.run([hipath, "bounds", "--config", t["config"], "--device", t["gpu"], "--dtype", dt, "--kv-dtype", {"fp8": "int8"}.get(t["kv_dtype"], t["kv_dtype"]),
                                   "--context", str(t["prompt_len"] + t["gen_len"] // 2), "--tp", str(t.get("tp", 1)), "--json"], capture_output=True, text=True).stdout)
    step = r["modeled_waves_s"] + r["modeled_launch_s"]
    check(step >= b["decode"]["t_lower_s"] * 0.999, f"{r['id']}: a modeled decode step {step * 1e3:.3f} ms, the calculator's bound "
          f"{b['decode']['t_lower_s'] * 1e3:.3f} ms")

# The same row alone gives the same figures: nothing in them is host time
# (the tp 8 row is of a shape run before it: the whole run takes its split).
for f in ("rtx4090-l2-7b-q4_0-tg128", "w7900-l2-7b-q4_0-pp3968", "a100-llama-2-7b-fp16-trt090-b32-2048-128", "h100-llama-2-70b-fp8-trt080-tp8-ttft-2048",
          "rtx4090x8-l3-8b-f16-pp512-pp8"):
    one = next(r for r in json.load(open(f"{out}/{f}.json"))["rows"] if r["id"] == f)
    keys = ("modeled_tokens_per_s", "modeled_waves_s", "modeled_launch_s", "modeled_collective_s", "modeled_handoff_s", "efficiency")
    check(all(one[k] == by[f][k] for k in keys), f"{f}: alone as in the whole run: " + ", ".join(f"{k} {one[k]}" for k in keys[:1]))

# The summary trace (one slice per step and kernel class) against the full one
# (every kernel a slice): the same modeled figures, from far fewer slices.
for f in ("rtx4090-l2-7b-q4_0-tg128", "w7900-l2-7b-q4_0-pp3968", "a100-llama-2-7b-fp16-trt090-b32-2048-128", "h100-llama-2-70b-fp8-trt080-tp8-ttft-2048",
          "rtx4090x8-l3-8b-f16-pp512-pp8"):
    one = next(r for r in json.load(open(f"{out}/{f}.json"))["rows"] if r["id"] == f)
    full = next(r for r in json.load(open(f"{out}/{f}.full.json"))["rows"] if r["id"] == f)
    worst = max(abs(one[k] / full[k] - 1) if full[k] else abs(one[k]) for k in ("modeled_tokens_per_s", "modeled_waves_s", "modeled_launch_s", "modeled_collective_s", "modeled_handoff_s"))
    worst = max([worst] + [abs(one["modeled_class_s"][c] - full["modeled_class_s"][c]) / full["modeled_waves_s"] for c in full["modeled_class_s"]])
    check(worst < 1e-12, f"{f}: the summary trace gives the full trace's figures (worst relative difference {worst:.1e})")

# The kernel-class fit, recomputed. A row's time under parameters p (mu per
# class, delta per column): copies + sum_c part_c * exp(mu_c + delta_col(row, c)),
# the launches as a sixth class, 1 ms a timed request a seventh (prompt
# attention at the fp16 peak, not fp32); minimised: sum pseudo-Huber(log T / measured)
# + ridge. Columns from the table's own engine and dtype fields.
import numpy as np
fit = got["fit"]
classes = [c["class"] for c in fit["classes"]]
columns = [c["column"] for c in fit["columns"]]
prof = {g: json.load(open(f"layers/gpu/profiles/{g}.json"))["peak_flops"] for g in gpus}
table = {r["id"]: r for r in rows}
def column(r, c):
    t = table[r["id"]]
    llama = t["engine"].startswith("llama.cpp")
    fam = "served" if not llama else "llama.cpp-rocm" if ("ROCm" in t["engine"] or "HIP" in t["engine"]) else "llama.cpp-cuda"
    quant = t["dtype"] in ("q4_0", "q4_1", "q8_0")
    if c == "gemm_compute":
        g = "served" if not llama else (fam + "-quant") if quant else "llama.cpp-dense"
        return columns.index(f"{c}/{g}")
    return columns.index("elementwise" if c == "elementwise" else f"{c}/{fam}")
def parts(r):
    t = table[r["id"]]
    requests = 1 / t["gen_len"] if t["phase"] == "decode" else 1   # tgN: one request over N steps
    a = [r["modeled_class_s"][c] for c in classes[:-2]] + [r["modeled_launch_s"], requests * 1e-3]
    if t["engine"].startswith("llama.cpp") and t["dtype"] in ("q4_0", "q4_1", "q8_0"):   # dequantized to fp16 GEMMs
        a[0] *= prof[r["gpu"]]["int8"] / prof[r["gpu"]]["fp16"]
    a[classes.index("attention_prefill")] *= prof[r["gpu"]]["fp32"] / prof[r["gpu"]]["fp16"]   # on the matrix cores
    return a
A = np.array([parts(r) for r in ran])
C = np.array([[column(r, c) for c in classes] for r in ran])
B = np.array([r["modeled_class_s"]["copy"] + r["modeled_collective_s"] + r["modeled_handoff_s"] for r in ran])   # not fitted
T = np.array([tokens(r) / r["measured_tokens_per_s"] for r in ran])
check(np.allclose([sum(r["modeled_class_s"].values()) for r in ran], [r["modeled_waves_s"] for r in ran], rtol=1e-9, atol=0),
      "each row's waves are the sum of its kernel classes' and its copies'")
nc, nk = len(classes), len(columns)
lam = np.array([fit["lambda_mu"]] * nc + [fit["lambda_delta"]] * nk)
S = 0.25   # the pseudo-Huber scale (validate_fit.h)
def model(p, m):
    th = p[:nc][None, :] + p[nc:][C[m]]
    terms = A[m] * np.exp(th)
    return B[m] + terms.sum(1), terms
def objective(p, m):
    z = np.log(model(p, m)[0] / T[m])
    return (2 * S * S * (np.sqrt(1 + (z / S) ** 2) - 1)).sum() + (lam * p * p).sum()
def gradient(p, m):
    s, terms = model(p, m)
    z = np.log(s / T[m])
    dz = terms / s[:, None]                   # d z / d theta_c
    J = np.zeros((len(s), nc + nk))
    for c in range(nc):
        J[:, c] += dz[:, c]
        np.add.at(J, (np.arange(len(s)), nc + C[m][:, c]), dz[:, c])
    return J, z
def solve(m):
    p, eta, F = np.zeros(nc + nk), 1e-3, objective(np.zeros(nc + nk), m)
    for _ in range(2000):
        J, z = gradient(p, m)
        w = 1 / np.sqrt(1 + (z / S) ** 2)
        step = -np.linalg.solve((J * w[:, None]).T @ J + np.diag(lam) + eta * np.eye(len(p)), (J * w[:, None]).T @ z + lam * p)
        Ft = objective(p + step, m)
        if Ft <= F:
            p, F, eta = p + step, Ft, max(eta / 10, 1e-12)
            if abs(step).max() < 1e-12:
                break
        else:
            eta *= 10
    return p
cal = np.array([r["role"] == "calibrate" for r in ran])
mine = solve(cal)
theirs = np.array([c["mu"] for c in fit["classes"]] + [c["delta"] for c in fit["columns"]])
J, z = gradient(theirs, cal)
grad = (J * (z / np.sqrt(1 + (z / S) ** 2))[:, None]).sum(0) + lam * theirs
check(abs(mine - theirs).max() < 1e-6 and abs(grad).max() < 1e-6,
      f"the fit to {cal.sum()} calibrate rows: numpy's parameters within {abs(mine - theirs).max():.1e} of hipath's, "
      f"the objective's gradient there {abs(grad).max():.1e}")
eff = np.exp(-(theirs[:nc][[classes.index(c["class"]) for c in fit["columns"]]] + theirs[nc:]))
check(np.allclose(eff, [c["efficiency"] for c in fit["columns"]], rtol=1e-9), "each column's efficiency is exp(-(mu + delta))")
pred = np.array([tokens(r) for r in ran]) / model(mine, np.ones(len(ran), bool))[0]
worst = max(abs(r["calibrated_tokens_per_s"] / pred[i] - 1) for i, r in enumerate(ran))
check(worst < 1e-6, f"the calibrated figures recomputed from numpy's fit (worst relative difference {worst:.1e})")
# Leave-one-source-out: each source's rows predicted by a fit to every other row.
src = np.array([r["source"] for r in ran])
check(all(r["source"] == table[r["id"]]["source"]["url"] for r in ran), "each row's source is its table row's address")
loso = np.zeros(len(ran))
for s in sorted(set(src)):
    p = solve(src != s)
    loso[src == s] = np.array([tokens(r) for r in ran])[src == s] / model(p, np.ones(len(ran), bool))[0][src == s]
worst = max(abs(r["loso_tokens_per_s"] / loso[i] - 1) for i, r in enumerate(ran))
check(worst < 1e-6, f"the leave-one-source-out figures of {len(set(src))} sources recomputed (worst relative difference {worst:.1e})")
for ph in got["per_phase"]:
    sel = [i for i, r in enumerate(ran) if r["phase"] == ph["phase"]]
    med = statistics.median(abs(loso[i] / ran[i]["measured_tokens_per_s"] - 1) for i in sel) if sel else None
    held = [abs(ran[i]["calibrated_tokens_per_s"] / ran[i]["measured_tokens_per_s"] - 1) for i in sel if not cal[i]]
    ok = (med is None or abs(ph["loso_median_abs_error"] - med) < 1e-6) and (not held or abs(ph["held_out_median_abs_error_calibrated"] - statistics.median(held)) < 1e-9)
    check(ok and ph["loso_rows"] == len(sel), f"{ph['phase']}: median error held out {ph['held_out_median_abs_error_calibrated']}, "
          f"leave-one-source-out {ph['loso_median_abs_error']} over {len(sel)} rows, recomputed")
# The medians per split (one GPU, tp, pp: pp with or without tp), from the rows and the table's own tp and pp.
def split(r):
    t = table[r["id"]]
    return "pp" if t.get("pp", 1) > 1 else "tp" if t.get("tp", 1) > 1 else "one_gpu"
def med(v):
    return statistics.median(v) if v else None
want = []
for sp in ("one_gpu", "tp", "pp"):
    for ph in ("prefill", "decode", "e2e"):
        sel = [r for r in ran if split(r) == sp and r["phase"] == ph]
        if sel:
            want.append((sp, ph, len(sel), med([abs(r["modeled_tokens_per_s"] / r["measured_tokens_per_s"] - 1) for r in sel]),
                         med([abs(r["calibrated_tokens_per_s"] / r["measured_tokens_per_s"] - 1) for r in sel if r["role"] == "held_out"]),
                         med([abs(r["loso_tokens_per_s"] / r["measured_tokens_per_s"] - 1) for r in sel])))
have = [(o["split"], o["phase"], o["rows"], o["median_abs_error"], o["held_out_median_abs_error_calibrated"], o["loso_median_abs_error"])
        for o in got["per_split_phase"]]
check(len(have) == len(want) and all(a[:3] == b[:3] and all((x is None and y is None) or abs(x - y) < 1e-9 for x, y in zip(a[3:], b[3:]))
                                     for a, b in zip(have, want)),
      "per split and phase, recomputed: " + "; ".join(f"{w[0]} {w[1]} {w[2]} rows, held out {w[4]:.2f}" for w in want if w[0] == "pp"))
h = got["held_out_decode"]
print(f"note held out: {h['within_25_percent']} of {h['rows']} decode and e2e rows within 25% after calibration; median error "
      f"{100 * h['median_abs_error_datasheet']:.0f}% from the datasheet, {100 * h['median_abs_error_calibrated']:.0f}% calibrated (not checked)")
sys.exit(1 if bad else 0)
PY
rc=$?
[ "$(wc -l < "$OUT/bad.err")" -eq 1 ] && grep -q "dtype" "$OUT/bad.err" || { echo "FAIL: a bad table: not one line naming the dtype: $(cat "$OUT/bad.err")"; rc=1; }
[ "$(wc -l < "$OUT/badtp.err")" -eq 1 ] && grep -q "tp, pp, ep and dp" "$OUT/badtp.err" || { echo "FAIL: tp 0.5: not one line naming tp: $(cat "$OUT/badtp.err")"; rc=1; }
[ "$(wc -l < "$OUT/badlat.err")" -eq 1 ] && grep -q "measured_latency_s" "$OUT/badlat.err" || { echo "FAIL: a decode row's batch latency: not one line naming it: $(cat "$OUT/badlat.err")"; rc=1; }
[ $rc -eq 0 ] && echo "check_validate: all passed" || echo "check_validate: FAILED"
exit $rc
