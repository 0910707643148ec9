"""plot.py -- the chart of a lab: python3 labs/plot.py OUT/labN.json writes
OUT/labN.png and OUT/labN.svg beside it. `hipath lab N` runs it at the end
(embedded, as the SQL is). It reads only the lab's JSON rows; every time
axis says its clock: measured (a host clock), modeled (the device profile's
wave model) or mixed (host CPU time and the device waits it holds, on the
simulated device's virtual clock: docs/timing.md)."""
import json
import operator
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
    if what == "real":   # a real GPU's own timestamps (lab 10: vLLM's)
        return "measured on the real GPU"
    if device.startswith("cpu"):
        return "measured"
    return "modeled" if what == "device" else "mixed"


def xy(ax, pts, *args, **kw):
    if pts:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], *args, **kw)


OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


def value(doc, chart, s, r):
    """Series s's value at row r: its column, or its formula ("of": quantities
    and + - * / taken left to right, each quantity's row at r's category)."""
    if "of" not in s:
        return r[s["col"]]
    key = chart.get("cat", chart.get("x"))
    v, op = None, "+"
    for t in s["of"]:
        if t in OPS:
            op = t
            continue
        x = t if not isinstance(t, str) else next((q[s["col"]] for q in rows(doc, t, **{key: r[key]})), None)
        if x is None:
            return None
        v = x if v is None else OPS[op](v, x)
    return v


def picked(doc, chart, s, **where):
    """The rows of series s (charts.json) with its value filled, as (row, value)."""
    where = {**s.get("where", {}), **where}
    if "first" in chart:
        where[chart["first"]] = doc["rows"][0][chart["first"]]
    q = s["of"][0] if "of" in s else s["q"]
    has = s.get("has", {})
    out = [(r, value(doc, chart, s, r)) for r in rows(doc, q, **where) if all(v in str(r[k]) for k, v in has.items())]
    return [(r, v) for r, v in out if v is not None]


def at_x(chart, r):
    """A row's x: its field, or the GPU count N a device "N x analytic:G" names."""
    return int(r["device"].split(" x ")[0]) if chart["x"] == "gpus" else r[chart["x"]]


def key_of(s, r):
    """The group a row is in: its by field's value, or the part after its "after"."""
    v = str(r[s["by"]])
    return v.split(s["after"])[-1] if "after" in s else v


def groups(rs, s):
    """(name, [(row, value)]) of each value of s's by field, or one unnamed group."""
    if "by" not in s:
        return [("", rs)]
    names = list(dict.fromkeys(key_of(s, r) for r, _ in rs))
    return [(n, [(r, v) for r, v in rs if key_of(s, r) == n]) for n in names]


def label(s, rs, name):
    """A series' name and its clock: predicted (the calculator's) or the measured column's clock."""
    how = "predicted" if s["col"] == "predicted" else clock(rs[0][0]["device"], s["clock"])
    return f"{name + ': ' if name else ''}{s['label']} ({how})"


def style(s, k):
    if s["col"] == "predicted":
        return {"linestyle": ":", "color": "k" if k is None else f"C{k}"}
    return {"linestyle": "--" if s["clock"] == "device" else "-", "marker": "s" if s["clock"] == "device" else "o", "color": f"C{k or 0}"}


def lines(doc, chart, ax):
    for i, s in enumerate(chart["series"]):
        for k, (name, rs) in enumerate(groups(picked(doc, chart, s), s)):
            pts = sorted((at_x(chart, r), v) for r, v in rs)
            if "relative" in chart:
                pts = [(x, (y - pts[0][1]) * chart["relative"]) for x, y in pts]
            xy(ax, pts, label=label(s, rs, name), **style(s, k if "by" in s else (None if s["col"] == "predicted" else i)))
    for k, m in enumerate(chart.get("marks", [])):
        for _, v in picked(doc, chart, m):
            ax.axvline(v, color="gray", linestyle=":" if m["col"] == "predicted" else "-.", linewidth=1)
            ax.text(v, 0.85 - 0.25 * k, f"{m['label']} {v:.0f}", fontsize=6, rotation=90, transform=ax.get_xaxis_transform())


def cat_label(chart, r):
    """A category's label: its catlabel fields joined by " @ ", each shortened by rename."""
    text = " @ ".join(str(r[f]) for f in chart.get("catlabel", [chart["cat"]]))
    for a, b in chart.get("rename", {}).items():
        text = text.replace(a, b)
    return text


def bars(doc, chart, ax):
    """Side by side, or stacked (each series a part of the whole)."""
    every = [(s, name, rs) for s in chart["series"] for name, rs in groups(picked(doc, chart, s), s)]
    cats = list(dict.fromkeys(r[chart["cat"]] for _, _, rs in every for r, _ in rs))
    first = {c: next(r for _, _, rs in every for r, _ in rs if r[chart["cat"]] == c) for c in cats}
    stacked = chart.get("stacked")
    w = 0.6 if stacked else 0.8 / len(every)
    bottom = [0.0] * len(cats)
    for j, (s, name, rs) in enumerate(every):
        v = [next((x for r, x in rs if r[chart["cat"]] == c), 0) for c in cats]
        v = [max(x, chart.get("floor", 0)) for x in v]
        ax.bar([i + (0 if stacked else j * w) for i in range(len(cats))], v, w, bottom=bottom if stacked else None,
               label=label(s, rs, name), hatch="//" if s["col"] == "predicted" else None)
        if stacked:
            bottom = [b + x for b, x in zip(bottom, v)]
    ax.set_xticks([i + (0 if stacked else 0.4 - w / 2) for i in range(len(cats))], [cat_label(chart, first[c]) for c in cats],
                  fontsize=7, rotation=20 if len(cats) > 4 else 0)


