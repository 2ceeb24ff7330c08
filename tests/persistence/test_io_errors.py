"""I/O errors on the data dir, injected for real with libfiu (Debian's fiu-utils): sqlcached runs
under `fiu-run -x` and `fiu-ctrl` makes every fdatasync(2) fail while the fault is on
(issue 14). Writes that cannot be made durable get `SERVER_ERROR persistence failed`, reads are
served, `stats` says why; when the fault clears the tier recovers by itself; after kill -9 every
acknowledged write is there."""
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pclient import Conn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import Server, free_port, sqlcached_bin  # noqa: E402

pytestmark = pytest.mark.skipif(not shutil.which("fiu-run") or not shutil.which("fiu-ctrl"),
                                reason="libfiu's fiu-run/fiu-ctrl missing (apt-get install fiu-utils)")
FAULT = "posix/io/sync/fdatasync"


def one(port, data):
    with Conn(port) as c:
        c.send(data)
        return c.readline()


def stat(port, name):
    with Conn(port) as c:
        c.send(b"stats\r\n")
        while True:
            line = c.readline()
            if line == b"END":
                raise KeyError(name)
            _, k, v = line.decode().split(" ", 2)
            if k == name:
                return v


def test_fsync_errors_degrade_and_recover(tmp_path):
    data, log = tmp_path / "data", tmp_path / "sqlcached.log"
    port = free_port()
    argv = [sqlcached_bin(), "-p", str(port), "-U", "0", "-l", "127.0.0.1", "--data-dir", str(data),
            "--durability", "sync"]
    s = Server(["fiu-run", "-x", *argv], port, log=str(log))
    try:
        acked = []
        for i in range(20):
            assert one(port, b"set a%d 0 0 2\r\nok\r\n" % i) == b"STORED"
            acked.append(b"a%d" % i)
        ctrl = lambda what: subprocess.run(["fiu-ctrl", "-c", f"{what} name={FAULT}", str(s.proc.pid)], check=True)
        ctrl("enable")
        # The first write after the fault fails its fsync; from then on writes are refused.
        assert one(port, b"set b 0 0 1\r\nx\r\n").startswith(b"SERVER_ERROR")
        assert one(port, b"set c 0 0 1\r\nx\r\n") == b"SERVER_ERROR persistence failed"
        assert one(port, b"delete a0\r\n") == b"SERVER_ERROR persistence failed"
        assert one(port, b"get a1\r\n").startswith(b"VALUE a1")
        assert stat(port, "disk_failed") == "1" and stat(port, "disk_error")
        time.sleep(2)  # retries while the fault is on fail too
        assert stat(port, "disk_failed") == "1"
        ctrl("disable")
        deadline = time.monotonic() + 10
        while stat(port, "disk_failed") != "0":
            assert time.monotonic() < deadline, "never recovered"
            time.sleep(0.1)
        assert one(port, b"set after 0 0 2\r\nok\r\n") == b"STORED"
        acked.append(b"after")
        assert "disk tier recovered" in log.read_text()
    finally:
        s.sigkill()
    s = Server(argv, port, log=str(log))
    try:
        with Conn(port) as c:
            for k in acked:
                c.send(b"mg %s v\r\n" % k)
                assert c.readline() == b"VA 2", k
                assert c.readline() == b"ok"
    finally:
        s.sigkill()
