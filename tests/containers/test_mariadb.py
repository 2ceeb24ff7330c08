"""SQL containers on MariaDB (Debian's mariadbd via tests/harness/mariadb.py)."""
import shutil
import threading
import time

import pytest

from conftest import restart_during_load, start_with
from harness.mariadb import start_mariadb

pytestmark = pytest.mark.skipif(
    not (shutil.which("mariadbd") or shutil.which("mysqld") or shutil.which("/usr/sbin/mariadbd")),
    reason="mariadbd is not installed",
)


@pytest.fixture(scope="module")
def mdb(tmp_path_factory):
    with start_mariadb() as db:
        db.sql("""
CREATE DATABASE IF NOT EXISTS test;
CREATE TABLE test.demo_test (c1 VARCHAR(64) COLLATE utf8mb4_bin PRIMARY KEY, c2 VARCHAR(1024),
  c3 INT UNSIGNED, c4 BIGINT UNSIGNED, c5 INT) ENGINE=InnoDB;
CREATE TABLE test.untouched (k VARCHAR(32) PRIMARY KEY, v VARCHAR(32));
INSERT INTO test.demo_test VALUES ('AA', 'HELLO, HELLO', 8, 0, 0);
INSERT INTO test.untouched VALUES ('x', 'keep me');
GRANT ALL ON test.* TO 'sqlcached'@'%';
GRANT ALL ON test.* TO 'sqlcached'@'localhost';
""")
        d = tmp_path_factory.mktemp("mdb")
        cfg = d / "m.toml"
        cfg.write_text(f"""
[backend]
kind = "mariadb"
url = "{db.url('test')}?prefer_socket=false"
pool_size = 4
connect_timeout_ms = 1000
query_timeout_ms = 2000
plugin_tables = "off"

[options]
w_batch_size = 1

[[container]]
name = "setup_1"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"
unique_index = "PRIMARY"

[[container]]
name = "cached"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"
policy = "caching"
cache_ttl = 3600

[[container]]
name = "warm"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
policy = "caching"
cache_ttl = 3600
""")
        with start_with(cfg) as s:
            yield db, s


def test_core(mdb, client_of):
    db, s = mdb
    c = client_of(s)
    assert c.value("@@setup_1.AA") == b"HELLO, HELLO"
    assert c.store("set", "@@setup_1.k1", "v1", flags=3) == b"STORED"
    assert db.sql("SELECT c2, c3 FROM test.demo_test WHERE c1='k1'").strip() == "v1\t3"
    db.sql("UPDATE test.demo_test SET c2='from sql' WHERE c1='k1'")
    assert c.value("@@setup_1.k1") == b"from sql"
    assert c.cmd("bind setup_1") == b"OK"
    assert c.store("add", "k1", "x") == b"NOT_STORED"
    assert c.store("set", "n", "41") == b"STORED"
    assert c.cmd("incr n 1") == b"42"
    assert c.cmd("delete n") == b"DELETED"
    for k in ["x'", "'OR'1'='1", "a;DROP_TABLE_untouched"]:
        assert c.store("set", k, "v'); DROP TABLE untouched; --") == b"STORED"
        assert c.value(k) == b"v'); DROP TABLE untouched; --"
    assert db.sql("SELECT k, v FROM test.untouched").strip() == "x\tkeep me"


def test_backend_restart_during_load(mdb, client_of):
    db, s = mdb
    restart_during_load(s, client_of, db.stop, db.start,
                        lambda: db.sql("SELECT c1 FROM test.demo_test WHERE c1 LIKE 'load%'").split())


def test_caching_follows_the_binlog(mdb, client_of):
    """SQL writes to a `caching` container's table drop the memory copies (binlog), long
    before cache_ttl (an hour here)."""
    db, s = mdb
    c = client_of(s)
    assert c.store("set", "@@cached.bl1", "one") == b"STORED"
    assert c.store("set", "@@cached.bl2", "two") == b"STORED"
    assert c.value("@@cached.bl1") == b"one"  # now in memory
    assert c.value("@@cached.bl2") == b"two"

    def eventually(key, want):
        deadline = time.time() + 10
        got = c.value(key)
        while got != want and time.time() < deadline:
            time.sleep(0.1)
            got = c.value(key)
        return got

    db.sql("UPDATE test.demo_test SET c2 = 'changed in sql' WHERE c1 = 'bl1'")
    assert eventually("@@cached.bl1", b"changed in sql") == b"changed in sql"
    db.sql("DELETE FROM test.demo_test WHERE c1 = 'bl2'")
    assert eventually("@@cached.bl2", None) is None
    assert c.value("@@cached.bl1") == b"changed in sql"


