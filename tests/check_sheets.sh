#!/bin/sh
# The lab sheets, keys and docs parse as CommonMark the way they read in
# English and Chinese (tests/check_sheets.py): fences closed, twins' headings equal.
cd "$(dirname "$0")/.." || exit 1
python3 -c 'import markdown_it' 2>/dev/null || { echo "skip: markdown-it-py missing (scripts/deps-test.sh installs it)"; exit 77; }
python3 tests/check_sheets.py
