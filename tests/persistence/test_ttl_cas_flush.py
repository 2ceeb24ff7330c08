"""Item metadata survives a restart: TTLs (absolute, so time spent down counts), CAS
uniques (old ones still compare, new ones never repeat old ones), flush_all (immediate
and delayed, including a deadline that passes while the server is down), incr/decr
values and TTLs changed by touch / gat / mg T."""
import time

import pytest

from pclient import OP_GAT, OP_INCR, OP_TOUCH, BinConn, Conn

STOPS = ["sigkill", "sigterm"]


def stop(srv, how):
    if how == "sigkill":
        srv.sigkill()
    else:
        assert srv.terminate() == 0


def sleep_until(t):
    d = t - time.monotonic()
    if d > 0:
        time.sleep(d)


@pytest.mark.parametrize("how", STOPS)
def test_cas_survives_restart(persistent, how):
    srv = persistent.start()
    seen = set()
    with Conn(srv.port) as c, BinConn(srv.port) as b:
        for k in ("a", "b", "c", "d"):
            assert c.set(k, k.encode() * 3, 7) == b"STORED"
        for i in range(20):  # more CAS values handed out (overwrites)
            assert c.set("churn", str(i).encode()) == b"STORED"
            seen.add(c.gets("churn")[2])
        before = {k: c.gets(k) for k in ("a", "b", "c", "d")}
        seen |= {v[2] for v in before.values()}
        assert b.bget("d")[2] == before["d"][2]
    stop(srv, how)
    srv = persistent.restart(srv)
    with Conn(srv.port) as c, BinConn(srv.port) as b:
        # The same CAS as before the restart, through every protocol.
        for k in ("a", "b", "c", "d"):
            assert c.gets(k) == before[k], f"gets {k} after restart"
        assert c.mg("c", "c")[0] == ["HD", f"c{before['c'][2]}"]
        assert b.bget("d")[2] == before["d"][2]
        # The CAS a client got before the restart still works...
        cas_a = before["a"][2]
        assert c.store("cas", "a", b"new-a", 9, 0, cas=cas_a) == b"STORED"
        # ...once; then it is stale.
        assert c.store("cas", "a", b"again", 9, 0, cas=cas_a) == b"EXISTS"
        # A wrong CAS never matches.
        assert c.store("cas", "b", b"x", 0, 0, cas=before["b"][2] + 1) == b"EXISTS"
        assert c.get("b") == (7, b"bbb")
        assert c.store("cas", "b", b"new-b", 0, 0, cas=before["b"][2]) == b"STORED"
        # New CAS values differ from every one handed out before the restart.
        new = {c.gets("a")[2], c.gets("b")[2]}
        for i in range(5):
            assert c.set(f"fresh{i}", b"v") == b"STORED"
            new.add(c.gets(f"fresh{i}")[2])
        assert c.set("churn", b"after") == b"STORED"
        new.add(c.gets("churn")[2])
        assert not (new & seen), f"CAS values reused after restart: {sorted(new & seen)}"
        assert min(new) > max(seen), f"CAS after restart {sorted(new)} not above the old ones (max {max(seen)})"
        after = {k: c.gets(k) for k in ("a", "b")}
    # The CAS values of writes made after the restart survive the next restart too.
    stop(srv, how)
    srv = persistent.restart(srv)
    with Conn(srv.port) as c:
        for k in ("a", "b"):
            assert c.gets(k) == after[k]
        assert c.store("cas", "a", b"stale", 0, 0, cas=cas_a) == b"EXISTS"
        assert c.store("cas", "a", b"ok", 0, 0, cas=after["a"][2]) == b"STORED"


@pytest.mark.parametrize("how", STOPS)
def test_flush_all_survives_restart(persistent, how):
    srv = persistent.start()
    with Conn(srv.port) as c:
        for i in range(50):
            assert c.set(f"ondisk{i}", b"x" * 100) == b"STORED"
    stop(srv, how)
    srv = persistent.restart(srv)  # ondisk* are now only on disk, memory is empty
    with Conn(srv.port) as c:
        for i in range(50):
            assert c.set(f"inmem{i}", b"y" * 100) == b"STORED"
        assert c.get("ondisk3") == (0, b"x" * 100)  # one of them back in memory
        assert c.cmd("flush_all") == b"OK"
        assert c.set("after-flush", b"z") == b"STORED"
    stop(srv, how)
    srv = persistent.restart(srv)
    with Conn(srv.port) as c:
        keys = [f"ondisk{i}" for i in range(50)] + [f"inmem{i}" for i in range(50)]
        got = c.get_multi(keys)
        assert not got, f"flushed items back after restart: {sorted(got)[:10]}"
        assert c.get("after-flush") == (0, b"z")
        assert c.stats()["disk_items"] == "1"


