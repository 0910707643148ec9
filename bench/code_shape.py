"""code_shape.py -- the shape of the code, to compare before and after a
redesign: the largest files, the longest functions (lizard, PyPI: counted
by an independent parser) and the include graph between folders, with any
circle in it. Prints figures; checks nothing.
usage: python3 bench/code_shape.py [TREE]   (default: this checkout)"""
import collections, os, re, subprocess, sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
os.chdir(root)
TOPS = ("layers", "kernels", "trace", "web/server", "cli", "labs", "stack")
files = sorted(os.path.join(d, f) for top in TOPS if os.path.isdir(top)
               for d, _, fs in os.walk(top) for f in fs if f.endswith((".c", ".h")))

print("largest files (lines):")
sizes = sorted(((sum(1 for _ in open(f, errors="replace")), f) for f in files), reverse=True)
for n, f in sizes[:10]:
    print(f"  {n:5d}  {f}")
print(f"  {sum(n for n, _ in sizes)} lines in {len(sizes)} files")

try:
    out = subprocess.run(["lizard", "-l", "c", *[f for f in files if f.endswith(".c")]], capture_output=True, text=True).stdout
    funcs = {(int(m.group(1)), m.group(2)) for m in re.finditer(r"^\s*(\d+)\s+\d+\s+\d+\s+\d+\s+\d+\s+(\S+@\S+)$", out, re.M)}
    print("longest functions (lines of code, lizard):")
    for n, f in sorted(funcs, reverse=True)[:10]:
        print(f"  {n:5d}  {f}")
except FileNotFoundError:
    print("longest functions: lizard missing (pip install lizard)")


def folder(path):
    parts = path.split("/")
    return "/".join(parts[:2]) if parts[0] in ("layers", "web", "kernels") and len(parts) > 2 else parts[0]


edges = collections.Counter()
for f in files:
    for m in re.finditer(r'^#include "([^"]+)"', open(f, errors="replace").read(), re.M):
        a, b = folder(f), folder(m.group(1))
        if a != b:
            edges[a, b] += 1
print("includes between folders (from -> to: files' #include lines):")
for (a, b), n in sorted(edges.items()):
    print(f"  {a:18s} -> {b:18s} {n}")
circles = sorted({tuple(sorted((a, b))) for (a, b) in edges if (b, a) in edges})
print("folders that include each other:", ", ".join(f"{a} <-> {b}" for a, b in circles) or "none")
