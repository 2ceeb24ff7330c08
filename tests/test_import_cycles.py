"""scripts/import_cycles.py finds circles among top-level and nested modules alike (issues 40
and 43), resolving `crate::`, `super::` and braced use trees, and draws no edge between a
module and its own parent or child."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "import_cycles.py"


def check(tmp_path, files):
    for name, text in files.items():
        p = tmp_path / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    r = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True)
    return r.returncode, r.stdout


def test_a_nested_circle_is_found(tmp_path):
    rc, out = check(tmp_path, {
        "lib.rs": "mod backend;\n",
        "backend/mod.rs": "mod mysql; mod local; mod group;\nuse local::Lane;\n",
        "backend/mysql.rs": "use super::local::Lane;\n",
        "backend/local.rs": "use crate::backend::{group::Batch, mysql};\n",
        "backend/group.rs": "// use super::local; (a comment draws nothing)\nuse super::{mysql::{self, Conn}};\n",
    })
    assert rc == 1, out
    assert "crate::backend: group <-> local <-> mysql" in out
    assert "crate::backend: local <-> mysql" in out


def test_a_top_level_circle_through_nested_files_is_found(tmp_path):
    rc, out = check(tmp_path, {
        "lib.rs": "mod a; mod b;\n",
        "a/mod.rs": "mod x;\n",
        "a/x.rs": "use crate::b::y::Thing;\n",
        "b/mod.rs": "mod y;\n",
        "b/y.rs": "fn f() { crate::a::x::g() }\n",
    })
    assert rc == 1 and "crate: a <-> b" in out, out


def test_parents_children_and_tests_draw_no_circle(tmp_path):
    rc, out = check(tmp_path, {
        "lib.rs": "mod a;\npub use a::x::Thing;\n",
        "a/mod.rs": "mod x; mod y;\npub struct Shared;\nuse self::x::Thing;\n",
        "a/x.rs": "use super::Shared; use super::y::Y;\npub struct Thing;\n",
        "a/y.rs": "pub struct Y;\n#[cfg(test)]\nmod tests { use super::super::x::Thing; }\n",
    })
    assert rc == 0, out
    assert "0 import circles" in out
