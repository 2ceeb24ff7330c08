"""Privilege-correct caching (issue 12, item 5): after any statement that could take a
privilege away, done through the proxy or directly on MariaDB, the affected user's next read
through the proxy is answered exactly as MariaDB answers the same user directly (rows, or the
same access-denied error), never from a result cached before the change.

Each case: a fresh user reads a row through the proxy until it is a cache hit; the change is
made (via the proxy as the admin, or straight on MariaDB); then the user's open proxy session
and open direct session run the read again and must get the same outcome."""
import itertools
import time

import pymysql
import pytest

from harness.mysqlproxy import connect
from qchelpers import q, until_hit

SQL = "SELECT v FROM qc.t WHERE id = 5"
_n = itertools.count()

# (name, set-up statements for user {u} / role {r}, change statements); the role cases make
# the role the user's default so the session needs no SET ROLE (which turns caching off).
ROLE = ("CREATE ROLE {r}; GRANT SELECT ON qc.t TO {r}; GRANT {r} TO {u}; SET DEFAULT ROLE {r} FOR {u}; "
        "GRANT {r} TO 'sqlcached'@'%' WITH ADMIN OPTION")  # so the proxy's admin may revoke it
CASES = [
    ("revoke table", "GRANT SELECT ON qc.t TO {u}", "REVOKE SELECT ON qc.t FROM {u}"),
    ("revoke column", "GRANT SELECT (id, v) ON qc.t TO {u}", "REVOKE SELECT (v) ON qc.t FROM {u}"),
    ("revoke database", "GRANT SELECT ON qc.* TO {u}", "REVOKE SELECT ON qc.* FROM {u}"),
    ("drop user", "GRANT SELECT ON qc.t TO {u}", "DROP USER {u}"),
    ("rename user", "GRANT SELECT ON qc.t TO {u}", "RENAME USER {u} TO {u2}"),
    ("revoke from role", ROLE, "REVOKE SELECT ON qc.t FROM {r}"),
    ("revoke role", ROLE, "REVOKE {r} FROM {u}"),
    ("drop role", ROLE, "DROP ROLE {r}"),
    ("direct mysql table + flush", "GRANT SELECT ON qc.t TO {u}",
     "DELETE FROM mysql.tables_priv WHERE User = '{name}'; FLUSH PRIVILEGES"),
]


def outcome(conn):
    try:
        return ("rows", q(conn, SQL))
    except pymysql.err.MySQLError as e:
        return ("error", e.args[0])


@pytest.mark.parametrize("via", ["proxy", "direct"])
@pytest.mark.parametrize("name,setup,change", CASES, ids=[c[0] for c in CASES])
def test_privilege_change_is_never_served_from_cache(proxy, mariadb, via, name, setup, change):
    n = next(_n)
    user, role = f"pv{n}", f"pvr{n}"
    u, r = f"'{user}'@'%'", f"'{role}'"

    def sub(text):
        return text.format(u=u, r=r, u2=f"'{user}x'@'%'", name=user)
    mariadb.sql(f"CREATE USER {u} IDENTIFIED BY 'pw'; " + sub(setup))
    via_proxy = proxy.connect("qc", user=user, password="pw")
    direct = connect(mariadb.port, "qc", user=user, password="pw")
    try:
        assert until_hit(proxy, via_proxy, SQL) == (("v5",),)
        if via == "proxy":
            admin = proxy.connect("qc")
            try:
                for stmt in sub(change).split("; "):
                    q(admin, stmt)
            finally:
                admin.close()
        else:
            mariadb.sql(sub(change))
        want = outcome(direct)
        got = outcome(via_proxy)
        if via == "direct":
            # A direct change reaches the proxy through the binlog: within the freshness
            # bound (100 ms), not before MariaDB's OK.
            deadline = time.monotonic() + 0.1
            while got != want and time.monotonic() < deadline:
                time.sleep(0.005)
                got = outcome(via_proxy)
        assert got == want, f"{name} via {via}: proxy {got}, MariaDB {want}"
    finally:
        via_proxy.close()
        direct.close()
        mariadb.sql(f"DROP USER IF EXISTS {u}; DROP USER IF EXISTS '{user}x'@'%'; DROP ROLE IF EXISTS {r}")


@pytest.mark.parametrize("via", ["proxy", "direct"])
def test_default_role_dropped_for_new_sessions(proxy, mariadb, via):
    """SET DEFAULT ROLE NONE: the user's next login runs without the role, so it must not
    get what a login with the role cached (through the proxy: invalidated before the OK).
    Logins name no database: MariaDB checks the database before it applies the role."""
    n = next(_n)
    user, role = f"pd{n}", f"pdr{n}"
    u, r = f"'{user}'@'%'", f"'{role}'"
    mariadb.sql(f"CREATE USER {u} IDENTIFIED BY 'pw'; " + ROLE.format(u=u, r=r))
    try:
        first = proxy.connect(None, user=user, password="pw")
        assert until_hit(proxy, first, SQL) == (("v5",),)
        first.close()
        change = f"SET DEFAULT ROLE NONE FOR {u}"
        if via == "proxy":
            admin = proxy.connect("qc")
            q(admin, change)
            admin.close()
        else:
            mariadb.sql(change)
            time.sleep(0.1)  # through the binlog: within the freshness bound
        direct = connect(mariadb.port, None, user=user, password="pw")
        again = proxy.connect(None, user=user, password="pw")
        want, got = outcome(direct), outcome(again)
        direct.close()
        again.close()
        assert want == ("error", 1142) and got == want, (got, want)
    finally:
        mariadb.sql(f"DROP USER IF EXISTS {u}; DROP ROLE IF EXISTS {r}")


def test_routine_flush_privileges_keeps_the_cache(proxy, mariadb):
    """Issue 42: a FLUSH PRIVILEGES made directly on MariaDB with nothing written to the grant
    tables since the last one (routine DBA work) reloads the same privileges: cached results
    stay (it used to drop every one). GRANT, CREATE USER, SET PASSWORD and the FLUSHes that
    reload nothing keep them too; a direct write to a grant table followed by FLUSH PRIVILEGES
    still drops them (the "direct mysql table + flush" case above)."""
    mariadb.sql("FLUSH PRIVILEGES")  # whatever the follower had not seen, reloaded once
    proxy.settle()
    c = proxy.connect("qc")
    try:
        until_hit(proxy, c, SQL)
        before = proxy.stats()["Qcache_invalidations_all"]
        mariadb.sql("FLUSH PRIVILEGES; CREATE USER pflush IDENTIFIED BY 'x'; GRANT SELECT ON qc.* TO pflush; "
                    "SET PASSWORD FOR pflush = PASSWORD('y'); FLUSH TABLES; FLUSH STATUS; FLUSH HOSTS; FLUSH PRIVILEGES")
        proxy.settle()
        assert proxy.stats()["Qcache_invalidations_all"] == before
        assert until_hit(proxy, c, SQL, tries=1) == (("v5",),)
    finally:
        c.close()
        mariadb.sql("DROP USER IF EXISTS pflush")
