"""A throw-away MariaDB for tests (Debian's mariadbd, through scripts/mariadb.sh).

    from harness.mariadb import MariaDB, start_mariadb

    with start_mariadb() as db:           # temp datadir, free port, binlog on (ROW)
        db.host, db.port, db.user, db.password, db.socket
        db.url("test")                    # mysql://user:password@127.0.0.1:port/test
        db.env()                          # {"SQLCACHED_MARIADB": "host:port:user:password"}
        db.sql("CREATE DATABASE test")    # as root, over the unix socket
        db.restart()                      # stop + start on the same datadir and port

    with start_mariadb() as primary, start_replica(primary) as replica:
        primary.sql("CREATE DATABASE d")  # replicated (GTID, slave_pos)
        replica.wait_caught_up(primary)   # replica applied all of primary's binlog

As a pytest fixture (scope as needed):

    @pytest.fixture(scope="module")
    def mariadb():
        with start_mariadb() as db:
            yield db

The server runs as root (--user=root) in its own datadir with a unix socket there and a
TCP port on 127.0.0.1; the test user has a real password (no skip-grant-tables).
A fresh datadir is initialized once per process and copied for later servers, so a start
takes about a second.
"""
import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from .servers import free_port

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "mariadb.sh"

_template = None  # an initialized, stopped datadir to copy


def _run(*args, env=None, timeout=60):
    p = subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"mariadb.sh {' '.join(map(str, args))} failed:\n{p.stdout}\n{p.stderr}")
    return p.stdout


