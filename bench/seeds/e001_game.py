"""Seed 001 replay: the 2014 "game" app (read a player row by integer primary key, update it,
look up a second table by the email read) as its data outgrows memory, on MariaDB alone, with
the seed's memcached cache-aside code, and with sqlcached in three ways.

The seed (MySQL 5.x, a Perl client on the same box): two tables of 5M rows (~4 GB), a 256M
InnoDB buffer pool; TPS collapsed to ~140 once data fell out of memory; adding memcached
(read the cache, on a miss read MySQL and set; on update write MySQL and replace the cached
row) gave ~1400 TPS on average (1100-2000) only with a 4 GB memcached holding everything;
2 GB jumped between 400 and 1800 TPS; 1 GB was a regression.

Here one Go program (bench/seeds/e001, go-sql-driver + gomemcache, 8 clients, uniform random
ids) runs the same transaction (A read by id, B update + store back, C profile by email) for
five configurations side by side, at each data size:

1. `MariaDB`: plain SQL;
2. `+ memcached`: the seed's cache-aside code on Debian's memcached 1.6.18 `-m CACHE_MB`;
3. `+ sqlcached persistent`: the same code on `sqlcached -m CACHE_MB --data-dir` (what
   memory cannot hold stays on disk and is still a hit);
4. `sqlcached containers`: no cache code, `get/set @@players.<id>` and `get
   @@profiles.<email>` on sqlcached `-m CACHE_MB --containers` (policy `caching`: reads
   served from memory after the first, writes go to MariaDB and drop the memory copy);
5. `sqlcached query cache`: the plain SQL through sqlcached's MySQL port
   (`--query-cache-size CACHE_MB`): the PK read and the email lookup are cached, the UPDATE
   invalidates its key.

Scaling: the seed's 5M rows per table / 256M buffer pool / 1-4 GB memcached become SIZES rows
per table (values of ~365 bytes per player, ~215 per profile; the largest, 219 MiB of InnoDB
data, ~14x the buffer pool as the seed's ~16x), a BUFFER_POOL_MB buffer pool (O_DIRECT, MariaDB
10.11's default, so pages outside it come from the disk, not the OS page cache; see MARIADB_ARGS
for two settings such a small pool needs) and CACHE_MB of cache memory for every cache. The
largest size is loaded once (`INSERT ... SELECT` from the Sequence engine, binlog off for the
load) and smaller sizes use ids 1..N only; emails sort like ids, so both tables' rows for 1..N
are one contiguous range of their primary keys, as if the tables had N rows. Everything shares
2 CPUs over loopback; the MariaDB datadir is on the VM's disk (not tmpfs).

Each configuration starts with an empty cache at each size, then is brought to the steady
state the seed measured: the two cache-aside caches get every row of 1..N bulk-loaded
(pipelined sets, as a long-running cache would have filled itself; memcached keeps only what
fits), then the workload runs unmeasured until sqlcached's disk tier has compacted that load
(settle()); the query cache and the containers' memory get the first min(N, WARM_MAX) profiles
read through the app's own path (their memory holds no more; player rows are re-read right
after every update, so no warm-up helps them); then WARMUP_S of the workload, then DURATION_S
measured. --quick: two tiny sizes, 1.5 s each; the numbers mean nothing.
"""
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import common
from common import harness, progress

EXP = "001"
NAME = "001_game"
DRIVER = common.HERE / "e001"
GO = shutil.which("go") or "/usr/local/go/bin/go"