def test_caching_writes_through(mdb, client_of):
    """Issue 43 item 3 (seed 001): under `caching` a set writes the table and, once the binlog
    shows the row it stored, the memory copy (as the InnoDB plugin's `caching` does), so a
    read after its own write is a hit; any other change still drops the copy."""
    from harness.mysqlproxy import stats

    db, s = mdb
    c = client_of(s)

    def written_through():
        return stats(s.port).get("container_cached_written_through", 0)

    def eventually(cond, what):
        deadline = time.time() + 10
        while not cond() and time.time() < deadline:
            time.sleep(0.05)
        assert cond(), what

    before = written_through()
    assert c.store("set", "@@cached.wt1", "mine", flags=5) == b"STORED"
    eventually(lambda: written_through() > before, "the write's binlog event did not fill the copy")
    # Proof that the get is answered from memory: a change the binlog never shows.
    db.sql("SET sql_log_bin = 0; UPDATE test.demo_test SET c2 = 'unlogged' WHERE c1 = 'wt1';")
    got, _ = c.get("@@cached.wt1")
    assert got["@@cached.wt1"][:2] == (5, b"mine"), got
    # The next write replaces it (its own event), a direct SQL change drops it.
    before = written_through()
    assert c.store("set", "@@cached.wt1", "again") == b"STORED"
    eventually(lambda: written_through() > before, "the second write did not fill the copy")
    assert c.value("@@cached.wt1") == b"again"
    db.sql("UPDATE test.demo_test SET c2 = 'from sql' WHERE c1 = 'wt1'")
    eventually(lambda: c.value("@@cached.wt1") == b"from sql", "a direct change did not drop the copy")
    # A write that does not store fills nothing.
    before = written_through()
    assert c.store("add", "@@cached.wt1", "not stored") == b"NOT_STORED"
    assert c.value("@@cached.wt1") == b"from sql"
    time.sleep(0.3)
    assert written_through() == before


def test_caching_reads_that_keep_missing_skip_the_copy(mdb, client_of):
    """Issue 43 item 3: gets of a `caching` container that keep missing its memory copy (here
    keys no row has) pause the copy: they read the table alone for a while
    (container_<c>_read_bypasses), and the copy is tried again after (a second, first)."""
    from harness.mysqlproxy import stats

    db, s = mdb
    c = client_of(s)
    st0 = stats(s.port)
    for i in range(300):
        assert c.value(f"@@cached.nope{i}") is None
    st1 = stats(s.port)
    assert st1["container_cached_read_bypass_starts"] > st0["container_cached_read_bypass_starts"], st1
    assert c.value("@@cached.nope-again") is None
    assert stats(s.port)["container_cached_read_bypasses"] > st0["container_cached_read_bypasses"]
    # Right answers meanwhile, from the table; and the copy is used again once the pause ends.
    assert c.store("set", "@@cached.rb1", "there") == b"STORED"
    assert c.value("@@cached.rb1") == b"there"
    time.sleep(1.2)
    bypassed = stats(s.port)["container_cached_read_bypasses"]
    assert c.value("@@cached.rb1") == b"there"
    assert stats(s.port)["container_cached_read_bypasses"] == bypassed, "still bypassed after the pause"


def test_caching_copy_warming_up_is_not_bypassed(mdb, client_of):
    """A cold read of many rows (a scan after a start: every get misses, and every miss
    fills the copy) is a copy warming up, not one that does not pay back: no read bypass
    starts, and the second pass is answered from memory (bench/containers.sh's PostgreSQL
    part found the copy paused after its warm-up scan, every later get read the table)."""
    from harness.mysqlproxy import stats

    db, s = mdb
    c = client_of(s)
    db.sql("INSERT INTO test.demo_test (c1, c2, c3, c4, c5) SELECT CONCAT('warm', seq), 'w', 0, 1, 0 "
           "FROM test.seq_0_to_599")
    time.sleep(0.5)  # the binlog's 600 inserts (and their rechecks) are past
    st0 = stats(s.port)
    for i in range(600):
        assert c.value(f"@@warm.warm{i}") == b"w"
    st1 = stats(s.port)
    assert st1["container_warm_read_bypass_starts"] == st0["container_warm_read_bypass_starts"], st1
    for i in range(600):
        assert c.value(f"@@warm.warm{i}") == b"w"
    assert stats(s.port)["container_warm_read_bypasses"] == st1["container_warm_read_bypasses"]


