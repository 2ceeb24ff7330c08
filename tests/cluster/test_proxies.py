"""Several query-cache proxies (sqlcached --mysql-listen) on one database (issue 9, item 2):
randomized freshness runs against real MariaDB servers and real sqlcached processes.

1. test_two_proxies_one_mariadb: proxies A and B, each following the binlog of the same
   MariaDB. Writers update rows through A (rows 1..20) and directly on MariaDB (rows 21..30);
   readers read the rows through A and B with cacheable point SELECTs.
   - through A, no read ever returns a version older than one acknowledged through A before
     the read started (0 stale reads; A invalidates before its OK);
   - through B, a write acknowledged through A becomes visible within 100 ms at p99: after
     the OK the writer polls through B (whose copy was read just before the write) until the
     new version shows; p50/p99/max and the reads through B that were stale by more than
     100 ms are printed (at most 1% of the reads may be, none by more than 1 s);
   - direct writes: visibility through A and B (both binlog-driven) is measured the same way.
2. test_proxy_on_a_replica: a primary and a replica (GTID replication, the replica writes
   what it applies to its own binlog: harness/mariadb.py start_replica). Writes through a
   proxy on the primary (rows 1..16) and directly on the primary (rows 17..26); reads through
   a proxy whose backend is the replica and which follows the replica's binlog.
   - the proxy never serves a version older than one the replica itself returned more than
     100 ms before (readers read the replica directly, then through its proxy; as in 1., at
     most 1% of the reads may be, on a loaded machine, and none by more than 1 s);
   - after each write the writer polls the replica directly and through its proxy: the
     delay from the primary's OK to the new version on the replica (replication lag) and
     through the replica's proxy, and their difference (what the proxy adds) are printed;
     the difference's p99 is asserted within 100 ms.
   Both fail unless the caches were really hit (Qcache_hits), or the checks prove nothing.
3. test_binlog_invalidation_of_a_busy_row: a change that reaches a proxy only through the
   binlog must not leave the old result cached when a miss reads the row between the binlog
   event and the moment MariaDB makes the commit visible (it sends the binlog before the
   engine commit). Found by this file as a bug (11/300 updates left stuck entries); fixed by
   delivering each row change again 50 ms later (crates/binlog/src/feeds.rs, rechecks). A run
   of 1. or 2. in which a version is still not visible 2 s after its OK (while the backend has
   it) counts a "stuck" entry and fails.

Run (about 50 s; FULL=1 runs each randomized phase 60 s instead of 10 and the reproduction
30 s instead of 8):

    python3 -m pytest -q -s -p no:cacheprovider tests/cluster/test_proxies.py

CLUSTER_SECONDS and CLUSTER_REPRO_SECONDS override those lengths, CLUSTER_SEED the seed
(printed); -s shows the figures.
"""
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from cluster_freshness import GOAL, HARD, Tally, Versions, check_late, figures, hammered_updates, now, pct, poll_all
from harness.mariadb import start_mariadb, start_replica
from harness.mysqlproxy import connect, start_proxy

pymysql = pytest.importorskip("pymysql", reason="PyMySQL missing: pip install -r tests/requirements.txt")

if not (shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists()):
    pytest.skip("mariadbd is not installed", allow_module_level=True)

FULL = os.environ.get("FULL") == "1"
SECONDS = float(os.environ.get("CLUSTER_SECONDS", "60" if FULL else "10"))
SEED = int(os.environ.get("CLUSTER_SEED", "9002"))
REPRO_SECONDS = float(os.environ.get("CLUSTER_REPRO_SECONDS", "30" if FULL else "8"))

SELECT = "SELECT ver FROM t WHERE id = %s"

KNOWN_BUG = ("regression (fixed by the rechecks in crates/binlog/src/feeds.rs): a binlog invalidation can reach the proxy before MariaDB makes the commit "
             "visible (the binlog is written and sent before the engine commit); a miss in that window "
             "reads the old row and the proxy keeps it until the row's next change")


def schema(rows):
    return f"""
CREATE DATABASE cl;
USE cl;
CREATE TABLE cl.t (id INT PRIMARY KEY, ver BIGINT NOT NULL) ENGINE=InnoDB;
INSERT INTO cl.t SELECT seq, 0 FROM seq_1_to_{rows};
"""


def ver_of(conn, i):
    with conn.cursor() as cur:
        cur.execute(SELECT, (i,))
        return cur.fetchone()[0]


def update(conn, i, ver):
    with conn.cursor() as cur:
        cur.execute("UPDATE t SET ver = %s WHERE id = %s", (ver, i))


