"""The PostgreSQL test harness itself (scripts/postgres.sh, tests/harness/postgres.py): the
server the PostgreSQL tests stand on has logical WAL, TLS and the password logins they rely on."""


def test_superuser_and_app_user_log_in_with_scram(postgres):
    assert postgres.sql("SHOW wal_level").strip() == "logical"
    rc, out, err = postgres.login(postgres.user, postgres.password,
                                  "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
    assert (rc, out.strip()) == (0, "t"), err
    rc, out, err = postgres.login(postgres.app_user, postgres.password,
                                  "SELECT rolsuper OR rolreplication FROM pg_roles WHERE rolname = current_user")
    assert (rc, out.strip()) == (0, "f"), err
    # The stored verifier is SCRAM, and a wrong password is refused.
    assert postgres.sql(f"SELECT left(rolpassword, 14) FROM pg_authid WHERE rolname = '{postgres.app_user}'"
                        ).strip() == "SCRAM-SHA-256$"
    rc, _, err = postgres.login(postgres.app_user, "wrong")
    assert rc != 0 and "password authentication failed" in err


def test_tls_verify_full_against_the_scripts_ca(postgres):
    rc, out, err = postgres.login(postgres.app_user, postgres.password,
                                  "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", sslmode="verify-full")
    assert (rc, out.strip()) == (0, "t"), err


def test_md5_and_cleartext_groups(postgres):
    postgres.sql("""
SET password_encryption = 'md5';
DROP ROLE IF EXISTS harness_md5; CREATE ROLE harness_md5 LOGIN PASSWORD 'pw5' IN ROLE md5_login;
SET password_encryption = 'scram-sha-256';
DROP ROLE IF EXISTS harness_plain; CREATE ROLE harness_plain LOGIN PASSWORD 'pwp' IN ROLE password_login;
""")
    assert postgres.login("harness_md5", "pw5")[0] == 0
    assert postgres.login("harness_plain", "pwp")[0] == 0
    assert postgres.login("harness_md5", "nope")[0] != 0
