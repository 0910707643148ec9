#!/usr/bin/env python3
"""check_lab_keys.py OUT -- every figure the answer keys quote from `hipath lab N`
against what it printed this time (OUT/labN/labN.json), so a key that no longer
matches the code fails. Each key (labs/answers/*.md, English and Chinese) ends in
a section on what `hipath lab N` prints, holding one table:

  | quantity | model @ device | B | P | predicted | measured |

a row a lab row (quantity[field=value] picks among rows alike but for that
field: [dtype=int8], [reading=kernel gemv]).
A cell is empty or '-' (not quoted), or terms joined by '; ', each one of:
  N           exact to the digits quoted: counts, the calculator, modeled device time;
  a–b         the figure lies in [a, b];
  a–b × Q     the figure over this point's measured Q lies in [a, b];
  ≥ a × Q     the figure is at least a times Q: how a time that holds host CPU time
              is checked, against the modeled time it contains (a step holds its
              device time), true on any machine however busy;
  ~ any term  reported, never failed on: a figure that holds host CPU time (on the
              simulated device's virtual clock, docs/timing.md) depends on the host
              and on what else runs on it, so a key may say what it typically is,
              not assert it (issue 28).
A checked term on a figure that holds host time must have a tolerance derived from
the noise, written in the key beside it.

A figure in the prose of a key or a sheet (labs/lab*.md, labs/answers/*.md) is
tied to the run the same way by an HTML comment right after it, which renders
as nothing:

  184,925<!--= max_kv_tokens[dtype=int8] | deepseek-r1-distill-qwen-14b @ w7900 | 1 | 4096 | predicted -->

five cells: the table's four, then the column, optionally scaled (`measured × 1e3`
for seconds quoted in ms) and optionally from another lab (`lab4:t_step` in the
first cell). The figure before the comment is read with the grammar above (a
number, `a–b`, or `~` for a host time reported, not checked). A Chinese twin
must state and tie the same figures as its English original."""
import glob
import json
import re
import sys

HEADING = re.compile(r"^## .*`hipath lab (\d+)`.*(prints|打印)")
NUMBER = re.compile(r"^-?[\d,]*\.?\d+(e[-+]?\d+)?$")
FIG = r"(-?[\d.]+(?:e[-+]?\d+)?)"
RANGE = re.compile(rf"^{FIG}\s*(?:–|\.\.)\s*{FIG}(?:\s*[x×]\s*(\w+))?$")
AT_LEAST = re.compile(rf"^(?:≥|>=)\s*{FIG}\s*[x×]\s*(\w+)$")


def quantum(text):
    """Half a unit in the last digit quoted: 2.688e-06 -> 5e-10, 6,156 -> 0.5."""
    mant, _, exp = text.replace(",", "").lower().partition("e")
    decimals = len(mant.partition(".")[2])
    return 0.5 * 10 ** (-decimals + (int(exp) if exp else 0))


def table(path):
    """(lab, rows) of the key's table, each row its six cells."""
    lab, rows, inside = None, [], False
    for line in open(path, encoding="utf-8"):
        m = HEADING.match(line)
        if m:
            lab, inside = int(m.group(1)), True
            continue
        if inside and line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if inside and line.startswith("|") and len(cells) != 6:
            rows.append(None)   # a row the checker cannot read: a failure, not a skip
        elif inside and line.startswith("|") and not set(cells[0]) <= set("- ") and cells[2] != "B":
            rows.append(cells)
    return lab, rows


def find(doc, quantity, who, batch, prompt):
    name, _, pick = quantity.partition("[")
    field, _, value = pick.rstrip("]").partition("=")
    model, _, device = (w.strip() for w in who.partition("@"))
    for r in doc["rows"]:
        if (r["quantity"], r["model"], r["device"], str(r["batch"]), str(r["prompt_len"])) == (name, model, device, batch, prompt) \
                and (not field or str(r[field]) == value):
            return r
    return None


def per(doc, row, q):
    """This point's measured q, or None."""
    other = find(doc, q, f"{row['model']} @ {row['device']}", str(row["batch"]), str(row["prompt_len"]))
    return other["measured"] if other and other["measured"] else None


def term(doc, row, col, t):
    """(ok, what, read): whether one term holds, the figure it read, and whether
    it could be read at all (a term that cannot be is wrong on any host)."""
    value = row[col]
    if value is None:
        return False, f"{col} is empty", False
    if NUMBER.match(t):
        want = float(t.replace(",", ""))
        return abs(value - want) <= quantum(t) * (1 + 1e-9), f"{col} {value:.6g}", True
    m = RANGE.match(t) or AT_LEAST.match(t)
    if not m:
        return False, f"cannot read '{t}'", False
    lo, hi, q = (float(m.group(1)), float(m.group(2)), m.group(3)) if m.re is RANGE else (float(m.group(1)), float("inf"), m.group(2))
    if q:
        by = per(doc, row, q)
        if by is None:
            return False, f"no measured {q} at this point to divide by", False
        value /= by
    return lo <= value <= hi, f"{col} {'/ ' + q + ' ' if q else ''}= {value:.4g}", True


