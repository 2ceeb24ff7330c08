"""Restarts: async durability keeps every acknowledged write across a crash of sqlcached
(SIGKILL; the OS survives); a clean stop (SIGTERM) keeps everything and is reported as
clean on the next start; every kind of mutation (text, meta, binary) is persisted."""
import struct

import pytest

from pclient import (OP_ADD, OP_APPEND, OP_DECR, OP_DELETE, OP_GAT, OP_INCR, OP_PREPEND, OP_REPLACE, OP_SET,
                     OP_TOUCH, BinConn, Conn, make_value)

UNCLEAN = "did not shut down cleanly"


def check_items(port, items):
    """items: {key: (flags, value)}; returns the list of problems."""
    problems = []
    with Conn(port) as c:
        got = c.get_multi(items)
    for k, want in items.items():
        if k not in got:
            problems.append(f"{k}: missing")
        elif got[k] != want:
            problems.append(f"{k}: flags/value differ (got flags {got[k][0]}, {len(got[k][1])} bytes)")
    return problems


def test_async_sigkill_keeps_acknowledged_writes_then_clean_stop(persistent):
    srv = persistent.start("--durability", "async", "--flush-interval-ms", "100")
    assert "created" in srv.run_log()
    n = 5000
    items = {f"a{i}": (i * 7919 % (1 << 32), make_value(f"a{i}", i, 50 + i % 1500)) for i in range(n)}
    with Conn(srv.port) as c:
        assert c.set_many((k, v, f) for k, (f, v) in items.items()) == n
        # Overwrites and deletes, acknowledged: the newest state must survive.
        for i in range(0, n, 10):
            k = f"a{i}"
            items[k] = (1, make_value(k, i + 1_000_000, 64))
            assert c.set(k, items[k][1], 1) == b"STORED"
        for i in range(5, n, 50):
            assert c.cmd(f"delete a{i}") == b"DELETED"
            del items[f"a{i}"]
        st = c.stats()
    assert st["disk_durability"] == "async"
    # Killed right after the last reply: nothing had to wait for the 100 ms fsync.
    srv.sigkill()
    srv = persistent.restart(srv)
    log = srv.run_log()
    assert UNCLEAN in log, f"restart after SIGKILL should say the last run was not clean: {log!r}"
    assert str(persistent.dir) in log
    problems = check_items(srv.port, items)
    assert not problems, f"{len(problems)} acknowledged writes lost by SIGKILL (async):\n" + "\n".join(problems[:20])
    with Conn(srv.port) as c:
        assert not c.get_multi([f"a{i}" for i in range(5, n, 50)]), "deleted items came back"

    # A clean stop: exit code 0, everything there, and the next start says nothing of an
    # unclean shutdown.
    with Conn(srv.port) as c:
        for i in range(n, n + 500):
            k = f"a{i}"
            items[k] = (0, make_value(k, i, 100))
            assert c.set(k, items[k][1]) == b"STORED"
    assert srv.terminate() == 0, f"SIGTERM: non-zero exit; log: {srv.run_log()!r}"
    srv = persistent.restart(srv)
    log = srv.run_log()
    assert UNCLEAN not in log, f"clean stop reported as unclean on the next start: {log!r}"
    assert "opened" in log and "failed" not in log, log
    problems = check_items(srv.port, items)
    assert not problems, f"{len(problems)} writes lost across a clean stop:\n" + "\n".join(problems[:20])
    with Conn(srv.port) as c:
        st = c.stats()
    assert int(st["disk_hits"]) >= len(items), "after a restart memory starts empty: reads come from disk"
    assert st["disk_failed"] == "0" and st["disk_damaged_records"] == "0"


def test_async_fsyncs_within_flush_interval(persistent):
    """async: writes are fsynced at least every --flush-interval-ms."""
    srv = persistent.start("--durability", "async", "--flush-interval-ms", "100")
    with Conn(srv.port) as c:
        base = int(c.stats()["disk_fsyncs"])
        assert c.set("k", b"v") == b"STORED"
        import time
        deadline = time.monotonic() + 1.0
        while int(c.stats()["disk_fsyncs"]) <= base and time.monotonic() < deadline:
            time.sleep(0.02)
        assert int(c.stats()["disk_fsyncs"]) > base, "no fsync within 1 s of a write with --flush-interval-ms 100"


