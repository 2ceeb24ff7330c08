#!/usr/bin/env python3
"""bench/freshness_load.py: freshness of the query cache under a sustained direct write load
(issue 13 item 6). A benchmark, not a test: it reports, it asserts nothing, not part of CI.

    python3 bench/freshness_load.py                       # 2 configs x 3 reps x 20 s: ~3 min
    python3 bench/freshness_load.py --duration 10 --reps 1 --bounds "100"

One throw-away MariaDB (tests/harness), `sysbench oltp_common prepare` (--tables, --table-size),
then per bound in --bounds (sqlcached's --query-cache-max-lag; 0 = no bound) and rep:
sqlcached -t 2 in front of it, and for --duration seconds at once:
  - sysbench oltp_write_only at full speed (--threads) directly on MariaDB;
  - a checker that updates one row directly every 50 ms (its version), MariaDB's OK time noted;
  - 2 readers reading that row through the proxy in a loop (a cached point select).
Reported per run: sysbench transactions/s, the follower's largest binlog_lag_ms (sampled
every 20 ms), Qcache_lag_bypasses, the readers' hit ratio, and stale reads: reads that started
more than bound + 20 ms (probe period) + 30 ms (scheduling margin) after a version's OK and
returned an older version (for bound 0: more than 150 ms after), with the worst age.
Needs: mariadbd, sysbench (Debian), PyMySQL (tests/requirements.txt), a built sqlcached
(SQLCACHED_BIN or target/release/sqlcached).
"""
import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from harness.mariadb import start_mariadb  # noqa: E402
from harness.mysqlproxy import connect, start_proxy  # noqa: E402


def q(c, sql, args=None):
    with c.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


def sysbench(db, args, test, *extra):
    cmd = ["sysbench", test, "--db-driver=mysql", "--mysql-socket=" + db.socket, "--mysql-user=root",
           "--mysql-db=sbtest", *args, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def run(db, opt, bound, rep):
    log = Path(f"/tmp/freshness-{os.getpid()}-{bound}-{rep}.log")
    with start_proxy(db, "-t", "2", "--query-cache-max-lag", str(bound), log=log) as px:
        w = connect(db.port, "qc")
        q(w, "UPDATE qc.c SET n = 0 WHERE id = 1")
        r = px.connect("qc")
        for _ in range(50):
            q(r, "SELECT n FROM qc.c WHERE id = 1")
            time.sleep(0.02)
        stop, seen, acks, lags = threading.Event(), [], [], [0]

        def reader():
            c = px.connect("qc")
            while not stop.is_set():
                t0 = time.monotonic()
                (n,), = q(c, "SELECT n FROM qc.c WHERE id = 1")
                seen.append((t0, n))
            c.close()

        def watch():
            while not stop.is_set():
                lags[0] = max(lags[0], px.stats().get("binlog_lag_ms", 0))
                time.sleep(0.02)

        before = px.stats()
        ths = [threading.Thread(target=reader) for _ in range(2)] + [threading.Thread(target=watch)]
        for t in ths:
            t.start()
        load = subprocess.Popen(["sysbench", "oltp_write_only", "--db-driver=mysql", "--mysql-socket=" + db.socket,
                                 "--mysql-user=root", "--mysql-db=sbtest", f"--tables={opt.tables}",
                                 f"--table-size={opt.table_size}", f"--threads={opt.threads}",
                                 f"--time={opt.duration}", "--rate=0", "run"],
                                stdout=subprocess.PIPE, text=True)
        v, end = 0, time.monotonic() + opt.duration
        while time.monotonic() < end:
            v += 1
            q(w, "UPDATE qc.c SET n = %s WHERE id = 1", (v,))
            acks.append((time.monotonic(), v))
            time.sleep(0.05)
        out, _ = load.communicate()
        time.sleep(0.3)
        stop.set()
        for t in ths:
            t.join()
        after = px.stats()
    grace = (bound if bound else 100) / 1000 + 0.020 + 0.030
    stale, worst, i, due = 0, 0.0, 0, 0
    for t0, n in sorted(seen):
        while i < len(acks) and acks[i][0] + grace < t0:
            due = acks[i][1]
            i += 1
        if n < due:
            stale += 1
            worst = max(worst, t0 - next(at for at, ver in acks if ver == n + 1))
    tps = next((line.split("(")[1].split()[0] for line in out.splitlines() if "transactions:" in line), "?")
    d = {k: after.get(k, 0) - before.get(k, 0) for k in ("Qcache_hits", "Qcache_lag_bypasses")}
    return dict(bound=bound, rep=rep, tps=tps, lag=lags[0], bypass=d["Qcache_lag_bypasses"],
                reads=len(seen), hit=d["Qcache_hits"] / max(1, len(seen)), stale=stale, worst=worst)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--duration", type=int, default=20)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--bounds", default="100 0")
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--tables", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=10000)
    opt = ap.parse_args()
    with start_mariadb() as db:
        db.sql("CREATE DATABASE sbtest; CREATE DATABASE qc; CREATE TABLE qc.c (id INT PRIMARY KEY, n INT);"
               "INSERT INTO qc.c VALUES (1, 0); SET GLOBAL max_connections = 500;")
        sysbench(db, [f"--tables={opt.tables}", f"--table-size={opt.table_size}"], "oltp_common", "prepare")
        print("| bound ms | rep | write tps | max binlog_lag_ms | lag bypasses | reads | hit % | stale reads | worst age s |")
        print("|---|---|---|---|---|---|---|---|---|")
        for bound in [int(b) for b in opt.bounds.split()]:
            for rep in range(opt.reps):
                r = run(db, opt, bound, rep)
                print(f"| {r['bound']} | {r['rep']} | {r['tps']} | {r['lag']} | {r['bypass']} | {r['reads']} | "
                      f"{100 * r['hit']:.1f} | {r['stale']} | {r['worst']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
