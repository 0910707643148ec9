// trace.js -- /trace lists the recent requests; /trace/N follows request N
// through the eight layers: the timeline, each event's args on hover, the
// journey table (as `hipath run` prints it) and its Perfetto file.
"use strict";

const id = Number(location.pathname.split("/")[2]) || 0;
const tip = document.getElementById("tip");
const argsCache = new Map();
let tl = null, req = null;

async function list() {
  document.getElementById("list").hidden = false;
  const ul = document.getElementById("requests");
  try {
    const r = await hp.api("/api/requests?limit=200");
    if (!r.requests.length) ul.innerHTML = `<li class="muted">${hp.esc(hp.t("norequests"))}</li>`;
    for (const q of r.requests) {
      const li = document.createElement("li");
      li.innerHTML = `<a href="/trace/${q.request}">${hp.esc(hp.t("request"))} ${q.request}</a> ` +
        `<span class="muted">${hp.dur(q.end_ns - q.start_ns)}, ${q.events} ${hp.esc(hp.t("events"))}</span>`;
      ul.append(li);
    }
  } catch (e) { ul.innerHTML = `<li class="error">${hp.esc(e.message)}</li>`; }
}

function events(v) {
  const px = tl.width();
  const q = v ? `&from=${Math.max(0, Math.floor(req.start_ns + Math.max(0, v[0])))}&to=${Math.ceil(req.start_ns + Math.min(req.end_ns - req.start_ns, v[1]))}` : "";
  return hp.api(`/api/requests/${id}/events?px=${Math.min(8000, Math.max(100, px))}${q}`);
}

async function slice(sid) {
  if (!argsCache.has(sid)) argsCache.set(sid, hp.api(`/api/slices/${sid}`));
  return argsCache.get(sid);
}

function describe(s, full) {
  const lane = hp.lane(s.layer) + (tl.gpuLabel(s) ? ", " + tl.gpuLabel(s) : "");   // "1 gpu, GPU 1" under --tp N
  if (s.bin) return `${s.count} × ${lane} (${hp.t(hp.info.names.clocks[s.clock])}), ${hp.dur(s.busy)}\n${hp.t("legend_bin")}`;
  let text = `${s.name}  ·  ${lane}  ·  ${hp.t(hp.info.names.dirs[s.dir]) }\n` +
    `${s.instant ? "@ " + hp.dur(s.s) : hp.dur(s.d)}  ·  ${hp.t(hp.info.names.clocks[s.clock])}`;
  if (full) {
    if (full.request != null) text += `  ·  ${hp.t("request")} ${full.request}`;
    if (full.step != null) text += `  ·  step ${full.step}`;
    if (full.track_name) text += `  ·  ${full.track_name}`;
    for (const [k, v] of Object.entries(full.args)) {
      const shown = typeof v === "number" && Math.abs(v) >= 1e4 ? `${v} (${hp.si(v)})` : typeof v === "string" && v.length > 300 ? v.slice(0, 300) + "…" : v;
      text += `\n${k}: ${shown}`;
    }
    for (const f of full.flows_out) text += `\n→ ${f.layer} ${f.name}`;
    for (const f of full.flows_in) text += `\n← ${f.layer} ${f.name}`;
  }
  return text;
}

function hover(s, e) {
  if (!s) { tip.style.display = "none"; return; }
  tip.textContent = describe(s);
  tip.style.display = "block";
  const wrap = tip.parentElement.getBoundingClientRect();
  const x = e.clientX - wrap.left + 14, y = e.clientY - wrap.top + 14;
  tip.style.left = Math.min(x, wrap.width - 330) + "px";
  tip.style.top = y + "px";
  if (!s.bin) slice(s.id).then(full => { if (tip.dataset.id == s.id) tip.textContent = describe(s, full); });
  tip.dataset.id = s.bin ? "" : s.id;
}

function pick(s) {
  const d = document.getElementById("detail");
  if (!s || s.bin) { d.textContent = s ? describe(s) : ""; return; }
  slice(s.id).then(full => { d.textContent = describe(s, full); });
}

