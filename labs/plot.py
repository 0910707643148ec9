"""plot.py -- the chart of a lab: python3 labs/plot.py OUT/labN.json writes
OUT/labN.png and OUT/labN.svg beside it. `hipath lab N` runs it at the end
(embedded, as the SQL is). It reads only the lab's JSON rows; every time
axis says its clock: measured (a host clock), modeled (the device profile's
wave model) or mixed (host CPU time and the device waits it holds, on the
simulated device's virtual clock: docs/timing.md)."""
import json
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("no charts: python3 has no matplotlib (apt-get install python3-matplotlib); the CSV and JSON are written",
          file=sys.stderr)
    sys.exit(0)


def rows(doc, quantity, **where):
    """The rows of one quantity whose fields equal where's."""
    return [r for r in doc["rows"] if r["quantity"] == quantity and all(r[k] == v for k, v in where.items())]


def points(doc, quantity, x, col="measured", **where):
    """(x, value) pairs of a quantity, sorted by x, empty cells left out."""
    return sorted((r[x], r[col]) for r in rows(doc, quantity, **where) if r[col] is not None)


def series(doc, key):
    """The distinct values of a field, in the order the rows first give them."""
    return list(dict.fromkeys(r[key] for r in doc["rows"]))


def clock(device, what):
    """The clock of a step-like time (what='step') or a device time on device."""
    if device.startswith("cpu"):
        return "measured"
    return "modeled" if what == "device" else "mixed"


def xy(ax, pts, *args, **kw):
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], *args, **kw)


def lab1(doc, ax):
    (ax,) = ax
    dev = doc["device"]
    layers = [(int(r["quantity"][-1]), r["measured"], r["reading"]) for r in doc["rows"] if r["quantity"].startswith("layer_ms_")]
    ax.barh([f"{n} {name}" for n, _, name in layers], [ms for _, ms, _ in layers], color="tab:blue")
    for q, style in (("ttft_ms", "--"), ("e2e_ms", ":")):
        for r in rows(doc, q):
            ax.axvline(r["measured"], color="k", linestyle=style, label=f"{q[:-3]} {r['measured']:.2f} ms")
    ax.invert_yaxis()
    ax.set_xlabel(f"time in request 2's window (ms; layers 8-2 {clock(dev, 'step')}, layer 1 {clock(dev, 'device')})")
    ax.set_title(f"Lab 1: one \"Hi\" through the eight layers ({dev}; nested, so they overlap)")
    ax.legend()


def lab2(doc, ax):
    (ax,) = ax
    cells = [r for r in rows(doc, "max_kv_tokens", dtype="bf16") if r["predicted"] is not None]
    models, devices = series({"rows": cells}, "model"), series({"rows": cells}, "device")
    w = 0.8 / len(devices)
    for j, d in enumerate(devices):
        v = {r["model"]: r["predicted"] for r in cells if r["device"] == d}
        ax.bar([i + j * w for i in range(len(models))], [max(v.get(m, 0), 1) for m in models], w, label=d)
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(models))], models, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("KV tokens beside bf16 weights (calculator)")
    ax.set_title("Lab 2: how many KV tokens fit (bf16 KV; 1 = the weights alone do not fit)")
    ax.legend(fontsize=7, ncol=4)


def lab3(doc, ax):
    (ax,) = ax
    runs = series(doc, "run_id")
    bars = (("t_memory", "predicted", "bound R/beta (calculator)"), ("launch_total", "predicted", "launches x latency (predicted)"),
            ("gpu_s", "measured", "device time a step"), ("step_s", "measured", "step"))
    w = 0.8 / len(bars)
    labels = []
    for i, run in enumerate(runs):
        r0 = [r for r in doc["rows"] if r["run_id"] == run][0]
        labels.append(f"{r0['model']}\n{r0['device']}")
    for j, (q, col, name) in enumerate(bars):
        v = [next((r[col] for r in rows(doc, q, run_id=run) if r[col]), 0) for run in runs]
        if "device" in name or name == "step":
            name += " (modeled)" if "device" in name else " (mixed; measured on cpu)"
        ax.bar([i + j * w for i in range(len(runs))], v, w, label=name)
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(runs))], labels, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("s a decode step, B = 1 (bound, launches: predicted;\ndevice: modeled; step: mixed, on cpu measured)", fontsize=8)
    ax.set_title("Lab 3: one decode step against its bound")
    ax.legend(fontsize=8)


