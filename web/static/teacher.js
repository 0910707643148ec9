// teacher.js -- the projector's page in a workshop (hipath serve
// --workshop): the join code and who joined, every request as it arrives
// with its student, the scheduler's batch step by step (layer 6's "step"
// events: which requests shared a step, the prefill chunks and decodes in
// it, the KV blocks in use), its preemptions and prefix-cache hits (layer
// 6's preempt, resume and prefix_cache_hit instants; the counters of
// /metrics), TTFT and TPOT histograms, and a lab run. It polls the
// teacher's endpoints (/api/workshop, /steps, /scheduler, /requests) and
// /metrics once a second; the server's key comes
// in the URL's fragment (#key=..., never sent over the wire) and is kept
// for this tab as the header's key is.
"use strict";

const MAX_STEPS = 600;   // steps kept and drawn: the last ones
const reqs = new Map();  // request id -> its row from /api/workshop/requests
let steps = [], lastStep = 0, after = 0, kvTotal = 0;
let events = [], lastEvent = 0, counters = {};   // the scheduler's instants; /metrics' counters
// A step of /api/workshop/steps, by name; its batch, a request each: {req}
// for a decode, {req, from, to, of} for a prefill's chunk (ids from..to of of).
const stepOf = ([id, ts, dur, step, tokens, nPrefill, nDecode, kv, prefill, decode, ids, chunks]) =>
  ({ id, ts, dur, step, tokens, nPrefill, nDecode, kv, prefill, decode, events: [],
     batch: ids.map(req => chunks.find(c => c.req === req) ?? { req }) });

const keyIn = location.hash.match(/key=([0-9A-Za-z_-]+)/);
if (keyIn) {
  sessionStorage.setItem("hipath.key", keyIn[1]);
  history.replaceState(null, "", location.pathname);
}

