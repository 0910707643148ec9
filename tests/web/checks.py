"""checks.py -- what the web checks' Python scripts share: one line per
check, "ok   ..." or "FAIL ...", and an exit status that says whether any failed."""
import sys

failed = 0


def check(ok, what):
    global failed
    failed += not ok
    print(("ok   " if ok else "FAIL ") + what)
    return ok


def done():
    sys.exit(1 if failed else 0)
