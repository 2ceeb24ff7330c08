"""bench/cluster/scale.py's helpers: /proc readings, small memcached and MySQL clients, and
the statistics and markdown tables of the report (split from scale.py to keep it one concern:
the measurements)."""
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

CLK_TCK = os.sysconf("SC_CLK_TCK")
DB_USER, DB_PASSWORD = "sqlcached", "sqlcached-test"

# ---------------------------------------------------------------- /proc readings


def proc_cpu_s(pid):
    """utime + stime of a process (every thread, dead ones included), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def tasks_cpu_s(pid):
    """CPU of a process's live threads from schedstat (ns resolution), seconds."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total / 1e9


def thread_cpu_s(pid, tid):
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
            return int(f.read().split()[0]) / 1e9
    except OSError:
        return 0.0


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def machine_busy():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    idle = v[3] + v[4]
    return sum(v) - idle, sum(v)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


# ---------------------------------------------------------------- small clients


def mc_stats(port):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("stats: closed")
            buf += chunk
    out = {}
    for line in buf.decode().splitlines():
        p = line.split(" ", 2)
        if len(p) == 3 and p[0] == "STAT":
            try:
                out[p[1]] = int(p[2])
            except ValueError:
                out[p[1]] = p[2]
    return out


def mc_fill(port, keys, value=b"cached"):
    """`set` every key (noreply, pipelined), then a meta no-op to know they were applied."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        chunk = []
        for i, k in enumerate(keys):
            chunk.append(b"set %s 0 0 %d noreply\r\n%s\r\n" % (k.encode(), len(value), value))
            if len(chunk) == 5000 or i == len(keys) - 1:
                s.sendall(b"".join(chunk))
                chunk = []
        s.sendall(b"mn\r\n")
        buf = b""
        while not buf.endswith(b"MN\r\n"):
            c = s.recv(65536)
            if not c:
                raise ConnectionError("fill: closed")
            buf += c


def connect(port, autocommit=True):
    import pymysql

    return pymysql.connect(host="127.0.0.1", port=port, user=DB_USER, password=DB_PASSWORD, autocommit=autocommit,
                           connect_timeout=10, read_timeout=300, write_timeout=300)


def slave_status(port):
    """SHOW SLAVE STATUS of the MariaDB on `port` as {column: value}."""
    import pymysql

    c = connect(port)
    try:
        with c.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SHOW SLAVE STATUS")
            return {k: str(v) for k, v in (cur.fetchone() or {}).items()}
    finally:
        c.close()


class Admin:
    """One PyMySQL connection to MariaDB for the readings (GTID, binlog position, TIDs)."""

    def __init__(self, port):
        self.c = connect(port)

    def q(self, sql):
        with self.c.cursor() as cur:
            cur.execute(sql)
            return cur.fetchall()

    def seq(self):
        pos = self.q("SELECT @@GLOBAL.gtid_binlog_pos")[0][0] or ""
        return sum(int(g.split("-")[2]) for g in pos.split(",") if g)

    def binlog_pos(self):
        r = self.q("SHOW MASTER STATUS")[0]
        return r[0], int(r[1])

    def dump_tids(self):
        return [int(r[0]) for r in self.q("SELECT TID FROM information_schema.PROCESSLIST WHERE COMMAND = 'Binlog Dump'")]


# ---------------------------------------------------------------- statistics and tables


def pct(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100 * len(v) + 0.5)) - 1))
    return v[k]


def fmt(x, nd=None):
    if x is None or (isinstance(x, float) and x != x):
        return "-"
    if nd is None:
        nd = 0 if abs(x) >= 100 else (1 if abs(x) >= 10 else 2)
    return f"{x:,.{nd}f}"


def mm(values, nd=None):
    """min-max of the repetitions ("a" when they agree to the shown precision)."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and v != v)]
    if not vals:
        return "-"
    lo, hi = fmt(min(vals), nd), fmt(max(vals), nd)
    return lo if lo == hi else f"{lo}-{hi}"


def table(headers, rows):
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def linfit(xs, ys):
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return my - b * mx, b
