"""Server-side prepared statements through the proxy, byte by byte (tests/querycache/binproto.py):
results cached by statement and parameter values, parameter types sent only with the first
execution (as libmariadb/sysbench do) while earlier executions were cache hits, non-cacheable
prepared statements, long data, COM_STMT_RESET / CLOSE."""
import pytest

import binproto as bp
from harness.mysqlproxy import connect
from qchelpers import delta, until_hit


def test_cached_by_statement_and_parameters(proxy, pc):
    sid, n = bp.prepare(pc, "SELECT v FROM qc.t WHERE id = ?")
    assert n == 1
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 1")  # qc.t known, cache online
    for i in (41, 42):
        for k in range(3):
            before = proxy.counters()
            assert bp.execute(pc, sid, [i]) == [(f"v{i}".encode(),)]
            d = delta(before, proxy.counters())
            if k == 2:
                assert d["Qcache_hits"] == 1, d
    bp.close(pc, sid)


def test_types_only_with_first_execution_after_hits(proxy, mariadb):
    """libmariadb sends parameter types with the first COM_STMT_EXECUTE only. When that
    execution was a cache hit the backend never saw the types: a later miss must still work
    (sysbench --db-ps-mode=auto through the proxy failed here with error 1210)."""
    a, b = proxy.connect("qc"), proxy.connect("qc")
    try:
        sql = "SELECT v FROM qc.t WHERE id = ?"
        sa, _ = bp.prepare(a, sql)
        for _ in range(3):
            bp.execute(a, sa, [43])  # fills the cache for id 43
        sb, _ = bp.prepare(b, sql)
        assert bp.execute(b, sb, [43], send_types=True) == [(b"v43",)]   # a hit: the backend sees nothing
        for i in (44, 43, 45, 46):
            assert bp.execute(b, sb, [i], send_types=False) == [(f"v{i}".encode(),)], i
    finally:
        a.close()
        b.close()


def test_not_cacheable_prepared(proxy, pc):
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 1")
    sid, _ = bp.prepare(pc, "SELECT CAST(NOW(6) AS CHAR), v FROM qc.t WHERE id = ?")
    before = proxy.counters()
    for _ in range(3):
        bp.execute(pc, sid, [1])
    d = delta(before, proxy.counters())
    assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, d


def test_long_data_not_cached(proxy, pc):
    until_hit(proxy, pc, "SELECT v FROM qc.t WHERE id = 1")
    sid, _ = bp.prepare(pc, "SELECT v FROM qc.t WHERE v = ?")
    before = proxy.counters()
    for _ in range(3):
        bp.send_long_data(pc, sid, 0, b"v4")
        bp.send_long_data(pc, sid, 0, b"7")
        assert bp.execute(pc, sid, ["v47"], long_data={0}) == [(b"v47",)]
    d = delta(before, proxy.counters())
    assert d["Qcache_hits"] == 0 and d["Qcache_inserts"] == 0, d
    # a normal execution of the same statement afterwards is answered correctly
    assert bp.execute(pc, sid, ["v48"]) == [(b"v48",)]


def test_reset_close_and_writes(proxy, pc, mariadb):
    sel, _ = bp.prepare(pc, "SELECT v FROM qc.t WHERE id = ?")
    upd, _ = bp.prepare(pc, "UPDATE qc.t SET v = ? WHERE id = ?")
    for _ in range(3):
        assert bp.execute(pc, sel, [49]) == [(b"v49",)]
    assert bp.execute(pc, upd, ["ps49", 49]) == 1
    assert bp.execute(pc, sel, [49], send_types=False) == [(b"ps49",)]
    assert bp.reset(pc, sel)[:1] == b"\x00"
    assert bp.execute(pc, sel, [49]) == [(b"ps49",)]
    bp.close(pc, sel)
    with pytest.raises(bp.ServerError) as e:
        bp.execute(pc, sel, [49])
    assert e.value.args[0] == 1243  # ER_UNKNOWN_STMT_HANDLER
    d = connect(mariadb.port, "qc")
    try:
        with d.cursor() as cur:
            cur.execute("SELECT v FROM qc.t WHERE id = 49")
            assert cur.fetchall() == (("ps49",),)
    finally:
        d.close()