def snapshot(port, keys):
    """{key: (value, flags, ttl, cas, stale)} by mg, None for missing keys."""
    out = {}
    with Conn(port) as c:
        for k in keys:
            parts, value = c.mg(k, "v f t c")
            if parts[0] == "EN":
                out[k] = None
                continue
            fl = {p[0]: p[1:] for p in parts[2:]}
            out[k] = (value, int(fl["f"]), int(fl["t"]), int(fl["c"]), "X" in parts)
    return out


def mutate_everything(port):
    """One of every mutation, through text, meta and binary commands. Returns the keys."""
    with Conn(port) as c, BinConn(port) as b:
        def ok(reply, want):
            assert reply == want, (reply, want)

        # text storage commands
        ok(c.set("t-set", b"v1", 11, 0), b"STORED")
        ok(c.store("add", "t-add", b"added", 12, 500), b"STORED")
        ok(c.store("add", "t-set", b"nope", 0, 0), b"NOT_STORED")
        ok(c.set("t-repl", b"old", 1), b"STORED")
        ok(c.store("replace", "t-repl", b"replaced", 13, 600), b"STORED")
        ok(c.set("t-app", b"mid", 14), b"STORED")
        ok(c.store("append", "t-app", b"-end", 0, 0), b"STORED")
        ok(c.store("prepend", "t-app", b"start-", 0, 0), b"STORED")
        ok(c.set("t-cas", b"before", 15), b"STORED")
        ok(c.store("cas", "t-cas", b"after", 16, 700, cas=c.gets("t-cas")[2]), b"STORED")
        ok(c.set("t-num", b"100", 17), b"STORED")
        ok(c.cmd("incr t-num 23"), b"123")
        ok(c.cmd("decr t-num 3"), b"120")
        ok(c.set("t-del", b"x"), b"STORED")
        ok(c.cmd("delete t-del"), b"DELETED")
        ok(c.set("t-touch", b"x", 18), b"STORED")
        ok(c.cmd("touch t-touch 800"), b"TOUCHED")
        ok(c.set("t-gat", b"y", 19), b"STORED")
        c.send(b"gat 900 t-gat\r\n")
        ok([c.readline(), c.readline(), c.readline()], [b"VALUE t-gat 19 1", b"y", b"END"])
        ok(c.set("t-gats", b"z", 20), b"STORED")
        c.send(b"gats 950 t-gats\r\n")
        ok(c.readline().split()[:4], [b"VALUE", b"t-gats", b"20", b"1"])
        ok([c.readline(), c.readline()], [b"z", b"END"])
        ok(c.set("t-noreply", b"quiet", 21), b"STORED")
        c.send(b"set t-noreply 22 0 6 noreply\r\nquiet2\r\n")
        # meta commands
        c.send(b"ms m-set 3 F31 T400\r\nabc\r\n")
        ok(c.readline(), b"HD")
        ok(c.set("m-app", b"base", 32), b"STORED")
        c.send(b"ms m-app 4 MA\r\n+app\r\n")
        ok(c.readline(), b"HD")
        c.send(b"ms m-app 4 MP\r\npre+\r\n")
        ok(c.readline(), b"HD")
        ok(c.set("m-repl", b"r0", 33), b"STORED")
        c.send(b"ms m-repl 2 MR F34\r\nr1\r\n")
        ok(c.readline(), b"HD")
        c.send(b"ms m-add 2 ME F35\r\na1\r\n")
        ok(c.readline(), b"HD")
        ok(c.set("m-del", b"x"), b"STORED")
        ok(c.cmd("md m-del"), b"HD")
        ok(c.set("m-stale", b"stale-me", 36, 0), b"STORED")
        ok(c.cmd("md m-stale I T30"), b"HD")
        ok(c.set("m-num", b"5", 37), b"STORED")
        ok(c.cmd("ma m-num D10"), b"HD")
        ok(c.cmd("ma m-num MD D3"), b"HD")
        ok(c.cmd("ma m-viv N300 J40"), b"HD")
        ok(c.set("m-mgT", b"q", 38, 0), b"STORED")
        ok(c.mg("m-mgT", "v T750")[1], b"q")
        # binary commands
        ok(b.bset(OP_SET, "b-set", b"bin", 51, 0)[0], 0)
        ok(b.bset(OP_ADD, "b-add", b"badd", 52, 650)[0], 0)
        ok(b.bset(OP_SET, "b-repl", b"b0", 1)[0], 0)
        ok(b.bset(OP_REPLACE, "b-repl", b"b1", 53)[0], 0)
        ok(b.bset(OP_SET, "b-app", b"mid", 54)[0], 0)
        ok(b.request(OP_APPEND, b"b-app", b">")[0], 0)
        ok(b.request(OP_PREPEND, b"b-app", b"<")[0], 0)
        ok(b.barith(OP_INCR, "b-num", 5, initial=1000, exptime=0)[1], 1000)
        ok(b.barith(OP_INCR, "b-num", 5)[1], 1005)
        ok(b.barith(OP_DECR, "b-num", 2)[1], 1003)
        ok(b.bset(OP_SET, "b-del", b"x")[0], 0)
        ok(b.request(OP_DELETE, b"b-del")[0], 0)
        ok(b.bset(OP_SET, "b-touch", b"bt", 55)[0], 0)
        ok(b.request(OP_TOUCH, b"b-touch", b"", struct.pack(">I", 850))[0], 0)
        ok(b.bset(OP_SET, "b-gat", b"bg", 56)[0], 0)
        ok(b.request(OP_GAT, b"b-gat", b"", struct.pack(">I", 870))[0], 0)
        ok(c.cmd("mn"), b"MN")  # everything before it answered
    return ["t-set", "t-add", "t-repl", "t-app", "t-cas", "t-num", "t-del", "t-touch", "t-gat", "t-gats",
            "t-noreply", "m-set", "m-app", "m-repl", "m-add", "m-del", "m-stale", "m-num", "m-viv", "m-mgT",
            "b-set", "b-add", "b-repl", "b-app", "b-num", "b-del", "b-touch", "b-gat"]


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_every_mutation_persists(persistent, how):
    """The state after a restart (value, flags, TTL, CAS, stale mark) is the state before."""
    srv = persistent.start()
    keys = mutate_everything(srv.port)
    before = snapshot(srv.port, keys)
    # sanity of the script itself
    assert before["t-app"][0] == b"start-mid-end" and before["t-num"][0] == b"120"
    assert before["t-del"] is None and before["m-del"] is None and before["b-del"] is None
    assert before["b-app"][0] == b"<mid>" and before["b-num"][0] == b"1003"
    assert before["m-stale"][4], "md I marks the item stale"
    assert before["t-noreply"][:2] == (b"quiet2", 22)
    if how == "sigkill":
        srv.sigkill()
    else:
        assert srv.terminate() == 0
    srv = persistent.restart(srv)
    after = snapshot(srv.port, keys)
    diffs = []
    for k in keys:
        b, a = before[k], after[k]
        if b is None or a is None:
            if a != b:
                diffs.append(f"{k}: before {b}, after {a}")
            continue
        same = a[0] == b[0] and a[1] == b[1] and a[3] == b[3] and a[4] == b[4]
        ttl_ok = (a[2] == b[2] == -1) or (b[2] >= 0 and abs(a[2] - b[2]) <= 2)
        if not (same and ttl_ok):
            diffs.append(f"{k}: before (value, flags, ttl, cas, stale) = {b}, after {a}")
    assert not diffs, f"state changed by a restart ({how}):\n" + "\n".join(diffs)


