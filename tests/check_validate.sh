#!/bin/sh
# `hipath validate` (issue 29): the published measurements
# (tests/data/gpu_measurements.json) parse and are sourced (12 rows or more,
# 5 profiles or more, at most half calibrate); every row runs on its
# analytic profile; its figures are modeled or published, so a row run
# alone gives the same as in the whole run; each modeled figure is its time's
# arithmetic and at least as slow as the calculator's bound; the calibration
# recomputed here from the rows' own fields gives the same calibrated
# figures; a bad table is refused in one line.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_validate.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
"$HIPATH" validate --json --out "$OUT/all" > "$OUT/all.json" 2> "$OUT/all.err" || { echo "FAIL: validate exit $?: $(tail -n 3 "$OUT/all.err")"; exit 1; }
for id in rtx4090-l2-7b-q4_0-tg128 w7900-l2-7b-q4_0-pp3968 a100-llama-2-7b-fp16-trt090-b32-2048-128; do
  "$HIPATH" validate --json --only $id --out "$OUT/one" > "$OUT/$id.json" 2>> "$OUT/one.err" || { echo "FAIL: validate --only $id: exit $?"; exit 1; }
done
printf '{"rows": [{"id": "x", "gpu": "h100", "model": "m", "config": "c", "dtype": "fp4", "engine": "e", "batch": 1,
  "prompt_len": 1, "gen_len": 1, "phase": "decode", "measured_tokens_per_s": 1}]}' > "$OUT/bad.json"
"$HIPATH" validate --data "$OUT/bad.json" --out "$OUT/bad" > /dev/null 2> "$OUT/bad.err" && { echo "FAIL: a bad dtype was taken"; exit 1; }
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
check(len(rows) >= 12 and len(gpus) >= 5, f"{len(rows)} published rows over {len(gpus)} profiles ({', '.join(sorted(gpus))})")
check(len(src) == len(rows), f"{len(src)} of {len(rows)} rows name their source's title, date, place and address")
check(sum(r["calibrate"] for r in rows) * 2 <= len(rows), f"{sum(r['calibrate'] for r in rows)} of {len(rows)} rows calibrate: at most half")
check(len({r["id"] for r in rows}) == len(rows), "the ids are unique")

by = {r["id"]: r for r in got["rows"]}
ran = [r for r in got["rows"] if "not_run" not in r and r["modeled_tokens_per_s"]]
check(len(ran) == len(rows), f"{len(ran)} of {len(rows)} rows ran on their analytic profile")

# Modeled: tokens over the modeled time, and that time no faster than the bound.
def tokens(r):
    return r["batch"] * (r["prompt_len"] if r["phase"] == "prefill" else 1 if r["phase"] == "decode" else r["gen_len"])
arith = [r["id"] for r in ran if abs(r["modeled_tokens_per_s"] * (r["modeled_waves_s"] + r["modeled_launch_s"]) - tokens(r)) > 1e-6 * tokens(r)
         or abs(r["ratio"] - r["modeled_tokens_per_s"] / r["measured_tokens_per_s"]) > 1e-9 * r["ratio"]]
check(not arith, f"each modeled figure is its tokens over its modeled time, its ratio modeled / measured {arith[:3]}")
for r in ran:
    if r["phase"] != "decode":
        continue
    t = rows[[x["id"] for x in rows].index(r["id"])]
    dt = {"fp8": "int8", "q8_0": "int8"}.get(t["dtype"], t["dtype"])
    b = json.loads(subprocess.run([hipath, "bounds", "--config", t["config"], "--device", t["gpu"], "--dtype", dt, "--kv-dtype", {"fp8": "int8"}.get(t["kv_dtype"], t["kv_dtype"]),
                                   "--context", str(t["prompt_len"] + t["gen_len"] // 2), "--json"], capture_output=True, text=True).stdout)
    step = r["modeled_waves_s"] + r["modeled_launch_s"]
    check(step >= b["decode"]["t_lower_s"] * 0.999, f"{r['id']}: a modeled decode step {step * 1e3:.3f} ms, the calculator's bound "
          f"{b['decode']['t_lower_s'] * 1e3:.3f} ms")

# The same row alone gives the same figures: nothing in them is host time.
for f in ("rtx4090-l2-7b-q4_0-tg128", "w7900-l2-7b-q4_0-pp3968", "a100-llama-2-7b-fp16-trt090-b32-2048-128"):
    one = next(r for r in json.load(open(f"{out}/{f}.json"))["rows"] if r["id"] == f)
    keys = ("modeled_tokens_per_s", "modeled_waves_s", "modeled_launch_s", "efficiency")
    check(all(one[k] == by[f][k] for k in keys), f"{f}: alone as in the whole run: " + ", ".join(f"{k} {one[k]}" for k in keys[:1]))

# Calibration recomputed: each profile's efficiency (the median of its calibrate
# rows' waves / (measured time - launches), per phase), else the phase's over every gpu.
def eff(r):
    t = tokens(r) / r["measured_tokens_per_s"]
    return r["modeled_waves_s"] / (t - r["modeled_launch_s"]) if t > r["modeled_launch_s"] else None
cal = [r for r in ran if r["role"] == "calibrate" and eff(r) is not None]
worst = 0.0
for r in ran:
    e = [eff(c) for c in cal if c["phase"] == r["phase"] and c["gpu"] == r["gpu"]] or [eff(c) for c in cal if c["phase"] == r["phase"]]
    want = tokens(r) / (r["modeled_launch_s"] + r["modeled_waves_s"] / statistics.median(e))
    worst = max(worst, abs(r["calibrated_tokens_per_s"] / want - 1))
check(worst < 1e-9, f"the calibrated figures recomputed here from the rows' fields (worst relative difference {worst:.1e})")
h = got["held_out_decode"]
print(f"note held out: {h['within_25_percent']} of {h['rows']} decode and e2e rows within 25% after calibration; median error "
      f"{100 * h['median_abs_error_datasheet']:.0f}% from the datasheet, {100 * h['median_abs_error_calibrated']:.0f}% calibrated (not checked)")
sys.exit(1 if bad else 0)
PY
rc=$?
[ "$(wc -l < "$OUT/bad.err")" -eq 1 ] && grep -q "dtype" "$OUT/bad.err" || { echo "FAIL: a bad table: not one line naming the dtype: $(cat "$OUT/bad.err")"; rc=1; }
[ $rc -eq 0 ] && echo "check_validate: all passed" || echo "check_validate: FAILED"
exit $rc
