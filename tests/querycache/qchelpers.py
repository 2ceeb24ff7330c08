"""Helpers for the query cache tests: run statements, read counter deltas, tell whether a
statement was served from the proxy's cache."""
import time

import pytest

from harness.mysqlproxy import connect


def q(conn, sql, args=None):
    """All rows of one statement (tuples)."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def delta(before: dict, after: dict) -> dict:
    """Counter differences."""
    return {k: after[k] - before[k] for k in before}


def run_counted(px, conn, sql):
    """(rows, counter deltas) of one execution of sql through the proxy."""
    before = px.counters()
    rows = q(conn, sql)
    return rows, delta(before, px.counters())


def until_hit(px, conn, sql, tries=40):
    """Run sql through the proxy until one run is a cache hit (the first runs may only fill the
    schema registry or the cache). Returns the rows of the hit, fails if none in `tries`."""
    seen = []
    for _ in range(tries):
        rows, d = run_counted(px, conn, sql)
        seen.append(d)
        if d["Qcache_hits"] >= 1:
            return rows
        time.sleep(0.05)
    pytest.fail(f"{sql!r} was never served from the cache; counter deltas per run: {seen[:6]}...")


def assert_not_cached(px, conn, sql, control="SELECT v FROM qc.t WHERE id = 1", times=2):
    """The positive control (a point select on qc.t) is served from the cache, then `sql`,
    run `times` times, is never a hit nor inserted, and counts in Qcache_not_cached."""
    until_hit(px, conn, control)
    total = {"Qcache_hits": 0, "Qcache_inserts": 0, "Qcache_not_cached": 0}
    results = []
    for _ in range(times):
        rows, d = run_counted(px, conn, sql)
        results.append(rows)
        for k in total:
            total[k] += d[k]
    assert total["Qcache_hits"] == 0, f"{sql!r} was served from the cache: {total}"
    assert total["Qcache_inserts"] == 0, f"{sql!r} was inserted into the cache: {total}"
    assert total["Qcache_not_cached"] >= 1, f"{sql!r} did not count in Qcache_not_cached: {total}"
    return results


def wait_for(fn, timeout=10.0, interval=0.01):
    """Poll fn() until it returns a truthy value; returns (value, seconds waited)."""
    t0 = time.monotonic()
    while True:
        v = fn()
        if v:
            return v, time.monotonic() - t0
        if time.monotonic() - t0 > timeout:
            return v, time.monotonic() - t0
        time.sleep(interval)


def poll_read(read, done, timeout=5.0, interval=0.01):
    """Call read() until done(value) holds or `timeout` seconds pass; returns the last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = read()
        if done(v) or time.monotonic() > deadline:
            return v
        time.sleep(interval)


def check_workload(policy, got, hits, direct, expect_hits, no_hits):
    """An ORM workload's steps through the proxy (`got`, `hits` per step) against MariaDB
    directly (`direct`): identical results, hits in the steps `expect_hits` names, none in
    those `no_hits` names."""
    print(f"{policy}: hits per step {hits}")
    for name, want in direct.items():
        assert got[name] == want, f"{name}: through the proxy ({policy}) differs from MariaDB"
    for name in expect_hits:
        assert hits[name] > 0, f"{name} was never served from the cache under {policy}: {hits}"
    for name in no_hits:
        assert hits[name] == 0, f"{name} was served from the cache under {policy}: {hits}"


def is_hit(px, conn, sql, tries=20):
    """Whether one execution of sql through the proxy was a cache hit (and its rows). An
    execution the proxy sent to the backend because its binlog follower was behind the
    staleness bound (Qcache_lag_bypasses: a loaded machine) says nothing either way: it is
    run again, a little later."""
    for _ in range(tries):
        before = px.stats()
        rows = q(conn, sql)
        after = px.stats()
        if after.get("Qcache_lag_bypasses", 0) == before.get("Qcache_lag_bypasses", 0):
            return after.get("Qcache_hits", 0) - before.get("Qcache_hits", 0) == 1, rows
        time.sleep(0.05)
    pytest.fail(f"{sql!r}: the binlog follower stayed behind its bound for {tries} tries")


def moved(before: dict, after: dict) -> dict:
    """The query cache and binlog counters that changed between two `stats` (for failure
    messages: which path dropped a result)."""
    return {k: after[k] - before.get(k, 0) for k, v in after.items()
            if k.startswith(("Qcache_", "binlog_")) and isinstance(v, int) and v != before.get(k, 0)}


def check(px, pc, mariadb, via, write, dropped, kept):
    """Cache `dropped` and `kept`, run `write` through `via`; then every read of `dropped`
    is fresh (MariaDB's own answer; through the binlog, within a few seconds) and every read
    of `kept` is still a hit with its old answer."""
    direct = connect(mariadb.port, "qc")
    try:
        # The previous check's write is applied and rechecked before anything is cached: its
        # recheck would drop a result refilled within 50 ms of the first pass (a CI flake).
        px.settle()
        old = {sql: until_hit(px, pc, sql) for sql in dropped + kept}
        before = px.stats()
        q(via, write)
        for sql in dropped:
            truth = q(direct, sql)
            assert truth != old[sql], f"the test write does not change {sql!r}"
            got, waited = wait_for(lambda: q(pc, sql) == truth, timeout=5 if via.kind == "direct" else 0)
            assert got, f"{sql!r} still answered {q(pc, sql)} after {via.kind} {write!r}; MariaDB says {truth}"
        for sql in kept:
            hit, rows = is_hit(px, pc, sql)
            assert hit, f"{sql!r} was dropped by {via.kind} {write!r}; since the write: {moved(before, px.stats())}"
            assert rows == old[sql] == q(direct, sql)
    finally:
        direct.close()
