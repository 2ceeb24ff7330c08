"""Bounded staleness under write load (issue 13 item 6, `--query-cache-max-lag`).

The cache is fed by the binlog follower; when the follower falls behind (a burst of row
events, a sustained direct write load), results it has not yet invalidated would be served.
The follower measures its distance to the backend's binlog head (SHOW MASTER STATUS every
20 ms, `crates/binlog/src/head.rs`) and the cache answers from memory only while that
distance is at most the bound (default 100 ms). So after a direct write is acknowledged, no
read through the proxy that starts more than bound + 20 ms (the probe period) + a scheduling
margin later may return the old value.

- burst: one direct transaction updating 9,000 wide rows in each of 20 tables (180,000 rows,
  each table under the follower's bulk limit, so every row image is decoded and applied),
  then a direct single-row update of a row whose SELECT is cached (the issue's
  reproduction: ~400 ms of stale reads before);
- one big statement: `UPDATE` of 200,000 rows of one table, which the follower reports as
  one table-level change past 10,000 rows instead of decoding them all;
- sustained: direct writers updating 1,000-row ranges at full speed while a checker updates
  one cached row every 50 ms and readers read it through the proxy;
- the same burst with `--query-cache-max-lag 0` (no bound) serves the old value: the check
  above is not vacuous on this machine.
"""
import threading
import time

import pytest

from harness.mysqlproxy import connect, start_proxy
from qchelpers import q, until_hit

BIG_ROWS = 200_000
WIDE_TABLES, WIDE_ROWS = 20, 9_000
# Bound (100 ms, the default) + probe period (20 ms) + margin for this 2-CPU machine's
# scheduling of the reader threads.
GRACE = 0.100 + 0.020 + 0.030


@pytest.fixture(scope="module")
def big(mariadb):
    mariadb.sql(f"""
CREATE TABLE qc.big (id INT PRIMARY KEY, v INT, pad CHAR(200)) ENGINE=InnoDB;
INSERT INTO qc.big SELECT seq, 0, REPEAT('x', 200) FROM seq_1_to_{BIG_ROWS};
""" + "".join(f"""CREATE TABLE qc.w{k} LIKE qc.big;
INSERT INTO qc.w{k} SELECT seq, 0, REPEAT('x', 200) FROM seq_1_to_{WIDE_ROWS};
""" for k in range(WIDE_TABLES)), database="qc")
    return BIG_ROWS


class Reads:
    """Reader threads: each reads `SELECT n FROM qc.t WHERE id = <row>` through the proxy in a
    loop and records (start time, value)."""

    def __init__(self, px, row, threads=2):
        self.row, self.stop, self.seen, self.errors = row, threading.Event(), [], []
        self.threads = [threading.Thread(target=self.run, args=(px,)) for _ in range(threads)]

    def run(self, px):
        c = px.connect("qc")
        try:
            while not self.stop.is_set():
                t0 = time.monotonic()
                (n,), = q(c, "SELECT n FROM qc.t WHERE id = %s", (self.row,))
                self.seen.append((t0, n))
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.errors.append(repr(e))
        finally:
            c.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join()

    def stale(self, acks):
        """Reads that started more than GRACE after version v was acknowledged (acks:
        [(ack time, v)]) and returned an older version."""
        out = []
        for t0, n in self.seen:
            due = max((v for at, v in acks if t0 > at + GRACE), default=None)
            if due is not None and n < due:
                out.append((round(t0 - max(at for at, v in acks if v == due), 3), n, due))
        return out


WIDE = ["BEGIN"] + [f"UPDATE qc.w{k} SET v = v + 1" for k in range(WIDE_TABLES)] + ["COMMIT"]
ONE_BIG = ["UPDATE qc.big SET v = v + 1"]


def burst(mariadb, px, row, version, statements=WIDE):
    """Caches row's SELECT, then the burst (`statements`, directly on MariaDB), then the
    row's update: returns (reads, ack time, max binlog_lag_ms seen)."""
    w = connect(mariadb.port, "qc")
    c = px.connect("qc")
    q(w, "UPDATE qc.t SET n = %s WHERE id = %s", (version - 1, row))
    time.sleep(0.3)
    until_hit(px, c, f"SELECT n FROM qc.t WHERE id = {row}")
    lag = [0]
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            lag[0] = max(lag[0], px.stats().get("binlog_lag_ms", 0))
            time.sleep(0.01)

    watcher = threading.Thread(target=watch)
    watcher.start()
    with Reads(px, row) as reads:
        time.sleep(0.2)
        for sql in statements:
            q(w, sql)
        q(w, "UPDATE qc.t SET n = %s WHERE id = %s", (version, row))
        ack = time.monotonic()
        time.sleep(2.0)
    stop.set()
    watcher.join()
    w.close()
    c.close()
    assert not reads.errors, reads.errors
    return reads, ack, lag[0]


