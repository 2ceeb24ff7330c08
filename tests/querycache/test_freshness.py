"""Randomized freshness checker (issue 5, "Tests"): writers through the proxy and directly on
MariaDB, readers through the proxy, for QC_FRESHNESS_SECONDS (default 20) with a seeded RNG
(QC_FRESHNESS_SEED, printed).

Tables qc.fresh(id, ver) and, for the finer tags of issue 13, qc.fresh_s (a _ci string primary
key), qc.fresh_c (a composite primary key) and qc.fresh_u (an integer primary key and a _ci unique
key): logical row i is in each of them. Each row has exactly one writer, which bumps ver by one per
UPDATE, so versions of a row only grow. Rows 1..PROXY_ROWS are written through the proxy, the rest
directly. Writers and readers spell string keys in random case with random trailing spaces (the
same key under the collation) and read with points, IN lists, BETWEEN and two-sided ranges,
and joins of fresh with fresh_u whose fresh_u side only its row tags bound.
- No read through the proxy (point select or a small range) returns a version of a row older
  than the last version acknowledged through the proxy before that read started.
- A proxy writer, right after its OK, reads its row through another proxy connection: fresh.
- A direct writer, after MariaDB's OK, polls the row through the proxy until the new version
  shows: the visibility delay (p50/p99 printed; asserted only against a generous bound, the
  100 ms p99 goal is reported, not asserted, on a shared 2-core machine).
- The cache must actually have served reads (Qcache_hits grew), or the check proves nothing.
"""
import os
import random
import threading
import time

from harness.mysqlproxy import connect
from qchelpers import q, until_hit

SECONDS = float(os.environ.get("QC_FRESHNESS_SECONDS", "20"))
SEED = int(os.environ.get("QC_FRESHNESS_SEED", "5005"))
ROWS = 40
PROXY_ROWS = 20
PROXY_WRITERS = 2
DIRECT_WRITERS = 2
READERS = 3


TABLES = ["fresh", "fresh_s", "fresh_c", "fresh_u"]


class Shared:
    def __init__(self):
        self.lock = threading.Lock()
        # last version acknowledged through the proxy, per (table, row)
        self.acked = {(t, i): 0 for t in TABLES for i in range(ROWS + 1)}
        self.violations = []
        self.delays = []
        self.reads = 0
        self.writes = 0
        self.errors = []
        self.stop = threading.Event()

    def fail(self, msg):
        with self.lock:
            if len(self.violations) < 20:
                self.violations.append(msg)


def spell(key, rnd):
    """The same string key under a _ci PAD SPACE collation: random case, trailing spaces."""
    return "".join(c.upper() if rnd.random() < 0.5 else c for c in key) + " " * rnd.randint(0, 2)


def where(t, i, rnd):
    """A WHERE clause (with args) selecting logical row i of table t by its key."""
    if t == "fresh" or (t == "fresh_u" and rnd.random() < 0.5):
        return "id = %s", (i,)
    if t == "fresh_s":
        return "code = %s", (spell(f"k{i}", rnd),)
    if t == "fresh_c":
        return "a = %s AND b = %s", (i % 4, spell(f"b{i}", rnd))
    return "email = %s", (spell(f"e{i}@x", rnd),)


# The column that names the logical row in each table's result rows, and how.
NAME = {"fresh": ("id", int), "fresh_s": ("code", lambda c: int(c[1:])),
        "fresh_c": ("b", lambda b: int(b[1:])), "fresh_u": ("id", int)}


def read_row(c, t, i, rnd):
    """Version of logical row i of t, read through connection c by a random spelling of its key."""
    w, args = where(t, i, rnd)
    return q(c, f"SELECT ver FROM {t} WHERE {w}", args)[0][0]


def write_row(c, t, i, ver, rnd):
    w, args = where(t, i, rnd)
    q(c, f"UPDATE {t} SET ver = %s WHERE {w}", (ver, *args))


def proxy_writer(px, sh, rows, rnd):
    w, r = px.connect("qc"), px.connect("qc")
    ver = {(t, i): 0 for t in TABLES for i in rows}
    try:
        while not sh.stop.is_set():
            t, i = rnd.choice(TABLES), rnd.choice(rows)
            ver[t, i] += 1
            write_row(w, t, i, ver[t, i], rnd)
            with sh.lock:
                sh.acked[t, i] = ver[t, i]
                sh.writes += 1
            got = read_row(r, t, i, rnd)
            if got < ver[t, i]:
                sh.fail(f"read-after-write: {t} row {i} version {got} right after version {ver[t, i]} was acknowledged")
            time.sleep(rnd.random() * 0.01)
    except Exception as e:  # noqa: BLE001 - reported by the test
        sh.errors.append(f"proxy writer: {e!r}")
        sh.stop.set()
    finally:
        w.close()
        r.close()


