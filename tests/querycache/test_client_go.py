"""The unchanged Go driver github.com/go-sql-driver/mysql through the proxy: `go test` in
tests/clients/mysql/go (server-side prepared statements with interpolateParams=false, a
transaction, errors, multi-statements, a > 16 MiB row, a wrong password, the pool after the
backend's wait_timeout), every result
compared with MariaDB's direct answer. Modules come from the Go module cache
(.ci/deps-clients.sh fetches them)."""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parents[1] / "clients" / "mysql" / "go"

# passthrough only: no need to wait for the binlog follower
PROXY_ONLINE = False


def test_go_sql_driver(tls_proxy, mariadb, certs):
    """The plain tests and TestTLSCustom share one proxy that offers TLS."""
    proxy = tls_proxy
    go = shutil.which("go") or next((g for g in ("/usr/local/go/bin/go",) if os.access(g, os.X_OK)), None)
    if go is None:
        pytest.skip("Go toolchain (go) is not installed: run .ci/deps-clients.sh")
    env = dict(os.environ, PROXY_ADDR=proxy.mysql_addr, DIRECT_ADDR=f"127.0.0.1:{mariadb.port}",
               MYSQL_USER=mariadb.user, MYSQL_PASSWORD=mariadb.password, MYSQL_DB="qc",
               TLS_CA=certs["ca"])
    cmd = [go, "test", "-count=1", "-timeout=300s", "-v", "./..."]
    p = subprocess.run(cmd, cwd=MODULE, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    if p.returncode != 0:
        failed = "\n".join("  " + ln.strip() for ln in p.stdout.splitlines() if ln.lstrip().startswith("--- FAIL"))
        pytest.fail(f"{' '.join(cmd)} in {MODULE} exited {p.returncode}\nfailing:\n{failed}\n"
                    f"--- output ---\n{p.stdout[-20000:]}", pytrace=False)
    assert "--- PASS: TestTLSCustom" in p.stdout, "TestTLSCustom did not run:\n" + p.stdout[-5000:]
