#!/usr/bin/env python3
"""check_layers.py -- the code obeys the layer diagram (docs/architecture.md).

Every source file belongs to a layer: 8 client, 7 tokenizer, 6 scheduler,
5 tensor, 4 ops, 3 kernels, 2 runtime, 1 gpu; layers/common/ is the shared
vocabulary every layer may use (layer 0); trace/ is the recorder every layer
records through, and itself uses nothing above layers/common/; web/server/,
the web front end's server side, sits above every layer (it is handed to
layer 6's server as a handler, never called by a layer); stack/ above it
assembles the whole stack (device, trace, web, server) and is the floor
that labs/ and cli/ both call down into; labs/ sits above stack/ and below
cli/; cli/, bench/ and tests/ are the top and may use anything.

The rule, checked two ways:
  includes  a file includes headers of its own layer, of layers below it,
            layers/common/ and trace/ (the layers and trace/) -- never one
            above it (labs/ never includes cli/);
  calls     every symbol an object file takes from another (nm) is defined
            in its own layer or one below, and within a layer the files do
            not call each other in a loop (a cycle: no file of it is below
            the others).
A call upward goes through a table of functions the caller was handed
(layers/scheduler/text.h, kernels/backend.h): that is a pointer, not a symbol.
Every violation is printed with file and line; exit 1 if any.
  python3 tests/check_layers.py [BUILD_DIR]   (default build: the objects of `make`)
"""
import os, re, subprocess, sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOP = 10                                 # cli/, bench/, tests/
LABS = 9                                 # labs/: below the CLI, above the stack
STACK = 8.75                             # stack/: assembles the stack, below labs/ and cli/
WEB = 8.5                                # web/server/: above the layers, below the stack
TRACE = 0.5                              # above common, below every layer
LAYERS = {"layers/common": 0, "layers/gpu": 1, "layers/runtime": 2, "kernels": 3, "layers/ops": 4,
          "layers/tensor": 5, "layers/scheduler": 6, "layers/tokenizer": 7, "layers/client": 8, "trace": TRACE,
          "web/server": WEB, "stack": STACK, "labs": LABS}
NAME = {0: "common", TRACE: "trace", 1: "1 gpu", 2: "2 runtime", 3: "3 kernels", 4: "4 ops", 5: "5 tensor",
        6: "6 scheduler", 7: "7 tokenizer", 8: "8 client", WEB: "web", STACK: "stack", LABS: "labs", TOP: "top"}


def layer_of(path):
    for prefix, n in sorted(LAYERS.items(), key=lambda kv: -len(kv[0])):
        if path == prefix or path.startswith(prefix + "/"):
            return n
    return TOP


def allowed(src, dst):
    """May a file of layer src use one of layer dst?"""
    if src == TOP:
        return True
    if dst == TOP:
        return False
    if src == TRACE:
        return dst in (0, TRACE)
    if src == 0:
        return dst == 0
    return dst <= src


def sources():
    out = []
    for d in ("layers", "kernels", "trace", "web", "stack", "cli", "labs", "bench", "tests/unit"):
        for base, _, files in os.walk(os.path.join(ROOT, d)):
            for f in files:
                if f.endswith((".c", ".h", ".hip", ".cpp")):
                    out.append(os.path.relpath(os.path.join(base, f), ROOT))
    return sorted(out)


def check_includes(bad):
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
    for src in sources():
        with open(os.path.join(ROOT, src), errors="replace") as f:
            for no, line in enumerate(f, 1):
                m = inc.match(line)
                if not m or not os.path.exists(os.path.join(ROOT, m.group(1))):
                    continue   # generated headers (build/gen) and system ones
                a, b = layer_of(src), layer_of(m.group(1))
                if not allowed(a, b):
                    bad.append(f"{src}:{no}: layer {NAME[a]} includes {m.group(1)} (layer {NAME[b]})")


def symbols(obj):
    out = subprocess.run(["nm", "--defined-only" , "-g", obj], capture_output=True, text=True).stdout
    defs = {l.split()[-1] for l in out.splitlines() if len(l.split()) == 3}
    out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True).stdout
    uses = {l.split()[-1] for l in out.splitlines() if l.split()}
    return defs, uses


def first_use(src, sym):
    with open(os.path.join(ROOT, src), errors="replace") as f:
        for no, line in enumerate(f, 1):
            if re.search(r"\b%s\b" % re.escape(sym), line):
                return no
    return 1


def find_cycle(graph):
    """A cycle in {node: {node}} as a list, or None."""
    colour, stack = {}, []
    def visit(n):
        colour[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if colour.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if not colour.get(m):
                c = visit(m)
                if c:
                    return c
        stack.pop()
        colour[n] = 2
        return None
    for n in sorted(graph):
        if not colour.get(n):
            c = visit(n)
            if c:
                return c
    return None


def check_calls(build, bad):
    objs = {}
    for base, _, files in os.walk(os.path.join(ROOT, build, "obj")):
        for f in files:
            if f.endswith(".o"):
                # NAME.o from NAME.c; a HIP build's NAME.FLAVOUR.o from NAME.hip or NAME.cpp
                stem = os.path.relpath(os.path.join(base, f), os.path.join(ROOT, build, "obj"))[:-2]
                for src in (stem + ".c", stem.split(".")[0] + ".hip", stem.split(".")[0] + ".cpp"):
                    if os.path.exists(os.path.join(ROOT, src)):
                        objs[src] = symbols(os.path.join(base, f))
                        break
    if not objs:
        bad.append(f"{build}/obj: no object files (run make first)")
        return 0
    owner = {}
    for src, (defs, _) in objs.items():
        for s in defs:
            owner[s] = src
    calls = defaultdict(lambda: defaultdict(set))   # layer -> file -> files it uses in the same layer
    for src, (_, uses) in sorted(objs.items()):
        a = layer_of(src)
        for s in sorted(uses):
            dst = owner.get(s)
            if not dst or dst == src:
                continue
            b = layer_of(dst)
            if not allowed(a, b):
                bad.append(f"{src}:{first_use(src, s)}: layer {NAME[a]} uses {s} of {dst} (layer {NAME[b]})")
            elif a == b and a != TOP:
                calls[a][src].add(dst)
    for layer, graph in sorted(calls.items()):
        cycle = find_cycle(graph)
        if cycle:
            bad.append(f"{cycle[0]}:1: layer {NAME[layer]}: files call each other in a loop: " + " -> ".join(cycle))
    return len(objs)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    bad = []
    check_includes(bad)
    n = check_calls(build, bad)
    for b in bad:
        print(b)
    print(f"check_layers: {len(sources())} sources, {n} objects: "
          + ("every include and call goes down" if not bad else f"{len(bad)} violations"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
