// What the browser checks share (tests/web/check.js, tp.js): one line per
// check, "ok   ..." or "FAIL ...", the headless chromium, and the sqlite3
// shell's reading of the trace (what the page shows is checked against it).
"use strict";
const path = require("path");
const { execFileSync } = require("child_process");

let failed = 0;
function check(ok, what) {
  if (!ok) failed++;
  console.log((ok ? "ok   " : "FAIL ") + what);
  return ok;
}

const launch = npmDir => require(path.resolve(npmDir, "node_modules/playwright-core")).chromium
  .launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
const sql = (db, query) => execFileSync("sqlite3", [db, query]).toString().trim();

module.exports = { check, failed: () => failed, launch, sql };
