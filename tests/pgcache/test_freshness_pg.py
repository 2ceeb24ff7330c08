"""The PostgreSQL freshness checker (freshness.py, issue 41 items 4 and 6) against three targets
in front of the same PostgreSQL 15:

- PostgreSQL itself: 0 stale, 0 wrong in every case. This validates the checker (a case that
  counted a stale read here would be a broken case, not a finding).
- pgpool-II 4.3's in-memory query cache (Debian pgpool2, scripts/pgpool.sh): the stale and
  wrong reads it really answers are measured, printed and asserted case by case (PGPOOL, below):
  it invalidates only the tables a write through it names, so writes made directly on
  PostgreSQL, by triggers, rules and cascades, to partitions or inheriting tables read through
  their parent, and COMMIT PREPARED leave it answering the old rows; its key ignores
  search_path, so a statement's text answers another schema's rows.
- sqlcached's PostgreSQL front (--pg-listen) with its query cache (on by default, fed by the
  WAL): 0 stale, 0 wrong, and the cache answered some of the reads (hits > 0).

Each case runs twice per way of writing (through the target, directly), then a short race of
concurrent writers and readers. About 12 s per target.
"""
import pytest

from freshness import CASES, Target, pgpool_target, race, run_case, sqlcached_hits, sqlcached_target, variants

ITERATIONS = 2
RACE_SECONDS = 1.0

# What pgpool-II 4.3.5 (Debian bookworm's pgpool2, memqcache_method shmem,
# auto_cache_invalidation on) does in each case, measured here:
#   fresh: cached (hits > 0), 0 stale;  uncached: no hit at all (pgpool does not cache it);
#   stale: stale reads > 0;  wrong: reads of rows that were never the reader's committed state;
#   crash: pgpool's child process dies (segmentation fault) and the client's connection drops;
#   corrupt: a cached DataRow of the old column count after the new RowDescription (the client
#            stops: "unexpected field count in "D" message"; a stale read no driver can decode).
PGPOOL = {
    ("update", "proxy"): "fresh", ("update", "direct"): "stale",
    ("insert_delete", "proxy"): "fresh", ("insert_delete", "direct"): "stale",
    ("trigger", "proxy"): "stale", ("trigger", "direct"): "stale",
    ("cascade_delete", "proxy"): "stale", ("cascade_delete", "direct"): "stale",
    ("cascade_update", "proxy"): "stale", ("cascade_update", "direct"): "stale",
    ("rule", "proxy"): "stale", ("rule", "direct"): "stale",
    ("partition", "proxy"): "stale", ("partition", "direct"): "stale",
    ("partition_attach", "proxy"): "fresh", ("partition_attach", "direct"): "stale",
    ("inheritance", "proxy"): "stale", ("inheritance", "direct"): "stale",
    ("savepoint", "proxy"): "fresh", ("savepoint", "direct"): "stale",
    # after PREPARE TRANSACTION through pgpool, the next extended-protocol query on that session
    # kills pgpool's child; the simple-protocol rerun below measures the COMMIT PREPARED itself
    ("two_phase", "proxy"): "crash", ("two_phase", "direct"): "stale",
    ("search_path", "none"): "wrong",
    ("bulk_update", "proxy"): "fresh", ("bulk_update", "direct"): "stale",
    ("truncate", "proxy"): "fresh", ("truncate", "direct"): "stale",
    ("matview", "proxy"): "uncached", ("matview", "direct"): "uncached",
    ("alter_table", "proxy"): "fresh", ("alter_table", "direct"): "corrupt",
}


def table(title, rows):
    """The figures of a target's run, one line per case, for the test's output (-s or a failure)."""
    lines = [f"{title}:", f"  {'case':<18}{'via':<8}{'checks':>7}{'stale':>7}{'wrong':>7}{'hits':>6}  error / example"]
    for r in rows:
        hits = "-" if r.hits is None else str(r.hits)
        note = (r.error or (r.examples[0] if r.examples else "")).replace("\n", " ")[:150]
        lines.append(f"  {r.case:<18}{r.via:<8}{r.checks:>7}{r.stale:>7}{r.wrong:>7}{hits:>6}  {note}")
    return "\n".join(lines)


def run_all(target, direct_dsn):
    return [run_case(target, direct_dsn, name, via, iterations=ITERATIONS) for name, via in variants()]


def assert_never_stale(target, direct_dsn):
    rows = run_all(target, direct_dsn)
    rows.append(race(target, direct_dsn, seconds=RACE_SECONDS))
    report = table(target.name, rows)
    print("\n" + report)
    for r in rows:
        assert r.error is None, f"{r.case}/{r.via}: {r.error}\n{report}"
        assert r.checks > 0, f"{r.case}/{r.via} checked nothing\n{report}"
        assert (r.stale, r.wrong) == (0, 0), f"{r.case}/{r.via}: {r.examples}\n{report}"
    assert len(rows) == len(variants()) + 1


def test_every_case_is_covered():
    """Each case of the checker has pgpool's expected outcome, and the brief's kinds are there."""
    assert set(PGPOOL) == set(variants())
    for name in ("trigger", "cascade_delete", "rule", "partition", "savepoint", "two_phase", "search_path",
                 "bulk_update"):
        assert name in CASES


