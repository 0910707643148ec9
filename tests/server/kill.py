#!/usr/bin/env python3
"""SIGKILL a tracing `hipath serve` under streaming load, KILLS times
(tests/check_trace_survives.sh). Each SQLite trace must pass integrity_check
and still hold every finished request (its layer-6 `finish` and `sse_done`
events) that a reader saw in it just before the kill: what was written
survives; and before the kill a request that finished after the reader's
first look must have been written too: the server keeps writing. The server writes its trace about every second; how many requests
finished more than 2 s before the kill made it in is printed, not checked
(a busy machine may delay the flusher, which runs at idle priority).

usage: kill.py HIPATH MODEL OUTDIR KILLS
Exit 0 when every kill passes; one line per kill."""
import http.client, json, os, random, sqlite3, sys, threading, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve import start  # noqa: E402

hipath, model, out, kills = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
CLIENTS, GRACE = 4, 2.0
random.seed(15)


def client(port, done, stop):
    """Stream requests one after another; note each one's id and when its [DONE] came."""
    while not stop.is_set():
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            c.request("POST", "/v1/chat/completions", json.dumps({"messages": [{"role": "user", "content": "Hi"}],
                      "stream": True, "max_tokens": random.randint(16, 64), "ignore_eos": True}),
                      {"Content-Type": "application/json"})
            r = c.getresponse()
            rid = int(r.getheader("X-Request-Id"))
            while True:
                line = r.readline()
                if not line or line.startswith(b"data: [DONE]"):
                    break
            if line:
                done.append((rid, time.monotonic()))
            c.close()
        except (OSError, http.client.HTTPException, TypeError):
            return   # the server is gone


def finished(uri):
    """The ids of the requests whose layer-6 finish and sse_done are in the trace."""
    try:
        con = sqlite3.connect(uri, uri=uri.startswith("file:"))
        have = {}
        for rid, name in con.execute("SELECT request, name FROM slices WHERE layer = 6 AND name IN ('finish', 'sse_done')"):
            have.setdefault(rid, set()).add(name)
        con.close()
    except sqlite3.Error:   # not made yet
        return set()
    return {rid for rid, names in have.items() if names == {"finish", "sse_done"}}


bad = 0
for k in range(kills):
    db, pf = "%s/kill%d.db" % (out, k), "%s/kill%d.pftrace" % (out, k)
    log = "%s/kill%d.log" % (out, k)
    p, port = start(hipath, ["--model", model, "--trace-db", db, "--perfetto", pf], log)
    if not port:
        print("FAIL kill %d: the server did not start: %s" % (k, open(log).read()[-300:]))
        p.kill()
        sys.exit(1)
    done, stop = [], threading.Event()
    threads = [threading.Thread(target=client, args=(port, done, stop)) for _ in range(CLIENTS)]
    for t in threads:
        t.start()
    # A random moment over more than one of the flusher's 1 s periods; the
    # waits below (a write seen, then another) make sure it has written.
    load_s = random.uniform(1.5, 3)
    time.sleep(load_s)
    # Something written to keep, then a request that finished after that
    # look written too: the flusher goes on (however slowly: not timed).
    seen, deadline = set(), time.monotonic() + 120
    while not seen and time.monotonic() < deadline:
        seen = finished("file:%s?mode=ro" % db)
        time.sleep(0.2)
    t_look, later = time.monotonic(), set()
    while not later and time.monotonic() < deadline + 120:
        time.sleep(0.2)
        now = finished("file:%s?mode=ro" % db)
        later = now & {rid for rid, t in done if t > t_look}
        seen |= now
    t_kill = time.monotonic()
    p.kill()
    p.wait()
    stop.set()
    for t in threads:
        t.join()
    con = sqlite3.connect(db)
    ok = con.execute("PRAGMA integrity_check").fetchone()[0]
    rows = con.execute("SELECT count(*) FROM slices").fetchone()[0]
    con.close()
    have = finished(db)
    old = [rid for rid, t in done if t_kill - t > GRACE]
    lost = seen - have
    good = ok == "ok" and seen and later and not lost
    bad += not good
    print("%s kill %d after %.1f s of load: integrity %s, %d slices; %d finished requests seen in the trace before the kill, "
          "%d of them lost%s, %d written after the first look; %d of %d requests that finished more than %g s before the kill were in it (not checked)"
          % ("ok  " if good else "FAIL", k, load_s, ok, rows, len(seen), len(lost), (" (ids %s)" % sorted(lost)[:10]) if lost else "", len(later),
             len(have.intersection(r for r in old)), len(old), GRACE))
    if good:
        for f in (db, db + "-wal", db + "-shm", pf, log):
            if os.path.exists(f):
                os.remove(f)
sys.exit(1 if bad else 0)
