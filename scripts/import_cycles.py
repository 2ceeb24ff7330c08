#!/usr/bin/env python3
"""Import circles between the top-level modules of a crate's src/ (default: crates/server/src).

A module's dependencies are the `crate::<module>` paths in its files (comments and
`#[cfg(test)] mod tests` left out). Prints every circle of at most 6 modules, shortest
first, and their count; exits 1 if there is any. tests/run.sh runs it on every crate
(docs/architecture.md: no import circle inside a crate):

    python3 scripts/import_cycles.py [crates/server/src]
"""
import os
import re
import sys


def graph(root):
    mods = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            top = rel.split(os.sep)[0].removesuffix(".rs")
            if top in ("main", "lib"):
                continue
            text = open(os.path.join(dirpath, f)).read()
            text = re.sub(r"#\[cfg\(test\)\]\s*mod tests \{.*", "", text, flags=re.S)
            text = re.sub(r"//[^\n]*", "", text)
            deps = set(re.findall(r"crate::([a-z_]+)", text))
            mods.setdefault(top, set()).update(d for d in deps if d != top)
    return mods


def cycles(mods, limit=6):
    found = set()

    def walk(start, node, path):
        for n in mods.get(node, ()):
            if n == start:
                found.add(tuple(sorted(path)))
            elif n not in path and len(path) < limit:
                walk(start, n, path + [n])

    for m in mods:
        walk(m, m, [m])
    return sorted(found, key=lambda c: (len(c), c))


if __name__ == "__main__":
    found = cycles(graph(sys.argv[1] if len(sys.argv) > 1 else "crates/server/src"))
    for c in found:
        print(" <-> ".join(c))
    print(f"{len(found)} import circles in {sys.argv[1] if len(sys.argv) > 1 else 'crates/server/src'}")
    sys.exit(1 if found else 0)
