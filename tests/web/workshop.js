// hipath serve --workshop in a real browser (tests/check_workshop.sh):
// two students and the teacher at once, each in a browser context of their
// own (its own localStorage), headless chromium driven by playwright-core.
// usage: node workshop.js BASE_URL JOIN_CODE TEACHER_KEY OUT_DIR NPM_WEB NPM_SERVER DB RATE
// Each student joins with the code, chats "Hi" and opens its timeline; a
// student's key reads another's request (403), starts a lab (403), reads
// the room (403); the teacher's page lists both students, every request
// with its owner and the batch of every step, checked against the sqlite3
// shell's reading of the trace; the teacher runs lab 1 from it. The
// official openai SDK, with a third student's key: the cap on max_tokens
// (400) and the rate (429 with Retry-After). The scheduler under pressure
// (the server's pool is 16 blocks, its step 32 tokens): the teacher sends
// five long prompts at once through the SDK, then one twice; the page
// shows a step that computes a chunk of a prompt (hovering it says which),
// the preemptions and the prefix-cache hits with their requests, and the
// counters, each checked against the trace and /metrics; the repeat's
// usage.prompt_tokens_details.cached_tokens is the trace's.
"use strict";
const path = require("path");
const [base, code, teacherKey, out, npmWeb, npmServer, db, rate] = process.argv.slice(2);
const { check, failed, launch, sql } = require("./lib.js");

async function student(browser, name) {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await page.goto(base + "/join");
  await page.fill("#code", code.toLowerCase());   // read off a projector: either case
  await page.fill("#name", name);
  await page.click("#join");
  await page.waitForURL(base + "/");
  await page.waitForSelector("#model:has-text('·')");
  await page.fill("#input", "Hi");
  await page.click("#send");
  await page.waitForSelector(".trace-stats a.follow", { timeout: 60000 });
  const reply = await page.textContent(".msg.assistant .bubble");
  const id = Number((await page.getAttribute("a.follow", "href")).split("/").pop());
  check(reply === "你好！", `${name} joins with the code, chats "Hi" and gets '${reply}' (request ${id})`);
  if (name === "Ana") await page.screenshot({ path: `${out}/student-chat.png` });
  return { ctx, page, id, name };
}

// fetch from the page, with the key the page sends (hp.headers)
const call = (page, url, method) => page.evaluate(async ([u, m]) => {
  const r = await fetch(u, { method: m || "GET", headers: hp.headers() });
  return { status: r.status, body: await r.json().catch(() => null) };
}, [url, method]);

