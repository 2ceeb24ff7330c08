"""A hung backend, for real (issue 14): MariaDB stopped with SIGSTOP under the proxy.

New clients get a MySQL error within seconds instead of hanging with the proxy (the kernel still
accepts TCP connections for the stopped server, which then never greets); results already cached
are still served (a stopped server cannot change them); the proxy stays up and bounded; after
SIGCONT everything works again and the cache comes back online."""
import os
import signal
import time

import pymysql
import pytest

from harness.servers import freeze, rss_mib
from qchelpers import q, until_hit


def test_stopped_backend_gives_errors_and_recovers(proxy, mariadb):
    sql = "SELECT v FROM qc.t WHERE id = 9"
    warm = proxy.connect("qc")
    until_hit(proxy, warm, sql)
    pid = int((mariadb.base / "mysqld.pid").read_text())
    rss0 = rss_mib(proxy.proc.pid)
    try:
        freeze(pid)
        # A cached result is still served on an open connection.
        assert q(warm, sql) == (("v9",),)
        # A new client is told, within the proxy's 5 s greeting timeout.
        t0 = time.monotonic()
        with pytest.raises(pymysql.err.OperationalError) as e:
            proxy.connect("qc")
        took = time.monotonic() - t0
        assert took < 10, f"took {took:.1f} s"
        assert "Can't connect to MySQL backend" in str(e.value) and "greeting" in str(e.value), e.value
        # Several at once: each gets its error, the proxy stays up and bounded.
        for _ in range(5):
            with pytest.raises(pymysql.err.OperationalError):
                proxy.connect("qc")
        assert proxy.proc.poll() is None
        assert rss_mib(proxy.proc.pid) < rss0 + 32
    finally:
        os.kill(pid, signal.SIGCONT)
    # Back: new connections work, writes invalidate, the cache is online again.
    c = proxy.connect("qc")
    q(c, "UPDATE qc.t SET v = 'v9-after' WHERE id = 9")
    assert q(c, sql) == (("v9-after",),)
    q(c, "UPDATE qc.t SET v = 'v9' WHERE id = 9")
    proxy.wait_online(timeout=60)
    until_hit(proxy, c, sql)
    c.close()
    warm.close()
