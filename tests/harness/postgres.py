"""A throw-away PostgreSQL 15 for tests (Debian's binaries, through scripts/postgres.sh).

    from harness.postgres import PostgreSQL, start_postgres

    with start_postgres() as pg:          # temp datadir, free port, wal_level=logical, TLS on
        pg.host, pg.port, pg.socket, pg.ca
        pg.user, pg.password              # a SUPERUSER, SCRAM-SHA-256 over TCP
        pg.app_user                       # a plain LOGIN role (no superuser, no REPLICATION)
        pg.url("postgres")                # postgres://sqlcached:...@127.0.0.1:port/postgres
        pg.url("postgres", user=pg.app_user)
        pg.env()                          # {"SQLCACHED_POSTGRES": pg.url("postgres")}
        pg.sql("CREATE TABLE t (id int primary key)")   # as the bootstrap superuser, socket
        pg.restart()                      # stop + start on the same datadir and port
        pg.kill()                         # SIGKILL the postmaster (crash recovery at next start)

As a pytest fixture: `postgres` (tests/conftest.py) is one server for the whole session,
started on first use. Start your own (`with start_postgres(extra_args="-c wal_level=replica")`)
where a test changes or restarts the server.

The server runs as the `postgres` system user when the tests run as root (the datadir is
given to it), with its unix socket in its own directory and a TCP port on 127.0.0.1. A fresh
datadir is initialized once per process and copied for later servers.
"""
import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .servers import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "postgres.sh"
BIN = Path(os.environ.get("POSTGRES_BIN", "/usr/lib/postgresql/15/bin"))

_template = None  # an initialized, stopped datadir to copy


def _run(*args, env=None, timeout=120, input=None):
    p = subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env,
                       timeout=timeout, input=input)
    if p.returncode != 0:
        raise RuntimeError(f"postgres.sh {' '.join(map(str, args[:2]))} failed:\n{p.stdout}\n{p.stderr}")
    return p.stdout


def _give_to_postgres(path):
    """As root, the server runs as `postgres`: it must own its directory."""
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")
        for p in Path(path).rglob("*"):
            shutil.chown(p, "postgres", "postgres")


class PostgreSQL:
    """One PostgreSQL server in `base` (a directory it owns), listening on 127.0.0.1:port."""

    def __init__(self, base=None, port=None, user="sqlcached", password="sqlcached-test", extra_args=""):
        self._own_base = base is None
        # /tmp itself, not a pytest tmp_path: the `postgres` user must be able to reach it.
        self.base = Path(base or tempfile.mkdtemp(prefix="sqlcached-postgres-"))
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.user = user
        self.password = password
        self.app_user = f"{user}_app"
        self.socket = str(self.base)
        self.ca = str(self.base / "ca.crt")
        # More server options (`-c name=value ...`), e.g. "-c wal_level=replica".
        self.extra_args = extra_args
        self.running = False

    def _env(self):
        env = {**os.environ, "POSTGRES_USER": self.user, "POSTGRES_PASSWORD": self.password}
        if self.extra_args:
            env["POSTGRES_EXTRA_ARGS"] = (env.get("POSTGRES_EXTRA_ARGS", "") + " " + self.extra_args).strip()
        return env

    def start(self):
        global _template
        if not (self.base / "data" / "PG_VERSION").is_file():
            if _template is None:
                tmpl = Path(tempfile.mkdtemp(prefix="sqlcached-postgres-template-"))
                _run("start", tmpl, free_port(), env={**os.environ, "POSTGRES_USER": self.user,
                                                      "POSTGRES_PASSWORD": self.password})
                _run("stop", tmpl)
                _template = tmpl
                atexit.register(shutil.rmtree, tmpl, True)
            shutil.copytree(_template / "data", self.base / "data", dirs_exist_ok=True)
            _give_to_postgres(self.base)
        _run("start", self.base, self.port, env=self._env())
        self.running = True
        return self

    def stop(self):
        # Whatever a failed start may have left running is stopped too (by its own pid).
        if self.running or (self.base / "data" / "postmaster.pid").exists():
            _run("stop", self.base)
        self.running = False

    def restart(self):
        self.stop()
        return self.start()

    def pid(self):
        """The postmaster's pid (None when it is not running)."""
        try:
            return int((self.base / "data" / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def kill(self):
        """SIGKILL the postmaster (its backends exit when they notice); the next start recovers."""
        pid = self.pid()
        if pid:
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)
            # Backends outlive a killed postmaster for a moment; a start waits for their exit.
            time.sleep(0.5)
        self.running = False

    def close(self):
        self.stop()
        if self._own_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def url(self, database="postgres", user=None, password=None, **params):
        """postgres://user:password@127.0.0.1:port/database[?params] (the superuser by default)."""
        u = user or self.user
        pw = self.password if password is None else password
        query = "&".join(f"{k}={v}" for k, v in params.items())
        return f"postgres://{u}:{pw}@{self.host}:{self.port}/{database}" + (f"?{query}" if query else "")

    def env(self):
        return {"SQLCACHED_POSTGRES": self.url("postgres")}

    def sql(self, statements, database="postgres"):
        """Runs SQL as the bootstrap superuser over the socket; returns unaligned rows (`|`)."""
        return _run("psql", self.base, "-d", database, "-tA", input=statements)

    def login(self, user, password, sql="SELECT current_user", database="postgres", sslmode="disable"):
        """Runs SQL over TCP as `user` with `password` (libpq's psql: SCRAM, md5 or cleartext
        as pg_hba.conf says); returns (exit code, stdout, stderr)."""
        env = {**os.environ, "PGPASSWORD": password, "PGSSLMODE": sslmode, "PGSSLROOTCERT": self.ca,
               "PGCONNECT_TIMEOUT": "10"}
        p = subprocess.run([str(BIN / "psql"), "-X", "-tA", "-h", self.host, "-p", str(self.port), "-U", user,
                            "-d", database, "-c", sql], capture_output=True, text=True, env=env, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@contextlib.contextmanager
def start_postgres(**kw):
    """A started PostgreSQL in a temp directory, stopped and removed afterwards."""
    pg = PostgreSQL(**kw)
    try:
        pg.start()
        yield pg
    finally:
        pg.close()
