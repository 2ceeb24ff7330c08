"""The write-ahead log (DIR/wal) and its ingestion into fjall's tables.

A write is acknowledged once it is in the log; the newest state of each key stays in
memory until the ingest thread writes it into fjall as tables (after 32 MiB of staged
changes or a 64 MiB log file) and deletes the log files that are then redundant. These
tests cross an ingestion with every kind of change and kill the server at the worst
moments: the state after a restart is exactly what was acknowledged."""
import shutil
import time

import pytest

from pclient import Conn, make_value, parse_value, wait_for

SIZE = 4096
N = 10_000  # 40 MB of distinct keys: more than the 32 MiB staged before an ingestion


def key(i):
    return f"w{i}"


def stats(port):
    with Conn(port) as c:
        return c.stats()


def check(port, expect):
    """expect: key -> version (None: absent). Returns the keys whose state differs."""
    keys = sorted(expect)
    with Conn(port) as c:
        got = c.get_multi(keys, batch=400)
    bad = []
    for k in keys:
        v = expect[k]
        if v is None:
            if k in got:
                bad.append((k, "present"))
        elif k not in got:
            bad.append((k, "missing"))
        elif parse_value(k, got[k][1]) != v:
            bad.append((k, f"version {parse_value(k, got[k][1])} instead of {v}"))
    return bad


@pytest.mark.parametrize("durability", ["async", "sync"])
def test_changes_across_an_ingestion_survive_sigkill(persistent, durability):
    srv = persistent.start("-m", "8", "--durability", durability)
    expect = {}
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), 1, SIZE), 1) for i in range(N)) == N
    expect.update({key(i): 1 for i in range(N)})
    st = wait_for(lambda: (lambda s: s if int(s["disk_ingestions"]) >= 1 else None)(stats(srv.port)), 10)
    assert st, f"no ingestion after {N * SIZE >> 20} MB of writes: {stats(srv.port)}"
    # After the ingestion: overwrite some keys (fjall has the old value), delete others,
    # write new ones; all of it only in the log when the server is killed.
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), 2, SIZE), 2) for i in range(0, 500)) == 500
        c.send(b"".join(b"delete %s\r\n" % key(i).encode() for i in range(500, 1000)))
        assert all(c.readline() == b"DELETED" for _ in range(500, 1000))
        assert c.set_many((key(i), make_value(key(i), 3, SIZE), 3) for i in range(N, N + 500)) == 500
    expect.update({key(i): 2 for i in range(0, 500)})
    expect.update({key(i): None for i in range(500, 1000)})
    expect.update({key(i): 3 for i in range(N, N + 500)})
    items = int(stats(srv.port)["disk_items"])
    assert items == N, f"disk_items {items}: {N} written, 500 deleted, 500 added"
    srv.sigkill()
    srv = persistent.restart(srv)
    assert not check(srv.port, expect)[:5]
    st = stats(srv.port)
    assert int(st["disk_items"]) == N, f"disk_items {st['disk_items']} after the replay"
    assert "replayed from the write-ahead log" in srv.run_log()
    # A clean stop ingests what is staged: the next start replays nothing, the log is
    # (nearly) empty, and everything is still there.
    assert srv.terminate() == 0
    srv = persistent.restart(srv)
    assert "replayed from the write-ahead log" not in srv.run_log()
    assert int(stats(srv.port)["disk_log_bytes"]) < 1 << 20
    assert not check(srv.port, expect)[:5]


def test_flush_all_in_the_log_empties_fjall_after_a_crash(persistent):
    """flush_all after an ingestion, then new writes, then SIGKILL: the restart replays
    the flush (fjall's older tables must not come back) and the writes after it."""
    srv = persistent.start("-m", "8", "--durability", "sync")
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), 1, SIZE), 1) for i in range(N)) == N
    assert wait_for(lambda: int(stats(srv.port)["disk_ingestions"]) >= 1, 10)
    with Conn(srv.port) as c:
        c.send(b"flush_all\r\n")
        assert c.readline() == b"OK"
        assert c.set_many((key(i), make_value(key(i), 5, SIZE), 5) for i in range(100)) == 100
    srv.sigkill()
    srv = persistent.restart(srv)
    expect = {key(i): (5 if i < 100 else None) for i in range(0, N, 7)}
    assert not check(srv.port, expect)[:5]
    assert int(stats(srv.port)["disk_items"]) == 100


