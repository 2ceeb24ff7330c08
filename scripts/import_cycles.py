#!/usr/bin/env python3
"""Import circles between the modules of a crate's src/ (default: crates/server/src), nested
modules included.

Every file is a module (`src/a/b.rs` and `src/a/b/mod.rs` are `a::b`; `lib.rs` and `main.rs`
the crate root). A module's dependencies are the paths it names that start with `crate::`,
`super::` or `self::` (use trees with braces expanded; comments and `#[cfg(test)] mod tests`
left out), each resolved to the deepest module it reaches. A dependency from `a::x::p` to
`a::y::q` is an edge between the siblings `x` and `y` inside `a`: so circles are found among the
top-level modules and among the children of every module alike. A module naming its own
parent or child draws no edge (a parent declares its children; a child may use what its
parent defines). Prints every circle of at most 6 siblings, shortest first, and their count;
exits 1 if there is any. tests/run.sh runs it on every crate (docs/architecture.md: no import
circle inside a crate, nested modules included):

    python3 scripts/import_cycles.py [crates/server/src]
"""
import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_of(rel):
    """`a/b.rs` -> ('a', 'b'); `a/mod.rs` -> ('a',); `lib.rs` -> ()."""
    parts = rel.removesuffix(".rs").split(os.sep)
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts = parts[:-1]
    return tuple(parts)


def strip(text):
    """The text without its test module, comments and string literals."""
    text = re.sub(r"#\[cfg\(test\)\]\s*mod tests \{.*", "", text, flags=re.S)
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def expand(tree):
    """The paths of a use tree such as `a::{b, c::{d, e}}` (each as a list of segments)."""
    tree = tree.replace(" ", "").replace("\n", "")
    if "{" not in tree:
        return [tree.split("::")]
    head, _, rest = tree.partition("{")
    body = rest[: rest.rfind("}")]
    parts, depth, cur = [], 0, ""
    for ch in body:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        cur += ch
    parts.append(cur)
    prefix = [s for s in head.split("::") if s]
    return [prefix + p for part in parts if part for p in expand(part)]


def references(text):
    """Every path that starts with crate::, super:: or self:: (use trees expanded)."""
    out = []
    for m in re.finditer(r"\b(crate|super|self)((?:::(?:super|" + IDENT + r"))*)::\{", text):
        # A braced use tree: take it whole, to its matching brace.
        start = m.start()
        depth, i = 0, m.end() - 1
        while i < len(text):
            depth += text[i] == "{"
            depth -= text[i] == "}"
            if depth == 0:
                break
            i += 1
        out.extend(expand(text[start : i + 1]))
    for m in re.finditer(r"\b(?:crate|super|self)(?:::(?:super|" + IDENT + r"))+", text):
        out.append(m.group(0).split("::"))
    return out


def resolve(here, path, modules):
    """The deepest module `path` (named inside module `here`) reaches, or None."""
    if path[0] == "crate":
        base, rest = (), path[1:]
    elif path[0] == "self":
        base, rest = here, path[1:]
    else:
        base, rest = here, path
        while rest and rest[0] == "super":
            base, rest = base[:-1], rest[1:]
    target = base
    for seg in rest:
        if target + (seg,) in modules:
            target = target + (seg,)
        else:
            break
    return target


def graph(root):
    """{parent module: {child: {sibling it depends on}}}."""
    files = {}
    for dirpath, _, names in os.walk(root):
        for f in names:
            if f.endswith(".rs"):
                rel = os.path.relpath(os.path.join(dirpath, f), root)
                files[module_of(rel)] = strip(open(os.path.join(dirpath, f)).read())
    modules = set(files)
    for m in list(modules):
        for i in range(len(m)):
            modules.add(m[:i])
    levels = {}
    for here, text in files.items():
        for path in references(text):
            there = resolve(here, path, modules)
            k = 0
            while k < min(len(here), len(there)) and here[k] == there[k]:
                k += 1
            if k == len(here) or k == len(there):
                continue  # its own parent, child or itself
            levels.setdefault(here[:k], {}).setdefault(here[k], set()).add(there[k])
    return levels


def cycles(mods, limit=6):
    """Every circle of at most `limit` nodes in {node: {node it depends on}}."""
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
    root = sys.argv[1] if len(sys.argv) > 1 else "crates/server/src"
    total = 0
    for parent, mods in sorted(graph(root).items()):
        where = "::".join(("crate",) + parent)
        for c in cycles(mods):
            print(f"{where}: " + " <-> ".join(c))
            total += 1
    print(f"{total} import circles in {root} (nested modules included)")
    sys.exit(1 if total else 0)