// A student's colour, from the "#k name" the trace holds; the teacher's own (no owner) grey.
const studentOf = owner => Number(/^#(\d+)/.exec(owner || "")?.[1] || 0);
const colour = k => k ? `hsl(${(k * 137.5) % 360} 65% 52%)` : "#999";

async function room() {
  const w = await hp.api("/api/workshop");
  document.getElementById("code").textContent = w.code;
  document.getElementById("nstudents").textContent = w.students.length;
  const names = document.getElementById("names");
  names.textContent = "";
  for (const s of w.students) {
    const b = document.createElement("span");
    b.style.color = colour(s.student);
    b.textContent = `#${s.student} ${s.name} (${s.removed ? hp.t("removed") : s.requests +
      (s.refused ? ", " + s.refused + " " + hp.t("refused") : "")})`;
    if (s.removed) b.className = "removed";
    else {   // a seat taken by a stranger, or one of many keys of one person
      const x = document.createElement("button");
      x.className = "remove";
      x.textContent = "×";
      x.title = hp.t("remove");
      x.addEventListener("click", async () => {
        if (!confirm(`#${s.student} ${s.name}: ${hp.t("remove_ask")}`)) return;
        await hp.api(`/api/workshop/students/${s.student}`, { method: "DELETE" }).catch(e => { document.getElementById("status").textContent = e.message; });
        room();
      });
      b.append(x);
    }
    names.append(b, "  ");
  }
}

// A teacher's list after slice id `after`, 2,000 an answer: [its rows, the last one's id].
async function listAfter(path, field, after, idOf) {
  for (let rows = [];;) {
    const page = (await hp.api(`${path}?after=${after}`))[field];
    rows = rows.concat(page);
    if (page.length) after = idOf(page[page.length - 1]);
    if (page.length < 2000) return [rows, after];
  }
}

async function poll() {
  const r = await hp.api(`/api/workshop/requests?after=${after}`);
  for (const q of r.requests) reqs.set(q.request, q);
  // from the first still unfinished, so that its TTFT and finish arrive too
  const last = r.requests.length ? r.requests[r.requests.length - 1].request : after;
  const open = [...reqs.values()].filter(q => q.finish == null && q.refused == null && q.request > last - 400).map(q => q.request);
  after = open.length ? Math.min(...open) - 1 : last;
  let got;
  [got, lastStep] = await listAfter("/api/workshop/steps", "steps", lastStep, s => s[0]);
  steps = steps.concat(got.map(stepOf)).slice(-MAX_STEPS);
  [got, lastEvent] = await listAfter("/api/workshop/scheduler", "events", lastEvent, e => e.id);
  events = events.concat(got).slice(-MAX_STEPS);
  // An event belongs to the step composed with it: the first that begins at or after it.
  for (const s of steps) s.events = [];
  let i = 0;
  for (const e of [...events].sort((a, b) => a.ts_ns - b.ts_ns)) {
    while (i < steps.length && steps[i].ts < e.ts_ns) i++;
    e.step = steps[i]?.step;
    steps[i]?.events.push(e);
  }
  const m = await fetch("/metrics").then(r => r.text()).catch(() => "");   // open, as a scraper reads it
  for (const k of ["num_preemptions_total", "prefix_cache_queries_total", "prefix_cache_hits_total", "kv_blocks_total"])
    counters[k] = Number(new RegExp(`^hipath_${k} (\\d+)`, "m").exec(m)?.[1] ?? NaN);
  kvTotal = counters.kv_blocks_total || kvTotal;
}

const who = id => reqs.get(id)?.owner || hp.t("teacher");
// One request's part of a step, in words: "prefill 512–1024 of 2000" or "decode".
const part = r => r.of != null ? `${hp.t("prefill")} ${r.from}–${r.to} ${hp.t("of")} ${r.of}` : hp.t("decode");
const eventWords = e => e.name === "preempt" ? `${hp.t("ev_preempt")}: ${e.tokens} ${hp.t("tokens")}, ${e.blocks} ${hp.t("blocks_freed")}`
  : e.name === "resume" ? `${hp.t("ev_resume")}: ${e.tokens} ${hp.t("tokens_again")}`
  : `${hp.t("ev_prefix_cache_hit")}: ${e.tokens} ${hp.t("tokens_cached")}`;

// The counters and the scheduler's last events, newest first.
function drawScheduler() {
  const c = counters, rate = c.prefix_cache_queries_total > 0 ? c.prefix_cache_hits_total / c.prefix_cache_queries_total : null;
  const chunked = steps.filter(s => s.batch.some(r => r.to < r.of)).length;   // a prompt cut short by the budget
  document.getElementById("counters").textContent = `${hp.t("preemptions")} ${Number.isNaN(c.num_preemptions_total) ? "–" : c.num_preemptions_total} · ` +
    `${hp.t("prefix_hit_rate")} ${rate == null ? "–" : (100 * rate).toFixed(1) + "%"} (${c.prefix_cache_hits_total || 0} / ` +
    `${c.prefix_cache_queries_total || 0} ${hp.t("prompt_tokens")}) · ${hp.t("chunked_steps")} ${chunked} / ${steps.length}`;
  const t = document.getElementById("sched");
  t.innerHTML = `<tr><th>${hp.esc(hp.t("step"))}</th><th>#</th><th>${hp.esc(hp.t("owner"))}</th><th>${hp.esc(hp.t("what_happened"))}</th></tr>` +
    events.slice(-25).reverse().map(e => `<tr class="${hp.esc(e.name)}"><td class="num">${e.step ?? "…"}</td>` +
      `<td><a href="/trace/${e.request}">${e.request}</a></td><td data-k="${studentOf(reqs.get(e.request)?.owner)}">${hp.esc(who(e.request))}</td>` +
      `<td>${hp.esc(eventWords(e))}</td></tr>`).join("");
  for (const td of t.querySelectorAll("td[data-k]")) td.style.color = colour(Number(td.dataset.k));
}

function drawLive() {
  const t = document.getElementById("live");
  const rows = [...reqs.values()].sort((a, b) => b.request - a.request).slice(0, 25);
  t.innerHTML = `<tr><th>#</th><th>${hp.esc(hp.t("owner"))}</th><th>${hp.esc(hp.t("ttft"))}</th><th>${hp.esc(hp.t("tpot"))}</th>` +
    `<th>${hp.esc(hp.t("tokens"))}</th><th>${hp.esc(hp.t("cached"))}</th><th>${hp.esc(hp.t("preempted"))}</th>` +
    `<th>${hp.esc(hp.t("finish"))}</th></tr>` + rows.map(q =>
    `<tr><td><a href="/trace/${q.request}">${q.request}</a></td><td data-k="${studentOf(q.owner)}">${hp.esc(q.owner || hp.t("teacher"))}</td>` +
    `<td class="num">${q.ttft_s != null ? hp.dur(q.ttft_s * 1e9) : "…"}</td><td class="num">${tpot(q) != null ? hp.dur(tpot(q) * 1e9) : "–"}</td>` +
    `<td class="num">${q.tokens ?? "…"}</td><td class="num">${q.cached_tokens ?? ""}</td><td class="num">${q.preempted || ""}</td>` +
    `<td>${hp.esc(q.refused ? q.refused + " " + hp.t("refused") : q.finish ?? "…")}</td></tr>`).join("");
  for (const td of t.querySelectorAll("td[data-k]")) td.style.color = colour(Number(td.dataset.k));   // CSSOM: the CSP allows no style attributes
}

const tpot = q => q.tokens > 1 && q.latency_s != null && q.ttft_s != null ? (q.latency_s - q.ttft_s) / (q.tokens - 1) : null;

// Log-spaced bins from the smallest to the largest value.
function histogram(id, values) {
  const box = document.getElementById(id), v = values.filter(x => x > 0);
  box.textContent = "";
  if (!v.length) return;
  const lo = Math.min(...v), hi = Math.max(...v) * 1.0001, n = 12, r = Math.log(hi / lo) / n || 1;
  const counts = new Array(n).fill(0);
  for (const x of v) counts[Math.min(n - 1, Math.floor(Math.log(x / lo) / r))]++;
  const labels = counts.map((_, i) => hp.dur(lo * Math.exp(r * (i + 0.5)) * 1e9));
  box.append(barChart({ categories: labels, groups: [{ name: `${v.length} ${hp.t("count")}`, values: counts }],
    ylabel: hp.t("count"), width: 560, height: 240, fmty: y => Number.isInteger(y) ? String(y) : "" }));
}

// One column a step, one cell a request in it (its student's colour: solid
// for a decode, pale with a border for a prefill's chunk, taller as it holds
// more of the step's tokens); the KV blocks as a line; above a column, a
// red triangle where a request was preempted, a blue one where one resumed,
// a green dot where the prefix cache held a prompt's first blocks.
function drawBatch() {
  const c = document.getElementById("batch"), dpr = window.devicePixelRatio || 1;
  const W = c.clientWidth, H = c.clientHeight, top = 12, base = H - 14;
  c.width = W * dpr; c.height = H * dpr;
  const g = c.getContext("2d");
  g.scale(dpr, dpr);
  g.clearRect(0, 0, W, H);
  if (!steps.length) return;
  const maxB = Math.max(1, ...steps.map(s => s.batch.length)), maxKV = Math.max(1, ...steps.map(s => s.kv));
  const cw = W / Math.max(steps.length, 60), ch = (base - top) / maxB;
  steps.forEach((s, i) => {
    // a prefill chunk takes more of the column than a decode, as it holds more tokens (log scale: 1 to the step's most)
    const weight = r => r.of != null ? 1 + Math.log2(r.to - r.from) : 1, sum = s.batch.reduce((a, r) => a + weight(r), 0);
    let y = base;
    for (const r of s.batch) {
      const h = (base - top) * (s.batch.length / maxB) * weight(r) / sum, k = studentOf(reqs.get(r.req)?.owner);
      g.fillStyle = r.of != null ? `hsl(${(k * 137.5) % 360} 65% 86%)` : colour(k);
      g.fillRect(i * cw, y - h, Math.max(1, cw - 0.5), Math.max(1, h - 0.5));
      if (r.of != null) { g.strokeStyle = colour(k); g.strokeRect(i * cw + 0.5, y - h + 0.5, Math.max(1, cw - 1.5), Math.max(1, h - 1.5)); }
      y -= h;
    }
    s.events.forEach((e, j) => {
      g.fillStyle = e.name === "preempt" ? "#d62728" : e.name === "resume" ? "#1f77b4" : "#2ca02c";
      const x = i * cw + cw / 2, yy = 2 + (j % 2) * 5;
      g.beginPath();
      if (e.name === "prefix_cache_hit") g.arc(x, yy + 3, 3, 0, 7);
      else { g.moveTo(x - 4, yy); g.lineTo(x + 4, yy); g.lineTo(x, yy + 7); }
      g.fill();
    });
  });
  g.strokeStyle = "#222";
  g.beginPath();
  steps.forEach((s, i) => g[i ? "lineTo" : "moveTo"](i * cw + cw / 2, base - (s.kv / maxKV) * (base - top - 6)));
  g.stroke();
  g.fillStyle = "#555";
  g.font = "11px system-ui";
  g.fillText(`${hp.t("step")} ${steps[0].step} … ${steps[steps.length - 1].step} · max batch ${maxB} · ${hp.t("kv_used")} ≤ ${maxKV}` +
             (kvTotal ? ` / ${kvTotal}` : "") + ` · ${hp.t("max_step_tokens")} ${Math.max(...steps.map(s => s.tokens))}`, 4, H - 2);
  c.onmousemove = ev => {
    const s = steps[Math.floor(ev.offsetX / cw)], tip = document.getElementById("tip");
    if (!s) { tip.style.display = "none"; return; }
    tip.textContent = `${hp.t("step")} ${s.step}: ${hp.dur(s.dur)}, ${s.tokens} ${hp.t("tokens")} (${s.prefill} ${hp.t("prefill")}, ` +
      `${s.decode} ${hp.t("decode")}), ${hp.t("kv_used")} ${s.kv}\n` + s.batch.map(r => `${r.req} ${who(r.req)}: ${part(r)}`).join("\n") +
      s.events.map(e => `\n${e.request} ${who(e.request)}: ${eventWords(e)}`).join("");
    tip.style.display = "block";
    tip.style.left = c.offsetLeft + ev.offsetX + 12 + "px";
    tip.style.top = c.offsetTop + ev.offsetY + 12 + "px";
  };
  c.onmouseleave = () => { document.getElementById("tip").style.display = "none"; };
}

function labRunner() {
  const lab = document.getElementById("lab"), dev = document.getElementById("device"), run = document.getElementById("run");
  for (let n = 1; n <= 8; n++) lab.add(new Option(`${n}. ${hp.t("labtitle")[n]}`, n));
  for (const p of hp.info?.profiles ?? []) dev.add(new Option(p, p));
  run.onclick = async () => {
    const st = document.getElementById("labstatus"), n = lab.value, d = dev.value;
    run.disabled = true;
    st.textContent = hp.t("running");
    try {   // the labs page's mechanism: a POST starts it on the server, a GET answers 202 until it is done
      await hp.api(`/api/labs/${n}/run?device=${d}`, { method: "POST" });
      while ((await hp.api(`/api/labs/${n}?device=${d}`)).status === "running") await new Promise(ok => setTimeout(ok, 1000));
      st.innerHTML = `sim:${hp.esc(d)} ✓ <a href="/labs/${n}?device=${encodeURIComponent(d)}">${hp.esc(hp.t("open_lab"))}</a>`;
      document.body.dataset.lab = "done";
    } catch (e) { st.textContent = e.message; }
    run.disabled = false;
  };
}

async function tick() {
  try {
    await room();
    await poll();
    const done = [...reqs.values()];
    drawLive();
    histogram("ttft", done.map(q => q.ttft_s));
    histogram("tpot", done.map(tpot));
    drawBatch();
    drawScheduler();
    document.getElementById("status").textContent = "";
    document.body.dataset.polled = String(Number(document.body.dataset.polled || 0) + 1);
  } catch (e) {
    document.getElementById("status").textContent = e.status === 401 || e.status === 403 ? hp.t("teacher_only") : e.message;
  }
  setTimeout(tick, 1000);
}

// For tests/web/workshop.js: what the page holds.
window.hipathTeacher = { steps: () => steps, requests: () => [...reqs.values()], events: () => events, counters: () => counters };

async function main() {
  await hp.header("teacher");
  document.getElementById("joinurl").textContent = location.origin + "/join";
  labRunner();
  tick();
}
document.addEventListener("hipath-lang", () => location.reload());
main();
