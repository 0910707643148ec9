#!/usr/bin/env python3
"""validate_chart.py VALIDATE.json OUT.png -- `hipath validate --json` drawn,
one panel per phase (prefill, decode, e2e): each published row's measured
tokens/s against what the simulated GPU modeled from its datasheet (circles),
what the kernel-class fit to the calibrate rows gives the held-out rows
(crosses), and what the fit without the row's own source gives it
(leave-one-source-out, pluses); the diagonal is a perfect model, the band +-25%.
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
phases = [p for p in ("prefill", "decode", "e2e") if any(r["phase"] == p for r in rows)]
stats = {p["phase"]: p for p in doc["per_phase"]}
fig, axes = plt.subplots(1, len(phases), figsize=(5.2 * len(phases), 5.6))
for ax, phase in zip(axes, phases):
    mine = [r for r in rows if r["phase"] == phase]
    figures = [v for r in mine for v in (r["measured_tokens_per_s"], r["modeled_tokens_per_s"], r.get("calibrated_tokens_per_s"),
                                          r.get("loso_tokens_per_s")) if v]
    lo, hi = min(figures) / 1.5, max(figures) * 1.5
    ax.plot([lo, hi], [lo, hi], color="black", lw=0.8)
    ax.fill_between([lo, hi], [lo * 0.75, hi * 0.75], [lo * 1.25, hi * 1.25], color="grey", alpha=0.15)
    for r in mine:
        c, x = colors[r["gpu"]], r["measured_tokens_per_s"]
        ax.scatter(x, r["modeled_tokens_per_s"], color=c, marker="o", s=30, facecolors="none")
        if r["role"] == "held_out" and r.get("calibrated_tokens_per_s"):
            ax.scatter(x, r["calibrated_tokens_per_s"], color=c, marker="x", s=28)
        if r.get("loso_tokens_per_s"):
            ax.scatter(x, r["loso_tokens_per_s"], color=c, marker="+", s=40)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_ylim(lo, hi)
    ax.set_xlabel("measured tokens/s (published)")
    s = stats[phase]
    ax.set_title(f"{phase}: {s['rows']} rows; median error: datasheet {100 * s['median_abs_error']:.0f}%,\n"
                 f"held out {100 * s['held_out_median_abs_error_calibrated']:.0f}% ({s['held_out_rows']}), "
                 f"leave-one-source-out {100 * s['loso_median_abs_error']:.0f}%", fontsize=9)
axes[0].set_ylabel("modeled tokens/s (analytic: the profile's datasheet, then fitted)")
for g in gpus:
    axes[0].scatter([], [], color=colors[g], label=g)
axes[0].scatter([], [], color="grey", marker="o", facecolors="none", label="datasheet")
axes[0].scatter([], [], color="grey", marker="x", label="held out, fitted to calibrate rows")
axes[0].scatter([], [], color="grey", marker="+", label="leave-one-source-out")
axes[0].legend(fontsize=7, loc="upper left")
fig.suptitle(f"hipath validate: {len(rows)} published rows, kernel-class efficiencies fitted to {doc['fit']['rows']}", fontsize=10)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=100)