def test_log_files_are_deleted_once_ingested(persistent):
    """Rewriting the same keys: each 64 MiB log file is ingested and deleted, so the log
    stays bounded while far more than that is written."""
    srv = persistent.start("-m", "64", "--durability", "async")
    keys = [f"r{i}" for i in range(2000)]  # 8 MB live
    for rnd in range(25):  # 200 MB written
        with Conn(srv.port) as c:
            assert c.set_many((k, make_value(k, rnd, SIZE), rnd) for k in keys) == len(keys)
    st = wait_for(lambda: (lambda s: s if int(s["disk_log_bytes"]) < 140 << 20 else None)(stats(srv.port)), 10)
    st = st or stats(srv.port)
    assert int(st["disk_ingestions"]) >= 2, st
    assert int(st["disk_log_bytes"]) < 140 << 20, f"log not trimmed: {st['disk_log_bytes']} bytes after 200 MB"
    time.sleep(0.2)
    srv.sigkill()
    srv = persistent.restart(srv)
    assert not check(srv.port, {k: 24 for k in keys})[:5]


PREPARED = (64 + 8) << 20  # size of a log file written full of zeros ahead of time (spare.rs)


def test_sync_log_moves_into_prepared_files_and_replays_them(persistent):
    """--durability sync logs into files written full of zeros ahead of time (`wal/spare`,
    so an fsync need not also write the file's size): once one is ready the log moves into
    it. A crash then loses nothing acknowledged, a frame cut short among the zeros is
    dropped and said, and `disk_log_bytes` counts frames, not zeros."""
    if shutil.disk_usage(persistent.tmp).free < 5 * PREPARED:
        pytest.skip("under 4 prepared files' size free: sqlcached prepares none (spare.rs)")
    srv = persistent.start("--durability", "sync")
    wal = persistent.dir / "wal"
    if "not prepared ahead of time" in srv.run_log():
        assert "tmpfs" in srv.run_log(), srv.run_log()
        pytest.skip("data dir on tmpfs: log files are not prepared (said at start)")
    spare = wal / "spare"
    assert wait_for(lambda: spare.exists() and spare.stat().st_size == PREPARED, 30), sorted(wal.iterdir())
    with Conn(srv.port) as c:
        assert c.set("first", b"x") == b"STORED"  # the commit after which the log moves
    in_use = wait_for(lambda: [p for p in wal.glob("*.wal") if p.stat().st_size == PREPARED], 5)
    assert in_use, f"the log did not move into the prepared file: {[(p.name, p.stat().st_size) for p in wal.iterdir()]}"
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), 1, 1000), 1) for i in range(2000)) == 2000
    assert int(stats(srv.port)["disk_log_bytes"]) < 8 << 20, "the prepared zeros are not log bytes"
    srv.sigkill()
    # A write a crash cut short among the zeros: frame marker and a partial header.
    f = max(wal.glob("*.wal"), key=lambda p: p.stat().st_size)
    used = len(f.read_bytes().rstrip(b"\0"))
    assert 2000 * 1000 < used < PREPARED
    with open(f, "r+b") as fh:
        fh.seek(used)
        fh.write(b"SQW1\x40\x00\x00\x00\x12\x34")
    srv = persistent.restart(srv)
    log = srv.run_log()
    assert "cut short" in log, log
    assert not check(srv.port, {key(i): 1 for i in range(2000)})[:5]
    with Conn(srv.port) as c:
        assert c.get("first") == (0, b"x")
    # A clean stop keeps a ready prepared file for the next start and leaves the log
    # files without their unused zeros.
    assert srv.terminate() == 0
    assert all(p.stat().st_size < PREPARED for p in wal.glob("*.wal")), [p.stat().st_size for p in wal.iterdir()]
