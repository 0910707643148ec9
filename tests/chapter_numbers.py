#!/usr/bin/env python3
"""chapter_numbers.py -- every worked number of chapter 1 of the AI-infrastructure
textbook (../shared/seeds/ai-infra-ch1.zh-Hant.txt) against `hipath bounds --json`
and `hipath amdahl --json`.

A row is a number as the chapter prints it (typed here from the text, in the
chapter's unit), the same quantity from hipath, and their ratio; it passes within
0.5%. Where the chapter rounds loosely or approximates, `hand` is the value worked
out here by hand from the chapter's own inputs, hipath is checked against that,
and the note says why (docs/bounds.md, "The chapter's numbers and hipath's").
Exercises print no answer: their rows check hipath against hand values.
Numbers no hipath command computes (a network link, a packet rate) are checked as
arithmetic, so that the table holds every worked number.

  python3 tests/chapter_numbers.py              check; exit 1 on any failure
  python3 tests/chapter_numbers.py --markdown   the tables in docs/bounds.md
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HIPATH = os.environ.get("HIPATH", "build/hipath")
TOL = 0.005
R70 = "labs/configs/deepseek-r1-distill-llama-70b.config.json"   # the real 70B
T70 = "tests/data/chapter-1-1-70e9.config.json"                  # example 1-1's N = 70e9, see below
QWEN3 = "labs/configs/qwen3-8b.config.json"
GB, GiB, MiB, KiB = 1e9, 2**30, 2**20, 2**10
ms = 1e3   # seconds -> ms

# Example 1-1 works on a rounded model: N = 70e9 parameters, each read once a
# step and used in one multiply-add (R = b_W N, F = 2 B N). T70 is that model:
# the 70B's shape with a tied vocabulary of 188,921 rows, 70.000e9 parameters;
# a tied table is read whole as the LM head, so every parameter is read once.
ROUND = ["--config", T70, "--device", "h100", "--dtype", "int8", "--compute-dtype", "bf16", "--prompt-len", "1"]
# Section 1.2.3's capacity, on the real 70B in the chapter's scheme and conventions.
SCHEME = ["--config", R70, "--device", "h100", "--dtype", "int8", "--group-size", "128", "--compute-dtype", "bf16",
          "--device-gb", "decimal"]
QWEN = ["--config", QWEN3, "--device", "rtx-pro-6000", "--prompt-len", "2048", "--context", "2048"]
BF16 = ["--config", R70, "--device", "h100", "--dtype", "bf16", "--device-gb", "decimal"]
REAL = ["--config", R70, "--device", "h100", "--dtype", "int8", "--compute-dtype", "bf16", "--prompt-len", "1"]
tmp = tempfile.mkdtemp(prefix="hipath-chapter-")


def hipath(cmd, *args):
    out = subprocess.run([HIPATH, cmd, "--json", *args], capture_output=True, text=True)
    if out.returncode:
        sys.exit(f"FAIL hipath {cmd} {' '.join(args)}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def bounds(*args): return hipath("bounds", *args)
def amdahl(*args): return hipath("amdahl", *args)["rows"][0]


def swap(args, flag, value):
    """The arguments with `flag`'s value replaced."""
    i = args.index(flag)
    return args[:i + 1] + [value] + args[i + 2:]


def h100_scaled(name, bandwidth, peak):
    """The H100's profile with its bandwidth and every peak scaled, as a file."""
    p = json.load(open("layers/gpu/profiles/h100.json"))
    p["memory_bandwidth_bytes_per_s"] *= bandwidth
    p["peak_flops"] = {k: v * peak for k, v in p["peak_flops"].items()}
    path = os.path.join(tmp, name + ".json")
    json.dump(p, open(path, "w"))
    return path


SECTIONS, ROWS = [], []


def section(tag, title):
    SECTIONS.append((tag, title))


