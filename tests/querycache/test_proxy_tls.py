"""TLS through the MySQL proxy (issue 12 item 4), with real clients, a real MariaDB and
certificates made by `openssl`: the proxy terminates the client's TLS (so it still caches),
encrypts its own link to the backend when asked (verify-ca / verify-full against a CA), and
says clearly when either side cannot have the TLS asked for."""
import os
import shutil
import subprocess
import ssl
from pathlib import Path

import pymysql
import pytest

from harness.certs import proxy_tls_args as tls_args
from harness.mariadb import start_mariadb
from harness.mysqlproxy import start_proxy

from qchelpers import until_hit  # noqa: E402

CLIENT = shutil.which("mariadb") or shutil.which("mysql")


def pymysql_tls(px, certs, **kw):
    return px.connect("qc", ssl_ca=certs["ca"], ssl_verify_cert=True, ssl_verify_identity=True, **kw)


def cli(px, *args, sql="SELECT v FROM qc.t WHERE id = 7"):
    """The mariadb command-line client through the proxy: (exit status, stdout + stderr)."""
    p = subprocess.run([CLIENT, "--no-defaults", "-h", "127.0.0.1", "-P", str(px.mysql_port), "-u", "sqlcached",
                        "-psqlcached-test", "-N", "-B", *args, "-e", sql], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def test_pymysql_over_tls_is_cached(tls_proxy, certs):
    """A client verifying the proxy's certificate and host name talks TLS 1.3 with it, and
    its reads are still answered from the cache."""
    c = pymysql_tls(tls_proxy, certs)
    try:
        assert isinstance(c._sock, ssl.SSLSocket) and c._sock.version() == "TLSv1.3"
        cur = c.cursor()
        cur.execute("SELECT v FROM qc.t WHERE id = 3")
        assert cur.fetchall() == (("v3",),)
        until_hit(tls_proxy, c, "SELECT v FROM qc.t WHERE id = 5")
        # A write through the same TLS session invalidates as usual.
        cur.execute("UPDATE qc.t SET v = 'tls' WHERE id = 5")
        cur.execute("SELECT v FROM qc.t WHERE id = 5")
        assert cur.fetchall() == (("tls",),)
        cur.execute("UPDATE qc.t SET v = 'v5' WHERE id = 5")
    finally:
        c.close()
    st = tls_proxy.stats()
    assert st["mysql_ssl_accepts"] >= 1 and st["mysql_ssl_finished_accepts"] >= 1


def test_big_results_and_change_user_over_tls(tls_proxy, certs):
    c = pymysql_tls(tls_proxy, certs)
    try:
        cur = c.cursor()
        cur.execute("SELECT REPEAT('x', 3000000)")
        assert len(cur.fetchone()[0]) == 3000000
        c.select_db("qc2")
        cur.execute("SELECT v FROM t WHERE id = 1")
        assert cur.fetchall() == (("other1",),)
    finally:
        c.close()


@pytest.mark.skipif(CLIENT is None, reason="mariadb client missing")
def test_mariadb_cli_requires_and_verifies(tls_proxy, certs):
    rc, out = cli(tls_proxy, "--ssl", f"--ssl-ca={certs['ca']}", "--ssl-verify-server-cert")
    assert rc == 0 and out.strip() == "v7", out
    rc, out = cli(tls_proxy, "--ssl", f"--ssl-ca={certs['ca']}", "--ssl-verify-server-cert",
                  sql="SHOW STATUS LIKE 'Ssl_version'")
    assert rc == 0, out
    # A client that refuses TLS still works while TLS is optional.
    rc, out = cli(tls_proxy, "--skip-ssl")
    assert rc == 0 and out.strip() == "v7", out
    # A client trusting another CA refuses the proxy's certificate.
    rc, out = cli(tls_proxy, "--ssl", f"--ssl-ca={certs['rogue_ca']}", "--ssl-verify-server-cert")
    assert rc != 0, out


def test_without_a_certificate_tls_clients_are_told(proxy, certs):
    """No --mysql-tls-cert: the greeting offers no TLS; a client that insists gets ERROR 1235
    naming the flags (before: the same error, without the way out)."""
    with pytest.raises(pymysql.err.OperationalError):
        pymysql_tls(proxy, certs)
    if CLIENT:
        rc, out = cli(proxy, "--ssl", f"--ssl-ca={certs['ca']}", "--ssl-verify-server-cert")
        assert rc != 0, out
    c = proxy.connect("qc")
    c.close()


def test_plain_bytes_instead_of_a_handshake_are_an_aborted_connect(tls_proxy):
    """A client that sends an SSLRequest and then garbage instead of a ClientHello: closed,
    counted in mysql_aborted_connects, the proxy unharmed."""
    import socket
    import struct
    before = tls_proxy.stats()["mysql_aborted_connects"]
    with socket.create_connection(("127.0.0.1", tls_proxy.mysql_port), timeout=5) as s:
        head = s.recv(4, socket.MSG_WAITALL)
        s.recv(struct.unpack("<I", head[:3] + b"\0")[0], socket.MSG_WAITALL)
        caps = 0x00000200 | 0x00000800 | 0x00008000 | 0x00080000  # PROTOCOL_41 | SSL | SECURE | PLUGIN_AUTH
        ssl_request = struct.pack("<IIB23x", caps, 1 << 24, 45)
        s.sendall(struct.pack("<I", len(ssl_request))[:3] + b"\x01" + ssl_request + b"GET / HTTP/1.0\r\n\r\n")
        s.settimeout(5)
        try:
            while s.recv(4096):
                pass
        except (ConnectionResetError, socket.timeout):
            pass
    assert tls_proxy.stats()["mysql_aborted_connects"] == before + 1
    c = tls_proxy.connect("qc")
    c.close()


# -- the backend link --------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_mariadb(certs):
    """A MariaDB with TLS (certificate for localhost/127.0.0.1) and a user that requires it."""
    args = f"--ssl-cert={certs['server_crt']} --ssl-key={certs['server_key']} --ssl-ca={certs['ca']}"
    with start_mariadb(extra_args=args) as db:
        db.sql("CREATE DATABASE qc; CREATE TABLE qc.t (id INT PRIMARY KEY, v VARCHAR(20));"
               "INSERT INTO qc.t VALUES (1, 'one');"
               "CREATE USER tlsonly@'%' IDENTIFIED BY 'pw' REQUIRE SSL; GRANT SELECT ON qc.* TO tlsonly@'%';")
        yield db


def backend_args(certs, mode):
    return ["--mysql-backend-tls", mode, "--mysql-backend-tls-ca", certs["ca"]]


@pytest.mark.parametrize("mode", ["verify-full", "verify-ca"])
def test_backend_link_encrypted(tls_mariadb, certs, mode):
    """With --mysql-backend-tls the backend sees a TLS session (Ssl_cipher), a REQUIRE SSL
    account can log in through a plain client link, and reads are still cached."""
    with start_proxy(tls_mariadb, *backend_args(certs, mode), online=True) as px:
        c = px.connect("qc")
        try:
            cur = c.cursor()
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1] != "", "the backend connection is not encrypted"
            until_hit(px, c, "SELECT v FROM qc.t WHERE id = 1")
        finally:
            c.close()
        c = px.connect("qc", user="tlsonly", password="pw")
        c.close()


