#!/usr/bin/env python3
"""Reproduces a known bug (2026-12-07, not fixed yet): with --durability async (the default),
writes acknowledged a few ms before a clean SIGTERM are sometimes missing after the restart.
Each trial: a fresh --data-dir, 100 sets, SIGTERM, restart, count what reads back.

    python3 bench/stop_loss_repro.py [TRIALS] [-- extra sqlcached flags, e.g. --durability sync]
Env: SQLCACHED_BIN (target/release/sqlcached), SLEEP (s between the last set and the SIGTERM; 0).
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pymemcache.client.base import Client

BIN = os.environ.get("SQLCACHED_BIN", str(Path(__file__).resolve().parents[1] / "target/release/sqlcached"))
PORT = 39911


def start(d, extra):
    p = subprocess.Popen([BIN, "-l", "127.0.0.1", "-p", str(PORT), "--data-dir", d, *extra],
                         stderr=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", PORT)).close()
            return p
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("did not start")


def main():
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else []
    trials = int(args[0]) if args and args[0] != "--" else 5
    whole = 0
    for t in range(trials):
        with tempfile.TemporaryDirectory() as tmp:
            d = os.path.join(tmp, "data")
            p = start(d, extra)
            c = Client(("127.0.0.1", PORT))
            for i in range(100):
                c.set(f"user:{i}", f"row {i}".encode())
            c.close()
            time.sleep(float(os.environ.get("SLEEP", "0")))
            p.send_signal(signal.SIGTERM)
            p.wait()
            p = start(d, extra)
            c = Client(("127.0.0.1", PORT))
            got = sum(1 for i in range(100) if c.get(f"user:{i}") == f"row {i}".encode())
            c.close()
            p.send_signal(signal.SIGTERM)
            p.wait()
            print(f"trial {t}: {got} of 100 read back")
            whole += got == 100
    print(f"{whole} of {trials} trials kept every acknowledged write")


if __name__ == "__main__":
    main()