def direct_writer(px, db, sh, rows, rnd):
    w, r = connect(db.port, "qc"), px.connect("qc")
    ver = {(t, i): 0 for t in TABLES for i in rows}
    try:
        while not sh.stop.is_set():
            t, i = rnd.choice(TABLES), rnd.choice(rows)
            ver[t, i] += 1
            write_row(w, t, i, ver[t, i], rnd)
            t0 = time.monotonic()
            while True:
                got = read_row(r, t, i, rnd)
                waited = time.monotonic() - t0
                if got >= ver[t, i]:
                    break
                if waited > 10:
                    sh.fail(f"direct write of {t} row {i} version {ver[t, i]} not visible after 10 s (saw {got})")
                    break
                time.sleep(0.001)
            with sh.lock:
                sh.delays.append(waited)
                sh.writes += 1
            time.sleep(rnd.random() * 0.02)
    except Exception as e:  # noqa: BLE001
        sh.errors.append(f"direct writer: {e!r}")
        sh.stop.set()
    finally:
        w.close()
        r.close()


def read_query(t, rnd):
    """A random read of t (ranges: of fresh or fresh_u): (table read, sql, args, the logical rows
    it returns)."""
    x = rnd.random()
    col = NAME[t][0]
    if x < 0.4:
        i = rnd.randint(1, ROWS)
        w, args = where(t, i, rnd)
        return t, f"SELECT {col}, ver FROM {t} WHERE {w}", args, [i]
    if x < 0.7:
        rows = sorted(set(rnd.sample(range(1, ROWS + 1), rnd.randint(1, 4))))
        if t in ("fresh", "fresh_u") and (t == "fresh" or rnd.random() < 0.5):
            keys = [str(i) for i in rows]
            return t, f"SELECT {col}, ver FROM {t} WHERE id IN ({', '.join(keys)})", (), rows
        if t == "fresh_c":
            # (a, b) pairs of a composite key: IN lists on both columns, all combinations.
            rows = [i for i in rows if i % 4 == rows[0] % 4]
            bs = ", ".join(["%s"] * len(rows))
            args = (rows[0] % 4, *[spell(f"b{i}", rnd) for i in rows])
            return t, f"SELECT b, ver FROM fresh_c WHERE a = %s AND b IN ({bs})", args, rows
        name, fmt = ("code", "k{}") if t == "fresh_s" else ("email", "e{}@x")
        args = tuple(spell(fmt.format(i), rnd) for i in rows)
        return t, f"SELECT {col}, ver FROM {t} WHERE {name} IN ({', '.join(['%s'] * len(rows))})", args, rows
    a = rnd.randint(1, ROWS - 3)
    b = a + rnd.randint(0, 3)
    table = "fresh" if t in ("fresh_s", "fresh_c") else t
    sql = (f"SELECT id, ver FROM {table} WHERE id BETWEEN {a} AND {b} ORDER BY id" if rnd.random() < 0.5 else
           f"SELECT id, ver FROM {table} WHERE id >= {a} AND id < {b + 1} ORDER BY id")
    return table, sql, (), list(range(a, b + 1))


def join_read(c, sh, rnd):
    """Row i of fresh with its fresh_u row, joined on an expression of the fresh row: the
    fresh_u side is bounded by nothing the statement says, so it is tagged by the rows the
    result shows (u.id: row tags on joins). A LEFT JOIN that never matches holds no fresh_u
    row at all."""
    i = rnd.randint(1, ROWS)
    with sh.lock:
        floor = (sh.acked["fresh", i], sh.acked["fresh_u", i])
    if rnd.random() < 0.8:
        sql = ("SELECT f.id, f.ver, u.id, u.ver FROM fresh f JOIN fresh_u u ON u.email = CONCAT('e', f.id, '@x') "
               f"WHERE f.id = {i}")
        want = (i, i)
    else:
        sql = ("SELECT f.id, f.ver, u.id, u.ver FROM fresh f LEFT JOIN fresh_u u ON u.email = CONCAT('n', f.id) "
               f"WHERE f.id = {i}")
        want = (i, None)
    rows = q(c, sql)
    if len(rows) != 1 or (rows[0][0], rows[0][2]) != want:
        sh.fail(f"{sql}: read as {rows}")
    elif rows[0][1] < floor[0] or (want[1] is not None and rows[0][3] < floor[1]):
        sh.fail(f"stale read: {sql} read {rows[0]}, versions {floor} were acknowledged before")