def row(what, chapter, shown, hipath_value, cmd, hand=None, note=""):
    """chapter: the printed number (None for an exercise); shown: as printed;
    hand: the reference when the chapter's number is loose or absent."""
    ref = hand if hand is not None else chapter
    ok = hipath_value == ref if isinstance(ref, bool) else abs(hipath_value / ref - 1) <= TOL
    ROWS.append(dict(tag=SECTIONS[-1][0], section=SECTIONS[-1][1], what=what, chapter=chapter, shown=shown, hipath=hipath_value,
                     cmd=cmd, hand=hand, note=note, ok=ok))


# ---- 1.2.1 Amdahl ------------------------------------------------------------
section("1.2.1", "1.2.1 Amdahl (`hipath amdahl`)")
a = amdahl("--fraction", "1/201", "--speedup", "2", "--time", "201")
row("20 seeks x 10 ms + 1 ms CPU; CPU 2x faster saves (ms)", 0.5, "0.5 ms", a["time_before"] - a["time_after"], "amdahl --fraction 1/201 --speedup 2 --time 201")
a = amdahl("--fraction", "200/201", "--speedup", "2", "--time", "201")
row("half the seeks saves (ms)", 100, "100 ms", a["time_before"] - a["time_after"], "amdahl --fraction 200/201 --speedup 2 --time 201")
a = amdahl("--fraction", "1/201", "--speedup", "inf")
row("CPU time gone: total shorter by (%)", 0.5, "about 0.5%", 100 * a["saved_share"], "amdahl --fraction 1/201 --speedup inf")
for f, s, t, shown_s, shown_t in ((0.2, 1.19, 84, "1.19x", "84 h"), (0.3, 1.32, None, "1.32x", ""),
                                  (0.7, 2.27, None, "2.27x", ""), (0.8, 2.78, 36, "2.78x", "36 h")):
    a = amdahl("--fraction", str(f), "--speedup", "5", "--time", "100")
    row(f"coding {f:.0%} of the time, 5x faster: overall", s, shown_s, a["overall_speedup"], f"amdahl --fraction {f} --speedup 5")
    if t:
        row(f"coding {f:.0%}: 100 h become", t, shown_t, a["time_after"], f"amdahl --fraction {f} --speedup 5 --time 100")

# ---- 1.2.2 the GPU table -----------------------------------------------------
section("1.2.2", "1.2.2 and 1.3.3 the devices (`bounds --device-gb decimal`, the profiles)")
for dev, label, cap, bw, pi, read in (("rtx4090", "RTX 4090", 24, 1.008, 165.2, 0.99), ("a100", "A100 80GB SXM", 80, 2.039, 312, 0.49),
                                      ("h100", "H100 SXM", 80, 3.35, 989.4, 0.30), ("rtx-pro-6000", "RTX PRO 6000", 96, 1.792, 503.8, None)):
    b = bounds("--config", QWEN3, "--device", dev, "--device-gb", "decimal")
    cmd = f"bounds --device {dev} --device-gb decimal"
    row(f"{label}: memory (nominal GB)", cap, f"{cap} GB", b["capacity"]["device_bytes"] / GB, cmd)
    row(f"{label}: bandwidth (TB/s)", bw, f"{bw} TB/s", b["memory_bandwidth_bytes_per_s"] / 1e12, cmd)
    row(f"{label}: BF16 dense peak (TFLOP/s)", pi, f"{pi} TFLOP/s", b["peak_flops"] / 1e12, cmd)
    if read:
        row(f"{label}: read 1 GB at peak bandwidth (ms)", read, f"{read:.2f} ms", GB / b["memory_bandwidth_bytes_per_s"] * ms, cmd)

