// timeline.js -- one request on a canvas: eight lanes in the course's order
// (8 client on top, 1 GPU at the bottom), its slices on one time axis,
// flow arrows between them, zoom (wheel) and pan (drag). Only what is on
// screen is drawn; slices too small for a pixel come from the server as
// counts per pixel column (bins) and are drawn as a density strip. With
// tensor parallelism (--tp N) the GPU lane has a sub-row per GPU's stream.
"use strict";

const LANE_H = 58, AXIS_H = 26, GUTTER = 112, ROW_H = 14, SUB_H = ROW_H + 8;
const LAYER_COLOR = ["", "#c44536", "#8d7b68", "#5f9e3a", "#d08a2e", "#c0587e", "#7a6ad8", "#2a9d8f", "#3b7dd8"];
const MODELED = "#e0892b", MIXED = "#8a5cc2";

class Timeline {
  constructor(canvas, onView) {
    this.canvas = canvas;
    this.ctx = canvas.getContext("2d");
    this.onView = onView;          // called (debounced) with the new view [v0, v1] (ns from t0)
    this.slices = new Map();       // id -> slice
    this.flows = [];               // [from id, to id]
    this.bins = null;              // { from, to, px, rows: [layer, clock, x, count, busy, track] }
    this.gpus = [];                // the GPU lane's sub-rows, [{ track, label }]: none with one GPU
    this.gpuRow = new Map();       // track -> its sub-row
    this.overviewBins = null;
    this.span = 1;
    this.view = [0, 1];
    this.drawn = [];               // hit boxes of the last draw
    this.drawnFlows = [];
    this.hatch = this.makeHatch();
    this.listen();
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  makeHatch() {
    const c = document.createElement("canvas");
    c.width = c.height = 6;
    const g = c.getContext("2d");
    g.strokeStyle = MODELED;
    g.lineWidth = 2;
    g.beginPath(); g.moveTo(0, 6); g.lineTo(6, 0); g.stroke();
    return this.ctx.createPattern(c, "repeat");
  }

  // A response of /api/requests/N/events: rows into slices, bins kept with their window.
  add(res, overview) {
    const names = res.names;
    for (const r of res.slices) {
      if (this.slices.has(r[0])) continue;
      this.slices.set(r[0], { id: r[0], s: r[1], d: r[2], layer: r[3], name: names[r[4]] ?? "?", clock: r[5], dir: r[6], depth: r[7], instant: r[8], track: r[9] ?? 0 });
    }
    if (overview) {
      this.gpus = Timeline.gpuRows(res);
      this.gpuRow = new Map(this.gpus.map((g, i) => [g.track, i]));
      this.span = Math.max(1, res.t1 - res.t0);
      this.flows = res.flows;
      this.flowEnds = new Set(res.flows.flat());   // drawn however small: the arrows need them
      this.view = [0, this.span];
    }
    const bins = { from: res.from - res.t0, to: res.to - res.t0, px: this.width(), rows: res.bins };
    if (overview) this.overviewBins = bins;
    this.bins = bins;
    this.draw();
  }

  // One sub-row per layer-1 track the request's slices (drawn or counted) are on, when
  // there are several: each GPU's stream, labelled by its track's name ("GPU 1/stream 0").
  static gpuRows(res) {
    const tracks = new Set([...res.slices.filter(r => r[3] === 1).map(r => r[9]), ...res.bins.filter(b => b[0] === 1).map(b => b[5])]);
    if (tracks.size < 2) return [];
    const names = new Map((res.tracks ?? []).filter(t => t[0] === 1).map(t => [t[1], t[2]]));
    return [...tracks].sort((a, b) => a - b).map((t, i) => ({ track: t, label: (names.get(t) ?? `GPU ${i}`).split("/")[0] }));
  }

  width() { return Math.max(100, Math.round(this.canvas.clientWidth - GUTTER)); }
  x(t) { return GUTTER + (t - this.view[0]) / (this.view[1] - this.view[0]) * this.width(); }
  t(x) { return this.view[0] + (x - GUTTER) / this.width() * (this.view[1] - this.view[0]); }
  laneY(layer) { return AXIS_H + (8 - layer) * LANE_H; }   // the GPU lane is the lowest: only its height varies
  laneH(layer) { return layer === 1 && this.gpus.length ? Math.max(LANE_H, 8 + this.gpus.length * SUB_H) : LANE_H; }
  bottom() { return this.laneY(1) + this.laneH(1); }
  sub(i) { const h = (this.laneH(1) - 8) / this.gpus.length; return { y: this.laneY(1) + 4 + i * h, h }; }
  // The sub-row a layer-1 slice or bin of that track is drawn in; null when the lane is one row.
  subOf(layer, track) { return layer === 1 && this.gpus.length ? this.sub(this.gpuRow.get(track) ?? 0) : null; }
  midY(s) { const sub = this.subOf(s.layer, s.track); return sub ? sub.y + sub.h / 2 : this.laneY(s.layer) + LANE_H / 2; }
  gpuLabel(s) { return this.subOf(s.layer, s.track) ? this.gpus[this.gpuRow.get(s.track) ?? 0].label : ""; }
  // The sub-row a point of the canvas is in, -1 outside them (what tests/web/tp.js checks arrows by).
  rowAt(y) {
    if (!this.gpus.length) return -1;
    const b = this.sub(0), i = Math.floor((y - b.y) / b.h);
    return i >= 0 && i < this.gpus.length ? i : -1;
  }

  setView(v0, v1) {
    const min = 50;   // ns: no deeper than that
    if (v1 - v0 < min) { const m = (v0 + v1) / 2; v0 = m - min / 2; v1 = m + min / 2; }
    const pad = (v1 - v0) * 0.5;
    v0 = Math.max(-pad, v0); v1 = Math.min(this.span + pad, v1);
    this.view = [v0, v1];
    this.draw();
    clearTimeout(this.pending);
    this.pending = setTimeout(() => this.onView(this.view), 150);
  }
  fit() { this.setView(-this.span * 0.01, this.span * 1.01); }
  zoom(f, at) {
    const [a, b] = this.view, c = at ?? (a + b) / 2;
    this.setView(c - (c - a) * f, c + (b - c) * f);
  }

  listen() {
    const cv = this.canvas;
    cv.addEventListener("wheel", e => {
      e.preventDefault();
      if (Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const dt = e.deltaX / this.width() * (this.view[1] - this.view[0]);
        this.setView(this.view[0] + dt, this.view[1] + dt);
      } else this.zoom(Math.pow(1.0015, e.deltaY), this.t(e.offsetX));
    }, { passive: false });
    let drag = null;
    cv.addEventListener("mousedown", e => { drag = { x: e.clientX, v: this.view.slice(), moved: false }; cv.classList.add("dragging"); });
    window.addEventListener("mouseup", () => { if (drag) cv.classList.remove("dragging"); setTimeout(() => { drag = null; }, 0); });
    window.addEventListener("mousemove", e => {
      if (!drag || !(e.buttons & 1)) return;
      const dx = e.clientX - drag.x;
      if (Math.abs(dx) > 2) drag.moved = true;
      const dt = dx / this.width() * (drag.v[1] - drag.v[0]);
      this.setView(drag.v[0] - dt, drag.v[1] - dt);
    });
    cv.addEventListener("mousemove", e => { if (!drag) this.onHover?.(this.hit(e.offsetX, e.offsetY), e); });
    cv.addEventListener("mouseleave", () => this.onHover?.(null));
    cv.addEventListener("click", e => { if (!drag?.moved) this.onPick?.(this.hit(e.offsetX, e.offsetY), e); });
  }

  hit(x, y) {
    for (let i = this.drawn.length - 1; i >= 0; i--) {
      const b = this.drawn[i];
      if (x >= b.x0 - 2 && x <= b.x1 + 2 && y >= b.y0 && y <= b.y1) return b.item;
    }
    return null;
  }

  draw() {
    const started = performance.now();
    const cv = this.canvas, dpr = window.devicePixelRatio || 1;
    const W = cv.clientWidth, H = this.bottom() + 4;
    cv.style.height = H + "px";
    if (cv.width !== Math.round(W * dpr) || cv.height !== Math.round(H * dpr)) { cv.width = Math.round(W * dpr); cv.height = Math.round(H * dpr); }
    const g = this.ctx;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, W, H);
    this.drawn = [];
    this.drawnFlows = [];
    const lanesDrawn = new Set();
    this.axis(g, W);
    for (let layer = 8; layer >= 1; layer--) {
      const y = this.laneY(layer);
      g.fillStyle = layer % 2 ? "#fafafa" : "#f3f4f6";
      g.fillRect(0, y, W, this.laneH(layer));
    }
    g.fillStyle = "#e2e4e8";
    for (let i = 1; i < this.gpus.length; i++) g.fillRect(52, Math.round(this.sub(i).y) - 1, W - 52, 1);
    g.save();
    g.beginPath(); g.rect(GUTTER, 0, W - GUTTER, H); g.clip();
    this.drawBins(g);
    const [v0, v1] = this.view, px = (v1 - v0) / this.width();
    const boxes = new Map();
    for (const s of this.slices.values()) {
      if (s.s > v1 || s.s + s.d < v0) continue;
      if (!s.instant && s.d < px * 0.5 && !this.flowEnds?.has(s.id)) continue;
      const b = this.drawSlice(g, s);
      boxes.set(s.id, b);
      lanesDrawn.add(s.layer);
      this.drawn.push({ ...b, item: s });
    }
    this.drawArrows(g, boxes);
    g.restore();
    for (let layer = 8; layer >= 1; layer--) {
      const y = this.laneY(layer), h = this.laneH(layer);
      g.fillStyle = LAYER_COLOR[layer];
      g.fillRect(0, y + 4, 4, h - 8);
      g.fillStyle = "#222";
      g.font = "600 12px system-ui, sans-serif";
      g.fillText(hp.lane(layer), 10, y + h / 2 + 4);
    }
    g.fillStyle = "#555";
    g.font = "11px system-ui, sans-serif";
    this.gpus.forEach((gpu, i) => { const b = this.sub(i); g.fillText(gpu.label, 56, b.y + b.h / 2 + 4); });
    this.lanesDrawn = [...lanesDrawn].sort((a, b) => b - a);
    this.drawMs = performance.now() - started;
  }