def check(doc, row, col, cell):
    """(fails, reports): why each checked term does not hold, and each reported term's figure."""
    fails, reports = [], []
    if cell in ("", "-"):
        return fails, reports
    for t in (t.strip() for t in cell.split(";")):
        reported = t.startswith("~")
        ok, what, read = term(doc, row, col, t.lstrip("~ "))
        if reported and read:
            reports.append(f"{what} (typically {t.lstrip('~ ')})")
        elif not ok:
            fails.append(f"{what}, the key says {t}")
    return fails, reports


MARK = re.compile(r"<!--=\s*(.*?)\s*-->")
FIGURE = re.compile(r"(~?\s*-?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?:\s*–\s*\d[\d.]*(?:e[-+]?\d+)?)?)$")


def marks(lines):
    """(line number, figure text or None, cells) of each tied figure in a file's lines."""
    for i, line in enumerate(lines, 1):
        for m in MARK.finditer(line):
            f = FIGURE.search(line[:m.start()].rstrip("*`"))
            yield i, f and f.group(1).replace(" ", ""), [c.strip() for c in m.group(1).split("|")]


def prose(out, docs):
    """Every tied figure of the sheets and keys against the run; (fails, checked, reports)."""
    fails, checked, reports = [], 0, []
    for path in sorted(glob.glob("labs/lab[1-9]*-*.md") + glob.glob("labs/answers/lab[1-9]*-*.md")):
        lab = int(re.search(r"lab(\d+)-", path).group(1))
        seen = []
        for i, fig, cells in marks(open(path, encoding="utf-8")):
            where = f"{path}:{i}"
            seen.append(f"{fig} {'|'.join(cells)}")
            if not fig or len(cells) != 5:
                fails.append(f"{where}: a tie without a figure before it or without its five cells"); continue
            other, _, name = cells[0].rpartition(":")
            n = int(other[3:]) if other.startswith("lab") else lab
            doc = docs.get(n) or docs.setdefault(n, json.load(open(f"{out}/lab{n}/lab{n}.json")))
            r = find(doc, name, *cells[1:4])
            col, _, scale = (w.strip() for w in cells[4].partition("×"))
            if not r or col not in ("predicted", "measured", "ratio"):
                fails.append(f"{where}: lab {n} printed no row {' | '.join(cells)}"); continue
            r = dict(r, **{col: r[col] * float(scale or 1) if r[col] is not None else None})
            bad, rep = check(doc, r, col, fig)
            fails += [f"{where}: {cells[0]}: {why}" for why in bad]
            reports += [f"{where}: {what}" for what in rep if ".zh." not in path]
            checked += not fig.startswith("~")
        twin = path.replace(".zh.md", ".md")
        if twin != path and sorted(seen) != sorted(f"{f} {'|'.join(c)}" for _, f, c in marks(open(twin, encoding="utf-8"))):
            fails.append(f"{path}: does not state and tie the same figures as {twin}")
    return fails, checked, reports


CARDS = ("w7900", "h100", "h200", "rtx4090", "rtx-pro-6000", "mi300x")
GRID = [("Qwen2.5-7B bf16", "qwen2.5-7b-instruct", "bf16"), ("Qwen3-8B bf16", "qwen3-8b", "bf16"),
        ("14B bf16", "deepseek-r1-distill-qwen-14b", "bf16"), ("14B int8", "deepseek-r1-distill-qwen-14b", "int8"),
        ("70B bf16", "deepseek-r1-distill-llama-70b", "bf16"), ("70B int8", "deepseek-r1-distill-llama-70b", "int8"),
        ("70B q4_1", "deepseek-r1-distill-llama-70b", "q4_1")]


