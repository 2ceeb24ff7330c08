"""sqlcached's PostgreSQL front in front of a test PostgreSQL (tests/harness/postgres.py).

    from harness.pgproxy import start_pgproxy

    with start_pgproxy(pg) as px:                   # --pg-listen on a free port
        px.pg_port                                  # the front's port
        px.dsn(user=pg.app_user)                    # libpq key=value string to the front
        px.stats()                                  # {"pg_logins_ok": 3, ...} from `stats`

The front gets --pg-user pg.user with its password in SQLCACHED_PG_PASSWORD.
"""
from .mysqlproxy import stats
from .servers import Server, free_port, sqlcached_argv, wait_port


class PgProxy(Server):
    """A sqlcached process with --pg-listen; `port` is its memcached port (stats)."""

    def __init__(self, argv, port, pg_port, backend, env, log=None):
        self.pg_port = pg_port
        self.backend = backend
        super().__init__(argv, port, wait=False, log=log, env=env)
        try:
            self.wait_ready()
            wait_port(pg_port, self.proc, 10.0)
        except Exception:
            self.stop()
            raise

    def stats(self, group: str = "") -> dict:
        """This server's `stats` (`stats <group>` if given)."""
        return stats(self.port, group=group)

    def dsn(self, user=None, password=None, database="postgres", **params) -> str:
        """A libpq connection string to the front (TLS off unless `sslmode` is given)."""
        pg = self.backend
        kv = {"host": "127.0.0.1", "port": self.pg_port, "user": user or pg.user,
              "password": pg.password if password is None else password, "dbname": database,
              "sslmode": "disable", "connect_timeout": 10}
        kv.update(params)
        return " ".join(f"{k}={v}" for k, v in kv.items())


def start_pgproxy(pg, *args: str, log=None, env=None) -> PgProxy:
    """sqlcached with --pg-listen on a free port in front of PostgreSQL `pg` (--pg-user pg.user,
    its password through SQLCACHED_PG_PASSWORD), with extra `args`."""
    pg_port, port = free_port(), free_port()
    while port == pg_port:
        port = free_port()
    argv = sqlcached_argv(port, "--pg-listen", f"127.0.0.1:{pg_port}", "--pg-backend", f"{pg.host}:{pg.port}",
                          "--pg-user", pg.user, *args)
    penv = {"SQLCACHED_PG_PASSWORD": pg.password, **(env or {})}
    return PgProxy(argv, port, pg_port, pg, penv, log=log)
