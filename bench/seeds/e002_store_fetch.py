"""Seed 002 replay: a PHP-like single-client store/fetch loop (libmemcached, serialized objects)
against memcached, sqlcached (memory, persistent) and sqlcached SQL containers on MariaDB
(the InnoDB memcached plugin's role), plus a primary-key SELECT; then a restart of each.

The seed (MySQL Performance Blog, MySQL 5.6 InnoDB memcached plugin): Zend_Cache over
libmemcached stores 100,000 objects `key_$i` once and fetches them 10 times over, against
memcached and against the InnoDB plugin, and also reads the same table with
`SELECT * FROM container WHERE id=...`; its argument is that a persistent cache has no
warm-up after a restart. Here the same loop runs through pylibmc (libmemcached's Python
binding) with the same client code for every server: each value is what Zend stored,
`(serialize(object), time(), lifetime)` serialized again (pickle, pylibmc's flag 1),
lifetime 3600 s, compression on with PHP's threshold (2000 bytes, so these ~200-byte
objects go uncompressed, as the seed's did). Scaled: N objects (30,000; seed 100,000),
F fetch passes (3; seed 10), on loopback on one shared 2-CPU machine instead of two
single-core VirtualBox VMs on a host-only network. After the passes each server is
stopped (SIGTERM; kill -9 too for the persistent ones, after rewriting some keys) and
restarted: time from process start until it answers a `get`, and the hit rate of one full
fetch pass right after.
"""
import pickle
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import figure, harness, md_table, parse_args, progress, save_plot, write_report  # noqa: E402

NAME = "002_store_fetch"
EXP = "e002"
LIFETIME = 3600  # Zend_Cache 'lifetime' => 3600
COMPRESS_THRESHOLD = 2000  # PHP memcached's compression_threshold default (bytes)
CHUNK = 1000  # min/max ms/op are over chunks of this many operations
DB_SCHEMA = "memcached"
TABLE = "container"

# The seed's numbers (ms per op; min/max over its runs).
SEED = {
    "memcached": {"store": 0.60486, "fetch": 0.288257, "store_mm": (0.586, 0.805), "fetch_mm": (0.2843, 0.3026)},
    "plugin": {"store": 2.33863, "fetch": 0.347181, "store_mm": (1.449, 7.324), "fetch_mm": (0.3208, 0.4159)},
    "select": {"fetch": 0.441573, "fetch_mm": (0.4327, 0.5129)},
}


class CacheObject:
    """A small application object, like the seed's `new Object()` (a few fields)."""

    def __init__(self, i: int, version: int = 1):
        """Fields derived from the key number (checked on every fetch)."""
        self.id = i
        self.version = version
        self.name = f"object {i}"
        self.email = f"user{i}@example.org"
        self.tags = ["cache", "bench", "seed002"]
        self.score = i * 0.5


def zend_value(i: int, version: int = 1):
    """What Zend_Cache_Backend_Libmemcached stores: (serialized object, time(), lifetime)."""
    return (pickle.dumps(CacheObject(i, version)), int(time.time()), LIFETIME)


def client_for(port: int):
    """A pylibmc client on one server, text protocol, libmemcached defaults (as PHP's)."""
    import pylibmc

    c = pylibmc.Client([f"127.0.0.1:{port}"], binary=False)
    c.get("warm_up_connection")
    return c


def chunk_stats(marks, n):
    """(min, max) ms/op over the CHUNK-op chunks given the perf_counter marks at boundaries."""
    per = []
    for k in range(1, len(marks)):
        ops = min(CHUNK, n - (k - 1) * CHUNK)
        per.append((marks[k] - marks[k - 1]) * 1000 / ops)
    return (min(per), max(per)) if per else (0.0, 0.0)


