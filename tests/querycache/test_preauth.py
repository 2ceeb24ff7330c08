"""Bounded before authentication (issue 12, item 7), tested the way it was found: clients
that start a login and stall, or claim a login packet of 16 MiB, no longer pin the proxy's
memory or connections; a logged-in client that stalls half-way through a command is closed
after the read timeout. Real MariaDB, real sqlcached, raw sockets as the attacker."""
import socket
import struct
import time

import pymysql
import pytest

from harness.mysqlproxy import start_proxy
from harness.servers import rss_mib

PROXY_ONLINE = False


def greeting(s):
    """Read the server's greeting packet; returns its payload."""
    head = s.recv(4, socket.MSG_WAITALL)
    n = struct.unpack("<I", head[:3] + b"\0")[0]
    return s.recv(n, socket.MSG_WAITALL)


def err_of(s, timeout):
    """The ERR packet the proxy sends before closing (code, message), or None at EOF."""
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except (ConnectionResetError, socket.timeout):
        pass
    if len(data) > 7 and data[4] == 0xFF:
        code = struct.unpack("<H", data[5:7])[0]
        return code, data[13:].decode(errors="replace")
    return None


def pid_of(px):
    return px.proc.pid


def test_oversized_login_packets_are_refused_from_the_header(mariadb):
    """30 clients send the first 4 MiB of a handshake response that claims 16 MiB, then
    stall. Before: +100 MiB RSS, still open 15 s later. Now: refused at once, memory flat."""
    with start_proxy(mariadb, online=False) as px:
        before = rss_mib(pid_of(px))
        socks = []
        for _ in range(30):
            s = socket.create_connection(("127.0.0.1", px.mysql_port), timeout=10)
            greeting(s)
            s.sendall(b"\xff\xff\xff\x01")  # a 16 MiB packet, sequence id 1
            try:
                s.sendall(b"\0" * (4 << 20))
            except (BrokenPipeError, ConnectionResetError):
                pass  # already refused and closed
            socks.append(s)
        t0 = time.monotonic()
        errs = [err_of(s, 5) for s in socks]
        took = time.monotonic() - t0
        after = rss_mib(pid_of(px))
        for s in socks:
            s.close()
        assert all(e and e[0] == 1043 and "too large" in e[1] for e in errs), errs[:3]
        assert took < 5, took
        assert after - before < 20, (before, after)
        assert int(px.stats()["mysql_aborted_connects"]) >= 30


def test_a_login_that_stalls_is_closed_after_the_connect_timeout(mariadb):
    with start_proxy(mariadb, "--mysql-connect-timeout", "2", online=False) as px:
        s = socket.create_connection(("127.0.0.1", px.mysql_port), timeout=10)
        greeting(s)
        s.sendall(b"\x40\x00\x00\x01" + b"\0" * 10)  # 10 of the 64 bytes announced
        t0 = time.monotonic()
        e = err_of(s, 10)
        took = time.monotonic() - t0
        s.close()
        assert e and e[0] == 1043 and "within 2 s" in e[1], e
        assert 1.5 < took < 4, took
        # A client that connects and sends nothing at all is closed the same way.
        s = socket.create_connection(("127.0.0.1", px.mysql_port), timeout=10)
        greeting(s)
        t0 = time.monotonic()
        e = err_of(s, 10)
        assert e and e[0] == 1043 and 1.5 < time.monotonic() - t0 < 4, e
        s.close()
        # Normal logins are unaffected.
        c = px.connect("qc")
        with c.cursor() as cur:
            cur.execute("SELECT 1")
            assert cur.fetchone() == (1,)
        c.close()


def test_a_half_sent_command_is_closed_after_the_read_timeout(mariadb):
    with start_proxy(mariadb, "--mysql-net-read-timeout", "1", online=False) as px:
        c = px.connect("qc")
        sock = c._sock
        sock.sendall(b"\x20\x00\x00\x00\x03SELECT")  # 7 of the 32 bytes announced, then nothing
        t0 = time.monotonic()
        e = err_of(sock, 10)
        took = time.monotonic() - t0
        assert e and e[0] == 1159, e
        assert 0.8 < took < 3, took
        assert int(px.stats()["mysql_aborted_clients"]) == 1
        # An idle logged-in client is not bounded by it (the backend's wait_timeout is).
        c2 = px.connect("qc")
        time.sleep(2)
        with c2.cursor() as cur:
            cur.execute("SELECT 2")
            assert cur.fetchone() == (2,)
        c2.close()


@pytest.mark.parametrize("bad", ["0", "x", "-1"])
def test_bad_timeout_values_are_refused_at_start(mariadb, bad):
    from harness.servers import free_port, sqlcached_bin
    import subprocess
    p = subprocess.run([sqlcached_bin(), "-p", str(free_port()), "-l", "127.0.0.1", "--mysql-listen",
                        f"127.0.0.1:{free_port()}", "--mysql-backend", f"127.0.0.1:{mariadb.port}",
                        "--mysql-connect-timeout", bad], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "--mysql-connect-timeout" in p.stderr, p.stderr


def test_a_client_that_leaves_before_logging_in_is_an_aborted_connect(mariadb):
    """A TCP probe (connect, read nothing or the greeting, close) and a client that sends a
    garbage login are aborted connects, as MariaDB counts them, not backend errors (found
    as `mysql_backend_errors 1` after every bench run: the bench's port probe)."""
    with start_proxy(mariadb, online=False) as px:
        st = px.stats()
        aborted, backend = int(st["mysql_aborted_connects"]), int(st["mysql_backend_errors"])
        socket.create_connection(("127.0.0.1", px.mysql_port), timeout=10).close()
        s = socket.create_connection(("127.0.0.1", px.mysql_port), timeout=10)
        greeting(s)
        s.close()
        s = socket.create_connection(("127.0.0.1", px.mysql_port), timeout=10)
        greeting(s)
        s.sendall(b"\x05\x00\x00\x01hello")  # a login packet too short to be one
        err_of(s, 5)
        s.close()
        deadline = time.monotonic() + 10
        while int(px.stats()["mysql_aborted_connects"]) < aborted + 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        st = px.stats()
        # (At least: the harness's own readiness probe may be counted after `aborted` was read.)
        assert int(st["mysql_aborted_connects"]) >= aborted + 3, st["mysql_aborted_connects"]
        assert int(st["mysql_backend_errors"]) == backend, st["mysql_backend_errors"]
        # The proxy still logs clients in.
        conn = pymysql.connect(host="127.0.0.1", port=px.mysql_port, user=mariadb.user, password=mariadb.password)
        conn.close()