class MariaDB:
    """One MariaDB server in `base` (a directory it owns), listening on 127.0.0.1:port."""

    def __init__(self, base=None, port=None, user="sqlcached", password="sqlcached-test", extra_args=""):
        self._own_base = base is None
        self.base = Path(base or tempfile.mkdtemp(prefix="sqlcached-mariadb-"))
        self.port = port or free_port()
        self.host = "127.0.0.1"
        self.user = user
        self.password = password
        self.socket = str(self.base / "mysqld.sock")
        # More mariadbd options for this server (e.g. --ssl-cert=... --ssl-key=...).
        self.extra_args = extra_args
        self.running = False

    def _env(self):
        env = {**os.environ, "MARIADB_USER": self.user, "MARIADB_PASSWORD": self.password}
        if self.extra_args:
            env["MARIADB_EXTRA_ARGS"] = (env.get("MARIADB_EXTRA_ARGS", "") + " " + self.extra_args).strip()
        return env

    def start(self):
        global _template
        if not (self.base / "data" / "mysql").is_dir():
            if _template is None:
                tmpl = Path(tempfile.mkdtemp(prefix="sqlcached-mariadb-template-"))
                # the template gets this server's account, but none of its extra options
                env = {**os.environ, "MARIADB_USER": self.user, "MARIADB_PASSWORD": self.password}
                _run("start", tmpl, free_port(), env=env)
                _run("stop", tmpl)
                _template = tmpl
                atexit.register(shutil.rmtree, tmpl, True)
            shutil.copytree(_template / "data", self.base / "data", dirs_exist_ok=True)
            # Each server writes its own binlog from the start.
            for f in (self.base / "data").glob("binlog.*"):
                f.unlink()
        _run("start", self.base, self.port, env=self._env())
        self.running = True
        return self

    def stop(self):
        if self.running:
            _run("stop", self.base)
            self.running = False

    def restart(self):
        self.stop()
        return self.start()

    def close(self):
        self.stop()
        if self._own_base:
            shutil.rmtree(self.base, ignore_errors=True)

    def gtid_binlog_pos(self):
        """@@gtid_binlog_pos: the GTIDs this server has written to its binlog."""
        return self.sql("SELECT @@GLOBAL.gtid_binlog_pos").strip()

    def replicate_from(self, primary, timeout=30):
        """Make this (running) server a replica of `primary`: CHANGE MASTER TO ... MASTER_USE_GTID=
        slave_pos with primary's test account, START SLAVE, and wait until both replication
        threads run. Start it with replica_args() so that it writes the applied changes to its
        own binlog (ROW, log_slave_updates) for a binlog follower such as sqlcached's proxy."""
        self.sql(f"""
CHANGE MASTER TO MASTER_HOST='{primary.host}', MASTER_PORT={primary.port},
  MASTER_USER='{primary.user}', MASTER_PASSWORD='{primary.password}',
  MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
START SLAVE;
""")
        deadline = time.monotonic() + timeout
        status = {}
        while time.monotonic() < deadline:
            status = self.slave_status()
            if status.get("Slave_IO_Running") == "Yes" and status.get("Slave_SQL_Running") == "Yes":
                return self
            time.sleep(0.1)
        raise TimeoutError(f"replication from {primary.port} not running after {timeout}s: "
                           f"{ {k: v for k, v in status.items() if 'Running' in k or 'Error' in k} }")

    def slave_status(self):
        """SHOW SLAVE STATUS as {column: value} ({} when this server is no replica)."""
        client = shutil.which("mariadb") or shutil.which("mysql")
        p = subprocess.run([client, "--no-defaults", "--protocol=socket", f"--socket={self.socket}", "-uroot", "-E",
                            "-e", "SHOW SLAVE STATUS"], capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"SHOW SLAVE STATUS failed: {p.stderr}")
        out = {}
        for line in p.stdout.splitlines():
            name, sep, value = line.partition(":")
            if sep and not name.startswith("*"):
                out[name.strip()] = value.strip()
        return out

    def wait_caught_up(self, primary, timeout=30):
        """Block until this replica has applied everything `primary` has binlogged so far."""
        pos = primary.gtid_binlog_pos()
        got = self.sql(f"SELECT MASTER_GTID_WAIT('{pos}', {timeout})").strip()
        if got != "0":
            raise TimeoutError(f"replica did not reach {pos} in {timeout}s: {self.slave_status()}")
        return self

    def url(self, database=""):
        return f"mysql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def spec(self):
        """host:port:user:password, the SQLCACHED_MARIADB format."""
        return f"{self.host}:{self.port}:{self.user}:{self.password}"

    def env(self):
        return {"SQLCACHED_MARIADB": self.spec()}

    def sql(self, statements, database=None):
        """Runs SQL as root over the socket; returns the output (tab-separated rows)."""
        client = shutil.which("mariadb") or shutil.which("mysql")
        args = [client, "--no-defaults", "--protocol=socket", f"--socket={self.socket}", "-uroot", "-N", "-B"]
        if database:
            args.append(database)
        p = subprocess.run(args, input=statements, capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise RuntimeError(f"SQL failed: {p.stderr}")
        return p.stdout

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def replica_args(server_id=2):
    """mariadbd options of a replica whose binlog a follower can read: its own server id, and the
    changes it applies written to its binlog (log_bin and binlog_format=ROW are always on)."""
    return f"--server-id={server_id} --log-slave-updates"


@contextlib.contextmanager
def start_mariadb(**kw):
    """A started MariaDB in a temp directory, stopped and removed afterwards."""
    db = MariaDB(**kw)
    try:
        db.start()
        yield db
    finally:
        db.close()


@contextlib.contextmanager
def start_replica(primary, server_id=2, extra_args="", **kw):
    """A started MariaDB replicating `primary` (GTID, slave_pos, as primary's test account) and
    writing what it applies to its own binlog (ROW, log_slave_updates), stopped and removed
    afterwards. Stop it before its primary (a `with` over both does)."""
    db = MariaDB(extra_args=(replica_args(server_id) + " " + extra_args).strip(), **kw)
    try:
        db.start()
        db.replicate_from(primary)
        db.wait_caught_up(primary)
        yield db
    finally:
        db.close()
