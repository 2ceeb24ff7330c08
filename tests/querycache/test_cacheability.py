"""Cacheability rules (issue 5, item 2): every statement here runs twice through the proxy and is
never served from nor inserted into the cache (Qcache_hits and Qcache_inserts unchanged,
Qcache_not_cached incremented), right after a plain point select on the same table was served
from the cache (the positive control: the table is known and the cache is online)."""
import pytest

from qchelpers import assert_not_cached, q, run_counted, until_hit

# Functions whose result depends on time, the session, the server state, or has side effects.
DENY = [
    "NOW()", "now()", "SYSDATE()", "CURDATE()", "CURTIME()", "CURRENT_DATE", "CURRENT_DATE()", "CURRENT_TIME",
    "CURRENT_TIME()", "CURRENT_TIMESTAMP", "CURRENT_TIMESTAMP()", "LOCALTIME", "LOCALTIME()", "LOCALTIMESTAMP",
    "LOCALTIMESTAMP()", "UTC_DATE()", "UTC_TIME()", "UTC_TIMESTAMP()", "UNIX_TIMESTAMP()", "RAND()", "rand(7)",
    "UUID()", "UUID_SHORT()", "CONNECTION_ID()", "LAST_INSERT_ID()", "FOUND_ROWS()", "ROW_COUNT()", "USER()",
    "CURRENT_USER()", "CURRENT_USER", "SESSION_USER()", "SYSTEM_USER()", "DATABASE()", "SCHEMA()",
    "BENCHMARK(1, 1)", "SLEEP(0)", "GET_LOCK('qc', 0)", "RELEASE_LOCK('qc')", "IS_FREE_LOCK('qc')",
    "IS_USED_LOCK('qc')", "MASTER_POS_WAIT('binlog.000001', 4, 0.001)", "LOAD_FILE('/etc/hostname')",
    "RANDOM_BYTES(4)", "NEXTVAL(qc.seq)", "LASTVAL(qc.seq)", "SETVAL(qc.seq, 1000)", "NEXT VALUE FOR qc.seq",
    "PREVIOUS VALUE FOR qc.seq", "qc.f(id)", "f(id)", "NOW(6) + 0", "DATE_ADD(NOW(), INTERVAL 1 DAY)",
]


@pytest.mark.parametrize("expr", DENY)
def test_function_not_cached(proxy, pc, expr):
    assert_not_cached(proxy, pc, f"SELECT {expr} AS x, v FROM qc.t WHERE id = 1")


def test_positive_control_point_select_is_cached(proxy, pc, dc):
    sql = "SELECT v, n FROM qc.t WHERE id = 2"
    assert until_hit(proxy, pc, sql) == q(dc, sql)
    rows, d = run_counted(proxy, pc, sql)
    assert d["Qcache_hits"] == 1 and d["Qcache_inserts"] == 0, d
    assert rows == q(dc, sql)


def test_deterministic_functions_are_cached(proxy, pc, dc):
    sql = "SELECT CONCAT(UPPER(v), LPAD(n, 5, '0')), ABS(-n), COALESCE(NULL, id) FROM qc.t WHERE id = 3"
    assert until_hit(proxy, pc, sql) == q(dc, sql)


def test_user_variables(proxy, pc):
    q(pc, "SET @x = 1")
    assert_not_cached(proxy, pc, "SELECT v, @x FROM qc.t WHERE id = 1")
    assert_not_cached(proxy, pc, "SELECT v FROM qc.t WHERE id = @x")
    # user variables make nothing untrackable: plain statements are still cached
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 4")


@pytest.mark.parametrize("var", ["@@version", "@@session.sql_mode", "@@GLOBAL.max_connections", "@@time_zone"])
def test_system_variables(proxy, pc, var):
    assert_not_cached(proxy, pc, f"SELECT v, {var} FROM qc.t WHERE id = 1")


@pytest.mark.parametrize("tail", ["FOR UPDATE", "LOCK IN SHARE MODE", "FOR UPDATE NOWAIT", "LOCK IN SHARE MODE SKIP LOCKED"])
def test_locking_reads(proxy, pc, tail):
    assert_not_cached(proxy, pc, f"SELECT v FROM qc.t WHERE id = 1 {tail}")


def test_select_into(proxy, pc):
    assert_not_cached(proxy, pc, "SELECT v INTO @y FROM qc.t WHERE id = 1")
    assert_not_cached(proxy, pc, "SELECT v FROM qc.t WHERE id = 1 INTO @y")


def test_sql_no_cache(proxy, pc):
    assert_not_cached(proxy, pc, "SELECT SQL_NO_CACHE v FROM qc.t WHERE id = 1")


@pytest.mark.parametrize("sql", [
    "SELECT user, host FROM mysql.user ORDER BY user, host",
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'qc' ORDER BY 1",
    "SELECT COUNT(*) FROM performance_schema.setup_instruments",
    "SELECT v FROM sys.qc_probe WHERE id = 1",
    "SELECT COUNT(*) FROM mysql.db JOIN qc.t ON t.id = 1",
    "SELECT v FROM qc.t WHERE id = (SELECT COUNT(*) FROM mysql.user WHERE user = 'nobody')",
])
def test_system_schemas(proxy, pc, mariadb, sql):
    # Debian's MariaDB has no sys schema: a table made there must not be cached either
    mariadb.sql("CREATE DATABASE IF NOT EXISTS sys; CREATE TABLE IF NOT EXISTS sys.qc_probe (id INT PRIMARY KEY, v INT);"
                "INSERT IGNORE INTO sys.qc_probe VALUES (1, 1);")
    assert_not_cached(proxy, pc, sql)


