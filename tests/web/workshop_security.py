"""workshop_security.py -- what a hostile student must not get from
`hipath serve --workshop` (tests/check_web_security.sh, docs/security.md).
usage: python3 workshop_security.py room PORT CODE TEACHER_KEY DB
       python3 workshop_security.py join PORT CODE TEACHER_KEY
       python3 workshop_security.py slow PORT TIMEOUT_S N
room: a workshop on the trace DB, whose run 1 (an earlier class) holds the
teacher's "my password is hunter2"; students come from addresses of their
own on the loopback range (127.0.0.N), as a room's laptops would.
join: a fresh workshop, for the join code's limits (they last a minute).
slow: a server whose requests must arrive whole within TIMEOUT_S seconds,
and which holds N connections at most.
Prints ok/FAIL per check; exit 1 on any FAIL."""
import http.client, json, socket, sqlite3, sys, threading, time
from checks import check, done

mode, port = sys.argv[1], int(sys.argv[2])


def req(method, path, key=None, body=None, src=1, ctype="application/json", headers=None):
    """(status, parsed JSON or None, raw body) of one request from 127.0.0.src."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(f"127.0.0.{src}", 0))
    h = dict(headers or {})
    if key:
        h["Authorization"] = f"Bearer {key}"
    if body is not None:
        if ctype:
            h["Content-Type"] = ctype
        body = body if isinstance(body, bytes) else json.dumps(body).encode()
    c.request(method, path, body=body, headers=h)
    r = c.getresponse()
    raw = r.read()
    c.close()
    try:
        j = json.loads(raw)
    except ValueError:
        j = None
    return r.status, j, raw, r


def err(j):
    return (j or {}).get("error", {}).get("code") if isinstance(j, dict) else None


def join(code, name, src=1, ctype="application/json"):
    st, j, raw, _ = req("POST", "/api/workshop/join", body={"code": code, "name": name}, src=src, ctype=ctype)
    return st, j


def chat(key, text, max_tokens=8, src=1, stream=False, ignore_eos=False):
    st, j, raw, r = req("POST", "/v1/chat/completions", key=key, src=src,
                        body={"messages": [{"role": "user", "content": text}], "max_tokens": max_tokens,
                              "temperature": 0, "stream": stream, "ignore_eos": ignore_eos})
    return st, j, raw, int(r.getheader("X-Request-Id") or 0)


def room(code, tkey, db):
    sa, a = join(code, "Ana", src=11)
    sb, b = join(code, "Ben", src=12)
    check(sa == sb == 200, f"two students join ({sa}, {sb})")
    ka, kb = a["key"], b["key"]

    # 1. The teacher's key is in no answer, and not in the trace's runs.
    st, j, raw, ida = chat(ka, "Hi", src=11)
    check(st == 200 and ida > 0, f"Ana's chat is answered ({st}, request {ida})")
    time.sleep(1.5)   # the trace is written every second
    answers = [req("GET", p, key=ka, src=11) for p in
               ("/api/info", f"/api/requests/{ida}", "/api/requests", f"/api/requests/{ida}/events")]
    check(all(x[0] == 200 for x in answers), f"Ana reads her own request and the info ({[x[0] for x in answers]})")
    check(not any(tkey.encode() in x[2] for x in answers), "the teacher's key is in none of a student's answers")
    check(all("command" not in (x[1] or {}) and "db" not in (x[1] or {}) for x in answers),
          "a student's answers carry no command line and no trace path")
    con = sqlite3.connect(db)
    cmds = [r[0] for r in con.execute("SELECT command FROM runs")]
    check(cmds and all(tkey not in c and "--api-key ***" in c for c in cmds),
          f"the runs table never holds the key ({len(cmds)} runs, masked: {cmds[-1][-60:]!r})")
    st, j, raw, _ = req("GET", "/api/workshop", key=ka, src=11)
    check(st == 403, f"a student does not open /api/workshop ({st})")
    st, j, raw, _ = req("GET", "/api/info", key=ka, src=11)
    check(st == 200 and "db" not in j and db.encode() not in raw, "a student's /api/info holds no trace path")
    st, j, raw, _ = req("GET", "/api/info", key=tkey, src=1)
    check(st == 200 and j.get("db") and j.get("command"), "the teacher's does, and the command line")

    # 2. Nothing of another's request, even from events that name no request.
    results = {}

    def run(key, src, text):
        results[src] = chat(key, text, max_tokens=16, src=src % 100, ignore_eos=True)
    # several at once, each generating to its cap: some of Ana's and Ben's share steps
    ts = [threading.Thread(target=run, args=(k, s + 100 * i, t)) for i in range(4) for k, s, t in
          ((ka, 11, "Tell me a story"), (kb, 12, "Count to ten"))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    idb = results[12][3]
    time.sleep(1.5)
    own_a = {x["request"] for x in req("GET", "/api/requests", key=ka, src=11)[1]["requests"]}
    con = sqlite3.connect(db)
    run_id = con.execute("SELECT max(id) FROM runs").fetchone()[0]
    batches = [set(json.loads(r[0])) for r in
               con.execute("SELECT json_extract(args, '$.requests') FROM slices WHERE run_id = ? AND name = 'step'", (run_id,))]
    together = sum(1 for b in batches if idb in b and b & own_a)
    nulls = con.execute("SELECT count(*) FROM slices WHERE run_id = ? AND name = 'sample' AND request IS NULL", (run_id,)).fetchone()[0]
    check(nulls == 0, f"every sampled token names its request ({nulls} without)")
    ids = [r[0] for r in con.execute("SELECT id FROM slices WHERE run_id = ? ORDER BY id", (run_id,))]
    seen = leaks = readable = own_chunks = batch_args = 0
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=("127.0.0.11", 0))
    for sid in ids:
        c.request("GET", f"/api/slices/{sid}", headers={"Authorization": f"Bearer {ka}"})
        r = c.getresponse()
        body = r.read()
        seen += 1
        if r.status != 200:
            continue
        readable += 1
        s = json.loads(body)
        args = s.get("args", {})
        if s.get("request") not in (None, *own_a) or (s.get("request") is None and s["name"] == "sample"):
            leaks += 1
        ids_in, chunks = args.get("requests"), args.get("chunks")
        if isinstance(ids_in, str):   # the trace keeps a step's ids as JSON text
            ids_in = json.loads(ids_in)
        if isinstance(ids_in, list) and (set(ids_in) - own_a or set(args) - {"requests", "chunks", "batch_size"}):
            leaks += 1
        if chunks is not None and (not isinstance(chunks, list) or   # a student's own prompt's chunks only
                                   any(not isinstance(c, dict) or c.get("req") not in own_a for c in chunks)):
            leaks += 1
        if s.get("request") is None and ids_in is None and args:   # a forward's, an op's tokens: the batch's
            leaks += 1
            batch_args += 1
        own_chunks += len(chunks or [])
    c.close()
    check(together > 0, f"Ben's request {idb} shared a step with Ana's ({together} steps): the case to guard")
    check(leaks == 0, f"of {seen} events Ana may read {readable}: none is Ben's, no step lists Ben's id or chunk ({leaks} leaks); "
                      f"her own prompts' chunks are there ({own_chunks})")
    check(own_chunks > 0, f"a step shows Ana the chunks of her own prompts ({own_chunks})")
    check(batch_args == 0, f"no event of the batch's (a forward, an op) shows Ana its args ({batch_args})")
    # The prefix cache: Ben's exact words are no hit for Ana (her guess is not
    # confirmed), and her own repeat is one (so the cache is on).
    secret = "pin 4321 pass hunter2 locker 77"   # 27 tokens with the template: one whole block to hit
    chat(kb, secret, src=12)
    cached = lambda k, src: (chat(k, secret, src=src)[1] or {}).get("usage", {}).get("prompt_tokens_details", {}).get("cached_tokens")
    ana1, ana2 = cached(ka, 11), cached(ka, 11)
    check(ana1 == 0 and (ana2 or 0) > 0, f"Ben's prompt, sent again by Ana: {ana1} cached tokens; by Ana once more: {ana2}")
    st, j, raw, _ = req("GET", f"/api/requests/{idb}/events", key=ka, src=11)
    check(st == 403, f"Ana does not read Ben's timeline ({st})")

    # The clock a student's stamp names is not taken: their windows stay where the run is.
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=("127.0.0.11", 0))
    c.request("POST", "/v1/chat/completions", headers={"Authorization": f"Bearer {ka}", "Content-Type": "application/json"},
              body=json.dumps({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "stream": True}))
    stamp = next((l for l in c.getresponse().read().decode().splitlines() if l.startswith(": hipath-clock ")), ": hipath-clock 0:0:0")
    c.close()
    pid = stamp.split()[2].split(":")[0]
    st, j, raw, r = req("POST", "/v1/chat/completions", key=ka, src=11, headers={"X-Hipath-Clock": f"{pid}:4000000000000000000:0"},
                        body={"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2})
    late = int(r.getheader("X-Request-Id") or 0)
    time.sleep(1.5)
    st, j, raw, _ = req("GET", f"/api/requests/{late}", key=ka, src=11)
    check(st == 200 and j["end_ns"] < 1e13, f"a student's X-Hipath-Clock of 4e18 ns is not taken (request {late} ends at {(j or {}).get('end_ns')} ns)")

    # Refusals before a request has an id leave nothing in the trace (anyone could fill it).
    for i in range(300):
        req("GET", f"/v1/nothing-{'x' * 150}", src=40)
    time.sleep(1.5)
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM slices WHERE run_id = ? AND name = 'reject' AND (request IS NULL OR request <= 0)",
                    (run_id,)).fetchone()[0]
    check(n == 0, f"300 keyless 404s left {n} events in the trace")

    # 3. One parser: a repeated parameter is refused; a student stays in the served run.
    for path in (f"/api/requests/{ida}?run={run_id}&run=1", f"/api/slices/{ids[0]}?run={run_id}&run=1",
                 f"/api/requests?limit=5&limit=6"):
        st, j, raw, _ = req("GET", path, key=ka, src=11)
        check(st == 400 and b"hunter2" not in raw, f"GET {path} -> {st} {err(j)}")
    st, j, raw, _ = req("GET", f"/api/requests/1?run=1", key=ka, src=11)
    check(st == 403 and b"hunter2" not in raw, f"an earlier class's request (run 1) -> {st}")
    st, j, raw, _ = req("GET", f"/api/requests/1?run=1", key=tkey, src=1)
    check(st == 200 and b"hunter2" in raw, f"the teacher still reads run 1 ({st})")

    # 4. A prompt over the student's cap is refused before it is prefilled; the teacher's is not.
    long = "word " * 300
    st, j, raw, _ = chat(ka, long, max_tokens=1, src=11)
    check(st == 400 and err(j) == "prompt_over_cap", f"a {len(long.split())}-word prompt from a student -> {st} {err(j)}")
    st, j, raw, _ = chat(tkey, long, max_tokens=1, src=1)
    check(st == 200, f"... and from the teacher -> {st}")

    # 7. A client report: a few kB, no more than the request it reports.
    st2, j2, raw2, idr = chat(kb, "Hi", max_tokens=4, src=12, stream=True)
    time.sleep(1.2)
    big = {"build_ms": 1, "sent_ms": 2, "first_byte_ms": 3, "done_ms": 4, "status": 200, "json": "x" * 200000,
           "tokens": [{"ms": 5, "text": "y"}]}
    st, j, raw, _ = req("POST", f"/api/requests/{idr}/client", key=kb, src=12, body=big)
    check(st == 413, f"a 200 kB report -> {st} {err(j)}")
    many = dict(big, json="{}", tokens=[{"ms": 5, "text": "y" * 1000}] * 60)
    st, j, raw, _ = req("POST", f"/api/requests/{idr}/client", key=kb, src=12, body=many)
    check(st == 400 and err(j) == "invalid_parameter", f"a report of more tokens than were streamed -> {st} {err(j)}")
    before = req("GET", f"/api/requests/{idr}", key=kb, src=12)[1]["start_ns"]
    sl = stamp.split()[2]
    far = dict(big, json="{}", tokens=[], build_ms=1000, first_stamp=sl, last_stamp=sl)
    st, j, raw, _ = req("POST", f"/api/requests/{idr}/client", key=kb, src=12, body=far)
    after = req("GET", f"/api/requests/{idr}", key=kb, src=12)[1]["start_ns"]
    check(st == 200 and before - after <= 10e6, f"a report's build_ms of 1 s moves its window's start {(before - after) / 1e6:.1f} ms back (10 at most)")

    # 8. One student's loops do not starve the teacher's page, and meet a limit of their own.
    codes, tcodes, stop = [], [], time.time() + 6

    def hammer():
        cc = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=("127.0.0.11", 0))
        while time.time() < stop:
            cc.request("GET", f"/api/requests/{ida}/events?from=0&to=9000000000000000000&px=8000",
                       headers={"Authorization": f"Bearer {ka}"})
            r = cc.getresponse()
            r.read()
            codes.append(r.status)
            if r.getheader("Connection", "").lower() == "close":
                cc.close()
                cc = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=("127.0.0.11", 0))
    hs = [threading.Thread(target=hammer) for _ in range(80)]
    for h in hs:
        h.start()
    while time.time() < stop:
        tcodes.append(req("GET", "/api/workshop/requests", key=tkey, src=1)[0])
    for h in hs:
        h.join()
    check(tcodes and all(x == 200 for x in tcodes), f"the teacher's {len(tcodes)} polls under 80 loops of one student: {sorted(set(tcodes))}")
    check(429 in codes and 503 not in codes, f"the student's {len(codes)} queries: {sorted(set(codes))} (429 past the key's share)")

    # 10. Concurrent requests: each is its sender's, at once.
    got = []

    def own(key, src):
        st, j, raw, rid = chat(key, "Hi", max_tokens=1, src=src)
        got.append((key, src, rid, st))
    ts = [threading.Thread(target=own, args=((ka, 11) if i % 2 else (kb, 12))) for i in range(60)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    mine = {k: {x["request"] for x in req("GET", "/api/requests?limit=500", key=k, src=s)[1]["requests"]} for k, s in ((ka, 11), (kb, 12))}
    time.sleep(1.5)
    mine = {k: {x["request"] for x in req("GET", "/api/requests?limit=500", key=k, src=s)[1]["requests"]} for k, s in ((ka, 11), (kb, 12))}
    lost = [rid for key, src, rid, st in got if st == 200 and rid not in mine[key]]
    check(not lost and all(st == 200 for *_, st in got), f"60 concurrent requests of two students: each lists its own ({len(lost)} lost)")

    # 11. /api alone routes nowhere.
    for path in ("/api", "/api?runs", "/api?info"):
        st, j, raw, _ = req("GET", path, key=tkey, src=1)
        check(st == 404, f"GET {path} -> {st}")

    # 6. The teacher removes a student: their key opens nothing after.
    st, j, raw, _ = req("DELETE", "/api/workshop/students/2", key=ka, src=11)
    check(st == 403, f"a student cannot remove another ({st})")
    st, j, raw, _ = req("DELETE", "/api/workshop/students/2", key=tkey, src=1)
    check(st == 200, f"the teacher removes Ben ({st})")
    st1 = chat(kb, "Hi", src=12)[0]
    st2 = req("GET", "/api/requests", key=kb, src=12)[0]
    check(st1 == 401 and st2 == 401, f"Ben's key after: /v1/ {st1}, /api/ {st2}")
    st, j, raw, _ = req("GET", "/api/workshop", key=tkey, src=1)
    check(st == 200 and any(s["student"] == 2 and s.get("removed") for s in j["students"]), "the teacher's list says he was removed")
    st, j = join(code, "Ben again", src=12)
    check(st == 403 and err(j) == "removed_by_teacher", f"and his address cannot join again: {st} {err(j)}")

    # A keyless join is answered at once and bounded: it never waits beside the teacher's work.
    st, j, raw, _ = req("POST", "/api/workshop/join", body=b'{"code":"' + b"1," * 50000 + b'"}', src=41)
    check(st == 413, f"a 100 kB join body -> {st}")


def join_limits(code, tkey):
    # 12. Names: no format or control characters, no surrogates, normalized, unique.
    for name, what in (("A\u200bna", "a zero-width space"), ("\u202eevil", "a right-to-left override"),
                       ("a\u0000b", "a NUL"), ("   ", "only spaces"), ("\u3164", "a Hangul filler"),
                       ("\u2800", "a braille blank"), ("a\u00a0b", "a no-break space"), ("a\u3000b", "an ideographic space"),
                       ("x\u034fx", "a grapheme joiner"), ("x\ufe0fx", "a variation selector"),
                       ("e" + "\u0301" * 5, "five stacked accents")):
        st, j = join(code, name, src=20)
        check(st == 400, f"a name with {what} -> {st}")
    st, j, raw, _ = req("POST", "/api/workshop/join", body=b'{"code":"' + code.encode() + b'","name":"a\xed\xa0\x80b"}', src=20)
    check(st == 400, f"a name with a surrogate's bytes -> {st}")
    s1, j1 = join(code, "Ana", src=21)
    s2, j2 = join(code, "Ana", src=22)
    s3, j3 = join(code, "A\u0301na\u0301", src=23)
    check(s1 == s2 == 200 and j1["name"] == "Ana" and j2["name"] == "Ana #2", f"a second Ana joins as '{(j2 or {}).get('name')}'")
    check(s3 == 200 and j3["name"] == "\u00c1n\u00e1", f"a name is NFC-normalized ({(j3 or {}).get('name')!r})")

    # 6. Seats per address, and JSON only.
    sts = [join(code, f"seat{i}", src=30)[0] for i in range(5)]
    check(sts[:3] == [200] * 3 and sts[3:] == [403, 403], f"five joins from one address: {sts}")
    st, j = join(code, "plain", src=31, ctype="text/plain")
    check(st == 415, f"a join sent as text/plain (another site's form) -> {st}")

    # 5. Wrong codes from many addresses: past 60 a minute the server refuses
    # every join but those of addresses that already joined.
    wrong = "".join("A" if ch != "A" else "B" for ch in code)
    sts = [join(wrong, "guess", src=40 + i % 200)[0] for i in range(70)]
    check(sts.count(403) <= 60 and sts[-1] == 429, f"70 wrong codes from 70 addresses: {sts.count(403)} 403s, then {sts[-1]}")
    st, j = join(code, "late", src=250)
    check(st == 429, f"the right code from a new address during the lockout -> {st}")
    st, j = join(code, "Ana's friend", src=21)
    check(st == 200, f"the right code from an address that joined already -> {st}")


def slow(timeout_s, n):
    # 9. Connections that trickle their headers are closed when their time is up.
    socks = []
    for i in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        socks.append(s)
    closed, t0 = set(), time.time()
    while len(closed) < n and time.time() - t0 < timeout_s + 30:
        for i, s in enumerate(socks):
            if i in closed:
                continue
            try:
                s.sendall(b"X")   # one byte a half second: never idle
                s.settimeout(0.001)
                if s.recv(1 << 16) == b"":
                    closed.add(i)
            except socket.timeout:
                pass
            except OSError:
                closed.add(i)
        time.sleep(0.5)
    check(len(closed) == n, f"{len(closed)} of {n} trickling connections closed by the server within its {timeout_s} s")
    for s in socks:
        s.close()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/health")
    check(c.getresponse().status == 200, "then /health is answered")


if mode == "room":
    room(sys.argv[3], sys.argv[4], sys.argv[5])
elif mode == "join":
    join_limits(sys.argv[3], sys.argv[4])
else:
    slow(int(sys.argv[3]), int(sys.argv[4]))
done()
