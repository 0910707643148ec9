// The web pages in a real browser (tests/check_web.sh): Debian's chromium,
// headless, driven by playwright-core.
// usage: node check.js BASE_URL OUT_DIR NPM_DIR DB EXPECTED_REPLY_TO_HI
//        node check.js --measure TIMELINE_URL OUT_DIR NPM_DIR   (bench/web_bench.sh: numbers, no checks)
// Chat "Hi" and wait for the reply; follow it to its timeline: eight lanes
// with slices, arrows from layer 8 down to layer 1, zoom and pan, a
// kernel's FLOPs on hover (checked against the SQLite trace read by the
// sqlite3 shell), the Perfetto download (OUT_DIR/request.pftrace, decoded
// by the shell script with protoc); a lab chart and a lab run for another
// profile; the page in Chinese for a Chinese browser. Screenshots and the
// page weights go to OUT_DIR. Exit 0 when every check passes.
"use strict";
const measuring = process.argv[2] === "--measure";
const [base, out, npmDir, db, expectHi] = process.argv.slice(measuring ? 3 : 2);
const { check, failed, launch, sql } = require("./lib.js");

// Bytes over the wire for everything the page loaded so far (resource timing).
const weight = page => page.evaluate(() => {
  const nav = performance.getEntriesByType("navigation")[0];
  return performance.getEntriesByType("resource").reduce((a, r) => a + r.transferSize, nav ? nav.transferSize : 0);
});

// Is there a chain of drawn arrows from layer `from` to layer `to`?
function reaches(arrows, from, to) {
  const seen = new Set([from]), todo = [from];
  while (todo.length) {
    const a = todo.pop();
    for (const [x, y] of arrows) if (x === a && !seen.has(y)) { seen.add(y); todo.push(y); }
  }
  return seen.has(to);
}

async function chat(page) {
  await page.goto(base + "/");
  await page.waitForSelector("#model:has-text('·')");
  const loaded = await weight(page);
  await page.fill("#input", "Hi");
  await page.click("#send");
  await page.waitForSelector(".trace-stats a.follow", { timeout: 60000 });
  const reply = await page.textContent(".msg.assistant .bubble");
  check(!expectHi || reply === expectHi, `the chat page streams the reply to "Hi": '${reply}'`);
  const stats = await page.textContent(".trace-stats");
  check(/TTFT [0-9.]+ (ns|µs|ms|s)/.test(stats) && /tokens\/s/.test(stats), `under it TTFT and tokens/s: '${stats.trim()}'`);
  const info = await page.evaluate(() => hp.info);
  check(stats.includes(info.device) && (!info.modeled || /modeled/.test(stats)), `and the device, modeled when simulated (${info.device})`);
  await page.screenshot({ path: `${out}/chat.png` });
  return { loaded, total: await weight(page) };
}