def roofline(doc, chart, ax):
    """Each kernel at its intensity I and attained FLOP/s (its roof fraction times min(Pi, I beta)), under the roof."""
    prof = doc["profile"]
    beta = prof["memory_bandwidth_bytes_per_s"]
    roof = lambda r, i: min(prof.get("peak_flops_" + r["dtype"], prof["peak_flops_fp16"]), i * beta)
    meas, pred = chart["series"]
    x = {"q": chart["x"], "col": "measured"}
    lo, hi = 1e9, 0
    for k, (name, rs) in enumerate(groups(picked(doc, chart, {**meas, "q": chart["y"]}), meas)):
        at = [v for r, v in picked(doc, chart, x) if r["model"] == rs[0][0]["model"]]
        pts = [(i, v * roof(r, i)) for i, (r, v) in zip(at, rs)]
        lo, hi = min([lo] + [i for i in at if i > 0]), max([hi] + at)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o", color=f"C{k}", label=label(meas, rs, name), alpha=0.7)
    r0 = picked(doc, chart, {**pred, "q": chart["y"]})[0][0]
    grid = [lo / 4 * (hi * 16 / lo) ** (t / 50) for t in range(51)]
    ax.plot(grid, [roof(r0, i) for i in grid], "k-", label=label(pred, [r0], ""))


def replayed(doc, chart, s):
    """Series s's value of each request of the chart's run (labN.json's runs): its TTFT or TPOT, real
    (the engine's own timestamps) or modeled, s from its arrival."""
    run = next(r for r in doc["runs"] if r["name"] == chart["run"])
    pre = "real_" if s["col"] == "real" else ""
    if s["v"] == "ttft":
        return [q[pre + "first_s"] for q in run["requests"]]
    return [(q[pre + "last_s"] - q[pre + "first_s"]) / (q["output_toks"] - 1) for q in run["requests"] if q["output_toks"] > 1]


def replay_style(s, i):
    return {"linestyle": "-" if s["col"] == "real" else "--", "color": f"C{i // 2}"}


def replay_label(s):
    return f"{s['label']} ({'measured on the real GPU' if s['col'] == 'real' else 'modeled'})"


def cdf(doc, chart, ax):
    """The share of requests at or below each value, real against modeled."""
    for i, s in enumerate(chart["series"]):
        v = sorted(replayed(doc, chart, s))
        ax.step(v, [(k + 1) / len(v) for k in range(len(v))], where="post", label=replay_label(s), **replay_style(s, i))


def inflight(doc, chart, ax):
    """Over the run, the requests arrived and not finished (in the engine) or not yet given their first
    token (waiting), real against modeled: a count that steps at each arrival, first and last token."""
    run = next(r for r in doc["runs"] if r["name"] == chart["run"])
    for i, s in enumerate(chart["series"]):
        pre = "real_" if s["col"] == "real" else ""
        end = pre + ("last_s" if s["v"] == "in_engine" else "first_s")
        ev = sorted([(q["arrival_s"], 1) for q in run["requests"]] + [(q["arrival_s"] + q[end], -1) for q in run["requests"]])
        t, n = [0.0], [0]
        for x, d in ev:
            t.append(x)
            n.append(n[-1] + d)
        ax.step(t, n, where="post", label=replay_label(s), **replay_style(s, i))


KINDS = {"lines": lines, "bars": bars, "roofline": roofline, "cdf": cdf, "inflight": inflight}


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
        vals = series({"rows": rows(doc, chart["series"][0].get("q", chart.get("y")))}, chart["each"]) if "each" in chart else [None]
        out += [(chart, {chart["each"]: v} if v is not None else {}) for v in vals]
    return out


def main():
    path = sys.argv[1]
    with open(path) as f:
        doc = json.load(f)
    panels = len(panels_of(doc))
    cols = min(panels, 3)   # rows of three at most: a sheet's page is not a wall
    rows_ = -(-panels // cols)
    fig, ax = plt.subplots(rows_, cols, figsize=(6.5 * cols if panels > 1 else 9, 4.2 * rows_), squeeze=False)
    axes = [a for row in ax for a in row]
    for a in axes[panels:]:
        a.set_visible(False)
    described(doc, axes[:panels])
    fig.tight_layout()
    base = os.path.splitext(path)[0]
    fig.savefig(base + ".png", dpi=80)
    fig.savefig(base + ".svg", metadata={"Date": None})
    print(f"charts: {base}.png, {base}.svg", file=sys.stderr)


if __name__ == "__main__":
    main()