def lab4(doc, ax):
    thr, tpot = ax
    swept = list(dict.fromkeys((r["model"], r["device"]) for r in rows(doc, "throughput_device")))
    for k, (model, dev) in enumerate(swept):
        color, at = f"C{k}", {"model": model, "device": dev}
        xy(thr, points(doc, "throughput", "batch", **at), "o-", color=color, label=f"{model} @ {dev}: by the step ({clock(dev, 'step')})")
        xy(thr, points(doc, "throughput_device", "batch", **at), "s--", color=color, label=f"by the device time ({clock(dev, 'device')})")
        xy(tpot, points(doc, "tpot", "batch", **at), "o-", color=color, label=f"{model}: step ({clock(dev, 'step')})")
        xy(tpot, points(doc, "t_step", "batch", "predicted", **at), ":", color=color, label="the bound decode.t_lower")
        marks = [(r["predicted"], ":", "B*", 0.8) for r in rows(doc, "b_star", **at)]
        marks += [(r["measured"], "-.", "knee (step)", 0.55) for r in rows(doc, "knee_B", **at)]
        marks += [(r["measured"], "--", "knee (device)", 0.3) for r in rows(doc, "knee_B_device", **at)]
        for x, style, name, y in marks:
            if x:
                thr.axvline(x, color=color, linestyle=style, linewidth=1)
                thr.text(x, y, f"{name} {x:.0f}", color=color, fontsize=6, rotation=90, transform=thr.get_xaxis_transform())
    for a in ax:
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("batch B (sequences in a decode step)")
    thr.set_ylabel("throughput, tokens/s (by the step: mixed;\nby the device time: modeled)", fontsize=8)
    tpot.set_ylabel("TPOT = the decode step, s (mixed)", fontsize=8)
    thr.set_title("Lab 4: throughput against B; B* and the knees marked", fontsize=9)
    tpot.set_title("each user waits one step a token", fontsize=9)
    thr.legend(fontsize=6)
    tpot.legend(fontsize=6)


def lab5(doc, ax):
    for a, model in zip(ax, series(doc, "model")):
        dev = rows(doc, "ttft", model=model)[0]["device"]
        xy(a, points(doc, "ttft", "prompt_len", model=model), "o-", label=f"TTFT ({clock(dev, 'step')})")
        xy(a, points(doc, "prefill_step", "prompt_len", model=model), "s-", label=f"prefill step ({clock(dev, 'step')})")
        xy(a, points(doc, "prefill_t_device", "prompt_len", model=model), "^--", label=f"prefill device time ({clock(dev, 'device')})")
        xy(a, points(doc, "prefill_t_device", "prompt_len", "predicted", model=model), "k:", label="bound prefill.t_lower")
        a.set_xscale("log", base=2)
        a.set_yscale("log")
        a.set_xlabel("prompt tokens P")
        a.set_ylabel(f"s (TTFT, prefill step: {clock(dev, 'step')}; device: {clock(dev, 'device')})", fontsize=8)
        a.set_title(f"Lab 5: {model} @ {dev}", fontsize=9)
        a.legend(fontsize=7)


def lab6(doc, ax):
    steps, qwen = ax
    model = series(doc, "model")[0]
    dev = rows(doc, "step_s", model=model)[0]["device"]
    for q, col, style, name in (("step_s", "measured", "o-", f"decode step, median ({clock(dev, 'step')})"),
                                ("t_lower", "measured", "s--", f"device time, median ({clock(dev, 'device')})"),
                                ("t_lower", "predicted", "k:", "bound decode.t_lower")):
        pts = points(doc, q, "context", col, model=model)
        xy(steps, [(x, (y - pts[0][1]) * 1e6) for x, y in pts], style, label=name)
    steps.set_xlabel("mean context of the decode steps (tokens)")
    steps.set_ylabel(f"growth since the shortest context, us\n(step: {clock(dev, 'step')}; device: {clock(dev, 'device')})", fontsize=8)
    steps.set_title(f"Lab 6: {model} @ {dev}: the step grows with the context", fontsize=9)
    steps.legend(fontsize=7)
    for b in sorted({r["batch"] for r in rows(doc, "t_lower", model="qwen3-8b")}):
        xy(qwen, points(doc, "t_lower", "context", "predicted", model="qwen3-8b", batch=b), "o-", label=f"B = {b}")
    qwen.set_xscale("log", base=2)
    qwen.set_yscale("log")
    qwen.set_xlabel("context L (tokens)")
    qwen.set_ylabel("decode.t_lower (s, calculator)")
    qwen.set_title("Qwen3-8B, RTX PRO 6000, bf16: the bound as KV grows", fontsize=9)
    qwen.legend(fontsize=7)


def lab7(doc, ax):
    (ax,) = ax
    runs = series({"rows": rows(doc, "e2e_s")}, "device")
    one = lambda q, d: next((r["measured"] for r in rows(doc, q, device=d)), None)
    labels = [f"{rows(doc, 'e2e_s', device=d)[0]['model'][:14]}\n{d}" for d in runs]
    e2e = [one("e2e_s", d) for d in runs]
    dev = [one("device_s", d) / e for d, e in zip(runs, e2e)]
    waves = [one("f_scaled", d) for d in runs]
    ax.bar(labels, waves, color="tab:blue", label="kernel waves: what a 2x GPU halves (modeled)")
    ax.bar(labels, [v - w for v, w in zip(dev, waves)], bottom=waves, color="tab:cyan", label="device: launch latency and copies (modeled)")
    ax.bar(labels, [1 - v for v in dev], bottom=dev, color="tab:orange", label="host (mixed)")
    for i, d in enumerate(runs):
        text = f"e2e {e2e[i] * 1e3:.1f} ms"
        for r in rows(doc, "speedup_amdahl", device=d):
            text += f"\n2x: Amdahl {r['predicted']:.2f}x\nmeasured {r['measured']:.2f}x"
        ax.text(i, 1.02, text, ha="center", va="bottom", fontsize=7)
    ax.set_ylim(0, 1.35)
    ax.set_ylabel("share of request 2's e2e (mixed):\ndevice modeled, host mixed", fontsize=8)
    ax.set_title("Lab 7: where a request's time goes, and what a 2x GPU buys", fontsize=10)
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7, loc="center right")


