#!/usr/bin/env python3
"""ORM-shaped benchmark of the MySQL query cache (issue 13, item 7): a small web application's
requests through SQLAlchemy 2.x sessions (PyMySQL, autocommit off: every read inside a
transaction), run unchanged against
  off          MariaDB directly, its query cache OFF (query_cache_type=OFF, size 0)
  on           MariaDB directly, its query cache ON (query_cache_size=--qc-size)
  <policy>     sqlcached's MySQL proxy with --query-cache-in-transactions <policy>
               (never, read-only or until-write; MariaDB's query cache off)
A benchmark, not a test: it asserts nothing. See bench/orm/README.md for what it measures.

    python3 bench/orm/orm_bench.py                                   # 3 reps x 1 4 16 threads x 3 configs
    python3 bench/orm/orm_bench.py --duration 3 --reps 1 --threads "1 4"   # smoke run, ~1 minute
"""
import argparse
import hashlib
import os
import random
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "cluster"))
sys.path.insert(0, str(ROOT / "bench" / "cluster"))

from cluster_freshness import GOAL, Versions  # noqa: E402
from scale_lib import fmt, load1, mm, pct, table  # noqa: E402

try:
    import pymysql
    import sqlalchemy as sa
    from sqlalchemy import BigInteger, ForeignKey, String, select
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column
except ImportError as e:  # pragma: no cover - a clear message instead of a traceback
    sys.exit(f"orm_bench: {e}; install the test dependencies: python3 -m pip install -r tests/requirements.txt")


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "users"
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str] = mapped_column(String(120), unique=True)
    name: Mapped[str] = mapped_column(String(64))
    karma: Mapped[int]
    ver: Mapped[int] = mapped_column(BigInteger)  # written only by the background writer


class Post(Base):
    __tablename__ = "posts"
    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    title: Mapped[str] = mapped_column(String(100))
    body: Mapped[str] = mapped_column(String(400))
    score: Mapped[int]


SCHEMA = """
CREATE DATABASE orm;
USE orm;
CREATE TABLE users (id INT PRIMARY KEY, email VARCHAR(120) NOT NULL UNIQUE, name VARCHAR(64) NOT NULL,
  karma INT NOT NULL, ver BIGINT NOT NULL) ENGINE=InnoDB;
CREATE TABLE posts (id INT AUTO_INCREMENT PRIMARY KEY, user_id INT NOT NULL, title VARCHAR(100) NOT NULL,
  body VARCHAR(400) NOT NULL, score INT NOT NULL, KEY ix_posts_user_id (user_id),
  FOREIGN KEY (user_id) REFERENCES users (id)) ENGINE=InnoDB;
INSERT INTO users SELECT seq, CONCAT('u', seq, '@example.org'), CONCAT('user ', seq), seq % 100, 0 FROM seq_1_to_{users};
INSERT INTO posts (user_id, title, body, score)
  SELECT 1 + (seq * 7919) % {users}, CONCAT('post ', seq), REPEAT(CHAR(97 + seq % 26), 200), (seq * 37) % 1000
  FROM seq_1_to_{posts};
"""


def log(msg):
    """A progress line on stderr (stdout is the report)."""
    print(f"[orm_bench] {msg}", file=sys.stderr, flush=True)


def pick_user(rnd, users, skew):
    """A user id with a skewed popularity: P(id <= x * users) = x ** (1 / skew)."""
    return 1 + int(users * rnd.random() ** skew) % users


