#!/usr/bin/env python3
"""Memory per idle TLS connection, sqlcached -Z vs memcached -Z, same certificates.

    python3 bench/tls_idle_memory.py [N]        # N idle connections each (default 3000)

Each server gets 50 warm-up TLS connections, then N more that each did one `version` and
stay open; the result is the RSS growth divided by N (KiB per connection). Certificates
are made with openssl in a temp directory (tests/harness/certs.py). Loopback only."""
import resource
import socket
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness.certs import make_certs  # noqa: E402
from harness.servers import free_port  # noqa: E402


def rss_kib(pid: int) -> int:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def measure(argv, port, n, ctx):
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.6)

        def one():
            s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="localhost")
            s.sendall(b"version\r\n")
            s.recv(100)
            return s

        warm = [one() for _ in range(50)]
        time.sleep(0.5)
        before = rss_kib(p.pid)
        socks = [one() for _ in range(n)]
        time.sleep(1.0)
        after = rss_kib(p.pid)
        for s in socks + warm:
            s.close()
        return (after - before) / n
    finally:
        p.terminate()
        p.wait()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 1000, n + 1000))
    certs = make_certs(Path(tempfile.mkdtemp(prefix="tls-idle-")))
    ctx = ssl.create_default_context(cafile=certs["ca"])
    opts = f"ssl_chain_cert={certs['server_crt']},ssl_key={certs['server_key']}"
    common = ["-Z", "-o", opts, "-U", "0", "-l", "127.0.0.1", "-c", str(n + 500), "-t", "2"]
    for name, binary, extra in (("sqlcached", str(ROOT / "target/release/sqlcached"), []),
                                ("memcached", "/usr/bin/memcached", ["-u", "root"])):
        port = free_port()
        kib = measure([binary, "-p", str(port), *common, *extra], port, n, ctx)
        print(f"{name}: {n} idle TLS connections, +{kib:.2f} KiB each")


if __name__ == "__main__":
    main()
