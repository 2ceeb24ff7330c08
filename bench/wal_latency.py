#!/usr/bin/env python3
"""WAL-to-invalidation latency of --invalidate=postgres:... rules (issue 40 item 6): a writer
commits UPDATEs straight on PostgreSQL at RATE/s (spread over many rows), and a prober caches
a key, commits an UPDATE of its row on its own connection, and polls sqlcached until the key is
gone: commit acknowledged -> key gone, p50 / p99 / max, over DURATION seconds. A benchmark, not
a test; it starts its own PostgreSQL 15 (scripts/postgres.sh) and sqlcached.

    python3 bench/wal_latency.py [--rate 1000] [--duration 20] [--bin target/release/sqlcached]
"""
import argparse
import os
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import psycopg  # noqa: E402

from harness.postgres import start_postgres  # noqa: E402
from harness.servers import start_sqlcached  # noqa: E402


def mc(port, line, data=None):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(line.encode() + b"\r\n" + ((data + b"\r\n") if data is not None else b""))
        buf = b""
        while not buf.endswith((b"END\r\n", b"STORED\r\n")):
            buf += s.recv(65536)
        return buf


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--duration", type=float, default=20)
    ap.add_argument("--bin", default=str(ROOT / "target/release/sqlcached"))
    a = ap.parse_args()
    os.environ["SQLCACHED_BIN"] = a.bin
    with start_postgres() as pg:
        pg.sql("CREATE TABLE users (id int PRIMARY KEY, v int NOT NULL);"
               "INSERT INTO users SELECT g, 0 FROM generate_series(1, 100000) g;")
        args = ["--pg-backend", f"{pg.host}:{pg.port}", "--pg-user", pg.user, "--pg-backend-sslmode", "disable",
                "--invalidate", "postgres:public.users=user:{id}", "--invalidate-hold-ms", "0"]
        srv = start_sqlcached(*args, env={"SQLCACHED_PG_PASSWORD": pg.password})
        try:
            dsn = pg.url("postgres", sslmode="disable")
            stop = threading.Event()
            written = [0]

            def writer():
                c = psycopg.connect(dsn, autocommit=True)
                i, t0 = 0, time.monotonic()
                while not stop.is_set():
                    c.execute("UPDATE users SET v = v + 1 WHERE id = %s", (1000 + i % 90000,))
                    i += 1
                    ahead = t0 + i / a.rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
                written[0] = i
                c.close()

            deadline = time.monotonic() + 20
            while True:
                s = mc(srv.port, "stats").decode()
                if "STAT wal_connected 1" in s:
                    break
                assert time.monotonic() < deadline, "the WAL never flowed"
                time.sleep(0.05)
            w = threading.Thread(target=writer)
            w.start()
            probe = psycopg.connect(dsn, autocommit=True)
            delays, missed, k = [], 0, 0
            t_end = time.monotonic() + a.duration
            while time.monotonic() < t_end:
                k += 1
                row = 1 + k % 900
                key = f"user:{row}"
                mc(srv.port, f"set {key} 0 0 1", b"v")
                probe.execute("UPDATE users SET v = v + 1 WHERE id = %s", (row,))
                t0 = time.monotonic()
                while mc(srv.port, f"get {key}") != b"END\r\n":
                    if time.monotonic() - t0 > 2:
                        missed += 1
                        break
                    time.sleep(0.0002)
                else:
                    delays.append((time.monotonic() - t0) * 1000)
                time.sleep(0.005)
            stop.set()
            w.join()
            elapsed = a.duration
            q = statistics.quantiles(delays, n=100)
            print(f"writes: {written[0]} in {elapsed:.0f} s ({written[0] / elapsed:.0f}/s, target {a.rate}/s)")
            print(f"probes: {len(delays)} (+{missed} not invalidated within 2 s)")
            print(f"commit -> key gone (ms): p50 {q[49]:.2f}  p99 {q[98]:.2f}  max {max(delays):.2f}")
        finally:
            srv.stop()


if __name__ == "__main__":
    main()
