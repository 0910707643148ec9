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


def picked(doc, chart, s, **where):
    """The rows of series s (charts.json) with its column filled."""
    where = {**s.get("where", {}), **where}
    if "first" in chart:
        where[chart["first"]] = doc["rows"][0][chart["first"]]
    return [r for r in rows(doc, s["q"], **where) if r[s["col"]] is not None]


def groups(rs, s):
    """(name, rows) of each value of s's by field, or one unnamed group."""
    if "by" not in s:
        return [("", rs)]
    return [(f"{v}", [r for r in rs if r[s["by"]] == v]) for v in series({"rows": rs}, s["by"])]


def label(s, rs, name):
    """A series' name and its clock: predicted (the calculator's) or the measured column's clock."""
    how = "predicted" if s["col"] == "predicted" else clock(rs[0]["device"], s["clock"])
    return f"{name + ': ' if name else ''}{s['label']} ({how})"


def style(s, k):
    if s["col"] == "predicted":
        return {"linestyle": ":", "color": "k" if k is None else f"C{k}"}
    return {"linestyle": "--" if s["clock"] == "device" else "-", "marker": "s" if s["clock"] == "device" else "o", "color": f"C{k or 0}"}


def lines(doc, chart, ax):
    for i, s in enumerate(chart["series"]):
        for k, (name, rs) in enumerate(groups(picked(doc, chart, s), s)):
            pts = sorted((r[chart["x"]], r[s["col"]]) for r in rs)
            if "relative" in chart:
                pts = [(x, (y - pts[0][1]) * chart["relative"]) for x, y in pts]
            xy(ax, pts, label=label(s, rs, name), **style(s, k if "by" in s else (None if s["col"] == "predicted" else i)))
    for k, m in enumerate(chart.get("marks", [])):
        for r in picked(doc, chart, m):
            ax.axvline(r[m["col"]], color="gray", linestyle=":" if m["col"] == "predicted" else "-.", linewidth=1)
            ax.text(r[m["col"]], 0.85 - 0.25 * k, f"{m['label']} {r[m['col']]:.0f}", fontsize=6, rotation=90, transform=ax.get_xaxis_transform())


def bars(doc, chart, ax):
    every = [(s, name, rs) for s in chart["series"] for name, rs in groups(picked(doc, chart, s), s)]
    cats = list(dict.fromkeys(r[chart["cat"]] for _, _, rs in every for r in rs))
    first = {c: next(r for _, _, rs in every for r in rs if r[chart["cat"]] == c) for c in cats}
    w = 0.8 / len(every)
    for j, (s, name, rs) in enumerate(every):
        v = [next((r[s["col"]] for r in rs if r[chart["cat"]] == c), 0) for c in cats]
        ax.bar([i + j * w for i in range(len(cats))], [max(x, chart.get("floor", 0)) for x in v], w, label=label(s, rs, name),
               hatch="//" if s["col"] == "predicted" else None)
    ax.set_xticks([i + 0.4 - w / 2 for i in range(len(cats))],
                  [" @ ".join(str(first[c][f]) for f in chart.get("catlabel", [chart["cat"]])) for c in cats], fontsize=7)


def roofline(doc, chart, ax):
    """Each kernel at its intensity I and attained FLOP/s (its roof fraction times min(Pi, I beta)), under the roof."""
    prof = doc["profile"]
    beta = prof["memory_bandwidth_bytes_per_s"]
    roof = lambda r, i: min(prof.get("peak_flops_" + r["dtype"], prof["peak_flops_fp16"]), i * beta)
    meas, pred = chart["series"]
    x = {"q": chart["x"], "col": "measured"}
    lo, hi = 1e9, 0
    for k, (name, rs) in enumerate(groups(picked(doc, chart, {**meas, "q": chart["y"]}), meas)):
        at = [r["measured"] for r in picked(doc, chart, x) if r["model"] == rs[0]["model"]]
        pts = [(i, r["measured"] * roof(r, i)) for i, r in zip(at, rs)]
        lo, hi = min([lo] + [i for i in at if i > 0]), max([hi] + at)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", color=f"C{k}", label=label(meas, rs, name), alpha=0.7)
    r0 = picked(doc, chart, {**pred, "q": chart["y"]})[0]
    grid = [lo / 4 * (hi * 16 / lo) ** (t / 50) for t in range(51)]
    ax.plot(grid, [roof(r0, i) for i in grid], "k-", label=label(pred, [r0], ""))


KINDS = {"lines": lines, "bars": bars, "roofline": roofline}


def described(doc, panels):
    """The lab's charts as labs/charts.json describes them, one panel each."""
    for (chart, only), ax in zip(panels_of(doc), panels):
        sub = {**doc, "rows": [r for r in doc["rows"] if all(r[k] == v for k, v in only.items())]}
        KINDS[chart["kind"]](sub, chart, ax)
        roof = chart["kind"] == "roofline"
        if chart.get("xlog") or roof:
            ax.set_xscale("log", base=10 if roof else 2)
        if chart.get("ylog") or roof:
            ax.set_yscale("log")
        ax.set_xlabel(chart.get("xlabel", ""))
        ax.set_ylabel(chart["ylabel"], fontsize=8)
        ax.set_title(chart["title"] + "".join(f" · {v}" for v in only.values()), fontsize=9)
        ax.legend(fontsize=6)


def panels_of(doc):
    """(chart, the fields its rows must equal): one a chart, or one per value of its each field."""
    out = []
    for chart in doc["charts"]:
        q = chart["series"][0].get("q", chart.get("y"))
        vals = series({"rows": rows(doc, q)}, chart["each"]) if "each" in chart else [None]
        out += [(chart, {chart["each"]: v} if v is not None else {}) for v in vals]
    return out


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


SPECIFIC = {7: lab7, 8: lab8}   # stacked parts of a whole: not in labs/charts.json


def main():
    path = sys.argv[1]
    with open(path) as f:
        doc = json.load(f)
    panels = len(panels_of(doc)) if "charts" in doc else 1 + (doc["lab"] == 8)
    fig, ax = plt.subplots(1, panels, figsize=(6.5 * panels if panels > 1 else 9, 4.2), squeeze=False)
    (described if "charts" in doc else SPECIFIC[doc["lab"]])(doc, list(ax[0]))
    fig.tight_layout()
    base = os.path.splitext(path)[0]
    fig.savefig(base + ".png", dpi=80)
    fig.savefig(base + ".svg", metadata={"Date": None})
    print(f"charts: {base}.png, {base}.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
