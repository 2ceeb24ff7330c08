"""Invalidation (issue 5, item 3): writes through the proxy are visible to the very next read
through the proxy, key-level tags keep other rows cached, and writes made directly on MariaDB
(other applications, triggers) show up through the binlog follower."""
import time

import pymysql
import pytest

from qchelpers import q, run_counted, until_hit, wait_for


@pytest.fixture(scope="module", autouse=True)
def tables(mariadb):
    mariadb.sql("""
USE qc;
CREATE TABLE qc.w (id INT PRIMARY KEY, v VARCHAR(64), n INT) ENGINE=InnoDB;
INSERT INTO qc.w SELECT seq, CONCAT('w', seq), seq FROM seq_1_to_200;
CREATE TABLE qc.src (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
CREATE TABLE qc.audit (id INT PRIMARY KEY, hits INT) ENGINE=InnoDB;
INSERT INTO qc.src VALUES (1, 0);
INSERT INTO qc.audit VALUES (1, 0);
CREATE TRIGGER qc.src_au AFTER UPDATE ON qc.src FOR EACH ROW UPDATE qc.audit SET hits = hits + 1 WHERE id = 1;
CREATE TABLE qc.parent (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE qc.child (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES qc.parent (id) ON DELETE CASCADE) ENGINE=InnoDB;
INSERT INTO qc.parent VALUES (1), (2);
INSERT INTO qc.child VALUES (1, 1), (2, 1), (3, 2);
CREATE PROCEDURE qc.bump(x INT) UPDATE qc.w SET n = n + 1000 WHERE id = x;
""")


def cache(px, conn, sql):
    """Make sure sql is in the cache (a hit), return its rows."""
    return until_hit(px, conn, sql)


WRITES = [
    # (statement through the proxy, a read that must change, its value after)
    ("UPDATE qc.w SET v = 'u1' WHERE id = 1", "SELECT v FROM qc.w WHERE id = 1", (("u1",),)),
    ("UPDATE qc.w SET v = 'u2' WHERE id IN (2, 3)", "SELECT v FROM qc.w WHERE id = 3", (("u2",),)),
    ("UPDATE qc.w SET v = 'u3' WHERE n = 4", "SELECT v FROM qc.w WHERE id = 4", (("u3",),)),
    ("DELETE FROM qc.w WHERE id = 5", "SELECT COUNT(*) FROM qc.w WHERE id = 5", ((0,),)),
    ("INSERT INTO qc.w (id, v, n) VALUES (1001, 'new', 1)", "SELECT v FROM qc.w WHERE id = 1001", (("new",),)),
    ("INSERT INTO qc.w VALUES (1002, 'new2', 1)", "SELECT COUNT(*) FROM qc.w WHERE id > 1000", ((2,),)),
    ("REPLACE INTO qc.w (id, v, n) VALUES (6, 'replaced', 6)", "SELECT v FROM qc.w WHERE id = 6", (("replaced",),)),
    ("INSERT INTO qc.w (id, v, n) VALUES (7, 'x', 7) ON DUPLICATE KEY UPDATE v = 'odku'",
     "SELECT v FROM qc.w WHERE id = 7", (("odku",),)),
    ("INSERT INTO qc.w (id, v, n) SELECT id + 2000, v, n FROM qc.w WHERE id = 8",
     "SELECT v FROM qc.w WHERE id = 2008", (("w8",),)),
    ("UPDATE qc.w a JOIN qc.w b ON b.id = a.id + 1 SET a.v = 'multi' WHERE a.id = 9",
     "SELECT v FROM qc.w WHERE id = 9", (("multi",),)),
    ("DELETE a FROM qc.w a JOIN qc.t b ON b.id = a.id WHERE a.id = 10", "SELECT COUNT(*) FROM qc.w WHERE id = 10", ((0,),)),
    ("UPDATE qc.w SET id = 1011 WHERE id = 11", "SELECT COUNT(*) FROM qc.w WHERE id = 1011", ((1,),)),
    ("UPDATE qc.w SET v = 'range' WHERE id BETWEEN 12 AND 13", "SELECT v FROM qc.w WHERE id = 13", (("range",),)),
    ("DELETE FROM qc.w WHERE id = 14 RETURNING id", "SELECT COUNT(*) FROM qc.w WHERE id = 14", ((0,),)),
    ("CALL qc.bump(15)", "SELECT n FROM qc.w WHERE id = 15", ((1015,),)),
    ("/* comment */ UPDATE /*!40000 qc.w */ SET v = 'c' WHERE id = 16", "SELECT v FROM qc.w WHERE id = 16", (("c",),)),
    ("update `qc`.`w` set `v` = 'quoted' where `id` = 17", "SELECT v FROM qc.w WHERE id = 17", (("quoted",),)),
    ("UPDATE w SET v = 'relative' WHERE id = 18", "SELECT v FROM qc.w WHERE id = 18", (("relative",),)),
    ("UPDATE qc.w SET v = 'ranged' WHERE id > 190", "SELECT v FROM qc.w WHERE id BETWEEN 195 AND 196",
     (("ranged",), ("ranged",))),
]


