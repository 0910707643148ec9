"""The scheduler's features change no answer (tests/check_scheduler.sh).

    python3 scheduler.py HIPATH MODEL OUTDIR

Every server gets the same chat prompts at temperature 0 with ignore_eos,
through the official openai SDK; each must give the reference's text, and
top-5 logprobs within TOL of its. The reference computes one request at a
time, each prompt whole, nothing cached. Prints "N passed, N failed".
"""
import atexit, concurrent.futures, os, sys, urllib.request
import openai
sys.path.insert(0, os.path.dirname(__file__))
from serve import start

hipath, model, out = sys.argv[1:4]
MAX_TOKENS = 24
BLOCK = 16          # KV block size (vLLM's): a cache hit is whole blocks
TOL = 1e-2          # tests/check_gguf.sh's, against transformers
TOKEN_BYTES = 46080  # SmolLM2's KV bytes a token (f32 slots: 2 x 4 x 30 layers x 192)

SYSTEM = ("You are a patient tutor of the history of mathematics. Answer in two or three plain sentences, name the "
          "century and the place, avoid formulas unless the student asks for one, and end with one question that "
          "invites the student to look further into the subject on their own.")
LONG = ("Summarise the following passage in one sentence. The Library of Alexandria was one of the largest and most "
        "significant libraries of the ancient world. It was part of a larger research institution called the Mouseion, "
        "dedicated to the Muses, the nine goddesses of the arts. Scholars from across the Mediterranean came to study "
        "there, and many of the most famous works of geometry, astronomy and medicine were written or copied in its halls.")
