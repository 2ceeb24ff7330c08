"""Differential sessions on container keys: memcached 1.6.18 against a sqlcached whose plain
keys go to a container (`plain_keys = "default_container"`) on SQLite, or on a MariaDB or
PostgreSQL server given as a `Networked` backend (a fresh table per run).

The session machinery is tests/differential/mcdiff.py's (session files, steps, CAS and
clock normalization, mismatch reports); only the server pair differs: memcached gets the
session's flags, sqlcached the same flags plus `--containers` with one container `kv` on a
fresh SQLite table, under one cache policy. Every connection of that sqlcached starts
bound to `kv`, so the very same bytes address memcached's memory and the container.

    python3 tests/containers/containerdiff.py [--policy P] [--show] [-k SUBSTR] [FILE...]

prints the mismatches (or, with --show, every step) of tests/containers/sessions/*.txt or
of the given session files; `--random SEED[:STEPS]` runs a randomized session instead.
"""
from __future__ import annotations

import re
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent
for p in (TESTS, TESTS / "differential"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import mcdiff  # noqa: E402
import randomized  # noqa: E402
from harness.servers import start_pair as start_servers  # noqa: E402

SESSIONS_DIR = HERE / "sessions"

# BLOB key and value: any bytes, no length limit (SQLite does not enforce declared sizes);
# flags/cas/exp are 64-bit integers (flags up to 2**32-1, cas from a microsecond clock,
# exp absolute unix seconds).
SCHEMA = "CREATE TABLE kv (k BLOB PRIMARY KEY, v BLOB, flags INTEGER, cas INTEGER, exp INTEGER);"

# innodb_only: every operation is SQL. caching: memory copy in front of the table (writes
# go to the table and drop the copy). cache_only: the container's private memory engine.
POLICIES = ("innodb_only", "caching", "cache_only")


class Networked:
    """A MariaDB (harness.mariadb) or PostgreSQL (harness.postgres) server the container's
    table lives on: the same columns in each database's types (binary key and value, 64-bit
    flags, cas and expiry), a new table per run."""

    SCHEMAS = {
        "mariadb": "CREATE TABLE test.{t} (k VARBINARY(250) PRIMARY KEY, v LONGBLOB, flags BIGINT UNSIGNED, "
                   "cas BIGINT UNSIGNED, exp BIGINT) ENGINE=InnoDB",
        "postgres": "CREATE TABLE {t} (k bytea PRIMARY KEY, v bytea, flags bigint, cas bigint, exp bigint)",
    }

    def __init__(self, kind: str, server):
        self.kind, self.server, self.made = kind, server, 0
        if kind == "mariadb":
            server.sql("CREATE DATABASE IF NOT EXISTS test")
        else:
            server.sql("CREATE DATABASE cdiff")

    def fresh_table(self) -> str:
        self.made += 1
        t = f"kv_{self.made}"
        sql = self.SCHEMAS[self.kind].format(t=t)
        if self.kind == "mariadb":
            self.server.sql(sql)
        else:
            self.server.sql(sql, database="cdiff")
        return t

    def backend_toml(self) -> str:
        if self.kind == "mariadb":
            return (f'kind = "mariadb"\nurl = "{self.server.url("test")}?prefer_socket=false"\n'
                    'plugin_tables = "off"\n')
        return f'kind = "postgres"\nurl = "{self.server.url("cdiff", sslmode="disable")}"\nplugin_tables = "off"\n'



def write_config(d: Path, policy: str, networked: Networked | None = None) -> Path:
    """A fresh table (an SQLite database, or a new table on `networked`) and a containers
    file for it."""
    if networked is None:
        db = d / "kv.db"
        c = sqlite3.connect(db)
        c.executescript(SCHEMA)
        c.commit()
        c.close()
        table = "kv"
        backend = f'kind = "sqlite"\npath = "{db}"\nplugin_tables = "off"\nsynchronous = "normal"\n'
    else:
        table = networked.fresh_table()
        backend = networked.backend_toml()
    cfg = d / "containers.toml"
    cfg.write_text(f"""
[backend]
{backend}
[options]
w_batch_size = 1
plain_keys = "default_container"
default_container = "kv"

[[container]]
name = "kv"
table = "{table}"
key_column = "k"
value_columns = "v"
flags_column = "flags"
cas_column = "cas"
expire_column = "exp"
cache_ttl = 60
policy = "{policy}"
""")
    return cfg


def start_pair(flags, policy: str, workdir: Path, networked: Networked | None = None):
    """memcached with `flags`, sqlcached with `flags` + `--containers` (a fresh table),
    started in parallel; returns both, ready."""
    d = Path(tempfile.mkdtemp(prefix="cdiff-", dir=workdir))
    cfg = write_config(d, policy, networked)
    try:
        mc, sq = start_servers(*flags, extra=("--containers", str(cfg)))
    except Exception:
        shutil.rmtree(d, ignore_errors=True)
        raise
    sq.workdir = d
    return [mc, sq]


def stop_pair(servers):
    """Kill both processes and remove sqlcached's database directory."""
    mcdiff.stop_servers(servers)
    for s in servers:
        d = getattr(s, "workdir", None)
        if d is not None:
            shutil.rmtree(d, ignore_errors=True)


def run_differential(session: mcdiff.Session, policy: str, workdir=None,
                     attempts: int = mcdiff.ATTEMPTS, networked: Networked | None = None):
    """mcdiff.run_differential on a memcached / container-sqlcached pair: fresh processes
    (and a fresh table) per run, until one run matches, at most `attempts` runs.
    Returns (results of the last run, runs made, results of the first run)."""
    workdir = Path(workdir or tempfile.gettempdir())
    first = results = None
    for run in range(1, attempts + 1):
        servers = start_pair(session.flags, policy, workdir, networked)
        try:
            results = mcdiff.run_session(session, servers)
        finally:
            stop_pair(servers)
        if first is None:
            first = results
        if all(r.ok for r in results):
            return results, run, first
    return results, attempts, first


def load_sessions(files=None) -> list:
    files = files or sorted(SESSIONS_DIR.glob("*.txt"))
    out = []
    for f in files:
        out.extend(mcdiff.parse_file(f))
    return out


# --------------------------------------------------------------------------- randomized

# Meta flags that containers do not implement (docs/containers.md, "Syntax"): mg h/l/u
# (hit-before, last access, no-bump), R/N (recache, vivify on mg), ms/md I (invalidate,
# marks stale instead of deleting; md's T only goes with it), ma t (containers report -1).
# `me` (meta debug) is not claimed by the containers: it reads the memory engine.
_UNSUPPORTED = {
    "mg": re.compile(r"^(?:h|l|u|R\d*|N\d*)$"),
    "ms": re.compile(r"^I$"),
    "md": re.compile(r"^(?:I|T\d*)$"),
    "ma": re.compile(r"^t$"),
}

def restrict_line(line: str) -> str:
    """One randomized.py session line, restricted to what containers support: unsupported
    meta flags removed, `me KEY` replaced by `mg KEY s v` (what randomized.py itself sends
    for a fetched key). Other lines are unchanged."""
    m = re.fullmatch(r"> (mg|ms|md|ma|me) (\S+)((?: [^\\ ]+)*)(\\r\\n.*)", line)
    if not m:
        return line
    cmd, key, flags, tail = m.groups()
    if cmd == "me":
        return f"> mg {key} s v{tail}"
    toks = flags.split()
    head = toks[:1] if cmd == "ms" else []     # ms KEY LEN flags...
    toks = [t for t in toks[len(head):] if not _UNSUPPORTED[cmd].match(t)]
    return "> " + " ".join([cmd, key] + head + toks) + tail


def random_session(seed: int, steps: int, tmpdir=None) -> mcdiff.Session:
    """randomized.py's session for `seed` (its output is not changed), restricted by
    restrict_line, as an mcdiff.Session."""
    text = randomized.generate(seed, steps)
    lines = [restrict_line(ln) for ln in text.split("\n")]
    d = Path(tmpdir or tempfile.mkdtemp(prefix="cdiff-random-"))
    path = d / f"container_random_{seed}.txt"
    path.write_text("\n".join(lines))
    (sess,) = mcdiff.parse_file(path)
    return sess


# --------------------------------------------------------------------------- command line


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("-k", default="")
    ap.add_argument("--policy", default="innodb_only", choices=POLICIES)
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--random", help="SEED[:STEPS]: a randomized session instead of files")
    args = ap.parse_args(argv)
    tmp = tempfile.TemporaryDirectory(prefix="cdiff-random-")
    if args.random:
        seed, _, steps = args.random.partition(":")
        sessions = [random_session(int(seed), int(steps or 400), tmp.name)]
    else:
        sessions = [s for s in load_sessions([Path(f) for f in args.files] or None)
                    if args.k in s.id]
    bad = nsteps = 0
    t0 = time.monotonic()
    for sess in sessions:
        try:
            if args.show:
                servers = start_pair(sess.flags, args.policy, Path(tempfile.gettempdir()))
                try:
                    results = mcdiff.run_session(sess, servers)
                finally:
                    stop_pair(servers)
            else:
                results, _, _ = run_differential(sess, args.policy)
        except mcdiff.SessionError as e:
            print(f"SESSION ERROR: {e}")
            bad += 1
            continue
        nsteps += len(results)
        if args.show:
            print(f"=== {sess.id}  flags: {' '.join(sess.flags)}")
        for res in results:
            if args.show:
                print(f"  {res.step.label()}")
                print(f"     memcached: {mcdiff.show_bytes(res.replies[0], 2000)}")
            if not res.ok:
                bad += 1
                if args.show:
                    print(f"  !! sqlcached: {mcdiff.show_bytes(res.replies[1], 2000)}")
                else:
                    print(mcdiff.describe_mismatch(sess, res) + "\n")
    tmp.cleanup()
    print(f"{len(sessions)} sessions, {nsteps} steps, {bad} mismatches "
          f"({args.policy}) in {time.monotonic() - t0:.1f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
