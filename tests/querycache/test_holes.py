"""The query cache's analysis holes (issue 17), each against a real MariaDB, through the proxy
and directly, repeated to catch races:

1. executable comments follow the backend's version (`/*!999999 ... */` is a comment to 10.11);
2. a CTE named like a real table hides it only in its own scope;
3. temporary tables made by any route (EXECUTE IMMEDIATE, PREPARE/EXECUTE, CALL, a stored
   function, COM_STMT_PREPARE) turn caching off for that session: no other session reads them;
4. a proxied write's side effects (triggers, FK cascades, stored functions that write, ANALYZE
   UPDATE, COM_STMT_EXECUTE with statement id 0xFFFFFFFF, statements lexed under
   NO_BACKSLASH_ESCAPES) are invalidated before its OK; direct writes with cascades are seen
   through the binlog (InnoDB's cascaded rows are not in it);
5. a prepared statement resolves (and is cached) against the database it was prepared in.
"""
import time

import pytest

import binproto as bp
from conftest import SCHEMA
from harness.mariadb import start_mariadb
from qchelpers import q, until_hit, wait_for

HOLES = """
SET GLOBAL log_bin_trust_function_creators = 1;
CREATE DATABASE h;
USE h;
CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(32)) ENGINE=InnoDB;
INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f'), (7, 'g');
CREATE TABLE one (id INT PRIMARY KEY) ENGINE=InnoDB;
INSERT INTO one VALUES (1);
CREATE TABLE tt (id INT PRIMARY KEY, v VARCHAR(32)) ENGINE=InnoDB;
INSERT INTO tt VALUES (1, 'real');
CREATE TABLE ta (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
CREATE TABLE tb (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO ta VALUES (1, 0);
INSERT INTO tb VALUES (1, 0);
CREATE TRIGGER ta_up AFTER UPDATE ON ta FOR EACH ROW UPDATE tb SET v = NEW.v WHERE id = NEW.id;
CREATE TABLE par (id INT PRIMARY KEY) ENGINE=InnoDB;
CREATE TABLE chi (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES par (id) ON DELETE CASCADE) ENGINE=InnoDB;
INSERT INTO par SELECT seq FROM seq_1_to_60;
INSERT INTO chi SELECT seq, seq FROM seq_1_to_60;
CREATE TABLE w (id INT PRIMARY KEY, v INT) ENGINE=InnoDB;
INSERT INTO w VALUES (1, 0);
DELIMITER //
CREATE FUNCTION bump(x INT) RETURNS INT MODIFIES SQL DATA BEGIN UPDATE w SET v = v + 1 WHERE id = x; RETURN x; END//
CREATE PROCEDURE mk_tt() BEGIN CREATE TEMPORARY TABLE tt (id INT PRIMARY KEY, v VARCHAR(32)); INSERT INTO tt VALUES (1, 'temp'); END//
CREATE FUNCTION mk_tt_f() RETURNS INT MODIFIES SQL DATA BEGIN CREATE TEMPORARY TABLE tt (id INT PRIMARY KEY, v VARCHAR(32)); INSERT INTO tt VALUES (1, 'temp'); RETURN 1; END//
DELIMITER ;
"""

TRIES = 20


def proxy_invalidations(proxy):
    """Invalidations the proxy made itself (at a write's reply, not from the binlog)."""
    return proxy.stats()["Qcache_invalidations_proxy"]


@pytest.fixture(scope="module")
def mariadb():
    """This module's MariaDB: the qc schema and the h schema above, made before the proxy starts."""
    with start_mariadb() as db:
        db.sql(SCHEMA)
        db.sql(HOLES)
        yield db


@pytest.fixture
def hc(proxy):
    """Two connections through the proxy to database h (a writer and a reader)."""
    a, b = proxy.connect("h"), proxy.connect("h")
    yield a, b
    a.close()
    b.close()


@pytest.fixture
def hd(mariadb):
    """A connection straight to MariaDB, database h."""
    from harness.mysqlproxy import connect
    c = connect(mariadb.port, "h")
    yield c
    c.close()


