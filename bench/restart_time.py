"""bench/restart_time.py: how long sqlcached --data-dir takes to answer again after a stop.

    python3 bench/restart_time.py [BINARY] [ITEMS] [--data-root DIR]

Writes ITEMS (default 100,000) 200-byte items with pipelined `set ... noreply`, then stops the
server twice with SIGTERM (a clean stop) and once with SIGKILL, restarting it each time, and
prints per stop: how long the stop took, the bytes fjall's journal holds on disk, and the time
from the restart until `get` answers. A benchmark, not a test: asserts nothing. The data dir
lives under --data-root (default /work, not tmpfs) and is removed at the end.
"""
import argparse
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start(binary: str, port: int, data: str):
    """Starts the server; returns (process, ms until `get` answered, connected socket)."""
    p = subprocess.Popen([binary, "-p", str(port), "-l", "127.0.0.1", "-m", "256", "--data-dir", data],
                         stderr=subprocess.DEVNULL)
    t = time.monotonic()
    while True:
        if p.poll() is not None:
            raise RuntimeError(f"server exited with {p.returncode}")
        try:
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"get k0\r\n")
            r = s.recv(1000)
            if r.startswith(b"VALUE") or r == b"END\r\n":
                return p, (time.monotonic() - t) * 1000, s
            s.close()
        except OSError:
            time.sleep(0.002)


def journal_bytes(data: str) -> int:
    """Bytes fjall's journal files really hold (they are preallocated sparse files)."""
    db = Path(data) / "db"
    return sum(f.stat().st_blocks * 512 for f in db.glob("*.jnl"))


def main() -> None:
    """Fills, stops and restarts the server, printing one line per stop."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", nargs="?", default=str(ROOT / "target" / "release" / "sqlcached"))
    ap.add_argument("items", nargs="?", type=int, default=100_000)
    ap.add_argument("--data-root", default="/work" if os.path.isdir("/work") else None)
    a = ap.parse_args()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = tempfile.mkdtemp(prefix="restart-time-", dir=a.data_root)
    p = None
    try:
        p, _ms, s = start(a.binary, port, data)
        v = b"x" * 200
        for i in range(0, a.items, 5000):
            s.sendall(b"".join(b"set k%d 0 0 200 noreply\r\n%s\r\n" % (j, v) for j in range(i, min(a.items, i + 5000))))
        s.sendall(b"mn\r\n")
        r = b""
        while b"MN" not in r:
            r += s.recv(100)
        time.sleep(1)
        for kind in ("SIGTERM", "SIGTERM", "SIGKILL"):
            t = time.monotonic()
            p.terminate() if kind == "SIGTERM" else p.kill()
            p.wait()
            stop_ms = (time.monotonic() - t) * 1000
            jn = journal_bytes(data)
            p, ms, s = start(a.binary, port, data)
            print(f"{kind}: stop {stop_ms:.0f} ms, journal {jn >> 20} MiB, restart to ready {ms:.0f} ms "
                  f"({a.items:,} items of 200 bytes)")
    finally:
        if p and p.poll() is None:
            p.terminate()
            p.wait()
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