def test_ttl_and_ttl_changes_survive_restart(persistent):
    """TTLs are absolute: time spent down counts. Also incr/decr values and TTLs changed
    by touch / gat / binary touch and gat / mg T. (One wait covers all of them.)"""
    srv = persistent.start()
    with Conn(srv.port) as c, BinConn(srv.port) as b:
        t0 = time.monotonic()
        absolute = int(time.time()) + 1000
        assert c.set("ttl2", b"short", 1, 2) == b"STORED"
        assert c.set("ttl1000", b"long", 2, 1000) == b"STORED"
        assert c.set("ttl-abs", b"abs", 3, absolute) == b"STORED"
        assert c.set("ttl-never", b"never", 4, 0) == b"STORED"
        assert c.set("n", b"10", 3) == b"STORED"
        assert c.cmd("incr n 5") == b"15"
        assert c.cmd("decr n 3") == b"12"
        assert c.set("big", b"18446744073709551610") == b"STORED"
        assert c.cmd("incr big 5") == b"18446744073709551615"
        assert b.barith(OP_INCR, "bn", 7, initial=100, exptime=0)[1] == 100  # created
        assert b.barith(OP_INCR, "bn", 7)[1] == 107
        assert c.set("mn", b"1") == b"STORED"
        assert c.cmd("ma mn D41") == b"HD"
        # TTL changes: shortened, lengthened (touch, gat, binary touch/gat, mg T).
        assert c.set("shorten", b"s") == b"STORED"
        assert c.cmd("touch shorten 2") == b"TOUCHED"
        for k in ("lengthen", "gat", "btouch", "bgat", "mgT"):
            assert c.set(k, k.encode(), 0, 2) == b"STORED"
        assert c.cmd("touch lengthen 1000") == b"TOUCHED"
        c.send(b"gat 1000 gat\r\n")
        assert [c.readline(), c.readline(), c.readline()] == [b"VALUE gat 0 3", b"gat", b"END"]
        assert b.request(OP_TOUCH, b"btouch", b"", (1000).to_bytes(4, "big"))[0] == 0
        assert b.request(OP_GAT, b"bgat", b"", (1000).to_bytes(4, "big"))[0] == 0
        parts, value = c.mg("mgT", "v T1000")
        assert parts[0] == "VA" and value == b"mgT"
        assert c.mg_ttl("mgT") == 1000
    srv.sigkill()
    sleep_until(t0 + 3.2)  # the TTL 2 items expire while the server is down
    srv = persistent.restart(srv)
    elapsed = time.monotonic() - t0
    with Conn(srv.port) as c:
        assert c.mg("ttl2", "v")[0][0] == "EN", "TTL 2 item served 3 s later, after a restart"
        assert c.get("ttl2") is None
        assert c.get("ttl1000") == (2, b"long")
        ttl = c.mg_ttl("ttl1000")
        assert abs(ttl - (1000 - elapsed)) <= 2, f"TTL after restart {ttl}, expected about {1000 - elapsed:.0f}"
        ttl = c.mg_ttl("ttl-abs")
        assert abs(ttl - (absolute - time.time())) <= 2, f"absolute TTL after restart {ttl}"
        assert c.get("ttl-abs") == (3, b"abs")
        assert c.mg_ttl("ttl-never") == -1
        assert c.get("ttl-never") == (4, b"never")
        assert c.get("n") == (3, b"12")
        assert c.get("big") == (0, b"18446744073709551615")
        assert c.get("bn") == (0, b"107")
        assert c.get("mn") == (0, b"42")
        assert c.get("shorten") is None, "touch to TTL 2 not persisted"
        for k in ("lengthen", "gat", "btouch", "bgat", "mgT"):
            assert c.get(k) == (0, k.encode()), f"TTL 1000 set by {k} not persisted"
            ttl = c.mg_ttl(k)
            assert 990 <= ttl <= 1000, f"{k}: TTL {ttl} after restart"
        assert c.cmd("incr n 1") == b"13"
    # A second restart, clean this time: the expired items stay gone, the rest stays.
    assert srv.terminate() == 0
    srv = persistent.restart(srv)
    with Conn(srv.port) as c:
        assert c.get("ttl2") is None and c.get("shorten") is None
        assert c.get("ttl1000") == (2, b"long")
        assert c.get("n") == (3, b"13")