def store_pass(c, n: int, version: int = 1):
    """Stores key_0..key_{n-1}; returns (ms/op, (min, max) per chunk)."""
    pc = time.perf_counter
    marks = [pc()]
    for i in range(n):
        if not c.set(f"key_{i}", zend_value(i, version), time=LIFETIME, min_compress_len=COMPRESS_THRESHOLD):
            raise RuntimeError(f"set key_{i} failed")
        if (i + 1) % CHUNK == 0 or i + 1 == n:
            marks.append(pc())
    return (marks[-1] - marks[0]) * 1000 / n, chunk_stats(marks, n)


def rewrite_keys(c, k: int):
    """Overwrites key_0..key_{k-1} with version 2 of their object (for the kill -9 check)."""
    for i in range(k):
        if not c.set(f"key_{i}", zend_value(i, 2), time=LIFETIME, min_compress_len=COMPRESS_THRESHOLD):
            raise RuntimeError(f"set key_{i} failed")


def check(v, i: int):
    """The object's version if v is a correct value for key_i (raises otherwise)."""
    data, _t, life = v
    obj = pickle.loads(data)
    if obj.id != i or life != LIFETIME:
        raise RuntimeError(f"key_{i}: wrong value {obj.__dict__}")
    return obj.version


def fetch_passes(get, n: int, passes: int):
    """F passes of get(key_i): (ms/op, chunk (min, max), last pass's hits, its version-2 objects)."""
    pc = time.perf_counter
    marks = [pc()]
    hits = v2 = 0
    for p in range(passes):
        hits = v2 = 0
        for i in range(n):
            v = get(f"key_{i}")
            if v is not None:
                hits += 1
                if check(v, i) == 2:
                    v2 += 1
            if (i + 1) % CHUNK == 0 or i + 1 == n:
                marks.append(pc())
    total = n * passes
    cpp = (n + CHUNK - 1) // CHUNK
    per = [chunk_stats(marks[p * cpp:(p + 1) * cpp + 1], n) for p in range(passes)]
    mm = (min(x[0] for x in per), max(x[1] for x in per))
    return (marks[-1] - marks[0]) * 1000 / total, mm, hits, v2


def answering(port: int) -> bool:
    """True if the server on port answers `get key_0` with VALUE/END (not an error)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"get key_0\r\n")
            buf = b""
            while True:
                part = s.recv(65536)
                if not part:
                    return False
                buf += part
                if buf.endswith(b"END\r\n") and (buf.startswith(b"VALUE") or buf == b"END\r\n"):
                    return True
                if b"\r\n" in buf and not buf.startswith(b"VALUE"):
                    return False
    except OSError:
        return False


def restart(srv, hard: bool):
    """SIGTERM (SIGKILL if hard) and the same command line again: (server, stop ms, ms to answering)."""
    t = time.perf_counter()
    if hard:
        srv.sigkill()
    else:
        srv.terminate()
    stop_ms = (time.perf_counter() - t) * 1000
    t0 = time.perf_counter()
    new = srv.restart(wait=False)
    deadline = t0 + 60
    while not answering(new.port):
        if new.proc.poll() is not None:
            raise RuntimeError(f"restarted server exited with {new.proc.returncode}")
        if time.perf_counter() > deadline:
            raise TimeoutError("restarted server does not answer")
        time.sleep(0.002)
    return new, stop_ms, (time.perf_counter() - t0) * 1000


def mariadb_rss(db) -> float:
    """RSS (MiB) of the MariaDB server in db's directory."""
    try:
        return harness.servers.rss_mib(int((db.base / "mysqld.pid").read_text().split()[0]))
    except (OSError, ValueError):
        return 0.0


CONTAINERS_TOML = """
[backend]
kind = "mariadb"
url = "{url}?prefer_socket=false"
pool_size = 4
connect_timeout_ms = 2000
query_timeout_ms = 5000
plugin_tables = "off"

[options]
w_batch_size = 1          # the plugin's daemon_memcached_w_batch_size default
r_batch_size = 1
plain_keys = "default_container"

[[container]]
name = "default"
schema = "{schema}"
table = "{table}"
key_column = "id"
value_columns = "data"
flags_column = "flags"
cas_column = "cas"
expire_column = "expires"
unique_index = "PRIMARY"
policy = "innodb_only"
"""


