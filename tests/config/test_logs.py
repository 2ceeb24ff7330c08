"""Logs that speak: one line per lifecycle event at the default verbosity, misconfigurations
said at start, JSON lines with --log-format json, and a quick SIGTERM. Real processes
(sqlcached, MariaDB from scripts/mariadb.sh)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.mariadb import start_mariadb  # noqa: E402
from harness.servers import free_port, sqlcached_bin, wait_port  # noqa: E402


@pytest.fixture(scope="module")
def mariadb():
    with start_mariadb() as db:
        yield db


def run(args, env=None, settle=None, log_path=None, linger=0.0):
    """Start sqlcached, wait until `settle(log_text)` is true (or 10 s), SIGTERM it; returns
    (stderr text, seconds from SIGTERM to exit, exit code)."""
    port = free_port()
    penv = dict(os.environ, **(env or {}))
    with open(log_path, "wb") as f:
        p = subprocess.Popen([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), *args],
                             stdout=subprocess.DEVNULL, stderr=f, env=penv)
    wait_port(port, p)
    deadline = time.monotonic() + 10
    while settle and not settle(Path(log_path).read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(linger)
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    rc = p.wait(timeout=10)
    return Path(log_path).read_text(), time.monotonic() - t, rc


def test_lifecycle_lines_at_default_verbosity(tmp_path):
    data = tmp_path / "data"
    log, took, rc = run(["--data-dir", str(data)], log_path=tmp_path / "a.log")
    assert rc == 0
    assert "listening on TCP 127.0.0.1:" in log
    assert f"data dir {data}: created (0 items, async durability)" in log
    assert "ready: 4 worker threads" in log
    last = log.rstrip().splitlines()[-1]
    assert re.fullmatch(r"sqlcached: stopped in \d+ ms \(connections \d+ ms, disk tier \d+ ms\)", last), last
    assert "shutting down" in log
    assert took < 0.5, f"SIGTERM to exit took {took:.3f} s"
    log, _, _ = run(["--data-dir", str(data)], log_path=tmp_path / "b.log")
    assert f"data dir {data}: opened (0 items" in log


def test_mysql_user_without_password_is_said_at_start(tmp_path, mariadb):
    """The issue's report: --mysql-user without its password printed nothing and the cache
    silently stayed offline. Now both the cause and the effect are on stderr at -v 0."""
    env = {k: v for k, v in os.environ.items() if k != "SQLCACHED_MYSQL_PASSWORD"}
    args = ["--mysql-listen", f"127.0.0.1:{free_port()}", "--mysql-backend", f"127.0.0.1:{mariadb.port}",
            "--mysql-user", mariadb.user]
    # linger: the follower retries meanwhile; the same failure must not be logged again.
    log, took, rc = run(args, env=env, settle=lambda t: "Access denied" in t, log_path=tmp_path / "c.log", linger=3)
    assert rc == 0
    assert f"--mysql-user {mariadb.user} has no password" in log
    assert "Access denied" in log and "query cache offline" in log
    # Each component says it once (the binlog follower; the metadata task, which now
    # connects at start to load triggers and foreign keys), however often they retry.
    denied = [line for line in log.splitlines() if "Access denied" in line]
    assert sum("binlog" in line for line in denied) == 1, log
    assert sum("metadata" in line for line in denied) <= 1, log
    assert sum("DEGRADED" in line for line in denied) == 1, log
    assert len(denied) <= 3, log
    assert took < 0.5, f"SIGTERM to exit took {took:.3f} s with the proxy on"


def test_missing_trigger_privilege_is_said_at_start(tmp_path, mariadb):
    """An account that cannot see triggers leaves their side effects to the binlog: said."""
    mariadb.sql("CREATE USER IF NOT EXISTS 'notrig'@'%' IDENTIFIED BY 'pw';"
                "GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT, BINLOG MONITOR ON *.* TO 'notrig'@'%';")
    args = ["--mysql-listen", f"127.0.0.1:{free_port()}", "--mysql-backend", f"127.0.0.1:{mariadb.port}",
            "--mysql-user", "notrig"]
    log, _, rc = run(args, env={"SQLCACHED_MYSQL_PASSWORD": "pw"}, settle=lambda t: "TRIGGER privilege" in t,
                     log_path=tmp_path / "t.log")
    assert rc == 0
    assert "--mysql-user notrig has no TRIGGER privilege" in log, log
    log, _, _ = run([*args[:-1], mariadb.user], env={"SQLCACHED_MYSQL_PASSWORD": mariadb.password},
                    settle=lambda t: "query cache online" in t, log_path=tmp_path / "u.log", linger=0.5)
    assert "TRIGGER privilege" not in log, log


def test_binlog_connected_and_json_lines(tmp_path, mariadb):
    args = ["--log-format", "json", "--mysql-listen", f"127.0.0.1:{free_port()}",
            "--mysql-backend", f"127.0.0.1:{mariadb.port}", "--mysql-user", mariadb.user]
    log, took, rc = run(args, env={"SQLCACHED_MYSQL_PASSWORD": mariadb.password},
                        settle=lambda t: "query cache online" in t, log_path=tmp_path / "d.log")
    assert rc == 0
    lines = [json.loads(line) for line in log.splitlines()]
    assert all({"ts", "level", "target", "msg"} <= set(x) for x in lines)
    msgs = [x["msg"] for x in lines]
    assert any(m.startswith("listening on MySQL") for m in msgs), msgs
    assert any("connected; query cache online" in m for m in msgs), msgs
    assert msgs[-1].startswith("stopped in "), msgs[-1]
    assert took < 0.5, f"SIGTERM to exit took {took:.3f} s"


def test_unreachable_backend_said_once(tmp_path):
    """Clients of a proxy whose backend is down: one warning for the outage, not one per client."""
    import socket
    dead, mport = free_port(), free_port()
    port = free_port()
    with open(tmp_path / "e.log", "wb") as f:
        p = subprocess.Popen([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), "--mysql-listen",
                              f"127.0.0.1:{mport}", "--mysql-backend", f"127.0.0.1:{dead}"],
                             stdout=subprocess.DEVNULL, stderr=f)
    try:
        wait_port(mport, p)
        for _ in range(5):
            with socket.create_connection(("127.0.0.1", mport), timeout=5) as s:
                assert b"Can't connect to MySQL backend" in s.recv(1000)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
    log = (tmp_path / "e.log").read_text()
    assert log.count(f"backend 127.0.0.1:{dead} unreachable") == 1, log
    assert "DEGRADED: not caching, every query goes to the backend: no --mysql-user" in log, log


def test_daemon_mode_and_pidfile(tmp_path):
    """-d returns once the server serves; -P names the background process; SIGTERM to that
    pid stops it and removes the pid file. A start that fails under -d fails the command."""
    import socket
    port, pidfile = free_port(), tmp_path / "s.pid"
    p = subprocess.run([sqlcached_bin(), "-d", "-l", "127.0.0.1", "-p", str(port), "-P", str(pidfile),
                        "--data-dir", "data"], cwd=tmp_path, capture_output=True, timeout=30)
    assert p.returncode == 0, p
    pid = int(pidfile.read_text())
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:  # serving already
            s.sendall(b"set k 0 0 1\r\nv\r\n")
            assert s.recv(100) == b"STORED\r\n"
        assert (tmp_path / "data").is_dir()  # a relative --data-dir kept its meaning
        assert os.getsid(pid) == pid  # its own session
    finally:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while pidfile.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not pidfile.exists()
    # The port is taken by a listener: the daemonized start fails and says why.
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        p = subprocess.run([sqlcached_bin(), "-d", "-l", "127.0.0.1", "-p", str(busy.getsockname()[1])],
                           capture_output=True, text=True, timeout=30)
    assert p.returncode == 71 and "failed to listen on TCP" in p.stderr, p


def test_open_listener_without_auth_is_said_at_start(tmp_path):
    """Safe defaults: listening beyond loopback with no authentication is one warning line at
    the default verbosity; a loopback-only server says nothing of the kind."""
    port = free_port()
    with open(tmp_path / "open.log", "wb") as f:
        p = subprocess.Popen([sqlcached_bin(), "-l", "0.0.0.0", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=f)
    try:
        wait_port(port, p)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
    log = (tmp_path / "open.log").read_text()
    assert f"TCP 0.0.0.0:{port} is reachable from other hosts and has no authentication" in log, log
    log, _, _ = run([], log_path=tmp_path / "lo.log")
    assert "no authentication" not in log


def test_sigterm_drains_connections_and_loses_no_acknowledged_write(tmp_path):
    """SIGTERM: idle connections close at once (exit < 0.5 s); a client in the middle of a
    big pipeline of sets gets complete replies for what the server read, then EOF, and
    every STORED it got is on disk after a restart."""
    import socket
    data, port = tmp_path / "data", free_port()
    p = subprocess.Popen([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), "--data-dir", str(data)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, p)
    idle = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(20)]
    busy = socket.create_connection(("127.0.0.1", port), timeout=10)
    n = 20000
    busy.sendall(b"".join(b"set k%d 0 0 100\r\n%s\r\n" % (i, b"x" * 100) for i in range(n)))
    t = time.monotonic()
    p.send_signal(signal.SIGTERM)
    buf = b""
    while True:
        chunk = busy.recv(1 << 16)
        if not chunk:
            break
        buf += chunk
    assert p.wait(timeout=10) == 0
    took = time.monotonic() - t
    assert buf.endswith(b"\r\n") or buf == b"", buf[-20:]
    replies = buf.split(b"\r\n")[:-1]
    assert set(replies) <= {b"STORED"}, set(replies)
    for s in idle:
        assert s.recv(10) == b""  # closed by the server
    assert took < 2, took
    port = free_port()
    p = subprocess.Popen([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), "--data-dir", str(data)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, p)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            for i in range(len(replies)):
                c.sendall(b"mg k%d v\r\n" % i)
                line = b""
                while not line.endswith(b"\r\n"):
                    line += c.recv(1)
                assert line.startswith(b"VA 100"), (i, line)
                value = b""
                while len(value) < 102:
                    value += c.recv(102 - len(value))
                assert value == b"x" * 100 + b"\r\n"
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
    print(f"{len(replies)} of {n} pipelined sets acknowledged before the stop; all on disk after restart")


def test_sigterm_drains_mysql_proxy_connections(tmp_path, mariadb):
    """SIGTERM with MySQL clients connected: an idle one is closed at once, one running a
    query gets its complete result first, new clients are refused, and the process exits
    when the last command is answered (not after a fixed delay)."""
    import threading

    import pymysql
    mport, port = free_port(), free_port()
    env = dict(os.environ, SQLCACHED_MYSQL_PASSWORD=mariadb.password)
    with open(tmp_path / "d.log", "wb") as f:
        p = subprocess.Popen([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), "--mysql-listen",
                              f"127.0.0.1:{mport}", "--mysql-backend", f"127.0.0.1:{mariadb.port}",
                              "--mysql-user", mariadb.user], stdout=subprocess.DEVNULL, stderr=f, env=env)
    try:
        wait_port(mport, p)

        def connect():
            return pymysql.connect(host="127.0.0.1", port=mport, user=mariadb.user, password=mariadb.password,
                                   connect_timeout=5, read_timeout=10, autocommit=True)
        idle, busy = connect(), connect()
        result = {}

        def slow():
            with busy.cursor() as c:
                c.execute("SELECT SLEEP(1), 42")
                result["row"] = c.fetchone()
        t = threading.Thread(target=slow)
        t.start()
        time.sleep(0.3)  # the SELECT is running on the backend
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        time.sleep(0.1)
        with pytest.raises(pymysql.err.OperationalError):
            connect()  # refused while draining
        t.join(timeout=10)
        assert p.wait(timeout=10) == 0
        took = time.monotonic() - t0
        assert result.get("row") == (0, 42), result  # the running query was answered in full
        assert 0.5 < took < 1.5, f"SIGTERM to exit took {took:.3f} s with a 1 s query running"
        with pytest.raises(pymysql.err.OperationalError), idle.cursor() as c:
            c.execute("SELECT 1")  # the idle connection was closed by the stop
    finally:
        if p.poll() is None:
            p.kill()
    log = (tmp_path / "d.log").read_text()
    assert "stopped" in log and "still running" not in log, log
