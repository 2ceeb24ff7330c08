"""The unchanged PyMySQL client through the proxy (text protocol; PyMySQL has no server-side
prepared statements): results, writes, executemany, errors, multi-results, COM_INIT_DB,
COM_PING, big rows and authentication, each compared with MariaDB's direct answer."""
import hashlib

import pymysql
import pytest

from harness.mysqlproxy import connect
from qchelpers import q, until_hit


def described(conn, sql, args=None):
    """(column descriptions, rows) of one statement."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.description, cur.fetchall()


TYPES = """SELECT 1, -2, 18446744073709551615, 3.14159, CAST(2.5 AS DOUBLE), CAST('x' AS BINARY(3)),
  'text', NULL, CAST('2024-02-29 23:59:59.123456' AS DATETIME(6)), CAST('10:11:12' AS TIME),
  CAST('2020-01-01' AS DATE), 0xDEADBEEF, b'101', JSON_OBJECT('a', 1), v, n, ts, s FROM qc.t WHERE id = 1"""


def test_types_and_metadata(proxy, pc, dc):
    for _ in range(3):
        assert described(pc, TYPES) == described(dc, TYPES)


def test_writes_executemany(proxy, pc, dc):
    q(pc, "CREATE TABLE IF NOT EXISTS qc.py (id INT PRIMARY KEY, v VARCHAR(32))")
    q(pc, "DELETE FROM qc.py")
    until_hit(proxy, pc, "SELECT COUNT(*) FROM qc.py")
    with pc.cursor() as cur:
        n = cur.executemany("INSERT INTO qc.py (id, v) VALUES (%s, %s)", [(i, f"r{i}") for i in range(500)])
        assert n == 500
    assert q(pc, "SELECT COUNT(*) FROM qc.py") == ((500,),)
    with pc.cursor() as cur:
        cur.executemany("UPDATE qc.py SET v = %s WHERE id = %s", [(f"u{i}", i) for i in range(0, 500, 7)])
    assert q(pc, "SELECT v FROM qc.py WHERE id = 7") == (("u7",),)
    assert q(pc, "SELECT COUNT(*) FROM qc.py WHERE v LIKE 'u%%'") == q(dc, "SELECT COUNT(*) FROM qc.py WHERE v LIKE 'u%%'")
    with pc.cursor() as cur:
        assert cur.execute("DELETE FROM qc.py WHERE id >= 250") == 250
    assert q(pc, "SELECT COUNT(*) FROM qc.py") == ((250,),)


def test_errors_pass_through(proxy, pc, dc):
    for sql in ["SELEC 1", "SELECT * FROM qc.nope", "SELECT nope FROM qc.t", "INSERT INTO qc.t (id) VALUES (1)",
                "SELECT 1 FROM qc.t WHERE id = (SELECT id FROM qc.t)"]:
        errs = []
        for c in (pc, dc):
            with pytest.raises(pymysql.err.MySQLError) as e:
                q(c, sql)
            errs.append((type(e.value), e.value.args))
        assert errs[0] == errs[1], sql
    assert q(pc, "SELECT v FROM qc.t WHERE id = 1") == (("v1",),)


def test_multi_results(proxy, mariadb):
    flag = pymysql.constants.CLIENT.MULTI_STATEMENTS
    p, d = proxy.connect("qc", client_flag=flag), connect(mariadb.port, "qc", client_flag=flag)
    mariadb.sql("DELIMITER //\nCREATE PROCEDURE IF NOT EXISTS qc.two() BEGIN SELECT 1 AS a; SELECT v FROM qc.t WHERE id < 3; END//\n")

    def sets(c, sql):
        out = []
        with c.cursor() as cur:
            cur.execute(sql)
            while True:
                out.append((cur.description, cur.fetchall(), cur.rowcount))
                if not cur.nextset():
                    return out

    try:
        for sql in ["SELECT 1; SELECT v FROM qc.t WHERE id = 2; UPDATE qc.t SET n = n WHERE id = 2; SELECT 'x'",
                    "CALL qc.two()"]:
            for _ in range(2):
                assert sets(p, sql) == sets(d, sql), sql
        with pytest.raises(pymysql.err.ProgrammingError):
            sets(p, "SELECT 1; SELEC 2; SELECT 3")
        assert q(p, "SELECT 5") == ((5,),)
    finally:
        p.close()
        d.close()


def test_init_db_and_ping(proxy, pc):
    pc.select_db("qc2")
    assert q(pc, "SELECT v FROM t WHERE id = 1") == (("other1",),)
    pc.ping(reconnect=False)
    pc.select_db("qc")
    assert q(pc, "SELECT v FROM t WHERE id = 1") == (("v1",),)
    with pytest.raises(pymysql.err.OperationalError) as e:
        pc.select_db("no_such_db")
    assert e.value.args[0] == 1049


def test_big_row(proxy, mariadb):
    p = proxy.connect("qc", max_allowed_packet=64 << 20)
    try:
        q(p, "CREATE TABLE IF NOT EXISTS qc.big (id INT PRIMARY KEY, b LONGBLOB)")
        blob = bytes(range(256)) * ((17 << 20) // 256 + 11)  # > 16 MiB: split packets both ways
        q(p, "REPLACE INTO qc.big VALUES (1, %s)", (blob,))
        for _ in range(2):
            got = q(p, "SELECT b FROM qc.big WHERE id = 1")[0][0]
            assert hashlib.sha256(got).digest() == hashlib.sha256(blob).digest(), len(got)
    finally:
        p.close()


def test_wrong_password_and_unknown_user(proxy, mariadb):
    for user, pw in [("sqlcached", "wrong"), ("nobody-here", "x")]:
        errs = []
        for port in (proxy.mysql_port, mariadb.port):
            with pytest.raises(pymysql.err.OperationalError) as e:
                connect(port, "qc", user=user, password=pw)
            errs.append(e.value.args)
        assert errs[0] == errs[1]
        assert errs[0][0] == 1045


def test_empty_password_account(proxy, mariadb):
    mariadb.sql("CREATE USER IF NOT EXISTS 'nopw'@'%'; GRANT SELECT ON qc.* TO 'nopw'@'%';")
    c = connect(proxy.mysql_port, "qc", user="nopw", password="")
    try:
        assert q(c, "SELECT v FROM qc.t WHERE id = 2") == (("v2",),)
    finally:
        c.close()


def test_session_functions_after_a_hit(proxy, pc, dc):
    """A cache hit does not reach MariaDB, yet what the session sees next must be what it
    would see without the cache (warnings, ROW_COUNT(), FOUND_ROWS())."""
    hit = "SELECT v FROM qc.t WHERE id = 3"
    until_hit(proxy, pc, hit)
    seen = {}
    for name, c in (("proxy", pc), ("direct", dc)):
        q(c, "SELECT CAST('1x' AS SIGNED)")
        q(c, hit)
        warnings = q(c, "SHOW WARNINGS")
        q(c, "UPDATE qc2.t SET n = n + 1 WHERE id = 1")
        q(c, hit)
        row_count = q(c, "SELECT ROW_COUNT()")
        q(c, "SELECT id FROM qc.t WHERE id < 10")
        q(c, hit)
        found = q(c, "SELECT FOUND_ROWS()")
        seen[name] = (warnings, row_count, found)
    assert seen["proxy"] == seen["direct"]