def lab2_grid(doc, yes="yes", no="no"):
    """Lab 2's full table, its rows as the key writes them, filled from the run's calculator rows."""
    got = {(r["model"], r["device"], r["dtype"], r["quantity"]): r["predicted"] for r in doc["rows"] if not r["measured"]}
    def tokens(n):
        return f"{n / 1e6:.2f}M" if n >= 1e6 else f"{n / 1e3:.0f}k"
    lines = []
    for label, model, dt in GRID:
        cells = [f"{label} ({got[model, CARDS[0], dt, 'weights_bytes'] / 1e9:.2f} GB)"]
        for card in CARDS:
            v = {q: got[model, card, dt, q] for q in ("fits_P", "fits_full_context", "max_kv_tokens")}
            cells.append(no if not v["fits_P"] else
                         f"{yes}/{yes if v['fits_full_context'] else no}, {tokens(v['max_kv_tokens'])}")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def lab2_table(out, docs):
    """Lab 2's full table in both keys is the one the run fills in; the reasons it is not."""
    doc = docs.setdefault(2, json.load(open(f"{out}/lab2/lab2.json")))
    fails = []
    for path, words in (("labs/answers/lab2-capacity.md", ("yes", "no")), ("labs/answers/lab2-capacity.zh.md", ("是", "否"))):
        want = lab2_grid(doc, *words)
        have = [l.rstrip("\n") for l in open(path, encoding="utf-8") if l.startswith("| ") and "GB) |" in l]
        fails += [f"{path}: the full table's row is {h!r}, the run fills in {w!r}" for h, w in zip(have, want) if h != w]
        if len(have) != len(want):
            fails.append(f"{path}: the full table has {len(have)} rows, the run fills in {len(want)}")
    return fails


def main():
    if sys.argv[1] == "--lab2-table":   # the rows to paste, from a run
        print("\n".join(lab2_grid(json.load(open(f"{sys.argv[2]}/lab2/lab2.json")))))
        return 0
    out, bad, checked, reported = sys.argv[1], 0, 0, 0
    docs = {}
    for path in sorted(glob.glob("labs/answers/*.md")):
        lab, rows = table(path)
        if not lab or not rows:
            print(f"FAIL {path}: no table of what `hipath lab N` prints"); bad = 1; continue
        doc = json.load(open(f"{out}/lab{lab}/lab{lab}.json"))
        for cells in rows:
            if cells is None:
                print(f"FAIL {path}: a row of the table without its six cells"); bad = 1; continue
            r = find(doc, *cells[:4])
            if not r:
                print(f"FAIL {path}: lab {lab} printed no row {' | '.join(cells[:4])}"); bad = 1; continue
            for col, cell in zip(("predicted", "measured"), cells[4:]):
                fails, reports = check(doc, r, col, cell)
                terms = [t for t in cell.split(";") if t.strip() not in ("", "-")]
                checked += sum(not t.strip().startswith("~") for t in terms)
                reported += len(reports)
                for why in fails:
                    print(f"FAIL {path}: {' | '.join(cells[:4])}: {why}"); bad = 1
                if not path.endswith(".zh.md"):
                    for what in reports:
                        print(f"report {' | '.join(cells[:4])}: {what} (host time: not checked)")
    fails, tied, reports = prose(out, docs)
    fails += lab2_table(out, docs)
    for why in fails:
        print(f"FAIL {why}"); bad = 1
    for what in reports:
        print(f"report {what} (host time: not checked)")
    print(f"{'FAIL' if bad else 'ok'} the keys: {checked} figures of their tables and {tied} in the prose of sheets "
          f"and keys checked against this run's labs, {reported + len(reports)} host-time figures reported")
    return bad


def self_test():
    """The grammar on a made-up run: each term that must fail does, a reported one never does."""
    pt = {"model": "m", "device": "d", "batch": 1, "prompt_len": 9, "predicted": None}
    doc = {"rows": [dict(pt, quantity="step", measured=0.9), dict(pt, quantity="gpu", measured=1.0),
                    dict(pt, quantity="n", measured=67)]}
    step, n = doc["rows"][0], doc["rows"][2]
    cases = [(step, "≥ 1 × gpu", 1), (step, "≥ 0.9 × gpu", 0), (step, "~1.0–1.2 × gpu", 0), (step, "0.95–1.0", 1),
             (step, "≥ 1 × gpu; ~2–3", 1), (step, "~5; 0.8–0.9 × gpu", 0), (n, "67", 0), (n, "66", 1), (n, "~66", 0),
             (step, "≥ 1 × nothing", 1), (step, "~1.0–1.2 × nothing", 1), (step, "~about one", 1)]
    bad = [(c, w) for r, c, w in cases if bool(check(doc, r, "measured", c)[0]) != bool(w)]
    tie = " | m @ d | 1 | 9 | measured -->"
    lines = [f"a step of **0.90<!--= step{tie} ms**", f"~0.8–1.2<!--= step{tie}, 67<!--= n{tie}", f"ms<!--= step{tie}"]
    got = [(i, f, c[0]) for i, f, c in marks(lines)]
    want = [(1, "0.90", "step"), (2, "~0.8–1.2", "step"), (2, "67", "n"), (3, None, "step")]
    bad += [("ties", got)] if got != want else []
    print(f"{'FAIL' if bad else 'ok'} the keys' grammar: {len(cases) + 1 - len(bad)} of {len(cases) + 1} cases" + (f": {bad}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(self_test() if sys.argv[1:] == ["--self-test"] else main())
