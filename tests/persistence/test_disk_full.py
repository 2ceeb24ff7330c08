"""A full disk, for real (issue 14): --data-dir on a size-limited tmpfs (the tests run as root).

When the disk fills, writes that cannot be made durable get `SERVER_ERROR out of space for
persistence` (text, meta) or status 0x82 (binary) instead of an acknowledgement; reads keep being
served; `stats` says why; memory stays bounded. When space comes back the tier recovers by
itself, without a restart; after kill -9 every acknowledged write is there."""
import socket
import struct
import subprocess
import time

import pytest

from harness.servers import rss_mib
from pclient import Conn

MIB = 1 << 20
VALUE = b"x" * 100_000


@pytest.fixture
def tmpfs(tmp_path):
    """A 100 MiB tmpfs (skipped where mounting is not allowed)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=100m", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def stats(port):
    with Conn(port) as c:
        return c.stats()


def fill(port):
    """Set 100 KB values until one is refused; returns (acknowledged keys, the refusal)."""
    acked = []
    with Conn(port) as c:
        for i in range(5000):
            c.send(b"set k%d 0 0 %d\r\n%s\r\n" % (i, len(VALUE), VALUE))
            line = c.readline()
            if line != b"STORED":
                return acked, line
            acked.append(i)
    pytest.fail("the disk never filled")


def one(port, data, n=1):
    with Conn(port) as c:
        c.send(data)
        return b"".join(c.readline() for _ in range(n))


def binary_set(port, key, value):
    """A binary SET; returns the response status."""
    extras = struct.pack(">II", 0, 0)
    hdr = struct.pack(">BBHBBHIIQ", 0x80, 0x01, len(key), len(extras), 0, 0, len(extras) + len(key) + len(value), 7, 0)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(hdr + extras + key + value)
        resp = b""
        while len(resp) < 24:
            resp += s.recv(24 - len(resp))
        return struct.unpack(">H", resp[6:8])[0]


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_full_disk_degrades_refuses_writes_and_recovers(persistent, tmpfs, durability):
    filler = tmpfs / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * 60 * MIB)
    data = tmpfs / "data"
    s = persistent.start("-m", "256", "--durability", durability, dir=data)
    acked, refusal = fill(s.port)
    assert len(acked) > 50, f"some writes fit before the disk filled ({refusal!r})"
    # The write that did not fit: an error, then (race at the moment of failure) a close or
    # the refusal itself; never a silent close without a word.
    assert refusal.startswith(b"SERVER_ERROR"), refusal
    # Degraded: reads served, every kind of write refused with the reason, stats say why.
    assert one(s.port, b"get k%d\r\n" % acked[0]).startswith(b"VALUE")
    full = b"SERVER_ERROR out of space for persistence"
    assert one(s.port, b"set new 0 0 3\r\nabc\r\n") == full
    assert one(s.port, b"delete k0\r\n") == full
    assert one(s.port, b"incr n 1\r\n") == full
    assert one(s.port, b"touch k1 100\r\n") == full
    assert one(s.port, b"ms m 3\r\nabc\r\n") == full
    assert one(s.port, b"md k1\r\n") == full
    assert one(s.port, b"flush_all\r\n") == full
    assert binary_set(s.port, b"bin", b"v") == 0x82
    st = stats(s.port)
    assert st["disk_failed"] == "1" and "No space" in st["disk_error"], st
    # Bounded while degraded: a client hammering writes gets errors, memory does not grow.
    rss0 = rss_mib(s.proc.pid)
    with Conn(s.port) as c:
        for i in range(300):
            c.send(b"set h%d 0 0 %d\r\n%s\r\n" % (i, len(VALUE), VALUE))
            assert c.readline() == full
    assert rss_mib(s.proc.pid) < rss0 + 16, (rss0, rss_mib(s.proc.pid))
    # Space comes back: the tier recovers by itself.
    filler.unlink()
    deadline = time.monotonic() + 20
    while stats(s.port)["disk_failed"] != "0":
        assert time.monotonic() < deadline, f"never recovered: {s.run_log()}"
        time.sleep(0.2)
    assert one(s.port, b"set after 0 0 5\r\nhello\r\n") == b"STORED"
    assert "disk tier recovered" in s.run_log()
    assert int(stats(s.port)["disk_recoveries"]) >= 1
    # kill -9: every acknowledged write is there.
    s.sigkill()
    s = persistent.restart(s)
    with Conn(s.port) as c:
        for i in acked + ["after"]:
            key = b"k%d" % i if isinstance(i, int) else b"after"
            c.send(b"mg %s v\r\n" % key)
            line = c.readline()
            assert line.startswith(b"VA"), (key, line)
            c.read_exact(int(line.split()[1]) + 2)