# ---- 1.2.3 capacity ----------------------------------------------------------
section("1.2.3", "1.2.3 capacity of DeepSeek-R1-Distill-Llama-70B on the H100 (real config)")
bf = bounds(*BF16)
row("parameters N", 70553706496, "70,553,706,496", bf["params"], "[bf16]")
row("BF16 weights M_W (GB)", 141.11, "141.11 GB", bf["weights_bytes"] / GB, "[bf16]")
row("the same in GiB", 131.42, "131.42 GiB", bf["weights_bytes"] / GiB, "[bf16]")
row("half on each of two cards (GB)", 70.55, "70.55 GB", bf["weights_bytes"] / 2 / GB, "[bf16]")
row("left on each card (GB)", 9.45, "9.45 GB", (bf["capacity"]["device_bytes"] - bf["weights_bytes"] / 2) / GB, "[bf16]")
q8 = bounds(*SCHEME, "--context", "8192", "--workspace", "2GiB")
cap = q8["capacity"]
row("8-bit, a scale per 128, embeddings and LM head BF16 (GB)", 73.73, "73.73 GB", q8["weights_bytes"] / GB, "[scheme]")
row("left on one H100 (GB)", 6.27, "6.27 GB", (cap["device_bytes"] - q8["weights_bytes"]) / GB, "[scheme]")
row("BF16 KV of one 8192-token request (GiB)", 2.5, "2.5 GiB", cap["kv_bytes"] / GiB, "[scheme] --context 8192")
row("the same in GB", 2.68, "2.68 GB", cap["kv_bytes"] / GB, "[scheme] --context 8192")
row("workspace reserve 2 GiB in GB", 2.15, "2.15 GB", cap["workspace_bytes"] / GB, "[scheme] --workspace 2GiB")
row("weights + KV + workspace (GB)", 78.56, "78.56 GB", cap["total_bytes"] / GB, "[scheme] --context 8192 --workspace 2GiB")
row("fits the nominal 80 GB", True, "fits", cap["fits"], "[scheme] --context 8192 --workspace 2GiB")
r4090 = bounds(*swap(SCHEME, "--device", "rtx4090"))
row("three RTX 4090s hold (GB)", 72, "72 GB", 3 * r4090["capacity"]["device_bytes"] / GB, "[scheme] on rtx4090")
row("RTX 4090s for the 73.73 GB of weights", 4, "4", math.ceil(r4090["weights_bytes"] / r4090["capacity"]["device_bytes"]), "[scheme] on rtx4090")

section("ex. 1-2", "Exercise 1-2 (no printed answer: hand values; 5 GB kept per card for state and workspace)")
reserve = ["--workspace", "5GB", "--prompt-len", "1"]
one_bf = bounds(*BF16, *reserve)
one_q8 = bounds(*SCHEME, *reserve)
row("BF16 on one H100 (141.11 + 5 > 80)", None, "", one_bf["capacity"]["fits"], "[bf16] --workspace 5GB --prompt-len 1", hand=False)
row("BF16 halved on two H100s (70.55 + 5 <= 80)", None, "", one_bf["weights_bytes"] / 2 + 5 * GB <= one_bf["capacity"]["device_bytes"], "[bf16]: weights / 2 + 5 GB against the device", hand=True)
row("8-bit on one H100 (73.73 + 5 <= 80)", None, "", one_q8["capacity"]["fits"], "[scheme] --workspace 5GB --prompt-len 1", hand=True)
a6000_and_h100 = (48 - 5) * GB + one_q8["capacity"]["device_bytes"] - 5 * GB   # no A6000 profile: 48 GB by hand
row("BF16 on a 48 GB A6000 + an H100 (141.11 > 43 + 75)", None, "", one_bf["weights_bytes"] <= a6000_and_h100, "[bf16]: weights against 43 + 75 GB", hand=False)
row("8-bit on the A6000 + H100 (73.73 <= 118)", None, "", one_q8["weights_bytes"] <= a6000_and_h100, "[scheme]: weights against 43 + 75 GB", hand=True)