def reader(px, sh, rnd):
    c = px.connect("qc")
    try:
        while not sh.stop.is_set():
            if rnd.random() < 0.15:
                join_read(c, sh, rnd)
                with sh.lock:
                    sh.reads += 1
                continue
            t, sql, args, rows = read_query(rnd.choice(TABLES), rnd)
            with sh.lock:
                floor = {i: sh.acked[t, i] for i in rows}
            got = {NAME[t][1](k): v for k, v in q(c, sql, args or None)}
            if set(got) != set(floor):
                sh.fail(f"{sql} {args}: rows {sorted(floor)} read as {sorted(got)}")
            for i, v in got.items():
                if v < floor.get(i, 0):
                    sh.fail(f"stale read: {t} row {i} version {v}, version {floor[i]} was acknowledged before "
                            f"{sql} {args}")
            with sh.lock:
                sh.reads += 1
    except Exception as e:  # noqa: BLE001
        sh.errors.append(f"reader: {e!r}")
        sh.stop.set()
    finally:
        c.close()


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def test_randomized_freshness(proxy, mariadb):
    mariadb.sql(f"""
USE qc;
CREATE TABLE qc.fresh (id INT PRIMARY KEY, ver BIGINT NOT NULL) ENGINE=InnoDB;
INSERT INTO qc.fresh SELECT seq, 0 FROM seq_1_to_{ROWS};
CREATE TABLE qc.fresh_s (code VARCHAR(16) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY,
  ver BIGINT NOT NULL) ENGINE=InnoDB;
INSERT INTO qc.fresh_s SELECT CONCAT('k', seq), 0 FROM seq_1_to_{ROWS};
CREATE TABLE qc.fresh_c (a INT, b VARCHAR(8) CHARACTER SET latin1 COLLATE latin1_swedish_ci, ver BIGINT NOT NULL,
  PRIMARY KEY (a, b)) ENGINE=InnoDB;
INSERT INTO qc.fresh_c SELECT seq % 4, CONCAT('b', seq), 0 FROM seq_1_to_{ROWS};
CREATE TABLE qc.fresh_u (id INT PRIMARY KEY, email VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci
  NOT NULL UNIQUE, ver BIGINT NOT NULL) ENGINE=InnoDB;
INSERT INTO qc.fresh_u SELECT seq, CONCAT('e', seq, '@x'), 0 FROM seq_1_to_{ROWS};
""")
    print(f"freshness checker: seed {SEED}, {SECONDS} s")
    master = random.Random(SEED)
    sh = Shared()
    proxy_rows = list(range(1, PROXY_ROWS + 1))
    direct_rows = list(range(PROXY_ROWS + 1, ROWS + 1))
    threads = []
    for k in range(PROXY_WRITERS):
        threads.append(threading.Thread(target=proxy_writer, args=(
            proxy, sh, proxy_rows[k::PROXY_WRITERS], random.Random(master.random()))))
    for k in range(DIRECT_WRITERS):
        threads.append(threading.Thread(target=direct_writer, args=(
            proxy, mariadb, sh, direct_rows[k::DIRECT_WRITERS], random.Random(master.random()))))
    for _ in range(READERS):
        threads.append(threading.Thread(target=reader, args=(proxy, sh, random.Random(master.random()))))
    before = proxy.counters()
    for t in threads:
        t.start()
    sh.stop.wait(SECONDS)
    sh.stop.set()
    for t in threads:
        t.join(30)
    after = proxy.counters()
    hits = after["Qcache_hits"] - before["Qcache_hits"]
    misses = after["Qcache_inserts"] - before["Qcache_inserts"] + after["Qcache_not_cached"] - before["Qcache_not_cached"]
    d = sh.delays
    print(f"reads {sh.reads}, writes {sh.writes}, cache hits {hits}, inserts+not_cached {misses}; "
          f"direct-write visibility over {len(d)} writes: p50 {pct(d, 0.5) * 1000:.1f} ms, "
          f"p99 {pct(d, 0.99) * 1000:.1f} ms, max {max(d, default=0) * 1000:.1f} ms (goal p99 <= 100 ms)")
    assert not sh.errors, sh.errors
    assert not sh.violations, sh.violations
    assert sh.reads > 100 and len(d) > 20
    assert hits > 0, "no read was served from the cache: the freshness check proved nothing"
    # The joins are cached too (else their part of the check proved nothing).
    c = proxy.connect("qc")
    until_hit(proxy, c, "SELECT f.id, f.ver, u.id, u.ver FROM fresh f JOIN fresh_u u "
                        "ON u.email = CONCAT('e', f.id, '@x') WHERE f.id = 1")
    c.close()
    assert pct(d, 0.99) < 2.0, f"direct-write visibility p99 {pct(d, 0.99):.3f} s"