// Five prompts of about 115 tokens (10 blocks with the reply) at once in a
// pool of 16 blocks, prefilled 32 tokens a step: chunks, then preemptions;
// a sixth prompt twice, one after the other: the second's blocks from the
// prefix cache.
async function pressure(t, key) {
  const OpenAI = require(path.resolve(npmServer, "node_modules/openai")).default;
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: key, maxRetries: 0 });
  const words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon".split(" ");
  const prompt = i => Array.from({ length: 30 }, (_, j) => words[(3 * i + j) % words.length]).join(" ");
  const ask = i => client.chat.completions.create({ model: "tiny-hi", messages: [{ role: "user", content: prompt(i) }],
                                                    max_tokens: 40, ignore_eos: true, temperature: 0 }).withResponse();
  const first = await Promise.all([0, 1, 2, 3, 4].map(ask));
  const again = [await ask(5), await ask(5)][1];   // the pool's blocks are free between the two: the second's are the first's
  const ids = [...first, again].map(r => Number(r.response.headers.get("x-request-id")));
  const last = ids[5];
  for (let i = 0; i < 100 && sql(db, `SELECT count(*) FROM slices WHERE layer = 6 AND name = 'finish' AND request IN (${ids})`) !== "6"; i++)
    await new Promise(ok => setTimeout(ok, 200));
  const preempted = sql(db, `SELECT request FROM slices WHERE layer = 6 AND name = 'preempt' AND request IN (${ids}) ORDER BY id`)
    .split("\n").filter(Boolean).map(Number);
  const allPreempts = Number(sql(db, "SELECT count(*) FROM slices WHERE layer = 6 AND name = 'preempt'"));
  const cached = Number(sql(db, `SELECT json_extract(args, '$.cached_tokens') FROM slices WHERE layer = 6 AND name = 'admit' AND request = ${last}`));
  const [chunkStep, chunks] = sql(db, "SELECT step, json_extract(args, '$.chunks') FROM slices WHERE layer = 6 AND name = 'step' " +
    "AND EXISTS (SELECT 1 FROM json_each(json_extract(args, '$.chunks')) c WHERE json_extract(c.value, '$.to') < json_extract(c.value, '$.of') " +
    `AND json_extract(c.value, '$.req') IN (${ids})) ORDER BY id LIMIT 1`).split("|");
  const chunk = JSON.parse(chunks || "[]").find(c => c.to < c.of && ids.includes(c.req));
  const usage = again.data.usage;
  check(usage?.prompt_tokens_details?.cached_tokens === cached && cached > 0,
        `the repeated prompt's usage.prompt_tokens_details.cached_tokens (${usage?.prompt_tokens_details?.cached_tokens}, through the SDK) is the trace's admit cached_tokens (${cached})`);
  check(preempted.length > 0 && chunk, `the trace holds preemptions (of ${[...new Set(preempted)]}) and a step ${chunkStep} computing ${JSON.stringify(chunk)}`);
  if (!chunk || !preempted.length) return;

  await t.waitForFunction(([pre, step, last]) => {
    const T = window.hipathTeacher, ev = T.events();
    return pre.every(id => ev.some(e => e.name === "preempt" && e.request === id)) && T.steps().some(s => s.step === step) &&
      ev.some(e => e.name === "prefix_cache_hit" && e.request === last) && T.requests().some(r => r.request === last && r.finish);
  }, [preempted, Number(chunkStep), last], { timeout: 60000 });
  const shown = await t.evaluate(step => window.hipathTeacher.steps().find(s => s.step === step).batch, Number(chunkStep));
  check(JSON.stringify(shown.find(r => r.req === chunk.req)) === JSON.stringify(chunk),
        `the page's step ${chunkStep} holds the trace's chunk of request ${chunk.req}: ${JSON.stringify(shown)}`);
  // hover the step's column: the tip says which chunk of which request
  const box = await t.locator("#batch").boundingBox();
  const [i, n] = await t.evaluate(step => { const st = window.hipathTeacher.steps(); return [st.findIndex(s => s.step === step), st.length]; },
                                  Number(chunkStep));
  const cw = box.width / Math.max(n, 60);
  await t.mouse.move(box.x + (i + 0.5) * cw, box.y + box.height - 20);
  const tip = await t.textContent("#tip");
  check(tip.includes(`\n${chunk.req} `) && tip.includes(`prefill ${chunk.from}–${chunk.to} of ${chunk.of}`),
        `hovering step ${chunkStep} tells its chunk: ${tip.split("\n").join(" | ")}`);
  const rows = await t.$$eval("#sched tr.preempt td:nth-child(2)", tds => tds.map(td => Number(td.textContent)));
  check(preempted.every(id => rows.includes(id)), `the scheduler's table lists each preempted request (${preempted}): ${rows}`);
  const hit = await t.textContent("#sched tr.prefix_cache_hit");
  check(hit.includes(String(last)) && hit.includes(`${cached} prompt tokens cached`), `and the repeat's prefix-cache hit: ${hit}`);
  const metrics = await (await fetch(base + "/metrics")).text();
  const counter = k => Number(new RegExp(`^hipath_${k} (\\d+)`, "m").exec(metrics)?.[1]);
  await t.waitForFunction(n => document.getElementById("counters").textContent.startsWith(`preemptions ${n} `), counter("num_preemptions_total"),
                          { timeout: 10000 }).catch(() => {});
  const counters = await t.textContent("#counters");
  const rate = (100 * counter("prefix_cache_hits_total") / counter("prefix_cache_queries_total")).toFixed(1);
  check(counter("num_preemptions_total") === allPreempts && counters.includes(`preemptions ${allPreempts} `) && counters.includes(`${rate}%`),
        `the counters: /metrics' preemptions are the trace's (${allPreempts}) and the page shows them with the hit rate: ${counters}`);
  const live = await t.textContent("#live");
  check(live.includes(String(cached)), `the live table shows the repeat's cached tokens (${cached})`);
  await t.screenshot({ path: `${out}/teacher-scheduler.png`, fullPage: true });
}

