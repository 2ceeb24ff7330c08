"""Helpers for the --invalidate tests: a sqlcached that follows a MariaDB's binlog with rules,
and the freshness analysis shared by the Python and Java cache-aside runs."""
import itertools
import socket
import time

from harness.servers import start_sqlcached
from harness.mysqlproxy import stats

# Replica server ids distinct from the proxy tests' (two followers with one id kick each other out).
_ids = itertools.count(0x1A00)


def start_rules(db, *rules, extra=(), log=None, wait_online=True):
    """sqlcached with --invalidate rules over MariaDB `db` (binlog read as db.user)."""
    args = ["--mysql-backend", f"{db.host}:{db.port}", "--mysql-user", db.user,
            "--mysql-server-id", str(next(_ids))]
    for r in rules:
        args += ["--invalidate", r]
    srv = start_sqlcached(*args, *extra, log=log, env={"SQLCACHED_MYSQL_PASSWORD": db.password})
    if wait_online:
        deadline = time.monotonic() + 20
        while stats(srv.port).get("binlog_connected") != 1:
            if time.monotonic() > deadline:
                srv.stop()
                raise TimeoutError("binlog never connected")
            time.sleep(0.05)
    return srv


def mc(port, line, data=None):
    """One text command, the reply up to its terminator."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(line.encode() + b"\r\n" + ((data + b"\r\n") if data is not None else b""))
        buf = b""
        while not any(buf.endswith(t) for t in (b"END\r\n", b"STORED\r\n", b"DELETED\r\n", b"NOT_FOUND\r\n",
                                                  b"ERROR\r\n", b"NOT_STORED\r\n")):
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        return buf


def wait_gone(port, key, timeout=2.0):
    """Seconds until `get key` misses (None if it never did)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if mc(port, f"get {key}") == b"END\r\n":
            return time.monotonic() - t0
        time.sleep(0.001)
    return None


def prober(port, connect, rows, key_of, update, stop, probes, errors):
    """Times invalidations until `stop` is set: caches key_of(i) for one of `rows` (row ids,
    each reused only after its hold has ended), runs `update` (SQL with one %s for the id)
    straight on MariaDB through `connect()`, then polls until the key is gone; appends the
    delay in ms to `probes` (errors to `errors`). Run it on a thread of its own."""
    from pymemcache.client.base import Client
    cache = Client(("127.0.0.1", port), connect_timeout=5, timeout=5)
    conn = connect()
    n = 0
    try:
        while not stop.is_set():
            i = rows[n % len(rows)]
            n += 1
            key = key_of(i)
            time.sleep(0.01)
            while cache.set(key, b"cached", expire=300) and cache.get(key) is None:
                time.sleep(0.01)  # still held by an earlier invalidation
            with conn.cursor() as cur:
                cur.execute(update, (i,))
            t0 = time.monotonic()
            while cache.get(key) is not None and time.monotonic() - t0 < 5:
                time.sleep(0.0005)
            probes.append((time.monotonic() - t0) * 1000)
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(repr(e))
    finally:
        cache.close()
        conn.close()


def analyse(writes, reads, window_s=0.100):
    """Freshness of a randomized run.

    writes: [(id, version, commit_wall_s)], commits ordered per id (version goes up);
    reads: [(id, version_seen, start_wall_s)].
    A read is stale if it started more than window_s after the commit of a newer version
    than the one it saw. For each write, its delay is how long after its commit reads still
    returned an older version (0 if none did). Returns (stale_reads, delays_ms sorted)."""
    by_id = {}
    for i, v, t in writes:
        by_id.setdefault(i, []).append((t, v))
    for lst in by_id.values():
        lst.sort()
    stale = 0
    last_old = {}  # (id, version) -> latest start of a read that saw an older version
    for i, seen, start in reads:
        for t, v in by_id.get(i, ()):
            if v > seen and t < start:
                last_old[(i, v)] = max(last_old.get((i, v), t), start)
                if start - t > window_s:
                    stale += 1
                    break
    delays = sorted(max(0.0, last_old.get((i, v), t) - t) * 1000 for i, v, t in writes)
    return stale, delays


def pct(sorted_values, p):
    """The p-th percentile of sorted values (nearest rank)."""
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, int(round(p / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]
