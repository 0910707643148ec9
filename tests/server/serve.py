"""Start `hipath serve` on a free port from Python (the checks' own clients)."""
import re, subprocess, time


def start(hipath, args, log_path, **popen):
    """hipath serve --port 0 ARGS, its output in log_path: (process, port);
    port None when it did not start (the log says why)."""
    log = open(log_path, "w+")
    p = subprocess.Popen([hipath, "serve", "--port", "0"] + args, stdout=log, stderr=log, **popen)
    for _ in range(300):
        log.seek(0)
        m = re.search(r"127\.0\.0\.1:(\d+)/v1", log.read())
        if m:
            return p, int(m.group(1))
        if p.poll() is not None:
            break
        time.sleep(0.1)
    return p, None
