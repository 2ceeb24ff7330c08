"""Read errors, write errors and short writes on the data dir only (issue 14), injected with
tests/harness/diskfault.c, an LD_PRELOAD shim that touches only the descriptors opened under
--data-dir (libfiu's read/write faults would hit the client sockets too).

- A read error on disk is a miss for that key (counted in `disk_read_errors`, logged with
  a rate limit), the server and every other key keep working, and nothing is dropped: once the
  fault clears the same key is served again.
- A write error (EIO) degrades the tier like a failed fsync: writes refused with
  `SERVER_ERROR persistence failed`, reads served, recovery by itself, nothing acknowledged lost.
- Short writes are not errors: every write is acknowledged and reads back intact after kill -9.
"""
import socket
import struct
import sys
import time
from pathlib import Path

import pytest

from pclient import Conn, make_value, parse_value, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import diskfault  # noqa: E402


@pytest.fixture(scope="module")
def shim(tmp_path_factory):
    return diskfault.build(tmp_path_factory.mktemp("diskfault"))


def key(i):
    return f"df-{i}"


def check(port, keys, version=0):
    """Keys whose value is missing or not intact."""
    with Conn(port) as c:
        got = c.get_multi(keys)
    return [k for k in keys if k not in got or parse_value(k, got[k][1]) != version]


def stats(port):
    with Conn(port) as c:
        return c.stats()


def test_read_errors_are_misses_then_served_again(persistent, shim):
    """40 MB into -m 8: the staged changes are ingested into fjall's table files; after a
    restart (cold block cache) the oldest items can only come from those files."""
    fault = diskfault.DiskFault(shim, persistent.dir, persistent.tmp / "ctl")
    n, size = 10_000, 4096
    srv = persistent.start("-m", "8", env=fault.env())
    with Conn(srv.port) as c:
        assert c.set_many((key(i), make_value(key(i), 0, size), 0) for i in range(n)) == n
    assert srv.terminate() == 0
    srv = persistent.restart(srv, env=fault.env())
    old = [key(i) for i in range(100)]

    fault.on("read")
    with Conn(srv.port) as c:
        got = c.get_multi(old)
        assert len(got) < len(old), "reads from disk files should have failed"
        # Writes and everything in memory keep working while reads fail.
        assert c.set("fresh", b"new") == b"STORED"
        assert c.get("fresh") == (0, b"new")
    st = stats(srv.port)
    assert int(st["disk_read_errors"]) > 0
    assert st["disk_failed"] == "0", "a read error does not stop writes"
    log = srv.run_log()
    assert "disk read failed" in log
    assert log.count("disk read failed") <= 3, "read errors are logged with a rate limit"

    fault.off("read")
    assert check(srv.port, old) == [], "a failed read must not drop the item"
    assert check(srv.port, [key(i) for i in range(0, n, 37)]) == []
    srv.sigkill()


def test_write_errors_degrade_and_recover(persistent, shim):
    fault = diskfault.DiskFault(shim, persistent.dir, persistent.tmp / "ctl")
    srv = persistent.start("--durability", "sync", env=fault.env())
    acked = [key(i) for i in range(50)]
    with Conn(srv.port) as c:
        assert c.set_many((k, make_value(k, 0, 300), 0) for k in acked) == len(acked)
    fault.on("write")
    with Conn(srv.port) as c:
        assert c.set("refused-1", b"x").startswith(b"SERVER_ERROR")
    with Conn(srv.port) as c:
        assert c.set("refused-2", b"x") == b"SERVER_ERROR persistence failed"
        assert c.cmd("delete df-1") == b"SERVER_ERROR persistence failed"
    assert check(srv.port, acked) == []
    st = stats(srv.port)
    assert st["disk_failed"] == "1" and "Input/output error" in st["disk_error"], st["disk_error"]
    time.sleep(1.5)  # retries while the fault is on fail too
    assert stats(srv.port)["disk_failed"] == "1"

    fault.off("write")
    assert wait_for(lambda: stats(srv.port)["disk_failed"] == "0"), "never recovered"
    with Conn(srv.port) as c:
        assert c.set(key(1000), make_value(key(1000), 0, 300)) == b"STORED"
    acked.append(key(1000))
    assert "disk tier recovered" in srv.run_log()
    srv.sigkill()
    srv = persistent.restart(srv)
    assert check(srv.port, acked) == []
    with Conn(srv.port) as c:
        assert c.get("refused-2") is None


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_short_writes_lose_nothing(persistent, shim, durability):
    fault = diskfault.DiskFault(shim, persistent.dir, persistent.tmp / "ctl")
    fault.on("short")
    srv = persistent.start("--durability", durability, env=fault.env())
    n = 3000
    with Conn(srv.port) as c:
        # Sizes from 1 byte to 40 KB: journal records split across many short writes.
        assert c.set_many((key(i), make_value(key(i), 0, 1 + (i * 7919) % 40_000), 0) for i in range(n)) == n
    if durability == "async":
        time.sleep(1.0)  # past the async fsync interval (--flush-interval-ms, 100 ms)
    assert fault.short_write_seen(), "no write on the data dir was shortened"
    assert stats(srv.port)["disk_failed"] == "0", "a short write is not an error"
    srv.sigkill()
    srv = persistent.restart(srv)
    with Conn(srv.port) as c:
        got = c.get_multi([key(i) for i in range(n)])
    bad = [k for k in (key(i) for i in range(n)) if k not in got or parse_value(k, got[k][1]) != 0]
    assert bad == [], f"{len(bad)} items lost or torn, e.g. {bad[:5]}"


