#!/usr/bin/env python3
"""Memory per idle connection (issue 11 item 6): sqlcached vs memcached 1.6.18 (plain TCP, the
same run), and sqlcached's MySQL proxy (a client connection and its backend connection).

    python3 bench/idle_memory.py                      # 1000 10000 connections, 3 reps
    python3 bench/idle_memory.py --counts "1000 10000 50000" --proxy-counts "1000 5000"  # needs the fds
    python3 bench/idle_memory.py --counts "1000 10000" --reps 1 --no-proxy

Per server and count (sqlcached on io_uring and on epoll, memcached): start it (-t 2, -c above the count), open 50 warm-up connections that
each do one `version`, note VmRSS, open N more that each do one `version` and stay open
(clients bind 127.0.0.1..127.0.0.K so more than one source port range is available), wait
1 s, note VmRSS again: (after - before) / N is the KiB per idle connection. Then one of the
connections sends a 1 MiB value and gets it back, all go idle again, and the RSS after that
is reported too (buffers must shrink back). The proxy: sqlcached --mysql-listen in front of a
throw-away MariaDB (tests/harness), N PyMySQL-free raw logins (handshake + COM_PING) kept open;
MariaDB's own memory is not counted. Ratios are per connection, min-max over --reps.
The servers and this script need RLIMIT_NOFILE above the count (a container with a hard
limit of 20,000 cannot measure 50,000: the script says so). Needs memcached, mariadbd (proxy part), a built sqlcached
(SQLCACHED_BIN or target/release/sqlcached). Loopback only.
"""
import argparse
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness.servers import free_port  # noqa: E402

SQLCACHED = os.environ.get("SQLCACHED_BIN", str(ROOT / "target/release/sqlcached"))
PER_SOURCE = 25_000  # connections per source address (ephemeral ports: 32768-60999)


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def wait_port(port, proc, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"port {port} not open")


def connect(port, i):
    s = socket.socket()
    # IP_BIND_ADDRESS_NO_PORT: the port is picked at connect (per destination), so the
    # TIME_WAIT ports of an earlier run do not run the range out.
    s.setsockopt(socket.IPPROTO_IP, 24, 1)
    s.bind((f"127.0.0.{1 + i // PER_SOURCE}", 0))
    s.connect(("127.0.0.1", port))
    return s


def memcache_conn(port, i):
    s = connect(port, i)
    s.sendall(b"version\r\n")
    if not s.recv(100).startswith(b"VERSION"):
        raise RuntimeError("no VERSION")
    return s


def big_roundtrip(s):
    """A 1 MiB set and get on one connection (its buffers grow, then must shrink back)."""
    v = b"x" * (1 << 20)
    s.sendall(b"set big 0 0 %d\r\n" % len(v) + v + b"\r\n")
    buf = b""
    while not buf.endswith(b"STORED\r\n"):
        buf += s.recv(100)
    s.sendall(b"get big\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        buf += s.recv(1 << 20)


def measure(argv, port, n, opener, big=True):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, p)
        warm = [opener(port, i) for i in range(50)]
        time.sleep(0.5)
        before = rss_kib(p.pid)
        socks = [opener(port, 50 + i) for i in range(n)]
        time.sleep(1.0)
        after = rss_kib(p.pid)
        after_big = None
        if big:
            big_roundtrip(socks[0])
            time.sleep(0.5)
            after_big = rss_kib(p.pid)
        for s in socks + warm:
            s.close()
        return (after - before) / n, after_big and (after_big - before) / n
    finally:
        p.terminate()
        p.wait()


