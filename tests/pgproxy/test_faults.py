"""Faults at the PostgreSQL front, for real: the server restarted under open sessions, a
client gone mid-COPY, the backend unreachable, too many clients, a stalled login, oversized
or garbage startup packets and random bytes at the listener; the front stays up throughout."""
import os
import random
import socket
import struct
import time

import psycopg
import pytest

from harness.pgproxy import start_pgproxy
from harness.postgres import start_postgres
from harness.servers import free_port


def alive(px):
    with psycopg.connect(px.dsn(database="pgp")) as c:
        return c.execute("SELECT 1").fetchone() == (1,)


def test_backend_restart_under_open_sessions(tmp_path):
    with start_postgres() as pg, start_pgproxy(pg, "--pg-backend-sslmode", "disable") as px:
        idle = psycopg.connect(px.dsn(), autocommit=True)
        busy = psycopg.connect(px.dsn(), autocommit=True)
        assert idle.execute("SELECT 1").fetchone() == (1,)
        pg.restart()  # fast shutdown: every session gets FATAL 57P01
        for c in (idle, busy):
            with pytest.raises(psycopg.OperationalError):
                c.execute("SELECT 1")
            c.close()
        # The next connection works.
        with psycopg.connect(px.dsn()) as c:
            assert c.execute("SELECT 2").fetchone() == (2,)
        # A crash (SIGKILL) mid-query: the client gets an error, not a hang.
        c = psycopg.connect(px.dsn(), autocommit=True)
        import threading
        threading.Timer(0.5, pg.kill).start()
        with pytest.raises(psycopg.OperationalError):
            c.execute("SELECT pg_sleep(20)")
        c.close()
        with pytest.raises(psycopg.OperationalError) as e:
            psycopg.connect(px.dsn())
        assert "cannot connect to PostgreSQL" in str(e.value)  # FATAL 08001 with the reason
        pg.start()
        with psycopg.connect(px.dsn()) as c:
            assert c.execute("SELECT 3").fetchone() == (3,)
        s = px.stats()
        assert s["pg_backend_errors"] >= 1 and s["pg_connections"] == 0


