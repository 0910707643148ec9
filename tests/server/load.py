#!/usr/bin/env python3
"""Concurrent streaming clients against an OpenAI-compatible server
(tests/check_load.sh, bench/serve_bench.sh).

usage: load.py URL --concurrency C --requests N [--max-tokens M] [--ignore-eos]
               [--temperature T] [--check] [--json FILE] [--prompt TEXT ...] [--system TEXT]
Each client sends streaming chat requests (temperature 0 unless --temperature) one after another
until N have been sent in all, and times them where the user sits: TTFT is
request sent -> first text. --check first asks for every prompt once without
streaming and one at a time, then requires each stream's text to equal that.
--system puts the same system message before every prompt (a shared prefix).
Exit 1 on any HTTP error, error chunk, missing [DONE] or mismatch."""
import argparse, http.client, json, threading, time, urllib.parse

PROMPTS = ["Hi", "Hello", "Hey", "Who are you?", "What is a GPU?", "What is 2+3?", "What is 4*2?",
           "你好", "谢谢", "What is a token?", "What does the KV cache hold?", "Say something short.",
           "What is HIP?", "Good morning", "What is 7+1?", "Thanks!"]


def request(url, prompt, max_tokens, stream, ignore_eos, temperature=0, system=None):
    u = urllib.parse.urlparse(url)
    messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
    body = {"messages": messages, "max_tokens": max_tokens, "temperature": temperature}
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})
    if ignore_eos:
        body["ignore_eos"] = True
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    out = {"prompt": prompt, "status": r.status, "text": "", "ttft": None, "tokens": 0, "error": None, "done": False}
    if r.status != 200 or not stream:
        data = r.read()
        out["total"] = time.perf_counter() - t0
        c.close()
        if r.status != 200:
            out["error"] = data[:200].decode(errors="replace")
            return out
        j = json.loads(data)
        out.update(text=j["choices"][0]["message"]["content"], tokens=j["usage"]["completion_tokens"], done=True)
        return out
    t_first = t_last = None
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            out["done"] = True
            break
        j = json.loads(line[6:])
        if "error" in j:
            out["error"] = j["error"]["message"]
        if j.get("usage"):
            out["tokens"] = j["usage"]["completion_tokens"]
        for ch in j.get("choices") or []:
            piece = (ch.get("delta") or {}).get("content")
            if piece:
                t_last = time.perf_counter()
                if t_first is None:
                    t_first = t_last
                out["text"] += piece
            if ch.get("finish_reason"):   # the last token may carry no text (an end-of-turn token)
                t_last = time.perf_counter()
    out["total"] = time.perf_counter() - t0
    c.close()
    if t_first is not None:
        out["ttft"] = t_first - t0
        if out["tokens"] > 1:
            out["tpot"] = (t_last - t_first) / (out["tokens"] - 1)
    if not out["done"] and not out["error"]:
        out["error"] = "the stream ended without data: [DONE]"
    return out


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--requests", type=int, default=500)
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--ignore-eos", action="store_true")
    ap.add_argument("--temperature", type=float, default=0, help="for benchmarks; --check needs 0")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--prompt", action="append", help="send only this prompt (repeatable; default: the mixed list)")
    ap.add_argument("--system", help="a system message before every prompt (a shared prefix)")
    a = ap.parse_args()
    prompts = a.prompt or PROMPTS

    ref = {}
    if a.check:   # one at a time, not streamed: the reference
        for p in prompts:
            r = request(a.url, p, a.max_tokens, False, a.ignore_eos, system=a.system)
            if r["error"]:
                raise SystemExit("reference request failed: %s" % r["error"])
            ref[p] = r["text"]

    results, lock, next_i = [], threading.Lock(), [0]

    def client():
        while True:
            with lock:
                i = next_i[0]
                if i >= a.requests:
                    return
                next_i[0] += 1
            try:
                r = request(a.url, prompts[i % len(prompts)], a.max_tokens, True, a.ignore_eos, a.temperature, a.system)
            except Exception as e:   # a dropped connection is an error, not a crash of the test
                r = {"prompt": prompts[i % len(prompts)], "status": 0, "error": repr(e), "text": "", "tokens": 0, "ttft": None}
            with lock:
                results.append(r)

    t0, cpu0 = time.perf_counter(), time.process_time()
    ts = [threading.Thread(target=client) for _ in range(a.concurrency)]
    for t in ts: t.start()
    for t in ts: t.join()
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0

    errors = [r for r in results if r["error"] or r["status"] != 200]
    mismatches = [r for r in results if a.check and not r["error"] and r["text"] != ref[r["prompt"]]]
    tokens = sum(r["tokens"] for r in results)
    ttft = [r["ttft"] for r in results if r["ttft"] is not None]
    tpot = [r["tpot"] for r in results if r.get("tpot") is not None]
    s = {"concurrency": a.concurrency, "requests": len(results), "errors": len(errors), "mismatches": len(mismatches),
         "wall_s": wall, "client_cpu_s": cpu, "tokens": tokens, "tokens_per_s": tokens / wall, "requests_per_s": len(results) / wall,
         "ttft_p50_ms": pct(ttft, 50) * 1e3, "ttft_p99_ms": pct(ttft, 99) * 1e3, "tpot_p50_ms": pct(tpot, 50) * 1e3}
    print("concurrency %(concurrency)d: %(requests)d requests in %(wall_s).1f s, %(errors)d errors, %(mismatches)d mismatches; "
          "%(tokens_per_s).0f tokens/s, TTFT p50 %(ttft_p50_ms).1f ms p99 %(ttft_p99_ms).1f ms, TPOT p50 %(tpot_p50_ms).2f ms" % s)
    for r in errors[:5]:
        print("  error: %r -> %s %s" % (r["prompt"], r["status"], r["error"]))
    for r in mismatches[:5]:
        print("  mismatch: %r streamed %r, alone %r" % (r["prompt"], r["text"], ref[r["prompt"]]))
    if a.json:
        json.dump(s, open(a.json, "w"))
    raise SystemExit(1 if errors or mismatches else 0)


if __name__ == "__main__":
    main()
