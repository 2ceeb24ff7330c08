"""Bounded memory (--query-cache-size: evictions count in Qcache_lowmem_prunes, results stay
correct) and identical concurrent misses sharing one backend query (issue 5, items 3 and 4)."""
import threading

import pytest

from harness.mysqlproxy import start_proxy
from qchelpers import q, until_hit


@pytest.fixture(scope="module")
def small(mariadb, tmp_path_factory):
    """A sqlcached with a 1 MB query cache on the module's MariaDB."""
    log = tmp_path_factory.mktemp("small") / "sqlcached.log"
    with start_proxy(mariadb, "--query-cache-size", "1m", log=log) as px:
        yield px


def test_bounded_memory(small, dc):
    c = small.connect("qc")
    try:
        until_hit(small, c, "SELECT v FROM qc.t WHERE id = 1")
        # 300 distinct ~8 KB results: about 2.4 MB, more than the cache holds
        for rnd in range(2):
            for i in range(1, 301):
                sql = f"SELECT REPEAT(v, 2000) AS r, {i} AS k FROM qc.t WHERE id = {1 + i % 100}"
                rows = q(c, sql)
                assert rows == ((f"v{1 + i % 100}" * 2000, i),), sql
        s = small.stats()
        print({k: v for k, v in s.items() if k.startswith("Qcache")})
        assert s["Qcache_inserts"] >= 300, s
        assert s["Qcache_lowmem_prunes"] > 0, s
        assert s["Qcache_queries_in_cache"] < 300, s
    finally:
        c.close()


def test_concurrent_identical_misses_share_one_query(proxy, mariadb):
    c = proxy.connect("qc")
    until_hit(proxy, c, "SELECT v FROM qc.t WHERE id = 1")
    c.close()
    # a deterministic statement that takes MariaDB a noticeable time (a 1M-row join)
    slow = "SELECT COUNT(*), SUM(a.n + b.n + x.n) FROM qc.t a, qc.t b, qc.t x WHERE a.n + b.n + x.n > 0"
    n = 6
    conns = [proxy.connect("qc") for _ in range(n)]
    # MariaDB's general log (to its table) shows what reached the backend
    mariadb.sql("SET GLOBAL general_log = 0; SET GLOBAL log_output = 'TABLE'; TRUNCATE TABLE mysql.general_log;"
                "SET GLOBAL general_log = 1;")
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def run(k):
        try:
            barrier.wait(10)
            results[k] = q(conns[k], slow)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    mariadb.sql("SET GLOBAL general_log = 0")
    backend = int(mariadb.sql("SELECT COUNT(*) FROM mysql.general_log WHERE command_type IN ('Query', 'Execute') "
                              "AND argument LIKE 'SELECT COUNT(*), SUM(a.n + b.n + x.n)%'"))
    for cc in conns:
        cc.close()
    assert not errors, errors
    assert len(set(results)) == 1 and results[0][0][0] == 1000000, results
    print(f"{n} identical concurrent misses -> {backend} backend queries")
    assert backend == 1, f"{n} concurrent identical misses ran the statement {backend} times on MariaDB"
