"""What happens at scale: binlog fan-out to N followers, one follower's invalidation
throughput, memory per node. Real MariaDB 10.11 (Debian's mariadbd, tests/harness/mariadb.py)
and real sqlcached processes (tests/harness/servers.py), every measurement in one run.

    python3 bench/cluster/scale.py            # the full run: about 8 minutes on 2 CPUs
    python3 bench/cluster/scale.py --quick    # smoke test (N = 0, 1, 2; one repetition)

Writes the report (markdown tables) to stdout and to bench/results/cluster-scale.md.
What each part measures and how: bench/cluster/README.md.

Parts:
1. fan-out: N = 0 (baseline), 1, 2, 4, 8, 16 sqlcached processes follow one MariaDB, each
   with one `--invalidate 'bench.t=t:{id}'` rule and its own --mysql-server-id, while a writer
   (a separate process) applies single-row UPDATEs straight on MariaDB at 500/s and at its
   max rate. Per window: MariaDB's CPU (/proc/<mariadbd>/stat utime+stime), the CPU of its
   Binlog Dump threads (/proc/<mariadbd>/task/<TID>/schedstat, TIDs from
   information_schema.PROCESSLIST), a follower's CPU per 1000 binlog events (schedstat of all
   its threads / `binlog_events`), the invalidation delay on follower #1 (a prober process:
   set a key, UPDATE its row, poll until get misses), how long the slowest follower needed to
   read everything after the writer stopped, and the largest `binlog_lag_ms` seen.
   Then the same delay through a relay (a MariaDB replica with log_slave_updates).
2. throughput: one follower, a 2-template rule on a 100,000-row table; one UPDATE of all
   rows, and 10 UPDATEs of 10,000; time from the (last) statement's OK until `invalidate_keys`
   reached 2 keys per row; with holds (default 2000 ms) and with --invalidate-hold-ms 0.
3. memory: RSS of sqlcached without rules, with rules + binlog feed (idle, after the fan-out
   windows), after 100k keys were set and after each 100k-row burst; mariadbd's RSS per replica.
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))

DB_USER, DB_PASSWORD = "sqlcached", "sqlcached-test"
WRITER_ROWS = 1000  # the writer updates ids 1..1000 of bench.t
PROBE_BASE, PROBE_ROWS = 2001, 600  # the prober's rows: each is reused only after > 2 s (hold)
BIG_ROWS = 100_000
T0 = time.monotonic()

from scale_lib import (  # noqa: E402
    CLK_TCK,
    proc_cpu_s,
    tasks_cpu_s,
    thread_cpu_s,
    rss_mib,
    load1,
    machine_busy,
    uptime,
    mc_stats,
    mc_fill,
    connect,
    slave_status,
    Admin,
    pct,
    fmt,
    mm,
    table,
    linfit,
)


def log(msg):
    el = int(time.monotonic() - T0)
    print(f"[scale {el // 60:02d}:{el % 60:02d}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- writer and prober (child processes)


def writer_main(port, rate, duration, threads, start_at):
    """Single-row UPDATEs of bench.t: `rate`/s paced (rate > 0), else as fast as `threads`
    connections go (each thread its own ids: no lock waits). Prints JSON."""
    import resource

    conns = [connect(port) for _ in range(threads)]
    counts = [0] * threads
    errors = []

    def run(k):
        cur = conns[k].cursor()
        ids = [i for i in range(1, WRITER_ROWS + 1) if i % threads == k]
        n = 0
        t0 = start_at
        end = start_at + duration
        per = rate / threads if rate > 0 else 0
        try:
            while True:
                now = time.time()
                if now >= end:
                    break
                if per:
                    due = t0 + n / per
                    if due > now:
                        time.sleep(due - now)
                        continue
                cur.execute("UPDATE bench.t SET v = v + 1 WHERE id = %s", (ids[n % len(ids)],))
                n += 1
        except Exception as e:  # noqa: BLE001 - reported
            errors.append(repr(e))
        counts[k] = n

    time.sleep(max(0.0, start_at - time.time()))
    ts = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"updates": sum(counts), "errors": errors, "cpu_s": ru.ru_utime + ru.ru_stime}))


def prober_main(db_port, mc_port, duration, start_at, first):
    """Cache a key, UPDATE its row on MariaDB, poll until `get` misses: ms per probe. Prints JSON."""
    import resource

    from pymemcache.client.base import Client

    cache = Client(("127.0.0.1", mc_port), connect_timeout=5, timeout=5)
    conn = connect(db_port)
    cur = conn.cursor()
    delays, lost, n = [], 0, first
    time.sleep(max(0.0, start_at - time.time()))
    end = start_at + duration
    while time.time() < end:
        i = PROBE_BASE + n % PROBE_ROWS
        n += 1
        key = f"t:{i}"
        time.sleep(0.005)
        tries = 0
        while cache.set(key, b"cached", expire=300) and cache.get(key) is None and tries < 300:
            time.sleep(0.01)  # still held by an earlier invalidation of this row
            tries += 1
        cur.execute("UPDATE bench.t SET v = v + 1 WHERE id = %s", (i,))
        t0 = time.monotonic()
        while cache.get(key) is not None:
            if time.monotonic() - t0 > 5:
                lost += 1
                break
            time.sleep(0.0005)
        else:
            delays.append((time.monotonic() - t0) * 1000)
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"delays": delays, "lost": lost, "next": n, "cpu_s": ru.ru_utime + ru.ru_stime}))


def child(*args):
    return subprocess.Popen([sys.executable, str(Path(__file__).resolve()), *map(str, args)],
                            stdout=subprocess.PIPE, text=True)


# ---------------------------------------------------------------- the run


class Run:
    def __init__(self, args):
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="sqlcached-scale-"))
        self.procs = []  # every sqlcached we started (stopped at the end)
        self.loads = []  # (label, load1 before, load1 after)
        self.notes = []  # surprises worth printing
        self.mem = {}

    # -- sqlcached processes

    def start_follower(self, db_port, server_id, rules, extra=(), wait=True):
        from harness.servers import start_sqlcached

        args = ["--mysql-backend", f"127.0.0.1:{db_port}", "--mysql-user", DB_USER,
                "--mysql-server-id", str(server_id)]
        for r in rules:
            args += ["--invalidate", r]
        srv = start_sqlcached(*args, *extra, wait=False, log=str(self.tmp / f"sqlcached-{server_id}.log"),
                              env={"SQLCACHED_MYSQL_PASSWORD": DB_PASSWORD})
        self.procs.append(srv)
        if wait:
            self.wait_online(srv)
        return srv

    def wait_online(self, srv, timeout=30):
        srv.wait_ready(timeout)
        deadline = time.monotonic() + timeout
        while mc_stats(srv.port).get("binlog_connected") != 1:
            if time.monotonic() > deadline:
                raise TimeoutError(f"follower on {srv.port} never connected: {srv.run_log()[-2000:]}")
            time.sleep(0.05)

    def stop(self, srv):
        srv.stop()
        if srv in self.procs:
            self.procs.remove(srv)

    def cleanup(self):
        for srv in list(self.procs):
            try:
                srv.stop()
            except Exception:  # noqa: BLE001
                pass
        self.procs.clear()

    # -- part 3a: sqlcached without rules

    def plain_rss(self):
        from harness.servers import start_sqlcached

        srvs = [start_sqlcached() for _ in range(self.args.reps)]
        self.procs += srvs
        time.sleep(2)
        self.mem["plain"] = [rss_mib(s.proc.pid) for s in srvs]
        for s in srvs:
            self.stop(s)

    # -- part 1: fan-out

    def window(self, db, admin, followers, dump_tids, rate, duration, probe_first):
        """One measured window; returns a dict of readings."""
        l0 = load1()
        fol_cpu0 = [tasks_cpu_s(f.proc.pid) for f in followers]
        fol_ev0 = [mc_stats(f.port)["binlog_events"] for f in followers]
        start_at = time.time() + 0.6
        w = child("--writer", db.port, rate, duration, 4 if rate > 0 else 2, start_at)
        p = child("--prober", db.port, followers[0].port, duration, start_at, probe_first) if followers else None
        seq0 = admin.seq()
        file0, pos0 = admin.binlog_pos()
        time.sleep(max(0.0, start_at - time.time()))
        m0, t0 = proc_cpu_s(db.pid), time.monotonic()
        d0 = {t: thread_cpu_s(db.pid, t) for t in dump_tids}
        b0 = machine_busy()
        me0 = sum(os.times()[:2])
        lag = 0
        while time.monotonic() < t0 + duration:
            time.sleep(0.25)
            for f in followers:
                lag = max(lag, mc_stats(f.port).get("binlog_lag_ms", 0))
        m1, t1 = proc_cpu_s(db.pid), time.monotonic()
        d1 = {t: thread_cpu_s(db.pid, t) for t in dump_tids}
        b1 = machine_busy()
        me1 = sum(os.times()[:2])
        wout = json.loads(w.communicate()[0])
        pout = json.loads(p.communicate()[0]) if p else {"delays": [], "lost": 0, "next": probe_first, "cpu_s": 0}
        seq1 = admin.seq()
        file1, pos1 = admin.binlog_pos()
        txns = seq1 - seq0
        # every follower must read 4 events per transaction (GTID, Annotate_rows, Table_map, Update_rows
        # with its Xid counted as the 4th: calibrated in fanout()); wait for the slowest
        want = txns * self.ev_per_txn
        t_stop = time.monotonic()
        catch = 0.0
        behind = []
        while True:
            evs = [mc_stats(f.port)["binlog_events"] - e0 for f, e0 in zip(followers, fol_ev0)]
            if all(e >= want for e in evs):
                catch = time.monotonic() - t_stop
                break
            if time.monotonic() - t_stop > 60:
                behind = [(i + 1, want - e) for i, e in enumerate(evs) if e < want]
                catch = float("nan")
                self.notes.append(f"N={len(followers)} rate={rate}: followers still behind 60 s after the writer "
                                  f"stopped (follower, events missing): {behind}")
                break
            time.sleep(0.01)
        fol_cpu = [tasks_cpu_s(f.proc.pid) - c for f, c in zip(followers, fol_cpu0)]
        fol_ev = [mc_stats(f.port)["binlog_events"] - e for f, e in zip(followers, fol_ev0)]
        l1 = load1()
        el = t1 - t0
        busy = (b1[0] - b0[0]) / max(1, b1[1] - b0[1]) * os.cpu_count() * 100  # % of one CPU
        mdb = (m1 - m0) / el * 100
        dump = sum(d1[t] - d0[t] for t in dump_tids) / el * 100
        fcpu = sum(fol_cpu) / el * 100
        ours = mdb + fcpu + (wout["cpu_s"] + pout["cpu_s"] + me1 - me0) / el * 100
        # a follower's cost per 1000 events: follower #2.. (follower #1 also answers the prober)
        per = [c / e * 1000 * 1000 for c, e in zip(fol_cpu, fol_ev) if e > 0]  # ms per 1000 events
        pure = per[1:] if len(per) > 1 else per
        if wout["errors"]:
            self.notes.append(f"N={len(followers)} rate={rate}: writer errors {wout['errors'][:3]}")
        if pout["lost"]:
            self.notes.append(f"N={len(followers)} rate={rate}: {pout['lost']} probes never saw their key go (5 s)")
        self.loads.append((f"fan-out N={len(followers)} {rate or 'max'}/s", l0, l1))
        return {
            "rate": txns / el, "updates": wout["updates"], "mdb_pct": mdb, "dump_pct": dump,
            "dump_us_per_txn_per_follower": (dump / 100 * el) / max(1, txns) / max(1, len(dump_tids)) * 1e6,
            "fol_ms_per_kev": statistics.median(pure) if pure else float("nan"),
            "fol1_ms_per_kev": per[0] if per else float("nan"),
            "fol_pct_each": statistics.median([c / el * 100 for c in fol_cpu]) if fol_cpu else float("nan"),
            "p50": pct(pout["delays"], 50), "p99": pct(pout["delays"], 99), "probes": len(pout["delays"]),
            "catch_ms": catch * 1000, "lag_ms": lag, "busy_pct": busy, "others_pct": max(0.0, busy - ours),
            "binlog_bps": (pos1 - pos0) / el if file0 == file1 else float("nan"),
            "load": (l0, l1), "next": pout["next"],
        }

    def fanout(self, db):
        a = self.args
        admin = Admin(db.port)
        ns = [0, 1, 2] if a.quick else [0, 1, 2, 4, 8, 16]
        rates = [500, 0]
        followers = []
        results = {}
        self.mem["mariadb_rss"] = {}
        probe_next = 0
        # calibration: binlog events per single-row UPDATE (one follower, 200 updates)
        cal = self.start_follower(db.port, 999, ["bench.t=t:{id}"])
        e0, s0 = mc_stats(cal.port)["binlog_events"], admin.seq()
        c = connect(db.port)
        with c.cursor() as cur:
            for i in range(200):
                cur.execute("UPDATE bench.t SET v = v + 1 WHERE id = %s", (i + 1,))
        c.close()
        time.sleep(0.5)
        self.ev_per_txn = round((mc_stats(cal.port)["binlog_events"] - e0) / (admin.seq() - s0))
        self.stop(cal)
        log(f"calibration: {self.ev_per_txn} binlog events per single-row UPDATE")
        for n in ns:
            new = []
            while len(followers) + len(new) < n:
                sid = 1001 + len(followers) + len(new)
                new.append(self.start_follower(db.port, sid, ["bench.t=t:{id}"], wait=False))
            for f in new:
                self.wait_online(f)
            followers += new
            c0, t0 = [tasks_cpu_s(f.proc.pid) for f in followers], time.monotonic()
            time.sleep(1.5)
            if n:
                el = time.monotonic() - t0
                self.mem.setdefault("idle_cpu", []).extend(
                    (tasks_cpu_s(f.proc.pid) - c) / el * 100 for f, c in zip(followers, c0))
            self.mem.setdefault("idle_rules", []).extend(rss_mib(f.proc.pid) for f in new)
            deadline = time.monotonic() + 10
            while len(tids := admin.dump_tids()) != n and time.monotonic() < deadline:
                time.sleep(0.2)  # a stopped follower's dump thread ends at its next send
            if len(tids) != n:
                self.notes.append(f"N={n}: MariaDB shows {len(tids)} Binlog Dump threads")
            self.mem["mariadb_rss"][n] = rss_mib(db.pid)
            for rep in range(a.reps):
                for rate in rates:
                    r = self.window(db, admin, followers, tids, rate, a.duration, probe_next)
                    probe_next = r["next"]
                    results.setdefault((n, rate), []).append(r)
                    log(f"fan-out N={n} rate={rate or 'max'} rep {rep + 1}: {r['rate']:.0f} UPDATE/s, MariaDB "
                        f"{r['mdb_pct']:.1f}% CPU (dump threads {r['dump_pct']:.2f}%), follower "
                        f"{r['fol_ms_per_kev']:.2f} ms/1000 ev, delay p50 {r['p50']:.2f} p99 {r['p99']:.2f} ms, "
                        f"catch-up {r['catch_ms']:.0f} ms, lag {r['lag_ms']} ms, load {r['load'][0]:.2f}->{r['load'][1]:.2f}")
        self.mem["after_fanout"] = [rss_mib(f.proc.pid) for f in followers]
        for f in followers:
            self.stop(f)
        return results

    # -- part 1b: one relay between MariaDB and the follower

    def relay(self, db):
        from harness.mariadb import MariaDB

        a = self.args
        rel = MariaDB(extra_args="--server-id=2 --log-slave-updates")
        rel.start()
        try:
            # The relay starts at the primary's current GTID with a copy of bench.t (no writes meanwhile).
            pos = Admin(db.port).q("SELECT @@GLOBAL.gtid_binlog_pos")[0][0]
            dump = subprocess.run(["mariadb-dump", "--no-defaults", f"--socket={db.socket}", "-uroot", "bench", "t"],
                                  capture_output=True, text=True, check=True).stdout
            rel.sql("CREATE DATABASE bench")
            rel.sql(dump, database="bench")
            rel.sql(f"""