SIZES = [10_000, 40_000, 160_000, 320_000]
QUICK_SIZES = [2_000, 8_000]
BUFFER_POOL_MB = 16
CACHE_MB = 32
CLIENTS = 8
WARMUP_S, DURATION_S = 2, 6
QUICK_WARMUP_S, QUICK_DURATION_S = 0.5, 1.5
WARM_MAX = 40_000  # a bit more than the query cache's 32 MiB holds of profile results (~35k)
SETTLE_CHUNK_S, QUICK_SETTLE_CHUNK_S = 3, 0.5  # after a preload: the workload in chunks of this long,
SETTLE_QUIET_MIB = 20  # until the cache server writes less than this to disk in one (at least two),
SETTLE_MAX_S = 30  # or this long
#: Two settings a 16M pool (1,014 pages) needs to hold a working set that fits it:
#: innodb_lru_scan_depth well below the pool's pages (at its default of 1,536 the page cleaner
#: keeps evicting to reach that many free pages, and even a 2 MiB table is read from disk again
#: and again: 3-4 reads per transaction, a third of the TPS), and innodb_old_blocks_time=0 (a
#: plain LRU: with the default 1000 ms, pages read at this rate are never promoted out of the
#: old sublist, 3/8 of the pool, so 10k rows (7 MiB) cost 1.1 disk reads per transaction).
MARIADB_ARGS = (f"--innodb-buffer-pool-size={BUFFER_POOL_MB}M --innodb-lru-scan-depth=128 "
                "--innodb-old-blocks-time=0 --innodb-log-file-size=256M")

#: (label, short name) in table and plot order.
CONFIGS = [("MariaDB", "db"), ("+ memcached", "memcached"), ("+ sqlcached persistent", "persistent"),
           ("sqlcached containers", "containers"), ("sqlcached query cache", "qc")]

#: The seed's numbers (read off its text; its charts are not in the seed file).
SEED = {"rows": 5_000_000, "data_gb": 4, "buffer_pool_mb": 256, "mysql_tps": 140,
        "memcached_4g_tps": 1400, "memcached_4g_range": (1100, 2000), "memcached_2g_range": (400, 1800),
        "update_ms": 17}

SCHEMA = """
CREATE DATABASE game;
CREATE TABLE game.players (id INT UNSIGNED NOT NULL PRIMARY KEY, name VARCHAR(32) NOT NULL,
  email VARCHAR(64) NOT NULL, level INT NOT NULL, score INT NOT NULL, gold INT NOT NULL,
  stats VARCHAR(400) NOT NULL) ENGINE=InnoDB;
CREATE TABLE game.profiles (email VARCHAR(64) COLLATE utf8mb4_bin NOT NULL PRIMARY KEY,
  player_id INT UNSIGNED NOT NULL, nick VARCHAR(32) NOT NULL, country CHAR(2) NOT NULL,
  bio VARCHAR(255) NOT NULL) ENGINE=InnoDB;
"""

CONTAINERS_TOML = """
[backend]
kind = "mariadb"
url = "{url}?prefer_socket=false"
pool_size = 4
plugin_tables = "off"

[options]
w_batch_size = 1

[[container]]
name = "players"
table = "players"
key_column = "id"
value_columns = "name,email,level,score,gold,stats"
policy = "caching"
cache_ttl = 3600

[[container]]
name = "profiles"
table = "profiles"
key_column = "email"
value_columns = "player_id,nick,country,bio"
policy = "caching"
cache_ttl = 3600
"""


def build_driver(out_dir: Path) -> Path:
    """Builds bench/seeds/e001 offline (Go module cache) into out_dir; returns the binary."""
    exe = out_dir / "e001"
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOTOOLCHAIN": "local"}
    p = subprocess.run([GO, "build", "-o", str(exe), "."], cwd=DRIVER, env=env,
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"go build failed (run .ci/deps-clients.sh for the modules):\n{p.stderr[-3000:]}")
    return exe


def load(db, n: int) -> dict:
    """Creates game.players and game.profiles with n rows each (binlog off); returns their sizes."""
    db.sql(SCHEMA)
    email = "CONCAT('u', LPAD(seq, 9, '0'), '@game.example')"
    db.sql(f"""SET sql_log_bin=0;
INSERT INTO game.players SELECT seq, CONCAT('player', seq), {email}, seq % 100, seq % 5000,
  seq % 1000, REPEAT(MD5(seq), 10) FROM seq_1_to_{n};
INSERT INTO game.profiles SELECT {email}, seq, CONCAT('nick', seq), ELT(1 + seq % 5,
  'US', 'DE', 'BR', 'JP', 'IN'), REPEAT(SHA1(seq), 5) FROM seq_1_to_{n};
ANALYZE TABLE game.players, game.profiles;""", database="mysql")
    out = db.sql("SELECT table_name, data_length + index_length FROM information_schema.tables "
                 "WHERE table_schema='game'")
    sizes = {name: int(b) for name, b in (line.split("\t") for line in out.strip().splitlines())}
    lens = db.sql("SELECT AVG(LENGTH(CONCAT_WS('|', name, email, level, score, gold, stats))) FROM "
                  "game.players WHERE id <= 1000; SELECT AVG(LENGTH(CONCAT_WS('|', player_id, nick, "
                  "country, bio))) FROM game.profiles WHERE player_id <= 1000").split()
    return {"rows": n, "players_bytes": sizes["players"], "profiles_bytes": sizes["profiles"],
            "player_value": float(lens[0]), "profile_value": float(lens[1])}


