"""The query cache's adaptive bypass (issue 43 item 3, docs/querycache.md "Adaptive bypass"):
a statement whose cached results are invalidated before anyone reads them (a row read right
before its own update, seed 001's game) stops being stored for a while and goes straight to
MariaDB, longer each time it still does not pay back; a statement whose results are read is
never bypassed, even when writes invalidate them."""
import time

from qchelpers import q, until_hit
from test_digest import row

# Distinct digests: the write-heavy one reads rows 1..40, which it then updates; the
# read-heavy one reads rows 50..59 five times between updates.
WRITE_HEAVY = "SELECT n FROM qc.t WHERE id = {} AND n >= 0"
WRITE_HEAVY_DIGEST = "SELECT n FROM qc.t WHERE id = ? AND n >= ?"
READ_HEAVY = "SELECT v FROM qc.t WHERE id = {}"
READ_HEAVY_DIGEST = "SELECT v FROM qc.t WHERE id = ?"


def read_then_update(pc, ids):
    """Seed 001's step A then B: each row read, then updated (its cached result dropped unread)."""
    for i in ids:
        q(pc, WRITE_HEAVY.format(i))
        q(pc, f"UPDATE qc.t SET n = n + 1 WHERE id = {i}")


def read_often(pc):
    """Rows 50..59 read five times each (one fill, four hits), then one of them updated (its
    `v`: the cache drops only results that read a changed column)."""
    for _ in range(5):
        for i in range(50, 60):
            q(pc, READ_HEAVY.format(i))
    q(pc, "UPDATE qc.t SET v = CONCAT('r', n), n = n + 1 WHERE id = 50")


def bypassed_now(proxy):
    return row(proxy, WRITE_HEAVY_DIGEST)["bypassed_now"] == "1"


def test_a_write_heavy_statement_is_bypassed_and_a_read_heavy_one_is_not(proxy, pc):
    until_hit(proxy, pc, READ_HEAVY.format(50))
    s0 = proxy.stats()
    for _ in range(4):
        read_often(pc)
        read_then_update(pc, range(1, 11))
    s1 = proxy.stats()
    starts = s1["Qcache_bypass_starts"] - s0["Qcache_bypass_starts"]
    assert starts >= 1, {k: v for k, v in s1.items() if k.startswith("Qcache")}
    assert s1["Qcache_bypassed"] > s0["Qcache_bypassed"]
    assert s1["Qcache_results_unused"] - s0["Qcache_results_unused"] >= 16
    assert s1["Qcache_results_reused"] > s0["Qcache_results_reused"], "the read-heavy results were read first"
    w, r = row(proxy, WRITE_HEAVY_DIGEST), row(proxy, READ_HEAVY_DIGEST)
    assert int(w["bypassed"]) > 0, w
    assert int(r["bypassed"]) == 0 and r["bypassed_now"] == "0", r
    assert int(r["hits"]) >= 4 * 40, r
    # Bypassed reads are answered by MariaDB, right: the row as updated.
    n = q(pc, "SELECT n FROM qc.t WHERE id = 3")[0][0]
    assert q(pc, WRITE_HEAVY.format(3)) == ((n,),)


def test_tried_again_later_for_longer(proxy, pc):
    """A bypass ends (the next miss is stored again); a statement that still does not pay
    back is bypassed again for twice as long."""
    # Whatever the previous test left, start from a fresh verdict: results that pay back.
    deadline = time.time() + 150
    while bypassed_now(proxy) and time.time() < deadline:
        time.sleep(0.5)
    assert not bypassed_now(proxy)
    read_then_update(pc, range(1, 17))
    assert bypassed_now(proxy), row(proxy, WRITE_HEAVY_DIGEST)
    started = time.monotonic()
    while bypassed_now(proxy) and time.monotonic() - started < 150:
        time.sleep(0.05)
    first = time.monotonic() - started
    before, inserts = int(row(proxy, WRITE_HEAVY_DIGEST)["misses"]), proxy.stats()["Qcache_inserts"]
    q(pc, WRITE_HEAVY.format(21))
    assert int(row(proxy, WRITE_HEAVY_DIGEST)["misses"]) == before + 1, "filled again after the bypass"
    assert proxy.stats()["Qcache_inserts"] == inserts + 1
    read_then_update(pc, range(1, 17))
    assert bypassed_now(proxy)
    started = time.monotonic()
    while bypassed_now(proxy) and time.monotonic() - started < 300:
        time.sleep(0.05)
    second = time.monotonic() - started
    assert second > 1.5 * first, (first, second)