RESET MASTER;
SET GLOBAL gtid_slave_pos = '{pos}';
CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={db.port}, MASTER_USER='{DB_USER}',
  MASTER_PASSWORD='{DB_PASSWORD}', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
START SLAVE;
""")
            deadline = time.monotonic() + 20
            while True:
                st = slave_status(rel.port)
                if st.get("Slave_IO_Running") == "Yes" and st.get("Slave_SQL_Running") == "Yes":
                    break
                if time.monotonic() > deadline:
                    raise TimeoutError(f"relay: replication not running: {st}")
                time.sleep(0.1)
            relay_pid = int((rel.base / "mysqld.pid").read_text())
            f = self.start_follower(rel.port, 2001, ["bench.t=t:{id}"])
            admin = Admin(db.port)
            out = []
            probe_next = 10_000
            for rep in range(a.reps):
                l0 = load1()
                start_at = time.time() + 0.6
                w = child("--writer", db.port, 500, a.duration, 4, start_at)
                q0 = admin.seq()
                p = child("--prober", db.port, f.port, a.duration, start_at, probe_next)
                time.sleep(max(0.0, start_at - time.time()))
                c0, m0, t0 = proc_cpu_s(relay_pid), proc_cpu_s(db.pid), time.monotonic()
                time.sleep(a.duration)
                c1, m1, t1 = proc_cpu_s(relay_pid), proc_cpu_s(db.pid), time.monotonic()
                wout, pout = json.loads(w.communicate()[0]), json.loads(p.communicate()[0])
                q1 = admin.seq()
                probe_next = pout["next"]
                l1 = load1()
                self.loads.append((f"relay rep {rep + 1}", l0, l1))
                st = slave_status(rel.port)
                if st.get("Slave_SQL_Running") != "Yes" or st.get("Last_Error"):
                    self.notes.append(f"relay rep {rep + 1}: replication {st.get('Slave_SQL_Running')} {st.get('Last_Error')}")
                r = {"rate": (q1 - q0) / (t1 - t0), "p50": pct(pout["delays"], 50),
                     "p99": pct(pout["delays"], 99), "probes": len(pout["delays"]),
                     "relay_pct": (c1 - c0) / (t1 - t0) * 100, "mdb_pct": (m1 - m0) / (t1 - t0) * 100,
                     "load": (l0, l1)}
                if pout["lost"]:
                    self.notes.append(f"relay rep {rep + 1}: {pout['lost']} probes never saw their key go")
                out.append(r)
                log(f"relay rep {rep + 1}: {r['rate']:.0f} UPDATE/s, delay p50 {r['p50']:.2f} p99 {r['p99']:.2f} ms, "
                    f"relay mariadbd {r['relay_pct']:.1f}% CPU, load {l0:.2f}->{l1:.2f}")
            self.stop(f)
            rel.sql("STOP SLAVE")
            return out
        finally:
            rel.close()

    # -- part 2 + 3: one follower's throughput, memory after bursts

    def bursts(self, db, hold_ms):
        a = self.args
        rows = 20_000 if a.quick else BIG_ROWS
        rules = ["bench.big=big:{id}", "bench.big=big_by_email:{email}"]
        extra = [] if hold_ms is None else ["--invalidate-hold-ms", str(hold_ms)]
        f = self.start_follower(db.port, 3001 + (hold_ms is not None), rules, extra)
        label = "holds 2000 ms (default)" if hold_ms is None else f"--invalidate-hold-ms {hold_ms}"
        time.sleep(1.0)
        mem = {"idle": rss_mib(f.proc.pid)}
        conn = connect(db.port)
        k = rows // 1000
        shapes = {f"1x{k}k": [(1, rows)], f"10x{k // 10}k": [(i * rows // 10 + 1, (i + 1) * rows // 10) for i in range(10)],
                  f"1x{k // 2}k": [(1, rows // 2)]}
        out = {name: [] for name in shapes}
        keys = [f"big:{i}" for i in range(1, rows + 1)]
        for rep in range(a.reps):
            for shape, ranges in shapes.items():
                n_rows = sum(hi - lo + 1 for lo, hi in ranges)
                time.sleep(2.2)  # the previous burst's holds are over
                mc_fill(f.port, keys)
                if "filled" not in mem:
                    mem["filled"] = rss_mib(f.proc.pid)
                s0 = mc_stats(f.port)
                l0 = load1()
                c0 = tasks_cpu_s(f.proc.pid)
                m0 = proc_cpu_s(db.pid)
                lag = 0
                tb = time.monotonic()
                t_first = None
                with conn.cursor() as cur:
                    for lo, hi in ranges:
                        cur.execute("UPDATE bench.big SET v = v + 1 WHERE id BETWEEN %s AND %s", (lo, hi))
                        t_first = t_first or time.monotonic()
                t_ok = time.monotonic()
                want = s0["invalidate_keys"] + 2 * n_rows
                while True:
                    st = mc_stats(f.port)
                    lag = max(lag, st.get("binlog_lag_ms", 0))
                    if st["invalidate_keys"] >= want:
                        t_done = time.monotonic()
                        break
                    if time.monotonic() - t_ok > 120:
                        t_done = float("nan")
                        self.notes.append(f"{label} {shape}: only {st['invalidate_keys'] - s0['invalidate_keys']} of "
                                          f"{2 * n_rows} keys invalidated 120 s after the OK")
                        break
                    time.sleep(0.005)
                c1 = tasks_cpu_s(f.proc.pid)
                m1 = proc_cpu_s(db.pid)
                l1 = load1()
                self.loads.append((f"burst {label} {shape} rep {rep + 1}", l0, l1))
                tail = t_done - t_ok
                span = t_done - tb
                r = {"stmt_s": t_ok - tb, "tail_ms": tail * 1000, "span_s": span,
                     "rows_per_s": n_rows / (t_done - t_first),
                     "us_per_key": (c1 - c0) / (2 * n_rows) * 1e6,
                     "cpu_s": c1 - c0, "mdb_cpu_s": m1 - m0,
                     "lag_ms": lag, "hits": st["invalidate_hits"] - s0["invalidate_hits"],
                     "events": st["binlog_events"] - s0["binlog_events"],
                     "holds": st.get("invalidate_holds"), "dropped": st.get("invalidate_holds_dropped", 0) -
                     s0.get("invalidate_holds_dropped", 0), "rss": rss_mib(f.proc.pid), "load": (l0, l1)}
                out[shape].append(r)
                mem.setdefault("after_burst", []).append(r["rss"])
                log(f"burst {label} {shape} rep {rep + 1}: statement {r['stmt_s']:.2f} s, last key "
                    f"{r['tail_ms']:.0f} ms after the OK, {r['rows_per_s']:.0f} rows/s, {r['hits']} hits, sqlcached CPU {r['cpu_s']:.2f} s, "
                    f"lag {lag} ms, holds {r['holds']} (+{r['dropped']} dropped), RSS {r['rss']:.1f} MiB, "
                    f"load {l0:.2f}->{l1:.2f}")
        conn.close()
        self.stop(f)
        return out, mem

    # -- everything

    def main(self):
        from harness.mariadb import MariaDB

        a = self.args
        self.uptime0 = uptime()
        log(f"start: {self.uptime0}")
        self.plain_rss()
        db = MariaDB()
        db.start()
        db.pid = int((db.base / "mysqld.pid").read_text())
        try:
            db.sql(f"""