# ---- 1.3.1-1.3.2 example 1-1 ---------------------------------------------------
section("ex. 1-1", "1.3.1-1.3.2 example 1-1, the rounded 70B (N = 70e9, one byte a weight, computed in BF16) on the H100")
b1 = bounds(*ROUND)
d1 = b1["decode"]
row("weights read a step R_W (GB)", 70, "70 GB", d1["bytes"] / GB, "[round]")
row("matmul FLOPs a step F (GFLOP)", 140, "140 GFLOPs", d1["flops"] / 1e9, "[round]")
row("weight read time (ms)", 20.90, "20.90 ms", d1["t_memory_s"] * ms, "[round]")
row("matmul time (ms)", 0.1415, "0.1415 ms", d1["t_compute_s"] * ms, "[round]")
row("read / compute", 148, "about 148x", d1["t_memory_s"] / d1["t_compute_s"], "[round]")
fl2 = bounds(*swap(ROUND, "--device", h100_scaled("h100-2xflops", 1, 2)))["decode"]
row("twice the FLOP/s: matmul time (ms)", 0.0707, "0.0707 ms", fl2["t_compute_s"] * ms, "[round], [2x peak]")
row("twice the FLOP/s: the bound stays (ms)", 20.90, "20.90 ms", fl2["t_lower_s"] * ms, "[round], [2x peak]")
bw2 = bounds(*swap(ROUND, "--device", h100_scaled("h100-2xbw", 2, 1)))["decode"]
row("twice the bandwidth: read time (ms)", 10.45, "10.45 ms", bw2["t_lower_s"] * ms, "[round], [2x beta]")
half = bounds(*swap(ROUND, "--dtype", "int4"))["decode"]
row("half the weight bytes: read time (ms)", 10.45, "10.45 ms", half["t_lower_s"] * ms, "[round] --dtype int4")
b8 = bounds(*ROUND, "--batch", "8")["decode"]
row("B = 8: matmul time (ms)", 1.13, "1.13 ms", b8["t_compute_s"] * ms, "[round] --batch 8")
row("B = 8: read time, one read for the batch (ms)", 20.90, "20.90 ms", b8["t_memory_s"] * ms, "[round] --batch 8")
row("B = 8: read time per output (ms)", 2.61, "2.61 ms", b8["t_lower_s"] / 8 * ms, "[round] --batch 8")
row("throughput at B = 1 (token/s)", 47.9, "47.9 token/s", 1 / d1["t_lower_s"], "[round]")
row("throughput at B = 8 (token/s)", 383, "383 token/s", 8 / b8["t_lower_s"], "[round] --batch 8")
row("B* = b_W Pi / (2 beta)", 147.7, "147.7", b1["b_star"], "[round]")

section("1-1 real", "Example 1-1 on the real 70B (the chapter's rounding and storage scheme undone: see the notes)")
real = bounds(*REAL)
# Hand: one byte for each parameter but the embedding table (one row of it is
# read), plus one token of BF16 KV; 2 FLOPs a matmul weight, attention on one position.
lin, table, norms, kv1 = 68451041280, 128256 * 8192, 80 * 2 * 8192 + 8192, 2 * 80 * 8 * 128 * 2
read_real = lin + table + norms + 8192 + kv1
flops_real = 2 * (lin + table) + 4 * 80 * 64 * 128
row("weight read time (ms)", 20.90, "20.90 ms", real["decode"]["t_memory_s"] * ms, "[real]",
    hand=read_real / 3.35e12 * ms, note="N")
row("matmul time (ms)", 0.1415, "0.1415 ms", real["decode"]["t_compute_s"] * ms, "[real]", hand=flops_real / 989.4e12 * ms, note="N")
row("B = 8: matmul time (ms)", 1.13, "1.13 ms", bounds(*REAL, "--batch", "8")["decode"]["t_compute_s"] * ms, "[real] --batch 8",
    hand=8 * flops_real / 989.4e12 * ms, note="N")
