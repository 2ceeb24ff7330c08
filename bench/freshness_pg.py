#!/usr/bin/env python3
"""The PostgreSQL freshness checker (tests/pgcache/freshness.py) against several query caches
in front of one PostgreSQL, side by side: the stale and wrong reads each one answers, case by
case, as a markdown table (issue 41 item 6: "the difference in stale reads is measured").

    bench/freshness_pg.py --direct "host=127.0.0.1 port=5432 user=bench dbname=bench" \\
        --target "pgpool=host=127.0.0.1 port=9999 user=bench dbname=bench" \\
        --target "sqlcached=host=127.0.0.1 port=6432 user=bench dbname=bench" [--iterations 2] [--race 2]

bench/querycache-pg.sh runs it at its end against its own pgpool-II and sqlcached (FRESHNESS=0
skips it). A target named `pgpool*` has its hits read from SHOW pool_cache; sqlcached's from
its `stats` once its PostgreSQL cache counts them (--stats-port). The role needs CREATE on the
database (each case makes and drops a schema of its own) and the server max_prepared_transactions
> 0 (scripts/postgres.sh sets 16). The tests asserting these figures: tests/pgcache.
"""
import argparse
import socket
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "pgcache"))
import psycopg  # noqa: E402

from freshness import Target, race, run_case, sqlcached_hits, variants  # noqa: E402


def pool_hits(dsn):
    with psycopg.connect(dsn, autocommit=True) as c:
        cur = c.execute("SHOW pool_cache")
        row = dict(zip((d.name for d in cur.description), cur.fetchone()))
        return int(row["num_cache_hits"])


def memcached_stats(port):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
    return {p[1]: p[2] for p in (line.split(" ", 2) for line in buf.decode().splitlines()) if len(p) == 3}


def target(spec, stats_port):
    name, _, dsn = spec.partition("=")
    if not dsn:
        sys.exit(f"--target wants NAME=DSN, got {spec!r}")
    if name.startswith("pgpool"):
        return Target(name, lambda: dsn, lambda: pool_hits(dsn))
    if name.startswith("sqlcached") and stats_port:
        return Target(name, lambda: dsn, lambda: sqlcached_hits(memcached_stats(stats_port)))
    return Target(name, lambda: dsn)


def cell(r):
    if r.error:
        return "error: " + r.error.splitlines()[0][:60]
    hits = "" if r.hits is None else f", {r.hits} hits"
    return f"{r.stale} stale, {r.wrong} wrong / {r.checks}{hits}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--direct", required=True, help="libpq DSN straight to PostgreSQL (the truth)")
    ap.add_argument("--target", action="append", required=True, help="NAME=DSN of a cache (repeatable)")
    ap.add_argument("--stats-port", type=int, help="sqlcached's memcached port (its hit counter)")
    ap.add_argument("--iterations", type=int, default=2)
    ap.add_argument("--race", type=float, default=2.0, help="seconds of the concurrent race (0: none)")
    a = ap.parse_args()
    targets = [target(t, a.stats_port) for t in a.target]
    results = {t.name: [run_case(t, a.direct, n, v, iterations=a.iterations) for n, v in variants()] for t in targets}
    if a.race > 0:
        for t in targets:
            results[t.name].append(race(t, a.direct, seconds=a.race))
    names = [t.name for t in targets]
    print("| case | via | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    for i, r0 in enumerate(results[names[0]]):
        print(f"| {r0.case} | {r0.via} | " + " | ".join(cell(results[n][i]) for n in names) + " |")
    totals = []
    for n in names:
        rs = results[n]
        errs = sum(1 for r in rs if r.error)
        totals.append(f"{sum(r.stale for r in rs)} stale, {sum(r.wrong for r in rs)} wrong / "
                      f"{sum(r.checks for r in rs)}" + (f", {errs} cases stopped by an error" if errs else ""))
    print("| **total** | | " + " | ".join(totals) + " |")
    print()
    print("stale: a read started after a write's acknowledgement (a direct write's + 100 ms) returned an older "
          "committed result; wrong: a result that was never the reader's committed state (another schema's "
          "rows, a rolled-back value).")


if __name__ == "__main__":
    main()