def test_both_links_encrypted(tls_mariadb, certs):
    with start_proxy(tls_mariadb, *tls_args(certs), *backend_args(certs, "verify-full"), online=True) as px:
        c = pymysql_tls(px, certs, user="tlsonly", password="pw")
        try:
            cur = c.cursor()
            cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            assert cur.fetchone()[1] != ""
            assert c._sock.version() == "TLSv1.3"
            cur.execute("SELECT v FROM qc.t WHERE id = 1")
            assert cur.fetchall() == (("one",),)
        finally:
            c.close()


def test_without_backend_tls_a_require_ssl_user_is_refused(tls_mariadb):
    with start_proxy(tls_mariadb, online=False) as px:
        with pytest.raises(pymysql.err.OperationalError) as e:
            px.connect("qc", user="tlsonly", password="pw")
        assert e.value.args[0] == 1045, e.value


@pytest.fixture(scope="module")
def elsewhere_mariadb(certs):
    """A MariaDB whose certificate (from the same CA) names db.internal only."""
    args = f"--ssl-cert={certs['elsewhere_crt']} --ssl-key={certs['elsewhere_key']}"
    with start_mariadb(extra_args=args) as db:
        yield db


def test_verify_full_checks_the_name_verify_ca_does_not(elsewhere_mariadb, certs, tmp_path):
    log = tmp_path / "full.log"
    with start_proxy(elsewhere_mariadb, *backend_args(certs, "verify-full"), online=False, log=log) as px:
        with pytest.raises(pymysql.err.OperationalError) as e:
            px.connect()
        assert "TLS to the MySQL backend" in str(e.value) and "not valid for name" in str(e.value), e.value
        assert px.stats()["mysql_backend_ssl_errors"] == 1
    assert "TLS to backend" in log.read_text()
    with start_proxy(elsewhere_mariadb, *backend_args(certs, "verify-ca"), online=False) as px:
        c = px.connect()
        c.close()


