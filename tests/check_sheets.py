#!/usr/bin/env python3
"""check_sheets.py -- every lab sheet, key and index renders as written: parsed
by markdown-it-py (CommonMark), each code fence closes and names at most a
language (a fence opened with text after it swallows the page up to the next
fence), and a Chinese twin (X.zh.md) has the headings of its English original
(level for level) and its fences (language for language)."""
import glob
import re
import sys

from markdown_it import MarkdownIt

MD = MarkdownIt("commonmark")
WORD = re.compile(r"^[\w+-]*$")


def shape(path):
    """(problems, headings, fences) of one file: headings as levels, fences as languages."""
    text = open(path, encoding="utf-8").read()
    lines = text.split("\n")
    problems, heads, fences = [], [], []
    for t in MD.parse(text):
        if t.type == "heading_open":
            heads.append(t.tag)
        if t.type != "fence":
            continue
        fences.append(t.info.strip())
        start, end = t.map
        if not WORD.match(t.info.strip()):
            problems.append(f"line {start + 1}: a fence opened with text after it: {lines[start][:60]}")
        last = lines[end - 1].strip() if end > start + 1 else ""
        if not (last.startswith(t.markup) and set(last) == {t.markup[0]}):
            problems.append(f"line {start + 1}: a fence that never closes (it runs to line {end})")
    return problems, heads, fences


def main():
    files = sorted(glob.glob("labs/*.md") + glob.glob("labs/answers/*.md") + glob.glob("docs/*.md"))
    bad = 0
    for path in files:
        problems, heads, fences = shape(path)
        twin = path.replace(".zh.md", ".md")
        if twin != path:
            _, h, f = shape(twin)
            if heads != h:
                problems.append(f"headings {' '.join(heads)} against {twin}'s {' '.join(h)}")
            if fences != f:
                problems.append(f"fences {fences} against {twin}'s {f}")
        for p in problems:
            print(f"FAIL {path}: {p}"); bad = 1
    print(f"{'FAIL' if bad else 'ok'} {len(files)} sheets, keys and pages parsed (CommonMark)")
    return bad


def self_test():
    """Made-up pages the check must refuse, and one it must pass."""
    import tempfile, os
    cases = {"```sh\nls\n```\n": 0, "```\nls\n": 1, "```sh\nls\n```\n```# text\n\n## h\n": 1, "```text more\nx\n```\n": 1}
    bad = []
    for text, want in cases.items():
        with tempfile.NamedTemporaryFile("w", suffix=".md", delete=False) as f:
            f.write(text)
        if bool(shape(f.name)[0]) != bool(want):
            bad.append(text)
        os.unlink(f.name)
    print(f"{'FAIL' if bad else 'ok'} the parse check on made-up pages: {len(cases) - len(bad)} of {len(cases)}" + (f": {bad}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(self_test() or main())