# Issue 42, item 7: writes made on MariaDB whose effect the binlog does not name. Each round
# caches the reads first (so a missed invalidation would be served), makes one such write
# straight on MariaDB and polls through the proxy until every read shows it.
SIDE_EFFECTS = """
USE qc;
CREATE TABLE qc.se_src (id INT PRIMARY KEY, ver BIGINT NOT NULL) ENGINE=InnoDB;
CREATE TABLE qc.se_dst (id INT PRIMARY KEY, ver BIGINT NOT NULL) ENGINE=InnoDB;
INSERT INTO qc.se_src SELECT seq, 0 FROM seq_1_to_8;
INSERT INTO qc.se_dst SELECT seq, 0 FROM seq_1_to_8;
CREATE TRIGGER qc.se_src_au AFTER UPDATE ON qc.se_src FOR EACH ROW UPDATE qc.se_dst SET ver = NEW.ver WHERE id = NEW.id;
CREATE TABLE qc.se_parent (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE qc.se_child (id INT PRIMARY KEY, pid INT,
  FOREIGN KEY (pid) REFERENCES qc.se_parent (id) ON DELETE CASCADE ON UPDATE CASCADE) ENGINE=InnoDB;
CREATE TABLE qc.se_part (id INT PRIMARY KEY, ver BIGINT NOT NULL) ENGINE=InnoDB
  PARTITION BY RANGE (id) (PARTITION p0 VALUES LESS THAN (100), PARTITION p1 VALUES LESS THAN (200));
CREATE TABLE qc.se_swap (id INT PRIMARY KEY, ver BIGINT NOT NULL) ENGINE=InnoDB;
INSERT INTO qc.se_part VALUES (1, 0), (150, 0);
INSERT INTO qc.se_swap VALUES (1, 1);
"""


def test_direct_writes_the_binlog_does_not_name_stay_fresh(proxy, mariadb):
    """STATEMENT/MIXED-format UPDATE/DELETE of a table with an AFTER UPDATE trigger and with
    ON DELETE / ON UPDATE CASCADE children (the binlog shows the statement only; the follower
    adds the trigger's and cascades' tables), and ALTER TABLE ... EXCHANGE PARTITION (the
    follower reports both tables): every cached read shows the change within 5 s. Before,
    the trigger's table, the children and the exchanged table stayed stale for good."""
    mariadb.sql(SIDE_EFFECTS)
    rnd = random.Random(SEED)
    r = proxy.connect("qc")
    w = connect(mariadb.port, "qc")
    delays = []

    def fresh(reads):
        """Cached before the write; polled after it until each read gives what it should."""
        t0 = time.monotonic()
        for sql, want in reads:
            while True:
                got = q(r, sql)
                if got == want:
                    break
                assert time.monotonic() - t0 < 5, f"{sql!r} still {got!r}, want {want!r} ({fmt} format)"
                time.sleep(0.005)
        delays.append(time.monotonic() - t0)

    try:
        ver, swapped, fmt = 0, False, ""
        for n in range(24):
            fmt = rnd.choice(["STATEMENT", "MIXED"])
            q(w, f"SET SESSION binlog_format = '{fmt}'")
            kind = n % 3
            if kind == 0:  # a trigger's write
                i = rnd.randint(1, 8)
                read = f"SELECT ver FROM qc.se_dst WHERE id = {i}"
                until_hit(proxy, r, read)
                ver += 1
                q(w, f"UPDATE qc.se_src SET ver = {ver} WHERE id = {i}")
                fresh([(read, ((ver,),))])
            elif kind == 1:  # cascades: ON UPDATE, then ON DELETE
                q(w, "SET SESSION binlog_format = 'ROW'")
                q(w, f"INSERT INTO qc.se_parent VALUES ({n})")
                q(w, f"INSERT INTO qc.se_child VALUES ({n}, {n})")
                proxy.settle()
                read = f"SELECT pid FROM qc.se_child WHERE id = {n}"
                until_hit(proxy, r, read)
                q(w, f"SET SESSION binlog_format = '{fmt}'")
                q(w, f"UPDATE qc.se_parent SET id = {n + 1000} WHERE id = {n}")
                fresh([(read, ((n + 1000,),))])
                until_hit(proxy, r, read)
                q(w, f"DELETE FROM qc.se_parent WHERE id = {n + 1000}")
                fresh([(read, ())])
            else:  # a partition exchanged with a table
                reads = ["SELECT ver FROM qc.se_part WHERE id = 1", "SELECT ver FROM qc.se_swap WHERE id = 1"]
                for sql in reads:
                    until_hit(proxy, r, sql)
                q(w, "ALTER TABLE qc.se_part EXCHANGE PARTITION p0 WITH TABLE qc.se_swap")
                swapped = not swapped
                fresh([(reads[0], ((1 if swapped else 0,),)), (reads[1], ((0 if swapped else 1,),))])
    finally:
        r.close()
        w.close()
    print(f"side effects the binlog does not name: {len(delays)} writes, visible after "
          f"p50 {pct(delays, 0.5) * 1000:.1f} ms, max {max(delays) * 1000:.1f} ms")