def test_backend_without_tls_is_refused_not_downgraded(mariadb, certs):
    """--mysql-backend-tls against a backend that offers no TLS: every login is refused with
    a message saying so; nothing is sent in clear."""
    with start_proxy(mariadb, *backend_args(certs, "verify-ca"), online=False) as px:
        with pytest.raises(pymysql.err.OperationalError) as e:
            px.connect()
        assert "does not offer TLS" in str(e.value), e.value


def test_backend_with_a_certificate_from_another_ca_is_refused(tls_mariadb, certs):
    with start_proxy(tls_mariadb, "--mysql-backend-tls", "verify-ca", "--mysql-backend-tls-ca", certs["rogue_ca"],
                     online=False) as px:
        with pytest.raises(pymysql.err.OperationalError) as e:
            px.connect()
        assert "TLS to the MySQL backend" in str(e.value), e.value


@pytest.mark.parametrize("args,msg", [
    (["--mysql-tls-cert", "/nonexistent.crt", "--mysql-tls-key", "/nonexistent.key"], "--mysql-tls-cert"),
    (["--mysql-tls-cert", "CERT"], "go together"),
    (["--mysql-backend-tls", "verify-ca"], "go together"),
    (["--mysql-backend-tls", "sometimes", "--mysql-backend-tls-ca", "CA"], "must be off, verify-ca or verify-full"),
    (["--mysql-tls-cert", "CERT", "--mysql-tls-key", "OTHERKEY"], "does not match"),
])
def test_misconfiguration_stops_the_start(mariadb, certs, args, msg):
    from harness.servers import free_port, sqlcached_argv
    args = [a.replace("CERT", certs["server_crt"]).replace("OTHERKEY", certs["other_key"])
            .replace("CA", certs["ca"]) for a in args]
    argv = sqlcached_argv(free_port(), "--mysql-listen", f"127.0.0.1:{free_port()}",
                          "--mysql-backend", f"127.0.0.1:{mariadb.port}", *args)
    p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and msg in p.stderr, (p.returncode, p.stderr)


# -- clear-text passwords over TLS ---------------------------------------------------------

PAM_SERVICE = "/etc/pam.d/sqlcached-test-clear"
PAM_PLUGIN = any(Path(d, "auth_pam.so").exists() for d in ("/usr/lib/mysql/plugin", "/usr/lib64/mysql/plugin"))


@pytest.fixture(scope="module")
def pam_mariadb(tmp_path_factory):
    """A MariaDB whose user `pamuser` authenticates through PAM with the mysql_clear_password
    client plugin (pam_use_cleartext_plugin): a PAM service whose pam_exec script accepts
    the password `clear-pw`."""
    if not PAM_PLUGIN or not os.access("/etc/pam.d", os.W_OK):
        pytest.skip("needs MariaDB's auth_pam plugin and a writable /etc/pam.d (root)")
    d = tmp_path_factory.mktemp("pam")
    check = d / "check.sh"
    check.write_text('#!/bin/sh\nread -r pw\n[ "$pw" = "clear-pw" ]\n')
    check.chmod(0o755)
    Path(PAM_SERVICE).write_text(f"auth required pam_exec.so expose_authtok quiet {check}\n"
                                 "account required pam_permit.so\n")
    try:
        with start_mariadb(extra_args="--plugin-load-add=auth_pam --pam-use-cleartext-plugin") as db:
            db.sql("CREATE DATABASE qc; CREATE TABLE qc.t (id INT PRIMARY KEY, v VARCHAR(20));"
                   "INSERT INTO qc.t VALUES (1, 'one');"
                   f"CREATE USER pamuser@'%' IDENTIFIED VIA pam USING '{Path(PAM_SERVICE).name}';"
                   "GRANT SELECT ON qc.* TO pamuser@'%';")
            yield db
    finally:
        Path(PAM_SERVICE).unlink(missing_ok=True)


def test_mysql_clear_password_over_tls(pam_mariadb, certs):
    """The backend asks for mysql_clear_password (an auth switch the proxy relays untouched);
    over the client's TLS session PyMySQL sends the password encrypted, and the right one
    logs in through the proxy while a wrong one is denied as MariaDB denies it."""
    with start_proxy(pam_mariadb, *tls_args(certs), online=False) as px:
        c = pymysql_tls(px, certs, user="pamuser", password="clear-pw")
        try:
            assert c._sock.version() == "TLSv1.3"
            cur = c.cursor()
            cur.execute("SELECT CURRENT_USER(), v FROM qc.t WHERE id = 1")
            assert cur.fetchall() == (("pamuser@%", "one"),)
        finally:
            c.close()
        with pytest.raises(pymysql.err.OperationalError) as e:
            pymysql_tls(px, certs, user="pamuser", password="wrong")
        assert e.value.args[0] == 1045, e.value
