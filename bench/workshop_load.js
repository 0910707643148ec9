// A workshop's load (bench/workshop_load.sh): N students join and chat
// through the official openai SDK, streaming, each thinking a few seconds
// between messages, for S seconds, while headless chromium opens a
// student's timeline and the teacher's page now and then.
// usage: node workshop_load.js BASE CODE TEACHER_KEY NPM_WEB NPM_SERVER OUT STUDENTS SECONDS MAX_TOKENS
// No lost token: each stream carries logprobs, one entry per token sent
// (the end of turn that ends a reply has none, docs/serving.md), so the
// tokens that arrived are counted against usage.completion_tokens, and
// their bytes must make the streamed text. Besides, greedy (or --reply's
// forced ids): how many replies differ from their prompt's reply alone,
// asked before the load (batching should change no token). Prints one JSON line
// of figures (a benchmark: nothing here fails on a time).
"use strict";
const path = require("path");
const [base, code, tkey, npmWeb, npmServer, out, nStudents, seconds, maxTokens] = process.argv.slice(2);
const OpenAI = require(path.resolve(npmServer, "node_modules/openai")).default;
const { chromium } = require(path.resolve(npmWeb, "node_modules/playwright-core"));
const PROMPTS = ["Hi", "What is a GPU?", "Tell me a story about a cat.", "Explain batching in one paragraph.",
  "List five fruits.", "What is the capital of France?", "Write a haiku about rain.", "Why is the sky blue?"];
const sleep = ms => new Promise(ok => setTimeout(ok, ms));
const pct = (v, p) => { const s = [...v].sort((a, b) => a - b); return s.length ? s[Math.min(s.length - 1, Math.floor(p * s.length))] : null; };

let model = null;   // the served name, asked once
async function ask(client, content, stream) {
  model ??= (await client.models.list()).data[0].id;
  const args = { model, messages: [{ role: "user", content }], max_tokens: Number(maxTokens), temperature: 0 };
  if (!stream) { const r = await client.chat.completions.create(args); return { text: r.choices[0].message.content, tokens: r.usage.completion_tokens }; }
  const t0 = Date.now();
  const { data, response } = await client.chat.completions.create({ ...args, stream: true, stream_options: { include_usage: true },
    logprobs: true }).withResponse();
  let text = "", tokens = null, finish = null, first = null, arrived = 0;
  const bytes = [];
  for await (const c of data) {
    if (c.usage) tokens = c.usage.completion_tokens;
    const d = c.choices[0];
    if (d?.delta?.content) { first ??= Date.now() - t0; text += d.delta.content; }
    for (const e of d?.logprobs?.content ?? []) { arrived++; bytes.push(...(e.bytes ?? [])); }
    if (d?.finish_reason) finish = d.finish_reason;
  }
  const lost = tokens - arrived - (finish === "stop" ? 1 : 0), whole = Buffer.from(bytes).toString("utf8") === text;
  return { id: Number(response.headers.get("x-request-id")), text, tokens, finish, lost, whole, ttft_ms: first, e2e_ms: Date.now() - t0 };
}