def test_system_schema_as_default_db(proxy):
    c = proxy.connect("mysql")
    try:
        assert_not_cached(proxy, c, "SELECT host FROM user ORDER BY host")
    finally:
        c.close()


def test_view(proxy, pc, dc):
    rows = assert_not_cached(proxy, pc, "SELECT v FROM qc.vt WHERE id = 1")
    assert rows[0] == q(dc, "SELECT v FROM qc.vt WHERE id = 1")


def test_explicit_transaction(proxy, pc):
    """Read-write transactions go to the backend with the default --query-cache-in-transactions
    (read-only); START TRANSACTION READ ONLY is answered from the cache (test_transactions.py)."""
    sql = "SELECT v FROM qc.t WHERE id = 5"
    until_hit(proxy, pc, sql)
    q(pc, "START TRANSACTION READ ONLY")
    _, d = run_counted(proxy, pc, sql)
    q(pc, "COMMIT")
    assert d["Qcache_hits"] == 1, d
    for begin in ["BEGIN", "START TRANSACTION", "START TRANSACTION READ WRITE", "START TRANSACTION WITH CONSISTENT SNAPSHOT"]:
        until_hit(proxy, pc, sql)
        q(pc, begin)
        for _ in range(2):
            _, d = run_counted(proxy, pc, sql)
            assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, (begin, d)
            assert d["Qcache_not_cached"] >= 1, (begin, d)
        q(pc, "COMMIT")
    # after the transaction the same statement is served from the cache again
    until_hit(proxy, pc, sql)


def test_explicit_transaction_before_control(proxy, pc):
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 6")
    q(pc, "BEGIN")
    _, d1 = run_counted(proxy, pc, "SELECT v FROM qc.t WHERE id = 6")
    _, d2 = run_counted(proxy, pc, "SELECT v FROM qc.t WHERE id = 6")
    q(pc, "ROLLBACK")
    assert d1["Qcache_hits"] == 0 and d2["Qcache_hits"] == 0, (d1, d2)


def test_autocommit_off(proxy, pc):
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 8")
    pc.autocommit(False)
    try:
        for _ in range(2):
            _, d = run_counted(proxy, pc, "SELECT v FROM qc.t WHERE id = 8")
            assert d["Qcache_hits"] == 0, d
            assert d["Qcache_not_cached"] >= 1, d
    finally:
        pc.autocommit(True)
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 8")


def test_temporary_table_turns_caching_off(proxy, pc, dc):
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 9")
    # a temporary table shadowing qc.t: a cached base-table result would be wrong here
    q(pc, "CREATE TEMPORARY TABLE qc.t (id INT PRIMARY KEY, v VARCHAR(64))")
    q(pc, "INSERT INTO qc.t VALUES (9, 'temporary')")
    for _ in range(2):
        rows, d = run_counted(proxy, pc, "SELECT v FROM qc.t WHERE id = 9")
        assert rows == (("temporary",),), rows
        assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, d
    q(pc, "DROP TEMPORARY TABLE qc.t")
    # caching stays off for this connection for good
    for _ in range(3):
        rows, d = run_counted(proxy, pc, "SELECT v FROM qc.t WHERE id = 9")
        assert rows == q(dc, "SELECT v FROM qc.t WHERE id = 9")
        assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, d


@pytest.mark.parametrize("stmt", [
    "SET SESSION sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')",
    "SET @@session.time_zone = (SELECT '+03:00')",
    "SET SESSION div_precision_increment = 2 + 1",
])
def test_untrackable_session_state(proxy, pc, stmt):
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 10")
    q(pc, stmt)
    for _ in range(3):
        _, d = run_counted(proxy, pc, "SELECT v FROM qc.t WHERE id = 10")
        assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, d


def test_multi_statement_text(proxy, mariadb):
    import pymysql

    c = proxy.connect("qc", client_flag=pymysql.constants.CLIENT.MULTI_STATEMENTS)
    try:
        until_hit(proxy, c, "SELECT v FROM qc.t WHERE id = 11")
        for _ in range(2):
            before = proxy.counters()
            with c.cursor() as cur:
                cur.execute("SELECT v FROM qc.t WHERE id = 11; SELECT v FROM qc.t WHERE id = 12")
                first = cur.fetchall()
                assert cur.nextset()
                second = cur.fetchall()
            after = proxy.counters()
            assert (first, second) == ((("v11",),), (("v12",),))
            assert after["Qcache_hits"] == before["Qcache_hits"], (before, after)
            assert after["Qcache_inserts"] == before["Qcache_inserts"], (before, after)
    finally:
        c.close()


def test_warning_reply_not_cached(proxy, pc):
    assert_not_cached(proxy, pc, "SELECT v, CAST('12abc' AS SIGNED) FROM qc.t WHERE id = 1")


def test_error_reply_not_cached(proxy, pc, mariadb):
    import pymysql

    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 1")
    for _ in range(2):
        with pytest.raises(pymysql.err.ProgrammingError) as e:
            q(pc, "SELECT v FROM qc.later WHERE id = 1")
        assert e.value.args[0] == 1146
    mariadb.sql("CREATE TABLE qc.later (id INT PRIMARY KEY, v TEXT); INSERT INTO qc.later VALUES (1, 'now here');")
    assert q(pc, "SELECT v FROM qc.later WHERE id = 1") == (("now here",),)


def test_result_over_limit_not_cached(proxy, pc):
    sql = "SELECT REPEAT('x', 1100000) AS big, v FROM qc.t WHERE id = 1"  # > --query-cache-limit (1 MB)
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 1")
    for _ in range(3):
        rows, d = run_counted(proxy, pc, sql)
        assert len(rows[0][0]) == 1100000
        assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, d