def test_delayed_flush_all_survives_restart(persistent, tmp_path):
    """flush_all with a delay. Server A (clean stop): restarted before the deadline, its
    items are readable until the deadline and gone after. Server B (SIGKILL): the
    deadline passes while it is down, so its items are gone when it comes back. Items
    written after the deadline stay, across another restart."""
    a = persistent.start()
    b = persistent.start(dir=tmp_path / "data-b", log=tmp_path / "b.log")
    for srv, prefix in ((a, "fa"), (b, "fb")):
        with Conn(srv.port) as c:
            for i in range(20):
                assert c.set(f"{prefix}{i}", b"v%d" % i) == b"STORED"
    t0 = time.monotonic()
    with Conn(a.port) as ca, Conn(b.port) as cb:
        assert ca.cmd("flush_all 3") == b"OK"
        assert cb.cmd("flush_all 2") == b"OK"
    assert a.terminate() == 0
    b.sigkill()
    a = persistent.restart(a)
    keys_a = [f"fa{i}" for i in range(20)]
    keys_b = [f"fb{i}" for i in range(20)]
    with Conn(a.port) as c:
        assert time.monotonic() - t0 < 1.5, "restart too slow for this test's timing"
        got = c.get_multi(keys_a[:10])
        assert len(got) == 10, f"items gone before the flush_all 3 deadline: {sorted(got)}"
    sleep_until(t0 + 3.5)
    b = persistent.restart(b)
    with Conn(b.port) as c:
        got = c.get_multi(keys_b)
        assert not got, f"flush_all 2 deadline passed while the server was down, yet served: {sorted(got)}"
        assert c.set("late", b"after deadline") == b"STORED"
    sleep_until(t0 + 4.5)
    with Conn(a.port) as c:
        got = c.get_multi(keys_a)
        assert not got, f"items still served after the flush_all 3 deadline: {sorted(got)}"
        assert c.set("late", b"after deadline") == b"STORED"
    assert a.terminate() == 0
    b.sigkill()
    for srv, keys in ((persistent.restart(a), keys_a), (persistent.restart(b), keys_b)):
        with Conn(srv.port) as c:
            assert not c.get_multi(keys)
            assert c.get("late") == (0, b"after deadline"), "item stored after the flush deadline lost"


def test_ttls_count_long_downtime(persistent, shifted_clock):
    """The server is down for 100 s (its wall clock is moved forward with an LD_PRELOAD
    shim instead of waiting): TTLs count the time spent down."""
    srv = persistent.start()
    with Conn(srv.port) as c:
        assert c.set("ttl50", b"a", 1, 50) == b"STORED"
        assert c.set("ttl1000", b"b", 2, 1000) == b"STORED"
        assert c.set("never", b"c", 3, 0) == b"STORED"
    srv.sigkill()
    srv = persistent.restart(srv, env=shifted_clock(100))
    with Conn(srv.port) as c:
        assert c.get("ttl50") is None, "TTL 50 item served after 100 s down"
        ttl = c.mg_ttl("ttl1000")
        assert ttl is not None and 895 <= ttl <= 901, f"TTL 1000 item after 100 s down: TTL {ttl}, expected ~900"
        assert c.get("ttl1000") == (2, b"b")
        assert c.get("never") == (3, b"c")


def test_old_delayed_flush_spares_later_items(persistent, shifted_clock):
    """A delayed flush_all whose deadline passed long before a restart still removes only
    the items stored before the deadline (the clock is moved with the shim)."""
    srv = persistent.start()
    with Conn(srv.port) as c:
        assert c.set("old", b"stored before the deadline") == b"STORED"
        assert c.cmd("flush_all 1") == b"OK"
    assert srv.terminate() == 0
    srv = persistent.restart(srv, env=shifted_clock(5))  # 5 s later: past the deadline
    with Conn(srv.port) as c:
        assert c.get("old") is None
        assert c.set("new", b"stored after the deadline", 0, 0) == b"STORED"
        assert c.set("new-ttl", b"also after", 2, 1000) == b"STORED"
    srv.sigkill()
    srv = persistent.restart(srv, env=shifted_clock(105))  # down for 100 s
    with Conn(srv.port) as c:
        assert c.get("old") is None
        got = c.get_multi(["new", "new-ttl"])
        assert got == {"new": (0, b"stored after the deadline"), "new-ttl": (2, b"also after")}, (
            f"items stored after a delayed flush_all's deadline, 100 s before a restart, are lost after it: "
            f"got {got}")
        ttl = c.mg_ttl("new-ttl")
        assert ttl is not None and 895 <= ttl <= 901, ttl