def test_caching_bounded_staleness_under_a_burst(mdb, client_of):
    """While the binlog follower is further behind the backend's binlog head than
    `max_lag_ms` (default 100), a `caching` container's gets read the table instead of the
    memory copy (issue 13 item 6): after a burst of 180,000 row changes in one transaction
    (20 tables under the follower's bulk limit, so every row is decoded), a direct update of a
    cached row is never answered with the old value more than 100 ms + the 20 ms probe period
    (+ 30 ms scheduling margin) after MariaDB acknowledged it."""
    from harness.mysqlproxy import stats

    db, s = mdb
    db.sql("".join(f"""CREATE TABLE test.w{k} (id INT PRIMARY KEY, v INT, pad CHAR(200));
INSERT INTO test.w{k} SELECT seq, 0, REPEAT('x', 200) FROM seq_1_to_9000;
""" for k in range(20)), database="test")
    c = client_of(s)
    assert c.store("set", "@@cached.lag1", "old") == b"STORED"
    assert c.value("@@cached.lag1") == b"old"
    seen, stop = [], threading.Event()

    def reader():
        r = client_of(s)
        while not stop.is_set():
            t0 = time.monotonic()
            seen.append((t0, r.value("@@cached.lag1")))

    before = stats(s.port).get("container_cached_lag_bypasses", 0)
    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    time.sleep(0.2)
    db.sql("BEGIN;" + "".join(f"UPDATE test.w{k} SET v = v + 1;" for k in range(20))
           + "COMMIT; UPDATE test.demo_test SET c2 = 'new' WHERE c1 = 'lag1';", database="test")
    ack = time.monotonic()
    time.sleep(2.0)
    stop.set()
    for t in readers:
        t.join()
    bypassed = stats(s.port).get("container_cached_lag_bypasses", 0) - before
    stale = [round(t0 - ack, 3) for t0, v in seen if t0 > ack + 0.15 and v != b"new"]
    assert stale == [], f"old value served after the bound: {stale[:10]}"
    assert bypassed > 0, "the burst did not put the follower beyond max_lag_ms: the test exercises nothing"
    assert c.value("@@cached.lag1") == b"new"


def test_caching_account_without_replication_rights_is_degraded(mdb, client_of, tmp_path):
    """Issue 42: the caching containers' backend account is checked at start as the MySQL
    proxy's is (one check, binlog::account): without REPLICATION SLAVE and BINLOG MONITOR the
    start says DEGRADED with the GRANT to run, stats say containers_binlog_degraded 1, and gets
    read the table (the follower never catches up: max_lag_ms sends them there), so a change
    made in SQL is still seen at once; after the GRANT the next check passes (every 10 s)."""
    from harness.mysqlproxy import stats
    db, _ = mdb
    db.sql("CREATE USER IF NOT EXISTS 'crepl'@'%' IDENTIFIED BY 'pw'; GRANT ALL ON test.* TO 'crepl'@'%';")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"""
[backend]
kind = "mariadb"
url = "mysql://crepl:pw@{db.host}:{db.port}/test?prefer_socket=false"
plugin_tables = "off"

[[container]]
name = "cached"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
policy = "caching"
cache_ttl = 3600
""")
    log = tmp_path / "log"
    with start_with(cfg, "--mysql-server-id", "77001", log=str(log)) as s:
        text = s.run_log()
        line = [x for x in text.splitlines() if "containers: DEGRADED" in x]
        assert line and "GRANT REPLICATION SLAVE ON *.* TO 'crepl'@'%'" in line[0], text
        st = stats(s.port)
        assert st["containers_binlog_degraded"] == 1, st
        assert set(st["containers_binlog_degraded_reason"].split(",")) == {"binlog_monitor", "replication_slave"}
        c = client_of(s)
        assert c.store("set", "@@cached.deg1", "one") == b"STORED"
        assert c.value("@@cached.deg1") == b"one"
        db.sql("UPDATE test.demo_test SET c2 = 'sql' WHERE c1 = 'deg1'")
        assert c.value("@@cached.deg1") == b"sql", "a get answered from a copy no binlog keeps fresh"
        db.sql("GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'crepl'@'%';")
        deadline = time.time() + 25
        while stats(s.port)["containers_binlog_degraded"] != 0 and time.time() < deadline:
            time.sleep(0.2)
        assert stats(s.port)["containers_binlog_degraded"] == 0
        assert "no longer degraded" in s.run_log()
    db.sql("DROP USER IF EXISTS 'crepl'@'%';")