@pytest.mark.parametrize("write,read,after", WRITES, ids=[w[0][:60] for w in WRITES])
def test_write_through_proxy_visible_at_once(proxy, pc, write, read, after):
    cache(proxy, pc, read)
    other = proxy.connect("qc")
    try:
        cache(proxy, other, read)
        q(pc, write)
        assert q(pc, read) == after
        assert q(other, read) == after
    finally:
        other.close()


def test_load_data_through_proxy(proxy, tmp_path):
    c = proxy.connect("qc", local_infile=True)
    try:
        read = "SELECT v FROM qc.w WHERE id = 3001"
        cache(proxy, c, "SELECT COUNT(*) FROM qc.w WHERE id > 3000")
        f = tmp_path / "rows.tsv"
        f.write_text("3001\tloaded\t1\n3002\tloaded2\t2\n")
        q(c, f"LOAD DATA LOCAL INFILE '{f}' INTO TABLE qc.w")
        assert q(c, "SELECT COUNT(*) FROM qc.w WHERE id > 3000") == ((2,),)
        assert q(c, read) == (("loaded",),)
    finally:
        c.close()


def test_ddl_through_proxy(proxy, pc, mariadb):
    mariadb.sql("CREATE TABLE qc.ddl (id INT PRIMARY KEY, v INT); INSERT INTO qc.ddl VALUES (1, 1), (2, 2);")
    cache(proxy, pc, "SELECT * FROM qc.ddl WHERE id = 1")
    q(pc, "ALTER TABLE qc.ddl ADD COLUMN extra VARCHAR(8) DEFAULT 'e'")
    assert q(pc, "SELECT * FROM qc.ddl WHERE id = 1") == ((1, 1, "e"),)
    cache(proxy, pc, "SELECT COUNT(*) FROM qc.ddl")
    q(pc, "TRUNCATE TABLE qc.ddl")
    assert q(pc, "SELECT COUNT(*) FROM qc.ddl") == ((0,),)
    q(pc, "INSERT INTO qc.ddl VALUES (1, 5, 'x')")
    cache(proxy, pc, "SELECT v FROM qc.ddl WHERE id = 1")
    q(pc, "RENAME TABLE qc.ddl TO qc.ddl_old")
    q(pc, "CREATE TABLE qc.ddl (id INT PRIMARY KEY, v INT)")
    q(pc, "INSERT INTO qc.ddl VALUES (1, 77)")
    assert q(pc, "SELECT v FROM qc.ddl WHERE id = 1") == ((77,),)
    q(pc, "DROP TABLE qc.ddl")
    with pytest.raises(pymysql.err.ProgrammingError):
        q(pc, "SELECT v FROM qc.ddl WHERE id = 1")


def test_commit_invalidates_again(proxy, pc):
    read = "SELECT v FROM qc.w WHERE id = 40"
    other = proxy.connect("qc")
    try:
        cache(proxy, other, read)
        q(pc, "BEGIN")
        q(pc, "UPDATE qc.w SET v = 'tx' WHERE id = 40")
        # not committed: other sessions see (and may cache) the old value
        assert q(other, read) == (("w40",),)
        assert q(other, read) == (("w40",),)
        q(pc, "COMMIT")
        assert q(other, read) == (("tx",),)
        q(pc, "BEGIN")
        q(pc, "UPDATE qc.w SET v = 'rolled back' WHERE id = 40")
        q(pc, "ROLLBACK")
        assert q(other, read) == (("tx",),)
        assert q(pc, read) == (("tx",),)
    finally:
        other.close()


def test_key_level_invalidation(proxy, pc):
    r5, r6 = "SELECT v FROM qc.w WHERE id = 50", "SELECT v FROM qc.w WHERE id = 51"
    rin = "SELECT v FROM qc.w WHERE id IN (60, 61) ORDER BY id"
    rng = "SELECT v FROM qc.w WHERE id BETWEEN 70 AND 75 ORDER BY id"
    for r in (r5, r6, rin, rng):
        cache(proxy, pc, r)
    q(pc, "UPDATE qc.w SET v = 'k50' WHERE id = 50")
    # other rows of the same table stay cached
    for r in (r6, rin, rng):
        _, d = run_counted(proxy, pc, r)
        assert d["Qcache_hits"] == 1, (r, d)
    rows, d = run_counted(proxy, pc, r5)
    assert rows == (("k50",),) and d["Qcache_hits"] == 0, d
    # a write inside the IN list / the range evicts those results, not the others
    q(pc, "UPDATE qc.w SET v = 'k61' WHERE id = 61")
    q(pc, "UPDATE qc.w SET v = 'k73' WHERE id = 73")
    rows, d = run_counted(proxy, pc, rin)
    assert rows == (("w60",), ("k61",)) and d["Qcache_hits"] == 0, d
    rows, d = run_counted(proxy, pc, rng)
    assert ("k73",) in rows and d["Qcache_hits"] == 0, d
    _, d = run_counted(proxy, pc, r6)
    assert d["Qcache_hits"] == 1, d


