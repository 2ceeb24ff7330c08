"""Seed 000 replay: the 2014 blog's Java cache-aside app (spymemcached + Connector/J, MD5 of the
query as key, a serialized CachedRowSet as value) against MariaDB, with and without a cache.

The seed ran 1000 random `SELECT firstname,lastname FROM test.customers where id=N` per run on a
30,000-row table without a primary key (a full scan each) behind a 10M InnoDB buffer pool: the
first run took 31.3 s with 1-2 % hits, repeated runs got faster until 3.2 s with 100 % hits.

Here the same program (bench/seeds/e000, ported to Java 17) runs several times in one JVM for
each configuration: MariaDB direct, MariaDB + memcached 1.6.18, MariaDB + sqlcached --data-dir
(the same cache-aside code), and the unchanged app pointed at sqlcached's MySQL query-cache
proxy. Between run 3 and run 4 the cache server is restarted (gracefully, SIGTERM): memcached
comes back empty, sqlcached with --data-dir comes back warm, the proxy's query cache (memory
only) comes back empty.

Scaling: the seed had 512 MB VMs with one core each (app, MySQL 5.6.16, memcached on separate
hosts over a virtual network); here everything shares one 2-CPU machine over loopback, with
MariaDB 10.11 and the seed's 10M buffer pool (the table fits in it, as the seed's did). Every
run replays the same 1000 ids (a fixed Random seed), so run 2 is already the seed's all-hit
state instead of after many days of fresh random ids. The uncached configuration runs only the
runs before the restart (it has nothing to restart). --quick: 100 queries, 2 + 2 runs.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common
from common import harness, progress

EXP = "e000"
NAME = "000_cacheaside"
APP = common.HERE / "e000"
M2 = Path(os.environ.get("M2_REPO", Path.home() / ".m2" / "repository"))
JARS = [M2 / "net/spy/spymemcached/2.12.3/spymemcached-2.12.3.jar",
        M2 / "com/mysql/mysql-connector-j/8.4.0/mysql-connector-j-8.4.0.jar"]
MAIN_CLASS = "sqlcached.seeds.CacheAside"
ROWS = 30_000
BUFFER_POOL = "10M"  # the seed's; MariaDB 10.11 refuses less than 6M with 16K pages
ID_SEED = 20140303  # the seed's stats show 2014-03-03; any fixed value works
SEED_FIRST_S, SEED_WARM_S = 31.321, 3.214  # the seed's "Executed in" figures

FIRST = ["Illana", "Jade", "Abel", "Brenna", "Cain", "Dara", "Ezra", "Fallon", "Gage", "Hedda",
         "Ira", "Joelle", "Kato", "Lila", "Macon", "Nola", "Orli", "Pascale", "Quin", "Rhea",
         "Silas", "Tana", "Uriel", "Vera", "Wade", "Xena", "Yoshi", "Zena", "Amos", "Blythe"]
LAST = ["Franklin", "Jefferson", "Alvarado", "Bowman", "Carver", "Dillard", "Estes", "Fuller",
        "Garrison", "Hale", "Ingram", "Joyner", "Kirby", "Lowery", "Mathis", "Noble", "Oneal",
        "Pruitt", "Quinn", "Rowe", "Sexton", "Tillman", "Underwood", "Valdez", "Whitaker",
        "Xiong", "Yates", "Zamora", "Atkins", "Blackburn"]


def build_app() -> str:
    """Compiles bench/seeds/e000 offline with Maven when target/classes is stale; returns the classpath."""
    classes = APP / "target" / "classes"
    marker = classes / (MAIN_CLASS.replace(".", "/") + ".class")
    sources = [APP / "pom.xml", *APP.joinpath("src").rglob("*.java")]
    if not marker.exists() or max(p.stat().st_mtime for p in sources) > marker.stat().st_mtime:
        progress(EXP, "building the Java app (mvn -o compile)")
        p = subprocess.run(["mvn", "-o", "-q", "-B", "-Dstyle.color=never", "compile"], cwd=APP,
                           capture_output=True, text=True, timeout=300)
        if p.returncode != 0:
            raise RuntimeError(f"mvn compile failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    missing = [str(j) for j in JARS if not j.exists()]
    if missing:
        raise RuntimeError(f"missing jars (run .ci/deps-clients.sh): {missing}")
    return os.pathsep.join([str(classes), *map(str, JARS)])


def load_customers(db) -> int:
    """Creates test.customers (no primary key, as the seed) with 30,000 rows; returns its data bytes."""
    rnd = random.Random(0)
    rows = [f"({i},'{rnd.choice(FIRST)}','{rnd.choice(LAST)}')" for i in range(1, ROWS + 1)]
    sql = ["CREATE DATABASE IF NOT EXISTS test;",
           "CREATE TABLE test.customers (`id` mediumint, `firstname` varchar(255) default NULL, "
           "`lastname` varchar(255) default NULL);"]
    for k in range(0, ROWS, 5000):
        sql.append("INSERT INTO test.customers (`id`,`firstname`,`lastname`) VALUES "
                   + ",".join(rows[k:k + 5000]) + ";")
    sql.append("ANALYZE TABLE test.customers;")
    db.sql("\n".join(sql))
    out = db.sql("SELECT data_length FROM information_schema.tables "
                 "WHERE table_schema='test' AND table_name='customers'")
    return int(out.split()[0])


class App:
    """One JVM running the seed's program `runs` times; the driver steps it run by run."""

    def __init__(self, classpath, mode, jdbc_addr, db, mc_addr, runs, queries, logdir):
        """Starts `java ... CacheAside` with stdin/stdout on pipes and stderr in a log file."""
        self.log = Path(logdir) / f"java-{mode}-{time.monotonic_ns()}.log"
        argv = ["java", "-cp", classpath, MAIN_CLASS, mode, jdbc_addr, db.user, db.password,
                mc_addr or "-", str(runs), str(queries), str(ID_SEED)]
        with open(self.log, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True)

    def next_run(self) -> dict:
        """Waits for the next `RUN i ms=.. hits=.. misses=.. check=..` line and parses it."""
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.proc.wait(10)
                tail = self.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the Java app exited with {self.proc.returncode}:\n{tail}")
            if line.startswith("RUN "):
                parts = line.split()
                kv = dict(p.split("=", 1) for p in parts[2:])
                return {"run": int(parts[1]), "ms": int(kv["ms"]), "hits": int(kv["hits"]),
                        "misses": int(kv["misses"]), "check": kv["check"]}

    def go_on(self) -> None:
        """Lets the app start its next run."""
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        """Ends the JVM (stdin closed, then killed if it lingers)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def restart_server(srv):
    """SIGTERM a memcached/sqlcached Server and start the same command line on the same port."""
    srv.stop()
    new = srv.restart(wait=False)
    try:
        return new.wait_ready()
    except Exception:
        new.stop()
        raise


def restart_proxy(px, db):
    """SIGTERM the proxy and start it again on the same ports; waits until its cache is online."""
    px.stop()
    new = harness.mysqlproxy.Proxy(px.argv, px.port, px.mysql_port, db, px._env, log=px.log)
    try:
        return new.wait_online()
    except Exception:
        new.stop()
        raise


def run_config(label, mode, classpath, jdbc_addr, db, runs, queries, restart_after, logdir,
               server=None, restart=None, counters=None):
    """Runs the app `runs` times for one configuration, restarting the cache after run
    `restart_after`; returns (one dict per run: ms, hits, misses, check, note; the server now
    running, which the caller stops). On an error it stops the server itself.

    `server` is the cache server (its addr goes to the app), `restart(server) -> server`
    restarts it, `counters(server) -> hits` reads hits the app cannot see (the proxy's)."""
    progress(EXP, f"{label}: {runs} runs x {queries} queries")
    mc_addr = server.addr if (server is not None and mode == "cacheaside") else None
    app = App(classpath, mode, jdbc_addr, db, mc_addr, runs, queries, logdir)
    out = []
    try:
        note = "cache empty" if server is not None else ""
        base = counters(server) if counters else 0
        for i in range(1, runs + 1):
            r = app.next_run()
            if counters:
                now = counters(server)
                r["hits"] = min(now - base, queries)
                r["misses"] = queries - r["hits"]
                base = now
            r["note"] = note
            r["config"] = label
            out.append(r)
            hit = f"{100 * r['hits'] / queries:.0f}% hits" if server is not None else "no cache"
            progress(EXP, f"{label} run {i}: {r['ms'] / 1000:.2f} s, {hit}")
            note = ""
            if i < runs:
                if i == restart_after and restart is not None:
                    t = time.monotonic()
                    server = restart(server)
                    note = f"after restart ({time.monotonic() - t:.1f} s)"
                    progress(EXP, f"{label}: restarted the cache server in {time.monotonic() - t:.1f} s")
                    base = counters(server) if counters else 0
                app.go_on()
    except BaseException:
        if server is not None:
            server.stop()  # may be a restarted process the caller does not know of
        raise
    finally:
        app.close()
    return out, server


def measure(quick: bool):
    """Starts MariaDB and each cache in turn and runs the app against each; returns (results, info)."""
    queries, runs, restart_after = (100, 4, 2) if quick else (1000, 6, 3)
    classpath = build_app()
    tmp = Path(tempfile.mkdtemp(prefix="seeds-e000-"))
    results, info = [], {"queries": queries, "runs": runs, "restart_after": restart_after}
    # The harness's temp dirs (MariaDB's datadir and template, and an empty one it leaves behind)
    # go below ours, so the rmtree at the end takes them all.
    saved_tempdir, tempfile.tempdir = tempfile.tempdir, str(tmp)
    try:
        progress(EXP, f"starting MariaDB (buffer pool {BUFFER_POOL}) and loading {ROWS:,} rows")
        with harness.mariadb.start_mariadb(extra_args=f"--innodb-buffer-pool-size={BUFFER_POOL}") as db:
            info["table_bytes"] = load_customers(db)
            info["mariadb"] = db.sql("SELECT VERSION()").strip()
            jdbc = f"{db.host}:{db.port}"
            common_kw = dict(classpath=classpath, db=db, queries=queries, restart_after=restart_after, logdir=tmp)

            rs, _ = run_config("MariaDB direct", "direct", jdbc_addr=jdbc, runs=restart_after, **common_kw)
            results += rs

            mc = harness.servers.start_memcached("-m", "64")
            try:
                rs, mc = run_config("MariaDB + memcached", "cacheaside", jdbc_addr=jdbc, runs=runs,
                                    server=mc, restart=restart_server, **common_kw)
                results += rs
            finally:
                mc.stop()

            data_dir = tmp / "sqlcached-data"
            sc = harness.servers.start_sqlcached("-m", "64", "--data-dir", str(data_dir), log=tmp / "sqlcached.log")
            try:
                rs, sc = run_config("MariaDB + sqlcached", "cacheaside", jdbc_addr=jdbc, runs=runs,
                                    server=sc, restart=restart_server, **common_kw)
                results += rs
            finally:
                sc.stop()

            px = harness.mysqlproxy.start_proxy(db, log=tmp / "proxy.log")
            try:
                rs, px = run_config("sqlcached MySQL port", "proxy", jdbc_addr=px.mysql_addr, runs=runs,
                                    server=px, restart=lambda p: restart_proxy(p, db),
                                    counters=lambda p: p.stats().get("Qcache_hits", 0), **common_kw)
                results += rs
                st = px.stats()
                info["proxy_stats"] = ", ".join(f"{k} {st.get(k, 0)}" for k in
                                                ("Qcache_hits", "Qcache_inserts", "Qcache_not_cached"))
            finally:
                px.stop()
    finally:
        tempfile.tempdir = saved_tempdir
        shutil.rmtree(tmp, ignore_errors=True)
    return results, info


def summarize(results, info):
    """Per config: first run, warm run (median of the all-hit runs) and the run after the restart, in s."""
    import statistics

    ra = info["restart_after"]
    out = {}
    for cfg in dict.fromkeys(r["config"] for r in results):
        rs = [r for r in results if r["config"] == cfg]
        warm = [r["ms"] for r in rs if r["run"] not in (1, ra + 1)]
        after = next((r for r in rs if r["run"] == ra + 1), None)
        out[cfg] = {"first": rs[0]["ms"] / 1000, "warm": statistics.median(warm) / 1000 if warm else None,
                    "after": after["ms"] / 1000 if after else None,
                    "after_hits": after["hits"] if after else None}
    return out


def plot(results, info, summary):
    """Left: seconds per run and config (log y), the restart dashed; right: seed vs here."""
    fig, (ax, ax2) = common.figure(ncols=2, width=5.2, height=4.3)
    q = info["queries"]
    styles = {"MariaDB direct": ("tab:gray", "s"), "MariaDB + memcached": ("tab:orange", "o"),
              "MariaDB + sqlcached": ("tab:blue", "D"), "sqlcached MySQL port": ("tab:green", "^")}
    for cfg, (color, marker) in styles.items():
        rs = [r for r in results if r["config"] == cfg]
        if rs:
            ax.plot([r["run"] for r in rs], [r["ms"] / 1000 * 1000 / q for r in rs], marker=marker,
                    color=color, label=cfg)
    ax.axvline(info["restart_after"] + 0.5, color="black", linestyle="--", linewidth=1)
    ax.text(info["restart_after"] + 0.55, 0.97, "cache server\nrestarted", transform=ax.get_xaxis_transform(),
            va="top", fontsize=8)
    ax.set_yscale("log")
    ax.set_xlabel("run")
    ax.set_ylabel("seconds per 1000 queries")
    ax.set_xticks(range(1, info["runs"] + 1))
    ax.set_title(f"this machine: {q} queries per run", fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)

    labels = ["seed: MySQL 5.6\n+ memcached 1.4.17\n(2014)", "memcached\n1.6.18", "sqlcached\n(cache-aside)",
              "sqlcached\nMySQL port"]
    cfgs = [None, "MariaDB + memcached", "MariaDB + sqlcached", "sqlcached MySQL port"]
    first = [SEED_FIRST_S] + [summary[c]["first"] * 1000 / q if c in summary else 0 for c in cfgs[1:]]
    warm = [SEED_WARM_S] + [(summary[c]["warm"] or 0) * 1000 / q if c in summary else 0 for c in cfgs[1:]]
    after = [None] + [(summary[c]["after"] or 0) * 1000 / q if c in summary else 0 for c in cfgs[1:]]
    xs = range(len(labels))
    w = 0.27
    ax2.bar([x - w for x in xs], first, w, color="#bbbbbb", label="first run (empty cache)")
    ax2.bar(list(xs), warm, w, color="#555555", label="warm (all hits)")
    ax2.bar([x + w for x in xs[1:]], after[1:], w, color="tab:red", label="first run after restart")
    ax2.set_xticks(list(xs))
    ax2.set_xticklabels(labels, fontsize=7)
    ax2.set_yscale("log")
    ax2.set_ylabel("seconds per 1000 queries")
    ax2.set_title("seed (2014) vs here", fontsize=10)
    ax2.legend(fontsize=7, loc="upper right")
    return common.save_plot(fig, NAME)


def noise_note(results, info) -> str:
    """How much identical runs varied here, from the cold runs (the same full scans in every config)."""
    q = info["queries"]
    cold = [r["ms"] / 1000 for r in results if r["misses"] > q // 2]
    span = ""
    if cold:
        span = (f" In this run the {len(cold)} cold runs, which do the same full scans in every configuration, "
                f"took {min(cold):.1f} to {max(cold):.1f} s.")
    return ("Timings vary by up to 2x between identical runs (the 2 CPUs are shared with other jobs), so read "
            "the speedups as orders of magnitude." + span + " The difference between memcached's and "
            "sqlcached's warm cache-aside runs is within that noise. Warm cache-aside runs pay for the app's "
            "own work per hit (a spymemcached round trip and the Java deserialization of a CachedRowSet); "
            "hits through the MySQL port are plain result packets that Connector/J reads directly, which is "
            "likely why that configuration's warm runs are the fastest.\n")


def report(results, info, summary, wall):
    """Writes the markdown report (table, scaling, seed vs here, headline)."""
    q = info["queries"]
    rows = []
    for r in results:
        cached = r["config"] != "MariaDB direct"
        rows.append([r["config"], r["run"], r["ms"], f"{100 * r['hits'] / q:.1f} %" if cached else "no cache",
                     r["note"]])
    checks = {r["check"] for r in results}
    table = common.md_table(["config", "run", "ms", "hits", "note"], rows)

    def s(x):
        """Seconds with two decimals, or a dash."""
        return "–" if x is None else f"{x:.2f} s"

    head = []
    for cfg, v in summary.items():
        if cfg == "MariaDB direct":
            head.append(f"- **{cfg}**: {s(v['first'])} first run, {s(v['warm'])} later (no cache).")
            continue
        speed = v["first"] / v["warm"] if v["warm"] else 0
        head.append(f"- **{cfg}**: {s(v['first'])} first run → {s(v['warm'])} warm (**{speed:.0f}x**); "
                    f"first run after the restart {s(v['after'])} with "
                    f"{100 * (v['after_hits'] or 0) / q:.0f} % hits.")
    mc, sc = summary.get("MariaDB + memcached"), summary.get("MariaDB + sqlcached")
    restart_line = ""
    if mc and sc and mc["after"] and sc["after"]:
        restart_line = (f"\nAfter the restart memcached starts cold again ({s(mc['after'])}, like its first run), "
                        f"sqlcached with `--data-dir` answers from the data it kept ({s(sc['after'])}, "
                        f"{mc['after'] / sc['after']:.0f}x faster than memcached's run after restart).\n")
    px = summary.get("sqlcached MySQL port")
    px_line = ""
    if px:
        px_line = (f"\nThe unchanged app through sqlcached's MySQL port (no cache-aside code at all) goes from "
                   f"{s(px['first'])} to {s(px['warm'])}. Its query cache lives in memory only: after a restart "
                   f"it starts empty ({100 * (px['after_hits'] or 0) / q:.0f} % hits in the next run) and goes "
                   f"online only once its binlog follower is connected, since it cannot know what changed in "
                   f"MariaDB while it was down. Query-cache counters since its restart: {info.get('proxy_stats')}.\n")
    seed_tbl = common.md_table(
        ["per 1000 queries", "first run (empty cache)", "all hits", "speedup"],
        [["seed: MySQL 5.6.16 + memcached 1.4.17, 1-core VMs", f"{SEED_FIRST_S:.1f} s (1-2 % hits)",
          f"{SEED_WARM_S:.1f} s (100 %)", f"{SEED_FIRST_S / SEED_WARM_S:.0f}x"]]
        + [[f"here: {cfg}", s(v["first"] * 1000 / q), s(v["warm"] * 1000 / q if v["warm"] else None),
            f"{v['first'] / v['warm']:.0f}x" if v["warm"] else "–"]
           for cfg, v in summary.items() if cfg != "MariaDB direct"])
    scale = (f"Seed: 512 MB VMs with one core each (app in Eclipse on a desktop, MySQL 5.6.16, memcached "
             f"1.4.17 on separate hosts), InnoDB buffer pool 10M, 30,000 rows without a primary key, 1000 "
             f"queries per run, every query a full scan. Here: everything (JVM, MariaDB, cache servers) on one "
             f"{os.cpu_count()}-CPU machine over loopback, {info['mariadb']}, buffer pool {BUFFER_POOL} "
             f"(the table is {info['table_bytes'] / 2**20:.1f} MiB and fits, so scans are CPU-bound, as the "
             f"seed's were), {ROWS:,} rows, {q} queries per run, memcached 1.6.18 `-m 64`, sqlcached `-m 64 "
             f"--data-dir`. The program is the seed's (MD5 key, serialized CachedRowSet, binary protocol, "
             f"30-day expiry, new connections every run, time from connect to shutdown), run "
             f"{info['runs']} times in one JVM so JIT warm-up is shared. Every run asks for the same ids "
             f"(a fixed Random seed; the seed drew fresh ids each run and needed many runs to reach 100 %), "
             f"so run 2 is the seed's all-hit state; run 1's few hits are ids repeated within the run (the "
             f"seed's 17 in 1000 were the same). The cache server is restarted "
             f"(SIGTERM, same port) between run {info['restart_after']} and {info['restart_after'] + 1}; "
             f"MariaDB direct runs only {info['restart_after']} runs (nothing to restart)."
             + (f" Seconds per 1000 queries in the seed comparison are scaled linearly from {q} queries."
                if q != 1000 else ""))
    bold = []
    if mc and sc:
        bold.append(f"cache-aside {mc['first'] / mc['warm']:.0f}x (memcached) / {sc['first'] / sc['warm']:.0f}x "
                    f"(sqlcached) faster warm than cold (seed: {SEED_FIRST_S / SEED_WARM_S:.0f}x); after a restart "
                    f"memcached is cold again ({s(mc['after'])}), sqlcached --data-dir stays warm ({s(sc['after'])})")
    if px:
        bold.append(f"the unchanged app through sqlcached's MySQL port: {s(px['first'])} → {s(px['warm'])}")
    body = ("**Seed 000: " + "; ".join(bold) + f" ({q} queries per run).**\n\n" if bold else "")
    body += (f"Wall time {wall:.0f} s. "
            + ("Every run of every configuration returned the same rows (one checksum)."
               if len(checks) == 1 else f"**Rows differed between runs/configs: checksums {sorted(checks)}.**")
            + "\n\n## Headline\n\n" + "\n".join(head) + "\n" + restart_line + px_line
            + "\n" + noise_note(results, info) + "\n## Seed vs here\n\n" + seed_tbl
            + "\n\n## Every run\n\n" + table
            + "\n\n## How it was scaled\n\n" + scale + "\n\n![runs](" + NAME + ".png)\n")
    return common.write_report(NAME, "Seed 000: cache-aside with memcached vs sqlcached (Java, spymemcached)", body)


def main(quick: bool) -> None:
    """Measures every configuration, then writes the report and the plot."""
    t0 = time.monotonic()
    results, info = measure(quick)
    summary = summarize(results, info)
    wall = time.monotonic() - t0
    png = plot(results, info, summary)
    md = report(results, info, summary, wall)
    progress(EXP, f"wrote {md} and {png}")


if __name__ == "__main__":
    main(common.parse_args(__doc__).quick)
