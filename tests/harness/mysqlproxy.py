"""sqlcached as a MySQL query-cache proxy in front of a test MariaDB (tests/harness/mariadb.py).

    from harness.mysqlproxy import start_proxy, connect, stats

    with start_mariadb() as db, start_proxy(db) as px:
        px.mysql_port, px.mysql_addr        # the proxy's MySQL listener
        px.port                             # sqlcached's memcached port (stats)
        px.stats()                          # {"Qcache_hits": 3, ...} from `stats`
        c = px.connect("qc")                # PyMySQL through the proxy (autocommit on)
        d = connect(db.port, "qc")          # PyMySQL straight to MariaDB

The proxy gets --mysql-user with the password in SQLCACHED_MYSQL_PASSWORD, as the design
says; start_proxy waits until the binlog follower is connected (the cache is offline before).
"""
import itertools
import socket
import time

from .servers import Server, free_port, sqlcached_argv, wait_port

CACHE_COUNTERS = ("Qcache_hits", "Qcache_inserts", "Qcache_not_cached")

# Replica server ids: two followers with the same id on one MariaDB kick each other out.
_server_ids = itertools.count(0x5C51)


def stats(port: int, host: str = "127.0.0.1", group: str = "") -> dict:
    """`stats [group]` on a memcached port as {name: int or str}."""
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(f"stats {group}".strip().encode() + b"\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("stats: connection closed")
            buf += chunk
    out = {}
    for line in buf.decode().splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == "STAT":
            try:
                out[parts[1]] = int(parts[2])
            except ValueError:
                out[parts[1]] = parts[2]
    return out


def connect(port: int, database=None, user="sqlcached", password="sqlcached-test", autocommit=True, **kw):
    """A PyMySQL connection to 127.0.0.1:port (autocommit on: reads outside transactions)."""
    import pymysql

    return pymysql.connect(host="127.0.0.1", port=port, user=user, password=password, database=database,
                           autocommit=autocommit, connect_timeout=10, read_timeout=60, write_timeout=60, **kw)


class Proxy(Server):
    """A sqlcached process with --mysql-listen; `port` is its memcached port."""

    def __init__(self, argv, port, mysql_port, backend, env, log=None):
        self.mysql_port = mysql_port
        self.mysql_addr = f"127.0.0.1:{mysql_port}"
        self.backend = backend
        super().__init__(argv, port, wait=False, log=log, env=env)
        self._env = env
        try:
            self.wait_ready()
            wait_port(mysql_port, self.proc, 10.0)
        except Exception:
            self.stop()
            raise

    def stats(self) -> dict:
        """This server's `stats`."""
        return stats(self.port)

    def counters(self) -> dict:
        """Just the Qcache_hits / _inserts / _not_cached counters."""
        s = self.stats()
        return {k: s.get(k, 0) for k in CACHE_COUNTERS}

    def wait_online(self, timeout: float = 20.0) -> "Proxy":
        """Block until the binlog follower reports connected (binlog_connected 1) and, where
        the server reports it, the cache is online (Qcache_online 1)."""
        deadline = time.monotonic() + timeout
        last = {}
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sqlcached exited with {self.proc.returncode}")
            last = self.stats()
            if last.get("binlog_connected") == 1 and last.get("Qcache_online", 1) == 1:
                return self
            time.sleep(0.05)
        raise TimeoutError(f"binlog follower not connected after {timeout}s: "
                           f"{ {k: v for k, v in last.items() if k.startswith(('binlog', 'Qcache', 'mysql'))} }")

    def settle(self, timeout: float = 10.0) -> "Proxy":
        """Block until the binlog follower has applied every change the backend had written
        when called (`binlog_position` at the backend's `SHOW MASTER STATUS`) and their 50 ms
        rechecks are done (`binlog_rechecks_waiting` 0). A result cached before then may be
        dropped by a recheck of an earlier write, by design: a test that asserts a hit later
        settles first."""
        db = self.backend
        with connect(db.port, user=db.user, password=db.password) as c, c.cursor() as cur:
            cur.execute("SHOW MASTER STATUS")
            file, pos = cur.fetchone()[:2]
        want = (int(file.rsplit(".", 1)[1]), int(pos))
        deadline = time.monotonic() + timeout
        last = {}
        while time.monotonic() < deadline:
            last = self.stats()
            at = str(last.get("binlog_position", "-"))
            if ":" in at:
                f, p = at.split(",")[0].rsplit(":", 1)
                if (int(f.rsplit(".", 1)[1]), int(p)) >= want and last.get("binlog_rechecks_waiting") == 0:
                    return self
            time.sleep(0.01)
        raise TimeoutError(f"binlog follower not at {file}:{pos} after {timeout}s: "
                           f"{ {k: v for k, v in last.items() if k.startswith('binlog')} }")

    def connect(self, database=None, **kw):
        """PyMySQL through the proxy (see connect())."""
        return connect(self.mysql_port, database, **kw)


def start_proxy(db, *args: str, log=None, online=True, password=None) -> Proxy:
    """sqlcached with --mysql-listen on a free port in front of MariaDB `db`, with the binlog /
    metadata account db.user (password through SQLCACHED_MYSQL_PASSWORD) and extra `args`
    (e.g. "--query-cache-type", "DEMAND"). With online=True waits for the binlog follower.
    Each proxy gets its own --mysql-server-id (unless args has one): several may follow one MariaDB."""
    mysql_port = free_port()
    port = free_port()
    while port == mysql_port:
        port = free_port()
    argv = sqlcached_argv(port, "--mysql-listen", f"127.0.0.1:{mysql_port}",
                          "--mysql-backend", f"{db.host}:{db.port}", "--mysql-user", db.user, *args)
    if "--mysql-server-id" not in args:
        argv += ["--mysql-server-id", str(next(_server_ids))]
    env = {"SQLCACHED_MYSQL_PASSWORD": db.password if password is None else password}
    px = Proxy(argv, port, mysql_port, db, env, log=log)
    if online:
        try:
            px.wait_online()
        except Exception:
            px.stop()
            raise
    return px