def lab8(doc, ax):
    step, speed = ax
    gpus = list(dict.fromkeys(r["device"].split(" x ")[1] for r in rows(doc, "fits")))
    one = lambda q, d, col="measured": next((r[col] for r in rows(doc, q, device=d)), None)
    labels, parts, bound = [], [], []
    for g in gpus:
        for n in (1, 2, 4, 8):
            d = f"{n} x analytic:{g}"
            labels.append(f"{n} x {g}")
            t = one("t_step", d)
            if t is None:   # not run: it does not fit
                parts.append(None)
                bound.append(one("t_step", f"{n} x {g}", "predicted"))
                continue
            split, waves, launch, ar = one("split_s", d), one("waves_s", d), one("launch_s", d), one("all_reduce_s", d)
            parts.append((split, waves - split, launch, ar, t - waves - launch - ar))
            bound.append(one("t_step", d, "predicted"))
    names = ("split work: the matmuls' waves", "replicated: norms, residual adds", "launch latency (CUDA graphs would cut it)",
             "ring all-reduces", "gather, copies")
    colors = ("tab:blue", "tab:cyan", "tab:orange", "tab:red", "tab:gray")
    x = range(len(labels))
    bottom = [0.0] * len(labels)
    for k, (name, color) in enumerate(zip(names, colors)):
        v = [p[k] * 1e3 if p else 0 for p in parts]
        step.bar(x, v, bottom=bottom, color=color, label=name)
        bottom = [b + h for b, h in zip(bottom, v)]
    step.plot(x, [b * 1e3 for b in bound], "k_", markersize=16, mew=2, label="the bound: parallel.decode.step_s (calculator)")
    for i, p in enumerate(parts):
        if p is None:
            step.text(i, bound[i] * 1e3 / 2, "does not fit:\nthe bound only", ha="center", va="center", fontsize=7, rotation=90)
    step.set_xticks(list(x), labels, fontsize=7, rotation=30)
    step.set_ylabel("a decode step on GPU 0, ms (modeled), B = 1", fontsize=8)
    step.set_title("Lab 8: Llama-2-70B bf16, the decode step and its parts against N", fontsize=9)
    step.legend(fontsize=6)
    for k, g in enumerate(gpus):
        color = f"C{k}"
        runs = [r for r in rows(doc, "speedup") if r["device"].endswith(f"analytic:{g}")]
        n0 = min(int(r["device"].split(" x ")[0]) for r in rows(doc, "f_serial") if r["device"].endswith(f"analytic:{g}"))
        pts = [(n0, 1.0)] + sorted((int(r["device"].split(" x ")[0]), r["measured"]) for r in runs)
        amd = [(n0, 1.0)] + sorted((int(r["device"].split(" x ")[0]), r["predicted"]) for r in runs)
        ring = [(n0, 1.0)] + sorted((int(r["device"].split(" x ")[0]), r["predicted"]) for r in rows(doc, "speedup_ring")
                                    if r["device"].endswith(f"analytic:{g}"))
        xy(speed, pts, "o-", color=color, label=f"{g}: measured (modeled), over {n0} GPU{'s' if n0 > 1 else ''}")
        xy(speed, amd, "s--", color=color, label=f"{g}: Amdahl, f from N = {n0}")
        xy(speed, ring, "^:", color=color, label=f"{g}: Amdahl + the ring's all-reduces")
        xy(speed, [(n, n / n0) for n, _ in pts], "-", color=color, alpha=0.25, linewidth=4, label=f"{g}: ideal N / {n0}")
    speed.set_xscale("log", base=2)
    speed.set_xticks([1, 2, 4, 8], ["1", "2", "4", "8"])
    speed.set_xlabel("GPUs N (tensor parallel)")
    speed.set_ylabel("decode step speed-up over the smallest N that fits")
    speed.set_title("Amdahl again: launches and all-reduces do not split", fontsize=9)
    speed.legend(fontsize=6)


CHARTS = {1: (lab1, 1), 2: (lab2, 1), 3: (lab3, 1), 4: (lab4, 2), 5: (lab5, 2), 6: (lab6, 2), 7: (lab7, 1), 8: (lab8, 2)}


def main():
    path = sys.argv[1]
    with open(path) as f:
        doc = json.load(f)
    draw, panels = CHARTS[doc["lab"]]
    fig, ax = plt.subplots(1, panels, figsize=(6.5 * panels if panels > 1 else 9, 4.2), squeeze=False)
    draw(doc, list(ax[0]))
    fig.tight_layout()
    base = os.path.splitext(path)[0]
    fig.savefig(base + ".png", dpi=80)
    fig.savefig(base + ".svg", metadata={"Date": None})
    print(f"charts: {base}.png, {base}.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