def run_memcache_config(label, start, n, passes, rewrite_k, kill9, rss_extra=None):
    """Store, F fetch passes, RSS, then SIGTERM (and kill -9) restarts each with a pass: the row dict."""
    srv = start()
    live = [srv]
    try:
        c = client_for(srv.port)
        progress(EXP, f"{label}: store {n:,}")
        store, store_mm = store_pass(c, n)
        rss = harness.servers.rss_mib(srv.proc.pid)
        extra = rss_extra() if rss_extra else None
        progress(EXP, f"{label}: fetch {passes} x {n:,}")
        fetch, fetch_mm, hits, _ = fetch_passes(c.get, n, passes)
        if hits != n:
            raise RuntimeError(f"{label}: only {hits}/{n} hits before the restart")
        c.disconnect_all()
        row = dict(label=label, n=n, store=store, store_mm=store_mm, fetch=fetch, fetch_mm=fetch_mm,
                   rss=rss, rss_db=extra, restarts=[])
        plan = [("SIGTERM", False)] + ([("kill -9", True)] if kill9 else [])
        for sig, hard in plan:
            if hard:
                c = client_for(live[-1].port)
                rewrite_keys(c, rewrite_k)
                c.disconnect_all()
            new, stop_ms, ready_ms = restart(live[-1], hard)
            live.append(new)
            c = client_for(new.port)
            cold, cold_mm, hits, v2 = fetch_passes(c.get, n, 1)
            c.disconnect_all()
            progress(EXP, f"{label}: {sig} restart: ready in {ready_ms:.0f} ms, {hits / n:.0%} hits")
            row["restarts"].append(dict(sig=sig, stop_ms=stop_ms, ready_ms=ready_ms, hit=100.0 * hits / n,
                                        cold=cold, rewritten=rewrite_k if hard else 0, v2=v2))
        return row
    finally:
        for s in live:
            s.stop()


def restart_at_size(work, n):
    """sqlcached --data-dir filled with n objects, SIGTERM restart: (ms to answering, hit %, MiB on disk)."""
    d = work / f"data-fill-{n}"
    s = harness.servers.start_sqlcached("-m", "256", "--data-dir", str(d), log=str(work / "fill.log"))
    live = [s]
    try:
        c = client_for(s.port)
        progress(EXP, f"restart at size: filling {n:,} objects")
        for b in range(0, n, CHUNK):
            c.set_multi({f"key_{i}": zend_value(i) for i in range(b, min(n, b + CHUNK))}, time=LIFETIME,
                        min_compress_len=COMPRESS_THRESHOLD)
        c.disconnect_all()
        new, _stop, ready = restart(s, False)
        live.append(new)
        c = client_for(new.port)
        hits = sum(len(c.get_multi([f"key_{i}" for i in range(b, min(n, b + CHUNK))])) for b in range(0, n, CHUNK))
        c.disconnect_all()
        mib = sum(f.stat().st_blocks * 512 for f in d.rglob("*") if f.is_file()) / 2**20
        progress(EXP, f"restart at size: {n:,} objects, ready in {ready:.0f} ms, {hits / n:.0%} hits")
        return ready, 100.0 * hits / n, mib
    finally:
        for x in live:
            x.stop()


def run_select(db, n, passes):
    """The seed's third row: SELECT * FROM container WHERE id=... through PyMySQL, F passes."""
    import pymysql

    conn = pymysql.connect(host=db.host, port=db.port, user=db.user, password=db.password,
                           database=DB_SCHEMA, autocommit=True)
    try:
        cur = conn.cursor()
        q = f"SELECT * FROM {TABLE} WHERE id=%s"

        def get(key):
            """One row by primary key, decoded as pylibmc would (pickle)."""
            cur.execute(q, (key,))
            r = cur.fetchone()
            return None if r is None else pickle.loads(r[1])

        get("key_0")
        progress(EXP, f"MariaDB SELECT: fetch {passes} x {n:,}")
        fetch, fetch_mm, hits, _ = fetch_passes(get, n, passes)
        if hits != n:
            raise RuntimeError(f"SELECT: only {hits}/{n} rows")
    finally:
        conn.close()
    return dict(label="MariaDB SELECT by PK (PyMySQL)", n=n, store=None, store_mm=None, fetch=fetch,
                fetch_mm=fetch_mm, rss=mariadb_rss(db), rss_db=None, restarts=[])


