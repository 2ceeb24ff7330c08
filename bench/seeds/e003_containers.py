"""Seed 003 replayed: SQL containers vs plain SQL for set and get, by connection count and
write batch size (the InnoDB memcached plugin's performance tables, MySQL 5.6.7-rc).

The measuring is `bench/containers.sh` (one MariaDB, table `bench.demo_test` as the seed's
`test/demo_test`, sqlcached with container `demo` (innodb_only) over it; the memcached side
is `bench/loadgen`, the SQL side sysbench with prepared `INSERT ... ON DUPLICATE KEY UPDATE`
(the plugin's set: look up, then insert or update) and `SELECT c2 ... WHERE c1=?`). This
script runs it twice, with `w_batch_size` 1 (commit before every reply, as autocommit SQL)
and 32 (the plugin's `daemon_memcached_w_batch_size`: sets committed in groups), parses the
raw lines, and writes the table and the plot.

Scaled: the seed's machine had 8 cores and 16 GB and went up to 512 connections; here 2 CPUs
shared by MariaDB, sqlcached and the clients, 8/32/128 connections (MariaDB's default
max_connections is 151), KEYS rows (100k) of 100-byte values, DURATION s per point.
"""
import os
import re
import subprocess
import time

import common

NAME = "003_containers"
#: The seed's two tables: connections -> (plugin QPS, SQL QPS).
SEED_SET = {8: (30000, 5600), 32: (59000, 13000), 128: (68000, 8000), 512: (63000, 6800)}
SEED_GET = {8: (42000, 27000), 32: (101000, 55000), 128: (117000, 52000), 512: (109000, 52000)}


def run_containers_sh(env_extra: dict, label: str) -> list:
    """Runs bench/containers.sh with env_extra; returns its raw lines (the new .log file)."""
    results = common.ROOT / "bench" / "results"
    before = set(results.glob("containers-*.log")) if results.is_dir() else set()
    env = {**os.environ, **env_extra}
    common.progress("003", f"bench/containers.sh {label} ({' '.join(f'{k}={v}' for k, v in env_extra.items())})")
    p = subprocess.Popen(["bash", str(common.ROOT / "bench" / "containers.sh")], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        line = line.rstrip()
        if re.search(r"conns=\d+: |^\[containers\] (set|get|caching)", line):
            common.progress("003", line.replace("[containers] ", ""))
    if p.wait() != 0:
        raise RuntimeError(f"bench/containers.sh ({label}) exited {p.returncode}")
    new = sorted(set(results.glob("containers-*.log")) - before)
    if not new:
        raise RuntimeError("bench/containers.sh wrote no .log")
    return new[-1].read_text().splitlines()


def parse(lines: list) -> dict:
    """{(op, conns, side): {key: float}} from containers.sh raw lines (side: mc or sql)."""
    out = {}
    for line in lines:
        m = re.match(r"^(set|get) conns=(\d+) (RESULT|SYSBENCH) (.*)$", line)
        if not m:
            continue
        kv = dict(x.split("=", 1) for x in m.group(4).split() if "=" in x)
        vals = {}
        for k, v in kv.items():
            try:
                vals[k] = float(v)
            except ValueError:
                pass
        side = "mc" if m.group(3) == "RESULT" else "sql"
        out[(m.group(1), int(m.group(2)), side)] = vals
    return out


def main(quick: bool) -> None:
    """Runs both batch sizes, writes the report and the plot."""
    conns = [8, 32] if quick else [8, 32, 128]
    base = {"CONNS": " ".join(map(str, conns)), "DURATION": "2" if quick else "5", "WARMUP": "1",
            "KEYS": "5000" if quick else "100000"}
    t0 = time.monotonic()
    b1 = parse(run_containers_sh({**base, "PARTS": "set get", "W_BATCH": "1"}, "w_batch_size=1"))
    b32 = parse(run_containers_sh({**base, "PARTS": "set", "W_BATCH": "32"}, "w_batch_size=32"))
    elapsed = time.monotonic() - t0

    def ops(d, op, c, side):
        """ops/s of one point (0 if missing)."""
        return d.get((op, c, side), {}).get("ops_s", 0.0)

    rows = []
    for c in conns:
        sql_set, sql_get = ops(b1, "set", c, "sql"), ops(b1, "get", c, "sql")
        s1, s32, g = ops(b1, "set", c, "mc"), ops(b32, "set", c, "mc"), ops(b1, "get", c, "mc")
        seed_s = SEED_SET.get(c)
        seed_g = SEED_GET.get(c)
        rows.append([c, s1, s32, sql_set, f"**{s1 / sql_set:.2f}** / {s32 / sql_set:.2f}" if sql_set else "-",
                     f"{seed_s[0] / seed_s[1]:.2f}" if seed_s else "-",
                     g, sql_get, f"**{g / sql_get:.2f}**" if sql_get else "-",
                     f"{seed_g[0] / seed_g[1]:.2f}" if seed_g else "-"])
    table = common.md_table(
        ["conns", "set @@demo ops/s (batch 1)", "(batch 32)", "SQL upsert ops/s", "× SQL (batch 1 / 32)",
         "seed plugin × SQL", "get @@demo ops/s", "SQL select ops/s", "× SQL", "seed plugin × SQL"], rows)
    seed = common.md_table(
        ["conns", "plugin set QPS", "SQL set QPS", "× faster", "plugin get QPS", "SQL get QPS", "× faster"],
        [[c, s[0], s[1], f"{s[0] / s[1]:.2f}", SEED_GET[c][0], SEED_GET[c][1], f"{SEED_GET[c][0] / SEED_GET[c][1]:.2f}"]
         for c, s in SEED_SET.items()])
    best = max(rows, key=lambda r: r[0])
    headline = (f"At {best[0]} connections a container `set` runs {best[1] / best[3]:.1f}x plain SQL "
                f"({best[2] / best[3]:.1f}x with w_batch_size=32) and a container `get` {best[6] / best[7]:.1f}x "
                f"(seed: plugin {SEED_SET[128][0] / SEED_SET[128][1]:.1f}x and {SEED_GET[128][0] / SEED_GET[128][1]:.1f}x at 128).")
    body = f"""**{headline}**

## Ours: sqlcached containers vs SQL on the same MariaDB

{table}

Each point: {base['DURATION']} s measured after {base['WARMUP']} s warmup; ops/s are requests (one key each)
completed per second. `set @@demo.key:N` / `get @@demo.key:N` over the memcached protocol
(`bench/loadgen`, 100-byte values, uniform keys over {base['KEYS']} rows) against sysbench on the same
table (`bench/containers.lua`: prepared `INSERT ... ON DUPLICATE KEY UPDATE`, `SELECT c2 FROM demo_test
WHERE c1=?`). Batch 1: every set committed before its reply; batch 32: sets committed in groups of up to
32 (a crash loses at most the uncommitted group, as the plugin). `w_batch_size` > 1 leaves the
performance path (per-worker backend connections and group commit are built for batch size 1,
docs/containers.md), so batch 32 is no faster here and slower from 32 connections on: group commit
already lets concurrent sets share one transaction, which is what the plugin's batching bought,
without acknowledging uncommitted writes. Raw lines and latencies:
`bench/results/containers-*.md`. Run time {elapsed:.0f} s.

## The seed (MySQL 5.6.7-rc InnoDB memcached plugin, -t8, 2x4-core Xeon, 16 GB)

{seed}

## How it was scaled

The seed's 8-core server went to 512 client connections; this machine has 2 CPUs that MariaDB,
sqlcached and both load generators share, so connections stop at 128 (MariaDB's default
max_connections is 151) and absolute numbers are lower. The ratio to plain SQL on the same
MariaDB, measured in the same run, is what compares.
"""
    common.write_report(NAME, "Seed 003: SQL containers vs SQL, set and get", body)
    plot(rows, conns)
    common.progress("003", f"done: {headline}")


def style(ax, xs: list, ylabel: str, title: str) -> None:
    """Log2 connection axis labelled with xs, y from 0, small title and legend."""
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(x) for x in xs])
    ax.set_xlabel("client connections")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.set_ylim(bottom=0)