def run_driver(exe: Path, args: list, timeout: float) -> dict:
    """Runs the Go app with args; returns {"result", "preload", "warm": the JSON it printed}."""
    p = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"e001 {' '.join(args)} exited {p.returncode}:\n{p.stderr[-2000:]}")
    out = {}
    for line in p.stdout.splitlines():
        tag, _, js = line.partition(" ")
        if tag in ("RESULT", "PRELOAD", "WARM"):
            out[tag.lower()] = json.loads(js)
    if p.stderr.strip():
        progress(EXP, f"e001 said: {p.stderr.strip()[-300:]}")
    return out


def written_bytes(pid: int) -> int:
    """Bytes process pid has written to storage so far (/proc/PID/io write_bytes)."""
    with open(f"/proc/{pid}/io") as f:
        for line in f:
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    return 0


def settle(exe: Path, args: list, pid: int, quick: bool) -> tuple:
    """Runs the workload unmeasured until the cache server's disk writes calm down; returns (s, MiB written)."""
    # After a bulk load fjall flushes and compacts on the first writes (hundreds of MB, seconds of
    # stalls), which is not the steady state the seed measured: chunks (at least two) until one
    # writes less than SETTLE_QUIET_MIB.
    chunk = QUICK_SETTLE_CHUNK_S if quick else SETTLE_CHUNK_S
    t0, total, k = time.monotonic(), 0, 0
    while True:
        w0 = written_bytes(pid)
        run_driver(exe, args + ["-warmup", "0s", "-dur", f"{chunk}s", "-seed", str(7919 * (k + 1))], timeout=300)
        w = written_bytes(pid) - w0
        total += w
        k += 1
        if (k >= 2 and w < SETTLE_QUIET_MIB * 2**20) or time.monotonic() - t0 > SETTLE_MAX_S:
            return time.monotonic() - t0, total / 2**20


def cache_share(r: dict):
    """% of the transaction's two reads (A, C) that never reached MariaDB (from its Handler_read_key)."""
    # Index lookups: 3 per transaction without a cache, one of them the UPDATE's. Com_select would
    # undercount the containers' reads, which sqlcached merges into `SELECT ... IN (...)`.
    per_txn = r["innodb"].get("Handler_read_key", 0) / max(r["txns"], 1)
    return min(100.0, max(0.0, 100.0 * (1 - (per_txn - 1) / 2)))