def test_writes_racing_flush_all_agree_after_restart(persistent):
    """Sets running while flush_all runs: what the server serves after flush_all answered
    (from memory) is what it serves after a clean restart (from disk). A set that lands
    in memory after flush_all cleared its shard must also land on disk after the flush."""
    import threading
    import time

    srv = persistent.start("-t", "4")
    for rnd in range(5):
        stop = threading.Event()
        written = {}

        def writer(t):
            with Conn(srv.port) as c:
                i = 0
                while not stop.is_set():
                    assert c.set(f"r{rnd}w{t}-{i}", b"v", t) == b"STORED"
                    i += 1
                written[t] = i

        with Conn(srv.port) as c:
            c.set_many((f"fill{j}", b"x" * 100, 0) for j in range(20000))  # flush_all has work to do
            threads = [threading.Thread(target=writer, args=(t,)) for t in range(3)]
            for t in threads:
                t.start()
            time.sleep(0.05)
            assert c.cmd("flush_all") == b"OK"
            time.sleep(0.01)
            stop.set()
            for t in threads:
                t.join(30)
            keys = [f"r{rnd}w{t}-{i}" for t in range(3) for i in range(written[t])]
            before = c.get_multi(keys, batch=500)
        assert srv.terminate() == 0
        srv = persistent.restart(srv)
        with Conn(srv.port) as c:
            after = c.get_multi(keys, batch=500)
            assert c.cmd("flush_all") == b"OK"
        lost = sorted(set(before) - set(after))
        extra = sorted(set(after) - set(before))
        assert not lost and not extra, (
            f"round {rnd}: {len(lost)} items served after flush_all returned (stored concurrently with it) are gone "
            f"after a clean restart, e.g. {lost[:5]}; {len(extra)} items came back that were not there: {extra[:5]}")