  // A tick's label in the unit of the step, with the digits the step needs.
  static tick(t, step) {
    const [f, u] = step >= 1e9 ? [1e9, "s"] : step >= 1e6 ? [1e6, "ms"] : step >= 1e3 ? [1e3, "µs"] : [1, "ns"];
    return (t / f).toFixed(Math.max(0, Math.ceil(-Math.log10(step / f) - 1e-9))) + " " + u;
  }

  axis(g, W) {
    const [v0, v1] = this.view, span = v1 - v0;
    const step = Math.pow(10, Math.floor(Math.log10(span / 8)));
    const nice = [1, 2, 5, 10].map(k => k * step).find(s => span / s <= 10) || step * 10;
    g.font = "11px system-ui, sans-serif";
    g.strokeStyle = "#e6e6e6";
    g.fillStyle = "#555";
    for (let t = Math.ceil(v0 / nice) * nice; t <= v1; t += nice) {
      const x = this.x(t);
      g.beginPath(); g.moveTo(x, AXIS_H - 4); g.lineTo(x, this.bottom()); g.stroke();
      g.fillText(Timeline.tick(t, nice), x + 2, 14);
    }
  }

  drawBins(g) {
    const b = this.bins && this.bins.from <= this.view[0] + 1 && this.bins.to >= this.view[1] - 1 ? this.bins : this.overviewBins;
    if (!b) return;
    const colW = (b.to - b.from) / b.px;
    for (const [layer, clock, col, count, busy, track] of b.rows) {
      const t0 = b.from + col * colW, x0 = this.x(t0), x1 = Math.max(x0 + 1, this.x(t0 + colW));
      if (x1 < GUTTER || x0 > this.canvas.clientWidth) continue;
      const sub = this.subOf(layer, track), full = sub ? sub.h - 4 : LANE_H - 10, base = sub ? sub.y + sub.h - 2 : this.laneY(layer) + LANE_H - 4;
      const h = Math.max(3, Math.min(1, busy / colW) * full), y = base - h;
      g.fillStyle = clock === 1 ? this.hatch : clock === 2 ? MIXED + "66" : LAYER_COLOR[layer] + "66";
      g.fillRect(x0, y, x1 - x0, h);
      this.drawn.push({ x0, x1, y0: y, y1: y + h, item: { bin: true, layer, clock, count, busy, track } });
    }
  }