def ratio(a, b):
    """a/b as a string like 3.9x (or - if either is missing)."""
    return f"{a / b:.1f}x" if a and b else "-"


def report(rows, n, passes, rewrite_k, sized, wall, quick):
    """Writes the markdown report and the PNG plot."""
    by = {r["key"]: r for r in rows}
    mc = by["memcached"]

    def rss_cell(r):
        """RSS, with MariaDB's added for the containers row."""
        if r["rss_db"] is not None:
            return f"{r['rss']:.0f} + MariaDB {r['rss_db']:.0f}"
        return f"{r['rss']:.0f}"

    main_rows = []
    for r in rows:
        term = next((x for x in r["restarts"] if x["sig"] == "SIGTERM"), None)
        main_rows.append([
            r["label"],
            f"{r['store']:.3f}" if r["store"] is not None else "-",
            f"{r['store_mm'][0]:.3f} / {r['store_mm'][1]:.3f}" if r["store_mm"] else "-",
            f"{r['fetch']:.3f}",
            f"{r['fetch_mm'][0]:.3f} / {r['fetch_mm'][1]:.3f}",
            f"{term['ready_ms']:.0f}" if term else "-",
            f"{term['hit']:.0f} %" if term else "-",
            rss_cell(r),
        ])
    t1 = md_table(["config", "store ms/op", "store min / max", "fetch ms/op", "fetch min / max",
                   "restart to ready ms", "hits after restart", "RSS MiB after store"], main_rows)

    rrows = []
    for r in rows:
        for x in r["restarts"]:
            kept = f"{x['v2']:,} / {x['rewritten']:,}" if x["rewritten"] else "-"
            rrows.append([r["label"], x["sig"], f"{x['stop_ms']:.0f}", f"{x['ready_ms']:.0f}",
                          f"{x['hit']:.1f} %", f"{x['cold']:.3f}", kept])
    t2 = md_table(["config", "stop", "stop ms", "start to answering ms", "hits, first pass after",
                   "first pass ms/op", "rewritten just before kill -9, new version read back"], rrows)

    pa_t = next(x for x in by["persist"]["restarts"] if x["sig"] == "SIGTERM")
    pa_rows = [["sqlcached --data-dir (async), the run above", f"{n:,}", f"{pa_t['ready_ms']:.0f}",
                f"{pa_t['hit']:.0f} %"]]
    for big, (ready, hit, mib) in sized.items():
        pa_rows.append([f"sqlcached --data-dir (async), filled with set_multi", f"{big:,}", f"{ready:.0f}",
                        f"{hit:.0f} % ({mib:.0f} MiB on disk)"])
    t_size = md_table(["config", "objects on disk", "SIGTERM restart to answering ms", "hits after"], pa_rows)
    big, (big_ready, _h, _m) = max(sized.items())
    t_size += (
        f"\n\nsqlcached's start-up time grows with the data on disk: {pa_t['ready_ms']:.0f} ms for {n:,} "
        f"objects, {big_ready:.0f} ms for {big:,} (memcached: {mc['restarts'][0]['ready_ms']:.0f} ms, empty). "
        "The start reads fjall's journal (rotated at 64 MB, so bounded whatever the data size; "
        "docs/persistence.md); a clean stop writes the memtables out as tables first, so that read "
        "skips entries instead of replaying them (this replay's first run, before that change, took "
        "2.1 s for 100,000 objects)."
    )

    ct = by["containers"]
    sel = by["select"]
    s = SEED
    def cmp_row(label, seed_v, seed_base, ours_v, ours_base):
        """One comparison line: seed and ours, each as ms/op, ratio and difference to memcached."""
        return [label, f"{seed_v:.3f}", ratio(seed_v, seed_base), f"{seed_v - seed_base:+.3f}",
                f"{ours_v:.3f}", ratio(ours_v, ours_base), f"{ours_v - ours_base:+.3f}"]

    sm, sp = s["memcached"], s["plugin"]
    t3 = md_table(["", "seed ms/op", "seed / memcached", "seed - memcached ms", "ours ms/op",
                   "ours / memcached", "ours - memcached ms"], [
        cmp_row("memcached store", sm["store"], sm["store"], mc["store"], mc["store"]),
        cmp_row("memcached fetch", sm["fetch"], sm["fetch"], mc["fetch"], mc["fetch"]),
        cmp_row("InnoDB plugin store / sqlcached containers store", sp["store"], sm["store"], ct["store"], mc["store"]),
        cmp_row("InnoDB plugin fetch / sqlcached containers fetch", sp["fetch"], sm["fetch"], ct["fetch"], mc["fetch"]),
        cmp_row("MySQL SELECT fetch / MariaDB SELECT (PyMySQL)", s["select"]["fetch"], sm["fetch"], sel["fetch"],
                mc["fetch"]),
    ])

    pa = by.get("persist")
    pa_term = next(x for x in pa["restarts"] if x["sig"] == "SIGTERM")
    mc_term = mc["restarts"][0]
    headline = (
        f"**Headline:** sqlcached's SQL containers on MariaDB store at {ratio(ct['store'], mc['store'])} "
        f"memcached's cost per op, {ct['store'] - mc['store']:+.2f} ms (the seed's InnoDB plugin: 3.9x, +1.73 ms; "
        f"our loopback memcached store is {SEED['memcached']['store'] / mc['store']:.0f}x faster than the seed's "
        "over a VM network, so a comparable extra cost is a larger multiple), and fetch at "
        f"{ratio(ct['fetch'], mc['fetch'])}, {ct['fetch'] - mc['fetch']:+.2f} ms "
        f"(seed: 1.2x, +0.06 ms); after a restart memcached answers {mc_term['hit']:.0f} % of the keys while sqlcached "
        f"`--data-dir` is back with {pa_term['hit']:.0f} % after {pa_term['ready_ms']:.0f} ms "
        f"(memcached: {mc_term['ready_ms']:.0f} ms), and the containers, whose data is in MariaDB, "
        f"with {ct['restarts'][0]['hit']:.0f} %."
    )
    scaled = (
        "**How it was scaled.** Seed: two single-core VirtualBox VMs (CentOS 6.4, 528 MB) on a MacBook "
        "Pro, PHP + Zend_Cache_Backend_Libmemcached (PECL libmemcached) over a host-only network, "
        "100,000 stores and 10 fetch passes (1,000,000 fetches), MySQL 5.6 with the InnoDB memcached "
        f"plugin. Here: one machine with 2 CPUs shared by client and servers, loopback TCP, Python "
        f"pylibmc 1.6 (libmemcached, text protocol, same client code for every server), {n:,} objects "
        f"stored once and fetched {passes} times over ({n * passes:,} fetches), min / max are over chunks "
        f"of {CHUNK:,} ops. Each value is what Zend stored, `(serialize(obj), time(), 3600)`, pickled "
        "by pylibmc (flag 1) — about 200 bytes; compression is on as in the seed with PHP's threshold "
        f"(`min_compress_len={COMPRESS_THRESHOLD}`), so, like the seed's small objects, nothing is "
        "actually compressed. Exptime 3600 s. The InnoDB plugin's role is played by sqlcached "
        f"`--containers` with `plain_keys = \"default_container\"`, policy `innodb_only`, "
        f"`w_batch_size = 1` (the plugin's default: a commit per set), on `{DB_SCHEMA}.{TABLE}` "
        "(id VARBINARY PK, data VARBINARY, flags, cas, expires columns mapped, so pylibmc's pickle flag "
        "and the lifetime survive) in a throw-away MariaDB 10.11 (innodb_flush_log_at_trx_commit=1, "
        "binlog on, datadir on the machine's disk). The SELECT row reads the rows the containers run "
        "wrote, through PyMySQL, a pure-Python driver: its ms/op includes that driver's overhead, so "
        "it is a ceiling, not MariaDB's cost. sqlcached `--data-dir` and MariaDB's datadir are on the "
        "local disk (ext4-style block device, not tmpfs). Restart: SIGTERM (clean stop), then the "
        "same command line is started and polled with `get key_0` every 2 ms; \"ready\" = it answers "
        "VALUE/END (not an error). Only sqlcached is restarted in the containers rows (MariaDB keeps "
        f"running: the plugin's equivalent is restarting the plugin, not mysqld). kill -9 rows: the "
        f"first {rewrite_k:,} keys are rewritten with a new object version, the server is killed with "
        "SIGKILL right after the last STORED, restarted, and a full fetch pass counts hits and new "
        "versions read back. RSS is the server's after the store pass (containers: sqlcached + "
        "mariadbd)."
    )
    note = "" if not quick else "\n\n*(--quick run: sizes too small for the numbers to mean anything.)*"
    body = "\n\n".join([
        headline, t1, "Restarts:", t2,
        "Restart time against the data size (the seed's 100,000 objects; SIGTERM, a clean stop):", t_size,
        "Seed next to ours (ratios relative to memcached):", t3, scaled,
        f"Wall time of this run: {wall:.0f} s." + note,
    ])
    path = write_report(NAME, "Seed 002: store/fetch through libmemcached, and a restart (memcached vs "
                        "sqlcached vs SQL containers)", body)
    plot(rows)
    return path