def mutate_disk_only(port):
    """After a restart (memory empty) change items that are only on disk: each is read
    from disk, changed in memory and must be written back."""
    with Conn(port) as c, BinConn(port) as b:
        def ok(reply, want):
            assert reply == want, (reply, want)

        ok(c.cmd("incr t-num 5"), b"125")
        ok(c.store("append", "t-app", b"!", 0, 0), b"STORED")
        ok(c.store("prepend", "t-repl", b"^", 0, 0), b"STORED")
        ok(c.cmd("touch t-set 333"), b"TOUCHED")
        ok(c.cmd("delete t-add"), b"DELETED")
        ok(c.store("cas", "t-cas", b"cas-after-restart", 61, 0, cas=c.gets("t-cas")[2]), b"STORED")
        c.send(b"gat 444 t-gat\r\n")
        ok([c.readline(), c.readline(), c.readline()], [b"VALUE t-gat 19 1", b"y", b"END"])
        ok(c.cmd("ma b-num D7"), b"HD")
        ok(c.mg("m-set", "v T555")[1], b"abc")
        c.send(b"ms m-app 1 MA\r\n#\r\n")
        ok(c.readline(), b"HD")
        ok(c.cmd("md m-num"), b"HD")
        ok(c.cmd("ma m-viv MI D2"), b"HD")
        ok(b.request(OP_APPEND, b"b-set", b"+")[0], 0)
        ok(b.barith(OP_DECR, "t-num", 100)[1], 25)  # memcached pads a shorter decr result: "25 "
        ok(b.request(OP_TOUCH, b"b-touch", b"", struct.pack(">I", 123))[0], 0)
        ok(b.request(OP_DELETE, b"b-gat")[0], 0)
        ok(c.cmd("mn"), b"MN")


@pytest.mark.parametrize("how", ["sigkill", "sigterm"])
def test_mutations_of_items_only_on_disk_persist(persistent, how):
    srv = persistent.start()
    keys = mutate_everything(srv.port)
    assert srv.terminate() == 0
    srv = persistent.restart(srv)
    mutate_disk_only(srv.port)
    before = snapshot(srv.port, keys)
    assert before["t-num"][0] == b"25 " and before["t-add"] is None and before["b-gat"] is None
    assert before["t-app"][0] == b"start-mid-end!" and before["b-set"][0] == b"bin+"
    if how == "sigkill":
        srv.sigkill()
    else:
        assert srv.terminate() == 0
    srv = persistent.restart(srv)
    after = snapshot(srv.port, keys)
    diffs = []
    for k in keys:
        b, a = before[k], after[k]
        if b is None or a is None:
            if a != b:
                diffs.append(f"{k}: before {b}, after {a}")
            continue
        same = a[0] == b[0] and a[1] == b[1] and a[3] == b[3] and a[4] == b[4]
        ttl_ok = (a[2] == b[2] == -1) or (b[2] >= 0 and abs(a[2] - b[2]) <= 2)
        if not (same and ttl_ok):
            diffs.append(f"{k}: before (value, flags, ttl, cas, stale) = {b}, after {a}")
    assert not diffs, f"changes to items read back from disk lost by a restart ({how}):\n" + "\n".join(diffs)


def test_edge_items_persist(persistent):
    """Empty values, 250-byte keys, UTF-8 keys, the largest flags, values near -I."""
    srv = persistent.start("-I", "5m", "-m", "64")
    items = {
        "empty": (0, b""),
        "k" * 250: (1, b"long key"),
        "cl\u00e9-\u65e5\u672c": (2, "utf-8 key".encode()),
        "maxflags": ((1 << 32) - 1, b"flags"),
        "crlf-inside": (3, b"a\r\nb\r\n\x00\xff"),
        "big4m": (4, make_value("big4m", 1, 4 << 20)),
        "big1m": (5, make_value("big1m", 1, 1 << 20)),
    }
    with Conn(srv.port) as c:
        for k, (f, v) in items.items():
            c.send(b"set " + k.encode() + f" {f} 0 {len(v)}\r\n".encode() + v + b"\r\n")
            assert c.readline() == b"STORED", k
    srv.sigkill()
    srv = persistent.restart(srv)
    with Conn(srv.port) as c:
        for k, want in items.items():
            c.send(b"get " + k.encode() + b"\r\n")
            line = c.readline()
            assert line.startswith(b"VALUE "), (k, line)
            f, n = map(int, line.split()[2:4])
            got = (f, c.read_exact(n + 2)[:-2])
            assert c.readline() == b"END"
            assert got == want, f"{k!r}: {got[0]}, {len(got[1])} bytes after restart"


