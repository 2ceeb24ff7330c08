"""Fail-safe behaviour: the binlog stream breaking (its connection killed on MariaDB), MariaDB
restarting, and MariaDB being down (issue 5, items 3 and 5). Results through the proxy stay
fresh, clients get MySQL errors instead of hangs, and the proxy recovers by itself."""
import time

import pymysql
import pytest

from harness.mysqlproxy import connect
from qchelpers import q, until_hit, wait_for


def follower_ids(db):
    """MariaDB connection ids of binlog dump threads (the proxy's follower)."""
    out = db.sql("SELECT id FROM information_schema.processlist WHERE command LIKE 'Binlog Dump%'")
    return [int(x) for x in out.split()]


def wait_stat(px, name, pred, timeout=20.0):
    got, _ = wait_for(lambda: pred(px.stats().get(name)), timeout=timeout, interval=0.05)
    return got


def test_binlog_connection_killed(proxy, mariadb):
    c = proxy.connect("qc")
    try:
        read = "SELECT v FROM qc.t WHERE id = 60"
        ids = follower_ids(mariadb)
        assert ids, "no binlog dump connection on MariaDB while binlog_connected is 1"
        for round_ in range(3):
            until_hit(proxy, c, read)
            reconnects = proxy.stats().get("binlog_reconnects", 0)
            # kill the stream and write behind the proxy's back while it is down
            mariadb.sql("".join(f"KILL {i};" for i in follower_ids(mariadb)) + f"UPDATE qc.t SET v = 'k{round_}' WHERE id = 60;")
            assert wait_stat(proxy, "binlog_reconnects", lambda v: (v or 0) > reconnects), proxy.stats()
            assert wait_stat(proxy, "binlog_connected", lambda v: v == 1), proxy.stats()
            got, waited = wait_for(lambda: q(c, read) == ((f"k{round_}",),), timeout=5)
            assert got, f"stale result after the binlog stream broke (round {round_}): {q(c, read)}"
        # and the cache works again afterwards
        until_hit(proxy, c, read)
    finally:
        c.close()


def test_binlog_gap_after_purge(proxy, mariadb):
    """The follower's resume position purged while it was away (a binlog gap): it does not
    trust anything cached, starts again at the binlog's end, and serves fresh results."""
    read = "SELECT v FROM qc.t WHERE id = 61"
    c = proxy.connect("qc")
    until_hit(proxy, c, read)
    c.close()
    lock = "ALTER USER 'sqlcached'@'%' ACCOUNT {0}; ALTER USER 'sqlcached'@'localhost' ACCOUNT {0};"
    mariadb.sql(lock.format("LOCK") + "".join(f"KILL {i};" for i in follower_ids(mariadb)))
    try:
        assert wait_stat(proxy, "binlog_connected", lambda v: v == 0), proxy.stats()
        # Changes the proxy cannot see, then the binlog files holding them are gone.
        mariadb.sql("UPDATE qc.t SET v = 'after gap' WHERE id = 61; FLUSH BINARY LOGS; FLUSH BINARY LOGS;")
        current = mariadb.sql("SHOW MASTER STATUS").split()[0]
        # MariaDB keeps a file until InnoDB has checkpointed its transactions: purge until it goes.
        purged, _ = wait_for(lambda: mariadb.sql(f"PURGE BINARY LOGS TO '{current}'; SHOW BINARY LOGS").split()[0]
                             == current, timeout=15, interval=0.3)
        assert purged, mariadb.sql("SHOW BINARY LOGS")
    finally:
        mariadb.sql(lock.format("UNLOCK"))
    assert wait_stat(proxy, "binlog_connected", lambda v: v == 1), proxy.stats()
    got, _ = wait_for(lambda: "binlog gap" in proxy.run_log(), timeout=10)
    assert got, "the purged position was not reported as a binlog gap"
    c = proxy.connect("qc")
    try:
        assert q(c, read) == (("after gap",),)
        until_hit(proxy, c, read)
    finally:
        c.close()