def mysql_login(port, i):
    """A raw MySQL login through the proxy (mysql_native_password), then COM_PING; the socket
    stays open."""
    import hashlib

    s = connect(port, i)

    def packet():
        h = b""
        while len(h) < 4:
            h += s.recv(4 - len(h))
        n = int.from_bytes(h[:3], "little")
        body = b""
        while len(body) < n:
            body += s.recv(n - len(body))
        return h[3], body

    _, greet = packet()
    if greet[:1] == b"\xff":
        raise RuntimeError(f"refused at connect: {greet[9:].decode(errors='replace')}")
    # protocol 10: version NUL, thread id 4, salt1 8, filler, caps 2, charset, status 2, caps 2, len, 10 reserved, salt2
    v_end = greet.index(b"\0", 1)
    o = v_end + 1 + 4
    salt = greet[o:o + 8]
    o += 8 + 1 + 2 + 1 + 2 + 2
    o += 1 + 10
    salt += greet[o:o + 12]
    pw = b"sqlcached-test"
    h1 = hashlib.sha1(pw).digest()
    token = bytes(a ^ b for a, b in zip(h1, hashlib.sha1(salt + hashlib.sha1(h1).digest()).digest()))
    caps = 0x00000200 | 0x00008000 | 0x00080000 | 0x00000001  # PROTOCOL_41, SECURE_CONN, PLUGIN_AUTH, LONG_PASSWORD
    body = (caps.to_bytes(4, "little") + (1 << 24).to_bytes(4, "little") + bytes([45]) + b"\0" * 23
            + b"sqlcached\0" + bytes([len(token)]) + token + b"mysql_native_password\0")
    s.sendall(len(body).to_bytes(3, "little") + b"\x01" + body)
    _, ok = packet()
    if ok[:1] != b"\0":
        raise RuntimeError(f"login refused: {ok!r}")
    s.sendall(b"\x01\0\0\0\x0e")
    _, ok = packet()
    if ok[:1] != b"\0":
        raise RuntimeError(f"ping: {ok!r}")
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--counts", default="1000 10000")
    ap.add_argument("--proxy-counts", default="1000 2000", help="the proxy holds 2 descriptors per client")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-proxy", action="store_true")
    opt = ap.parse_args()
    counts = [int(c) for c in opt.counts.split()]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    pcounts = [int(c) for c in opt.proxy_counts.split()]
    want = max(2 * max(counts), 0 if opt.no_proxy else 3 * max(pcounts)) + 2000
    limit = want if hard == resource.RLIM_INFINITY else min(want, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, max(limit, hard) if hard != resource.RLIM_INFINITY else hard))
    except ValueError:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
        limit = min(want, hard)
    if max(counts) + 600 > limit:
        sys.exit(f"RLIMIT_NOFILE hard limit {hard}: at most {limit - 600} connections here (--counts)")
    print("| server | idle connections | KiB per connection (min-max) | after one 1 MiB round trip |")
    print("|---|---|---|---|")
    for n in counts:
        servers = (("sqlcached-uring", SQLCACHED, ["--io-uring", "on"]),
                   ("sqlcached-epoll", SQLCACHED, ["--io-uring", "off"]),
                   ("memcached", "/usr/bin/memcached", ["-u", "root"]))
        for name, binary, extra in servers:
            got = []
            for _ in range(opt.reps):
                port = free_port()
                argv = [binary, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-c", str(n + 500), "-t", "2",
                        "-m", "64", "-I", "2m", *extra]
                got.append(measure(argv, port, n, memcache_conn))
            idle = [g[0] for g in got]
            big = [g[1] for g in got]
            print(f"| {name} | {n} | {min(idle):.2f}-{max(idle):.2f} | {min(big):.2f}-{max(big):.2f} |", flush=True)
    if opt.no_proxy:
        return
    from harness.mariadb import start_mariadb

    with start_mariadb() as db:
        db.sql(f"SET GLOBAL max_connections = {max(pcounts) + 500};")
        for n in pcounts:
            got = []
            for _ in range(opt.reps):
                port, mport = free_port(), free_port()
                argv = [SQLCACHED, "-p", str(port), "-U", "0", "-l", "127.0.0.1", "-c", str(n + 500), "-t", "2",
                        "--mysql-listen", f"127.0.0.1:{mport}", "--mysql-backend", f"{db.host}:{db.port}",
                        "--query-cache-type", "OFF"]
                try:
                    got.append(measure(argv, mport, n, mysql_login, big=False)[0])
                except Exception as e:  # noqa: BLE001 - reported
                    print(f"| sqlcached proxy | {n} | failed: {e} | |")
                    break
            if got:
                print(f"| sqlcached proxy (client + backend conn) | {n} | {min(got):.2f}-{max(got):.2f} | |", flush=True)


if __name__ == "__main__":
    main()