class Point:
    """What one measured run (config, threads, repetition) collected."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies = []
        self.requests = 0
        self.checked = 0
        self.stale = []  # (row, version read, seconds stale) beyond GOAL + margin
        self.errors = []
        self.measuring = False

    def check(self, row, got, t0, versions, margin):
        """A read of row `row` that returned version `got` in a request started at t0."""
        age = versions.stale_for(row, got, t0)
        with self.lock:
            if self.measuring:
                self.checked += 1
                if age > GOAL + margin:
                    self.stale.append((row, got, round(age, 3)))


def read_request(s, rnd, args, point, versions, t0):
    """One page: a user by primary key, their 10 newest posts (FK, ORDER BY, LIMIT), and
    another user looked up by unique email; the users' versions are checked for freshness."""
    uid = pick_user(rnd, args.users, args.skew)
    u = s.get(User, uid)
    s.scalars(select(Post).where(Post.user_id == uid).order_by(Post.id.desc()).limit(10)).all()
    other = pick_user(rnd, args.users, args.skew)
    o = s.scalars(select(User).where(User.email == f"u{other}@example.org")).one()
    point.check(uid, u.ver, t0, versions, args.margin)
    point.check(other, o.ver, t0, versions, args.margin)


def write_request(s, rnd, args):
    """A write: bump a user's karma (ORM unit of work) or add a post, committed."""
    uid = pick_user(rnd, args.users, args.skew)
    if rnd.random() < 0.5:
        u = s.get(User, uid)
        u.karma += 1
    else:
        s.add(Post(user_id=uid, title="new post", body="x" * 200, score=rnd.randrange(1000)))
    s.commit()


def worker(engine, seed, args, point, versions, stop):
    """Requests back to back, each in a Session of its own, until `stop`."""
    rnd = random.Random(seed)
    try:
        while not stop.is_set():
            t0 = time.monotonic()
            with Session(engine) as s:
                if rnd.random() * 100 < args.write_pct:
                    write_request(s, rnd, args)
                else:
                    read_request(s, rnd, args, point, versions, t0)
            dt = time.monotonic() - t0
            with point.lock:
                if point.measuring:
                    point.requests += 1
                    point.latencies.append(dt)
    except Exception as e:  # noqa: BLE001 - reported, and the run stops
        point.errors.append(f"worker: {e!r}")
        stop.set()


class Writer(threading.Thread):
    """Writes straight on MariaDB (not through any proxy) at a fixed rate: `UPDATE users SET
    ver = ver + 1` of a skewed random user, recording each version with the time its OK
    arrived in `versions`; `recent` holds the last rows written, for the checker."""

    def __init__(self, port, args, versions):
        super().__init__(daemon=True, name="writer")
        self.conn = pymysql.connect(host="127.0.0.1", port=port, user=args.db_user, password=args.db_password,
                                    database="orm", autocommit=True)
        self.args, self.versions = args, versions
        self.recent = []
        self.ver = {}
        self.writes = 0
        self.error = None
        self.stop = threading.Event()

    def run(self):
        """Paced writes until stop (a write that falls behind is not made up for in a burst)."""
        rnd = random.Random(4242)
        interval = 1.0 / self.args.write_rate
        next_t = time.monotonic()
        try:
            with self.conn.cursor() as cur:
                while not self.stop.is_set():
                    row = pick_user(rnd, self.args.users, self.args.skew)
                    v = self.ver.get(row, 0) + 1
                    cur.execute("UPDATE users SET ver = %s WHERE id = %s", (v, row))
                    self.versions.add(row, v, time.monotonic())
                    self.ver[row] = v
                    self.recent = (self.recent + [row])[-20:]
                    self.writes += 1
                    next_t = max(next_t + interval, time.monotonic() - interval)
                    self.stop.wait(max(0.0, next_t - time.monotonic()))
        except Exception as e:  # noqa: BLE001 - reported at the end
            self.error = repr(e)
        finally:
            self.conn.close()


def checker(engine, writer, args, point, versions, stop):
    """Reads the rows the writer changed last, through the target, in ORM sessions (as the
    application does), and checks each against the versions acknowledged before it started."""
    rnd = random.Random(77)
    try:
        while not stop.is_set():
            recent = writer.recent
            if not recent:
                time.sleep(0.01)
                continue
            row = rnd.choice(recent)
            t0 = time.monotonic()
            with Session(engine) as s:
                got = s.scalar(select(User.ver).where(User.id == row))
            point.check(row, got, t0, versions, args.margin)
            time.sleep(0.002)
    except Exception as e:  # noqa: BLE001
        point.errors.append(f"checker: {e!r}")
        stop.set()


