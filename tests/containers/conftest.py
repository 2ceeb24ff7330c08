"""Fixtures for the SQL container tests: SQLite databases built with python's sqlite3,
TOML files, sqlcached processes with --containers, a tiny text client."""
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import free_port, sqlcached_bin, start_sqlcached  # noqa: E402


class Client:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""

    def send(self, data: bytes):
        self.s.sendall(data)

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def cmd(self, line: str) -> bytes:
        self.send(line.encode() + b"\r\n")
        return self.line()

    def store(self, cmd, key, value, flags=0, exptime=0, extra=""):
        if isinstance(value, str):
            value = value.encode()
        tail = f" {extra}" if extra else ""
        self.send(f"{cmd} {key} {flags} {exptime} {len(value)}{tail}\r\n".encode() + value + b"\r\n")
        return self.line()

    def get(self, *keys, cmd="get"):
        """{key: (flags, value[, cas])} plus the order of VALUE keys."""
        self.send(f"{cmd} {' '.join(keys)}\r\n".encode())
        got, order = {}, []
        while True:
            line = self.line()
            if line == b"END":
                return got, order
            parts = line.split()
            if parts[0] != b"VALUE":
                raise AssertionError(f"unexpected reply {line!r}")
            data = self.exact(int(parts[3]) + 2)[:-2]
            k = parts[1].decode()
            order.append(k)
            got[k] = (int(parts[2]), data) + ((int(parts[4]),) if len(parts) > 4 else ())

    def value(self, key):
        got, _ = self.get(key)
        return got[key][1] if key in got else None

    def close(self):
        self.s.close()


def make_sqlite(path, statements):
    db = sqlite3.connect(path)
    db.executescript(statements)
    db.commit()
    db.close()


def start_with(toml_path, *args, log=None):
    return start_sqlcached("--containers", str(toml_path), *args, log=log)


def start_fails(toml_path):
    """Run sqlcached with a bad config: (exit code, stderr)."""
    p = subprocess.run(
        [sqlcached_bin(), "-l", "127.0.0.1", "-p", str(free_port()), "--containers", str(toml_path)],
        capture_output=True, text=True, timeout=30,
    )
    return p.returncode, p.stderr


@pytest.fixture
def client_of():
    clients = []

    def make(server):
        c = Client(server.port)
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


def wait_value(c, key, want, timeout=20):
    """Gets `key` until it reads `want` (SERVER_ERROR meanwhile is fine: a backend coming back)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        c.send(f"get {key}\r\n".encode())
        last = c.line()
        if last.startswith(b"VALUE"):
            value = c.line()
            assert c.line() == b"END"
            assert value == want, value
            return
        assert last.startswith(b"SERVER_ERROR"), last
        time.sleep(0.3)
    raise AssertionError(f"no recovery: last reply {last!r}")


def restart_during_load(s, client_of, stop, start, stored, container="setup_1", key="AA", want=b"HELLO, HELLO"):
    """Sets keys `@@<container>.load<i>` from another connection while the backend is stopped
    (`stop()`) and started again (`start()`): container commands answer SERVER_ERROR while it
    is down, recover by themselves, and every acknowledged write is in the table afterwards
    (`stored()`: the keys the table holds). The same on every networked backend."""
    c = client_of(s)
    acked, errors, stop_writer = [], [], threading.Event()

    def writer():
        w = client_of(s)
        i = 0
        while not stop_writer.is_set():
            r = w.store("set", f"@@{container}.load{i}", f"v{i}")
            if r == b"STORED":
                acked.append(i)
            else:
                assert r.startswith(b"SERVER_ERROR"), r
                errors.append(r)
            i += 1
            time.sleep(0.005)

    t = threading.Thread(target=writer)
    t.start()
    try:
        time.sleep(0.5)
        stop()
        time.sleep(1.0)
        r = c.cmd(f"get @@{container}.{key}")
        assert r.startswith(b"SERVER_ERROR"), r
        start()
        wait_value(c, f"@@{container}.{key}", want, timeout=15)
        time.sleep(0.5)
    finally:
        stop_writer.set()
        t.join(10)
    assert errors, "no SERVER_ERROR while the backend was down"
    assert acked
    got = set(stored())
    missing = [i for i in acked if f"load{i}" not in got]
    assert not missing, missing[:10]
