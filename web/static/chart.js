// chart.js -- small SVG charts for the labs: lines and points on linear or
// log axes, vertical markers, grouped or stacked bars. Every mark has a
// <title>, so hovering it says its numbers.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const PALETTE = ["#3b7dd8", "#e0892b", "#2a9d8f", "#c44536", "#7a6ad8", "#5f9e3a", "#c0587e", "#8d7b68"];

function el(name, attrs, parent) {
  const e = document.createElementNS(SVGNS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

function titled(e, text) { el("title", {}, e).textContent = text; return e; }

// A scale from [lo, hi] to [a, b] pixels, linear or log10, with its ticks.
function scale(lo, hi, a, b, log) {
  if (log) { lo = Math.log10(lo); hi = Math.log10(hi); }
  if (hi === lo) { hi += 1; lo -= log ? 1 : 0; }
  const f = v => a + ((log ? Math.log10(v) : v) - lo) / (hi - lo) * (b - a);
  f.ticks = () => {
    if (log) {
      // Powers of ten; where they are fewer than three (a span under two
      // decades), 2 and 5 times them too, then every multiple.
      for (const steps of [[1], [1, 2, 5], [1, 2, 3, 4, 5, 6, 7, 8, 9]]) {
        const out = [];
        for (let p = Math.floor(lo); p <= Math.ceil(hi); p++)
          for (const k of steps) { const v = k * Math.pow(10, p), e = Math.log10(v); if (e >= lo - 1e-9 && e <= hi + 1e-9) out.push(v); }
        if (out.length >= 3) return out;
      }
      return [Math.pow(10, lo), Math.pow(10, hi)];
    }
    const span = hi - lo, step = Math.pow(10, Math.floor(Math.log10(span / 5)));
    const nice = [1, 2, 5, 10].map(k => k * step).find(s => span / s <= 6);
    const out = [];
    for (let v = Math.ceil(lo / nice) * nice; v <= hi + 1e-12; v += nice) out.push(v);
    return out;
  };
  return f;
}

function extent(vals, log) {
  const v = vals.filter(x => x != null && isFinite(x) && (!log || x > 0));
  if (!v.length) return [log ? 1 : 0, log ? 10 : 1];
  let lo = Math.min(...v), hi = Math.max(...v);
  if (log) return [lo / 1.6, hi * 1.6];
  const pad = (hi - lo) * 0.06 || Math.abs(hi) * 0.1 || 1;
  return [Math.min(0, lo - pad), hi + pad];
}

function frame(opts) {
  const W = opts.width || 620, H = opts.height || 340, m = { l: 64, r: 12, t: 10, b: 42 };
  const svg = el("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
  return { svg, W, H, m };
}

function axes(f, sx, sy, xlabel, ylabel, fmtx, fmty) {
  const { svg, W, H, m } = f;
  const g = el("g", { class: "grid" }, svg), ax = el("g", { class: "axis" }, svg);
  for (const v of sy.ticks()) {
    const y = sy(v);
    el("line", { x1: m.l, x2: W - m.r, y1: y, y2: y }, g);
    el("text", { x: m.l - 4, y: y + 4, "text-anchor": "end" }, ax).textContent = fmty(v);
  }
  for (const v of sx.ticks()) {
    const x = sx(v);
    el("line", { x1: x, x2: x, y1: m.t, y2: H - m.b }, g);
    el("text", { x, y: H - m.b + 14, "text-anchor": "middle" }, ax).textContent = fmtx(v);
  }
  el("path", { d: `M${m.l},${m.t}V${H - m.b}H${W - m.r}`, fill: "none" }, ax);
  el("text", { x: (m.l + W - m.r) / 2, y: H - 6, "text-anchor": "middle" }, svg).textContent = xlabel;
  el("text", { x: 12, y: (m.t + H - m.b) / 2, transform: `rotate(-90 12 ${(m.t + H - m.b) / 2})`, "text-anchor": "middle" }, svg).textContent = ylabel;
}

// The legend below the plot, in as many columns as fit, the chart made
// taller for it: drawn over the plot it hid points and bars.
function legend(f, items) {
  if (!items.length) return;
  const g = el("g", { class: "chart-legend" }, f.svg);
  const wide = Math.max(...items.map(it => it.name.length)) * 6.2 + 30;
  const cols = Math.max(1, Math.floor((f.W - f.m.l) / wide)), top = f.H + 4;
  items.forEach((it, i) => {
    const x = f.m.l + (i % cols) * wide, y = top + 10 + Math.floor(i / cols) * 14;
    el("line", { x1: x, x2: x + 18, y1: y - 4, y2: y - 4, stroke: it.color, "stroke-width": 2, "stroke-dasharray": it.dash || "" }, g);
    el("text", { x: x + 22, y }, g).textContent = it.name;
  });
  const H = top + Math.ceil(items.length / cols) * 14 + 4;
  f.svg.setAttribute("height", H);
  f.svg.setAttribute("viewBox", `0 0 ${f.W} ${H}`);
}

const fmtSI = v => hp.si(v);

// series: [{ name, color, dash, points: [[x, y, label?]], line: true|false }];
// marks: [{ x, name, color, dash }] vertical; hlines: [{ y, name, color, dash }].
function lineChart(opts) {
  const f = frame(opts);
  const all = opts.series.flatMap(s => s.points);
  const [x0, x1] = opts.xrange || extent(all.map(p => p[0]).concat((opts.marks || []).map(m => m.x)), opts.xlog);
  const [y0, y1] = opts.yrange || extent(all.map(p => p[1]).concat((opts.hlines || []).map(h => h.y)), opts.ylog);
  const sx = scale(x0, x1, f.m.l, f.W - f.m.r, opts.xlog), sy = scale(y0, y1, f.H - f.m.b, f.m.t, opts.ylog);
  axes(f, sx, sy, opts.xlabel, opts.ylabel, opts.fmtx || fmtSI, opts.fmty || fmtSI);
  const clip = v => Math.max(-1e4, Math.min(1e4, v));
  for (const h of opts.hlines || []) {
    const y = sy(h.y);
    titled(el("line", { x1: f.m.l, x2: f.W - f.m.r, y1: y, y2: y, stroke: h.color, "stroke-dasharray": h.dash || "4 3", "stroke-width": 1.5 }, f.svg), `${h.name}: ${hp.si(h.y)}`);
  }
  (opts.marks || []).forEach((mk, i) => {
    const x = sx(mk.x);
    titled(el("line", { x1: x, x2: x, y1: f.m.t, y2: f.H - f.m.b, stroke: mk.color, "stroke-dasharray": mk.dash || "4 3", "stroke-width": 1.5 }, f.svg), `${mk.name}: ${hp.si(mk.x)}`);
    el("text", { x: x + 3, y: f.m.t + 12 + 12 * (i % 4), fill: mk.color }, f.svg).textContent = mk.name;   // staggered: marks can be close
  });
  opts.series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    const pts = s.points.filter(p => p[0] != null && p[1] != null && (!opts.xlog || p[0] > 0) && (!opts.ylog || p[1] > 0));
    if (s.line !== false && pts.length > 1)
      el("path", { class: "series", d: pts.map((p, k) => `${k ? "L" : "M"}${clip(sx(p[0]))},${clip(sy(p[1]))}`).join(""), fill: "none", stroke: color,
                   "stroke-width": 1.8, "stroke-dasharray": s.dash || "" }, f.svg);
    if (s.dots !== false)
      for (const p of pts)
        titled(el("circle", { cx: sx(p[0]), cy: sy(p[1]), r: s.r || 3.5, fill: color, class: "point" }, f.svg),
               `${s.name}${p[2] ? " · " + p[2] : ""}\n${opts.xname || "x"} = ${hp.si(p[0])}, ${opts.yname || "y"} = ${hp.si(p[1])}`);
  });
  legend(f, opts.series.filter(s => s.name).map((s, i) => ({ name: s.name, color: s.color || PALETTE[i % PALETTE.length], dash: s.dash })));
  return f.svg;
}

// categories along x; groups: [{ name, color, values[] }], side by side or stacked.
function barChart(opts) {
  const f = frame(opts);
  const n = opts.categories.length, gs = opts.groups;
  const totals = opts.stacked ? opts.categories.map((_, i) => gs.reduce((a, g) => a + (g.values[i] || 0), 0)) : gs.flatMap(g => g.values);
  const [y0, y1] = opts.yrange || extent(totals, opts.ylog);
  const sy = scale(opts.ylog ? y0 : 0, y1, f.H - f.m.b, f.m.t, opts.ylog);
  const band = (f.W - f.m.l - f.m.r) / n;
  const sx = scale(0, n, f.m.l, f.W - f.m.r, false);
  sx.ticks = () => [];
  axes(f, sx, sy, opts.xlabel || "", opts.ylabel, () => "", opts.fmty || fmtSI);
  opts.categories.forEach((c, i) => {
    const t = el("text", { x: f.m.l + band * (i + 0.5), y: f.H - f.m.b + 13, "text-anchor": "middle" }, f.svg);
    const fit = Math.max(6, Math.floor(band / 6.5));   // characters a category's band holds
    t.textContent = c.length > fit ? c.slice(0, fit - 1) + "…" : c;
    titled(t, c);
    let base = opts.ylog ? y0 : 0;
    gs.forEach((g, k) => {
      const v = g.values[i];
      if (v == null || (opts.ylog && v <= 0)) return;
      const w = opts.stacked ? band * 0.6 : band * 0.8 / gs.length;
      const x = f.m.l + band * i + (opts.stacked ? band * 0.2 : band * 0.1 + k * w);
      const top = opts.stacked ? base + v : v, bottom = opts.stacked ? base : (opts.ylog ? y0 : 0);
      titled(el("rect", { x, width: Math.max(1, w - 1), y: sy(top), height: Math.max(0, sy(bottom) - sy(top)),
                          fill: g.color || PALETTE[k % PALETTE.length], class: "bar" }, f.svg), `${g.name} · ${c}: ${hp.si(v)}`);
      if (opts.stacked) base += v;
    });
  });
  legend(f, gs.map((g, k) => ({ name: g.name, color: g.color || PALETTE[k % PALETTE.length] })));
  return f.svg;
}