  drawSlice(g, s) {
    const row = Math.min(s.depth + (s.instant ? 1 : 0), 2);   // an instant below the slice it happens in
    const sub = this.subOf(s.layer, s.track);
    const y = sub ? sub.y + (sub.h - ROW_H) / 2 : this.laneY(s.layer) + 4 + row * (ROW_H + 3);
    const x0 = Math.max(GUTTER - 5, this.x(s.s));
    if (s.instant) {
      g.fillStyle = LAYER_COLOR[s.layer];
      g.beginPath(); g.moveTo(x0, y); g.lineTo(x0 + 4, y + ROW_H / 2); g.lineTo(x0, y + ROW_H); g.lineTo(x0 - 4, y + ROW_H / 2); g.fill();
      return { x0: x0 - 4, x1: x0 + 4, y0: y, y1: y + ROW_H, cx: x0, cy: y + ROW_H / 2 };
    }
    const x1 = Math.min(this.canvas.clientWidth + 5, Math.max(x0 + 1, this.x(s.s + s.d)));
    g.fillStyle = LAYER_COLOR[s.layer];
    g.globalAlpha = s.clock === 1 ? 0.35 : 0.9;
    g.fillRect(x0, y, x1 - x0, ROW_H);
    g.globalAlpha = 1;
    if (s.clock === 1) { g.fillStyle = this.hatch; g.fillRect(x0, y, x1 - x0, ROW_H); }
    if (s.clock === 2) { g.strokeStyle = MIXED; g.setLineDash([3, 2]); g.lineWidth = 1.5; g.strokeRect(x0 + 0.5, y + 0.5, x1 - x0 - 1, ROW_H - 1); g.setLineDash([]); }
    if (x1 - x0 > 30) {
      g.fillStyle = s.clock === 1 ? "#222" : "#fff";
      g.font = "11px system-ui, sans-serif";
      g.save(); g.beginPath(); g.rect(x0, y, x1 - x0, ROW_H); g.clip();
      g.fillText(s.name, x0 + 3, y + ROW_H - 3);
      g.restore();
    }
    return { x0, x1, y0: y, y1: y + ROW_H, cx: (x0 + x1) / 2, cy: y + ROW_H / 2 };
  }

