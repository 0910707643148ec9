"""security.py -- what the web front end must refuse (tests/check_web_security.sh).
usage: python3 security.py PORT ROOT KEY_PORT KEY
PORT serves the static folder ROOT (a copy with planted symlinks) and no key;
KEY_PORT serves with --api-key KEY. Raw sockets send the paths byte for
byte (no client normalises them). Prints ok/FAIL per check; exit 1 on any FAIL."""
import json, socket, sys, time
from checks import check, done

port, root, key_port, key = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]


def http(p, method, path, headers=None, body=b""):
    """One request, raw. (status, headers dict lower-cased, body bytes)."""
    s = socket.create_connection(("127.0.0.1", p), timeout=30)
    h = {"Host": "127.0.0.1", "Connection": "close", "Content-Length": str(len(body))}
    h.update(headers or {})
    s.sendall(f"{method} {path} HTTP/1.1\r\n".encode("latin-1") +
              b"".join(f"{k}: {v}\r\n".encode() for k, v in h.items()) + b"\r\n" + body)
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    hs = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    if hs.get("transfer-encoding") == "chunked":
        out = b""
        while rest:
            n, _, rest = rest.partition(b"\r\n")
            n = int(n, 16)
            if not n:
                break
            out, rest = out + rest[:n], rest[n + 2:]
        rest = out
    return status, hs, rest


def error_json(body):
    try:
        e = json.loads(body)["error"]
        return isinstance(e["message"], str) and "type" in e and "code" in e
    except (ValueError, KeyError, TypeError):
        return False


SECRET = b"root:"   # the first bytes of /etc/passwd
traversals = ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/%2E%2E/%2E%2E/etc/passwd",
              "/..%2f..%2f..%2fetc%2fpasswd", "/%252e%252e/%252e%252e/etc/passwd", "/%c0%ae%c0%ae/etc/passwd",
              "/.%2e/.%2e/etc/passwd", "/..\\..\\etc\\passwd", "//etc/passwd", "/./index.html",
              "/passwd.txt", "/outside/passwd.txt", "/inside/index.html", "/.hidden.txt", "/trace/../../etc/passwd",
              "/web.h", "/../server/api.c", "http://127.0.0.1/../../etc/passwd"]
for path in traversals:
    st, hs, body = http(port, "GET", path)
    check(st in (400, 403, 404) and SECRET not in body, f"GET {path} -> {st}, nothing from outside")

st, hs, body = http(port, "GET", "/index.html%00.png")   # MHD ends the path at the NUL: at most the page itself
check(SECRET not in body and st in (200, 400, 403, 404), f"GET /index.html%00.png -> {st}, nothing from outside")

types = {"/": "text/html; charset=utf-8", "/index.html": "text/html; charset=utf-8", "/app.css": "text/css; charset=utf-8",
         "/chat.js": "text/javascript; charset=utf-8", "/favicon.svg": "image/svg+xml", "/trace/3": "text/html; charset=utf-8",
         "/labs/4": "text/html; charset=utf-8", "/api/info": "application/json"}
for path, want in types.items():
    st, hs, body = http(port, "GET", path)
    check(st == 200 and hs.get("content-type") == want and hs.get("x-content-type-options") == "nosniff",
          f"GET {path} -> {st} {hs.get('content-type')}, nosniff")
st, hs, _ = http(port, "GET", "/")
check("default-src 'self'" in hs.get("content-security-policy", ""), "pages carry a Content-Security-Policy")
check(http(port, "POST", "/")[0] == 405 and http(port, "DELETE", "/api/runs")[0] == 405, "wrong methods: 405")

# The JSON endpoints: clear 400s and 404s in the OpenAI error shape.
bad = [("/api/requests/1/events?px=abc", 400), ("/api/requests/1/events?px=4", 400), ("/api/requests/1/events?from=5&to=3", 400),
       ("/api/requests/1/events?sql=select", 400), ("/api/requests/999999", 404), ("/api/requests/0", 404),
       ("/api/requests/-1", 404), ("/api/requests/1x", 404), ("/api/slices/99999999", 404), ("/api/runs?limit=100000", 400),
       ("/api/labs/9", 404), ("/api/labs/1?device=../../etc", 400), ("/api/labs/1?device=nosuchgpu", 400), ("/api/nothing", 404),
       ("/api/requests/1/events?run=1;DROP%20TABLE%20slices", 400)]
for path, want in bad:
    st, hs, body = http(port, "GET", path)
    check(st == want and error_json(body), f"GET {path} -> {st} with an error object")
report = "/api/requests/1/client"
for body, ctype, want in [(b"{not json", "application/json", 400), (b'{"build_ms": -1}', "application/json", 400),
                          (b"{}", "text/plain", 415), (b"x" * (2 << 20), "application/json", 413)]:
    st, hs, out = http(port, "POST", report, {"Content-Type": ctype}, body)
    check(st == want and error_json(out), f"POST {report} ({len(body)} B {ctype}) -> {st}")
st, hs, out = http(port, "POST", "/api/labs/1/run?device=h100;rm", {"Content-Type": "application/json"})
check(st == 400, f"POST /api/labs/1/run with a bad profile -> {st}")
check(http(port, "GET", "/api/runs")[0] == 200, "the trace is still readable after all that")

# A lab run from the page holds no connection's thread: it answers 202 at
# once, and while it runs every other request is answered (each on a new
# connection, spread over the server's threads).
st, hs, out = http(port, "POST", "/api/labs/1/run?device=h100")
check(st == 202 and json.loads(out).get("status") == "running", f"POST /api/labs/1/run?device=h100 -> {st} {out[:80]!r}")
check(http(port, "POST", "/api/labs/2/run?device=h100")[0] == 409, "a second lab run while one runs -> 409")
answered = [http(port, "GET", "/api/info")[0] for _ in range(16)]
st = http(port, "GET", "/api/labs/1?device=h100")[0]
check(answered == [200] * 16, f"16 requests answered while the lab ran (still running after them: {st == 202})")
for _ in range(600):
    st, hs, out = http(port, "GET", "/api/labs/1?device=h100")
    if st != 202:
        break
    time.sleep(0.5)
check(st == 200 and json.loads(out).get("result"), f"then GET /api/labs/1?device=h100 -> {st} with its result")

# The API key guards /v1/ and /api/ alike; the pages themselves are not secret.
auth = {"Authorization": "Bearer " + key}
for path in ["/api/info", "/api/runs", "/api/requests", "/api/requests/1/events", "/api/requests/1/perfetto", "/api/labs", "/v1/models"]:
    st, hs, body = http(key_port, "GET", path)
    check(st == 401 and error_json(body), f"GET {path} without the key -> {st}")
    st2 = http(key_port, "GET", path, {"Authorization": "Bearer wrong"})[0]
    check(st2 == 401, f"GET {path} with a wrong key -> {st2}")
check(http(key_port, "GET", "/api/info", auth)[0] == 200, "GET /api/info with the key -> 200")
check(http(key_port, "POST", report, {"Content-Type": "application/json"}, b"{}")[0] == 401, "POST a report without the key -> 401")
check(http(key_port, "GET", "/")[0] == 200, "GET / without the key -> 200 (the page asks for it)")
done()
