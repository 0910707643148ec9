#!/bin/sh
# One truthful timeline under simulation: flows down and back up, client
# figures that are the trace's critical path, clocks never mixed silently,
# TTFT rising with the prompt even on a busy machine (tests/timeline.py).
cd "$(dirname "$0")/.." || exit 1
[ -x build/hipath ] || { echo "no build/hipath: run make first"; exit 77; }
command -v protoc >/dev/null 2>&1 || { echo "no protoc"; exit 77; }
python3 tests/timeline.py build/hipath
