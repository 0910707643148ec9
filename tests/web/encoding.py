"""encoding.py -- the web front end's Content-Encoding, read by an independent
client (tests/check_web_serving.sh): Python's http.client, which decodes
nothing itself, and its gzip module.
usage: python3 encoding.py PORT STATIC_DIR REQUEST
Each page and each big JSON or download, asked for with and without gzip:
the gzip one must say Content-Encoding: gzip, be smaller, and inflate to
exactly the plain one (the files: to the file on disk); both say
Vary: Accept-Encoding. Accept-Encoding's q-values decide (RFC 9110 12.5.3);
bodies under 1 KiB and the SSE stream go as they are. Prints ok/FAIL per check
and the sizes; exit 1 on any FAIL."""
import gzip, http.client, json, os, sys, zlib
from checks import check, done

port, static, req = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])


def get(path, accept=None, method="GET", body=None, headers=()):
    """accept: None (no header), a string, or a list (one header each)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.putrequest(method, path, skip_accept_encoding=True)
    for a in [] if accept is None else [accept] if isinstance(accept, str) else accept:
        c.putheader("Accept-Encoding", a)
    for k, v in headers:
        c.putheader(k, v)
    if body is not None:
        c.putheader("Content-Length", str(len(body)))
    c.endheaders(body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, r.headers, data


CHROMIUM = "gzip, deflate, br, zstd"   # what headless chromium sends
MIN_GZIP = 1024                        # a smaller body goes as it is (web/server/gzip.c)
pages = {"/": "index.html", "/labs/3": "labs.html", "/trace/1": "trace.html", "/app.css": "app.css",
         "/common.js": "common.js", "/chat.js": "chat.js", "/timeline.js": "timeline.js", "/trace.js": "trace.js",
         "/labs.js": "labs.js", "/chart.js": "chart.js"}
big = [f"/api/requests/{req}/events", f"/api/requests/{req}/events?px=8000", f"/api/requests/{req}/perfetto"]
print(f"{'path':34} {'plain B':>9} {'gzip B':>9}")
for path in list(pages) + big:
    st, hp, plain = get(path)
    st2, hg, packed = get(path, CHROMIUM)
    print(f"{path:34} {len(plain):9} {len(packed):9}")
    want = open(os.path.join(static, pages[path]), "rb").read() if path in pages else plain
    try:
        inflated = gzip.decompress(packed)
    except (OSError, EOFError, zlib.error) as e:
        inflated = repr(e).encode()
    check(st == st2 == 200 and hp.get("Content-Encoding") is None and plain == want,
          f"GET {path} without Accept-Encoding: as it is ({len(plain)} B{', the file' if path in pages else ''})")
    if len(want) < MIN_GZIP:
        check(hg.get("Content-Encoding") is None and packed == want, f"GET {path} with '{CHROMIUM}': under 1 KiB, as it is")
    else:
        check(hg.get("Content-Encoding") == "gzip" and int(hg.get("Content-Length", -1)) == len(packed) < len(plain)
              and inflated == want, f"GET {path} with '{CHROMIUM}': gzip, {len(packed)} B, inflates to the same {len(want)} B")
    check(hp.get("Vary") == hg.get("Vary") == "Accept-Encoding", f"GET {path}: Vary: Accept-Encoding, both ways")

# q-values: which Accept-Encoding takes gzip.
cases = [("gzip", True), ("GZIP", True), ("x-gzip", True), ("gzip;q=1.0", True), ("gzip ; q=0.5", True),
         ("gzip;q=0.001", True), ("gzip;Q=0.5", True), ("deflate, gzip;q=0.8, br", True), ("*", True),
         ("br;q=1, *;q=0.5", True), ("gzip;q=0.5, identity;q=0.4", True), ("identity;q=0, gzip;q=0.1", True),
         (["br", "gzip"], True), ("gzip;q=0", False), ("gzip;q=0.000", False), ("deflate, br", False),
         ("*;q=0", False), ("gzip;q=0, *", False), ("identity", False), ("", False), (None, False),
         ("gzip;q=0.5, identity", False), ("gzip;q=0.5, *", False), ("gzip;q=2", False), ("gzip;q=0.5555", False),
         ("gzip;q=", False), ("gzip;level=9", False), ("gzipx", False), (["gzip;q=0", "gzip"], False)]
for accept, want in cases:
    st, h, body = get("/timeline.js", accept)
    got = h.get("Content-Encoding") == "gzip"
    check(st == 200 and got == want, f"Accept-Encoding: {accept!r} -> {'gzip' if got else 'identity'}")

# Tiny bodies go as they are (still Vary); HEAD says what GET would send.
for path, status in [("/api/info", 200), ("/api/requests/999999", 404), ("/nosuchpage.js", 404)]:
    st, h, body = get(path, "gzip")
    check(st == status and h.get("Content-Encoding") is None and len(body) < 1024 and h.get("Vary") == "Accept-Encoding",
          f"GET {path} ({len(body)} B) with gzip accepted -> {st}, as it is")
st, h, body = get("/trace/1", "gzip", method="HEAD")
st2, h2, body2 = get("/trace/1", "gzip")
check(st == 200 and body == b"" and h.get("Content-Encoding") == "gzip" and h.get("Content-Length") == str(len(body2)),
      f"HEAD /trace/1 with gzip: the GET's Content-Encoding and Content-Length ({h.get('Content-Length')}), no body")

# The stream is never compressed: each event must leave when it is made.
chat = json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, "stream": True}).encode()
st, h, body = get("/v1/chat/completions", "gzip", "POST", chat, [("Content-Type", "application/json")])
check(st == 200 and h.get("Content-Encoding") is None and h.get("Content-Type") == "text/event-stream"
      and body.rstrip().endswith(b"data: [DONE]"), "the SSE stream, gzip accepted: as it is, event by event")
done()
