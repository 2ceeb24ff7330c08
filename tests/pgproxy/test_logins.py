"""Logins through the PostgreSQL front: SCRAM-SHA-256, md5 and cleartext relayed (the server
decides), a wrong password gets the server's own error, TLS toward the client (the proxy's
certificate, verify-full) and toward the server (--pg-backend-sslmode verify-full with the
server's CA), SCRAM channel binding never offered through the proxy, --check-config's login."""
import subprocess

import psycopg
import pytest

from harness.certs import make_certs
from harness.pgproxy import start_pgproxy
from harness.servers import sqlcached_argv, free_port


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("pgcerts"))


@pytest.fixture(scope="module")
def roles(pgdb):
    pgdb.sql("""
SET password_encryption = 'md5';
DROP ROLE IF EXISTS pgp_md5; CREATE ROLE pgp_md5 LOGIN PASSWORD 'pw-md5' IN ROLE md5_login;
SET password_encryption = 'scram-sha-256';
DROP ROLE IF EXISTS pgp_plain; CREATE ROLE pgp_plain LOGIN PASSWORD 'pw-plain' IN ROLE password_login;
""")
    return pgdb


def who(dsn):
    with psycopg.connect(dsn) as c:
        return c.execute("SELECT current_user, ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()


def test_scram_md5_cleartext_and_wrong_password(pgproxy, roles):
    pg = roles
    assert who(pgproxy.dsn(user=pg.app_user))[0] == pg.app_user  # SCRAM-SHA-256
    assert who(pgproxy.dsn(user="pgp_md5", password="pw-md5"))[0] == "pgp_md5"
    assert who(pgproxy.dsn(user="pgp_plain", password="pw-plain"))[0] == "pgp_plain"
    failed = pgproxy.stats()["pg_logins_failed"]
    for user in (pg.app_user, "pgp_md5", "pgp_plain"):
        with pytest.raises(psycopg.OperationalError) as e:
            psycopg.connect(pgproxy.dsn(user=user, password="wrong"))
        # The server's own message (SQLSTATE 28P01), relayed.
        assert f'password authentication failed for user "{user}"' in str(e.value)
    with pytest.raises(psycopg.OperationalError) as e:
        psycopg.connect(pgproxy.dsn(database="no_such_db"))
    assert 'database "no_such_db" does not exist' in str(e.value)
    assert pgproxy.stats()["pg_logins_failed"] == failed + 4


def test_tls_both_links_verify_full(roles, certs, tmp_path):
    pg = roles
    with start_pgproxy(pg, "--pg-tls-cert", certs["server_crt"], "--pg-tls-key", certs["server_key"],
                       "--pg-backend-sslmode", "verify-full", "--pg-backend-sslrootcert", pg.ca,
                       log=str(tmp_path / "log")) as px:
        tls = dict(sslmode="verify-full", sslrootcert=certs["ca"], host="localhost")
        # channel_binding=prefer (libpq's default) over TLS to a proxy whose server link is TLS:
        # refused by the proxy with what to do (the server would refuse it as a downgrade).
        with pytest.raises(psycopg.OperationalError) as e:
            psycopg.connect(px.dsn(user=pg.app_user, **tls))
        assert "channel binding" in str(e.value) and "channel_binding=disable" in str(e.value)
        # channel_binding=require cannot be met (never offered).
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(px.dsn(user=pg.app_user, channel_binding="require", **tls))
        # Disabled: SCRAM works over TLS on both links, and the server sees TLS from the proxy.
        assert who(px.dsn(user=pg.app_user, channel_binding="disable", **tls)) == (pg.app_user, True)
        assert who(px.dsn(user="pgp_md5", password="pw-md5", **tls)) == ("pgp_md5", True)
        # A client that does not want TLS still gets in (the proxy answers SSLRequest 'N'
        # only without a certificate; here sslmode=disable sends none).
        assert who(px.dsn(user="pgp_md5", password="pw-md5"))[0] == "pgp_md5"
        # The proxy's certificate is checked by the client: a wrong CA fails.
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(px.dsn(user=pg.app_user, sslmode="verify-full", sslrootcert=pg.ca,
                                   channel_binding="disable"))
        assert px.stats()["pg_ssl_accepts"] >= 4


def test_tls_to_client_plain_to_server_accepts_binding_support(roles, certs):
    """With a plain server link the server accepts 'y' (it has no TLS to bind to)."""
    pg = roles
    with start_pgproxy(pg, "--pg-tls-cert", certs["server_crt"], "--pg-tls-key", certs["server_key"],
                       "--pg-backend-sslmode", "disable") as px:
        assert who(px.dsn(user=pg.app_user, sslmode="require"))[0] == pg.app_user


def test_backend_verify_full_refuses_a_wrong_ca(roles, certs):
    pg = roles
    with start_pgproxy(pg, "--pg-backend-sslmode", "verify-full", "--pg-backend-sslrootcert", certs["ca"]) as px:
        with pytest.raises(psycopg.OperationalError) as e:
            psycopg.connect(px.dsn(user=pg.app_user))
        assert "cannot connect to PostgreSQL" in str(e.value) and "TLS" in str(e.value)
        assert px.stats()["pg_backend_ssl_errors"] >= 1


def check_config(*args, env=None):
    argv = sqlcached_argv(free_port(), *args, "--check-config")
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)


def test_check_config_logs_in(roles, certs):
    import os
    pg = roles
    base = ["--pg-listen", "127.0.0.1:0", "--pg-backend", f"127.0.0.1:{pg.port}", "--pg-user", pg.user,
            "--pg-backend-sslmode", "verify-full", "--pg-backend-sslrootcert", pg.ca]
    ok = check_config(*base, env={**os.environ, "SQLCACHED_PG_PASSWORD": pg.password})
    assert ok.returncode == 0 and "logs in (TLS, sslmode verify-full); PostgreSQL 15" in ok.stdout, ok.stdout
    bad = check_config(*base, env={**os.environ, "SQLCACHED_PG_PASSWORD": "wrong"})
    assert bad.returncode != 0 and "the password is wrong" in bad.stdout, bad.stdout
    ca = check_config(*base[:-1], certs["ca"], env={**os.environ, "SQLCACHED_PG_PASSWORD": pg.password})
    assert ca.returncode != 0 and "--pg-backend-sslrootcert is the CA" in ca.stdout, ca.stdout
    down = check_config("--pg-listen", "127.0.0.1:0", "--pg-backend", f"127.0.0.1:{free_port()}",
                        "--pg-user", pg.user, env={**os.environ, "SQLCACHED_PG_PASSWORD": pg.password})
    assert down.returncode != 0 and "is PostgreSQL running" in down.stdout, down.stdout
    hba = check_config("--pg-listen", "127.0.0.1:0", "--pg-backend", f"127.0.0.1:{pg.port}", "--pg-user", "nobody",
                       env={**os.environ, "SQLCACHED_PG_PASSWORD": "x"})
    assert hba.returncode != 0 and "FAIL" in hba.stdout, hba.stdout