def plot(rows):
    """(a) store/fetch ms/op per config with the seed's as grey hatched bars; (b) hits after restart."""
    fig, (a, b) = figure(2, width=6.8, height=4.2)
    short = {"memcached": "memcached", "mem": "sqlcached\nmemory", "persist": "sqlcached\npersist async",
             "sync": "sqlcached\npersist sync", "containers": "containers\n(MariaDB)", "select": "MariaDB\nSELECT"}
    seedmap = {"memcached": SEED["memcached"], "containers": SEED["plugin"], "select": SEED["select"]}
    w = 0.2
    for x, r in enumerate(rows):
        sd = seedmap.get(r["key"], {})
        bars = [
            (x - 1.5 * w, r["store"], "tab:blue", None, "store (ours)"),
            (x - 0.5 * w, r["fetch"], "tab:orange", None, "fetch (ours)"),
            (x + 0.5 * w, sd.get("store"), "0.75", "//", "store (seed)"),
            (x + 1.5 * w, sd.get("fetch"), "0.9", "\\\\", "fetch (seed)"),
        ]
        for bx, v, col, hatch, lab in bars:
            if v:
                a.bar(bx, v, w, color=col, hatch=hatch, edgecolor="0.3" if hatch else None,
                      label=lab if x == 0 or (hatch and r["key"] == "containers") else None)
    a.set_yscale("log")
    a.set_xticks(range(len(rows)))
    a.set_xticklabels([short[r["key"]] for r in rows], fontsize=8)
    a.set_ylabel("ms per op (log)")
    a.set_title("(a) store and fetch, ms/op (grey: seed; its InnoDB plugin under containers)", fontsize=9)
    h, lab = a.get_legend_handles_labels()
    seen = {}
    for hh, ll in zip(h, lab):
        seen.setdefault(ll, hh)
    a.legend(seen.values(), seen.keys(), fontsize=7)

    labels, hits, notes, colors = [], [], [], []
    for r in rows:
        for x in r["restarts"]:
            labels.append(short[r["key"]] + ("\nkill -9" if x["sig"] == "kill -9" else ""))
            hits.append(x["hit"])
            notes.append(f"{x['ready_ms']:.0f} ms")
            colors.append("tab:red" if x["sig"] == "kill -9" else "tab:green")
    b.bar(range(len(hits)), hits, color=colors)
    for i, (hv, note) in enumerate(zip(hits, notes)):
        b.annotate(f"{hv:.0f} %\nready {note}", (i, hv), textcoords="offset points", xytext=(0, 3),
                   ha="center", fontsize=7)
    b.set_ylim(0, 125)
    b.set_xticks(range(len(hits)))
    b.set_xticklabels(labels, fontsize=7)
    b.set_ylabel("hit rate of the first pass after restart, %")
    b.set_title("(b) right after a restart (green SIGTERM, red kill -9)", fontsize=9)
    save_plot(fig, NAME)


