// The labs page's charts as a reader sees them (tests/check_web.sh), in
// headless chromium: in labs 1, 4, 5, 7, 8, 9 and 10 no legend lies over a
// point, a line or a bar, and stays inside its chart; lab 5's log axes carry
// ticks between their ends; each draws a predicted series (labs/charts.json)
// beside the measured ones, lab 5 its kernels on a roofline; lab 10 its
// replay's TTFT and TPOT CDFs and requests over the run, real beside modeled.
// usage: node charts.js BASE_URL OUT_DIR NPM_DIR
"use strict";
const [base, out, npmDir] = process.argv.slice(2);
const { check, failed, launch } = require("./lib.js");

// Per chart of the page: the legend's box, the data marks it covers, whether
// it fits the chart, and each axis's tick labels (y: right-aligned, x: centred).
const inspect = () => [...document.querySelectorAll("#charts svg")].map(svg => {
  const g = svg.querySelector("g.chart-legend"), box = g?.getBBox();
  const hit = b => box && b.width + b.height > 0 && b.x < box.x + box.width && box.x < b.x + b.width &&
                   b.y < box.y + box.height && box.y < b.y + b.height;
  const marks = [...svg.querySelectorAll(".point, .bar, path.series")];
  const vb = svg.viewBox.baseVal;
  const ticks = a => [...svg.querySelectorAll(`g.axis text[text-anchor=${a}]`)].map(t => t.textContent);
  return { title: svg.parentElement.querySelector("h3")?.textContent ?? "", items: g ? g.querySelectorAll("text").length : 0,
           marks: marks.length, covered: marks.filter(m => hit(m.getBBox())).length,
           inside: !box || (box.x >= 0 && box.y >= 0 && box.x + box.width <= vb.width + 0.5 && box.y + box.height <= vb.height + 0.5),
           y: ticks("end"), x: ticks("middle"), predicted: [...(g?.querySelectorAll("text") ?? [])].filter(t => t.textContent.endsWith("(predicted)")).length,
           real: [...(g?.querySelectorAll("text") ?? [])].filter(t => t.textContent.endsWith("(measured on the real GPU)")).length,
           lines: svg.querySelectorAll("path.series").length };
});

(async () => {
  const browser = await launch(npmDir);
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 900 }, locale: "en-US" });
    page.on("pageerror", e => check(false, "no error in the page: " + e.message));
    for (const n of [1, 4, 5, 7, 8, 9, 10]) {
      await page.goto(`${base}/labs/${n}`);
      await page.waitForSelector("body[data-chart=drawn]", { timeout: 120000 });
      const charts = await page.evaluate(inspect);
      check(charts.length > 0, `lab ${n}: ${charts.length} charts drawn`);
      check(charts.some(c => c.predicted), `lab ${n}: a predicted series beside the measured: ${charts.map(c => c.predicted).join(", ")}`);
      if (n === 5) check(charts.some(c => /roofline/.test(c.title) && c.marks > 1), "lab 5: its kernels on a roofline");
      if (n === 10)
        for (const what of ["TTFT of the 300", "TPOT of the 300", "in the engine and waiting"]) {
          const c = charts.find(c => c.title.includes(what));
          check(c && c.real * 2 === c.items && c.lines === c.items, `lab 10, the replay's "${what}": real beside modeled, a line each: ${JSON.stringify(c && [c.items, c.real, c.lines])}`);
        }
      for (const c of charts) {
        check(c.items > 0 && c.covered === 0 && c.inside,
              `lab ${n}, "${c.title}": its legend (${c.items} entries) covers ${c.covered} of ${c.marks} marks and ${c.inside ? "fits" : "leaves"} the chart`);
        if (n === 5 && !/roofline/.test(c.title))
          check(c.x.length >= 3 && c.y.length >= 3, `lab 5, "${c.title}": log axes with ticks between their ends: x ${c.x.join(" ")}; y ${c.y.join(" ")}`);
      }
      await page.screenshot({ path: `${out}/lab${n}-charts.png`, fullPage: true });
    }
  } catch (e) {
    check(false, "the browser session: " + e.message.split("\n")[0]);
  } finally {
    await browser.close();
  }
  process.exit(failed() ? 1 : 0);
})();