class Bench:
    """The servers of one run: a MariaDB (query cache switchable at run time), a proxy per
    policy in --configs, the background writer, and the counters read around each point."""

    def __init__(self, args, work):
        from harness.mariadb import MariaDB

        self.args = args
        self.db = MariaDB(base=work / "mariadb", extra_args=f"--query-cache-type=1 --query-cache-size={args.qc_size} "
                                                             f"--innodb-buffer-pool-size={args.buffer_pool}")
        args.db_user, args.db_password = self.db.user, self.db.password
        self.proxies = {}
        self.versions = Versions()
        self.writer = None

    def start(self, work):
        """MariaDB with the schema, the proxies (binlog connected), the writer."""
        from harness.mysqlproxy import start_proxy

        log(f"starting MariaDB in {self.db.base}")
        self.db.start()
        posts = self.args.users * self.args.posts_per_user
        log(f"loading {self.args.users:,} users and {posts:,} posts")
        self.db.sql(SCHEMA.format(users=self.args.users, posts=posts))
        for c in self.args.configs:
            if c in ("off", "on"):
                continue
            self.proxies[c] = start_proxy(self.db, "-t", str(self.args.proxy_threads), "--query-cache-size",
                                          self.args.proxy_cache_size, "--query-cache-in-transactions", c,
                                          log=work / f"sqlcached-{c}.log")
            log(f"proxy {c}: mysql {self.proxies[c].mysql_addr}, stats port {self.proxies[c].port}")
        self.writer = Writer(self.db.port, self.args, self.versions)
        self.writer.start()

    def stop(self):
        """Writer, proxies, MariaDB."""
        if self.writer:
            self.writer.stop.set()
            self.writer.join(10)
        for px in self.proxies.values():
            px.stop()
        self.db.close()

    def digest(self, config, top=8):
        """The proxy's `stats queries` (per statement digest, whole run) as table rows: the
        `top` statements by count that are reads or writes (not SET / COMMIT / ROLLBACK)."""
        with socket.create_connection(("127.0.0.1", self.proxies[config].port), timeout=10) as sk:
            sk.sendall(b"stats queries\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                chunk = sk.recv(65536)
                if not chunk:
                    raise ConnectionError("stats queries: connection closed")
                buf += chunk
        rows = {}
        for line in buf.decode().splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and parts[0] == "STAT" and parts[1].startswith("query:"):
                _, rank, field = parts[1].split(":", 2)
                rows.setdefault(int(rank), {})[field] = parts[2]
        out = []
        for r in sorted(rows.values(), key=lambda r: -int(r.get("count", 0))):
            if r.get("text", "").split(" ")[0].upper() in ("SELECT", "INSERT", "UPDATE", "DELETE"):
                out.append([r["text"][:90].replace("|", "\\|"), r.get("count"), r.get("hits"), r.get("misses"),
                            r.get("not_cached"), r.get("not_cached_reason") or "-", r.get("invalidations", "-")])
        return out[:top]

    def status(self, *names):
        """MariaDB's SHOW GLOBAL STATUS values of `names`."""
        out = self.db.sql("SHOW GLOBAL STATUS WHERE Variable_name IN (%s)" % ",".join(f"'{n}'" for n in names))
        return {k: int(v) for k, v in (line.split("\t") for line in out.splitlines())}

    def counters(self, config):
        """(hits, misses) so far for config: the proxy's Qcache_hits and Qcache_inserts +
        Qcache_not_cached, or MariaDB's Qcache_hits and Com_select."""
        if config in self.proxies:
            s = self.proxies[config].stats()
            return s["Qcache_hits"], s["Qcache_inserts"] + s["Qcache_not_cached"]
        st = self.status("Qcache_hits", "Com_select")
        return st["Qcache_hits"], st["Com_select"]

    def server_pids(self, config):
        """The processes serving config: MariaDB, and the proxy in front of it."""
        pids = [int((Path(self.db.base) / "mysqld.pid").read_text().strip())]
        if config in self.proxies:
            pids.append(self.proxies[config].proc.pid)
        return pids

    def port_for(self, config):
        """The MySQL port the application uses in config; switches MariaDB's query cache."""
        if config == "on":
            self.db.sql(f"SET GLOBAL query_cache_size = {parse_size(self.args.qc_size)}; SET GLOBAL query_cache_type = ON")
        else:
            self.db.sql("SET GLOBAL query_cache_type = OFF; SET GLOBAL query_cache_size = 0")
        return self.proxies[config].mysql_port if config in self.proxies else self.db.port

    def point(self, config, threads):
        """One measured run: warmup, then --duration seconds of `threads` workers and the
        checker; returns a dict of figures."""
        a = self.args
        port = self.port_for(config)
        url = f"mysql+pymysql://{self.db.user}:{self.db.password}@127.0.0.1:{port}/orm"
        engine = sa.create_engine(url, pool_size=threads, max_overflow=0)
        check_engine = sa.create_engine(url, pool_size=1, max_overflow=0)
        point, stop = Point(), threading.Event()
        seeds = random.Random(threads)  # the same request streams for every config
        ts = [threading.Thread(target=worker, args=(engine, seeds.random(), a, point, self.versions, stop), daemon=True)
              for _ in range(threads)]
        ts.append(threading.Thread(target=checker, args=(check_engine, self.writer, a, point, self.versions, stop),
                                   daemon=True))
        for t in ts:
            t.start()
        stop.wait(a.warmup)
        h0, m0 = self.counters(config)
        servers = self.server_pids(config)
        cpu0 = [cpu_seconds(p) for p in servers] + [time.process_time()]
        with point.lock:
            point.measuring = True
        t_start = time.monotonic()
        stop.wait(a.duration)
        with point.lock:
            point.measuring = False
        elapsed = time.monotonic() - t_start
        cpu1 = [cpu_seconds(p) for p in servers] + [time.process_time()]
        h1, m1 = self.counters(config)
        stop.set()
        for t in ts:
            t.join(30)
        engine.dispose()
        check_engine.dispose()
        if point.errors:
            raise RuntimeError(f"{config}, {threads} threads: {point.errors[:3]}")
        if self.writer.error:
            raise RuntimeError(f"background writer: {self.writer.error}")
        hits, misses = h1 - h0, m1 - m0
        lat = point.latencies
        n = max(point.requests, 1)
        server_cpu = sum(b - a for a, b in zip(cpu0[:-1], cpu1[:-1])) * 1000 / n
        client_cpu = (cpu1[-1] - cpu0[-1]) * 1000 / n
        return {"rps": point.requests / elapsed, "p50": pct(lat, 50) * 1000, "p99": pct(lat, 99) * 1000,
                "server_cpu": server_cpu, "client_cpu": client_cpu,
                "hit": 100 * hits / (hits + misses) if config != "off" and hits + misses else None,
                "stale": len(point.stale), "checked": point.checked, "stale_examples": point.stale[:3]}


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far (from /proc; 0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_size(s):
    """'64M' -> bytes."""
    s = str(s).strip().lower()
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(s[-1:], 1)
    return int(s[:-1] if s[-1:] in "kmg" else s) * mult


def report(args, runs, meta):
    """The markdown report: one row per thread count and config, min-max over repetitions."""
    rows = []
    for t in args.threads:
        for c in args.configs:
            pts = [r[(c, t)] for r in runs]
            ratio = [r[(c, t)]["rps"] / r[("off", t)]["rps"] for r in runs] if "off" in args.configs else []
            rows.append([t, c, mm([p["rps"] for p in pts], 0), mm([p["p50"] for p in pts], 2),
                         mm([p["p99"] for p in pts], 1),
                         mm([p["hit"] for p in pts], 1) if c != "off" else "-",
                         mm([p["server_cpu"] for p in pts], 2), mm([p["client_cpu"] for p in pts], 2),
                         f"{mm([p['stale'] for p in pts], 0)} / {fmt(sum(p['checked'] for p in pts) / len(pts), 0)}",
                         mm(ratio, 2) if ratio else "-"])
    out = [f"# ORM benchmark: SQLAlchemy sessions against MariaDB QC off / on and sqlcached ({meta['ts']})", "",
           f"MariaDB {meta['mariadb']} (binlog ROW, buffer pool {args.buffer_pool}, query_cache_size {args.qc_size} when on); "
           f"sqlcached {meta['sha']} -t {args.proxy_threads} --query-cache-size {args.proxy_cache_size}; "
           f"SQLAlchemy {sa.__version__}, PyMySQL {pymysql.VERSION_STRING}, Python {sys.version.split()[0]}.",
           f"{args.users:,} users, {args.users * args.posts_per_user:,} posts; skew {args.skew} (P(id <= x*users) = x^(1/{args.skew})); "
           f"requests: {100 - args.write_pct:g}% reads (user by id, 10 newest posts by FK, a user by email), "
           f"{args.write_pct:g}% writes (karma + 1 or a new post), one Session (transaction) each.",
           f"Background writer: {args.write_rate:g} updates/s straight on MariaDB ({meta['writes']:,} in {meta['elapsed']:.0f} s). "
           f"{args.duration:g} s measured after {args.warmup:g} s warmup per point, {args.reps} repetition(s) "
           f"(configs interleaved), min-max shown. {os.cpu_count()} CPUs shared by everything, load1 {meta['load']}.",
           "", "req/s: requests per second; p50/p99: per request (ms); hit %: sqlcached's Qcache_hits / (hits + "
           "inserts + not_cached), MariaDB's Qcache_hits / (Qcache_hits + Com_select); stale: reads returning a version "
           f"older than one acknowledged more than {GOAL * 1000:.0f} + {args.margin * 1000:.0f} ms before the request "
           "started / reads checked (mean per point); server / client CPU: CPU ms per request of MariaDB (and "
           "sqlcached, for a proxy config) / of this Python process (the ORM, its threads and the checker); vs off: "
           "req/s over QC-off's in the same repetition.", "",
           table(["threads", "config", "req/s", "p50 ms", "p99 ms", "hit %", "server CPU", "client CPU",
                  "stale / checked", "vs off"], rows), ""]
    for c, rows in meta["digests"].items():
        out += [f"sqlcached `stats queries` of {c} (whole run, warmups included): why reads are or are not hits", "",
                table(["statement", "count", "hits", "misses", "not cached", "reason", "invalidations"], rows), ""]
    stale = [(c, t, p["stale_examples"]) for r in runs for (c, t), p in r.items() if p["stale"]]
    if stale:
        out += ["Stale reads (config, threads, first (row, version, seconds stale)):", ""]
        out += [f"- {c}, {t}: {ex}" for c, t, ex in stale[:10]] + [""]
    return "\n".join(out)


def parse_args(argv=None):
    """Command line (see --help)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", default="1 4 16", help='worker thread counts (default "1 4 16")')
    p.add_argument("--configs", default="off on until-write",
                   help='what to run against: off, on, never, read-only, until-write (default "off on until-write")')
    p.add_argument("--duration", type=float, default=10, help="measured seconds per point (default 10)")
    p.add_argument("--warmup", type=float, default=3, help="unmeasured seconds before each point (default 3)")
    p.add_argument("--reps", type=int, default=3, help="repetitions of every point (default 3)")
    p.add_argument("--users", type=int, default=20000, help="rows in users (default 20000)")
    p.add_argument("--posts-per-user", type=int, default=5, help="posts per user (default 5)")
    p.add_argument("--skew", type=float, default=3.0, help="popularity skew of user ids (default 3; 1 = uniform)")
    p.add_argument("--write-pct", type=float, default=2.0, help="percent of requests that write (default 2)")
    p.add_argument("--write-rate", type=float, default=50, help="background writer updates/s on MariaDB (default 50)")
    p.add_argument("--stale-margin-ms", type=float, default=50,
                   help="a read counts as stale beyond 100 ms + this (default 50)")
    p.add_argument("--qc-size", default="64M", help="MariaDB query_cache_size when on (default 64M)")
    p.add_argument("--buffer-pool", default="256M", help="innodb_buffer_pool_size (default 256M)")
    p.add_argument("--proxy-threads", type=int, default=2, help="sqlcached -t (default 2)")
    p.add_argument("--proxy-cache-size", default="256m", help="sqlcached --query-cache-size (default 256m)")
    p.add_argument("--out", help="also write the report here (default bench/results/orm-<time>.md)")
    a = p.parse_args(argv)
    a.threads = [int(x) for x in a.threads.split()]
    a.configs = a.configs.split()
    a.margin = a.stale_margin_ms / 1000
    bad = [c for c in a.configs if c not in ("off", "on", "never", "read-only", "until-write")]
    if bad or not a.configs:
        p.error(f"unknown config(s) {bad}: use off, on, never, read-only, until-write")
    if not 1 <= a.reps <= 20 or not a.threads or min(a.threads) < 1 or a.duration <= 0 or a.write_rate <= 0:
        p.error("--reps must be 1..20, --threads positive integers, --duration and --write-rate > 0")
    return a


def main():
    """Start the servers, run every point, print (and write) the report."""
    args = parse_args()
    binary = os.environ.get("SQLCACHED_BIN", str(ROOT / "target" / "release" / "sqlcached"))
    needs_proxy = any(c not in ("off", "on") for c in args.configs)
    if needs_proxy and not os.access(binary, os.X_OK):
        sys.exit(f"orm_bench: no sqlcached binary at {binary}: build it (cargo build --release -p sqlcached) "
                 "or set SQLCACHED_BIN")
    if not (shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists()):
        sys.exit("orm_bench: mariadbd is not installed (apt-get install mariadb-server)")
    work = Path(tempfile.mkdtemp(prefix="orm-bench-"))
    sha = "-"
    if needs_proxy:  # a private copy: a rebuild during the run cannot swap the binary
        shutil.copy2(binary, work / "sqlcached")
        os.environ["SQLCACHED_BIN"] = str(work / "sqlcached")
        sha = hashlib.sha256((work / "sqlcached").read_bytes()).hexdigest()[:12]
    bench = Bench(args, work)
    runs = []
    t_begin = time.monotonic()
    try:
        bench.start(work)
        for rep in range(args.reps):
            run = {}
            for t in args.threads:
                for c in args.configs:
                    r = bench.point(c, t)
                    run[(c, t)] = r
                    log(f"rep {rep + 1} threads {t} {c}: {r['rps']:.0f} req/s, p50 {r['p50']:.2f} ms, "
                        f"p99 {r['p99']:.1f} ms, hit {fmt(r['hit'], 1)} %, stale {r['stale']}/{r['checked']}")
            runs.append(run)
        meta = {"ts": time.strftime("%Y%m%d-%H%M%S"), "sha": sha, "writes": bench.writer.writes,
                "elapsed": time.monotonic() - t_begin, "load": load1(),
                "mariadb": bench.db.sql("SELECT VERSION()").strip(),
                "digests": {c: bench.digest(c) for c in bench.proxies}}
    finally:
        bench.stop()
        shutil.rmtree(work, ignore_errors=True)
    text = report(args, runs, meta)
    print(text)
    out = Path(args.out) if args.out else ROOT / "bench" / "results" / f"orm-{meta['ts']}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text + "\n")
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
