// chat.js -- the chat page is layer 8, the client: it sends the message as
// OpenAI JSON to the real /v1/chat/completions, reads the Server-Sent
// Events as they stream, and then tells the server what it saw (its
// events join the trace: /api/requests/N/client), so the timeline starts
// here. TTFT and tokens/s come from the trace (on a simulated device: host
// measured, device modeled); the browser's own wall clock is shown beside.
"use strict";

const messages = [];
const log = document.getElementById("log");
const input = document.getElementById("input");

function bubble(role, text) {
  const m = document.createElement("div");
  m.className = "msg " + role;
  const b = document.createElement("div");
  b.className = "bubble";
  b.textContent = text;
  m.append(b);
  log.append(m);
  return b;
}

// The stream's lines: "data: {...}" events and ": hipath-clock pid:t:modeled" stamps.
async function readStream(response, onLine) {
  const reader = response.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      onLine(buf.slice(0, i).replace(/\r$/, ""));
      buf = buf.slice(i + 1);
    }
  }
}

async function send(text) {
  messages.push({ role: "user", content: text });
  bubble("user", text);
  const out = bubble("assistant", "");
  out.classList.add("muted");
  out.textContent = hp.t("waiting");
  const stats = document.createElement("div");
  stats.className = "stats";
  out.parentElement.after(stats);

  const t0 = performance.now();
  const json = JSON.stringify({ messages, max_tokens: Number(document.getElementById("max_tokens").value) || 64,
    temperature: Number(document.getElementById("temperature").value) || 0, stream: true, stream_options: { include_usage: true } });
  const r = { build_ms: performance.now() - t0, tokens: [], json, status: 0 };
  r.sent_ms = performance.now() - t0;
  let reply = "", finish = "", firstStamp = null, lastStamp = null;
  const response = await fetch("/v1/chat/completions", {
    method: "POST", headers: hp.headers({ "Content-Type": "application/json" }), body: json });
  r.first_byte_ms = performance.now() - t0;
  r.status = response.status;
  const id = Number(response.headers.get("X-Request-Id"));
  if (!response.ok) {
    const e = await response.json().catch(() => null);
    out.classList.replace("muted", "error");
    out.textContent = e?.error?.message || response.status + " " + response.statusText;
    messages.pop();
    return;
  }
  await readStream(response, line => {
    if (line.startsWith(": hipath-clock ")) {
      lastStamp = line.slice(15);
      firstStamp ??= lastStamp;
    }
    if (!line.startsWith("data: ") || line === "data: [DONE]") return;
    const c = JSON.parse(line.slice(6));
    if (c.error) { out.classList.add("error"); reply += "\n" + c.error.message; }
    const ch = c.choices?.[0];
    if (ch?.delta?.content) {
      if (!reply) out.classList.remove("muted");
      reply += ch.delta.content;
      r.tokens.push({ ms: performance.now() - t0, text: ch.delta.content });
      out.textContent = reply;
    }
    if (ch?.finish_reason) finish = ch.finish_reason;
  });
  r.done_ms = performance.now() - t0;
  messages.push({ role: "assistant", content: reply });
  Object.assign(r, { finish, first_stamp: firstStamp, last_stamp: lastStamp });
  await report(id, r, stats);
}

// The browser's side into the trace, then the trace's figures.
async function report(id, r, stats) {
  const wall = r.tokens.length
    ? `${hp.t("ttft")} ${r.tokens[0].ms.toFixed(1)} ms` +
      (r.tokens.length > 1 ? `, ${((r.tokens.length - 1) / ((r.done_ms - r.tokens[0].ms) / 1e3)).toFixed(0)} ${hp.t("tokps")}` : "")
    : "";
  stats.innerHTML = `<span class="muted">${hp.esc(hp.t("browser"))}: ${hp.esc(wall)}</span>`;
  try {
    await hp.api(`/api/requests/${id}/client`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(r) });
    const q = await hp.api(`/api/requests/${id}`);
    const lat = q.latency, clock = q.modeled ? "mixed" : "measured";
    const tps = lat.tpot_ns > 0 ? (1e9 / lat.tpot_ns).toFixed(0) : "–";
    const line = document.createElement("div");
    line.className = "trace-stats";
    line.title = hp.t(q.modeled ? "traceclock_modeled" : "traceclock_measured");
    line.innerHTML = `${hp.esc(hp.t("ttft"))} <b id="ttft">${hp.dur(lat.ttft_ns)}</b> · <b>${tps}</b> ${hp.esc(hp.t("tokps"))} · ` +
      `${hp.esc(hp.t("device"))} <b>${hp.esc(q.device)}</b> `;
    line.append(hp.clockBadge(q.modeled ? "modeled" : "measured"), " ");
    const a = document.createElement("a");
    a.href = `/trace/${id}`;
    a.className = "follow";
    a.dataset.i18n = "follow";
    a.textContent = hp.t("follow");
    line.append(a);
    line.dataset.clock = clock;
    stats.prepend(line);
  } catch (e) {
    stats.append(` · ${e.message}`);
  }
}

document.getElementById("compose").addEventListener("submit", ev => {
  ev.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  const b = document.getElementById("send");
  b.disabled = true;
  send(text).catch(e => bubble("assistant", e.message).classList.add("error")).finally(() => { b.disabled = false; input.focus(); });
});
input.addEventListener("keydown", ev => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); document.getElementById("send").click(); }
});
document.getElementById("new").addEventListener("click", () => { messages.length = 0; log.textContent = ""; });
hp.header("chat").then(() => {   // a workshop caps a student's max_tokens: the box says so
  const cap = hp.info?.student ? hp.info.workshop_max_tokens : 0, box = document.getElementById("max_tokens");
  if (cap > 0) { box.max = cap; box.value = Math.min(Number(box.value), cap); }
});
input.focus();
