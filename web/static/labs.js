// labs.js -- /labs/N: lab N's charts, drawn from the rows `hipath lab N`
// wrote (labs/out/labN/labN.json) and its trace's kernels, for the default
// run or a device profile run from here ("Run on": the lab again on
// sim:PROFILE, every device time modeled). Each time axis names its clock,
// as labs/plot.py does.
"use strict";

const N = Number(location.pathname.split("/")[2]) || 0;
const charts = document.getElementById("charts");
const sel = document.getElementById("device");
let doc = null;

const rows = (q, where = {}) => doc.result.rows.filter(r => r.quantity === q && Object.entries(where).every(([k, v]) => r[k] === v));
const distinct = (key, list = doc.result.rows) => [...new Set(list.map(r => r[key]))];
// A step-like time is mixed on a simulated device (host measured, device modeled), device time modeled; on cpu both measured.
const c = key => hp.t("c")[key] ?? key;   // a chart's words
const clock = (device, what) => what === "real" ? hp.t("real") : device.startsWith("cpu") ? hp.t("measured") : hp.t(what === "device" ? "modeled" : "mixed");

function card(title, svg, note) {
  const d = document.createElement("div");
  d.className = "chart";
  const h = document.createElement("h3");
  h.textContent = title;
  d.append(h, svg);
  if (note) { const p = document.createElement("p"); p.className = "note"; p.textContent = note; d.append(p); }
  charts.append(d);
}

function profileName() {
  if (sel.value) return sel.value;
  const d = doc.result.device || "";
  return d.includes(":") ? d.split(":")[1] : d;
}

// The charts labs/charts.json describes (labN.json's charts), as labs/plot.py draws them.
const say = (o, f = "label", k = "key") => (hp.lang === "en" ? null : WORDS[hp.lang]?.c?.[o[k]]) ?? o[f];
// Series s's value at row r: its column, or its formula ("of": quantities and
// + - * / taken left to right, each quantity's row at r's category).
const OPS = { "+": (a, b) => a + b, "-": (a, b) => a - b, "*": (a, b) => a * b, "/": (a, b) => a / b };
function value(ch, s, r, rs) {
  if (!s.of) return r[s.col];
  const key = ch.cat ?? ch.x;
  let v = null, op = "+";
  for (const t of s.of) {
    if (OPS[t]) { op = t; continue; }
    const x = typeof t === "number" ? t : rs.find(q => q.quantity === t && q[key] === r[key])?.[s.col];
    if (x == null) return null;
    v = v == null ? x : OPS[op](v, x);
  }
  return v;
}
// The rows of series s with its value filled: [{ r, v }].
const picked = (ch, s, rs) => rs.filter(r => r.quantity === (s.of?.[0] ?? s.q) && (!ch.first || r[ch.first] === rs[0][ch.first]) &&
    Object.entries(s.where ?? {}).every(([k, v]) => r[k] === v) && Object.entries(s.has ?? {}).every(([k, v]) => String(r[k]).includes(v)))
  .map(r => ({ r, v: value(ch, s, r, rs) })).filter(p => p.v != null);
// A row's group: its by field's value, or the part after its "after" (the GPU of "4 x analytic:h100").
const keyOf = (s, r) => s.after ? String(r[s.by]).split(s.after).pop() : String(r[s.by]);
const groupsOf = (ps, s) => s.by ? [...new Set(ps.map(p => keyOf(s, p.r)))].map(k => [k, ps.filter(p => keyOf(s, p.r) === k)]) : [["", ps]];
// A row's x: its field, or the GPU count N its device "N x analytic:G" names.
const atX = (ch, r) => ch.x === "gpus" ? parseInt(r.device) : r[ch.x];
const catLabel = (ch, r) => Object.entries(ch.rename ?? {}).reduce((t, [a, b]) => t.split(a).join(b), (ch.catlabel ?? [ch.cat]).map(f => r[f]).join(" @ "));
const named = (s, ps, name) => `${name ? name + ": " : ""}${say(s)} (${s.col === "predicted" ? hp.t("predicted") : clock(ps[0].r.device, s.clock)})`;
const axes2 = ch => ({ xlog: ch.xlog, ylog: ch.ylog, xlabel: say(ch, "xlabel", "xkey"), ylabel: say(ch, "ylabel", "ykey"), width: 620, height: 380 });

// Series s's values of the chart's run: each request's TTFT or TPOT, real (the engine's own timestamps) or modeled, s.
function replayed(ch, s) {
  const reqs = doc.result.runs.find(r => r.name === ch.run).requests, pre = s.col === "real" ? "real_" : "";
  return s.v === "ttft" ? reqs.map(q => q[pre + "first_s"])
    : reqs.filter(q => q.output_toks > 1).map(q => (q[pre + "last_s"] - q[pre + "first_s"]) / (q.output_toks - 1));
}
const replayName = s => `${say(s)} (${hp.t(s.col === "real" ? "real" : "modeled")})`;

