#!/usr/bin/env python3
"""Checks a generate --json record against a reference record.

    compare.py REF.json OTHER.json [--tol 1e-3] [--name CASE]

Passes when prompt_ids and greedy ids are equal and, at every step, the chosen
token's logprob and each top-K (id, logprob) agree within tol. Two ids may swap
ranks only if their logprobs are within tol of each other (a near-tie). Prints one
line; exits 1 at the first differing step.
"""
import argparse
import json
import sys


def step_error(r, o, tol):
    """None if step record o agrees with reference step r, else why not."""
    if o["id"] != r["id"]:
        return f"greedy id {o['id']} != reference {r['id']}"
    if abs(o["logprob"] - r["logprob"]) > tol:
        return f"logprob of id {r['id']}: {o['logprob']:.6f} vs reference {r['logprob']:.6f}"
    rtop, otop = r["top"], o["top"]
    if len(otop) != len(rtop):
        return f"{len(otop)} top entries vs reference {len(rtop)}"
    ref_lp = {i: lp for i, lp in rtop}
    for rank, ((rid, rlp), (oid, olp)) in enumerate(zip(rtop, otop)):
        if abs(olp - rlp) > tol:
            return f"top[{rank}] logprob {olp:.6f} (id {oid}) vs reference {rlp:.6f} (id {rid})"
        if oid == rid:
            continue
        # A swap: oid must be a near-tie, either inside the reference's top-K at the
        # same logprob, or just outside it (then it ties with the reference's last entry).
        if oid in ref_lp:
            tied = abs(ref_lp[oid] - olp) <= tol
        else:
            tied = abs(rtop[-1][1] - olp) <= tol
        if not tied:
            return f"top[{rank}] id {oid} vs reference {rid}, not a near-tie"
    if len({i for i, _ in otop}) != len(otop):
        return "duplicate ids in top"
    return None


def compare(ref, other, tol):
    """(error or None, steps checked, largest |logprob difference| seen)."""
    if other.get("prompt_ids") != ref["prompt_ids"]:
        return f"prompt_ids {other.get('prompt_ids')} vs reference {ref['prompt_ids']}", 0, 0.0
    worst = 0.0
    steps = other.get("logprobs", [])
    for s, r in enumerate(ref["logprobs"]):
        if s >= len(steps):
            return f"step {s}: missing (only {len(steps)} steps)", s, worst
        err = step_error(r, steps[s], tol)
        if err:
            return f"step {s}: {err}", s, worst
        worst = max([worst] + [abs(a[1] - b[1]) for a, b in zip(r["top"], steps[s]["top"])])
    if len(steps) != len(ref["logprobs"]) or other.get("ids") != ref["ids"]:
        return f"ids {other.get('ids')} vs reference {ref['ids']}", len(steps), worst
    return None, len(steps), worst


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ref")
    ap.add_argument("other")
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--name", default=None)
    a = ap.parse_args()
    name = a.name or a.other
    try:
        with open(a.ref) as f:
            ref = json.load(f)
        with open(a.other) as f:
            other = json.load(f)
        err, n, worst = compare(ref, other, a.tol)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as e:
        err, n, worst = f"unreadable record: {type(e).__name__}: {e}", 0, 0.0
    if err:
        print(f"FAIL {name}: {err}")
        sys.exit(1)
    print(f"PASS {name}: {n} steps, max |dlogprob| {worst:.2e} (tol {a.tol:g})")


if __name__ == "__main__":
    main()