sch = bounds(*SCHEME, "--prompt-len", "1")
# Hand: the scheme's decode reads the linear weights at one byte plus a BF16
# scale per 128, the LM head and the norms in BF16, one BF16 embedding row.
read_scheme = lin * (1 + 2 / 128) + 2 * (table + norms + 8192) + kv1
row("in the chapter's 73.73 GB scheme: read time (ms)", 20.90, "20.90 ms", sch["decode"]["t_memory_s"] * ms, "[scheme] --prompt-len 1",
    hand=read_scheme / 3.35e12 * ms, note="scheme")
row("in the chapter's scheme: B* (b_W = 1 + 2/128)", 147.7, "147.7", sch["b_star"], "[scheme] --prompt-len 1",
    hand=(1 + 2 / 128) * 989.4e12 / (2 * 3.35e12), note="scheme")
row("KV tokens a request, for 148 requests in the 6.27 GB left", None, "", (cap["device_bytes"] - q8["weights_bytes"]) / (148 * q8["kv_bytes_per_token"]),
    "[scheme]", hand=(80e9 - 73725919232) / (148 * 327680), note="148")

section("ex. 1-3", "Exercise 1-3 (no printed answer: hand values; 70% of the bandwidth, 50% of the peak)")
SLOW = swap(ROUND, "--device", h100_scaled("h100-70bw-50pi", 0.7, 0.5)) + ["--batch", "1"]
SLOW_HALF = swap(SLOW, "--dtype", "int4")
beta, pi = 0.7 * 3.35e12, 0.5 * 989.4e12
for B in (1, 16, 64):
    d = bounds(*swap(SLOW, "--batch", str(B)))["decode"]
    step = max(70e9 / beta, 2 * B * 70e9 / pi)
    row(f"B = {B}: step bound (ms)", None, "", d["t_lower_s"] * ms, f"[round] --batch {B}, [slow]", hand=step * ms)
    row(f"B = {B}: per output token (ms)", None, "", d["t_lower_s"] / B * ms, f"[round] --batch {B}, [slow]", hand=step / B * ms)
    row(f"B = {B}: throughput (token/s)", None, "", B / d["t_lower_s"], f"[round] --batch {B}, [slow]", hand=B / step)
    h = bounds(*swap(SLOW_HALF, "--batch", str(B)))["decode"]
    row(f"B = {B}, half the bytes: step bound (ms)", None, "", h["t_lower_s"] * ms, f"[round] --dtype int4 --batch {B}, [slow]",
        hand=max(35e9 / beta, 2 * B * 70e9 / pi) * ms)
row("B*", None, "", bounds(*SLOW)["b_star"], "[round], [slow]", hand=1 * pi / (2 * beta))
row("B*, half the bytes", None, "", bounds(*SLOW_HALF)["b_star"], "[round] --dtype int4, [slow]", hand=0.5 * pi / (2 * beta))

# ---- 1.3.3-1.3.4 and the quick-reference table: Qwen3-8B ------------------------
section("1.3.3", "1.3.3, 1.3.4 and the chapter's quick reference: Qwen3-8B, BF16, on the RTX PRO 6000")
qw = bounds(*QWEN)
pre, dec = qw["prefill"], qw["decode"]
row("BF16 weights (GB)", 16.38, "16.38 GB", qw["weights_bytes"] / GB, "[qwen]")
row("KV a context token (KiB)", 144, "144 KiB", qw["kv_bytes_per_token"] / KiB, "[qwen]")
row("KV of 2048 tokens (MiB)", 288, "288 MiB", qw["capacity"]["kv_bytes"] / MiB, "[qwen]")
row("the same (GB)", 0.302, "0.302 GB", qw["capacity"]["kv_bytes"] / GB, "[qwen]")
row("prefill of 2048 tokens: matmul FLOPs (TFLOP)", 29.69, "29.69 TFLOPs", pre["flops"] / 1e12, "[qwen]")
row("one decode step: matmul FLOPs (GFLOP)", 16.34, "16.34 GFLOPs", dec["flops"] / 1e9, "[qwen]")
row("one decode step: weights read (GB)", 15.14, "15.14 GB", dec["weight_bytes"] / GB, "[qwen]")
row("one decode step: old KV read (GB)", 0.302, "0.302 GB", dec["kv_bytes"] / GB, "[qwen]")
row("prefill matmul time (ms)", 58.9, "58.9 ms", pre["t_compute_s"] * ms, "[qwen]")
row("decode matmul time (ms)", 0.0324, "0.0324 ms", dec["t_compute_s"] * ms, "[qwen]")
row("decode read bound (ms)", 8.62, "8.62 ms", dec["t_memory_s"] * ms, "[qwen]")
mbu = dec["bytes"] / (qw["memory_bandwidth_bytes_per_s"] * 26.5e-3)
row("MBU at the measured 26.5 ms", 0.33, "33%", mbu, "[qwen], R / (beta x 26.5 ms)", hand=8.62 / 26.5, note="33%")
row("26.5 ms against the bound", 3, "about 3x", 26.5e-3 / dec["t_memory_s"], "[qwen]", hand=26.5 / 8.62, note="3x")
row("10.7 ms (device events) against the bound: bound short by", 0.2, "20%", 1 - dec["t_memory_s"] / 10.7e-3, "[qwen]",
    hand=1 - 8.62 / 10.7, note="20%")