def test_direct_write_becomes_visible(proxy, pc, mariadb):
    read = "SELECT v FROM qc.w WHERE id = 80"
    delays = []
    for i in range(10):
        cache(proxy, pc, read)
        mariadb.sql(f"UPDATE qc.w SET v = 'direct{i}' WHERE id = 80")
        t0 = time.monotonic()
        got, _ = wait_for(lambda: q(pc, read) == ((f"direct{i}",),), timeout=10)
        assert got, f"direct write {i} not visible through the proxy after 10 s"
        delays.append(time.monotonic() - t0)
    delays.sort()
    print(f"direct write visibility (mariadb CLI ack -> proxy read): median {delays[5] * 1000:.1f} ms, "
          f"max {delays[-1] * 1000:.1f} ms")
    stats = proxy.stats()
    assert stats.get("Qcache_invalidations_binlog_rows", 0) >= 1, stats


def test_trigger_through_proxy(proxy, pc):
    read = "SELECT hits FROM qc.audit WHERE id = 1"
    before = cache(proxy, pc, read)[0][0]
    q(pc, "UPDATE qc.src SET v = v + 1 WHERE id = 1")
    # the trigger's write reaches the cache through the binlog: fresh within a poll
    got, waited = wait_for(lambda: q(pc, read) == ((before + 1,),), timeout=10)
    assert got, f"trigger write not visible after {waited:.1f} s"


def test_cascade_through_proxy(proxy, pc):
    read = "SELECT COUNT(*) FROM qc.child WHERE pid = 1"
    assert cache(proxy, pc, read) == ((2,),)
    q(pc, "DELETE FROM qc.parent WHERE id = 1")
    # InnoDB's cascaded deletes are not in the binlog: the proxy must still not serve 2
    got, waited = wait_for(lambda: q(pc, read) == ((0,),), timeout=5)
    assert got, "child rows deleted by ON DELETE CASCADE still served from the cache"


def test_cascade_direct(proxy, pc, mariadb):
    read = "SELECT COUNT(*) FROM qc.child WHERE pid = 2"
    assert cache(proxy, pc, read) == ((1,),)
    mariadb.sql("DELETE FROM qc.parent WHERE id = 2")
    got, waited = wait_for(lambda: q(pc, read) == ((0,),), timeout=5)
    assert got, "child rows deleted by a direct ON DELETE CASCADE still served from the cache"


def test_truncate_and_alter_behind_the_proxy(proxy, pc, mariadb):
    mariadb.sql("CREATE TABLE qc.behind (id INT PRIMARY KEY, v INT); INSERT INTO qc.behind VALUES (1, 1), (2, 2);")
    cache(proxy, pc, "SELECT COUNT(*) FROM qc.behind")
    cache(proxy, pc, "SELECT * FROM qc.behind WHERE id = 1")
    mariadb.sql("TRUNCATE TABLE qc.behind")
    got, _ = wait_for(lambda: q(pc, "SELECT COUNT(*) FROM qc.behind") == ((0,),), timeout=10)
    assert got, "TRUNCATE on MariaDB not seen"
    mariadb.sql("INSERT INTO qc.behind VALUES (1, 9)")
    cache(proxy, pc, "SELECT * FROM qc.behind WHERE id = 1")
    mariadb.sql("ALTER TABLE qc.behind ADD COLUMN c INT DEFAULT 3")
    got, _ = wait_for(lambda: q(pc, "SELECT * FROM qc.behind WHERE id = 1") == ((1, 9, 3),), timeout=10)
    assert got, "ALTER on MariaDB not seen"
    mariadb.sql("DROP TABLE qc.behind; CREATE TABLE qc.behind (id INT PRIMARY KEY, v INT); INSERT INTO qc.behind VALUES (1, 42);")
    got, _ = wait_for(lambda: q(pc, "SELECT * FROM qc.behind WHERE id = 1") == ((1, 42),), timeout=10)
    assert got, "DROP + CREATE on MariaDB not seen"


def test_multi_statement_write_invalidated_before_its_ok(proxy):
    """Multi-statement text: the OK of a write reaches the client only after its invalidation,
    not at the end of the whole text. The writer's session keeps the write out of the binlog
    (sql_log_bin = 0), so only the proxy's own invalidation can drop the cached result; the
    text goes on sleeping after the UPDATE while another client reads through the proxy."""
    reader = proxy.connect("qc")
    writer = proxy.connect("qc", client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    try:
        until_hit(proxy, reader, "SELECT v FROM qc.w WHERE id = 150")
        with writer.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute("UPDATE qc.w SET v = 'multi-ok' WHERE id = 150; DO SLEEP(1.5)")  # returns at the first OK
            assert cur.rowcount == 1
            seen = q(reader, "SELECT v FROM qc.w WHERE id = 150")
            assert seen == (("multi-ok",),), "a write's OK was seen before its invalidation"
            assert cur.nextset() is not None or True
    finally:
        reader.close()
        writer.close()