def test_postgresql_direct_is_never_stale(direct_dsn):
    """The checker against PostgreSQL itself: nothing stale, nothing wrong, no error."""
    assert_never_stale(Target("postgresql", lambda: direct_dsn), direct_dsn)


def test_sqlcached_pg_front_is_never_stale(fcdb, direct_dsn):
    """sqlcached's --pg-listen: nothing stale or wrong in any case, any protocol, the race too."""
    from harness.pgproxy import start_pgproxy

    with start_pgproxy(fcdb, "--pg-database", "fc", "--pg-ddl-trigger", "--pg-slot", "fresh_fc",
                       "--pg-publication", "fresh_fc") as px:
        assert_never_stale(sqlcached_target(px, "fc"), direct_dsn)
        assert px.proc.poll() is None
        hits = sqlcached_hits(px.stats())
        print("sqlcached query cache:", {k: v for k, v in px.stats().items() if k.startswith(("pg_query_cache", "wal_"))})
        assert hits and hits > 0, "the cache answered nothing: the test would prove nothing about it"
        # Its results are a share of -m (docs/memory.md), bounded by --pg-query-cache-size (64m).
        # The checker's last case may have invalidated every result: fill one, then read the share.
        import psycopg
        import time
        with psycopg.connect(direct_dsn, autocommit=True) as c:
            c.execute("CREATE TABLE IF NOT EXISTS memory_probe (id int PRIMARY KEY)")
            c.execute("INSERT INTO memory_probe VALUES (1) ON CONFLICT DO NOTHING")
        deadline = time.monotonic() + 15
        with psycopg.connect(px.dsn(database="fc"), autocommit=True) as c:
            while int(px.stats()["pg_query_cache_entries"]) == 0 and time.monotonic() < deadline:
                c.execute("SELECT id FROM memory_probe WHERE id = 1").fetchall()
                time.sleep(0.1)
        st = px.stats()
        assert int(st["pg_query_cache_entries"]) > 0, st
        assert int(st["memory_pg_query_cache_max"]) == 64 << 20, st.get("memory_pg_query_cache_max")
        assert 0 < int(st["memory_pg_query_cache"]) <= int(st["memory_pg_query_cache_max"])


def test_sqlcached_until_write_is_never_stale(fcdb, direct_dsn):
    """The same with --pg-query-cache-in-transactions until-write: reads inside transactions
    answered from memory until the transaction writes (its own writes then seen)."""
    from harness.pgproxy import start_pgproxy

    with start_pgproxy(fcdb, "--pg-database", "fc", "--pg-ddl-trigger", "--pg-slot", "fresh_uw",
                       "--pg-publication", "fresh_uw", "--pg-query-cache-in-transactions", "until-write") as px:
        assert_never_stale(sqlcached_target(px, "fc"), direct_dsn)
        assert px.proc.poll() is None
        hits = sqlcached_hits(px.stats())
        assert hits and hits > 0, "the cache answered nothing: the test would prove nothing about it"


def test_pgpool_query_cache_stale_reads(fcdb, direct_dsn):
    """pgpool-II's query cache: the stale and wrong reads measured case by case (PGPOOL)."""
    from harness.pgpool import start_pgpool

    with start_pgpool(fcdb) as pool:
        target = pgpool_target(pool, "fc")
        rows = run_all(target, direct_dsn)
        # COMMIT PREPARED from another session through pgpool, without the query that crashes it
        two_pc = run_case(target, direct_dsn, "two_phase", "proxy", iterations=ITERATIONS, protocols=("simple",))
        two_pc.via = "proxy/simple"
        rows.append(two_pc)
        raced = race(target, direct_dsn, seconds=RACE_SECONDS)
        rows.append(raced)
        report = table("pgpool-II query cache", rows)
        stale = sum(r.stale for r in rows)
        wrong = sum(r.wrong for r in rows)
        checks = sum(r.checks for r in rows)
        print(f"\n{report}\n  pgpool-II total: {stale} stale and {wrong} wrong of {checks} checked reads")
        log = pool.log()

    got = {}
    for r in rows[:-2]:
        if r.error:
            got[(r.case, r.via)] = ("crash" if "server closed the connection" in r.error
                                    else "corrupt" if "unexpected field count" in r.error else f"error: {r.error}")
        elif r.wrong:
            got[(r.case, r.via)] = "wrong"
        elif r.stale:
            got[(r.case, r.via)] = "stale"
        else:
            got[(r.case, r.via)] = "fresh" if r.hits else "uncached"
    diff = {k: (PGPOOL[k], v) for k, v in got.items() if PGPOOL[k] != v}
    assert not diff, f"pgpool-II behaves otherwise than measured before ((expected, now)): {diff}\n{report}"
    assert "segmentation fault" in log, "the two_phase crash is pgpool's child dying"
    # the crash aside, two-phase commit through pgpool leaves its cache stale too
    assert two_pc.error is None and two_pc.stale > 0 and two_pc.wrong == 0, report
    # writes through pgpool invalidate what they name: stale only where something bypasses it
    assert all(r.stale == 0 for r in rows if PGPOOL.get((r.case, r.via)) == "fresh"), report
    # the race: rows written directly go stale; rows written through pgpool too (a read that
    # started before a write stores its old result after the write's invalidation)
    print(f"  race: stale reads by way of writing {raced.stale_by}")
    assert raced.error is None and raced.checks > 0 and raced.stale_by.get("direct", 0) > 0, report