  // An arrow leaves its slice where the next one starts (inside it, if it is inside).
  drawArrows(g, boxes) {
    g.strokeStyle = "#222";
    g.fillStyle = "#222";
    g.lineWidth = 1.2;
    for (const [from, to] of this.flows) {
      const a = this.slices.get(from), b = this.slices.get(to);
      if (!a || !b) continue;
      const ba = boxes.get(from), bb = boxes.get(to);
      const tx = Math.min(Math.max(b.s, a.s), a.s + a.d);
      const x0 = this.x(tx), x1 = this.x(b.s);
      if (Math.max(x0, x1) < GUTTER || Math.min(x0, x1) > this.canvas.clientWidth) continue;
      const y0 = ba ? ba.cy : this.midY(a), y1 = bb ? bb.y0 + (b.layer < a.layer ? 0 : ROW_H) : this.midY(b);
      g.beginPath();
      g.moveTo(x0, y0);
      g.bezierCurveTo(x0 + 12, y0, x1 - 12, y1, x1, y1);
      g.stroke();
      const ang = Math.atan2(y1 - y0, x1 - x0 + 24);
      g.beginPath();
      g.moveTo(x1, y1);
      g.lineTo(x1 - 6 * Math.cos(ang - 0.4), y1 - 6 * Math.sin(ang - 0.4));
      g.lineTo(x1 - 6 * Math.cos(ang + 0.4), y1 - 6 * Math.sin(ang + 0.4));
      g.fill();
      this.drawnFlows.push([a.layer, b.layer, this.rowAt(y0), this.rowAt(y1)]);
    }
  }
}