CREATE DATABASE bench;
CREATE TABLE bench.t (id INT PRIMARY KEY, v INT NOT NULL DEFAULT 0);
INSERT INTO bench.t (id) SELECT seq FROM bench.seq_1_to_{PROBE_BASE + PROBE_ROWS};
CREATE TABLE bench.big (id INT PRIMARY KEY, email VARCHAR(64) NOT NULL, v INT NOT NULL DEFAULT 0);
INSERT INTO bench.big (id, email) SELECT seq, CONCAT('user', seq, '@example.org') FROM bench.seq_1_to_{BIG_ROWS};
""")
            self.fan = self.fanout(db)
            self.rel = self.relay(db) if not a.no_relay else []
            self.burst, self.mem["burst"] = self.bursts(db, None)
            self.burst0, self.mem["burst0"] = self.bursts(db, 0)
            err = (db.base / "error.log").read_text(errors="replace")
            self.mdb_errors = [line for line in err.splitlines() if "[ERROR]" in line or "[Warning]" in line]
        finally:
            self.cleanup()
            db.close()
        self.uptime1 = uptime()
        log(f"end: {self.uptime1}")
        return self.report()

    def report(self):
        a = self.args
        L = []
        L.append("# What happens at scale: binlog fan-out, invalidation throughput, memory per node\n")
        L.append(f"Measured {time.strftime('%Y-%m-%d %H:%M')} with `python3 bench/cluster/scale.py"
                 f"{' ' + ' '.join(sys.argv[1:]) if sys.argv[1:] else ''}` on {os.cpu_count()} CPUs, MariaDB "
                 f"{self.mdb_version} (Debian) and sqlcached {self.sqlcached_id}, every process on the same "
                 f"machine. {a.reps} repetitions of each measurement, shown as min-max; windows of {a.duration:g} s.\n")
        L.append(f"Machine load: before `{self.uptime0}`; after `{self.uptime1}`. 1-minute load before/after each "
                 f"window: {min(x[1] for x in self.loads):.2f}-{max(max(x[1], x[2]) for x in self.loads):.2f} "
                 f"(per-row ranges in the tables; the load counts this benchmark's own processes too: up to 16 followers, MariaDB, "
                 f"writer, prober). *others CPU %*: the machine's busy time in the window minus MariaDB, the followers, "
                 f"the writer, the prober and this script: other work on the machine (and kernel time not charged to a process).\n")

        # ---- fan-out
        L.append("## 1. Binlog fan-out: N followers of one MariaDB\n")
        L.append("Each follower: `sqlcached --mysql-backend ... --mysql-server-id 10NN --invalidate 'bench.t=t:{id}'` "
                 "(defaults otherwise: -t 4, -m 64). Writer: a separate process applying `UPDATE bench.t SET v = v + 1 "
                 "WHERE id = ?` (autocommit, innodb_flush_log_at_trx_commit=1) at 500/s (4 connections, paced) or as fast "
                 "as 2 connections go (max); *UPDATE/s* counts transactions in MariaDB's GTID sequence, so it includes "
                 "the prober's (~100/s). CPU in % of one core.\n")
        hdr = ["N", "writer", "UPDATE/s", "MariaDB CPU %", "dump threads CPU %", "dump µs/txn/follower",
               "follower CPU % (each)", "follower ms CPU/1000 events", "delay p50 ms", "delay p99 ms",
               "slowest catch-up ms", "max binlog_lag_ms", "others CPU %", "load1 before→after"]
        rows = []
        for (n, rate), rs in sorted(self.fan.items(), key=lambda kv: (kv[0][1] == 0, kv[0][0])):
            rows.append([n, f"{rate}/s" if rate else "max", mm([r["rate"] for r in rs], 0), mm([r["mdb_pct"] for r in rs], 1),
                         mm([r["dump_pct"] for r in rs], 2) if n else "-",
                         mm([r["dump_us_per_txn_per_follower"] for r in rs], 1) if n else "-",
                         mm([r["fol_pct_each"] for r in rs], 2) if n else "-",
                         mm([r["fol_ms_per_kev"] for r in rs], 2) if n else "-",
                         mm([r["p50"] for r in rs], 2) if n else "-", mm([r["p99"] for r in rs], 1) if n else "-",
                         mm([r["catch_ms"] for r in rs], 0) if n else "-", mm([r["lag_ms"] for r in rs], 0) if n else "-",
                         mm([r["others_pct"] for r in rs], 0),
                         f"{min(r['load'][0] for r in rs):.2f}-{max(r['load'][0] for r in rs):.2f} → "
                         f"{min(r['load'][1] for r in rs):.2f}-{max(r['load'][1] for r in rs):.2f}"])
        L.append(table(hdr, rows) + "\n")
        L.append("- *dump threads*: CPU of MariaDB's `Binlog Dump` threads (one per follower), from their "
                 "`/proc/<mariadbd>/task/<TID>/schedstat`; *dump µs/txn/follower* = that CPU / transactions / N.")
        L.append("- *follower ms CPU/1000 events*: median over followers #2..N (follower #1 also answers the prober; "
                 f"at N=1 it is #1), all threads, from the window's start until it had read everything; "
                 f"{self.ev_per_txn} binlog events per single-row UPDATE.")
        L.append("- *delay*: the prober on follower #1: `set t:ID`, `UPDATE bench.t ... WHERE id = ID` on MariaDB, "
                 "then `get t:ID` every 0.5 ms until it misses; p50/p99 per window over the probes "
                 f"({min(r['probes'] for (n, _), rs in self.fan.items() if n for r in rs)}-"
                 f"{max(r['probes'] for rs in self.fan.values() for r in rs)} per window, so p99 is about the "
                 "second-largest), min-max over windows.")
        L.append("- *slowest catch-up*: after the writer stopped, until every follower had read all of the "
                 "window's events (0 = none was behind).\n")

        # ---- extrapolation
        n500 = sorted((n, statistics.median([r["mdb_pct"] for r in rs])) for (n, rate), rs in self.fan.items() if rate == 500)
        icpt, slope = linfit([n for n, _ in n500], [y for _, y in n500])
        dump_us = statistics.median([r["dump_us_per_txn_per_follower"] for (n, rate), rs in self.fan.items()
                                     if n and rate == 500 for r in rs])
        dump_hi = statistics.median([r["dump_us_per_txn_per_follower"] for r in self.fan[(max(n for n, _ in self.fan), 500)]])
        rate500 = statistics.median([r["rate"] for (n, rate), rs in self.fan.items() if rate == 500 for r in rs])
        bps = statistics.median([r["binlog_bps"] for (n, rate), rs in self.fan.items() if rate == 500 for r in rs])
        self.model = {"icpt": icpt, "slope": slope, "dump_us": dump_us, "rate": rate500, "bps": bps}
        L.append("### Linear model (an extrapolation, not a measurement)\n")
        L.append(f"Least squares over the 500/s rows (medians, N = {', '.join(str(n) for n, _ in n500)}): MariaDB CPU "
                 f"≈ {icpt:.1f}% + {slope:.3f}% × N at {rate500:.0f} UPDATE/s, i.e. {slope / rate500 * 1e4:.1f} µs of "
                 f"MariaDB CPU per transaction per follower (measured directly on the dump threads: median {dump_us:.1f} µs over N, {dump_hi:.1f} µs at the largest N). "
                 f"Binlog written: {bps / 1024:.0f} KiB/s, which every follower receives.\n")
        rows = []
        for n in (16, 50, 100, 500):
            fit = icpt + slope * n
            direct = n500[0][1] + dump_us * rate500 * n / 1e4
            rows.append([n, f"{fit:.0f}%", f"{direct:.0f}%", f"{slope * n:.0f}%",
                         f"{slope * n * 2000 / rate500:.0f}%", f"{bps * n * 8 / 1e6:.1f} Mbit/s"])
        L.append(table(["followers", f"MariaDB CPU at {rate500:.0f}/s (fit)", "(N=0 + dump threads × N)",
                        "of which fan-out", "fan-out at 2,000 txn/s", "binlog egress"], rows) + "\n")

        # ---- relay
        if self.rel:
            rs = self.rel
            base = self.fan.get((1, 500), [])
            L.append("### Through a relay\n")
            L.append("The same prober and 500/s writer, but the follower reads the binlog of a MariaDB replica "
                     "(`--log-slave-updates`, GTID, on the same machine) instead of the primary:\n")
            L.append(table(["path", "UPDATE/s", "delay p50 ms", "delay p99 ms", "relay mariadbd CPU %", "load1 before→after"], [
                ["primary → sqlcached (N=1 above)", mm([r["rate"] for r in base], 0), mm([r["p50"] for r in base], 2),
                 mm([r["p99"] for r in base], 1), "-", "-"],
                ["primary → relay → sqlcached", mm([r["rate"] for r in rs], 0), mm([r["p50"] for r in rs], 2),
                 mm([r["p99"] for r in rs], 1), mm([r["relay_pct"] for r in rs], 1),
                 f"{min(r['load'][0] for r in rs):.2f}-{max(r['load'][0] for r in rs):.2f} → "
                 f"{min(r['load'][1] for r in rs):.2f}-{max(r['load'][1] for r in rs):.2f}"]]) + "\n")

        # ---- bursts
        L.append("## 2. Invalidation throughput of one follower\n")
        rows_n = 20_000 if a.quick else BIG_ROWS
        cap = max(r["holds"] or 0 for rs in self.burst.values() for r in rs)
        L.append(f"`bench.big` ({rows_n:,} rows: id INT PRIMARY KEY, email VARCHAR(64), v INT), rules "
                 "`bench.big=big:{id}` and `bench.big=big_by_email:{email}` (2 keys per row; the UPDATE changes only "
                 f"v). Before each burst every `big:{{id}}` key is set (so half the invalidations hit). Bursts: "
                 f"`UPDATE bench.big SET v = v + 1 WHERE id BETWEEN ...` as 1 statement of {rows_n:,} rows, 10 "
                 f"statements of {rows_n // 10:,} back to back on one connection, and 1 of {rows_n // 2:,} (its "
                 f"{rows_n:,} keys fit in the holds' bound, 1024 per engine shard: {cap:,} here). *rows/s*: rows / (first statement's OK → "
                 "`invalidate_keys` grew by 2 × rows); *last key after OK*: from the last statement's OK; *end to "
                 "end*: from sending the first statement.\n")
        hdr = ["holds", "burst", "statement(s) s", "last key after OK ms", "rows/s", "end to end s",
               "sqlcached CPU s", "CPU µs per key", "max binlog_lag_ms", "hits", "holds kept", "holds dropped",
               "load1 before→after"]
        rows = []
        for label, data in (("2000 ms (default)", self.burst), ("0 (off)", self.burst0)):
            for shape, rs in data.items():
                rows.append([label, shape, mm([r["stmt_s"] for r in rs], 2), mm([r["tail_ms"] for r in rs], 0),
                             mm([r["rows_per_s"] for r in rs], 0), mm([r["span_s"] for r in rs], 2),
                             mm([r["cpu_s"] for r in rs], 2), mm([r["us_per_key"] for r in rs], 2),
                             mm([r["lag_ms"] for r in rs], 0), mm([r["hits"] for r in rs], 0),
                             mm([r["holds"] for r in rs], 0), mm([r["dropped"] for r in rs], 0),
                             f"{min(r['load'][0] for r in rs):.2f}-{max(r['load'][0] for r in rs):.2f} → "
                             f"{min(r['load'][1] for r in rs):.2f}-{max(r['load'][1] for r in rs):.2f}"])
        L.append(table(hdr, rows) + "\n")
        L.append("- `binlog_lag_ms` comes from event timestamps, which carry the statement's *start* (1 s resolution): "
                 "for a long statement it includes the statement's own run time.")
        L.append("- *holds kept*: `invalidate_holds` right after the burst (at most 1024 per engine shard; it counts "
                 "expired holds not yet forgotten too, so it can exceed the burst's keys); "
                 "*dropped*: growth of `invalidate_holds_dropped` (holds ended early for room).\n")

        # ---- memory
        m = self.mem
        L.append("## 3. Memory per node (RSS, MiB)\n")
        b, b0 = m["burst"], m["burst0"]
        rows = [
            ["sqlcached, no rules, idle (defaults: -t 4, -m 64)", mm(m["plain"], 1), len(m["plain"])],
            ["with 1 rule + binlog feed, idle (the fan-out followers at start)", mm(m["idle_rules"], 1),
             len(m["idle_rules"])],
            ["same, after the fan-out windows", mm(m["after_fanout"], 1), len(m["after_fanout"])],
            ["2-template rule, idle", mm([b["idle"], b0["idle"]], 1), 2],
            [f"after setting {rows_n:,} keys", mm([b["filled"], b0["filled"]], 1), 2],
            [f"after each {rows_n:,}-row burst, holds on", mm(b["after_burst"], 1), len(b["after_burst"])],
            [f"after each {rows_n:,}-row burst, holds off", mm(b0["after_burst"], 1), len(b0["after_burst"])],
        ]
        mr = m["mariadb_rss"]
        nmax = max(mr)
        rows.append([f"mariadbd with 0 → {nmax} followers", f"{mr[0]:.0f} → {mr[nmax]:.0f} "
                     f"({(mr[nmax] - mr[0]) / max(1, nmax):.2f} per follower)", 1])
        L.append(table(["process", "RSS MiB", "samples"], rows) + "\n")

        L.append("## Notes\n")
        notes = list(self.notes)
        errors = [x for x in self.mdb_errors if "[ERROR]" in x]
        aborted = [x for x in self.mdb_errors if "Aborted connection" in x]
        other = [x for x in self.mdb_errors if "[Warning]" in x and "Aborted connection" not in x
                 and "proxies_priv" not in x]
        notes.append(f"MariaDB error log: {len(errors)} [ERROR] lines{': ' if errors else ''}"
                     + "; ".join(f"`{x[-160:]}`" for x in errors[:5])
                     + f"; {len(aborted)} 'Aborted connection' warnings (followers and clients this run stopped)"
                     + (f"; other warnings: " + "; ".join(f"`{x[-160:]}`" for x in other[:5]) if other else ""))
        if self.mem.get("idle_cpu"):
            notes.append("An idle follower (rules + binlog feed, no writes) uses "
                         f"{mm(self.mem['idle_cpu'], 3)}% of a core (heartbeats, timers).")
        L += [f"- {x}" for x in notes]
        return "\n".join(L) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        port, rate, dur, threads, start_at = sys.argv[2:7]
        return writer_main(int(port), float(rate), float(dur), int(threads), float(start_at))
    if len(sys.argv) > 1 and sys.argv[1] == "--prober":
        db_port, mc_port, dur, start_at, first = sys.argv[2:7]
        return prober_main(int(db_port), int(mc_port), float(dur), float(start_at), int(first))
    p = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    p.add_argument("--quick", action="store_true", help="N = 0, 1, 2, one repetition, 20k rows: checks the script")
    p.add_argument("--reps", type=int, default=None, help="repetitions of each measurement (default 3; quick 1)")
    p.add_argument("--duration", type=float, default=None, help="seconds per fan-out window (default 5; quick 2)")
    p.add_argument("--no-relay", action="store_true", help="skip the relay measurement")
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "cluster-scale.md"))
    a = p.parse_args()
    a.reps = a.reps or (1 if a.quick else 3)
    a.duration = a.duration or (2.0 if a.quick else 5.0)

    # A private copy of the binary: a rebuild during the run cannot mix two versions.
    src = Path(os.environ.get("SQLCACHED_BIN", ROOT / "target" / "release" / "sqlcached"))
    for _ in range(60):
        if src.exists():
            break
        log(f"{src} missing (being rebuilt?); waiting")
        time.sleep(10)
    run = Run(a)
    binary = run.tmp / "sqlcached"
    shutil.copy2(src, binary)
    os.environ["SQLCACHED_BIN"] = str(binary)
    import hashlib

    run.sqlcached_id = hashlib.sha256(binary.read_bytes()).hexdigest()[:12]
    run.mdb_version = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True).stdout.split()[2]
    try:
        text = run.main()
    finally:
        run.cleanup()
        shutil.rmtree(run.tmp, ignore_errors=True)
    print(text)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    log(f"wrote {out}")


if __name__ == "__main__":
    main()