def test_mariadb_restart(proxy, mariadb):
    read = "SELECT v FROM qc.t WHERE id = 61"
    c = proxy.connect("qc")
    until_hit(proxy, c, read)
    mariadb.restart()
    # the old client connection lost its backend: a MySQL error, not a hang
    t0 = time.monotonic()
    with pytest.raises(pymysql.err.MySQLError):
        q(c, read)
    assert time.monotonic() - t0 < 30
    c.close()
    mariadb.sql("UPDATE qc.t SET v = 'after restart' WHERE id = 61")
    c = proxy.connect("qc")
    try:
        got, _ = wait_for(lambda: q(c, read) == (("after restart",),), timeout=10)
        assert got, f"stale after restart: {q(c, read)}"
        assert wait_stat(proxy, "binlog_connected", lambda v: v == 1)
        until_hit(proxy, c, read)
        assert q(c, read) == (("after restart",),)
    finally:
        c.close()


def test_backend_down_gives_mysql_errors_then_recovers(proxy, mariadb):
    read = "SELECT v FROM qc.t WHERE id = 62"
    c = proxy.connect("qc")
    until_hit(proxy, c, read)
    errors_before = proxy.stats().get("mysql_backend_errors", 0)
    mariadb.stop()
    try:
        # an open connection: the cached statement is not served (the cache is offline without
        # the binlog) and the client gets an error quickly
        t0 = time.monotonic()
        with pytest.raises(pymysql.err.MySQLError) as e:
            q(c, read)
        print(f"open connection, backend down: {e.value.args} after {time.monotonic() - t0:.2f} s")
        assert time.monotonic() - t0 < 30
        c.close()
        # a new connection: the proxy answers with a MySQL ERR packet (not a silent close, not a hang)
        t0 = time.monotonic()
        with pytest.raises(pymysql.err.MySQLError) as e:
            proxy.connect("qc")
        took = time.monotonic() - t0
        print(f"new connection, backend down: {e.value.args} after {took:.2f} s")
        assert took < 30
        assert e.value.args[0] not in (2013,), f"connection closed without a MySQL error packet: {e.value.args}"
        assert proxy.proc.poll() is None, "sqlcached exited when the backend went away"
        assert proxy.stats().get("mysql_backend_errors", 0) > errors_before
    finally:
        mariadb.start()
    mariadb.sql("UPDATE qc.t SET v = 'after outage' WHERE id = 62")
    assert q(connect(mariadb.port, "qc"), read) == (("after outage",),)
    c = proxy.connect("qc")
    try:
        got, _ = wait_for(lambda: q(c, read) == (("after outage",),), timeout=10)
        assert got, f"stale after the outage: {q(c, read)}"
        assert wait_stat(proxy, "binlog_connected", lambda v: v == 1)
        proxy.wait_online()  # the cache serves again only once the follower has caught up
        until_hit(proxy, c, read)
    finally:
        c.close()


def test_client_backend_connection_killed(proxy, mariadb):
    c = proxy.connect("qc")
    try:
        cid = q(c, "SELECT CONNECTION_ID()")[0][0]
        mariadb.sql(f"KILL {cid}")
        with pytest.raises(pymysql.err.MySQLError):
            q(c, "SELECT v FROM qc.t WHERE id = 63")
    finally:
        c.close()
    c = proxy.connect("qc")
    try:
        assert q(c, "SELECT v FROM qc.t WHERE id = 63") == (("v63",),)
    finally:
        c.close()


def test_backend_name_not_resolved():
    """A backend host that does not resolve: the proxy starts, says so, and each client gets
    ERROR 1429 naming the lookup failure at once (no hang, no silent close)."""
    from harness.servers import free_port, start_sqlcached
    port = free_port()
    s = start_sqlcached("--mysql-listen", f"127.0.0.1:{port}", "--mysql-backend", "no-such-host.invalid:3306")
    try:
        for _ in range(3):
            t0 = time.monotonic()
            with pytest.raises(pymysql.err.OperationalError) as e:
                pymysql.connect(host="127.0.0.1", port=port, user="u", password="p", connect_timeout=10)
            assert time.monotonic() - t0 < 5
            assert e.value.args[0] == 1429 and "no-such-host.invalid" in e.value.args[1], e.value.args
        assert s.proc.poll() is None
    finally:
        s.stop()