def point(exe: Path, db, cfg: str, n: int, seed: int, tmp: Path, quick: bool) -> dict:
    """Starts cfg's cache empty, brings it to steady state, measures the app at size n; returns the result."""
    warmup, dur = (QUICK_WARMUP_S, QUICK_DURATION_S) if quick else (WARMUP_S, DURATION_S)
    direct = f"{db.user}:{db.password}@tcp({db.host}:{db.port})/game?interpolateParams=true"
    args = ["-n", str(n), "-c", str(CLIENTS), "-dbdsn", direct, "-seed", str(seed)]
    mariadb_pid = (db.base / "mysqld.pid").read_text().strip()
    srv, data_dir = None, None
    try:
        if cfg == "db":
            args += ["-mode", "db", "-dsn", direct]
        elif cfg == "memcached":
            srv = harness.servers.start_memcached("-m", str(CACHE_MB))
            args += ["-mode", "cacheaside", "-dsn", direct, "-mc", srv.addr]
        elif cfg == "persistent":
            data_dir = Path(tempfile.mkdtemp(prefix="data-", dir=tmp))
            srv = harness.servers.start_sqlcached("-m", str(CACHE_MB), "--data-dir", str(data_dir))
            args += ["-mode", "cacheaside", "-dsn", direct, "-mc", srv.addr]
        elif cfg == "containers":
            toml = tmp / "containers.toml"
            toml.write_text(CONTAINERS_TOML.format(url=db.url("game")))
            srv = harness.servers.start_sqlcached("-m", str(CACHE_MB), "--containers", str(toml),
                                                  log=str(tmp / "containers.log"))
            args += ["-mode", "containers", "-mc", srv.addr, "-warm", str(min(n, WARM_MAX))]
        elif cfg == "qc":
            srv = harness.mysqlproxy.start_proxy(db, "--query-cache-size", f"{CACHE_MB}m")
            proxied = f"{db.user}:{db.password}@tcp({srv.mysql_addr})/game?interpolateParams=true"
            args += ["-mode", "qc", "-dsn", proxied, "-stats", srv.addr, "-warm", str(min(n, WARM_MAX))]
        pre = {}
        if cfg in ("memcached", "persistent"):
            pre = run_driver(exe, args + ["-preload", "-dur", "0"], timeout=600)
            pre["settle_s"], pre["settle_mib"] = settle(exe, args, srv.proc.pid, quick)
        pids = f"mariadb={mariadb_pid}" + (f",cache={srv.proc.pid}" if srv is not None else "")
        out = run_driver(exe, args + ["-warmup", f"{warmup}s", "-dur", f"{dur}s", "-pids", pids],
                         timeout=warmup + dur + 600)
        if "result" not in out:
            raise RuntimeError(f"e001 printed no RESULT for {cfg} at {n:,} rows")
        res = out["result"]
        res["preload_s"] = pre.get("preload", {}).get("s", 0.0)
        res["settle_s"] = pre.get("settle_s", 0.0)
        res["settle_mib"] = pre.get("settle_mib", 0.0)
        res["warm_s"] = out.get("warm", {}).get("s", 0.0)
        if srv is not None:
            res["stats"] = harness.mysqlproxy.stats(srv.port)
            res["rss_mib"] = harness.servers.rss_mib(srv.proc.pid)
        if data_dir is not None:
            res["disk_mib"] = sum(f.stat().st_size for f in data_dir.rglob("*") if f.is_file()) / 2**20
        res["cache_pct"] = None if cfg == "db" else cache_share(res)
        return res
    finally:
        if srv is not None:
            srv.stop()
        if data_dir is not None:
            shutil.rmtree(data_dir, ignore_errors=True)