def test_client_gone_mid_copy(pgproxy, pgdb):
    import subprocess
    pgdb.sql("DROP TABLE IF EXISTS gone; CREATE TABLE gone (id int); GRANT ALL ON gone TO PUBLIC;", database="pgp")
    env = {**os.environ, "PGPASSWORD": pgdb.password, "PGSSLMODE": "disable", "PGAPPNAME": "gone_copy"}
    p = subprocess.Popen(["/usr/lib/postgresql/15/bin/psql", "-X", "-h", "127.0.0.1", "-p", str(pgproxy.pg_port),
                          "-U", pgdb.user, "-d", "pgp", "-c", "COPY gone FROM STDIN"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    p.stdin.write(b"".join(b"%d\n" % i for i in range(20000)))
    p.stdin.flush()
    active = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gone_copy' AND query LIKE 'COPY%'"
    deadline = time.monotonic() + 10
    while pgdb.sql(active).strip() != "1" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pgdb.sql(active).strip() == "1"
    # The client vanishes mid-COPY (killed: no CopyDone, no Terminate).
    p.kill()
    p.wait()
    gone = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'gone_copy'"
    deadline = time.monotonic() + 10
    while pgdb.sql(gone).strip() != "0" and time.monotonic() < deadline:
        time.sleep(0.05)
    # The backend session is gone (never reused dirty) and nothing was committed.
    assert pgdb.sql(gone).strip() == "0"
    assert pgdb.sql("SELECT count(*) FROM gone", database="pgp").strip() == "0"
    assert alive(pgproxy)


def test_backend_unreachable_and_too_many_clients(pgdb):
    dead = free_port()
    from harness.servers import Server, sqlcached_argv
    port, pg_port = free_port(), free_port()
    argv = sqlcached_argv(port, "--pg-listen", f"127.0.0.1:{pg_port}", "--pg-backend", f"127.0.0.1:{dead}")
    with Server(argv, port) as s:
        time.sleep(0.2)
        with pytest.raises(psycopg.OperationalError) as e:
            psycopg.connect(f"host=127.0.0.1 port={pg_port} user=u dbname=d sslmode=disable connect_timeout=10")
        assert "sqlcached: cannot connect to PostgreSQL at 127.0.0.1:" in str(e.value)
        assert "Connection refused" in str(e.value)
    with start_pgproxy(pgdb, "--pg-max-connections", "2", "--pg-backend-sslmode", "disable") as px:
        a, b = psycopg.connect(px.dsn()), psycopg.connect(px.dsn())
        with pytest.raises(psycopg.OperationalError) as e:
            psycopg.connect(px.dsn(sslmode="prefer"))
        assert "sorry, too many clients already" in str(e.value)
        # A cancel request still gets through when full.
        import threading
        threading.Timer(0.5, a.cancel).start()
        with pytest.raises(psycopg.errors.QueryCanceled):
            a.execute("SELECT pg_sleep(20)")
        a.close()
        b.close()
        time.sleep(0.1)
        with psycopg.connect(px.dsn()) as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
        # Over the limit: the refused client and the cancel request's connection.
        assert px.stats()["pg_connections_refused"] == 2


def startup_reply(port, payload, read=True):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(payload)
        if not read:
            return b""
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return out
                out += chunk
        except (ConnectionResetError, socket.timeout):
            return out


def test_bad_startup_packets_and_random_bytes(pgproxy):
    port = pgproxy.pg_port
    # A huge length word: refused from the header (nothing buffered), PostgreSQL's words.
    r = startup_reply(port, struct.pack("!I", 100_000_000) + b"\0" * 64)
    assert r.startswith(b"E") and b"invalid length of startup packet" in r
    # Garbage that fits: a protocol 2.0 packet, and a truncated parameter list.
    r = startup_reply(port, struct.pack("!II", 12, 0x00020000) + b"abcd")
    assert r.startswith(b"E") and b"unsupported frontend protocol" in r
    r = startup_reply(port, struct.pack("!II", 14, 0x00030000) + b"user\0x")
    assert r.startswith(b"E") and b"08P01" in r
    # An unknown cancel key: no answer, the connection closed.
    assert startup_reply(port, struct.pack("!IIII", 16, 80877102, 1, 2)) == b""
    # Random bytes, many times.
    rng = random.Random(41)
    for _ in range(200):
        blob = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 300)))
        startup_reply(port, blob, read=rng.random() < 0.2)
    # After login: a message type no client sends, and an oversized Sync.
    for bad in (b"Z\0\0\0\x04", b"S\0\x01\0\0"):
        with psycopg.connect(pgproxy.dsn()) as c:
            sock = socket.socket(fileno=os.dup(c.pgconn.socket))
            sock.setblocking(True)
            sock.settimeout(10)
            sock.sendall(bad)
            data = sock.recv(65536)
            sock.close()
            assert b"08P01" in data
    assert alive(pgproxy)
    assert pgproxy.stats()["pg_logins_aborted"] >= 4


def test_login_timeout(pgdb):
    with start_pgproxy(pgdb, "--pg-login-timeout", "1", "--pg-backend-sslmode", "disable") as px:
        before = px.stats()["pg_logins_aborted"]
        s = socket.create_connection(("127.0.0.1", px.pg_port), timeout=10)
        s.sendall(struct.pack("!I", 40))  # a startup packet that never completes
        t0 = time.monotonic()
        data = s.recv(65536)
        assert 0.5 < time.monotonic() - t0 < 5
        assert b"canceling authentication due to timeout" in data
        s.close()
        assert alive(px)
        # (>=: the harness's own port probe at start may be counted after `before` was read)
        assert px.stats()["pg_logins_aborted"] >= before + 1
