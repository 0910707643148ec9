#!/usr/bin/env python3
"""Raw HTTP checks of `hipath serve` (tests/check_server.sh): bad input gets the
right status and OpenAI's error shape, a client that hangs up mid-stream is
cancelled and its KV blocks come back, and the server keeps serving.

usage: raw.py errors HOST PORT API_KEY MAX_MODEL_LEN
       raw.py kv HOST PORT          (a server with a tiny KV cache: wait, then 503)
       raw.py keepalive HOST PORT   (the same, with --sse-keepalive 0.05: comments while a stream waits)
       raw.py shutdown HOST PORT PID (SIGTERM mid-stream: the stream ends with an error chunk)
Exit 0 when every check passes; each failure prints one line."""
import http.client, json, os, re, signal, socket, sys, threading, time

failed = 0


def check(ok, what):
    global failed
    failed += not ok
    print(("ok   " if ok else "FAIL ") + what)


def post(host, port, path, body, headers=None, raw=False):
    c = http.client.HTTPConnection(host, port, timeout=120)
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    c.request("POST", path, body=body if raw else json.dumps(body).encode(), headers=h)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def get(host, port, path):
    c = http.client.HTTPConnection(host, port, timeout=30)
    c.request("GET", path)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def metric(host, port, name):
    _, text = get(host, port, "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), text.decode(), re.M)
    return float(m.group(1)) if m else None


def settled(host, port, reason, count, within=30):
    """Wait until `count` requests finished for `reason` and none is running, waiting or holding a block."""
    deadline = time.time() + within
    while time.time() < deadline and (metric(host, port, 'hipath_requests_finished_total{finish_reason="%s"}' % reason) < count
                                       or metric(host, port, "hipath_requests_running") or metric(host, port, "hipath_requests_waiting")
                                       or metric(host, port, "hipath_kv_blocks_used")):
        time.sleep(0.05)


def error_shape(data):
    """{"error": {"message": str, "type": str, "param": str|null, "code": str|null}}"""
    try:
        e = json.loads(data)["error"]
    except (ValueError, KeyError, TypeError):
        return None
    ok = isinstance(e.get("message"), str) and e["message"] and isinstance(e.get("type"), str) \
        and "param" in e and "code" in e and set(e) == {"message", "type", "param", "code"}
    return e if ok else None


def expect_error(name, got, status, param=None, contains=()):
    st, data = got
    e = error_shape(data)
    ok = (st in status if isinstance(status, tuple) else st == status) and e is not None
    ok = ok and (param is None or e["param"] == param) and all(s in e["message"] for s in contains)
    check(ok, "%s -> %s %s" % (name, st, data[:160].decode(errors="replace")))


def errors(host, port, key, max_len):
    auth = {"Authorization": "Bearer " + key}
    chat = lambda body, **kw: post(host, port, "/v1/chat/completions", body, {**auth, **kw.pop("headers", {})}, **kw)
    hi = [{"role": "user", "content": "Hi"}]
    expect_error("malformed JSON", chat(b'{"messages": [', raw=True), 400)
    expect_error("a JSON array body", chat(b"[1, 2]", raw=True), 400)
    expect_error("wrong content type", chat(b'{"messages": []}', raw=True, headers={"Content-Type": "text/plain"}), (400, 415))
    big = json.dumps({"messages": [{"role": "user", "content": "a" * (1 << 20)}]}).encode()
    expect_error("body over 1 MiB", chat(big, raw=True), 413)
    expect_error("unknown model", chat({"model": "gpt-9", "messages": hi}), 404, "model")
    expect_error("missing messages", chat({"max_tokens": 3}), 400, "messages")
    expect_error("messages not a list", chat({"messages": "Hi"}), 400, "messages")
    expect_error("message not an object", chat({"messages": ["Hi"]}), 400, "messages")
    expect_error("unknown role", chat({"messages": [{"role": "wizard", "content": "Hi"}]}), 400, "messages")
    expect_error("content a number", chat({"messages": [{"role": "user", "content": 5}]}), 400, "messages")
    expect_error("empty content", chat({"messages": [{"role": "user", "content": ""}]}), 400, "messages")
    expect_error("invalid UTF-8", chat(b'{"messages": [{"role": "user", "content": "\xff\xfeHi"}]}', raw=True), 400, "messages")
    expect_error("max_tokens a string", chat({"messages": hi, "max_tokens": "5"}), 400, "max_tokens")
    expect_error("max_tokens 0", chat({"messages": hi, "max_tokens": 0}), 400, "max_tokens")
    expect_error("max_tokens -3", chat({"messages": hi, "max_tokens": -3}), 400, "max_tokens")
    expect_error("max_tokens 2.5", chat({"messages": hi, "max_tokens": 2.5}), 400, "max_tokens")
    expect_error("max_tokens past the context", chat({"messages": hi, "max_tokens": max_len}), 400, "max_tokens", (str(max_len),))
    long_text = "hello " * (2 * max_len)
    st, data = chat({"messages": [{"role": "user", "content": long_text}]})
    e = error_shape(data) or {}
    nums = [int(x) for x in re.findall(r"\d+", e.get("message", ""))]
    check(st == 400 and max_len in nums and any(n > max_len for n in nums),
          "prompt longer than max_model_len: 400 stating both numbers -> %s" % data[:200].decode(errors="replace"))
    expect_error("temperature 2.5", chat({"messages": hi, "temperature": 2.5}), 400, "temperature")
    expect_error("temperature -1", chat({"messages": hi, "temperature": -1}), 400, "temperature")
    expect_error("temperature a string", chat({"messages": hi, "temperature": "hot"}), 400, "temperature")
    expect_error("top_p 0", chat({"messages": hi, "top_p": 0}), 400, "top_p")
    expect_error("top_p 1.5", chat({"messages": hi, "top_p": 1.5}), 400, "top_p")
    expect_error("top_p 1e-50 (0 as the sampler's float)", chat({"messages": hi, "top_p": 1e-50}), 400, "top_p")
    expect_error("n 2", chat({"messages": hi, "n": 2}), 400, "n")
    expect_error("stream a string", chat({"messages": hi, "stream": "yes"}), 400, "stream")
    expect_error("stop a number", chat({"messages": hi, "stop": 3}), 400, "stop")
    expect_error("top_logprobs 21", chat({"messages": hi, "logprobs": True, "top_logprobs": 21}), 400, "top_logprobs")
    expect_error("top_logprobs without logprobs", chat({"messages": hi, "top_logprobs": 2}), 400, "top_logprobs")
    expect_error("completions without prompt", post(host, port, "/v1/completions", {"max_tokens": 2}, auth), 400, "prompt")
    expect_error("missing API key", post(host, port, "/v1/chat/completions", {"messages": hi}), 401)
    expect_error("wrong API key", post(host, port, "/v1/chat/completions", {"messages": hi}, {"Authorization": "Bearer nope"}), 401)
    for near in (key[:-1], key + "x", key[:-1] + chr(ord(key[-1]) ^ 1)):   # compared whole, in constant time
        expect_error("API key %r" % near, post(host, port, "/v1/chat/completions", {"messages": hi}, {"Authorization": "Bearer " + near}), 401)
    framing(host, port, key)
    request_ids(host, port, key)
    default, split, parsed = special_counts(host, port, auth)
    check(default == parsed < split, "'<|im_start|>' in a message is the special token by default (HF's), ordinary text "
          "with split_special_tokens: %d, %d and %d prompt tokens" % (default, split, parsed))
    expect_error("unknown path", get(host, port, "/v1/engines"), 404)
    expect_error("GET on a POST path", get(host, port, "/v1/chat/completions"), (404, 405))
    st, data = get(host, port, "/health")
    check(st == 200, "/health answers without a key")

    # Issue 15: a temperature whose inverse is infinite in float, with top_p,
    # once read before the sampler's candidates (the ASan server died).
    greedy = chat({"messages": hi, "max_tokens": 8, "temperature": 0})
    tiny = chat({"messages": hi, "max_tokens": 8, "temperature": 1e-45, "top_p": 0.5})
    text = lambda r: json.loads(r[1])["choices"][0]["message"]["content"] if r[0] == 200 else r
    check(tiny[0] == 200 and text(tiny) == text(greedy), "temperature 1e-45, top_p 0.5: the greedy reply (%s)" % (text(tiny),))

    # A client that hangs up mid-stream: the request is cancelled, its blocks return.
    cancelled0 = metric(host, port, 'hipath_requests_finished_total{finish_reason="cancelled"}')
    body = json.dumps({"messages": hi, "stream": True, "max_tokens": max_len - 64, "ignore_eos": True}).encode()
    s = socket.create_connection((host, port))
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    got = b""
    while got.count(b"data: ") < 1:   # hang up at once: a fast model must still be mid-stream
        got += s.recv(4096)
    s.close()
    settled(host, port, "cancelled", cancelled0 + 1)
    check(metric(host, port, "hipath_requests_running") == 0, "after the hang-up no request is running")
    check(metric(host, port, "hipath_kv_blocks_used") == 0 and metric(host, port, "hipath_kv_cache_usage_ratio") == 0,
          "after the hang-up every KV block is back (/metrics)")
    check(metric(host, port, 'hipath_requests_finished_total{finish_reason="cancelled"}') == cancelled0 + 1,
          "the hung-up request was cancelled, not run to the end")
    st, data = chat({"messages": hi, "max_tokens": 4, "temperature": 0})
    check(st == 200 and json.loads(data)["object"] == "chat.completion", "the server keeps serving after the hang-up")

    # Issue 15: five whole (not streamed) requests whose clients hang up at
    # once ran to the end; each must leave within a step, its blocks back.
    cancelled0 = metric(host, port, 'hipath_requests_finished_total{finish_reason="cancelled"}')
    tokens0 = metric(host, port, "hipath_generation_tokens_total")
    body = json.dumps({"messages": hi, "max_tokens": max_len - 64, "ignore_eos": True}).encode()
    for _ in range(5):
        s = socket.create_connection((host, port))
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Authorization: Bearer " + key.encode() + b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        s.close()
    settled(host, port, "cancelled", cancelled0 + 5)
    made = metric(host, port, "hipath_generation_tokens_total") - tokens0
    check(metric(host, port, 'hipath_requests_finished_total{finish_reason="cancelled"}') == cancelled0 + 5 and made <= 10,
          "five whole requests whose clients hung up were cancelled within a step: %d tokens made of %d asked" % (made, 5 * (max_len - 64)))
    check(metric(host, port, "hipath_kv_blocks_used") == 0, "... and their KV blocks are back")


def raw_request(host, port, head, body=b"", stream_body=None):
    """Send head (+ body, or the pieces of stream_body until the server stops
    reading); the response's status and body, and the body bytes sent. The
    response is read while sending: a server that answers early and closes
    resets the connection, and what was not read by then is lost."""
    s = socket.create_connection((host, port), timeout=60)
    got = []
    def read():
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got.append(b)
        except OSError:
            pass
    reader = threading.Thread(target=read)
    reader.start()
    sent = 0
    try:
        s.sendall(head + body)
        for piece in stream_body or ():
            s.sendall(piece)
            sent += len(piece)
    except OSError:   # the server answered and closed: it reads no more
        pass
    reader.join()
    data = b"".join(got)
    s.close()
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.") else 0
    return status, data.split(b"\r\n\r\n", 1)[-1], sent


def framing(host, port, key):
    """Issue 15: where a body ends must be clear (request smuggling), and a
    chunked body is not read past the drain limit."""
    auth = b"Authorization: Bearer " + key.encode() + b"\r\n"
    body = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}).encode()
    head = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + auth
    n = str(len(body)).encode()
    st, data, _ = raw_request(host, port, head + b"Content-Length: " + n + b"\r\nContent-Length: " + n + b"\r\n\r\n", body)
    expect_error("two Content-Length headers", (st, data), 400, None, ("Content-Length",))
    st, data, _ = raw_request(host, port, head + b"Content-Length: " + n + b"\r\nTransfer-Encoding: chunked\r\n\r\n",
                              b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    expect_error("Content-Length and Transfer-Encoding", (st, data), 400, None, ("Transfer-Encoding",))
    st, data, _ = raw_request(host, port, head + b"Transfer-Encoding: chunked\r\n\r\n", b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
    check(st == 200, "a chunked body is read (-> %d)" % st)
    chunk = b"%x\r\n%s\r\n" % (1 << 20, b" " * (1 << 20))
    st, data, sent = raw_request(host, port, head + b"Transfer-Encoding: chunked\r\n\r\n", stream_body=[chunk] * 2 + [b"0\r\n\r\n"])
    expect_error("a chunked body of 2 MiB", (st, data), 413)
    st, data, sent = raw_request(host, port, head + b"Transfer-Encoding: chunked\r\n\r\n", stream_body=[chunk] * 64)
    check(st == 0 and sent < 48 << 20, "a chunked body of 64 MiB: closed once 16 MiB are drained (%.1f MiB sent)" % (sent / 2**20))


def request_ids(host, port, key):
    """Issue 15: X-Request-Id is the client's only when it is one header of
    one positive number no request in flight has; the response says which."""
    auth = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
    def rid(headers, stream=False, keep=False):
        c = http.client.HTTPConnection(host, port, timeout=60)
        c.putrequest("POST", "/v1/chat/completions")
        body = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 100 if keep else 2,
                           "ignore_eos": keep, "stream": stream}).encode()
        for k, v in list(auth.items()) + headers + [("Content-Length", str(len(body)))]:
            c.putheader(k, v)
        c.endheaders(body)
        r = c.getresponse()
        if keep:
            r.readline()   # the stream has begun: its id is in flight until it ends
            return r.getheader("X-Request-Id"), c
        r.read()
        c.close()
        return r.getheader("X-Request-Id")
    check(rid([("X-Request-Id", "4242")]) == "4242", "X-Request-Id 4242 is used and echoed")
    held, c = rid([("X-Request-Id", "777")], stream=True, keep=True)
    other = rid([("X-Request-Id", "777")])
    check(held == "777" and other not in (None, "777"), "an X-Request-Id in flight is not taken twice (777, then %s)" % other)
    c.close()
    big = rid([("X-Request-Id", "99999999999999999999")])
    check(big not in (None, "9223372036854775807", "99999999999999999999"), "an X-Request-Id past 2^63 is not used (-> %s)" % big)
    two = rid([("X-Request-Id", "5151"), ("X-Request-Id", "5252")])
    check(two not in (None, "5151", "5252"), "two X-Request-Id headers: neither is used (-> %s)" % two)
    uuid = rid([("X-Request-Id", "3f2a9c1e-77aa-4e1b-9d3c-1a2b3c4d5e6f")])
    check(uuid is not None and uuid.isdigit(), "a proxy's UUID gives way to the server's own id (-> %s)" % uuid)