def until_cached(px, rows):
    """Read every row through px until a read is a cache hit (the first reads only teach the
    proxy the table), so the run starts warm."""
    c = px.connect("cl")
    try:
        deadline = time.monotonic() + 20
        while True:
            before = px.counters()["Qcache_hits"]
            for i in rows:
                ver_of(c, i)
            if px.counters()["Qcache_hits"] > before:
                break
            assert time.monotonic() < deadline, f"{px.mysql_addr} never served a read from the cache"
            time.sleep(0.05)
        for i in rows:  # each row's entry in place
            ver_of(c, i)
    finally:
        c.close()


def hits(before, px):
    return px.counters()["Qcache_hits"] - before


def logs_on_failure(request, *procs):
    if request.session.testsfailed:
        for p in procs:
            print(f"sqlcached log: {p.log}")


# --- 1. two proxies on one MariaDB -------------------------------------------------------

@pytest.fixture
def one_db_two_proxies(request, tmp_path):
    with start_mariadb() as db:
        db.sql(schema(30))
        with start_proxy(db, "-t", "2", log=tmp_path / "a.log") as a, \
                start_proxy(db, "-t", "2", log=tmp_path / "b.log") as b:
            yield db, a, b
            logs_on_failure(request, a, b)


def test_two_proxies_one_mariadb(one_db_two_proxies):
    db, A, B = one_db_two_proxies
    rows_a, rows_direct = list(range(1, 21)), list(range(21, 31))
    until_cached(A, rows_a + rows_direct)
    until_cached(B, rows_a + rows_direct)
    acked_a = Versions()   # versions acknowledged through A
    acked = Versions()     # every acknowledged version (A and direct)
    tally = Tally()
    master = random.Random(SEED)

    def writer_a(rows, rnd):
        w, ra, rb = A.connect("cl"), A.connect("cl"), B.connect("cl")
        ver = {i: 0 for i in rows}
        try:
            while not tally.stop.is_set():
                i = rnd.choice(rows)
                ver_of(rb, i)  # B holds the row (a hit, or a fill)
                ver[i] += 1
                update(w, i, ver[i])
                t_ok = now()
                acked_a.add(i, ver[i], t_ok)
                acked.add(i, ver[i], t_ok)
                got = ver_of(ra, i)  # another connection through A: the write is there
                if got < ver[i]:
                    tally.fail(f"A: row {i} read as version {got} after version {ver[i]} was acknowledged through A")
                delays, old, last = poll_all({"b": lambda: ver_of(rb, i)}, ver[i], t_ok, rnd)
                if "b" in delays:
                    tally.sample("a_write_seen_on_b", delays["b"])
                else:
                    tally.stuck("b", i, last["b"], ver[i])
                tally.count("b_first_read_old", old["b"])
                tally.count("writes_a")
                time.sleep(rnd.random() * 0.01)
        finally:
            for c in (w, ra, rb):
                c.close()

    def writer_direct(rows, rnd):
        w, ra, rb = connect(db.port, "cl"), A.connect("cl"), B.connect("cl")
        ver = {i: 0 for i in rows}
        try:
            while not tally.stop.is_set():
                i = rnd.choice(rows)
                ver_of(ra, i)
                ver_of(rb, i)
                ver[i] += 1
                update(w, i, ver[i])
                t_ok = now()
                acked.add(i, ver[i], t_ok)
                delays, _, last = poll_all({"a": lambda: ver_of(ra, i), "b": lambda: ver_of(rb, i)}, ver[i], t_ok, rnd)
                for name in ("a", "b"):
                    if name in delays:
                        tally.sample(f"direct_write_seen_on_{name}", delays[name])
                    else:
                        tally.stuck(name, i, last[name], ver[i])
                tally.count("writes_direct")
                time.sleep(rnd.random() * 0.02)
        finally:
            for c in (w, ra, rb):
                c.close()

    def reader(px, name, rnd):
        c = px.connect("cl")
        try:
            while not tally.stop.is_set():
                i = rnd.randint(1, 30)
                t0 = now()
                floor = acked_a.floor(i, t0)
                got = ver_of(c, i)
                if name == "a" and got < floor:
                    tally.fail(f"A: stale read: row {i} version {got}, version {floor} was acknowledged through A "
                               "before the read")
                tally.stale(name, acked.stale_for(i, got, t0), i, got)
                time.sleep(rnd.random() * 0.002)
        finally:
            c.close()

    print(f"\ntwo proxies on one MariaDB: seed {SEED}, {SECONDS:.0f} s")
    hits_a, hits_b = A.counters()["Qcache_hits"], B.counters()["Qcache_hits"]
    targets = [(f"writer-a{k}", lambda k=k: writer_a(rows_a[k::2], random.Random(master.random()))) for k in range(2)]
    targets.append(("writer-direct", lambda: writer_direct(rows_direct, random.Random(master.random()))))
    for name, px in (("a", A), ("a", A), ("b", B), ("b", B)):
        targets.append((f"reader-{name}", lambda px=px, name=name: reader(px, name, random.Random(master.random()))))
    tally.run(SECONDS, targets)
    hits_a, hits_b = hits(hits_a, A), hits(hits_b, B)
    s, n = tally.samples, tally.counts

    print(f"writes through A {n['writes_a']}, direct {n['writes_direct']}; "
          f"reads through A {n['a_reads']}, through B {n['b_reads']}; Qcache_hits A {hits_a}, B {hits_b}")
    print(f"A-write -> visible through B: {figures(s['a_write_seen_on_b'], 5)}; "
          f"B still had the old version at the first poll {n['b_first_read_old']} times")
    print(f"direct write -> visible through A: {figures(s['direct_write_seen_on_a'], 5)}")
    print(f"direct write -> visible through B: {figures(s['direct_write_seen_on_b'], 5)}")
    for name in "ab":
        print(f"readers through {name.upper()}: {n[f'{name}_stale']} of {n[f'{name}_reads']} reads behind the newest "
              f"acknowledged version ({figures(s[f'{name}_stale_age'])}), {n[f'{name}_stale_past_goal']} by more than "
              f"{GOAL * 1000:.0f} ms")
    print(f"stale reads through A after an acknowledged write through A: {n['violations']}")
    explained, unexplained = tally.late_reads()
    print(f"stuck entries (old version 2 s after the OK): A {n['a_stuck']}, B {n['b_stuck']} {tally.stuck_log}; "
          f"reads stale by more than {GOAL * 1000:.0f} ms explained by them {len(explained)}, "
          f"others {len(unexplained)} (by more than {HARD:.0f} s: {sum(x[3] > HARD for x in unexplained)})")
    assert not tally.errors, tally.errors
    assert not tally.violations, tally.violations
    assert n["writes_a"] >= 50 and n["writes_direct"] >= 20 and n["b_reads"] >= 200
    assert hits_a > 100 and hits_b > 100, f"the caches were hardly used (hits A {hits_a}, B {hits_b})"
    check_late(tally, n["a_reads"] + n["b_reads"])
    assert pct(s["a_write_seen_on_b"], 0.99) <= GOAL, figures(s["a_write_seen_on_b"])
    assert pct(s["direct_write_seen_on_b"], 0.99) <= GOAL, figures(s["direct_write_seen_on_b"])
    assert pct(s["direct_write_seen_on_a"], 0.99) <= GOAL, figures(s["direct_write_seen_on_a"])
    if n["a_stuck"] or n["b_stuck"]:
        pytest.fail(f"{KNOWN_BUG}: {n['a_stuck'] + n['b_stuck']} stuck entries {tally.stuck_log[:3]}")


