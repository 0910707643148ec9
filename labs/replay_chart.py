"""replay_chart.py -- the chart of a replay: python3 labs/replay_chart.py
REPLAY.json OUT.svg, REPLAY.json being `hipath replay --json`'s output.
Three panels, real (the engine's own timestamps) against modeled (the
analytic device's clock): the CDFs of TTFT and of TPOT, and over the run
the requests in the engine (arrived, not finished) and those of them still
waiting for their first token. Plain SVG, no libraries."""
import json
import sys

W, H, PAD = 360, 260, 46
REAL, MODELED = "#1f77b4", "#d62728"


def esc(s):
    return str(s).replace("&", "&amp;").replace("<", "&lt;")


def nice(v):
    return f"{v:.0f}" if v >= 10 else f"{v:.2g}"


class Panel:
    def __init__(self, x0, title, xlabel, ylabel, xmax, ymax):
        self.x0, self.xmax, self.ymax, self.out = x0, xmax or 1, ymax or 1, []
        w, h = W - 2 * PAD, H - 2 * PAD
        self.out.append(f'<text x="{x0 + W / 2}" y="18" text-anchor="middle" font-weight="bold">{esc(title)}</text>')
        self.out.append(f'<rect x="{x0 + PAD}" y="{PAD}" width="{w}" height="{h}" fill="none" stroke="#888"/>')
        for k in range(5):
            fx, fy = k / 4, k / 4
            self.out.append(f'<text x="{x0 + PAD + fx * w}" y="{H - PAD + 14}" text-anchor="middle" font-size="10">{nice(fx * self.xmax)}</text>')
            self.out.append(f'<text x="{x0 + PAD - 4}" y="{H - PAD - fy * h + 3}" text-anchor="end" font-size="10">{nice(fy * self.ymax)}</text>')
        self.out.append(f'<text x="{x0 + W / 2}" y="{H - 8}" text-anchor="middle" font-size="11">{esc(xlabel)}</text>')
        self.out.append(f'<text x="{x0 + 12}" y="{H / 2}" text-anchor="middle" font-size="11" transform="rotate(-90 {x0 + 12} {H / 2})">{esc(ylabel)}</text>')

    def line(self, pts, color, dash=""):
        w, h = W - 2 * PAD, H - 2 * PAD
        xy = " ".join(f"{self.x0 + PAD + min(x, self.xmax) / self.xmax * w:.1f},{PAD + h - min(y, self.ymax) / self.ymax * h:.1f}" for x, y in pts)
        self.out.append(f'<polyline points="{xy}" fill="none" stroke="{color}" stroke-width="1.5"{dash}/>')


def cdf(values):
    v = sorted(values)
    return [(x, (i + 1) / len(v)) for i, x in enumerate(v)]


def counts(intervals, t_end, n=400):
    """How many of the [start, end) intervals hold each of n instants up to t_end."""
    return [(t, sum(a <= t < b for a, b in intervals)) for t in (t_end * k / n for k in range(n + 1))]


def main():
    doc = json.load(open(sys.argv[1]))
    reqs = doc["per_request"]
    panels = []
    for k, (m, title) in enumerate((("ttft_ms", "TTFT, CDF"), ("tpot_ms", "TPOT, CDF"))):
        real = [q["real"][m] / (1e3 if m == "ttft_ms" else 1) for q in reqs if q["real"][m] is not None]
        model = [q["modeled"][m] / (1e3 if m == "ttft_ms" else 1) for q in reqs if q["modeled"][m] is not None]
        p = Panel(k * W, title, "s from queued" if m == "ttft_ms" else "ms a token", "share of requests", max(real + model), 1)
        p.line(cdf(real), REAL)
        p.line(cdf(model), MODELED)
        panels.append(p)
    spans = {}
    for kind in ("real", "modeled"):
        spans[kind] = ([(q["arrival_ms"] / 1e3, (q["arrival_ms"] + q[kind]["latency_ms"]) / 1e3) for q in reqs],
                       [(q["arrival_ms"] / 1e3, (q["arrival_ms"] + q[kind]["ttft_ms"]) / 1e3) for q in reqs])
    t_end = max(b for kind in spans for b in (e for _, e in spans[kind][0]))
    series = {(kind, w): counts(spans[kind][w], t_end) for kind in spans for w in (0, 1)}
    p = Panel(2 * W, "requests in the engine, and waiting", "s from the first arrival", "requests", t_end, max(c for s in series.values() for _, c in s))
    for (kind, w), pts in series.items():
        p.line(pts, REAL if kind == "real" else MODELED, ' stroke-dasharray="4 3"' if w else "")
    panels.append(p)
    e = doc.get("engine", {})
    legend = (f'<text x="10" y="{H + 16}" font-size="11"><tspan fill="{REAL}">real: the engine\'s own timestamps</tspan>   '
              f'<tspan fill="{MODELED}">modeled: hipath on analytic:{esc(e.get("device", "?"))} x {e.get("tp", 1)}, the device\'s clock</tspan>   '
              f'solid: in the engine (arrived, not finished); dashed: waiting for the first token</text>')
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{3 * W}" height="{H + 26}" font-family="sans-serif" font-size="12">',
           f'<rect width="{3 * W}" height="{H + 26}" fill="white"/>'] + [s for p in panels for s in p.out] + [legend, "</svg>"]
    open(sys.argv[2], "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python3 labs/replay_chart.py REPLAY.json OUT.svg")
    main()
