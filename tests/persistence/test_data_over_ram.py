"""Data larger than memory: with -m 8 the memory tier evicts, the disk tier keeps
everything, and reads that miss memory are served from disk (before and after a restart)."""
import time

from pclient import Conn, make_value, parse_value, wait_for

N = 10_000
SIZE = 4096  # 10_000 x 4 KB = 40 MB = 5x -m 8


def key(i):
    return f"big-{i}"


def check_all(port):
    """Read every item back; returns the stats afterwards."""
    with Conn(port) as c:
        bad, missing = [], []
        for start in range(0, N, 200):
            keys = [key(i) for i in range(start, min(N, start + 200))]
            got = c.get_multi(keys)
            for k in keys:
                if k not in got:
                    missing.append(k)
                    continue
                flags, value = got[k]
                i = int(k.split("-")[1])
                if parse_value(k, value) != i or flags != i:
                    bad.append(k)
        assert not missing, f"{len(missing)} of {N} items missing, e.g. {missing[:5]}"
        assert not bad, f"{len(bad)} of {N} items with a wrong value or flags, e.g. {bad[:5]}"
        return c.stats()


def test_minimum_memory_limit(persistent):
    """-m 8 is accepted with --data-dir (sqlcached's minimum is 2: -I 1m needs -m >= 2)."""
    srv = persistent.start("-m", "8")
    with Conn(srv.port) as c:
        assert int(c.stats()["limit_maxbytes"]) == 8 << 20


def test_five_times_more_data_than_memory(persistent):
    srv = persistent.start("-m", "8")
    with Conn(srv.port) as c:
        acked = c.set_many((key(i), make_value(key(i), i, SIZE), i) for i in range(N))
        assert acked == N
        st = c.stats()
    assert int(st["evictions"]) > 0, "40 MB into -m 8 must evict from memory"
    assert int(st["bytes"]) <= 8 << 20, st["bytes"]

    st = check_all(srv.port)
    assert int(st["disk_hits"]) > 0, st["disk_hits"]
    # Most of the 40 MB cannot be in memory: most reads came from disk.
    assert int(st["disk_hits"]) >= N // 2, f"disk_hits {st['disk_hits']}"
    assert int(st["evictions"]) > 0
    assert int(st["bytes"]) <= 8 << 20

    assert srv.terminate() == 0
    t = time.monotonic()
    srv = persistent.restart(srv)
    took = time.monotonic() - t
    assert took < 3, f"restart with 40 MB on disk took {took:.1f} s to accept connections (should serve at once)"
    st = check_all(srv.port)
    assert int(st["disk_hits"]) >= N // 2, f"after restart: disk_hits {st['disk_hits']}"
    assert int(st["evictions"]) > 0, "reading 40 MB back into -m 8 evicts again"
    assert int(st["bytes"]) <= 8 << 20

    # And after a crash: everything acknowledged is still there.
    srv.sigkill()
    srv = persistent.restart(srv)
    check_all(srv.port)


def test_disk_items_counts_keys_only_on_disk_exactly(persistent):
    """`disk_items` stays the number of keys the tier holds while most of them are only on
    disk: an overwrite of an evicted key counts once, a new key counts (once, even when set
    twice in one pipeline), a delete uncounts, before and after a restart."""
    m = 4000  # 4,000 x 4 KB = 16 MB = 2x -m 8
    srv = persistent.start("-m", "8", "--durability", "sync")
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), 1, SIZE), i) for i in range(m)) == m
        st = c.stats()
        assert int(st["evictions"]) > 0, "16 MB into -m 8 must evict from memory"
        # Overwrite every key, most of them only on disk by now.
        assert c.set_many((key(i), make_value(key(i), 2, SIZE), i) for i in range(m)) == m
        assert wait_for(lambda: int(c.stats()["disk_items"]) == m), c.stats()["disk_items"]
        # New keys count, and a set twice in one pipeline counts once.
        fresh = [(key(i), make_value(key(i), 2, SIZE), i) for i in range(m, m + 100)]
        assert c.set_many(fresh + fresh) == 200
        for i in range(50):
            assert c.cmd(f"delete {key(i)}") == b"DELETED"
        assert c.cmd(f"delete {key(m + 1000)}") == b"NOT_FOUND"
        want = m + 100 - 50
        assert wait_for(lambda: int(c.stats()["disk_items"]) == want), c.stats()["disk_items"]
    assert srv.terminate() == 0
    srv = persistent.restart(srv)
    with Conn(srv.port) as c:
        assert int(c.stats()["disk_items"]) == want
        got = c.get_multi(key(i) for i in range(m + 100))
        assert len(got) == want
        assert all(parse_value(k, v) == 2 for k, (_, v) in got.items())