CHATS = [[{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]
         for q in ("Who was Euclid?", "Who was Hypatia?", "What did al-Khwarizmi give us?")] + [
        [{"role": "user", "content": LONG}],
        [{"role": "user", "content": "Write a haiku about the sea."}],
        [{"role": "user", "content": "List three prime numbers larger than one hundred."}]]

passed = failed = 0
def check(ok, what):
    global passed, failed
    passed += bool(ok); failed += not ok
    print(("ok   " if ok else "FAIL ") + what)
    return ok


class Server:
    """hipath serve ARGS on SmolLM2 (cpu, one thread), killed at exit if not stopped."""
    def __init__(self, name, args):
        self.name = name
        self.p, port = start(hipath, ["--model", model, "--device", "cpu", "--no-trace"] + args, "%s/%s.log" % (out, name),
                             env=dict(os.environ, OMP_NUM_THREADS="1"))
        atexit.register(self.p.kill)
        if not port:
            self.p.kill()
            sys.exit("FAIL %s: the server did not start: %s" % (name, open("%s/%s.log" % (out, name)).read()))
        self.url = "http://127.0.0.1:%d" % port
        self.client = openai.OpenAI(base_url=self.url + "/v1", api_key="none", max_retries=0, timeout=300)
        self.model = self.client.models.list().data[0].id

    def ask(self, chats):
        """Every chat at once (a thread each): their replies, in order."""
        def one(msgs):
            return self.client.chat.completions.create(model=self.model, messages=msgs, max_tokens=MAX_TOKENS, temperature=0,
                                                       logprobs=True, top_logprobs=5, extra_body={"ignore_eos": True})
        with concurrent.futures.ThreadPoolExecutor(len(chats)) as pool:
            return list(pool.map(one, chats))

    def metrics(self):
        text = urllib.request.urlopen(self.url + "/metrics").read().decode()
        return {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l and not l.startswith("#")}

    def stop(self):
        self.p.terminate()
        rc = self.p.wait(30)
        check(rc == 0, "%s: the server exits 0 on SIGTERM (%d)" % (self.name, rc))


def text(r):
    return r.choices[0].message.content


def same_as_reference(name, replies, ref):
    """Each reply's text is the reference's; its top-5 logprobs within TOL
    (a sixth and a fifth within TOL of each other may swap places)."""
    for i, (r, want) in enumerate(zip(replies, ref)):
        check(text(r) == text(want), "%s: prompt %d's text is the reference's%s" % (name, i, "" if text(r) == text(want) else
              ":\n     got  %r\n     want %r" % (text(r), text(want))))
        worst = 0.0
        for got, exp in zip(r.choices[0].logprobs.content, want.choices[0].logprobs.content):
            for a, b in ((got, exp), (exp, got)):   # one's top 5 in the other's; past its fifth, by as little as a tie
                top = {t.token: t.logprob for t in b.top_logprobs}
                fifth = min(top.values())
                for t in a.top_logprobs:
                    worst = max(worst, abs(t.logprob - top[t.token]) if t.token in top else t.logprob - fifth)
        check(worst <= TOL, "%s: prompt %d's top-5 logprobs within %g of the reference's (largest difference %.1e)" % (name, i, TOL, worst))


def settled(name, server, replies, caching):
    """Every KV block back; the prefix cache's counters are the sum of what the replies say (counted at admission)."""
    m = server.metrics()
    check(m["hipath_kv_blocks_used"] == 0, "%s: every KV block back (hipath_kv_blocks_used %g)" % (name, m["hipath_kv_blocks_used"]))
    prompt = sum(r.usage.prompt_tokens for r in replies) if caching else 0
    cached = sum(r.usage.prompt_tokens_details.cached_tokens for r in replies)
    check(m["hipath_prefix_cache_queries_total"] == prompt and m["hipath_prefix_cache_hits_total"] == cached,
          "%s: prefix cache queries %g, hits %g: the replies' prompt tokens %d, cached tokens %d" %
          (name, m["hipath_prefix_cache_queries_total"], m["hipath_prefix_cache_hits_total"], prompt, cached))
    return m


OFF = ["--no-enable-prefix-caching"]
ref_srv = Server("reference", ["--max-num-seqs", "1", "--no-chunked-prefill", "--no-enable-prefix-caching"])
chunk_srv = {b: Server("chunks-%d" % b, ["--max-num-batched-tokens", str(b), "--max-num-seqs", "16"] + OFF) for b in (16, 64, 2048)}
cache_srv = Server("cache", ["--kv-cache-mb", "64"])
# 20 blocks (320 tokens): 16 streams of 38-115 prompt tokens and 24 more cannot all hold their blocks at once
small_srv = Server("small-pool", ["--kv-cache-mb", str(20 * BLOCK * TOKEN_BYTES / 2**20)])

def cold_warm():
    return cache_srv.ask(CHATS), cache_srv.ask(CHATS)
# Two at a time (each server computes on one core), the longest first.
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    jobs = [pool.submit(ref_srv.ask, CHATS), pool.submit(small_srv.ask, (CHATS * 3)[:16]), pool.submit(cold_warm)]
    chunked = {b: pool.submit(s.ask, CHATS) for b, s in chunk_srv.items()}
    ref, small, (cold, warm) = (j.result() for j in jobs)
    chunked = {b: j.result() for b, j in chunked.items()}

settled("reference", ref_srv, ref, False)
lens = [r.usage.prompt_tokens for r in ref]
print("prompt tokens: %s" % lens)
for b, replies in chunked.items():
    same_as_reference("budget %d" % b, replies, ref)
    settled("budget %d" % b, chunk_srv[b], replies, False)

same_as_reference("prefix cache cold", cold, ref)
same_as_reference("prefix cache warm", warm, ref)
for i, r in enumerate(warm):   # the first pass computed (and cached) each prompt whole: all its full blocks but the last id's
    got, want = r.usage.prompt_tokens_details.cached_tokens, (lens[i] - 1) // BLOCK * BLOCK
    check(got == want and 0 < got < lens[i],
          "prefix cache warm: prompt %d (%d tokens): %d cached tokens, the %d of its whole blocks before its last token" %
          (i, lens[i], got, want))
settled("prefix cache", cache_srv, cold + warm, True)

same_as_reference("small pool", small, (ref * 3)[:16])
m = settled("small pool", small_srv, small, True)
check(m["hipath_num_preemptions_total"] > 0, "small pool: 16 streams preempt (hipath_num_preemptions_total %g)" % m["hipath_num_preemptions_total"])

for s in [ref_srv, cache_srv, small_srv] + list(chunk_srv.values()):
    s.stop()
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
