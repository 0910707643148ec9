"""slow.py -- a slow web request holds no other connection
(tests/check_web_serving.sh).
usage: python3 slow.py PORT FIFO
The server runs with one HTTP thread (--http-threads 1), so every
connection is that thread's, and with HIPATH_WEB_HOLD=FIFO, so its slow
work (a Perfetto export, the flush of a report) waits for a line on FIFO.
For each: the slow request is sent; the test's open of FIFO for writing
returns once the slow work has begun (the server opened it to read); then
other requests (a page, /health, /v1/models, /api/info) must all be
answered while the slow one is still held, which it is until the line is
written. The order is the check, not a time: the deadlines below only end
a test that has already failed (the fast requests never answered).
Prints ok/FAIL per check; exit 1 on any FAIL."""
import errno, http.client, json, os, sys, threading, time
from checks import check, done

port, fifo = int(sys.argv[1]), sys.argv[2]
DEADLINE = 120   # seconds; reached only when the server is stuck


def request(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    c.request(method, path, body, {"Content-Type": "application/json"} if body is not None else {})
    r = c.getresponse()
    out = (r.status, r.headers, r.read())
    c.close()
    return out


class Background(threading.Thread):
    """One request on its own connection; .result once answered."""
    def __init__(self, *args):
        super().__init__(daemon=True)
        self.args, self.result = args, None

    def run(self):
        try:
            self.result = request(*self.args)
        except OSError as e:
            self.result = (0, {}, repr(e).encode())


def held():
    """Wait until the server opens FIFO to read (the slow work has begun); the write end, or None."""
    end = time.monotonic() + DEADLINE
    while time.monotonic() < end:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:   # ENXIO: no reader yet
                raise
        time.sleep(0.05)
    return None


def chat():
    """A streamed "Hi" (a report needs its sse_done): its id and text."""
    body = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 8, "temperature": 0,
                       "stream": True}).encode()
    st, h, out = request("POST", "/v1/chat/completions", body)
    assert st == 200, out
    chunks = [json.loads(l[6:]) for l in out.decode().splitlines() if l.startswith("data: {")]
    return int(h["X-Request-Id"]), "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)


def in_trace(rid):
    for _ in range(600):   # the server writes its trace when quiet: within a second
        if request("GET", f"/api/requests/{rid}")[0] == 200:
            return True
        time.sleep(0.1)
    return False


def while_held(what, method, path, body=None):
    slow = Background(method, path, body)
    slow.start()
    w = held()
    if not check(w is not None, f"{what}: the slow work began (the server opened the FIFO)"):
        return
    fast = [Background("GET", p) for p in ("/", "/health", "/v1/models", "/api/info")]
    end = time.monotonic() + DEADLINE
    for f in fast:   # one after another, each on a new connection: all the one HTTP thread's
        f.start()
        f.join(max(0, end - time.monotonic()))
    answered = [f.result[0] if f.result else None for f in fast]
    still = slow.result is None
    check(answered == [200] * 4 and still,
          f"{what}: while it is held, GET / /health /v1/models /api/info are answered {answered}; the slow one is still waiting: {still}")
    os.write(w, b"go\n")
    os.close(w)
    slow.join(DEADLINE)
    return slow.result


rid, reply = chat()
check(in_trace(rid), f"request {rid} ('{reply}') is in the trace")
st, h, out = while_held("a Perfetto export", "GET", f"/api/requests/{rid}/perfetto") or (0, {}, b"")
check(st == 200 and int(h.get("X-Hipath-Events", 0)) > 0 and len(out) > 0,
      f"then the export is answered: {st}, {len(out)} B, {h.get('X-Hipath-Events')} events")

rid, reply = chat()
in_trace(rid)
report = {"build_ms": 0.1, "sent_ms": 0.2, "first_byte_ms": 3, "done_ms": 5, "json": "{}", "status": 200,
          "finish": "stop", "tokens": [{"ms": 3, "text": reply}]}
st, h, out = while_held("a report (its flush of the trace)", "POST", f"/api/requests/{rid}/client",
                        json.dumps(report).encode()) or (0, {}, b"")
check(st == 200 and json.loads(out or b"{}").get("recorded") is True, f"then the report is answered: {st} {out[:60]!r}")
done()