async function main() {
  const browser = await launch(npmWeb);
  const [a, b] = await Promise.all([student(browser, "Ana"), student(browser, "Bo 博")]);

  // A student's own timeline draws; another's is refused.
  await a.page.click("a.follow");
  await a.page.waitForSelector("body[data-timeline=drawn]", { timeout: 60000 });
  const lanes = await a.page.evaluate(() => hipathTimeline.lanes());
  check(lanes.includes(8) && lanes.includes(1), `Ana's own timeline is drawn, layers 8 to 1: ${lanes}`);
  await a.page.screenshot({ path: `${out}/student-timeline.png` });
  for (const u of [`/api/requests/${b.id}`, `/api/requests/${b.id}/events`, `/api/requests/${b.id}/perfetto`]) {
    const r = await call(a.page, u);
    check(r.status === 403 && r.body?.error?.code && r.body.error.message, `Ana's key on ${u} (Bo's): 403 with an OpenAI error (${r.status} ${r.body?.error?.code})`);
  }
  const mine = await call(a.page, "/api/requests");
  check(mine.status === 200 && mine.body.requests.length === 1 && mine.body.requests[0].request === a.id,
        `Ana's /api/requests lists her request only: ${JSON.stringify(mine.body?.requests?.map(r => r.request))}`);
  const lab = await call(a.page, "/api/labs/1/run?device=h100", "POST");
  check(lab.status === 403 && lab.body?.error?.code === "teacher_only", `a student's key cannot start a lab: ${lab.status} ${lab.body?.error?.code}`);
  for (const u of ["/api/workshop", "/api/workshop/steps", "/api/workshop/scheduler", "/api/workshop/requests", "/api/runs"]) {
    const r = await call(a.page, u);
    check(r.status === 403, `a student's key on ${u}: ${r.status}`);
  }
  await b.page.goto(`${base}/trace/${a.id}`);
  await b.page.waitForSelector("body[data-timeline], .error, #status", { timeout: 30000 });
  const bSees = await call(b.page, `/api/requests/${a.id}`);
  check(bSees.status === 403, `Bo's key on Ana's request: ${bSees.status}`);
  const joinPage = await browser.newPage();
  await joinPage.goto(base + "/join");
  await joinPage.fill("#code", "WRONG1");
  await joinPage.fill("#name", "Eve");
  await joinPage.click("#join");
  await joinPage.waitForSelector("#status.error");
  check(/not this workshop's join code/.test(await joinPage.textContent("#status")), "a wrong code is refused on the join page");
  await joinPage.goto(base + "/join?code=" + code);
  await joinPage.fill("#name", "Eve");
  await joinPage.screenshot({ path: `${out}/join.png` });

  // The OpenAI SDK with a third student's key: the cap and the rate.
  const joined = await (await fetch(base + "/api/workshop/join", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ code, name: "Cy" }) })).json();
  const OpenAI = require(path.resolve(npmServer, "node_modules/openai")).default;
  const client = new OpenAI({ baseURL: base + "/v1", apiKey: joined.key, maxRetries: 0 });
  const messages = [{ role: "user", content: "Hi" }];
  let e = null;
  try { await client.chat.completions.create({ model: "tiny-hi", messages, max_tokens: joined.max_tokens + 1 }); } catch (x) { e = x; }
  check(e && e.status === 400 && e.param === "max_tokens", `max_tokens past --workshop-max-tokens (${joined.max_tokens}): ${e?.status} ${e?.message}`);
  const t0 = Date.now();
  for (let i = 1; i < Number(rate); i++) await client.chat.completions.create({ model: "tiny-hi", messages, max_tokens: 8 });
  e = null;
  try { await client.chat.completions.create({ model: "tiny-hi", messages, max_tokens: 8 }); } catch (x) { e = x; }
  if (Date.now() - t0 < 55000)   // the window is a minute: past it the count starts again (not a timing assertion: a guard)
    check(e && e.status === 429 && Number(e.headers?.get?.("retry-after") ?? e.headers?.["retry-after"]) > 0,
          `the ${Number(rate) + 1}th request of a minute (--workshop-rate ${rate}, the refused one counted): ${e?.status}, Retry-After ${e?.headers?.get?.("retry-after")}`);
  else console.log("not checked: the requests took over 55 s, past the rate's window");

  // The teacher's page, against the trace.
  const t = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  await t.goto(`${base}/teacher#key=${teacherKey}`);
  check(!(await t.evaluate(() => location.hash)), "the key leaves the teacher's URL once read");
  await t.waitForFunction(ids => {
    const rs = window.hipathTeacher?.requests() ?? [], st = window.hipathTeacher?.steps() ?? [];
    return ids.every(id => rs.some(r => r.request === id && r.finish) && st.some(s => s.batch.some(r => r.req === id)));
  }, [a.id, b.id], { timeout: 60000 });
  const names = await t.textContent("#names");
  check(names.includes("Ana") && names.includes("Bo 博") && names.includes("Cy"), `the teacher sees who joined: ${names.trim()}`);
  check((await t.textContent("#code")) === code, "and the join code");
  // The trace first, then the page: a request written after the page's last poll shows at its next one.
  const owners = sql(db, "SELECT request, json_extract(args, '$.owner') FROM slices WHERE layer = 6 AND name = 'http_request' " +
                         "AND json_extract(args, '$.owner') IS NOT NULL ORDER BY request").split("\n").map(l => l.split("|"));
  await t.waitForFunction(ids => ids.every(id => (window.hipathTeacher?.requests() ?? []).some(r => r.request === id)),
                          owners.map(([id]) => Number(id)), { timeout: 60000 }).catch(() => {});
  const shown = await t.evaluate(() => window.hipathTeacher.requests().map(r => [r.request, r.owner]));
  check(owners.every(([id, o]) => shown.some(([i, so]) => i === Number(id) && so === o)) && owners.length >= 2 + Number(rate),
        `every student request the trace holds is listed with its owner (${owners.length}): ${owners.slice(0, 3).map(o => o.join(" ")).join(", ")}…`);
  const steps = await t.evaluate(() => window.hipathTeacher.steps().map(s => [s.step, s.batch.map(r => r.req).join(",")]));
  const want = sql(db, "SELECT step, json_extract(args, '$.requests') FROM slices WHERE layer = 6 AND name = 'step' ORDER BY id")
    .split("\n").map(l => l.split("|")).filter(([st]) => steps.some(([s]) => s === Number(st)));
  check(want.length === steps.length && want.every(([st, ids], i) => steps[i][0] === Number(st) && `[${steps[i][1]}]` === ids),
        `the batch view holds each step's requests as the trace does (${steps.length} steps)`);
  await pressure(t, teacherKey);
  await t.waitForSelector("#ttft svg rect.bar");
  await t.waitForSelector("#tpot svg rect.bar");
  await t.screenshot({ path: `${out}/teacher.png`, fullPage: true });
  // The teacher removes Cy with the × beside the name: Cy's key opens nothing after.
  t.once("dialog", d => d.accept());
  await t.click(`#names span:has-text("Cy") button.remove`);
  await t.waitForSelector(`#names span.removed:has-text("Cy")`, { timeout: 30000 });
  e = null;
  try { await client.chat.completions.create({ model: "tiny-hi", messages, max_tokens: 8 }); } catch (x) { e = x; }
  const after = await fetch(base + "/api/requests", { headers: { Authorization: "Bearer " + joined.key } });
  check(e && e.status === 401 && after.status === 401, `the teacher removes Cy on the page: Cy's key then gets ${e?.status} on /v1/, ${after.status} on /api/`);
  await t.selectOption("#lab", "1");
  await t.selectOption("#device", "h100");
  await t.click("#run");
  await t.waitForSelector("body[data-lab=done]", { timeout: 600000 });
  check(true, "the teacher runs lab 1 on sim:h100 from the page");
  await t.click("#labstatus a");
  await t.waitForSelector("body[data-chart=drawn]", { timeout: 60000 });
  check((await t.inputValue("#device")) === "h100", "and its link opens lab 1's charts for sim:h100");
  await t.screenshot({ path: `${out}/teacher-lab.png` });
  await browser.close();
  process.exit(failed() ? 1 : 0);
}
main().catch(e => { console.log("FAIL " + (e.stack || e)); process.exit(1); });
