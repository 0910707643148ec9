#!/bin/sh
# The code obeys the layer diagram: tests/check_layers.py (docs/architecture.md, "The rule").
cd "$(dirname "$0")/.." || exit 1
python3 tests/check_layers.py build