async function timeline(page) {
  await page.click("a.follow");
  await page.waitForSelector("body[data-timeline=drawn]", { timeout: 60000 });
  const lanes = await page.evaluate(() => hipathTimeline.lanes());
  check([8, 7, 6, 5, 4, 3, 2, 1].every(l => lanes.includes(l)), `all eight lanes have slices: ${lanes}`);
  const arrows = await page.evaluate(() => hipathTimeline.flows());
  check(arrows.some(([a, b]) => a === 8) && reaches(arrows, 8, 1), `drawn arrows lead from layer 8 down to layer 1 (${arrows.length} drawn)`);
  check(reaches(arrows, 1, 8), "and from layer 1 back up to layer 8");
  await page.waitForSelector("#journey tr:nth-child(15)");
  const rows = await page.$$eval("#journey tr", trs => trs.map(t => t.textContent));
  check(rows.length === 16 && /POST \d+ B of JSON/.test(rows[1]) && /deltas rendered/.test(rows[14]), "the journey table: 14 rows and the total");

  // Wheel zooms, drag pans, fit goes back.
  const box = await page.locator("#timeline").boundingBox();
  const span = v => v[1] - v[0];
  const v0 = await page.evaluate(() => hipathTimeline.view());
  await page.mouse.move(box.x + box.width * 0.6, box.y + 100);
  await page.mouse.wheel(0, -600);
  const v1 = await page.evaluate(() => hipathTimeline.view());
  check(span(v1) < span(v0) * 0.8, "the wheel zooms in");
  await page.mouse.down();
  await page.mouse.move(box.x + box.width * 0.3, box.y + 100, { steps: 5 });
  await page.mouse.up();
  const v2 = await page.evaluate(() => hipathTimeline.view());
  check(v2[0] > v1[0] && Math.abs(span(v2) - span(v1)) < span(v1) * 1e-6, "dragging pans");
  await page.click("#fit");

  // A kernel: zoom onto one, hover it, read its FLOPs; the trace must say the same.
  const k = await page.evaluate(async () => {
    const r = await hp.api(`/api/requests/${location.pathname.split("/")[2]}/events?px=8000`);
    const gemv = r.slices.find(s => s[3] === 1 && r.names[s[4]] === "gemv" && s[2] > 0);
    return gemv && { s: gemv[1], d: gemv[2] };
  });
  if (check(!!k, "the request has a gemv kernel on layer 1")) {
    await page.evaluate(k => hipathTimeline.zoomTo(k.s - 2 * k.d, k.s + 3 * k.d), k);
    const at = await page.waitForFunction(() => hipathTimeline.locate(s => s.layer === 1 && s.name === "gemv"), null, { timeout: 30000 });
    const spot = await at.jsonValue();
    await page.mouse.move(spot.x, spot.y);
    await page.waitForFunction(() => /flops: \d/.test(document.getElementById("tip").textContent), null, { timeout: 30000 });
    const tip = await page.textContent("#tip");
    const shown = Number(/flops: (\d+)/.exec(tip)[1]);
    const stored = Number(sql(db, `SELECT json_extract(args, '$.flops') FROM slices WHERE id = ${spot.id}`));
    check(shown > 0 && shown === stored, `hovering a kernel shows its FLOPs: ${shown} (the trace: ${stored})`);
    await page.screenshot({ path: `${out}/kernel.png` });
    await page.click("#fit");
  }
  await page.mouse.move(0, 0);
  await page.screenshot({ path: `${out}/trace.png`, fullPage: true });

  const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  await dl.saveAs(`${out}/request.pftrace`);
  check(/\.pftrace$/.test(dl.suggestedFilename()), `the Perfetto download: ${dl.suggestedFilename()}`);
}

async function labs(page) {
  await page.goto(base + "/labs");
  await page.waitForSelector("#labs-nav a");
  const tools = await page.$eval(".tl-tools", t => t.offsetParent === null);
  check(tools, "the labs index shows no profile dropdown and no run button (there is no lab to run)");
  await page.goto(base + "/labs/3");
  await page.waitForSelector("body[data-chart=drawn]", { timeout: 30000 });
  const points = await page.$$eval("circle.point", c => c.length);
  check(points > 0, `lab 3's roofline: ${points} kernel points under the ceilings`);
  await page.screenshot({ path: `${out}/labs.png`, fullPage: true });
  await page.goto(base + "/labs/7");
  await page.waitForSelector("body[data-chart=drawn]", { timeout: 60000 });
  const bars = await page.$$eval("#charts svg text[text-anchor=middle]", t => t.map(x => x.firstChild?.nodeValue ?? "").filter(s => s.includes(" @ ")));
  check(bars.length >= 5 && new Set(bars).size === bars.length && !bars.some(b => b.endsWith("…")),
        `lab 7's bars are told apart by their labels: ${bars.join(" | ")}`);
  await page.goto(base + "/labs/1");
  await page.waitForSelector("body[data-chart=drawn]", { timeout: 30000 });
  const said = await page.$$eval("g.chart-legend text", t => t.map(x => x.textContent).filter(s => s.endsWith("(predicted)")));
  check(said.length > 0, `lab 1 draws its bound beside the measurement: ${said.join(" | ")}`);
  await page.selectOption("#device", "h100");
  await page.click("#run");
  await page.waitForFunction(() => /sim:h100/.test(document.getElementById("status").textContent) && document.querySelector("rect.bar"),
                             null, { timeout: 300000 });
  check(true, "lab 1 run from the page on sim:h100, its chart drawn");
}

