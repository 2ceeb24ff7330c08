"""The unchanged `mariadb` command-line client (batch mode) through the proxy: every command's
stdout, stderr and exit code equal those of the same command run directly against MariaDB."""
import shutil
import subprocess

import pytest

CLIENT = shutil.which("mariadb") or shutil.which("mysql")
pytestmark = pytest.mark.skipif(CLIENT is None, reason="mariadb client not installed")

# passthrough only: no need to wait for the binlog follower
PROXY_ONLINE = False


def cli(port, sql, *extra, password="sqlcached-test", db="qc"):
    args = [CLIENT, "--no-defaults", "--protocol=tcp", "-h127.0.0.1", f"-P{port}", "-usqlcached",
            f"-p{password}", "--batch", "--connect-timeout=10", *extra, "-e", sql]
    if db:
        args.append(db)
    p = subprocess.run(args, capture_output=True, timeout=120)
    return p.returncode, p.stdout.decode(errors="surrogateescape"), p.stderr.decode(errors="surrogateescape")


def same(proxy, mariadb, sql, *extra, **kw):
    via = cli(proxy.mysql_port, sql, *extra, **kw)
    direct = cli(mariadb.port, sql, *extra, **kw)
    assert via == direct, f"{sql!r}\nproxy:  {via}\ndirect: {direct}"
    return via


STATEMENTS = [
    "SELECT id, v, n, ts FROM t WHERE id BETWEEN 1 AND 5 ORDER BY id",
    "SELECT v FROM t WHERE id = 1",
    "SELECT COUNT(*), SUM(n), MIN(v), MAX(v) FROM t",
    "SELECT DISTINCT n DIV 100 FROM t ORDER BY 1",
    "SHOW TABLES",
    "SHOW CREATE TABLE t",
    "SELECT 1; SELECT v FROM t WHERE id = 2; SELECT 'two', 'results'",
    "SELECT NULL, '', 0x00ff, 'ünï', 1.5e3, CAST('2024-01-02' AS DATE)",
    "SET @a = 3; SELECT v FROM t WHERE id = @a",
    "PREPARE s FROM 'SELECT v FROM t WHERE id = ?'; SET @i = 4; EXECUTE s USING @i; EXECUTE s USING @i; DEALLOCATE PREPARE s",
    "CALL qc.cli_two_results()",
    "SELEC 1",
    "SELECT * FROM no_such_table",
    "SELECT 1; SELEC 2; SELECT 3",
    "SELECT v FROM t WHERE id = 1; SHOW WARNINGS; SELECT CAST('1x' AS SIGNED); SHOW WARNINGS",
]


@pytest.fixture(scope="module", autouse=True)
def procedure(mariadb):
    mariadb.sql("DELIMITER //\nCREATE PROCEDURE qc.cli_two_results() BEGIN SELECT 1 AS a; SELECT v FROM qc.t WHERE id < 3; END//\n")


@pytest.mark.parametrize("sql", STATEMENTS)
def test_same_output(proxy, mariadb, sql):
    for _ in range(2):  # the second run may come from the cache
        same(proxy, mariadb, sql)


def test_writes_and_reads(proxy, mariadb):
    same(proxy, mariadb, "SELECT v FROM t WHERE id = 90")
    rc, out, err = cli(proxy.mysql_port, "UPDATE t SET v = 'cli' WHERE id = 90; SELECT ROW_COUNT()")
    assert (rc, out, err) == (0, "ROW_COUNT()\n1\n", "")
    assert cli(proxy.mysql_port, "SELECT v FROM t WHERE id = 90") == (0, "v\ncli\n", "")
    rc, out, err = cli(proxy.mysql_port, "INSERT INTO t (id, v) VALUES (5000, 'ins'); DELETE FROM t WHERE id = 5000; "
                                         "SELECT COUNT(*) FROM t WHERE id = 5000")
    assert (rc, out) == (0, "COUNT(*)\n0\n"), err


def test_wrong_password(proxy, mariadb):
    rc, out, err = same(proxy, mariadb, "SELECT 1", password="wrong")
    assert rc == 1 and "ERROR 1045 (28000)" in err, err


def test_unknown_database(proxy, mariadb):
    rc, _, err = same(proxy, mariadb, "SELECT 1", db="no_such_db")
    assert rc == 1 and "ERROR 1049" in err, err


def test_compression_requested(proxy, mariadb):
    # --compress: the proxy does not offer CLIENT_COMPRESS, so the client talks uncompressed
    same(proxy, mariadb, "SELECT v FROM t WHERE id = 6", "--compress")


def test_tls_required_fails_cleanly(proxy):
    # the proxy does not offer TLS; a client that insists gets a clean client-side error
    rc, out, err = cli(proxy.mysql_port, "SELECT 1", "--ssl", "--ssl-verify-server-cert")
    assert rc != 0 and "ERROR" in err and "SSL" in err.upper(), (rc, out, err)


def test_big_result(proxy, mariadb):
    # > 16 MiB in one row: split packets through the proxy
    rc, out, err = cli(proxy.mysql_port, "SELECT LENGTH(REPEAT('a', 17000000)) AS l, MD5(REPEAT('a', 17000000)) AS m")
    assert rc == 0, err
    rc2, big, err = cli(proxy.mysql_port, "SELECT REPEAT('ab', 8500000) AS b", "--max-allowed-packet=64M")
    assert rc2 == 0, err
    assert big == "b\n" + "ab" * 8500000 + "\n"