# --- 2. a proxy on a replica --------------------------------------------------------------

@pytest.fixture
def replica_pair(request, tmp_path):
    with start_mariadb() as primary, start_replica(primary) as replica:
        primary.sql(schema(26))
        replica.wait_caught_up(primary)
        with start_proxy(primary, "-t", "2", log=tmp_path / "primary-proxy.log") as pp, \
                start_proxy(replica, "-t", "2", log=tmp_path / "replica-proxy.log") as rp:
            yield primary, replica, pp, rp
            logs_on_failure(request, pp, rp)


def test_proxy_on_a_replica(replica_pair):
    primary, replica, PP, RP = replica_pair
    rows_p, rows_direct = list(range(1, 17)), list(range(17, 27))
    until_cached(RP, rows_p + rows_direct)
    acked = Versions()     # versions acknowledged by the primary (through its proxy or directly)
    on_replica = Versions()  # versions the replica itself returned, and when
    tally = Tally()
    master = random.Random(SEED + 1)

    def writer(via_proxy, rows, rnd):
        w = PP.connect("cl") if via_proxy else connect(primary.port, "cl")
        rd, rp = connect(replica.port, "cl"), RP.connect("cl")
        ver = {i: 0 for i in rows}
        try:
            while not tally.stop.is_set():
                i = rnd.choice(rows)
                ver_of(rp, i)  # the replica's proxy holds the row
                ver[i] += 1
                update(w, i, ver[i])
                t_ok = now()
                acked.add(i, ver[i], t_ok)
                def on_read(name, got, t):
                    if name == "replica":
                        on_replica.add(i, got, t)

                seen, _, last = poll_all({"replica": lambda: ver_of(rd, i), "rp": lambda: ver_of(rp, i)}, ver[i], t_ok,
                                         rnd, on_read=on_read)
                if "replica" not in seen:
                    tally.fail(f"row {i} version {ver[i]} not on the replica 2 s after the primary's OK")
                elif "rp" not in seen:
                    tally.stuck("rp", i, last["rp"], ver[i])
                else:
                    tally.sample("replica", seen["replica"])
                    tally.sample("proxy", seen["rp"])
                    tally.sample("added", seen["rp"] - seen["replica"])
                tally.count("writes")
                time.sleep(rnd.random() * 0.01)
        finally:
            for c in (w, rd, rp):
                c.close()

    def reader(rnd):
        rd, rp = connect(replica.port, "cl"), RP.connect("cl")
        try:
            while not tally.stop.is_set():
                i = rnd.randint(1, 26)
                got = ver_of(rd, i)
                on_replica.add(i, got, now())
                t0 = now()
                got = ver_of(rp, i)
                tally.stale("rp", on_replica.stale_for(i, got, t0), i, got)
                tally.stale("rp_vs_primary", acked.stale_for(i, got, t0))
                time.sleep(rnd.random() * 0.002)
        finally:
            rd.close()
            rp.close()

    print(f"\nproxy on a replica: seed {SEED + 1}, {SECONDS:.0f} s")
    hits_rp = RP.counters()["Qcache_hits"]
    targets = [(f"writer-proxy{k}", lambda k=k: writer(True, rows_p[k::2], random.Random(master.random())))
               for k in range(2)]
    targets.append(("writer-direct", lambda: writer(False, rows_direct, random.Random(master.random()))))
    targets += [(f"reader{k}", lambda: reader(random.Random(master.random()))) for k in range(3)]
    tally.run(SECONDS, targets)
    hits_rp = hits(hits_rp, RP)
    s, n = tally.samples, tally.counts
    lag = replica.slave_status().get("Seconds_Behind_Master")

    explained, unexplained = tally.late_reads()
    print(f"writes {n['writes']} on the primary; reads through the replica's proxy {n['rp_reads']}, "
          f"Qcache_hits there {hits_rp}; Seconds_Behind_Master at the end {lag}")
    print(f"primary OK -> visible on the replica (direct):       {figures(s['replica'], 5)}")
    print(f"primary OK -> visible through the replica's proxy:   {figures(s['proxy'], 5)}")
    print(f"added by the proxy (proxy - replica, same write):    {figures(s['added'], 5)}")
    print(f"readers: {n['rp_stale']} proxy reads older than a version the replica had already returned "
          f"({figures(s['rp_stale_age'])}), {n['rp_stale_past_goal']} by more than {GOAL * 1000:.0f} ms; "
          f"behind the primary's acknowledged version: {n['rp_vs_primary_stale']} "
          f"({figures(s['rp_vs_primary_stale_age'])})")
    print(f"stuck entries (old version 2 s after the OK, the replica had the new one): {n['rp_stuck']} "
          f"{tally.stuck_log}; reads stale by more than {GOAL * 1000:.0f} ms explained by them {len(explained)}, "
          f"others {len(unexplained)} (by more than {HARD:.0f} s: {sum(x[3] > HARD for x in unexplained)})")
    assert not tally.errors, tally.errors
    assert not tally.violations, tally.violations
    assert n["writes"] >= 50 and n["rp_reads"] >= 200
    assert hits_rp > 100, f"the replica's proxy hardly served from its cache ({hits_rp} hits)"
    check_late(tally, n["rp_reads"])
    assert pct(s["added"], 0.99) <= GOAL, figures(s["added"])
    if n["rp_stuck"]:
        pytest.fail(f"{KNOWN_BUG}: {n['rp_stuck']} stuck entries {tally.stuck_log[:3]}")