async function chinese(browser) {
  const page = await browser.newPage({ locale: "zh-CN", viewport: { width: 1200, height: 800 } });
  await page.goto(base + "/trace");
  await page.waitForSelector("nav a.here");
  const nav = await page.$$eval("header nav a", a => a.map(x => x.textContent));
  check(nav.join(",") === "对话,时间线,实验", `a Chinese browser gets the page in Chinese: ${nav}`);
  await page.goto(base + "/trace/1");
  await page.waitForSelector("body[data-timeline=drawn]", { timeout: 60000 });
  await page.waitForSelector("#journey tr");
  const whats = await page.$$eval("#journey tr td:last-child", t => t.map(x => x.textContent));
  const english = whats.filter(w => !/[\u4e00-\u9fff]/.test(w));
  check(whats.length >= 10 && !english.length, `the journey's ${whats.length} rows say what happened in Chinese (${english.length} do not: ${english.join(" | ")})`);
  await page.screenshot({ path: `${out}/trace.zh.png`, fullPage: true });
  await page.click("#lang");
  const en = await page.$$eval("header nav a", a => a.map(x => x.textContent));
  check(en.join(",") === "Chat,Timeline,Labs", "the switch turns it to English");
  await page.close();
}

// The timeline alone, loaded fresh: bytes and time to its first paint.
async function measure(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await page.goto(url);
  await page.waitForSelector("body[data-timeline=drawn]", { timeout: 120000 });
  const m = await page.evaluate(() => ({
    fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime,
    drawn: performance.getEntriesByName("timeline-drawn")[0]?.startTime }));
  await page.waitForSelector("#journey tr");
  m.bytes = await weight(page);
  await page.close();
  return m;
}

// Zooming and panning a loaded timeline: how long each redraw takes.
async function interact(browser, url) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  await page.goto(url);
  await page.waitForSelector("body[data-timeline=drawn]", { timeout: 120000 });
  const box = await page.locator("#timeline").boundingBox();
  const ms = [];
  await page.mouse.move(box.x + box.width * 0.5, box.y + 200);
  for (let i = 0; i < 12; i++) {
    await page.mouse.wheel(0, i < 8 ? -400 : 400);
    await page.waitForTimeout(250);   // the detail for the new view arrives
    ms.push(await page.evaluate(() => hipathTimeline.drawMs()));
  }
  const held = await page.evaluate(() => hipathTimeline.slices());
  await page.screenshot({ path: `${out}/timeline-64.png`, fullPage: true });
  await page.close();
  return { max: Math.max(...ms), mean: ms.reduce((a, b) => a + b, 0) / ms.length, held };
}

(async () => {
  const browser = await launch(npmDir);
  if (measuring) {
    const m = await measure(browser, base), z = await interact(browser, base);
    console.log(`timeline ${base}: ${m.bytes} B transferred, first contentful paint ${m.fcp?.toFixed(0)} ms, ` +
                `timeline drawn at ${m.drawn?.toFixed(0)} ms; zoom and pan: a redraw ${z.mean.toFixed(1)} ms mean, ` +
                `${z.max.toFixed(1)} ms max, ${z.held} slices held`);
    await browser.close();
    return;
  }
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 }, acceptDownloads: true, locale: "en-US" });
    page.on("pageerror", e => check(false, "no error in the page: " + e.message));
    const w = await chat(page);
    await timeline(page);
    const m = await measure(browser, page.url());
    await labs(page);
    await chinese(browser);
    console.log(`web: chat page ${w.loaded} B loaded, ${w.total} B after "Hi"; ` +
                `timeline ${m.bytes} B, first contentful paint ${m.fcp?.toFixed(0)} ms, timeline drawn at ${m.drawn?.toFixed(0)} ms`);
  } catch (e) {
    check(false, "the browser session: " + e.message.split("\n")[0]);
  } finally {
    await browser.close();
  }
  process.exit(failed() ? 1 : 0);
})();
