#!/usr/bin/env python3
"""`hipath run --url` against servers that misbehave (tests/check_client.sh):
each must end the client within its timeouts, with exit 1 and one line that
says why, and with its memory bounded, however much the server sends.

usage: hostile.py HIPATH OUTDIR
Exit 0 when every case passes; each prints one line."""
import json, os, resource, socket, subprocess, sys, threading, time

HIPATH, OUT = sys.argv[1], sys.argv[2]
MODELS = json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode()
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
CHUNK = 'data: {"choices": [{"index": 0, "delta": {"content": %s}, "finish_reason": %s}]%s}\n\n'


def send_all(c, data):
    try:
        c.sendall(data)
        return True
    except OSError:   # the client gave up: what we want
        return False


def forever(c, piece, every=0.0):
    """Send piece again and again until the client hangs up (or 10 minutes)."""
    end = time.time() + 600
    while time.time() < end and send_all(c, piece):
        time.sleep(every)


# What the server does with POST /v1/chat/completions, by case.
def silent(c): time.sleep(600)
def headers_then_nothing(c): send_all(c, HEAD); time.sleep(600)
def keepalives_only(c): send_all(c, HEAD); forever(c, b": keepalive\n\n", 0.2)
def empty_events(c): send_all(c, HEAD); forever(c, b'data: {"choices": []}\n\n', 0.01)
def no_newline(c): send_all(c, HEAD); forever(c, b"a" * 65536)   # 300 MiB once grew the client to 489 MB
def huge_error(c):
    send_all(c, b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: 314572800\r\n\r\n")
    forever(c, b"x" * 65536)
def absurd_usage(c):
    events = [CHUNK % ('"hi"', "null", ""), CHUNK % ("null", '"stop"', ""),
              'data: {"choices": [], "usage": {}}\n\n',
              'data: {"choices": [], "usage": {"prompt_tokens": 1e300, "completion_tokens": -5}}\n\n', "data: [DONE]\n\n"]
    send_all(c, HEAD + "".join(events).encode())


def serve(conn, post):
    with conn:
        conn.settimeout(600)
        req = b""
        while b"\r\n\r\n" not in req:
            got = conn.recv(65536)
            if not got:
                return
            req += got
        head, body = req.split(b"\r\n\r\n", 1)
        if head.startswith(b"GET /v1/models"):
            send_all(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n"
                     % len(MODELS) + MODELS)
            return
        length = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
        while len(body) < length:
            body += conn.recv(65536)
        post(conn)


def listener(post, backlog=64):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", 0))
    l.listen(backlog)
    def loop():
        while True:
            c, _ = l.accept()
            threading.Thread(target=serve, args=(c, post), daemon=True).start()
    if post:
        threading.Thread(target=loop, daemon=True).start()
    return l


def run(port, *flags):
    """hipath run against the port: (exit code, stderr, seconds, its peak RSS in MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.time()
    p = subprocess.run([HIPATH, "run", "--url", "http://127.0.0.1:%d" % port, "--trace-db", OUT + "/t.db",
                        "--perfetto", OUT + "/t.pftrace", "--connect-timeout", "1", "--first-byte-timeout", "2",
                        "--idle-timeout", "2", *flags, "Hi"], capture_output=True, timeout=60)
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return p.returncode, p.stderr.decode(errors="replace"), time.time() - t, (rss if rss > before else 0) / 1024


failed = 0
def case(name, port, want, rss_mb=None, code=1):
    global failed
    rc, err, secs, rss = run(port)
    lines = [l for l in err.splitlines() if l.startswith("hipath:")]
    ok = rc == code and want in err and (code == 0 or len(lines) == 1) and "AddressSanitizer" not in err
    ok = ok and (rss_mb is None or rss < rss_mb)
    failed += not ok
    print("%s %s: exit %d after %.1f s%s: %s" % ("ok  " if ok else "FAIL", name, rc, secs,
          ", peak RSS %.0f MB (limit %d)" % (rss, rss_mb) if rss_mb else "", (lines or err.splitlines() or [""])[-1][:200]))


# Connecting: a listener whose backlog is full drops the SYN, so connect() waits.
full = listener(None, backlog=0)
held = [socket.create_connection(full.getsockname())]
for _ in range(2):
    s = socket.socket()
    s.setblocking(False)
    s.connect_ex(full.getsockname())
    held.append(s)
case("a listener that never accepts", full.getsockname()[1], "no connection within 1 s (--connect-timeout)")

case("a silent server", listener(silent).getsockname()[1], "no response within 2 s (--first-byte-timeout)")
case("headers, then nothing", listener(headers_then_nothing).getsockname()[1], "no text for 2 s (--idle-timeout)")
case("keep-alive comments only", listener(keepalives_only).getsockname()[1], "no text for 2 s (--idle-timeout)")
case("empty events only", listener(empty_events).getsockname()[1], "no text for 2 s (--idle-timeout)")
case("300 MiB without a newline", listener(no_newline).getsockname()[1], "a stream line longer than 1 MiB", rss_mb=200)
case("a 300 MiB error body", listener(huge_error).getsockname()[1], "an HTTP error body longer than 1 MiB", rss_mb=200)
case("usage {} and 1e300", listener(absurd_usage).getsockname()[1], "0 prompt tokens, 0 generated", code=0)
sys.exit(1 if failed else 0)
