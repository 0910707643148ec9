"""Random scripts for the block manager, replayed by it (tests/blocks/replay.c)
and by its model (model.py), compared line by line: what each operation did
(hits, blocks needed, taken or short) and the state after it (the free
queue in order, evictions, each sequence's blocks).

    python3 fuzz.py REPLAY CASES SEED

Small vocabularies (prompts share prefixes and whole blocks often), small
pools (cached blocks are evicted), blocks of 1 to 4 ids. Prints the first
differing line of each failed case, then "N passed, N failed".
"""
import random, subprocess, sys
from model import Pool, Seq

SLOTS = 4
seen = {"hits": 0, "hits through a copy of their prefix": 0, "evictions": 0, "short allocations": 0}


def state(pool, seqs):
    lines = ["free %d:%s | evictions %d" % (len(pool.free), "".join(" %d" % i for i in pool.free), pool.evictions)]
    for s, q in enumerate(seqs):
        if q.blocks:
            lines.append("%d:%s | len %d" % (s, "".join(" %d" % i for i in q.blocks), q.len))
    return lines


def hits(what, hit, pool):
    seen["hits"] += len(hit)
    seen["hits through a copy of their prefix"] += sum(pool.b[hit[j]].parent[0] != hit[j - 1] for j in range(1, len(hit)))
    return "%s [%s]" % (what, " ".join(map(str, hit)))


def case(rng):
    """One script: (its lines, the model's output for them)."""
    n_blocks, bs = rng.randint(2, 12), rng.randint(1, 4)
    pool, seqs, ids = Pool(n_blocks, bs, rng.random() < 0.9), [Seq() for _ in range(SLOTS)], [[] for _ in range(SLOTS)]
    vocab, prompts = rng.randint(2, 3), []
    script, out = ["init %d %d %d" % (n_blocks, bs, pool.caching)], ["init"] + state(pool, seqs)

    def prompt():   # often an earlier prompt's start, then a few ids of its own
        most = n_blocks * bs   # what the pool holds
        stem = rng.choice(prompts)[:rng.randint(0, min(3 * bs, most - 1))] if prompts and rng.random() < 0.7 else []
        p = stem + [rng.randrange(vocab) for _ in range(rng.randint(1, most - len(stem)))]
        prompts.append(p)
        return p

    for _ in range(rng.randint(10, 50)):
        busy = [s for s in range(SLOTS) if seqs[s].blocks]
        free = [s for s in range(SLOTS) if not seqs[s].blocks]
        op = rng.choice(["admit"] * 3 * bool(free) + ["grow", "compute", "compute", "release"] * bool(busy) + ["lookup"])
        if op == "admit":
            s, p = rng.choice(free), prompt()
            chunk = rng.randint(1, len(p))
            ids[s] = list(p)
            hit = pool.lookup(p, len(p) - 1)
            length = min(len(hit) * bs + chunk, len(p))
            need = pool.needed(seqs[s], hit, length)
            script.append("admit %d %d %s" % (s, chunk, " ".join(map(str, p))))
            taken = pool.allocate(seqs[s], hit, length)
            out.append(hits("admit: hit", hit, pool) + " needed %d %s" % (need, "ok" if taken else "short"))
        elif op == "grow":
            s = rng.choice(busy)
            more = [rng.randrange(vocab) for _ in range(rng.randint(0, 2 * bs))]
            ids[s] += more
            length = rng.randint(seqs[s].len, len(ids[s]))
            script.append("grow %d %d %s" % (s, length, " ".join(map(str, more))))
            need = pool.needed(seqs[s], [], length)
            out.append("grow: needed %d %s" % (need, "ok" if pool.allocate(seqs[s], [], length) else "short"))
        elif op == "compute":
            s = rng.choice(busy)
            n = rng.randint(seqs[s].len, min(len(ids[s]), len(seqs[s].blocks) * bs))
            seqs[s].len = n
            pool.commit(seqs[s], ids[s], n)
            script.append("compute %d %d" % (s, n))
            out.append("compute: hashed %d" % seqs[s].hashed)
        elif op == "release":
            s = rng.choice(busy)
            pool.release(seqs[s])
            script.append("release %d" % s)
            out.append("release")
        else:
            p = rng.choice(prompts) if prompts and rng.random() < 0.8 else [rng.randrange(vocab) for _ in range(rng.randint(1, 3 * bs))]
            script.append("lookup %s" % " ".join(map(str, p)))
            out.append(hits("lookup: hit", pool.lookup(p, len(p)), pool))
        out += state(pool, seqs)
        seen["short allocations"] += out[-len(state(pool, seqs)) - 1].endswith("short")
    seen["evictions"] += pool.evictions
    return script, out


def main():
    replay, n_cases, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed)
    cases = [case(rng) for _ in range(n_cases)]
    text = "".join(line + "\n" for script, _ in cases for line in script)
    p = subprocess.run([replay], input=text, capture_output=True, text=True)
    if p.returncode:
        print("FAIL %s: exit %d: %s" % (replay, p.returncode, p.stderr.strip()[-500:]))
    got = p.stdout.split("\n")
    passed = failed = at = 0
    for script, want in cases:
        mine, at = got[at:at + len(want)], at + len(want)
        if mine == want:
            passed += 1
            continue
        failed += 1
        if failed <= 3:
            k = next(i for i in range(len(want)) if i >= len(mine) or mine[i] != want[i])
            print("FAIL case %d: output line %d: %r, the model's %r\n  script:\n    %s" %
                  (passed + failed - 1, k + 1, mine[k] if k < len(mine) else None, want[k], "\n    ".join(script)))
    print("%s: %d cases, %d operations; %s" % (replay, n_cases, sum(len(s) for s, _ in cases),
                                              ", ".join("%s %d" % (k, v) for k, v in seen.items())))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or p.returncode else 0


sys.exit(main())
