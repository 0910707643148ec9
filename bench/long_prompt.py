"""long_prompt.py -- what one long prompt does to a workshop's room
(docs/workshop.md, --workshop-max-prompt-tokens): N students chat "Hi"
(streamed, max_tokens 16, each from a loopback address of its own) while
one student sends a prompt of WORDS words with max_tokens 1; prints the
room's TTFT (first content byte, wall clock on this host: measured) with
and without that prompt. A benchmark: it prints figures, checks nothing.
usage: python3 bench/long_prompt.py PORT CODE N WORDS
(serve with --workshop --host 127.0.0.1 --workshop-rate 0 and the cap to try)."""
import http.client, json, statistics, sys, threading, time

port, code, n, words = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def post(path, body, key=None, src=1):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600, source_address=(f"127.0.0.{src}", 0))
    h = {"Content-Type": "application/json"}
    if key:
        h["Authorization"] = "Bearer " + key
    c.request("POST", path, body=json.dumps(body), headers=h)
    return c, c.getresponse()


def join(i):
    c, r = post("/api/workshop/join", {"code": code, "name": f"s{i}"}, src=10 + i)
    return json.loads(r.read())["key"]


def ttft(key, src, out):
    t0 = time.time()
    c, r = post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 16, "stream": True},
                key, src)
    for line in r:
        if line.startswith(b"data: {") and (json.loads(line[6:])["choices"] or [{}])[0].get("delta", {}).get("content"):
            out.append(time.time() - t0)
            break
    r.read()
    c.close()


def room(keys, long_key=None):
    out = []
    ts = [threading.Thread(target=ttft, args=(k, 10 + i, out)) for i, k in enumerate(keys)]
    status = []
    if long_key:
        def long():
            c, r = post("/v1/chat/completions", {"messages": [{"role": "user", "content": "word " * words}], "max_tokens": 1},
                        long_key, 250)
            status.append((r.status, json.loads(r.read()).get("usage", {}).get("prompt_tokens")))
        lt = threading.Thread(target=long)
        lt.start()
        time.sleep(0.05)   # its prefill first: the room's requests arrive behind it
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if long_key:
        lt.join()
    return out, status


keys = [join(i) for i in range(n + 1)]
base, _ = room(keys[:n])
hit, status = room(keys[:n], keys[n])
for name, xs in (("alone", base), (f"beside one {words}-word prompt {status}", hit)):
    print(f"{n} students' TTFT {name}: median {statistics.median(xs) * 1e3:.0f} ms, max {max(xs) * 1e3:.0f} ms (measured, wall clock)")