def test_a_burst_does_not_serve_old_results(mariadb, proxy, big):
    before = proxy.stats()
    reads, ack, lag = burst(mariadb, proxy, row=5, version=1001)
    after = proxy.stats()
    stale = reads.stale([(ack, 1001)])
    late = [(round(t0 - ack, 3), n) for t0, n in reads.seen if t0 > ack and n < 1001]
    bypassed = after["Qcache_lag_bypasses"] - before["Qcache_lag_bypasses"]
    print(f"burst: {len(reads.seen)} reads, follower up to {lag} ms behind, {bypassed} lookups "
          f"sent to the backend, {len(late)} old values within {GRACE * 1000:.0f} ms of the ack: {late[:5]}")
    assert stale == [], f"old value served more than {GRACE * 1000:.0f} ms after the ack: {stale[:10]}"
    assert lag > 100 and bypassed > 0, (
        f"the burst did not put the follower more than 100 ms behind (max binlog_lag_ms {lag}, "
        f"Qcache_lag_bypasses +{bypassed}): the test no longer exercises the bound")
    # Caught up: served from the cache again.
    until_hit(proxy, proxy.connect("qc"), "SELECT n FROM qc.t WHERE id = 5")


def test_one_big_statement_is_one_table_change(mariadb, proxy, big):
    c = proxy.connect("qc")
    until_hit(proxy, c, "SELECT v FROM qc.big WHERE id = 150000")
    (old,), = q(c, "SELECT v FROM qc.big WHERE id = 150000")
    reads, ack, lag = burst(mariadb, proxy, row=8, version=3001, statements=ONE_BIG)
    assert reads.stale([(ack, 3001)]) == []
    (new,), = q(c, "SELECT v FROM qc.big WHERE id = 150000")
    assert new == old + 1, "the cached row of the big table was dropped"
    print(f"one 200,000-row statement: follower up to {lag} ms behind")


def test_without_the_bound_the_burst_serves_old_results(mariadb, big, tmp_path):
    """The control: the same burst through a proxy with --query-cache-max-lag 0."""
    with start_proxy(mariadb, "--query-cache-max-lag", "0", log=tmp_path / "nobound.log") as px:
        reads, ack, lag = burst(mariadb, px, row=6, version=2001)
        assert px.stats()["Qcache_lag_bypasses"] == 0
    late = [(round(t0 - ack, 3), n) for t0, n in reads.seen if t0 > ack and n < 2001]
    print(f"no bound: follower up to {lag} ms behind, {len(late)} old values after the ack, last "
          f"{late[-1][0] if late else None} s after it")
    assert reads.stale([(ack, 2001)]), (
        f"without the bound no old value was served more than {GRACE * 1000:.0f} ms after the ack "
        f"(follower up to {lag} ms behind): the burst is too small to show what the bound prevents")


def test_sustained_direct_writes_stay_within_the_bound(mariadb, proxy, big):
    stop = threading.Event()
    errors = []
    updates = [0]

    def writer(k):
        w = connect(mariadb.port, "qc")
        lo = 1 + k * 50_000
        try:
            while not stop.is_set():
                for start in range(lo, lo + 50_000, 1000):
                    if stop.is_set():
                        break
                    q(w, "UPDATE qc.big SET v = v + 1 WHERE id >= %s AND id < %s", (start, start + 1000))
                    updates[0] += 1
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
        finally:
            w.close()

    row, acks = 7, []
    w = connect(mariadb.port, "qc")
    q(w, "UPDATE qc.t SET n = 0 WHERE id = %s", (row,))
    time.sleep(0.3)
    until_hit(proxy, proxy.connect("qc"), f"SELECT n FROM qc.t WHERE id = {row}")
    before = proxy.stats()
    writers = [threading.Thread(target=writer, args=(k,)) for k in range(3)]
    for t in writers:
        t.start()
    with Reads(proxy, row) as reads:
        for v in range(1, 80):
            q(w, "UPDATE qc.t SET n = %s WHERE id = %s", (v, row))
            acks.append((time.monotonic(), v))
            time.sleep(0.05)
        time.sleep(0.5)
    stop.set()
    for t in writers:
        t.join()
    w.close()
    after = proxy.stats()
    assert not errors and not reads.errors, (errors, reads.errors)
    stale = reads.stale(acks)
    hits = after["Qcache_hits"] - before["Qcache_hits"]
    bypassed = after["Qcache_lag_bypasses"] - before["Qcache_lag_bypasses"]
    print(f"sustained: {updates[0]} 1000-row updates, {len(reads.seen)} reads ({hits} hits, {bypassed} "
          f"sent to the backend for lag), {len(acks)} checked versions")
    assert stale == [], f"{len(stale)} reads older than {GRACE * 1000:.0f} ms: {stale[:10]}"