# --- the known bug, on its own ------------------------------------------------------------

def test_binlog_invalidation_of_a_busy_row(tmp_path):
    """Minimal reproduction (one MariaDB, one proxy): three connections keep reading row 1
    through the proxy while it is updated directly on MariaDB for REPRO_SECONDS; 5 ms after
    each update's OK the proxy is asked again, and an old version that is still there 0.3 s
    later is a stuck entry. Seen in 0.5% to 3.5% of the updates on a loaded 2-CPU machine: the
    binlog event dropped the entry before MariaDB made the commit visible, the next miss read
    the old row, and as no invalidation followed, the proxy stored it (Qcache_fills_refused
    stays 0) and serves it until the row changes again. Writes through the proxy are not
    affected (it invalidates again after the backend's OK)."""
    with start_mariadb() as db:
        db.sql(schema(1))
        with start_proxy(db, "-t", "2", log=tmp_path / "proxy.log") as px:
            until_cached(px, [1])
            w = connect(db.port, "cl")
            try:
                stale, updates = hammered_updates(lambda v: update(w, 1, v), lambda c: ver_of(c, 1),
                                                  lambda: px.connect("cl"), REPRO_SECONDS)
            finally:
                w.close()
            st = px.stats()
            print(f"\n{len(stale)} of {updates} direct updates left the old version cached (update, version "
                  f"5 ms after, 0.3 s after): {stale[:5]}; Qcache_fills_refused {st.get('Qcache_fills_refused')}")
            assert not stale, f"{len(stale)} of {updates} direct updates left the old version cached: {stale[:5]}"
