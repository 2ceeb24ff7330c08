"""The proxy's account check (issue 42, item 2): a wrong password or missing replication
rights used to look like success (`ready`, a pass-through that never caches, one warning among
others; `--check-config` only opened TCP). Now, at start, the proxy logs in as --mysql-user and
checks the login, REPLICATION SLAVE, BINLOG MONITOR, log_bin, binlog_format, binlog_row_image and
what information_schema shows (crates/binlog/src/account.rs): a failure says DEGRADED in one line
at the default level with the fix, in `stats`, /stats.json (the status page) and /metrics; the
proxy keeps relaying every query; it recovers by itself once the account is fixed (checked every
10 s). --check-config does the same real login and exits 78 on a failure."""
import json
import subprocess
import time
import urllib.request

from harness.mysqlproxy import Proxy
from harness.servers import free_port, sqlcached_argv
from qchelpers import q, until_hit


def start(db, user, password, log, *extra):
    """A proxy (with --metrics-listen) logging in as `user`; not waiting for the binlog."""
    mysql_port, port, metrics = free_port(), free_port(), free_port()
    argv = sqlcached_argv(port, "--mysql-listen", f"127.0.0.1:{mysql_port}", "--mysql-backend",
                          f"{db.host}:{db.port}", "--mysql-user", user, "--mysql-server-id", str(free_port() + 70000),
                          "--metrics-listen", f"127.0.0.1:{metrics}", *extra)
    px = Proxy(argv, port, mysql_port, db, {"SQLCACHED_MYSQL_PASSWORD": password}, log=log)
    px.metrics = metrics
    return px


def page(px, path):
    return urllib.request.urlopen(f"http://127.0.0.1:{px.metrics}{path}", timeout=5).read().decode()


def wait_until(fn, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    return fn()


def test_wrong_password_is_degraded_said_and_shown(mariadb, tmp_path):
    log = tmp_path / "log"
    px = start(mariadb, mariadb.user, "not-the-password", str(log))
    try:
        text = px.run_log()
        line = [x for x in text.splitlines() if "DEGRADED" in x]
        assert line and "cannot log in" in line[0] and "SQLCACHED_MYSQL_PASSWORD" in line[0], text
        # Said before the server says it is ready.
        assert text.index("DEGRADED") < text.index("ready"), text
        s = px.stats()
        assert s["mysql_proxy_degraded"] == 1 and s["mysql_proxy_degraded_reason"] == "login", s
        assert "Access denied" in s["mysql_proxy_degraded_message"]
        assert json.loads(page(px, "/stats.json"))["mysql_proxy_degraded"] == 1
        assert 'id="qc-degraded"' in page(px, "/")
        body = page(px, "/metrics")
        assert "sqlcached_mysql_proxy_degraded 1" in body
        assert 'sqlcached_mysql_proxy_degraded_reason{reason="login"} 1' in body, body[-2000:]
        # Still a working pass-through: clients log in with their own accounts.
        c = px.connect("qc")
        assert q(c, "SELECT v FROM qc.t WHERE id = 2") == (("v2",),)
        c.close()
        assert s["Qcache_online"] == 0
    finally:
        px.stop()


def test_missing_rights_said_with_the_grant_then_recovers(mariadb, tmp_path):
    """An account without REPLICATION SLAVE and BINLOG MONITOR: both said with the GRANT to run;
    once granted on MariaDB, the proxy passes the next check and caches, no restart."""
    mariadb.sql("CREATE USER IF NOT EXISTS 'lim'@'%' IDENTIFIED BY 'lim-pw'; GRANT SELECT, TRIGGER ON qc.* TO 'lim'@'%';")
    log = tmp_path / "log"
    px = start(mariadb, "lim", "lim-pw", str(log))
    try:
        s = px.stats()
        assert s["mysql_proxy_degraded"] == 1, s
        assert set(s["mysql_proxy_degraded_reason"].split(",")) == {"binlog_monitor", "replication_slave"}, s
        msg = s["mysql_proxy_degraded_message"]
        assert "GRANT REPLICATION SLAVE ON *.* TO 'lim'@'%'" in msg and "GRANT BINLOG MONITOR ON *.* TO 'lim'@'%'" in msg
        assert "DEGRADED" in px.run_log()
        mariadb.sql("GRANT REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'lim'@'%';")
        assert wait_until(lambda: px.stats()["mysql_proxy_degraded"] == 0, 25), px.stats()
        assert "no longer degraded" in px.run_log()
        px.wait_online(timeout=20)
        c = px.connect("qc")
        until_hit(px, c, "SELECT v FROM qc.t WHERE id = 3")
        c.close()
    finally:
        px.stop()
        mariadb.sql("DROP USER IF EXISTS 'lim'@'%';")


def check_config(db, user, password, *extra):
    argv = sqlcached_argv(free_port(), "--mysql-listen", f"127.0.0.1:{free_port()}", "--mysql-backend",
                          f"{db.host}:{db.port}", "--mysql-user", user, *extra, "--check-config")
    p = subprocess.run(argv, env={"SQLCACHED_MYSQL_PASSWORD": password}, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout


def test_check_config_logs_in_for_real(mariadb):
    code, out = check_config(mariadb, mariadb.user, mariadb.password)
    assert code == 0, out
    assert "ok:   --mysql-listen: the account logs in" in out and "can be followed" in out, out
    assert "accepts connections" not in out
    code, out = check_config(mariadb, mariadb.user, "wrong")
    assert code == 78 and "FAIL: --mysql-listen: --mysql-user sqlcached cannot log in" in out, out
    mariadb.sql("CREATE USER IF NOT EXISTS 'lim2'@'%' IDENTIFIED BY 'pw'; GRANT SELECT ON qc.* TO 'lim2'@'%';")
    try:
        code, out = check_config(mariadb, "lim2", "pw")
        fails = [x for x in out.splitlines() if x.startswith("FAIL:")]
        assert code == 78 and len(fails) == 2, out
        assert any("GRANT REPLICATION SLAVE ON *.* TO 'lim2'@'%'" in f for f in fails), out
        assert any("GRANT BINLOG MONITOR ON *.* TO 'lim2'@'%'" in f for f in fails), out
        assert any(x.startswith("warn:") and "TRIGGER" in x for x in out.splitlines()), out
    finally:
        mariadb.sql("DROP USER IF EXISTS 'lim2'@'%';")
    # A binlog in statement format works, coarser: a warning with the fix, not a failure.
    mariadb.sql("SET GLOBAL binlog_format = 'STATEMENT';")
    try:
        code, out = check_config(mariadb, mariadb.user, mariadb.password)
        assert code == 0 and "warn: --mysql-listen: binlog_format is STATEMENT" in out, out
        assert "SET GLOBAL binlog_format = 'ROW'" in out
    finally:
        mariadb.sql("SET GLOBAL binlog_format = 'ROW';")
    # Nothing answers: a failure too.
    argv = sqlcached_argv(free_port(), "--mysql-listen", f"127.0.0.1:{free_port()}", "--mysql-backend",
                          f"127.0.0.1:{free_port()}", "--mysql-user", "x", "--check-config")
    p = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert p.returncode == 78 and "does not answer" in p.stdout, p.stdout