def special_counts(host, port, headers=None):
    """Prompt tokens of a message holding "<|im_start|>": with no
    split_special_tokens field, with true, with false."""
    def count(extra):
        st, data = post(host, port, "/v1/chat/completions", dict({"messages": [{"role": "user", "content": "<|im_start|>hi"}],
                                                                  "max_tokens": 1}, **extra), headers)
        return json.loads(data)["usage"]["prompt_tokens"] if st == 200 else -1
    return count({}), count({"split_special_tokens": True}), count({"split_special_tokens": False})


def kv(host, port):
    """A cache of 8 blocks (128 tokens): one request too big for it ever gets
    503; four that fit one or two at a time wait their turn and all finish."""
    hi = [{"role": "user", "content": "Hi"}]
    expect_error("a request the KV cache can never hold", post(host, port, "/v1/chat/completions",
                 {"messages": hi, "max_tokens": 200}), 503, None, ("KV",))
    out = [None] * 4
    def one(i):
        out[i] = post(host, port, "/v1/chat/completions", {"messages": hi, "max_tokens": 100, "ignore_eos": True, "temperature": 0})
    ts = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in ts: t.start()
    for t in ts: t.join()
    check(all(o and o[0] == 200 for o in out), "four requests that cannot all fit at once wait and finish: %s" % [o and o[0] for o in out])
    check(all(json.loads(o[1])["usage"]["completion_tokens"] == 100 for o in out if o and o[0] == 200), "each generated its 100 tokens")
    default, split, parsed = special_counts(host, port)
    check(default == split > parsed, "with --split-special-tokens, '<|im_start|>' in a message is ordinary text "
          "unless the request says false: %d, %d and %d prompt tokens" % (default, split, parsed))
    waited = metric(host, port, "hipath_queue_time_seconds_sum")
    check(waited is not None and waited > 0, "some waited in the queue (queue time sum %s s)" % waited)
    check(metric(host, port, "hipath_kv_blocks_used") == 0, "all blocks back")