def test_versioned_comment_above_the_server_version_is_a_comment(proxy, hc, hd):
    w, r = hc
    sql = "SELECT id, v FROM t /*!999999 WHERE id = 1 */ ORDER BY id"
    assert len(q(hd, sql)) == 7, "MariaDB skips the comment: every row"
    for i in range(5):
        until_hit(proxy, r, sql)
        q(w, f"UPDATE t SET v = 'p{i}' WHERE id = 2")
        assert q(r, sql) == q(hd, sql), "a proxied write to another row"
        until_hit(proxy, r, sql)
        q(hd, f"UPDATE t SET v = 'd{i}' WHERE id = 3")
        fresh, waited = wait_for(lambda: q(r, sql) == q(hd, sql), timeout=5)
        assert fresh, f"a direct write was never seen (waited {waited:.2f}s)"


def test_cte_named_like_a_table_hides_it_only_in_its_scope(proxy, hc, hd):
    w, r = hc
    sql = "SELECT (WITH t AS (SELECT 5 AS id) SELECT id FROM t) AS a, (SELECT MAX(id) FROM t) AS b FROM one"
    for i in range(3):
        until_hit(proxy, r, sql)
        q(w, f"INSERT INTO t VALUES ({100 + i}, 'new')")
        assert q(r, sql) == q(hd, sql) == ((5, 100 + i),)


ROUTES = {
    "execute immediate": ["EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE tt (id INT PRIMARY KEY, v VARCHAR(32))'",
                          "INSERT INTO tt VALUES (1, 'temp')"],
    "prepare/execute": ["PREPARE s FROM 'CREATE TEMPORARY TABLE tt (id INT PRIMARY KEY, v VARCHAR(32))'",
                        "EXECUTE s", "INSERT INTO tt VALUES (1, 'temp')"],
    "call": ["CALL mk_tt()"],
    "stored function": ["SELECT mk_tt_f()"],
    "do stored function": ["DO mk_tt_f()"],
}


@pytest.mark.parametrize("route", list(ROUTES) + ["binary prepare"])
def test_temporary_tables_by_any_route_stay_in_their_session(proxy, hc, route):
    a, b = hc
    sql = "SELECT v FROM tt WHERE id = 1"
    until_hit(proxy, b, sql)
    if route == "binary prepare":
        sid, _ = bp.prepare(a, "CREATE TEMPORARY TABLE tt (id INT PRIMARY KEY, v VARCHAR(32))")
        bp.execute(a, sid, [])
        q(a, "INSERT INTO tt VALUES (1, 'temp')")
    else:
        for s in ROUTES[route]:
            q(a, s)
    for _ in range(3):
        assert q(a, sql) == (("temp",),), "the session that made it reads its temporary table"
    for _ in range(3):
        assert q(b, sql) == (("real",),), "another session of the same user and database"
    q(a, "DROP TEMPORARY TABLE tt")


def test_trigger_writes_are_invalidated_before_the_ok(proxy, hc, hd):
    w, r = hc
    sql = "SELECT v FROM tb WHERE id = 1"
    stale = 0
    for i in range(1, TRIES + 1):
        until_hit(proxy, r, sql)
        q(w, f"UPDATE ta SET v = {i} WHERE id = 1")
        stale += q(r, sql) != ((i,),)
    assert stale == 0, f"{stale} of {TRIES} reads right after the OK were stale"
    # Directly on MariaDB: the binlog carries the trigger's rows.
    for i in range(TRIES + 1, TRIES + 6):
        until_hit(proxy, r, sql)
        q(hd, f"UPDATE ta SET v = {i} WHERE id = 1")
        fresh, waited = wait_for(lambda: q(r, sql) == ((i,),), timeout=5)
        assert fresh, f"a direct write's trigger rows were never seen (waited {waited:.2f}s)"


def test_fk_cascades_are_invalidated_before_the_ok_and_from_the_binlog(proxy, hc, hd):
    w, r = hc
    sql = "SELECT COUNT(*) FROM chi"
    stale = 0
    for k in range(1, TRIES + 1):
        until_hit(proxy, r, sql)
        q(w, f"DELETE FROM par WHERE id = {k}")
        stale += q(r, sql) != q(hd, sql)
    assert stale == 0, f"{stale} of {TRIES} reads right after the OK were stale"
    # Directly on MariaDB: the binlog shows only the parent's rows.
    for k in range(TRIES + 1, TRIES + 6):
        until_hit(proxy, r, sql)
        q(hd, f"DELETE FROM par WHERE id = {k}")
        fresh, waited = wait_for(lambda: q(r, sql) == q(hd, sql), timeout=5)
        assert fresh, f"a direct cascading delete was never seen (waited {waited:.2f}s)"


