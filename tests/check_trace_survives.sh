#!/bin/sh
# Traces that survive (issue 15): (1) `hipath serve --trace-db` SIGKILLed
# under a streaming load of 4 clients, TRACE_KILLS times (default 5; the
# issue's 20: TRACE_KILLS=20): each database passes integrity_check and
# holds every request its clients saw finish more than 2 s before the kill
# (tests/server/kill.py). (2) A trace that cannot be written (the file size
# limit stands in for a full disk) makes run, generate and serve exit 1
# with the reason, after the reply.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}   # the load needs speed: not the ASan build
[ -x "$HIPATH" ] || { echo "$HIPATH missing: run make"; exit 1; }
MODEL=models/tiny-hi
[ -f $MODEL/tokenizer.json ] || { echo "no $MODEL: skipped"; exit 77; }
OUT=$(mktemp -d "${TMPDIR:-/tmp}/check_trace_survives.XXXXXX") || exit 1
trap 'rm -rf "$OUT"' EXIT
fail=0

python3 tests/server/kill.py "$HIPATH" $MODEL "$OUT" "${TRACE_KILLS:-5}" || fail=1

python3 - "$HIPATH" $MODEL "$OUT" <<'EOF' || fail=1
import os, re, resource, signal, subprocess, sys, time
hipath, model, out = sys.argv[1:4]
def full_disk():   # files stop growing at 60 kB: writes past it fail (EFBIG) instead of killing the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (60000, 60000))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
trace = lambda name: ["--trace-db", "%s/%s.db" % (out, name), "--perfetto", "%s/%s.pftrace" % (out, name)]
bad = 0
for name, cmd in [("run", [hipath, "run"] + trace("run") + ["Hi"]),
                  ("generate", [hipath, "generate", "--model", model, "--prompt", "Hi"] + trace("generate"))]:
    p = subprocess.run(cmd, capture_output=True, preexec_fn=full_disk, timeout=120)
    err = p.stderr.decode()
    ok = p.returncode == 1 and "你好" in p.stdout.decode() and re.search(r"hipath: trace.*(disk|full|written)", err)
    bad += not ok
    print("%s %s with a full disk: exit %d, the reply printed, and why: %s" % ("ok  " if ok else "FAIL", name, p.returncode,
          [l for l in err.splitlines() if "trace" in l][-1:] or err[-300:]))
log = open(out + "/serve.log", "w+")
p = subprocess.Popen([hipath, "serve", "--model", model, "--port", "0"] + trace("serve"), stdout=log, stderr=log, preexec_fn=full_disk)
for _ in range(300):
    log.seek(0)
    m = re.search(r"127\.0\.0\.1:(\d+)/v1", log.read())
    if m or p.poll() is not None:
        break
    time.sleep(0.1)
for _ in range(10 if m else 0):   # enough requests to fill 60 kB of trace
    subprocess.run(["curl", "-s", "http://127.0.0.1:%s/v1/chat/completions" % m.group(1), "-H", "Content-Type: application/json",
                    "-d", '{"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 32, "ignore_eos": true}'], capture_output=True)
p.send_signal(signal.SIGTERM)
rc = p.wait(60)
log.seek(0)
err = log.read()
ok = rc == 1 and re.search(r"hipath: trace.*(disk|full|written)", err)
bad += not ok
print("%s serve with a full disk: exit %d, and why: %s" % ("ok  " if ok else "FAIL", rc, [l for l in err.splitlines() if "trace" in l][-1:]))
sys.exit(1 if bad else 0)
EOF
[ $fail -eq 0 ] && echo "check_trace_survives: all passed" || echo "check_trace_survives: FAILED"
exit $fail
