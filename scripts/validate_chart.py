#!/usr/bin/env python3
"""validate_chart.py VALIDATE.json OUT.png -- `hipath validate --json` drawn:
each published row's measured tokens/s against what the simulated GPU
modeled from its datasheet (circles) and, for the held-out rows, after
calibration (crosses); the diagonal is a perfect model, the band +-25%.
  build/hipath validate --json > v.json && python3 scripts/validate_chart.py v.json docs/images/validate.png"""
import json
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

doc = json.load(open(sys.argv[1]))
rows = [r for r in doc["rows"] if r.get("modeled_tokens_per_s")]
gpus = sorted({r["gpu"] for r in rows})
colors = dict(zip(gpus, plt.cm.tab10.colors))
fig, ax = plt.subplots(figsize=(7.5, 6.5))
lo = min(min(r["measured_tokens_per_s"], r["modeled_tokens_per_s"]) for r in rows) / 2
hi = max(max(r["measured_tokens_per_s"], r["modeled_tokens_per_s"]) for r in rows) * 2
ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
ax.fill_between([lo, hi], [lo * 0.75, hi * 0.75], [lo * 1.25, hi * 1.25], color="grey", alpha=0.15, label="±25%")
marker = {"prefill": "s", "decode": "o", "e2e": "^"}
for r in rows:
    c = colors[r["gpu"]]
    ax.scatter(r["measured_tokens_per_s"], r["modeled_tokens_per_s"], color=c, marker=marker[r["phase"]], s=36,
               facecolors="none" if r["role"] == "held_out" else c)
    if r["role"] == "held_out" and r.get("calibrated_tokens_per_s"):
        ax.scatter(r["measured_tokens_per_s"], r["calibrated_tokens_per_s"], color=c, marker="x", s=30)
        ax.plot([r["measured_tokens_per_s"]] * 2, [r["modeled_tokens_per_s"], r["calibrated_tokens_per_s"]], color=c, lw=0.5)
for g in gpus:
    ax.scatter([], [], color=colors[g], label=g)
for p, m in marker.items():
    ax.scatter([], [], color="grey", marker=m, label=p)
ax.scatter([], [], color="grey", marker="x", label="held out, calibrated")
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlim(lo, hi)
ax.set_ylim(lo, hi)
ax.set_xlabel("measured tokens/s (published)")
ax.set_ylabel("modeled tokens/s (analytic: the profile's datasheet)")
h = doc["held_out_decode"]
ax.set_title(f"hipath validate: {len(rows)} published rows; held-out decode and e2e within 25% after calibration: "
             f"{h['within_25_percent']} of {h['rows']}", fontsize=9)
ax.legend(fontsize=7, loc="upper left", ncol=2)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=110)
