#!/usr/bin/env python3
"""check_lab_keys.py OUT -- every figure the answer keys quote from `hipath lab N`
against what it printed this time (OUT/labN/labN.json), so a key that no longer
matches the code fails. Each key (labs/answers/*.md, English and Chinese) ends in
a section on what `hipath lab N` prints, holding one table:

  | quantity | model @ device | B | P | predicted | measured |

a row a lab row (quantity[field=value] picks among rows alike but for that
field: [dtype=int8], [reading=kernel gemv]).
A cell is empty or '-' (not quoted); a number (exact to the digits quoted: counts,
the calculator, modeled device time); 'a–b' (the figure lies in [a, b]); or
'a–b × Q' (the figure over this point's measured Q lies in [a, b]: how a time
that holds host CPU time is quoted, so that it holds on any machine)."""
import glob
import json
import re
import sys

HEADING = re.compile(r"^## .*`hipath lab (\d)`.*(prints|打印)")
NUMBER = re.compile(r"^-?[\d,]*\.?\d+(e[-+]?\d+)?$")
FIG = r"(-?[\d.]+(?:e[-+]?\d+)?)"
RANGE = re.compile(rf"^{FIG}\s*(?:–|\.\.)\s*{FIG}(?:\s*[x×]\s*(\w+))?$")


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
        if inside and line.startswith("|") and len(cells) == 6 and not set(cells[0]) <= set("- ") and cells[2] != "B":
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


def check(doc, row, col, cell):
    """None when the cell holds, else why not."""
    if cell in ("", "-"):
        return None
    value = row[col]
    if value is None:
        return f"{col} is empty, the key says {cell}"
    if NUMBER.match(cell):
        want = float(cell.replace(",", ""))
        ok = abs(value - want) <= quantum(cell) * (1 + 1e-9)
        return None if ok else f"{col} {value:.6g}, the key says {cell}"
    m = RANGE.match(cell)
    if not m:
        return f"cannot read the cell '{cell}'"
    lo, hi, per = float(m.group(1)), float(m.group(2)), m.group(3)
    if per:
        other = find(doc, per, f"{row['model']} @ {row['device']}", str(row["batch"]), str(row["prompt_len"]))
        if not other or not other["measured"]:
            return f"no measured {per} at this point to divide by"
        value /= other["measured"]
    ok = lo <= value <= hi
    return None if ok else f"{col} {'/ ' + per + ' ' if per else ''}= {value:.4g}, the key says {cell}"


def main():
    out, bad, seen = sys.argv[1], 0, 0
    for path in sorted(glob.glob("labs/answers/*.md")):
        lab, rows = table(path)
        if not lab or not rows:
            print(f"FAIL {path}: no table of what `hipath lab N` prints"); bad = 1; continue
        doc = json.load(open(f"{out}/lab{lab}/lab{lab}.json"))
        for cells in rows:
            r = find(doc, *cells[:4])
            if not r:
                print(f"FAIL {path}: lab {lab} printed no row {' | '.join(cells[:4])}"); bad = 1; continue
            for col, cell in zip(("predicted", "measured"), cells[4:]):
                seen += cell not in ("", "-")
                why = check(doc, r, col, cell)
                if why:
                    print(f"FAIL {path}: {' | '.join(cells[:4])}: {why}"); bad = 1
    print(f"{'FAIL' if bad else 'ok'} the keys: {seen} figures against this run's labs")
    return bad


if __name__ == "__main__":
    sys.exit(main())
