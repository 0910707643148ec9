// teacher.js -- the projector's page in a workshop (hipath serve
// --workshop): the join code and who joined, every request as it arrives
// with its student, the scheduler's batch step by step (layer 6's "step"
// events: which requests shared a step, the KV blocks in use), TTFT and
// TPOT histograms, and a lab run. It polls the teacher's endpoints
// (/api/workshop, /steps, /requests) once a second; the server's key comes
// in the URL's fragment (#key=..., never sent over the wire) and is kept
// for this tab as the header's key is.
"use strict";

const MAX_STEPS = 600;   // steps kept and drawn: the last ones
const reqs = new Map();  // request id -> its row from /api/workshop/requests
let steps = [], lastStep = 0, after = 0, kvTotal = 0;

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

async function poll() {
  const r = await hp.api(`/api/workshop/requests?after=${after}`);
  for (const q of r.requests) reqs.set(q.request, q);
  // from the first still unfinished, so that its TTFT and finish arrive too
  const last = r.requests.length ? r.requests[r.requests.length - 1].request : after;
  const open = [...reqs.values()].filter(q => q.finish == null && q.refused == null && q.request > last - 400).map(q => q.request);
  after = open.length ? Math.min(...open) - 1 : last;
  for (;;) {
    const s = await hp.api(`/api/workshop/steps?after=${lastStep}`);
    steps = steps.concat(s.steps).slice(-MAX_STEPS);
    if (s.steps.length) lastStep = s.steps[s.steps.length - 1][0];
    if (s.steps.length < 2000) break;
  }
}

function drawLive() {
  const t = document.getElementById("live");
  const rows = [...reqs.values()].sort((a, b) => b.request - a.request).slice(0, 25);
  t.innerHTML = `<tr><th>#</th><th>${hp.esc(hp.t("owner"))}</th><th>${hp.esc(hp.t("ttft"))}</th><th>${hp.esc(hp.t("tpot"))}</th>` +
    `<th>${hp.esc(hp.t("tokens"))}</th><th>${hp.esc(hp.t("finish"))}</th></tr>` + rows.map(q =>
    `<tr><td><a href="/trace/${q.request}">${q.request}</a></td><td data-k="${studentOf(q.owner)}">${hp.esc(q.owner || hp.t("teacher"))}</td>` +
    `<td class="num">${q.ttft_s != null ? hp.dur(q.ttft_s * 1e9) : "…"}</td><td class="num">${tpot(q) != null ? hp.dur(tpot(q) * 1e9) : "–"}</td>` +
    `<td class="num">${q.tokens ?? "…"}</td><td>${hp.esc(q.refused ? q.refused + " " + hp.t("refused") : q.finish ?? "…")}</td></tr>`).join("");
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

// One column a step, one cell a request in it (its student's colour); the KV blocks as a line.
function drawBatch() {
  const c = document.getElementById("batch"), dpr = window.devicePixelRatio || 1;
  const W = c.clientWidth, H = c.clientHeight;
  c.width = W * dpr; c.height = H * dpr;
  const g = c.getContext("2d");
  g.scale(dpr, dpr);
  g.clearRect(0, 0, W, H);
  if (!steps.length) return;
  const maxB = Math.max(1, ...steps.map(s => s[8].length)), maxKV = Math.max(1, ...steps.map(s => s[7]));
  const cw = W / Math.max(steps.length, 60), ch = (H - 14) / maxB;
  steps.forEach((s, i) => s[8].forEach((id, k) => {
    g.fillStyle = colour(studentOf(reqs.get(id)?.owner));
    g.fillRect(i * cw, H - 14 - (k + 1) * ch, Math.max(1, cw - 0.5), Math.max(1, ch - 0.5));
  }));
  g.strokeStyle = "#222";
  g.beginPath();
  steps.forEach((s, i) => g[i ? "lineTo" : "moveTo"](i * cw + cw / 2, H - 14 - (s[7] / maxKV) * (H - 20)));
  g.stroke();
  g.fillStyle = "#555";
  g.font = "11px system-ui";
  g.fillText(`${hp.t("step")} ${steps[0][3]} … ${steps[steps.length - 1][3]} · max batch ${maxB} · ${hp.t("kv_used")} ≤ ${maxKV}` +
             (kvTotal ? ` / ${kvTotal}` : ""), 4, H - 2);
  c.onmousemove = ev => {
    const s = steps[Math.floor(ev.offsetX / cw)], tip = document.getElementById("tip");
    if (!s) { tip.style.display = "none"; return; }
    tip.textContent = `${hp.t("step")} ${s[3]}: ${hp.dur(s[2])}, ${s[4]} ${hp.t("tokens")} (${s[5]} prefill, ${s[6]} decode), ` +
      `${hp.t("kv_used")} ${s[7]}\n` + s[8].map(id => `${id} ${reqs.get(id)?.owner || hp.t("teacher")}`).join("\n");
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
    document.getElementById("status").textContent = "";
    document.body.dataset.polled = String(Number(document.body.dataset.polled || 0) + 1);
  } catch (e) {
    document.getElementById("status").textContent = e.status === 401 || e.status === 403 ? hp.t("teacher_only") : e.message;
  }
  setTimeout(tick, 1000);
}

// For tests/web/workshop.js: what the page holds.
window.hipathTeacher = { steps: () => steps, requests: () => [...reqs.values()] };

async function main() {
  await hp.header("teacher");
  document.getElementById("joinurl").textContent = location.origin + "/join";
  // the pool's size, from layer 6's /metrics (open, as a scraper reads it)
  const m = await fetch("/metrics").then(r => r.text()).catch(() => "");
  kvTotal = Number(/^hipath_kv_blocks_total (\d+)/m.exec(m)?.[1]) || 0;
  labRunner();
  tick();
}
document.addEventListener("hipath-lang", () => location.reload());
main();