section("ex. 1-4", "Exercise 1-4 (no printed answer: hand values from the measured 26.5 -> 40.5 ms, x31)")
q64 = bounds(*QWEN, "--batch", "64")["decode"]
row("throughput ratio if only the shared weight read limits", None, "", 64 * dec["weight_bytes"] / q64["weight_bytes"],
    "[qwen] --batch 64 against 1, weight bytes", hand=64)
row("throughput ratio with each request's KV read (bound)", None, "", 64 * dec["t_lower_s"] / q64["t_lower_s"], "[qwen] --batch 64 against 1",
    hand=64 * 8.62 / 19.23)   # labs/answers/lab4-batching.md: T_lower 8.62 ms at B = 1, 19.23 ms at 64

# ---- numbers no hipath command computes -----------------------------------------
ARITH = []


def arith(where, what, chapter, shown, value, note=""):
    ok = abs(value / chapter - 1) <= TOL if not note else True
    ARITH.append(dict(where=where, what=what, chapter=chapter, shown=shown, value=value, note=note, ok=ok))


arith("1.2.1", "100 ns in us", 0.1, "0.1 us", 100 / 1e3)
arith("1.2.1", "500,000 ns in ms", 0.5, "0.5 ms", 500000 / 1e6)
arith("1.2.1", "10,000,000 ns in ms", 10, "10 ms", 1e7 / 1e6)
arith("1.2.1", "a disk seek against a memory access", 1e5, "100,000x", 1e7 / 100)
arith("1.2.1", "20 seeks of 10 ms + 1 ms of CPU (ms)", 201, "201 ms", 20 * 10 + 1)
arith("1.2.1", "20 of 100 coding hours, 5x faster (h)", 4, "4 h", 20 / 5)
arith("1.2.3", "400 Gbit/s in GB/s", 50, "50 GB/s", 400 / 8)
arith("1.2.3", "1 GB at 50 GB/s (ms)", 20, "20 ms", 1 / 50 * 1e3)
arith("1.3.3", "output intervals in 256 tokens", 255, "255", 256 - 1)
arith("ex. 1-4", "TPOT growth, 64 requests against 1 (no printed answer)", 1.528, "(hand: 1.528)", 40.5 / 26.5)
arith("1.4.2", "40 Gbit/s of 84-byte minimum frames (Mpps)", 60, "about 60 M", 40e9 / (84 * 8) / 1e6, note="59.5 M: 'about sixty million'")
arith("1.4.2", "cores at 10-20 Mpps each", 3, "3-6", 60 / 20, note="60/20 = 3 and 60/10 = 6 from the rounded 60 M")