@pytest.mark.parametrize("call", ["SELECT bump(1)", "DO bump(1)", "SET @x = bump(1)", "SELECT id, bump(1) FROM one"])
def test_stored_functions_that_write(proxy, hc, hd, call):
    w, r = hc
    sql = "SELECT v FROM w WHERE id = 1"
    for _ in range(TRIES):
        until_hit(proxy, r, sql)
        before = proxy_invalidations(proxy)
        q(w, call)
        assert proxy_invalidations(proxy) > before, "invalidated by the proxy, before the OK"
        assert q(r, sql) == q(hd, sql)


def test_analyze_update_writes(proxy, hc, hd):
    w, r = hc
    sql = "SELECT v FROM t WHERE id = 4"
    for i in range(TRIES):
        until_hit(proxy, r, sql)
        before = proxy_invalidations(proxy)
        q(w, f"ANALYZE UPDATE t SET v = 'an{i}' WHERE id = 4")
        assert proxy_invalidations(proxy) > before, "invalidated by the proxy, before the OK"
        assert q(r, sql) == ((f"an{i}",),)


def test_statement_id_of_the_last_prepared(proxy, hc, hd):
    w, r = hc
    sql = "SELECT v FROM t WHERE id = 6"
    for i in range(TRIES):
        until_hit(proxy, r, sql)
        bp.prepare(w, "UPDATE t SET v = ? WHERE id = ?")
        before = proxy_invalidations(proxy)
        assert bp.execute(w, 0xFFFFFFFF, [f"last{i}", 6]) == 1
        assert proxy_invalidations(proxy) > before, "invalidated by the proxy, before the OK"
        assert q(r, sql) == ((f"last{i}",),)


def test_no_backslash_escapes_session_writes(proxy, hc, hd):
    w, r = hc
    sql = "SELECT v FROM t WHERE id = 5"
    q(w, "SET sql_mode = 'NO_BACKSLASH_ESCAPES'")
    for i in range(TRIES):
        until_hit(proxy, r, sql)
        # Under NO_BACKSLASH_ESCAPES the string ends at \\' and the WHERE is id = 5; lexed with
        # backslash escapes it would look like a write of row 7.
        q(w, f"UPDATE t SET v = 'x{i}\\' WHERE id = 5 -- ' WHERE id = 7")
        assert q(r, sql) == ((f"x{i}\\",),)


def test_prepared_statement_uses_the_database_it_was_prepared_in(proxy):
    a, b = proxy.connect("qc"), proxy.connect("qc2")
    try:
        until_hit(proxy, a, "SELECT v FROM t WHERE id = 1")  # qc.t known to the proxy
        sid, _ = bp.prepare(a, "SELECT v FROM t WHERE id = ?")
        q(a, "USE qc2")
        until_hit(proxy, b, "SELECT v FROM t WHERE id = 1")
        for _ in range(3):
            assert bp.execute(a, sid, [7]) == [(b"v7",)], "qc.t, where it was prepared"
        sid2, _ = bp.prepare(b, "SELECT v FROM t WHERE id = ?")
        for _ in range(3):
            assert bp.execute(b, sid2, [7]) == [(b"other7",)], "qc2.t: not the entry of the statement prepared in qc"
        # Prepared statements are cached (the binary protocol too).
        before = proxy.counters()["Qcache_hits"]
        bp.execute(b, sid2, [7])
        assert proxy.counters()["Qcache_hits"] == before + 1
    finally:
        a.close()
        b.close()


def test_direct_writes_show_within_100ms(proxy, hc, hd):
    """The freshness promise for direct writes, timed (p99 over 30 writes, loopback)."""
    _, r = hc
    sql = "SELECT v FROM t WHERE id = 1"
    waits = []
    for i in range(30):
        until_hit(proxy, r, sql)
        q(hd, f"UPDATE t SET v = 'fresh{i}' WHERE id = 1")
        t0 = time.monotonic()
        fresh, _ = wait_for(lambda: q(r, sql) == ((f"fresh{i}",),), timeout=5, interval=0.002)
        waits.append(time.monotonic() - t0)
        assert fresh
    waits.sort()
    assert waits[int(len(waits) * 0.99) - 1] < 0.1, waits