function journey(j) {
  const t = document.getElementById("journey");
  const note = document.getElementById("journey-note");
  if (!j || j.error) { note.textContent = j?.error || hp.t("noclient"); return; }
  note.textContent = "";
  let html = `<tr><th>${hp.t("layer")}</th><th>${hp.t("dir")}</th><th>${hp.t("time")}</th><th>${hp.t("clock")}</th><th>${hp.t("share")}</th><th>${hp.t("what")}</th></tr>`;
  for (const r of j.rows) {
    html += `<tr><td>${hp.esc(hp.lane(r.layer))}</td><td>${hp.t(r.dir)}</td><td class="num">${hp.dur(r.self_s * 1e9)}</td>` +
      `<td><span class="badge ${r.clock}">${hp.t(r.clock)}</span></td>` +
      `<td class="num"><span class="bar" data-w="${Math.round(r.share * 80)}"></span> ${(r.share * 100).toFixed(1)}%</td>` +
      `<td>${hp.esc(hp.tr("journey_what", r.what))}</td></tr>`;
  }
  const split = j.modeled_s > 0 ? ` = ${hp.dur(j.measured_s * 1e9)} ${hp.t("measured")} + ${hp.dur(j.modeled_s * 1e9)} ${hp.t("modeled")}` : "";
  html += `<tr><th>${hp.t("total")}</th><th></th><th class="num">${hp.dur(j.total_s * 1e9)}</th>` +
    `<th><span class="badge ${j.modeled_s > 0 ? "mixed" : "measured"}">${hp.t(j.modeled_s > 0 ? "mixed" : "measured")}</span></th><th>100%</th><th>${split}</th></tr>`;
  t.innerHTML = html;
  for (const b of t.querySelectorAll(".bar")) b.style.width = b.dataset.w + "px";   // CSSOM: the page's CSP allows no style attributes
}

// The .pftrace through fetch (it may need the API key), handed over as a file.
async function download() {
  const r = await fetch(`/api/requests/${id}/perfetto`, { headers: hp.headers() });
  if (!r.ok) { document.getElementById("detail").textContent = (await r.json()).error.message; return; }
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await r.blob());
  a.download = `hipath-run${req.run}-request${id}.pftrace`;
  document.body.append(a);
  a.click();
  setTimeout(() => { URL.revokeObjectURL(a.href); a.remove(); }, 1000);
}

async function one() {
  document.getElementById("one").hidden = false;
  tl = new Timeline(document.getElementById("timeline"), async v => {
    if (v[0] <= 0 && v[1] >= tl.span) { tl.bins = tl.overviewBins; tl.draw(); return; }
    tl.add(await events(v), false);
  });
  tl.onHover = hover;
  tl.onPick = pick;
  document.getElementById("fit").onclick = () => tl.fit();
  document.getElementById("zin").onclick = () => tl.zoom(0.5);
  document.getElementById("zout").onclick = () => tl.zoom(2);
  document.getElementById("download").onclick = download;
  document.getElementById("title").textContent = `${hp.t("request")} ${id}`;
  // The timeline and the summary (with the journey, slower) are asked for at once; the timeline draws first.
  const summary = hp.api(`/api/requests/${id}`).then(q => {
    req = q;
    document.getElementById("summary").textContent = `${q.model.split("/").pop()} · ${q.device} · ${hp.t("window")} ` +
      `${hp.dur(q.end_ns - q.start_ns)} · ${q.events} ${hp.t("events")} · ${hp.t("reply")}: ${q.reply ?? ""}`;
    journey(q.journey);
  });
  try {
    const first = await events(null);
    req ??= { start_ns: first.t0, end_ns: first.t1, run: first.run };
    tl.add(first, true);
    document.body.dataset.timeline = "drawn";
    performance.mark("timeline-drawn");
    await summary;
  } catch (e) {
    document.getElementById("summary").innerHTML = `<span class="error">${hp.esc(e.message)}</span>`;
  }
}

// What a test (tests/web/check.js, tp.js) asks of the page.
window.hipathTimeline = {
  lanes: () => tl?.lanesDrawn ?? [],
  flows: () => tl?.drawnFlows ?? [],   // [from layer, to layer, from GPU row, to GPU row] (rows by where the arrow is drawn; -1: none)
  gpus: () => tl?.gpus.map(g => g.label) ?? [],
  // The drawn slices pred accepts: their track, and the GPU row and x their box is drawn at.
  drawnRows: pred => tl.drawn.filter(b => !b.item.bin && pred(b.item))
    .map(b => ({ id: b.item.id, track: b.item.track, row: tl.rowAt((b.y0 + b.y1) / 2), x: b.x0 })),
  // The centre of a drawn slice that pred accepts, in page coordinates.
  locate(pred) {
    const r = tl.canvas.getBoundingClientRect();
    const b = tl.drawn.find(b => !b.item.bin && pred(b.item));
    return b && { x: r.left + (b.x0 + b.x1) / 2, y: r.top + (b.y0 + b.y1) / 2, id: b.item.id, name: b.item.name };
  },
  view: () => tl.view,
  drawMs: () => tl.drawMs,
  slices: () => tl.slices.size,
  zoomTo: (a, b) => tl.setView(a, b),
};

hp.header("timeline").then(() => {   // a workshop's student: the download holds others' requests (403)
  if (hp.info?.student) document.getElementById("download").hidden = true;
});
document.addEventListener("hipath-lang", () => { tl?.draw(); if (req) journey(req.journey); });
id ? one() : list();
