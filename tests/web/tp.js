// Tensor parallelism (--tp 2) on the timeline page (tests/check_web.sh):
// the GPU lane has a sub-row per GPU named as the trace names its track,
// the same allReduce drawn on both at one x, the step's fan-out arrows
// landing on each GPU's row and the gather's join on GPU 0's, as many as
// the trace's flows; the journey names the 2 GPUs and their link and
// counts the allReduce and ncclAllReduce calls as the sqlite3 shell does;
// in Chinese too. A screenshot goes to OUT_DIR/tp.png.
// usage: node tp.js TIMELINE_URL OUT_DIR NPM_DIR DB
"use strict";
const [url, out, npmDir, db] = process.argv.slice(2);
const { check, failed, launch, sql } = require("./lib.js");

// GPU g's track as the trace names it: layer 1's "GPU g/stream 0".
const tracks = new Map(sql(db, "SELECT track, name FROM tracks WHERE run_id = 1 AND layer = 1 ORDER BY track")
  .split("\n").map(l => l.split("|")).map(([t, n]) => [Number(t), n.split("/")[0]]));
// The flows from a slice on (layer a) to one on layer 1, per target track; from track `from` when given.
const flowsTo = (a, from) => new Map(sql(db, `SELECT b.track, count(*) FROM flows f JOIN slices s ON s.id = f.from_slice ` +
  `JOIN slices b ON b.id = f.to_slice WHERE f.run_id = 1 AND s.layer = ${a} AND b.layer = 1 ` +
  `${from ? "AND s.track = " + from : ""} GROUP BY b.track`).split("\n").filter(Boolean).map(l => l.split("|").map(Number)));
const count = where => Number(sql(db, `SELECT count(*) FROM slices WHERE run_id = 1 AND ${where}`));

async function timeline(page) {
  await page.goto(url);
  await page.waitForSelector("body[data-timeline=drawn]", { timeout: 60000 });
  const gpus = await page.evaluate(() => hipathTimeline.gpus());
  check(gpus.join() === [...tracks.values()].join() && gpus.length === 2, `the GPU lane has 2 sub-rows: ${gpus} (the trace's tracks: ${[...tracks.values()]})`);

  // Arrows, by the row they are drawn into: the step's fan-out (layer 5) into each GPU, GPU 1's gather into GPU 0's.
  const arrows = await page.evaluate(() => hipathTimeline.flows());
  const drawn = (a, b, from) => gpus.map((_, r) => arrows.filter(f => f[0] === a && f[1] === b && f[3] === r && (from == null || f[2] === from)).length);
  const want = (m) => [...tracks.keys()].map(t => m.get(t) ?? 0);
  const fan = drawn(5, 1), fanWant = want(flowsTo(5));
  check(fan.join() === fanWant.join() && fan.every(n => n > 0), `the step's arrows land on each GPU's row: ${fan} (the trace's flows per GPU: ${fanWant})`);
  const join = drawn(1, 1, 1), joinWant = want(flowsTo(1, [...tracks.keys()][1]));
  check(join.join() === joinWant.join() && join[0] > 0, `GPU 1's gather joins GPU 0's: ${join} arrows into each row (the trace: ${joinWant})`);

  // An allReduce, zoomed onto: one slice on each GPU's row, lined up.
  const k = await page.evaluate(async () => {
    const r = await hp.api(`/api/requests/${location.pathname.split("/")[2]}/events?px=8000`);
    const ar = r.slices.find(s => s[3] === 1 && r.names[s[4]] === "allReduce");
    return ar && { s: ar[1], d: ar[2] };
  });
  if (check(!!k, "the request has an allReduce on layer 1")) {
    await page.evaluate(k => hipathTimeline.zoomTo(k.s - 2 * k.d, k.s + 3 * k.d), k);
    const boxes = await page.waitForFunction(() => {
      const d = hipathTimeline.drawnRows(s => s.name === "allReduce");
      return new Set(d.map(b => b.row)).size === 2 && d;
    }, null, { timeout: 20000 }).then(h => h.jsonValue(), () => []);
    const xs = new Set(boxes.map(b => Math.round(b.x)));
    check(boxes.length && boxes.every(b => gpus[b.row] === tracks.get(b.track)) && xs.size === boxes.length / 2,
          `allReduce drawn on GPU 0 and GPU 1, each on its track's row, lined up: ${boxes.map(b => `${gpus[b.row]} x=${Math.round(b.x)}`).join(", ")}`);
    await page.screenshot({ path: `${out}/tp-allreduce.png` });
    await page.click("#fit");
  }
}

async function journey(page, zh) {
  await page.waitForSelector("#journey tr:nth-child(15)");
  const rows = await page.$$eval("#journey tr td:last-child", t => t.map(x => x.textContent));
  const [l2, l1] = [rows[6], rows[7]];   // 2 runtime and 1 gpu, down
  if (zh) return check(/块 GPU/.test(l1) && /次 ncclAllReduce/.test(l2) && rows.every(w => /[\u4e00-\u9fff]/.test(w)),
                       `in Chinese: ${l2} | ${l1}`);
  const gpu0 = [...tracks].find(([, n]) => n === "GPU 0")?.[0];
  const allReduce = count(`layer = 1 AND name = 'allReduce' AND track = ${gpu0}`), nccl = count("layer = 2 AND name = 'ncclAllReduce'");
  const link = sql(db, "SELECT DISTINCT json_extract(args, '$.link') FROM slices WHERE run_id = 1 AND name = 'allReduce'");
  const m = / on 2 GPUs of analytic:h100 .*, joined by (.*), modeled; (\d+) allReduce \(/.exec(l1);
  check(m && m[1] === link && Number(m[2]) === allReduce,
        `the journey's GPU row names 2 GPUs, ${link} and ${allReduce} allReduce (GPU 0's, counted by sqlite3): '${l1}'`);
  const n = /; (\d+) ncclAllReduce, (\d+) gather \(NCCL\)$/.exec(l2);
  check(n && Number(n[1]) === nccl && Number(n[1]) === allReduce && Number(n[2]) === count("layer = 2 AND name = 'gather'"),
        `and the runtime's row the NCCL calls (${nccl} ncclAllReduce in the trace): '${l2}'`);
}

(async () => {
  const browser = await launch(npmDir);
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 800 }, locale: "en-US" });
    page.on("pageerror", e => check(false, "no error in the page: " + e.message));
    await timeline(page);
    await journey(page, false);
    await page.mouse.move(0, 0);
    await page.screenshot({ path: `${out}/tp.png`, fullPage: true });
    const zh = await browser.newPage({ viewport: { width: 1200, height: 800 }, locale: "zh-CN" });
    await zh.goto(url);
    await journey(zh, true);
  } catch (e) {
    check(false, "the browser session: " + e.message.split("\n")[0]);
  } finally {
    await browser.close();
  }
  process.exit(failed() ? 1 : 0);
})();
