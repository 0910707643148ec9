#!/bin/sh
# Every worked number of chapter 1 of the AI-infrastructure textbook
# (../shared/seeds/ai-infra-ch1.zh-Hant.txt) against `hipath bounds --json`
# and `hipath amdahl --json`, within 0.5% (tests/chapter_numbers.py), and
# docs/bounds.md's table of them as the test prints it.
cd "$(dirname "$0")/.." || exit 1
HIPATH=${HIPATH:-build/hipath}
export HIPATH
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
[ -x "$HIPATH" ] || { echo "FAIL: $HIPATH is not built (run make)"; exit 1; }
mkdir -p build/chapter || exit 1
fail=0
python3 tests/chapter_numbers.py || fail=1

# The table in docs/bounds.md sits between two marker lines.
python3 tests/chapter_numbers.py --markdown > build/chapter/table.md || fail=1
sed -n '/^<!-- chapter-table/,/^<!-- \/chapter-table/p' docs/bounds.md | sed '1d;$d' > build/chapter/docs.md
if cmp -s build/chapter/table.md build/chapter/docs.md; then echo "ok   docs/bounds.md holds the chapter's table as printed"
else
  echo "FAIL docs/bounds.md's chapter table is not what 'python3 tests/chapter_numbers.py --markdown' prints:"
  diff build/chapter/docs.md build/chapter/table.md | head -20
  fail=1
fi
exit $fail
