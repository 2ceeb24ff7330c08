"""A hung backend, for real (issue 14): MariaDB stopped with SIGSTOP under the proxy.

New clients get a MySQL error once --mysql-backend-connect-timeout has passed instead of hanging
with the proxy (the kernel still accepts TCP connections for the stopped server, which then never
greets); results already cached are still served (a stopped server cannot change them); the proxy
stays up and bounded; after SIGCONT everything works again and the cache comes back online.

A server that greets late but within the timeout (issue 42: a burst of connections past MariaDB's
listen backlog, greeted seconds late) is waited for, as a client connected straight to it would:
the default timeout (10 s) is at least MariaDB's own connect_timeout."""
import os
import signal
import threading
import time

import pymysql
import pytest

from harness.mysqlproxy import start_proxy
from harness.servers import freeze, rss_mib
from qchelpers import q, until_hit


@pytest.fixture(scope="module")
def quick_proxy(mariadb, tmp_path_factory):
    """A proxy that gives up on a silent backend after 2 s (--mysql-backend-connect-timeout)."""
    log = tmp_path_factory.mktemp("quick") / "sqlcached.log"
    with start_proxy(mariadb, "-t", "2", "--mysql-backend-connect-timeout", "2", log=log) as px:
        yield px


def test_stopped_backend_gives_errors_and_recovers(quick_proxy, mariadb):
    proxy = quick_proxy
    sql = "SELECT v FROM qc.t WHERE id = 9"
    warm = proxy.connect("qc")
    until_hit(proxy, warm, sql)
    pid = int((mariadb.base / "mysqld.pid").read_text())
    rss0 = rss_mib(proxy.proc.pid)
    try:
        freeze(pid)
        # A cached result is still served on an open connection.
        assert q(warm, sql) == (("v9",),)
        # A new client is told, once the 2 s backend connect timeout has passed.
        t0 = time.monotonic()
        with pytest.raises(pymysql.err.OperationalError) as e:
            proxy.connect("qc")
        took = time.monotonic() - t0
        assert 1.5 < took < 8, f"took {took:.1f} s"
        assert "Can't connect to MySQL backend" in str(e.value) and "no greeting within 2 s" in str(e.value), e.value
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


def test_a_backend_that_greets_late_is_waited_for(proxy, mariadb):
    """SIGSTOP on mariadbd for 7 s: a client connecting through the proxy (default timeouts)
    meanwhile waits, and logs in and queries once the server is continued, as it would
    connected straight to MariaDB (the proxy used to give up after a hard-coded 5 s)."""
    pid = int((mariadb.base / "mysqld.pid").read_text())
    out = {}

    def client():
        t0 = time.monotonic()
        try:
            c = pymysql.connect(host="127.0.0.1", port=proxy.mysql_port, user=mariadb.user,
                                password=mariadb.password, database="qc", connect_timeout=30, read_timeout=30)
            out["rows"] = q(c, "SELECT v FROM qc.t WHERE id = 3")
            c.close()
        except Exception as e:  # noqa: BLE001 - reported below
            out["error"] = e
        out["took"] = time.monotonic() - t0

    freeze(pid)
    try:
        t = threading.Thread(target=client)
        t.start()
        time.sleep(7)
        assert t.is_alive(), f"the client did not wait for the stopped server: {out}"
    finally:
        os.kill(pid, signal.SIGCONT)
    t.join(30)
    assert "error" not in out, out
    assert out["rows"] == (("v3",),) and out["took"] >= 6.5, out