const KINDS = {
  lines(ch, rs) {
    const series = [];
    ch.series.forEach((s, i) => groupsOf(picked(ch, s, rs), s).forEach(([name, g], k) => {
      const p = g.map(({ r, v }) => [atX(ch, r), v]).sort((a, b) => a[0] - b[0]), pred = s.col === "predicted";
      series.push({ name: named(s, g, name), color: s.by ? PALETTE[k % PALETTE.length] : pred ? "#222" : PALETTE[i % PALETTE.length],
                    dash: pred ? "2 3" : s.clock === "device" ? "5 3" : "", dots: !pred,
                    points: ch.relative ? p.map(([x, y]) => [x, (y - p[0][1]) * ch.relative]) : p });
    }));
    const marks = (ch.marks ?? []).flatMap(m => picked(ch, m, rs).map(({ v }) => ({ x: v, name: `${say(m)} ${v.toFixed(0)}`, color: "#666",
                                                                               dash: m.col === "predicted" ? "2 3" : "1 3" })));
    return lineChart({ ...axes2(ch), series, marks, xname: ch.x, yname: say(ch, "ylabel", "ykey") });
  },
  // Side by side, or stacked (each series a part of the whole).
  bars(ch, rs) {
    const every = ch.series.flatMap(s => groupsOf(picked(ch, s, rs), s).map(([name, g]) => [s, name, g]));
    const all = every.flatMap(e => e[2].map(p => p.r)), cats = distinct(ch.cat, all), first = c => all.find(r => r[ch.cat] === c);
    return barChart({ ...axes2(ch), width: ch.width ?? 760, stacked: ch.stacked, categories: cats.map(c => catLabel(ch, first(c))),
      groups: every.map(([s, name, g]) => ({ name: named(s, g, name), values: cats.map(c => {
        const v = g.find(p => p.r[ch.cat] === c)?.v;
        return ch.floor ? Math.max(ch.floor, v ?? 0) : v ?? null;
      }) })) });
  },
  // A replay's requests (labN.json's runs): the share at or below each TTFT or TPOT, real against modeled.
  cdf(ch) {
    const series = ch.series.map((s, i) => {
      const v = replayed(ch, s).sort((a, b) => a - b);
      return { name: replayName(s), color: PALETTE[Math.floor(i / 2) % PALETTE.length], dash: s.col === "real" ? "" : "5 3", dots: false,
               points: v.flatMap((x, k) => [[x, k / v.length], [x, (k + 1) / v.length]]) };
    });
    return lineChart({ ...axes2(ch), series, xname: say(ch, "xlabel", "xkey"), yname: say(ch, "ylabel", "ykey") });
  },
  // Over the run, the requests in the engine (arrived, not finished) or waiting (no first token yet), real against modeled.
  inflight(ch) {
    const reqs = doc.result.runs.find(r => r.name === ch.run).requests;
    const series = ch.series.map((s, i) => {
      const end = (s.col === "real" ? "real_" : "") + (s.v === "in_engine" ? "last_s" : "first_s");
      const ev = reqs.flatMap(q => [[q.arrival_s, 1], [q.arrival_s + q[end], -1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      let n = 0;
      const points = [[0, 0]];
      for (const [t, d] of ev) { points.push([t, n]); n += d; points.push([t, n]); }
      return { name: replayName(s), color: PALETTE[Math.floor(i / 2) % PALETTE.length], dash: s.col === "real" ? "" : "5 3", dots: false, points };
    });
    return lineChart({ ...axes2(ch), series, xname: say(ch, "xlabel", "xkey"), yname: say(ch, "ylabel", "ykey") });
  },
  // Each kernel at its intensity I and attained FLOP/s (its roof fraction times min(Π, Iβ)), under the roof.
  roofline(ch, rs) {
    const p = doc.result.profile, roof = (r, i) => Math.min(p["peak_flops_" + r.dtype] ?? p.peak_flops_fp16, i * p.memory_bandwidth_bytes_per_s);
    const [meas, pred] = ch.series, x = rs.filter(r => r.quantity === ch.x && r.measured != null);
    const series = groupsOf(picked(ch, { ...meas, q: ch.y }, rs), meas).map(([name, g]) => {
      const at = x.filter(r => r.model === g[0].r.model).map(r => r.measured);
      return { name: named(meas, g, name), line: false, points: g.map(({ r, v }, k) => [at[k], v * roof(r, at[k]), r.reading]) };
    });
    const is = x.map(r => r.measured).filter(i => i > 0), lo = Math.min(...is) / 4, hi = Math.max(...is) * 4, r0 = picked(ch, { ...pred, q: ch.y }, rs)[0];
    series.push({ name: named(pred, [r0], ""), color: "#222", dots: false,
                  points: Array.from({ length: 51 }, (_, t) => lo * (hi / lo) ** (t / 50)).map(i => [i, roof(r0.r, i)]) });
    return lineChart({ ...axes2(ch), xlog: true, ylog: true, series, xname: "FLOP/B", yname: "FLOP/s" });
  },
};

function described() {
  for (const ch of doc.result.charts ?? [])
    for (const v of ch.each ? distinct(ch.each, rows(ch.series[0].q)) : [null]) {
      const rs = v == null ? doc.result.rows : doc.result.rows.filter(r => r[ch.each] === v);
      card(say(ch, "title") + (v == null ? "" : ` · ${v} @ ${rs[0].device}`), KINDS[ch.kind](ch, rs));
    }
}

// What labs/charts.json does not describe: lab 3's kernels from its trace, on
// the selected profile's roofline.
const DRAW = {
  3() {
    const name = profileName(), p = doc.profiles[name];
    const ks = doc.kernels.filter(k => k.flops > 0 && k.bytes > 0 && k.total_ns > 0);
    const runs = [...new Set(ks.map(k => k.run_id))];
    const series = runs.map(run => {
      const mine = ks.filter(k => k.run_id === run);
      return { name: `${mine[0].model} @ ${mine[0].device} (${mine[0].clock})`, line: false,
               points: mine.map(k => [k.flops / k.bytes, k.flops / (k.total_ns * 1e-9), `${k.name} ×${k.n}`]) };
    });
    const lo = 0.01, hi = 1e4;
    if (p) {
      const peaks = Object.entries(p.peak).filter(([k]) => k === "fp32" || k === "fp16");
      const top = Math.max(...peaks.map(([, v]) => v));
      series.push({ name: `${hp.t("ceilings")} ${p.name}: β = ${hp.si(p.bandwidth)}B/s`, color: "#222", dots: false, points: [[lo, p.bandwidth * lo], [top / p.bandwidth, top]] });
      for (const [k, v] of peaks) series.push({ name: `Π ${k} = ${hp.si(v)}FLOP/s`, color: "#222", dash: k === "fp32" ? "2 3" : "6 3", dots: false, points: [[v / p.bandwidth, v], [hi, v]] });
    }
    card(hp.t("labtitle")[3], lineChart({ series, xlog: true, ylog: true, xrange: [lo, hi], yrange: [1e6, p ? 2 * Math.max(...Object.values(p.peak)) : 1e15],
      xlabel: hp.t("intensity"), ylabel: hp.t("flops"), xname: "FLOP/B", yname: "FLOP/s", width: 760, height: 420 }),
      `${hp.t("kernels")}: ${c("roofnote")}`);
  },
};

async function show(device) {
  const status = document.getElementById("status");
  charts.textContent = "";
  status.textContent = hp.t("loading");
  try {
    let d;   // a run from this page, or another, answers 202 until its result is there
    while ((d = await hp.api(`/api/labs/${N}${device ? "?device=" + device : ""}`)).status === "running") {
      status.textContent = `sim:${device}: ${hp.t("running")}`;
      await new Promise(done => setTimeout(done, 1000));
      if (sel.value !== device) return;   // the reader has moved on
    }
    doc = d;
    status.textContent = `${doc.result.device}${device ? "" : " · " + hp.t("default_run")}`;
  } catch (e) {
    status.textContent = e.status === 404 && device ? `sim:${device}: ${hp.t("notrun")}` : e.message;
    if (!(e.status === 404 && device && doc)) return;   // not run there: the last result, with this profile's ceilings
  }
  described();
  DRAW[N]?.();
  document.body.dataset.chart = "drawn";
}

async function main() {
  await hp.header("labs");
  const nav = document.getElementById("labs-nav");
  for (let n = 1; n <= hp.t("labtitle").length - 1; n++) {
    const a = document.createElement("a");
    a.href = `/labs/${n}`;
    a.textContent = `${n}. ${hp.t("labtitle")[n]}`;
    if (n === N) a.className = "here";
    nav.append(a, document.createElement("br"));
  }
  if (!N) { document.querySelector(".tl-tools").hidden = true; return; }   // the index: no lab to run
  nav.hidden = true;
  document.getElementById("lab-title").textContent = `${hp.t("lab")} ${N}: ${hp.t("labtitle")[N]}`;
  sel.innerHTML = `<option value="">${hp.esc(hp.t("default_run"))}</option>` +
    (hp.info?.profiles ?? []).map(p => `<option>${hp.esc(p)}</option>`).join("");
  const run = document.getElementById("run");
  const label = () => { run.textContent = `${hp.t("run_on")} sim:${sel.value || "…"}`; run.disabled = !sel.value; };
  sel.onchange = () => { label(); show(sel.value); };
  run.onclick = async () => {
    const device = sel.value;   // the run's, whatever is chosen meanwhile: both are held until it ends
    run.disabled = sel.disabled = true;
    document.getElementById("status").textContent = hp.t("running");
    try {
      // The server runs it on a thread of its own; show() asks until the result is there.
      await hp.api(`/api/labs/${N}/run?device=${device}`, { method: "POST" });
      await show(device);
    }
    catch (e) { document.getElementById("status").textContent = e.message; }
    sel.disabled = false;
    label();
  };
  // ?device=P (the teacher's page links a lab it ran): that profile's result
  const asked = new URLSearchParams(location.search).get("device");
  if (asked && [...sel.options].some(o => o.value === asked)) sel.value = asked;
  label();
  show(sel.value);
}

document.addEventListener("hipath-lang", () => location.reload());
main();