async function main() {
  const teacher = new OpenAI({ baseURL: base + "/v1", apiKey: tkey, maxRetries: 0, timeout: 600000 });
  const want = {};
  for (const p of PROMPTS) want[p] = await ask(teacher, p, false);
  const students = [];
  for (let i = 0; i < Number(nStudents); i++) {
    const r = await fetch(base + "/api/workshop/join", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code, name: `student ${i + 1}` }) });
    students.push((await r.json()).key);
  }
  const end = Date.now() + Number(seconds) * 1000, done = [], errors = [], diffs = [];
  let refused = 0, wrong = 0;
  const one = async (key, i) => {
    const client = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0, timeout: 600000 });
    await sleep(Math.random() * 8000);   // they do not all type at once
    for (let k = 0; Date.now() < end; k++) {
      const p = PROMPTS[(i + k) % PROMPTS.length];
      try {
        const r = await ask(client, p, true);
        const ok = r.text === want[p].text && r.tokens === want[p].tokens && r.finish;
        if (!ok) { wrong++; if (wrong < 4) diffs.push(`request ${r.id}: '${r.text.slice(0, 80)}' (${r.tokens}) for '${p}', alone '${want[p].text.slice(0, 80)}' (${want[p].tokens})`); }
        if (r.lost || !r.whole || !r.finish) errors.push(`request ${r.id}: ${r.lost} tokens lost, text ${r.whole ? "whole" : "not its tokens' bytes"}, finish ${r.finish}`);
        done.push({ ...r, student: i });
      } catch (e) {
        if (e.status === 429) { refused++; await sleep(1000 * Number(e.headers?.get?.("retry-after") || 5)); continue; }
        errors.push(`${e.status || ""} ${e.message}`);
      }
      await sleep(4000 + Math.random() * 6000);   // reading, thinking, typing
    }
  };
  const load = Promise.all(students.map(one));

  // The pages while the room chats: a student's timeline, the teacher's page.
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
  const pages = [];
  const fcp = page => page.evaluate(() => performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? null);
  for (let k = 1; k <= 3; k++) {
    await sleep(Math.max(0, end - Number(seconds) * 1000 * (1 - k / 4) - Date.now()));
    const mine = done.filter(r => r.student === 0).pop() || done[done.length - 1];
    if (!mine) continue;
    const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    await ctx.addInitScript(key => localStorage.setItem("hipath.student.key", key), students[mine.student]);
    const s = await ctx.newPage();
    let t0 = Date.now();
    await s.goto(`${base}/trace/${mine.id}`);
    await s.waitForSelector("body[data-timeline=drawn], #summary .error", { timeout: 120000 });
    const row = { at_s: Math.round((Date.now() - end) / 1000 + Number(seconds)), request: mine.id, student_fcp_ms: await fcp(s),
                  timeline_drawn_ms: Date.now() - t0 };
    const error = await s.$eval("#summary", e => e.querySelector(".error")?.textContent ?? null);
    if (error) row.timeline_error = error;
    if (k === 2) await s.screenshot({ path: `${out}/load-student-timeline.png` });
    const t = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    t0 = Date.now();
    await t.goto(`${base}/teacher#key=${tkey}`);
    await t.waitForSelector("body[data-polled]", { timeout: 120000 });
    Object.assign(row, { teacher_fcp_ms: await fcp(t), teacher_drawn_ms: Date.now() - t0 });
    if (k === 3) {
      await sleep(3000);
      await t.screenshot({ path: `${out}/load-teacher.png`, fullPage: true });
      const zh = await browser.newPage({ viewport: { width: 1400, height: 1000 }, locale: "zh-CN" });   // for docs/workshop.zh.md
      await zh.goto(`${base}/teacher#key=${tkey}`);
      await zh.waitForSelector("body[data-polled='2']", { timeout: 120000 });
      await zh.screenshot({ path: `${out}/load-teacher-zh.png`, fullPage: true });
      await zh.close();
    }
    await ctx.close(); await t.close();
    pages.push(row);
  }
  await load;
  await browser.close();
  const ttft = done.map(r => r.ttft_ms).filter(x => x != null), e2e = done.map(r => r.e2e_ms);
  console.log(JSON.stringify({ students: Number(nStudents), seconds: Number(seconds), requests: done.length,
    tokens: done.reduce((a, r) => a + (r.tokens || 0), 0), tokens_lost: done.reduce((a, r) => a + r.lost, 0),
    not_whole: done.filter(r => !r.whole).length, unfinished: done.filter(r => !r.finish).length, differ_from_alone: wrong, diffs,
    refused_429: refused, errors, ttft_ms_p50: pct(ttft, 0.5), ttft_ms_p99: pct(ttft, 0.99), e2e_ms_p50: pct(e2e, 0.5), pages }));
}
main().catch(e => { console.log(JSON.stringify({ error: String(e.stack || e) })); process.exit(1); });