NOTES = {
    "N": "the chapter rounds N to 70e9 and reads every weight, the embedding table too; the real 70B reads "
         "69.50e9 bytes (only one embedding row) and does 139.0 GFLOP: 0.7% less",
    "scheme": "the chapter times 1 byte a weight but stores 73.73 GB: in its own scheme a step reads 71.63e9 bytes "
              "and b_W = 1 + 2/128",
    "148": "6.27 GB hold 148 requests' KV only up to 129 tokens each (85 with the 2 GiB workspace); the chapter "
           "gives no context, and any real one is longer",
    "33%": "8.62 / 26.5 = 32.5%, printed rounded",
    "3x": "26.5 / 8.62 = 3.07, 'about three times'",
    "20%": "10.7 ms is 24% over the 8.62 ms bound; the bound is 19% under the measurement (MBU 0.81): 'two tenths'",
}


def fmt(v):
    if isinstance(v, bool):
        return "fits" if v else "does not fit"
    if abs(v) >= 1e9:
        return f"{v:,.0f}"
    return f"{v:.5g}" if abs(v) < 1000 else f"{v:,.1f}"


def markdown():
    cmds = {"[bf16]": BF16, "[scheme]": SCHEME, "[round]": ROUND, "[real]": REAL, "[qwen]": QWEN}
    print("`hipath bounds --json` with")
    for k, v in cmds.items():
        print(f"- {k}: `{' '.join(v)}`")
    print("- on the H100's profile with every peak doubled ([2x peak]), the bandwidth doubled ([2x beta]), or "
          "70% of the bandwidth and 50% of every peak ([slow]), written by the test: `--device FILE.json`")
    print()
    print("| number | chapter | hipath | ratio | hipath's command |")
    print("| --- | ---: | ---: | ---: | --- |")
    last = None
    for r in ROWS:
        if r["section"] != last:
            print(f"| **{r['section']}** | | | | |")
            last = r["section"]
        chap = r["shown"] if r["chapter"] is not None else f"(hand: {fmt(r['hand'])})"
        if isinstance(r["hipath"], bool):
            ratio = "same" if r["hipath"] == (r["hand"] if r["hand"] is not None else r["chapter"]) else "differs"
        elif r["chapter"] is None:
            ratio = f"{r['hipath'] / r['hand']:.4f} to hand"
        else:
            ratio = f"{r['hipath'] / r['chapter']:.4f}"
        what = r["what"] + (f" ({r['note']})" if r["note"] else "")
        if r["chapter"] is not None and r["hand"] is not None:
            chap += f" (hand: {fmt(r['hand'])})"
        print(f"| {what} | {chap} | {fmt(r['hipath'])} | {ratio} | `{r['cmd']}` |")
    print()
    print("| where | number | chapter | worked here | ratio |")
    print("| --- | --- | ---: | ---: | ---: |")
    for a in ARITH:
        print(f"| {a['where']} | {a['what']}{' (' + a['note'] + ')' if a['note'] else ''} | {a['shown']} | {fmt(a['value'])} | {a['value'] / a['chapter']:.4f} |")


def main():
    if "--markdown" in sys.argv:
        markdown()
        return 0
    bad = 0
    for r in ROWS:
        against = "hand" if r["hand"] is not None else "chapter"
        ref = r["hand"] if r["hand"] is not None else r["chapter"]
        print(f"{'ok  ' if r['ok'] else 'FAIL'} {r['tag']:<9} {r['what']}: hipath {fmt(r['hipath'])}, {against} {fmt(ref)}")
        bad += not r["ok"]
    for a in ARITH:
        print(f"{'ok  ' if a['ok'] else 'FAIL'} {a['where']:<9} {a['what']}: worked {fmt(a['value'])}, chapter {a['shown']}"
              + (f" ({a['note']})" if a["note"] else ""))
        bad += not a["ok"]
    print(f"{len(ROWS)} numbers against hipath, {len(ARITH)} as arithmetic: {bad} failed")
    return 1 if bad else 0


sys.exit(main())
