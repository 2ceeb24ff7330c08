"""--query-cache-type DEMAND, and the parts of the cache key beyond the statement text: session
variables that change results (time_zone, sql_mode, character set), the default database and
the user. Same statement text, different session: different, correct results."""
import pymysql
import pytest

from harness.mysqlproxy import start_proxy
from qchelpers import q, run_counted, until_hit


@pytest.fixture(scope="module")
def demand(mariadb, tmp_path_factory):
    """A second sqlcached on the same MariaDB with --query-cache-type DEMAND."""
    log = tmp_path_factory.mktemp("demand") / "sqlcached.log"
    with start_proxy(mariadb, "--query-cache-type", "DEMAND", log=log) as px:
        yield px


def test_demand_without_sql_cache(demand):
    c = demand.connect("qc")
    try:
        until_hit(demand, c, "SELECT SQL_CACHE v FROM qc.t WHERE id = 20")
        for _ in range(3):
            _, d = run_counted(demand, c, "SELECT v FROM qc.t WHERE id = 20")
            assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, d
            assert d["Qcache_not_cached"] >= 1, d
    finally:
        c.close()


def test_demand_with_sql_cache(demand, dc):
    c = demand.connect("qc")
    try:
        sql = "SELECT SQL_CACHE v, n FROM qc.t WHERE id = 21"
        assert until_hit(demand, c, sql) == q(dc, sql)
        _, d = run_counted(demand, c, sql)
        assert d["Qcache_hits"] == 1, d
    finally:
        c.close()


def test_time_zone_changes_results(proxy, pc, dc):
    sql = "SELECT CAST(ts AS CHAR) FROM qc.t WHERE id = 30"
    seen = {}
    for tz in ["+00:00", "+05:30", "+00:00", "-08:00", "+05:30"]:
        q(pc, f"SET time_zone = '{tz}'")
        q(dc, f"SET time_zone = '{tz}'")
        want = q(dc, sql)
        assert until_hit(proxy, pc, sql) == want, tz
        seen[tz] = want
    assert len(set(seen.values())) == 3, seen


def test_sql_mode_changes_results(proxy, pc, dc):
    sql = "SELECT n || 1 FROM qc.t WHERE id = 31"  # OR, or concatenation with PIPES_AS_CONCAT
    got = []
    for mode in ["PIPES_AS_CONCAT", "", "PIPES_AS_CONCAT,NO_ENGINE_SUBSTITUTION", "PIPES_AS_CONCAT"]:
        q(pc, f"SET SESSION sql_mode = '{mode}'")
        q(dc, f"SET SESSION sql_mode = '{mode}'")
        rows = until_hit(proxy, pc, sql)
        assert rows == q(dc, sql), mode
        got.append(rows[0][0])
    assert got[0] == "3101" and got[1] == 1, got


def test_character_set_changes_results(proxy):
    sql = "SELECT s FROM qc.t WHERE id = 32"
    c = proxy.connect("qc", use_unicode=False)
    try:
        for names, want in [("utf8mb4", b"\xc3\xa9"), ("latin1", b"\xe9"), ("utf8mb4", b"\xc3\xa9"), ("latin1", b"\xe9")]:
            q(c, f"SET NAMES {names}")
            assert until_hit(proxy, c, sql) == ((want,),), names
        q(c, "SET character_set_results = utf8mb4")
        assert q(c, sql) == ((b"\xc3\xa9",),)
        q(c, "SET CHARACTER SET latin1")
        assert q(c, sql) == ((b"\xe9",),)
    finally:
        c.close()


def test_default_database_in_key(proxy):
    a, b = proxy.connect("qc"), proxy.connect("qc2")
    try:
        sql = "SELECT v FROM t WHERE id = 33"
        for _ in range(2):
            assert until_hit(proxy, a, sql) == (("v33",),)
            assert until_hit(proxy, b, sql) == (("other33",),)
        a.select_db("qc2")  # COM_INIT_DB
        assert q(a, sql) == (("other33",),)
        q(a, "USE qc")
        assert q(a, sql) == (("v33",),)
    finally:
        a.close()
        b.close()


def test_user_in_key(proxy, mariadb):
    mariadb.sql("""
CREATE USER IF NOT EXISTS 'limited'@'%' IDENTIFIED BY 'limited-pw';
GRANT SELECT (id, v) ON qc.t TO 'limited'@'%';
""")
    full = proxy.connect("qc")
    lim = proxy.connect("qc", user="limited", password="limited-pw")
    try:
        sql = "SELECT n FROM qc.t WHERE id = 34"
        assert until_hit(proxy, full, sql) == ((340,),)
        for _ in range(2):
            with pytest.raises(pymysql.err.MySQLError) as e:
                q(lim, sql)
            assert e.value.args[0] == 1143, e.value.args  # column-level privilege: denied
        assert until_hit(proxy, lim, "SELECT v FROM qc.t WHERE id = 34") == (("v34",),)
    finally:
        full.close()
        lim.close()
