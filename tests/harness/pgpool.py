"""pgpool-II with its in-memory query cache in front of a test PostgreSQL (scripts/pgpool.sh).

    from harness.pgpool import start_pgpool

    with start_pgpool(pg) as pool:                  # free port, raw mode, shmem query cache on
        pool.port, pool.pid
        pool.dsn(user=pg.app_user)                  # libpq key=value string to pgpool
        pool.cache()                                # {"num_cache_hits": 3, "num_selects": 5, ...}

Logins: SCRAM-SHA-256 with pool_passwd holding pg.user's and pg.app_user's password (the
script's default; `auth="cleartext"` or `"trust"` for the others). pgpool-II is Debian's
pgpool2 (4.3); the script installs it if missing.
"""
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .servers import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "pgpool.sh"


class Pgpool:
    """One pgpool-II process in `base`, listening on 127.0.0.1:port, before PostgreSQL `pg`."""

    def __init__(self, pg, auth="scram", children=16, cache_size="64MB", expire=0, extra_conf=""):
        self.backend = pg
        self.base = Path(tempfile.mkdtemp(prefix="sqlcached-pgpool-"))
        self.port = free_port()
        self.auth = auth
        self.pid = None
        self._env = {**os.environ, "PGPOOL_USER": pg.user, "PGPOOL_PASSWORD": pg.password,
                     "PGPOOL_USERS": f"{pg.user} {pg.app_user}", "PGPOOL_AUTH": auth,
                     "PGPOOL_CHILDREN": str(children), "PGPOOL_CACHE_SIZE": cache_size,
                     "PGPOOL_CACHE_EXPIRE": str(expire), "PGPOOL_EXTRA_CONF": extra_conf}

    def _run(self, *args, timeout=60):
        p = subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True,
                           env=self._env, timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"pgpool.sh {args[0]} failed:\n{p.stdout}\n{p.stderr}")
        return p.stdout

    def start(self):
        out = self._run("start", self.base, self.port, self.backend.port, self.backend.host)
        self.pid = int(next(line for line in out.splitlines() if line.startswith("pid="))[4:])
        return self

    def stop(self):
        self._run("stop", self.base)
        self.pid = None

    def running(self) -> bool:
        return subprocess.run(["bash", str(SCRIPT), "status", str(self.base)], env=self._env,
                              capture_output=True).returncode == 0

    def log(self) -> str:
        """pgpool's own log (stderr)."""
        try:
            return (self.base / "pgpool.log").read_text(errors="replace")
        except OSError:
            return ""

    def dsn(self, user=None, password=None, database="postgres", **params) -> str:
        """A libpq connection string to pgpool (no TLS: pgpool's is off)."""
        pg = self.backend
        kv = {"host": "127.0.0.1", "port": self.port, "user": user or pg.user,
              "password": pg.password if password is None else password, "dbname": database,
              "sslmode": "disable", "connect_timeout": 10}
        kv.update(params)
        return " ".join(f"{k}={v}" for k, v in kv.items())

    def cache(self, database="postgres") -> dict:
        """SHOW pool_cache through pgpool, as {column: number}."""
        import psycopg

        with psycopg.connect(self.dsn(database=database), autocommit=True) as c:
            cur = c.execute("SHOW pool_cache")
            row = cur.fetchone()
            return {d.name: float(v) if "." in str(v) else int(v) for d, v in zip(cur.description, row)}

    def close(self):
        try:
            self.stop()
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def start_pgpool(pg, **kw) -> Pgpool:
    """A started pgpool-II before PostgreSQL `pg` (stopped and removed on exit of the `with`)."""
    pool = Pgpool(pg, **kw)
    try:
        return pool.start()
    except Exception:
        pool.close()
        raise
