"""--disk-limit bounds the disk tier: oldest-written items are evicted first, the newest
stay readable (from disk, once they have left the small memory tier)."""
import time

from pclient import Conn, make_value, parse_value, wait_for

LIMIT = 4 << 20
SIZE = 4096
N = 4000  # 16 MB written: 4x the limit


def key(i):
    return f"dl-{i}"


def disk_stats(port):
    with Conn(port) as c:
        return c.stats()


def check_bounded_and_newest(port, n_written):
    st = wait_for(lambda: (lambda s: s if int(s["disk_bytes"]) <= LIMIT else None)(disk_stats(port)), 10)
    st = st or disk_stats(port)
    assert int(st["disk_bytes"]) <= LIMIT, f"disk_bytes {st['disk_bytes']} stays above --disk-limit {LIMIT}"
    # Not evicted far below the limit either: the newest ~3 MB are kept.
    assert int(st["disk_bytes"]) >= LIMIT // 2, f"disk_bytes {st['disk_bytes']}: evicted far more than needed"
    assert st["disk_limit"] == str(LIMIT)
    newest = range(n_written - 600, n_written)  # ~2.4 MB: well inside the limit
    oldest = range(0, 1500)  # ~6 MB of the oldest: well outside it
    with Conn(port) as c:
        got = c.get_multi([key(i) for i in newest])
        missing = [i for i in newest if key(i) not in got]
        assert not missing, f"{len(missing)} of the newest items gone with --disk-limit, e.g. {missing[:5]}"
        bad = [i for i in newest if parse_value(key(i), got[key(i)][1]) != i or got[key(i)][0] != i]
        assert not bad, f"newest items with wrong values: {bad[:5]}"
        before = c.stats()
        got = c.get_multi([key(i) for i in oldest])
        after = c.stats()
        # None of them comes from disk. A few may still be in the memory tier: its policy
        # (S3-FIFO-like) keeps items that reached its main queue, not only the newest ones.
        assert after["disk_hits"] == before["disk_hits"], \
            f"oldest items read from disk past --disk-limit: {sorted(got)[:5]}"
        assert len(got) <= 10, f"{len(got)} of the oldest items still served, e.g. {sorted(got)[:5]}"
        return after


def test_disk_limit_evicts_oldest_first(persistent):
    srv = persistent.start("-m", "2", "--disk-limit", "4m")
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), i, SIZE), i) for i in range(N)) == N
    st = check_bounded_and_newest(srv.port, N)
    assert int(st["disk_evictions"]) >= N - (LIMIT // SIZE), f"disk_evictions {st['disk_evictions']}"
    assert int(st["disk_hits"]) > 0, "the newest items were read from disk (-m 2 cannot hold them)"
    assert int(st["disk_space"]) > 0
    disk_items = int(st["disk_items"])

    # Still bounded and the newest still there after a crash and a restart, and while
    # writing more.
    srv.sigkill()
    srv = persistent.restart(srv)
    check_bounded_and_newest(srv.port, N)
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), i, SIZE), i) for i in range(N, N + 1000)) == 1000
    check_bounded_and_newest(srv.port, N + 1000)
    assert srv.terminate() == 0
    srv = persistent.restart(srv)
    st = check_bounded_and_newest(srv.port, N + 1000)
    # disk_items (approximate or not) cannot exceed the distinct keys ever written; with
    # ~1000 items live it should be in that neighbourhood.
    assert disk_items <= N, f"disk_items {disk_items} after {N} distinct keys were written (~1000 live)"
    assert int(st["disk_items"]) <= N + 1000, \
        f"disk_items {st['disk_items']} after {N + 1000} distinct keys were written (~1000 live)"


def test_rewritten_items_count_once(persistent):
    """Overwriting the same keys again and again does not fill the disk limit by itself:
    the live data (1 MB) stays, all of it."""
    srv = persistent.start("-m", "2", "--disk-limit", "4m")
    keys = [f"rw-{i}" for i in range(250)]  # 250 x 4 KB = 1 MB live
    with Conn(srv.port) as c:
        for rnd in range(8):  # 8 MB written
            assert c.set_many((k, make_value(k, rnd, SIZE), 0) for k in keys) == len(keys)
    time.sleep(0.3)
    with Conn(srv.port) as c:
        got = c.get_multi(keys)
        st = c.stats()
    missing = [k for k in keys if k not in got]
    assert not missing, f"{len(missing)} live items evicted though only 1 MB is live under a 4 MB limit"
    assert all(parse_value(k, got[k][1]) == 7 for k in keys)
    assert int(st["disk_bytes"]) <= LIMIT


def test_limit_added_to_an_existing_dir_bounds_it(persistent):
    """A data dir filled without --disk-limit, restarted with --disk-limit 4m: the limit
    bounds what is on disk from then on (oldest-written items go), and disk_bytes
    accounts for the items that were already there."""
    srv = persistent.start("-m", "2")
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), i, SIZE), i) for i in range(N)) == N  # 16 MB
    assert srv.terminate() == 0
    srv = persistent.start("-m", "2", "--disk-limit", "4m")
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), i, SIZE), i) for i in range(N, N + 100)) == 100
    time.sleep(0.5)
    with Conn(srv.port) as c:
        st = c.stats()
        got = c.get_multi([key(i) for i in range(N + 100)], batch=400)
    served = sum(len(v) for _, v in got.values())
    assert served <= LIMIT, (
        f"--disk-limit 4m on a dir filled without a limit: {len(got)} items ({served >> 20} MB) still served from "
        f"disk; stats disk_bytes={st['disk_bytes']} disk_evictions={st['disk_evictions']}")
    assert all(key(i) in got for i in range(N, N + 100)), "the newest items must stay"