def plot(rows: list, conns: list) -> None:
    """Left: our ops/s by connections; right: × SQL, ours vs the seed's plugin."""
    fig, (a, b) = common.figure(2, width=5.2, height=3.6)
    a.plot(conns, [r[1] for r in rows], "o-", color="tab:blue", label="container set (batch 1)")
    a.plot(conns, [r[2] for r in rows], "o--", color="tab:blue", label="container set (batch 32)")
    a.plot(conns, [r[3] for r in rows], "s-", color="tab:gray", label="SQL upsert")
    a.plot(conns, [r[6] for r in rows], "o-", color="tab:green", label="container get")
    a.plot(conns, [r[7] for r in rows], "s-", color="tab:olive", label="SQL select")
    style(a, conns, "ops/s", "sqlcached containers vs SQL (MariaDB 10.11, 2 CPUs)")
    sc = list(SEED_SET)
    b.plot(conns, [r[1] / r[3] if r[3] else 0 for r in rows], "o-", color="tab:blue", label="ours: set (batch 1)")
    b.plot(conns, [r[2] / r[3] if r[3] else 0 for r in rows], "o--", color="tab:blue", label="ours: set (batch 32)")
    b.plot(conns, [r[6] / r[7] if r[7] else 0 for r in rows], "o-", color="tab:green", label="ours: get")
    b.plot(sc, [SEED_SET[c][0] / SEED_SET[c][1] for c in sc], "x:", color="0.5", label="seed plugin: set")
    b.plot(sc, [SEED_GET[c][0] / SEED_GET[c][1] for c in sc], "+:", color="0.3", label="seed plugin: get")
    b.axhline(1, color="0.8", lw=0.8)
    style(b, sc, "× plain SQL on the same server", "speed-up over SQL: ours vs the seed's InnoDB plugin")
    common.save_plot(fig, NAME)


if __name__ == "__main__":
    main(common.parse_args(__doc__).quick)