def binary_packet(opcode, key=b"", value=b"", extras=b"", opaque=0):
    return struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0,
                       len(extras) + len(key) + len(value), opaque, 0) + extras + key + value


def test_writes_in_flight_when_the_disk_fails_each_get_their_error(persistent, shim):
    """Pipelined writes already applied and waiting for the disk when it fails: each one's
    reply becomes the error, the other replies (reads) are sent as they are, and the
    connection goes on; binary requests keep their opaque."""
    fault = diskfault.DiskFault(shim, persistent.dir, persistent.tmp / "ctl")
    srv = persistent.start("--durability", "sync", env=fault.env())
    with Conn(srv.port) as c:
        assert c.set("before", b"ok") == b"STORED"
    fault.on("write")
    with Conn(srv.port) as c:
        c.send(b"".join(b"set p%d 0 0 2\r\nok\r\n" % i for i in range(10)) + b"get before\r\n"
               + b"set q 0 0 1 noreply\r\nx\r\n" + b"mn\r\n")
        for i in range(10):
            assert c.readline() == b"SERVER_ERROR persistence failed", i
        assert c.readline() == b"VALUE before 0 2" and c.readline() == b"ok" and c.readline() == b"END"
        assert c.readline() == b"SERVER_ERROR persistence failed"  # sent under noreply, as memcached does
        assert c.readline() == b"MN"
        assert c.cmd("get before") == b"VALUE before 0 2"  # the connection goes on
    fault.off("write")
    assert wait_for(lambda: stats(srv.port)["disk_failed"] == "0"), "never recovered"

    fault.on("write")
    with socket.create_connection(("127.0.0.1", srv.port), timeout=10) as s:
        s.sendall(b"".join(binary_packet(0x11, b"b%d" % i, b"v", struct.pack(">II", 0, 0), opaque=100 + i)
                           for i in range(5)) + binary_packet(0x0a, opaque=999))  # SetQ x5, Noop
        got = []
        buf = b""
        while len(got) < 6:
            buf += s.recv(65536)
            while len(buf) >= 24 and len(buf) >= 24 + struct.unpack(">I", buf[8:12])[0]:
                n = 24 + struct.unpack(">I", buf[8:12])[0]
                _, op, _, _, _, status, _, opaque, _ = struct.unpack(">BBHBBHIIQ", buf[:24])
                got.append((op, status, opaque))
                buf = buf[n:]
        assert got == [(0x11, 0x82, 100 + i) for i in range(5)] + [(0x0a, 0, 999)], got
    fault.off("write")
    assert wait_for(lambda: stats(srv.port)["disk_failed"] == "0"), "never recovered"
    srv.sigkill()
    srv = persistent.restart(srv)
    with Conn(srv.port) as c:
        assert c.get("before") == (0, b"ok")


def test_clean_stop_with_a_failing_disk_does_not_hang(persistent, shim):
    """A clean stop ingests the staged changes into fjall's tables; with every write to a
    table failing (the fault covers only db/keyspaces/, so the write-ahead log still works)
    that cannot happen, and the stop must still end (bounded wait, logged), with every
    acknowledged write read back after the fault clears (the write-ahead log has them)."""
    fault = diskfault.DiskFault(shim, persistent.dir / "db" / "keyspaces", persistent.tmp / "ctl")
    srv = persistent.start("--durability", "sync", env=fault.env())
    acked = [key(i) for i in range(300)]
    with Conn(srv.port) as c:
        assert c.set_many((k, make_value(k, 0, 3000), 0) for k in acked) == len(acked)
    fault.on("write")
    started = time.monotonic()
    srv.terminate(timeout=30)
    assert time.monotonic() - started < 25, "the stop hung on the failing disk"
    assert "the next start replays the journal" in srv.run_log()
    fault.off("write")
    srv = persistent.restart(srv)
    assert check(srv.port, acked) == []