def main(quick: bool) -> None:
    """Runs every config, writes bench/results/seeds/002_store_fetch.{md,png}."""
    t_start = time.monotonic()
    n = 2_000 if quick else 30_000
    passes = 2 if quick else 3
    rewrite_k = 200 if quick else 2_000
    work = Path(tempfile.mkdtemp(prefix="sqlcached-e002-"))
    srv = harness.servers
    rows = []
    db = None
    try:
        def sq(*extra, logname):
            """A sqlcached start function with -m 256 plus extra flags, stderr to a log."""
            return lambda: srv.start_sqlcached("-m", "256", *extra, log=str(work / logname))

        configs = [
            ("memcached", "memcached 1.6.18", lambda: srv.start_memcached("-m", "256"), False),
            ("mem", "sqlcached, memory only", sq(logname="mem.log"), False),
            ("persist", "sqlcached --data-dir (async)", sq("--data-dir", str(work / "data-async"),
                                                         logname="async.log"), True),
            ("sync", "sqlcached --data-dir --durability sync",
             sq("--data-dir", str(work / "data-sync"), "--durability", "sync", logname="sync.log"), True),
        ]
        for key, label, start, kill9 in configs:
            row = run_memcache_config(label, start, n, passes, rewrite_k, kill9)
            row["key"] = key
            rows.append(row)

        progress(EXP, "starting MariaDB")
        db = harness.mariadb.MariaDB(base=str(work / "mariadb"))
        db.start()
        db.sql(f"""
CREATE DATABASE {DB_SCHEMA};
CREATE TABLE {DB_SCHEMA}.{TABLE} (id VARBINARY(250) PRIMARY KEY, data VARBINARY(1024),
  flags INT UNSIGNED, cas BIGINT UNSIGNED, expires INT) ENGINE=InnoDB;
""")
        cfg = work / "containers.toml"
        cfg.write_text(CONTAINERS_TOML.format(url=db.url(DB_SCHEMA), schema=DB_SCHEMA, table=TABLE))
        row = run_memcache_config("sqlcached containers on MariaDB (innodb_only)",
                                  sq("--containers", str(cfg), logname="containers.log"),
                                  n, passes, rewrite_k, True, rss_extra=lambda: mariadb_rss(db))
        row["key"] = "containers"
        rows.append(row)
        got = db.sql(f"SELECT COUNT(*), MIN(flags), MAX(flags), MIN(expires) > UNIX_TIMESTAMP() "
                     f"FROM {DB_SCHEMA}.{TABLE}").split()
        progress(EXP, f"container table: rows, min/max flags, expiry in future = {got}")
        row = run_select(db, n, passes)
        row["key"] = "select"
        rows.append(row)
        db.close()
        db = None
        big = 5_000 if quick else 100_000
        sized = {big: restart_at_size(work, big)}
        path = report(rows, n, passes, rewrite_k, sized, time.monotonic() - t_start, quick)
        progress(EXP, f"wrote {path}")
    finally:
        if db is not None:
            db.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main(parse_args(__doc__).quick)
