#!/usr/bin/env python3
"""Pool the per-sample lines (stderr) of several bench runs and print medians.

    ./target/release/tier-engines 2> run1.log; ./target/release/tier-engines 2> run2.log
    python3 pool.py run1.log run2.log
"""
import re, sys, statistics
from collections import OrderedDict

rows = OrderedDict()
engines = []
for path in sys.argv[1:]:
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^  (\S+)\s+(.+?)\s+(-?[0-9.]+|NaN)$", line.rstrip("\n"))
        if not m:
            continue
        eng, metric, v = m.group(1), m.group(2).strip(), float(m.group(3))
        if eng not in engines:
            engines.append(eng)
        rows.setdefault(metric, {}).setdefault(eng, []).append(v)

def fmt(v):
    if abs(v) >= 1000: return f"{v:,.0f}"
    if abs(v) >= 10: return f"{v:.0f}"
    return f"{v:.2f}"

print("| metric | " + " | ".join(f"{e} median (n)" for e in engines) + " |")
print("|---|" + "---:|" * len(engines))
for metric, per in rows.items():
    cells = []
    for e in engines:
        v = per.get(e)
        cells.append(f"**{fmt(statistics.median(v))}** ({len(v)})" if v else "–")
    print(f"| {metric} | " + " | ".join(cells) + " |")
