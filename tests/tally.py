"""tally.py -- what the tests' Python recomputations share: a check prints
only when it fails, and the runner's summary line and exit status."""
import sys

passed = failed = 0


def check(ok, what):
    global passed, failed
    passed += bool(ok)
    failed += not ok
    if not ok:
        print("FAIL", what)


def close(a, b, rel=1e-6):
    """a and b agree to rel of the larger (None agrees with nothing)."""
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


def done():
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
