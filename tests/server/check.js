// The official OpenAI Node SDK against `hipath serve` (tests/check_server.sh).
// usage: node check.js BASE_URL API_KEY NPM_DIR [EXPECTED_REPLY_TO_HI]
// Exit 0 when every check passes; each failure prints one line.
const [base, apiKey, npmDir, expectHi] = process.argv.slice(2);
const OpenAI = require(require('path').resolve(npmDir, 'node_modules/openai')).default;
const client = new OpenAI({ baseURL: base + '/v1', apiKey, maxRetries: 0, timeout: 60000 });

let failed = 0;
function check(ok, what) {
  if (!ok) { failed++; console.log('FAIL ' + what); } else console.log('ok   ' + what);
}

async function main() {
  const models = await client.models.list();
  const model = models.data[0].id;
  check(models.data.length === 1 && typeof model === 'string', 'models.list names the served model');
  const messages = [{ role: 'user', content: 'Hi' }];

  // Streaming, as a chat app does it, with usage in the last chunk.
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 32, temperature: 0, stream: true, stream_options: { include_usage: true } });
  let text = '', chunks = [], usage = null, finish = null;
  for await (const c of stream) {
    chunks.push(c);
    if (c.usage) usage = c.usage;
    const ch = c.choices[0];
    if (!ch) continue;
    if (ch.delta && ch.delta.content) text += ch.delta.content;
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  check(chunks.every(c => c.object === 'chat.completion.chunk' && c.id === chunks[0].id), 'every chunk is a chat.completion.chunk with one id');
  check(chunks[0].choices[0].delta.role === 'assistant', 'the first chunk carries delta.role = assistant');
  check(chunks.slice(1).every(c => !c.choices[0] || !c.choices[0].delta.role), 'later chunks carry no role');
  check(finish === 'stop' || finish === 'length', 'a finish_reason arrives (' + finish + ')');
  const last = chunks[chunks.length - 1];
  check(usage && last.usage === usage && last.choices.length === 0, 'include_usage: usage comes in a last chunk with no choices');
  check(usage && usage.prompt_tokens > 0 && usage.completion_tokens > 0 &&
        usage.total_tokens === usage.prompt_tokens + usage.completion_tokens, 'usage adds up ' + JSON.stringify(usage));
  if (expectHi) check(text === expectHi, `"Hi" gets the reply the model was trained to give (${JSON.stringify(text)} vs ${JSON.stringify(expectHi)})`);

  // The same request without streaming: the same greedy text.
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 32, temperature: 0 });
  check(whole.object === 'chat.completion' && whole.choices.length === 1, 'non-streaming: one chat.completion choice');
  check(whole.choices[0].message.role === 'assistant' && whole.choices[0].message.content === text,
        'non-streaming text equals the streamed text');
  check(whole.choices[0].finish_reason === finish, 'same finish_reason');
  check(JSON.stringify(whole.usage) === JSON.stringify(usage), 'same usage');

  // Logprobs: the greedy token is the top alternative; the alternatives are
  // sorted and are a (partial) probability distribution; the tokens' bytes
  // spell the reply.
  const lp = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = lp.choices[0].logprobs && lp.choices[0].logprobs.content;
  check(Array.isArray(content) && content.length > 0, 'logprobs.content is a non-empty list');
  let bytes = [], ok = true, okTop = true;
  for (const t of content || []) {
    bytes.push(...t.bytes);
    ok &&= typeof t.token === 'string' && t.logprob <= 0 && t.top_logprobs.length === 3;
    const tops = t.top_logprobs;
    okTop &&= tops[0].token === t.token && Math.abs(tops[0].logprob - t.logprob) < 1e-6 &&
              tops.every((x, i) => i === 0 || tops[i - 1].logprob >= x.logprob) &&
              tops.reduce((s, x) => s + Math.exp(x.logprob), 0) <= 1 + 1e-5;
  }
  check(ok, 'each logprob entry has token, logprob <= 0 and 3 top_logprobs');
  check(okTop, 'greedy: the chosen token is the most likely, alternatives sorted, probabilities sum <= 1');
  check(Buffer.from(bytes).toString('utf8') === lp.choices[0].message.content, "the tokens' bytes spell the reply");

  // Streaming logprobs arrive with the chunks.
  const s2 = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 0, logprobs: true, top_logprobs: 2, stream: true });
  let n = 0;
  for await (const c of s2) if (c.choices[0] && c.choices[0].logprobs) n += c.choices[0].logprobs.content.length;
  check(n === content.length, `streamed logprobs cover the same tokens (${n} vs ${content.length})`);

  // ignore_eos: the end-of-turn ids generated past the reply are completion
  // tokens, so logprobs has an entry for each token usage counts (tiny-hi
  // repeats its end of turn); a completion's text_offset stays in its text.
  const ie = { model, max_tokens: 12, temperature: 0, ignore_eos: true };
  const wc = await client.chat.completions.create({ ...ie, messages, logprobs: true });
  check(wc.choices[0].logprobs.content.length === wc.usage.completion_tokens,
        `ignore_eos, chat: one logprobs entry per completion token (${wc.choices[0].logprobs.content.length} vs ${wc.usage.completion_tokens})`);
  let sc = 0, su = null;
  for await (const c of await client.chat.completions.create({ ...ie, messages, logprobs: true, stream: true, stream_options: { include_usage: true } })) {
    if (c.usage) su = c.usage;
    if (c.choices[0] && c.choices[0].logprobs) sc += c.choices[0].logprobs.content.length;
  }
  check(su && sc === su.completion_tokens, `ignore_eos, chat streamed: one entry per completion token (${sc} vs ${su && su.completion_tokens})`);
  const wp = await client.completions.create({ ...ie, prompt: 'Hi', logprobs: 1 });
  const offs = wp.choices[0].logprobs.text_offset, textLen = Buffer.byteLength(wp.choices[0].text);
  check(wp.choices[0].logprobs.tokens.length === wp.usage.completion_tokens && offs.every(o => o <= textLen),
        `ignore_eos, completions: one entry per completion token (${wp.choices[0].logprobs.tokens.length} vs ${wp.usage.completion_tokens}), offsets within the text`);
  let sp = 0, spu = null;
  for await (const c of await client.completions.create({ ...ie, prompt: 'Hi', logprobs: 1, stream: true, stream_options: { include_usage: true } })) {
    if (c.usage) spu = c.usage;
    if (c.choices[0] && c.choices[0].logprobs) sp += c.choices[0].logprobs.tokens.length;
  }
  check(spu && sp === spu.completion_tokens, `ignore_eos, completions streamed: one entry per completion token (${sp} vs ${spu && spu.completion_tokens})`);

  // Seeded sampling reproduces; stop strings cut the text.
  const a = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 1, seed: 7 });
  const b = await client.chat.completions.create({ model, messages, max_tokens: 16, temperature: 1, seed: 7 });
  check(a.choices[0].message.content === b.choices[0].message.content, 'the same seed gives the same sample');
  if (text.length >= 2) {
    const cut = [...text][1];
    const st = await client.chat.completions.create({ model, messages, max_tokens: 32, temperature: 0, stop: [cut] });
    check(st.choices[0].message.content === text.slice(0, text.indexOf(cut)) && st.choices[0].finish_reason === 'stop',
          `stop ${JSON.stringify(cut)} cuts the reply before it`);
  }

  // The legacy completions endpoint.
  const cmp = await client.completions.create({ model, prompt: 'Hi', max_tokens: 4, temperature: 0 });
  check(cmp.object === 'text_completion' && typeof cmp.choices[0].text === 'string' && cmp.usage.completion_tokens <= 4,
        'completions: a text_completion');

  // Errors surface as the SDK's typed errors.
  try {
    await client.chat.completions.create({ model: 'no-such-model', messages });
    check(false, 'unknown model is refused');
  } catch (e) {
    check(e.status === 404 && e.param === 'model' && e.code === 'model_not_found', 'unknown model: NotFoundError, param model');
  }
  const bad = new OpenAI({ baseURL: base + '/v1', apiKey: 'wrong-key', maxRetries: 0 });
  try {
    await bad.chat.completions.create({ model, messages });
    check(false, 'a wrong API key is refused');
  } catch (e) {
    check(e.status === 401, 'wrong API key: AuthenticationError (401)');
  }
}

main().then(() => process.exit(failed ? 1 : 0), e => { console.log('FAIL ' + (e.stack || e)); process.exit(1); });