def measure(quick: bool):
    """Loads the largest size once and runs every configuration at every size; returns (results, info)."""
    sizes = QUICK_SIZES if quick else SIZES
    tmp = Path(tempfile.mkdtemp(prefix="seeds-e001-"))
    results, info = {}, {"sizes": sizes}
    try:
        progress(EXP, "building the Go app (bench/seeds/e001)")
        exe = build_driver(tmp)
        progress(EXP, f"starting MariaDB (buffer pool {BUFFER_POOL_MB}M) and loading {sizes[-1]:,} rows per table")
        with harness.mariadb.start_mariadb(extra_args=MARIADB_ARGS) as db:
            t = time.monotonic()
            info.update(load(db, sizes[-1]))
            info["load_s"] = time.monotonic() - t
            info["mariadb"] = db.sql("SELECT VERSION()").strip()
            progress(EXP, f"loaded in {info['load_s']:.1f} s: players {info['players_bytes'] / 2**20:.0f} MiB, "
                          f"profiles {info['profiles_bytes'] / 2**20:.0f} MiB")
            for i, n in enumerate(sizes):
                for j, (label, cfg) in enumerate(CONFIGS):
                    r = point(exe, db, cfg, n, 100 * i + j + 1, tmp, quick)
                    results[(cfg, n)] = r
                    hit = f", {r['cache_pct']:.0f}% of reads from the cache" if r["cache_pct"] is not None else ""
                    err = f", {r['errors']} ERRORS ({r['first_error']})" if r["errors"] else ""
                    prep = "".join(f", {k} {r[k + '_s']:.1f} s" for k in ("preload", "settle", "warm") if r[k + "_s"])
                    progress(EXP, f"{n:>9,} rows {label:<24} {r['tps']:>7,.0f} TPS  p50 {r['p50_ms']:.2f} ms  "
                                  f"p99 {r['p99_ms']:.1f} ms{hit}{prep}{err}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results, info


def data_mib(info: dict, n: int) -> float:
    """Both tables' InnoDB size (data + index) for ids 1..n, MiB (proportional to the full load)."""
    return (info["players_bytes"] + info["profiles_bytes"]) * n / info["rows"] / 2**20


def cache_mib(info: dict, n: int) -> float:
    """What ids 1..n take as cache-aside items: values + keys + ~50 bytes of item header each, MiB."""
    return n * (info["player_value"] + info["profile_value"] + 2 * (50 + 20)) / 2**20


def report(results: dict, info: dict, elapsed: float, quick: bool) -> str:
    """The markdown body: headline, table, notes, how it was scaled, the seed's figures."""
    sizes = info["sizes"]
    rows = []
    for n in sizes:
        for label, cfg in CONFIGS:
            r = results[(cfg, n)]
            share = r["cache_pct"]
            ireads = r["innodb"].get("Innodb_buffer_pool_reads", 0) / max(r["txns"], 1)
            cpu = {k: 1000 * v / max(r["txns"], 1) for k, v in r.get("cpu_s", {}).items()}
            cpu_cell = "+".join(f"{cpu.get(k, 0):.2f}" for k in ("mariadb", "cache", "client"))
            busy = sum(r.get("cpu_s", {}).values()) / r["dur_s"]
            rows.append([f"{n:,}", f"{data_mib(info, n):.0f}", label, round(r["tps"]), r["p50_ms"], r["p99_ms"],
                         r["upd_p50_ms"], "-" if share is None else f"{share:.0f}%", f"{ireads:.2f}",
                         f"{cpu_cell} = {sum(cpu.values()):.2f}", f"{busy:.2f}",
                         f"{r['rss_mib']:.0f}" if r.get("rss_mib") else "-", str(r["errors"])])
    big, small = sizes[-1], sizes[0]
    t = {cfg: results[(cfg, big)]["tps"] for _, cfg in CONFIGS}
    ts = {cfg: results[(cfg, small)]["tps"] for _, cfg in CONFIGS}
    best_small = max((c for _, c in CONFIGS), key=lambda c: ts[c])
    label = dict((c, lbl) for lbl, c in CONFIGS)
    big_mib = data_mib(info, big)
    others = ", ".join(f"{label[c]} {t[c]:,.0f} ({t[c] / t['db']:.2f}x, "
                       f"{results[(c, big)]['cache_pct']:.0f}% of reads from the cache)" for _, c in CONFIGS[1:])
    headline = (f"**{big:,} rows per table ({big_mib:.0f} MiB: {big_mib / BUFFER_POOL_MB:.1f}x the "
                f"{BUFFER_POOL_MB} MiB buffer pool, ~{cache_mib(info, big) / CACHE_MB:.1f}x the {CACHE_MB} MiB "
                f"caches): MariaDB alone "
                f"{t['db']:,.0f} TPS ({100 * (t['db'] / ts['db'] - 1):+.0f}% against {small:,} rows, which fit); "
                f"{others}. Where the data fits the caches ({small:,} rows) the best is {label[best_small]}: "
                f"{ts[best_small]:,.0f} TPS ({ts[best_small] / ts['db']:.2f}x MariaDB).**")
    body = [headline, ""]
    if quick:
        body += [f"*`--quick` run: tiny sizes, {QUICK_DURATION_S} s per point; the numbers mean nothing.*", ""]
    body += [common.md_table(
        ["rows/table", "data MiB", "config", "TPS", "p50 ms", "p99 ms", "update p50 ms", "reads from cache",
         "InnoDB disk reads/txn", "CPU ms/txn: MariaDB+cache+client", "CPUs busy", "cache RSS MiB", "errors"],
        rows), ""]
    body += [f"TPS: A+B+C transactions per second over the measured window, {CLIENTS} clients; p50/p99 per "
             "transaction; `update p50`: step B alone (SQL UPDATE + the cache set for cache-aside, `set "
             "@@players` for containers). `reads from cache`: the share of the two reads (A, C) that never "
             "reached MariaDB, from its `Handler_read_key` (3 index lookups per transaction without a cache, "
             "one of them the UPDATE's; it agrees with the caches' own counters, `get_hits` / `get_misses`, "
             "`Qcache_hits`). `InnoDB disk reads/txn`: `Innodb_buffer_pool_reads` per "
             "transaction (reads, B's included, that missed the buffer pool). `CPU ms/txn`: CPU time of "
             "mariadbd, of the cache server (memcached, sqlcached) and of the Go client over the measured "
             "window per transaction; `CPUs busy`: their sum per second (the machine has 2). `cache RSS`: "
             "the cache server's resident memory at the end of the run.", ""]
    busy_all = statistics.mean(sum(r.get("cpu_s", {}).values()) / r["dur_s"] for r in results.values())
    notes = []
    for n in sizes:
        m, p, q = results[("memcached", n)], results[("persistent", n)], results[("qc", n)]
        ms, ps, qs = m.get("stats", {}), p.get("stats", {}), q.get("stats", {})
        pc = p["cache"]
        disk_share = 100.0 * pc.get("disk_hits", 0) / max(pc.get("get_hits", 0), 1)
        notes.append(f"{n:,} rows ({2 * n:,} cache-aside keys): memcached holds {ms.get('curr_items', 0):,} items "
                     f"(preload {m['preload_s']:.1f} s); sqlcached persistent {ps.get('curr_items', 0):,} in memory "
                     f"and all on disk ({p.get('disk_mib', 0):.0f} MiB data dir), {disk_share:.0f}% of its hits "
                     f"read from disk, preload {p['preload_s']:.1f} s, then {p['settle_s']:.0f} s of workload until "
                     f"it stopped compacting ({p['settle_mib']:.0f} MiB written meanwhile); "
                     f"query cache {qs.get('Qcache_queries_in_cache', 0):,} results "
                     f"({qs.get('Qcache_bytes', 0) / 2**20:.0f} MiB), warm pass {q['warm_s']:.1f} s")
    body += ["Cache contents after each run:", ""] + [f"- {e}" for e in notes] + [""]
    body += ["Reading the table: player rows are written right after every read, so for the query cache "
             "(the UPDATE invalidates the cached SELECT) and the containers (the write drops the memory "
             "copy) step A always reaches MariaDB; only the email lookup can be served from memory. The "
             "seed's cache-aside code sets the new row after the update, so there A hits as well. sqlcached "
             f"persistent's RSS reached {max(results[('persistent', n)].get('rss_mib', 0) for n in sizes):.0f} MiB "
             f"with `-m {CACHE_MB}` (memcached: "
             f"{max(results[('memcached', n)].get('rss_mib', 0) for n in sizes):.0f} MiB): the disk tier's fjall "
             "block cache (64 MiB) and memtables (up to 32 MiB per keyspace) come on top of the item memory, "
             "and its files are read through the OS page cache (InnoDB's are not: O_DIRECT). Average CPUs busy "
             f"over all points: {busy_all:.2f} "
             "of 2, so every configuration here is mostly CPU-bound (plus one redo-log fsync per UPDATE), not "
             "disk-bound as the seed's MySQL was.", ""]
    body += ["## How it was scaled", "",
             f"The seed: {SEED['rows']:,} rows per table (~{SEED['data_gb']} GB), a {SEED['buffer_pool_mb']}M "
             f"buffer pool (~6% of the data), memcached 1, 2 and 4 GB (25%-100%), a Perl client on the same "
             f"box, MySQL 5.x. Here: {', '.join(f'{s:,}' for s in sizes)} rows per table "
             f"({', '.join(f'{data_mib(info, s):.0f}' for s in sizes)} MiB of InnoDB data + index; values of "
             f"~{info['player_value']:.0f} bytes per player, ~{info['profile_value']:.0f} per profile), a "
             f"{BUFFER_POOL_MB}M buffer pool (MariaDB {info['mariadb']}, O_DIRECT; `innodb_lru_scan_depth=128` "
             f"and `innodb_old_blocks_time=0` so that a working set that fits the small pool stays in it, "
             f"see MARIADB_ARGS; `innodb_flush_log_at_trx_commit=1`, "
             f"binlog on in ROW format as the query cache and the `caching` containers need), and "
             f"{CACHE_MB} MiB for every cache (memcached and sqlcached `-m {CACHE_MB}`, `--query-cache-size "
             f"{CACHE_MB}m`; the containers' memory copies get a quarter of `-m`, as docs/containers.md says). "
             f"The largest size was loaded once ({info['load_s']:.0f} s) and smaller sizes use ids 1..N only: "
             f"the emails sort like the ids, so the rows of 1..N are one contiguous key range in both tables "
             f"and the buffer pool behaves as for an N-row table. The client is one Go program "
             f"(bench/seeds/e001: go-sql-driver with interpolateParams, gomemcache), {CLIENTS} connections, "
             f"uniform random ids as in the seed, a different random sequence at every point. Every "
             f"configuration starts empty at every size and is brought to the seed's steady state before "
             f"measuring: the cache-aside caches get all rows of 1..N bulk-loaded (pipelined sets; memcached "
             f"keeps what fits, sqlcached keeps the rest on disk), then the workload runs unmeasured in "
             f"{QUICK_SETTLE_CHUNK_S if quick else SETTLE_CHUNK_S} s chunks until the cache server writes less "
             f"than {SETTLE_QUIET_MIB} MiB to disk in one (at least two chunks, at most {SETTLE_MAX_S} s: fjall "
             f"flushes and compacts the bulk load on the first writes); the query cache and the containers "
             f"read the first min(N, {WARM_MAX:,}) profiles (as many as their memory holds), then "
             f"{QUICK_WARMUP_S if quick else WARMUP_S} s of the workload unmeasured and "
             f"{QUICK_DURATION_S if quick else DURATION_S} s measured. Everything (MariaDB, the cache, the "
             f"client) shares 2 CPUs over loopback; the datadir is on the VM's disk. Wall time of this run: "
             f"{elapsed:.0f} s.", ""]
    seed_rows = [["MySQL/MariaDB alone, data well past the buffer pool", f"~{SEED['mysql_tps']} TPS",
                  f"{t['db']:,.0f} TPS at {big:,} rows ({ts['db']:,.0f} at {small:,} rows, which fit)"]]
    for n in sizes:
        held = min(1.0, results[("memcached", n)].get("stats", {}).get("curr_items", 0) / (2 * n))
        if held >= 0.9:
            seed = f"4 GB (all): ~{SEED['memcached_4g_tps']} TPS (1100-2000), ~10x MySQL"
        elif held >= 0.35:
            seed = "2 GB (~half): 400-1800 TPS, jumpy"
        else:
            seed = "1 GB (~a quarter): a regression, ~13% below MySQL"
        r = results[("memcached", n)]
        db_tps = results[("db", n)]["tps"]
        seed_rows.append([f"+ memcached holding {100 * held:.0f}% of the rows ({n:,} rows)", seed,
                          f"{r['tps']:,.0f} TPS ({r['tps'] / db_tps:.2f}x MariaDB at that size)"])
    seed_rows.append(["+ a cache that keeps every row (sqlcached persistent)", "(not in the seed)",
                      f"{t['persistent']:,.0f} TPS at {big:,} rows ({t['persistent'] / t['db']:.2f}x MariaDB)"])
    seed_rows.append(["update latency", f"over {SEED['update_ms']} ms (with memcached)",
                      f"p50 {results[('memcached', big)]['upd_p50_ms']:.1f} ms with memcached, "
                      f"{results[('db', big)]['upd_p50_ms']:.1f} ms MariaDB alone ({big:,} rows)"])
    body += ["## The seed's figures next to ours", "",
             common.md_table(["", f"seed ({SEED['rows']:,} rows, {SEED['buffer_pool_mb']}M pool, memcached)",
                              f"here ({BUFFER_POOL_MB}M pool, {CACHE_MB}M caches)"], seed_rows), ""]
    body += ["![plot](001_game.png)", ""]
    return "\n".join(body)


def plot(results: dict, info: dict) -> Path:
    """TPS against rows per table, one line per config, with the buffer pool / cache limits; the seed beside."""
    import matplotlib.ticker

    sizes = info["sizes"]
    fig, (ax, ax2) = common.figure(2, width=6.0, height=3.8)
    styles = {"db": ("k", "o"), "memcached": ("tab:orange", "s"), "persistent": ("tab:blue", "^"),
              "containers": ("tab:green", "D"), "qc": ("tab:purple", "v")}
    for label, cfg in CONFIGS:
        c, m = styles[cfg]
        ax.plot(sizes, [results[(cfg, n)]["tps"] for n in sizes], color=c, marker=m, label=label)
    per_row_db, per_row_cache = data_mib(info, 1), cache_mib(info, 1)
    ymax = max(r["tps"] for r in results.values())
    for x, color, ls, text in ((BUFFER_POOL_MB / per_row_db, "grey", "--", f"data > {BUFFER_POOL_MB}M buffer pool"),
                               (CACHE_MB / per_row_cache, "tab:orange", ":", f"rows > {CACHE_MB}M cache (-m)")):
        if not sizes[0] / 1.5 < x < sizes[-1] * 1.5:
            continue
        ax.axvline(x, color=color, ls=ls, lw=0.9)
        ax.text(x * 1.04, ymax * 0.04, text, rotation=90, fontsize=7, color=color, va="bottom")
    ax.set_xscale("log")
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{n / 1000:g}k\n{data_mib(info, n):.0f} MiB" for n in sizes], fontsize=7)
    ax.set_xlim(sizes[0] / 1.5, sizes[-1] * 1.5)
    ax.set_ylim(0, ymax * 1.15)
    ax.set_xlabel("rows per table (log) / InnoDB data of both tables")
    ax.set_ylabel("transactions/s (A+B+C)")
    ax.set_title(f"Here: {CLIENTS} clients, 2 CPUs, {BUFFER_POOL_MB}M buffer pool, {CACHE_MB}M caches", fontsize=9)
    ax.legend(fontsize=7, loc="best")
    # The seed, redrawn from the numbers in its text (its charts are not in the seed file).
    labels = ["MySQL\n(256M pool)", "+memcached\n1 GB", "+memcached\n2 GB", "+memcached\n4 GB"]
    ax2.bar([0], [SEED["mysql_tps"]], color="k")
    ax2.bar([1], [SEED["mysql_tps"] * 0.87], color="tab:orange", alpha=0.5, hatch="//")
    lo, hi = SEED["memcached_2g_range"]
    ax2.bar([2], [hi - lo], bottom=lo, color="tab:orange", alpha=0.5)
    lo, hi = SEED["memcached_4g_range"]
    ax2.bar([3], [hi - lo], bottom=lo, color="tab:orange", alpha=0.5)
    ax2.plot([3], [SEED["memcached_4g_tps"]], "o", color="tab:orange")
    ax2.text(1, SEED["mysql_tps"] * 0.9 + 40, "\"regression\"\n(~13% below)", ha="center", fontsize=7)
    ax2.text(2, SEED["memcached_2g_range"][1] + 40, "jumpy", ha="center", fontsize=7)
    ax2.text(3, SEED["memcached_4g_range"][1] + 40, "avg ~1400", ha="center", fontsize=7)
    ax2.set_xticks(range(4))
    ax2.set_xticklabels(labels, fontsize=7)
    ax2.set_ylabel("TPS")
    ax2.set_ylim(0, 2400)
    ax2.set_title("The seed (2014), redrawn from its text: 5M rows/table, ~4 GB", fontsize=9)
    return common.save_plot(fig, NAME)


def main(quick: bool) -> None:
    """Measures, writes bench/results/seeds/001_game.md and .png."""
    t0 = time.monotonic()
    results, info = measure(quick)
    elapsed = time.monotonic() - t0
    body = report(results, info, elapsed, quick)
    md = common.write_report(NAME, "Seed 001: the game app (read by id, update, lookup by email) as data "
                                   "outgrows memory", body)
    png = plot(results, info)
    progress(EXP, f"done in {elapsed:.0f} s: {md} and {png}")


if __name__ == "__main__":
    main(common.parse_args(__doc__).quick)
