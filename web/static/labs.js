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
const pts = (q, x, col = "measured", where = {}) =>
  rows(q, where).filter(r => r[col] != null).map(r => [r[x], r[col]]).sort((a, b) => a[0] - b[0]);
const distinct = (key, list = doc.result.rows) => [...new Set(list.map(r => r[key]))];
// A step-like time is mixed on a simulated device (host measured, device modeled), device time modeled; on cpu both measured.
const c = key => hp.t("c")[key] ?? key;   // a chart's words
const clock = (device, what) => device.startsWith("cpu") ? hp.t("measured") : hp.t(what === "device" ? "modeled" : "mixed");

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

// A figure already in ms: three digits, no SI prefix on top of the unit.
// A model's name short enough that its device (w7900, w7900-2x, w7900-2xflops) shows in a bar's label.
const short = m => m.replace(/^deepseek-r1-distill-qwen-/, "R1-");
const ms = v => v == null || !isFinite(v) ? "–" : String(+(+v).toPrecision(3));

const DRAW = {
  1() {
    const layers = rows("layer_ms_8").length ? [8, 7, 6, 5, 4, 3, 2, 1] : [];
    const dev = doc.result.device;
    card(hp.t("labtitle")[1], barChart({
      categories: layers.map(l => hp.lane(l)), ylabel: `ms (8-2 ${clock(dev)}, 1 ${clock(dev, "device")})`,
      groups: [{ name: c("window2"), values: layers.map(l => rows("layer_ms_" + l)[0]?.measured) }] }),
      `TTFT ${ms(rows("ttft_ms")[0]?.measured)} ms, e2e ${ms(rows("e2e_ms")[0]?.measured)} ms (${dev}); ${c("nest")}.`);
  },
  2() {
    const cells = rows("max_kv_tokens", { dtype: "bf16" }).filter(r => r.predicted != null);
    const models = distinct("model", cells), devices = distinct("device", cells);
    card(hp.t("labtitle")[2], barChart({
      categories: models, ylog: true, ylabel: c("kvbeside"), width: 900,
      groups: devices.map(d => ({ name: d, values: models.map(m => Math.max(1, cells.find(r => r.model === m && r.device === d)?.predicted ?? 1)) })) }),
      c("kvnote"));
  },
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
    const rs = distinct("run_id");
    const bars = [["t_memory", "predicted", c("bound_rb")], ["launch_total", "predicted", c("launches")],
                  ["gpu_s", "measured", c("devstep")], ["step_s", "measured", c("step")]];
    const labels = rs.map(run => { const r = doc.result.rows.find(x => x.run_id === run); return `${r.model} @ ${r.device}`; });
    card(c("stepbound"), barChart({ categories: labels, ylog: true, ylabel: c("perstep"), width: 760,
      groups: bars.map(([q, col, name]) => ({ name, values: rs.map(run => rows(q, { run_id: run }).find(r => r[col])?.[col] ?? null) })) }));
  },
  4() {
    const swept = [...new Map(rows("throughput_device").map(r => [r.model + "@" + r.device, r])).values()];
    const thr = [], tpot = [], marks = [];
    swept.forEach((r, k) => {
      const at = { model: r.model, device: r.device }, color = PALETTE[k % PALETTE.length];
      thr.push({ name: `${r.model} @ ${r.device}: ${clock(r.device)}`, color, points: pts("throughput", "batch", "measured", at) });
      thr.push({ name: `… ${c("bydevice")} (${clock(r.device, "device")})`, color, dash: "5 3", points: pts("throughput_device", "batch", "measured", at) });
      tpot.push({ name: `${r.model}: step (${clock(r.device)})`, color, points: pts("tpot", "batch", "measured", at) });
      tpot.push({ name: c("bound_decode"), color, dash: "2 3", dots: false, points: pts("t_step", "batch", "predicted", at) });
      for (const b of rows("b_star", at)) if (b.predicted) marks.push({ x: b.predicted, name: `B* ${b.predicted.toFixed(0)}`, color });
      for (const b of rows("knee_B", at)) if (b.measured) marks.push({ x: b.measured, name: `${c("knee")} ${b.measured.toFixed(0)}`, color, dash: "1 3" });
    });
    card(hp.t("labtitle")[4], lineChart({ series: thr, marks, xlog: true, ylog: true, xlabel: c("batch"), ylabel: hp.t("tokps"), xname: "B", yname: "tokens/s", width: 700, height: 400 }),
      c("bstar_note"));
    card(c("tpot"), lineChart({ series: tpot, xlog: true, ylog: true, xlabel: c("batch"), ylabel: "s", xname: "B", yname: "s", width: 560, height: 400 }));
  },
  5() {
    for (const model of distinct("model", rows("ttft"))) {
      const dev = rows("ttft", { model })[0].device;
      card(`${hp.t("labtitle")[5]} · ${model} @ ${dev}`, lineChart({ xlog: true, ylog: true, xlabel: c("prompt"), ylabel: "s", xname: "P", yname: "s", width: 560, height: 380,
        series: [{ name: `TTFT (${clock(dev)})`, points: pts("ttft", "prompt_len", "measured", { model }) },
                 { name: `${c("prefill_step")} (${clock(dev)})`, points: pts("prefill_step", "prompt_len", "measured", { model }) },
                 { name: `${c("prefill_dev")} (${clock(dev, "device")})`, dash: "5 3", points: pts("prefill_t_device", "prompt_len", "measured", { model }) },
                 { name: c("bound_prefill"), color: "#222", dash: "2 3", dots: false, points: pts("prefill_t_device", "prompt_len", "predicted", { model }) }] }));
    }
  },
  6() {
    const model = distinct("model")[0], dev = rows("step_s", { model })[0]?.device ?? "";
    const grow = (q, col) => { const p = pts(q, "context", col, { model }); return p.map(([x, y]) => [x, (y - p[0][1]) * 1e6]); };
    card(`${hp.t("labtitle")[6]} · ${model} @ ${dev}`, lineChart({ xlabel: c("ctx"), ylabel: c("growth"),
      xname: "L", yname: "µs", width: 560, height: 380, fmty: v => v.toFixed(2),
      series: [{ name: `${c("step_median")} (${clock(dev)})`, points: grow("step_s", "measured") },
               { name: `${c("dev_median")} (${clock(dev, "device")})`, dash: "5 3", points: grow("t_lower", "measured") },
               { name: c("bound_decode"), color: "#222", dash: "2 3", points: grow("t_lower", "predicted") }] }));
    const qb = [...new Set(rows("t_lower", { model: "qwen3-8b" }).map(r => r.batch))].sort((a, b) => a - b);
    if (qb.length)
      card(c("qwen"), lineChart({ xlog: true, ylog: true, xlabel: c("ctxL"),
        ylabel: "decode.t_lower (s)", xname: "L", yname: "s", width: 560, height: 380,
        series: qb.map(b => ({ name: `B = ${b}`, points: pts("t_lower", "context", "predicted", { model: "qwen3-8b", batch: b }) })) }));
  },
  7() {
    const devs = distinct("device", rows("e2e_s"));
    const one = (q, d) => rows(q, { device: d })[0]?.measured;
    const share = devs.map(d => one("device_s", d) / one("e2e_s", d)), waves = devs.map(d => one("f_scaled", d));
    card(hp.t("labtitle")[7], barChart({ stacked: true, categories: devs.map(d => `${short(rows("e2e_s", { device: d })[0].model)} @ ${d.replace(/^(sim|analytic):/, "")}`),
      ylabel: c("e2eshare"), yrange: [0, 1.05], width: 820, height: 380, fmty: v => (v * 100).toFixed(0) + "%",
      groups: [{ name: c("waves"), color: "#3b7dd8", values: waves },
               { name: c("fixed"), color: "#8fc1e8", values: share.map((s, i) => s - waves[i]) },
               { name: c("host"), color: "#e0892b", values: share.map(s => 1 - s) }] }),
      devs.map(d => rows("speedup_amdahl", { device: d }).map(r => `${d}: 2x → ${c("amdahl")} ${r.predicted?.toFixed(3)}x, ${c("measured_x")} ${r.measured?.toFixed(3)}x`).join("")).filter(Boolean).join(" · "));
  },
  8() {
    // the decode step on GPU 0 and its parts, for each run (N x analytic:GPU): all modeled
    const devs = distinct("device", rows("split_s")), one = (q, d) => rows(q, { device: d })[0]?.measured ?? 0;
    const ms = f => devs.map(d => f(d) * 1e3);
    card(hp.t("labtitle")[8], barChart({ stacked: true, categories: devs.map(d => d.replace("analytic:", "")), ylabel: c("tp_step"), width: 820, height: 380,
      groups: [{ name: c("tp_split"), color: "#3b7dd8", values: ms(d => one("split_s", d)) },
               { name: c("tp_repl"), color: "#8fc1e8", values: ms(d => one("waves_s", d) - one("split_s", d)) },
               { name: c("tp_launch"), color: "#e0892b", values: ms(d => one("launch_s", d)) },
               { name: c("tp_ar"), color: "#c0392b", values: ms(d => one("all_reduce_s", d)) },
               { name: c("tp_other"), color: "#999", values: ms(d => one("t_step", d) - one("waves_s", d) - one("launch_s", d) - one("all_reduce_s", d)) }] }),
      devs.map(d => `${d.replace("analytic:", "")}: ${c("bound")} ${(rows("t_step", { device: d })[0]?.predicted * 1e3).toFixed(2)} ms`).join(" · "));
    const gpus = [...new Set(devs.map(d => d.split(":")[1]))], series = [];
    gpus.forEach((g, k) => {
      const color = PALETTE[k % PALETTE.length], mine = q => rows(q).filter(r => r.device.endsWith(":" + g));
      const n0 = Math.min(...mine("f_serial").map(r => parseInt(r.device))), at = (q, col) => mine(q).map(r => [parseInt(r.device), r[col]]);
      series.push({ name: `${g}: ${c("tp_measured")} ${n0}`, color, points: [[n0, 1], ...at("speedup", "measured")] });
      series.push({ name: `${g}: ${c("amdahl")}`, color, dash: "5 3", points: [[n0, 1], ...at("speedup", "predicted")] });
      series.push({ name: `${g}: ${c("tp_ring")}`, color, dash: "2 3", points: [[n0, 1], ...at("speedup_ring", "predicted")] });
    });
    card(c("tp_speedup"), lineChart({ series, xlog: true, xlabel: c("tp_n"), ylabel: c("tp_speedup"), xname: "N", yname: "x", width: 620, height: 380 }));
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
  DRAW[N]();
  document.body.dataset.chart = "drawn";
}

async function main() {
  await hp.header("labs");
  const nav = document.getElementById("labs-nav");
  for (let n = 1; n <= 8; n++) {
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
