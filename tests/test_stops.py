"""SIGTERM stops promptly, every time (issue 42: 5 of 30 stops took 1.5-2 s).

Fifty servers with a data dir (the disk tier's close is most of a stop), the status page and
the SQLite containers example, each stopped under light load (a client storing and reading,
another idle). Each stop must finish well within a second: the bound is generous on purpose
(a loaded CI machine must not fail it), a lost wake-up or a sleep on the way out (up to a
second each) does not fit in it. The server's own `stopped in N ms (...)` line says where
the time went; the distribution is printed (pytest -s)."""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness.servers import free_port, sqlcached_bin, wait_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "crates" / "sql-containers" / "examples"
STOPS = 50
BOUND = 1.0


def client(port, stop):
    try:
        with socket.create_connection(("127.0.0.1", port)) as s:
            f = s.makefile("rb")
            i = 0
            while not stop.is_set():
                s.sendall(b"set k%d 0 0 1\r\nx\r\nget k%d\r\n" % (i % 100, i % 100))
                for _ in range(4):
                    f.readline()
                i += 1
                time.sleep(0.002)
    except OSError:
        pass  # the server closed the connection: it is stopping


def test_fifty_stops_under_light_load_are_prompt(tmp_path):
    import shutil
    if not shutil.which("sqlite3"):
        pytest.skip("sqlite3 (the CLI) is not installed")
    (tmp_path / "data").mkdir()
    subprocess.run(["sqlite3", str(tmp_path / "data" / "containers.db")], input=(EXAMPLE / "sqlite.sql").read_text(),
                   text=True, check=True)
    took, lines = [], []
    for n in range(STOPS):
        port, mport = free_port(), free_port()
        log = tmp_path / f"{n}.log"
        with open(log, "wb") as f:
            p = subprocess.Popen([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), "--data-dir", str(tmp_path / "d"),
                                  "--metrics-listen", f"127.0.0.1:{mport}", "--containers", str(EXAMPLE / "sqlite.toml")],
                                 cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=f)
        try:
            wait_port(port, p)
            stop = threading.Event()
            busy = threading.Thread(target=client, args=(port, stop), daemon=True)
            busy.start()
            idle = socket.create_connection(("127.0.0.1", port))
            time.sleep(0.15 + (n % 5) * 0.05)
            # A blocking wait (Popen.wait with a timeout polls, in steps of up to 50 ms), with a
            # watchdog that kills a server that never exits.
            watchdog = threading.Timer(30, p.kill)
            watchdog.start()
            t0 = time.monotonic()
            p.send_signal(signal.SIGTERM)
            rc = p.wait()
            took.append(time.monotonic() - t0)
            watchdog.cancel()
            stop.set()
            busy.join(5)
            idle.close()
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert rc == 0, log.read_text()
        said = re.findall(r"stopped in (.*)", log.read_text())
        lines.append(said[-1] if said else "?")
    ms = sorted(round(t * 1000) for t in took)
    print(f"\n{STOPS} stops, SIGTERM to exit, ms: min {ms[0]}, median {ms[len(ms) // 2]}, "
          f"p90 {ms[len(ms) * 9 // 10]}, max {ms[-1]}: {ms}")
    slowest = max(range(STOPS), key=lambda i: took[i])
    print(f"slowest: {took[slowest] * 1000:.0f} ms, the server said: stopped in {lines[slowest]}")
    slow = [(round(t * 1000), lines[i]) for i, t in enumerate(took) if t >= BOUND]
    assert not slow, f"stops of {BOUND} s or more: {slow}"


@pytest.mark.parametrize("front", ["io_uring", "epoll"])
def test_noreply_writes_sent_just_before_a_stop_are_kept(tmp_path, front):
    """Writes a client sent with noreply right before SIGTERM (the default of pymemcache and
    other clients) reached the server's socket, maybe not yet a worker, maybe not yet an
    accept: the stop reads and answers them, and the restart has them (found 2026-12-07:
    2-6 of 12 stops lost all 100, the connection closed unread)."""
    from pymemcache.client.base import Client
    lost = []
    for trial in range(8):
        port = free_port()
        d = tmp_path / f"d{trial}"
        args = [sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), "--data-dir", str(d),
                "--io-uring", "on" if front == "io_uring" else "off"]
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(port, p)
        c = Client(("127.0.0.1", port))
        for i in range(100):
            c.set(f"user:{i}", f"row {i}".encode(), noreply=True)
        c.close()
        p.send_signal(signal.SIGTERM)
        assert p.wait(30) == 0
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_port(port, p)
            c = Client(("127.0.0.1", port))
            got = sum(c.get(f"user:{i}") == f"row {i}".encode() for i in range(100))
            c.close()
        finally:
            p.send_signal(signal.SIGTERM)
            p.wait(30)
        if got != 100:
            lost.append((trial, 100 - got))
    assert not lost, f"(trial, writes lost): {lost}"