def test_stats_lines(persistent):
    """The disk tier's stats lines are there (and only with --data-dir)."""
    names = ["disk_hits", "disk_durability", "disk_items", "disk_bytes", "disk_space", "disk_limit", "disk_writes",
             "disk_batches", "disk_fsyncs", "disk_evictions", "disk_damaged_records", "disk_read_errors",
             "disk_queue_bytes", "disk_failed"]
    srv = persistent.start("--durability", "sync", "--disk-limit", "3m")
    with Conn(srv.port) as c:
        assert c.set("a", b"1") == b"STORED"
        st = c.stats()
    missing = [n for n in names if n not in st]
    assert not missing, f"stats lines missing: {missing}"
    assert st["disk_durability"] == "sync" and st["disk_limit"] == str(3 << 20)
    assert st["disk_failed"] == "0" and int(st["disk_writes"]) >= 1 and int(st["disk_fsyncs"]) >= 1
    from harness.servers import start_sqlcached
    with start_sqlcached() as plain, Conn(plain.port) as c:
        assert not [k for k in c.stats() if k.startswith("disk_")], "disk_* stats without --data-dir"



def table_bytes(data_dir) -> int:
    """Bytes in fjall's tables (`db/keyspaces/*/tables/`): what is no longer only in the journal."""
    return sum(p.stat().st_size for p in (data_dir / "db" / "keyspaces").glob("*/tables/*") if p.is_file())


def test_clean_stop_writes_memtables_out(persistent):
    """A clean stop ingests the staged changes into fjall's tables, so the next start
    replays nothing from the write-ahead log (seed 002's replay found start-up growing with
    the data after a clean stop: the tables were empty, everything lived in the journal).
    Everything is still there afterwards, and the start says the stop was clean."""
    srv = persistent.start("-m", "64")
    items = {f"j{i}": (i % 7, make_value(f"j{i}", 1, 300)) for i in range(20000)}
    with Conn(srv.port) as c:
        for k, (flags, v) in items.items():
            c.send(b"set %s %d 0 %d noreply\r\n%s\r\n" % (k.encode(), flags, len(v), v))
        assert c.set("last", b"x") == b"STORED"
    assert table_bytes(persistent.dir) < 1 << 20, "the ~6 MB just written should still be staged (only in the write-ahead log)"
    assert srv.terminate() == 0
    after = table_bytes(persistent.dir)
    assert after > 4 << 20, f"after a clean stop the tables hold only {after} bytes"
    srv = persistent.restart(srv)
    assert UNCLEAN not in persistent.log.read_text()
    assert "replayed from the write-ahead log" not in persistent.log.read_text()
    assert check_items(srv.port, items) == []


def test_disk_cache_bounds_the_memory_reads_from_disk_take(persistent, tmp_path):
    """`--disk-cache` bounds fjall's block cache (a share of -m, docs/memory.md): after 48 MB
    of items are read back from disk twice, a server with a 4 MB cache holds tens of MB less
    than one with 64 MB (which then holds most of the blocks it read)."""
    from harness.servers import rss_mib
    value = b"v" * 4000
    keys = [f"big{i}" for i in range(12_000)]
    rss = {}
    for cache in ("4m", "64m"):
        d = tmp_path / f"data-{cache}"
        srv = persistent.start("-m", "128", "--disk-cache", cache, dir=d, log=str(tmp_path / f"{cache}.log"))
        with Conn(srv.port) as c:
            assert c.set_many((k, value, 0) for k in keys) == len(keys)
        srv.stop()
        srv = persistent.restart(srv)
        with Conn(srv.port) as c:
            assert c.stats()["disk_cache"] == str(int(cache[:-1]) << 20)
            for _ in range(2):
                got = c.get_multi(keys)
                assert len(got) == len(keys)
            assert int(c.stats()["disk_memtable_bytes"]) >= 0
        rss[cache] = rss_mib(srv.proc.pid)
        srv.stop()
    assert rss["64m"] - rss["4m"] > 25, f"RSS with --disk-cache 4m vs 64m: {rss}"