def in_engine(host, port):
    """Requests the engine has taken: finished (for any reason), running or waiting."""
    _, text = get(host, port, "/metrics")
    return sum(float(v) for v in re.findall(r"^hipath_requests_(?:finished_total\{[^}]*\}|running|waiting) (\S+)$", text.decode(), re.M))


def stream_lines(host, port, body):
    """A streamed chat completion's lines, as they came (no blank ones)."""
    c = http.client.HTTPConnection(host, port, timeout=600)
    c.request("POST", "/v1/chat/completions", json.dumps(dict(body, stream=True)), {"Content-Type": "application/json"})
    r = c.getresponse()
    lines = [l.rstrip(b"\n") for l in iter(r.readline, b"") if l != b"\n"]
    c.close()
    return lines


def chunk_text(chunk):
    """A chat chunk's text ("" for none)."""
    return chunk["choices"][0]["delta"].get("content") or "" if chunk["choices"] else ""


def keepalive(host, port):
    """A stream queued behind requests that each fill the KV cache (8 blocks:
    one of 100 tokens at a time) gets its role chunk, then ': keepalive'
    comments while it waits, before its first token, then its reply. Nothing
    is timed: if the requests ahead were done before a comment was due (a
    fast machine), more are put ahead and it is tried again."""
    hi = [{"role": "user", "content": "Hi"}]
    long_one = {"messages": hi, "max_tokens": 100, "ignore_eos": True, "temperature": 0}
    for ahead in (4, 16, 64):
        before = in_engine(host, port)
        ts = [threading.Thread(target=post, args=(host, port, "/v1/chat/completions", long_one)) for _ in range(ahead)]
        for t in ts: t.start()
        deadline = time.time() + 120   # a bound for a stuck server only: they are queued in milliseconds
        while in_engine(host, port) < before + ahead and time.time() < deadline:
            time.sleep(0.01)
        lines = stream_lines(host, port, {"messages": hi, "max_tokens": 8, "temperature": 0})
        for t in ts: t.join()
        data = [json.loads(l[6:]) for l in lines if l.startswith(b"data: {")]
        text = "".join(chunk_text(d) for d in data)
        first = next((i for i, d in enumerate(lines) if d.startswith(b"data: {") and chunk_text(json.loads(d[6:]))), len(lines))
        waited = [l for l in lines[:first] if l == b": keepalive"]
        if waited:
            break
    check(bool(waited) and lines[-1] == b"data: [DONE]" and text, "a stream waiting behind %d long requests gets %d ': keepalive' "
          "comments before its first token, then its reply %r and [DONE]" % (ahead, len(waited), text))
    check(metric(host, port, "hipath_kv_blocks_used") == 0, "all blocks back")


def shutdown(host, port, pid):
    """The server stops while a stream is running: the client still gets an
    OpenAI error object as a data: chunk, then [DONE]."""
    c = http.client.HTTPConnection(host, port, timeout=60)
    c.request("POST", "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": "Hi"}], "stream": True,
              "max_tokens": 100, "ignore_eos": True}), {"Content-Type": "application/json"})
    r = c.getresponse()
    events, killed = [], False
    while True:
        line = r.readline()
        if not line:
            break
        if line.startswith(b"data: "):
            events.append(line[6:].strip())
            if len(events) == 3 and not killed:
                os.kill(pid, signal.SIGTERM)
                killed = True
    err = error_shape(events[-2]) if len(events) >= 2 else None
    check(killed and events[-1] == b"[DONE]" and err is not None,
          "SIGTERM mid-stream: an error chunk, then [DONE] (%s)" % (events[-2:] if events else "no events"))


if __name__ == "__main__":
    if sys.argv[1] == "errors":
        errors(sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]))
    elif sys.argv[1] == "kv":
        kv(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == "keepalive":
        keepalive(sys.argv[2], int(sys.argv[3]))
    else:
        shutdown(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    sys.exit(1 if failed else 0)
