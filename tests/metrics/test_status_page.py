"""The live status page (`GET /` on --metrics-listen) in a real headless browser (Debian's
chromium), against a server under load with a data dir and the SQLite containers example.

Its first paint must already be true (issue 42): rates measured by the server (not zeros
waiting for a second poll), charts with a time axis, the disk tier's bytes as they are on
disk (its journals are preallocated: their apparent size is not what they take) with "no
limit" when none is set, and each container with its table and policy. So the page is read
and screenshotted 1 s after load, and the screenshot itself is looked at (the chart lines
are drawn). It is kept as a CI artefact (target/status-page.png)."""
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import png  # noqa: E402
from harness.servers import free_port, start_sqlcached  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="chromium is not installed (apt-get install chromium)")
EXAMPLE = ROOT / "crates" / "sql-containers" / "examples"
GETS_COLOR = (0x2A, 0x6F, 0xDB)


def load(port, stop):
    """One set, one hit, one miss and one container read per round."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        i = 0
        while not stop.is_set():
            k = b"k%d" % (i % 300)
            s.sendall(b"set %s 0 0 1\r\nx\r\nget %s\r\nget missing\r\nget @@users.42\r\n" % (k, k))
            for _ in range(4 + 3):
                f.readline()
            f.readline()  # the container row's END
            i += 1


def chromium(*args, budget_ms=1000):
    """Headless Chromium; `budget_ms` of virtual time after load (the page polls every
    second: within 500 ms it has painted once)."""
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           f"--virtual-time-budget={budget_ms}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def text_of(dom, id_):
    m = re.search(r'id="%s"[^>]*>([^<]*)<' % re.escape(id_), dom)
    assert m, f"#{id_} missing from the page:\n{dom[:2000]}"
    return m.group(1)


def figure(text):
    """A number as the page writes it ("42", "12.3 k", "1.05 M")."""
    n, *unit = text.split()
    return float(n) * {"k": 1e3, "M": 1e6, "G": 1e9}[unit[0]] if unit else float(n)


def containers_example(tmp_path):
    """The SQLite example of crates/sql-containers/README.md, in tmp_path (its relative path)."""
    (tmp_path / "data").mkdir()
    subprocess.run(["sqlite3", str(tmp_path / "data" / "containers.db")], input=(EXAMPLE / "sqlite.sql").read_text(),
                   text=True, check=True)
    return EXAMPLE / "sqlite.toml"


def test_first_paint_is_true_and_has_a_time_axis(tmp_path, monkeypatch):
    if not shutil.which("sqlite3"):
        pytest.skip("sqlite3 (the CLI) is not installed")
    monkeypatch.chdir(tmp_path)  # the example's path is relative to the start directory
    mport = free_port()
    data = tmp_path / "d"
    with start_sqlcached("--metrics-listen", f"127.0.0.1:{mport}", "--data-dir", str(data),
                         "--containers", str(containers_example(tmp_path))) as s:
        url = f"http://127.0.0.1:{mport}/"
        stop = threading.Event()
        t = threading.Thread(target=load, args=(s.port, stop), daemon=True)
        t.start()
        try:
            time.sleep(3)  # the server has a few readings of its own by now
            dom = chromium("--dump-dom", url, budget_ms=500).stdout  # the first paint alone
            shot = ROOT / "target" / "status-page.png"
            shot.parent.mkdir(exist_ok=True)
            chromium("--window-size=1280,1000", f"--screenshot={shot}", url)
            stats = json.loads(urllib.request.urlopen(url + "stats.json", timeout=10).read())
            du = subprocess.run(["du", "-sk", str(data)], capture_output=True, text=True).stdout.split()[0]
        finally:
            stop.set()
            t.join(5)

    assert text_of(dom, "updates") == "1", "read at the first paint"
    assert text_of(dom, "error") == "", "no fetch failed"
    # Rates the server measured, at the first paint.
    assert float(text_of(dom, "mc-get-rate").split()[0]) > 0, text_of(dom, "mc-get-rate")
    assert float(text_of(dom, "mc-set-rate").split()[0]) > 0
    assert float(text_of(dom, "cont-rate").split()[0]) > 0
    assert "measuring" not in dom.split("<script>")[0]
    assert re.fullmatch(r"\d+\.\d % overall", text_of(dom, "mc-hit-ratio"))
    assert 40 <= float(text_of(dom, "mc-hit-ratio").split()[0]) <= 60, "one hit, one miss per round"
    assert int(text_of(dom, "items")) == 300
    # Charts with a time axis: clock-time ticks, readings plotted.
    label = re.search(r'id="ops"[^>]*aria-label="([^"]*)"', dom) or re.search(r'aria-label="([^"]*)"[^>]*id="ops"', dom)
    assert label and re.search(r"time axis \d\d:\d\d:\d\d to \d\d:\d\d:\d\d", label.group(1)), label
    assert int(re.search(r"(\d+) readings", label.group(1)).group(1)) >= 2, label.group(1)
    # The disk tier: what its files take on disk, and no invented limit.
    assert text_of(dom, "disk-state") == "ok"
    on_disk = text_of(dom, "disk-bytes")
    assert on_disk.endswith("(no limit)"), on_disk
    # What du says (allocated blocks) within the writes of a moment, well under the files' apparent size.
    du = int(du) * 1024
    assert abs(stats["disk_allocated"] - du) <= max(du // 2, 4 << 20), (stats["disk_allocated"], du)
    assert stats["disk_allocated"] < stats["disk_space"], (stats["disk_allocated"], stats["disk_space"])
    assert "64.0 MiB" not in on_disk, "the sparse journal's apparent size"
    # The containers: backend, state, each container with its table and policy.
    assert text_of(dom, "cont-backend").startswith("SQLite ")
    assert text_of(dom, "cont-state") == "ok"
    rows = re.findall(r'<tr class="container">(.*?)</tr>', dom)
    assert len(rows) == 2 and "main.users" in rows[1] and "get caching, set innodb_only" in rows[1], rows
    assert re.search(r'<section id="pg" class="hidden"', dom), "no PostgreSQL front without --pg-listen"

    # The screenshot taken 1 s after load shows the plotted readings: the gets line is drawn
    # in the operations chart (below the tables), and the axis has its labels.
    width, height, px = png.read(shot)
    assert (width, height) == (1280, 1000)
    lower = (0, height // 3, width, height)
    assert png.count_near(px, GETS_COLOR, box=lower) > 150, "the gets line is drawn"


def test_postgresql_front_row(postgres):
    """With --pg-listen the page shows the PostgreSQL front beside the rest, at its first paint:
    its query rate (measured by the server), queries by protocol, connections, logins, the
    backend's state, its query cache (on by default; nothing cached for reads of no table),
    and its line in the operations chart."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg missing: pip install -r tests/requirements.txt")
    from harness.pgproxy import start_pgproxy

    mport = free_port()
    with start_pgproxy(postgres, "--metrics-listen", f"127.0.0.1:{mport}") as px:
        stop, errors = threading.Event(), []

        def pg_load():
            try:
                with psycopg.connect(px.dsn(), autocommit=True) as c:
                    while not stop.is_set():
                        psycopg.ClientCursor(c).execute("SELECT 1")  # a simple Query
                        c.execute("SELECT %s::int", (2,))  # the extended protocol
            except Exception as e:  # noqa: BLE001 - asserted below
                errors.append(e)

        t = threading.Thread(target=pg_load, daemon=True)
        t.start()
        try:
            time.sleep(3)  # the server has a few readings of its own by now
            dom = chromium("--dump-dom", f"http://127.0.0.1:{mport}/", budget_ms=500).stdout
            stats = px.stats()
        finally:
            stop.set()
            t.join(5)

    assert not errors, errors
    assert text_of(dom, "updates") == "1" and text_of(dom, "error") == ""
    section = re.search(r'<section id="pg" class="([^"]*)"', dom)
    assert section and "hidden" not in section.group(1), "the PostgreSQL front's row is shown"
    assert float(text_of(dom, "pg-query-rate").split()[0]) > 0, text_of(dom, "pg-query-rate")
    simple, extended = (figure(x) for x in text_of(dom, "pg-queries").split(" / "))
    assert simple > 0 and extended > 0, text_of(dom, "pg-queries")
    assert text_of(dom, "pg-connections").startswith("1 ("), text_of(dom, "pg-connections")
    ok, failed, _aborted = text_of(dom, "pg-logins").split(" / ")
    assert int(ok) >= 1 and failed == "0", text_of(dom, "pg-logins")
    assert text_of(dom, "pg-backend") == "ok"
    # The query cache is on by default; SELECT 1 reads no table, so nothing is cached.
    assert text_of(dom, "pg-cache").startswith("online, n/a hits, 0 results"), text_of(dom, "pg-cache")
    assert stats["pg_query_cache_hits"] == 0
    label = re.search(r'id="ops"[^>]*aria-label="([^"]*)"', dom) or re.search(r'aria-label="([^"]*)"[^>]*id="ops"', dom)
    assert label and "PostgreSQL queries" in label.group(1), label


def test_unknown_paths_are_404(tmp_path):
    mport = free_port()
    with start_sqlcached("--metrics-listen", f"127.0.0.1:{mport}"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{mport}/nope", timeout=10)
        assert e.value.code == 404


def test_first_paint_of_a_server_just_started_says_measuring(tmp_path):
    """Before the server has two readings of its counters there is no rate to show: the page
    says "measuring", never a made-up 0."""
    mport = free_port()
    with start_sqlcached("--metrics-listen", f"127.0.0.1:{mport}"):
        stats = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{mport}/stats.json", timeout=10).read())
        if stats["history"]["t"]:
            pytest.skip("the server took two readings before the first request (a slow start)")
        assert stats["history"]["gets"] == []


def test_postgres_query_cache_on_the_page(postgres):
    """With its query cache on (--pg-database), the PostgreSQL row says it is online, its hit
    ratio, results and memory, and the WAL follower's lag; the charts get PostgreSQL hits
    and the PostgreSQL hit ratio (issue 41: the row said "none yet" whatever the cache did)."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg missing: pip install -r tests/requirements.txt")
    from harness.pgproxy import start_pgproxy

    postgres.sql("DROP TABLE IF EXISTS status_page; CREATE TABLE status_page (id int PRIMARY KEY, v text);"
                 "INSERT INTO status_page VALUES (1, 'one');")
    mport = free_port()
    with start_pgproxy(postgres, "--metrics-listen", f"127.0.0.1:{mport}", "--pg-database", "postgres",
                       "--pg-slot", "status_page", "--pg-publication", "status_page") as px:
        with psycopg.connect(px.dsn(), autocommit=True) as c:
            deadline = time.monotonic() + 15
            while int(px.stats().get("pg_query_cache_hits", 0)) < 50 and time.monotonic() < deadline:
                c.execute("SELECT v FROM status_page WHERE id = 1").fetchone()
            time.sleep(2.5)  # two readings of the counters: rates to chart
            for _ in range(200):
                c.execute("SELECT v FROM status_page WHERE id = 1").fetchone()
            dom = chromium("--dump-dom", f"http://127.0.0.1:{mport}/", budget_ms=500).stdout
            c.execute("UPDATE status_page SET v = 'uno' WHERE id = 1")
            c.execute("SELECT now()").fetchone()
            lines = px.stats("pg_queries")
    cache = text_of(dom, "pg-cache")
    # The statement digest table (issue 41 item 5), as the MySQL one: on the page and in
    # `stats pg_queries`, literals shown as ?.
    section = re.search(r'<section id="pg-statements" class="([^"]*)"', dom)
    assert section and "hidden" not in section.group(1), "the PostgreSQL statements table is shown"
    rows = re.findall(r'<tr class="pg-query">(.*?)</tr>', dom)
    read = [r for r in rows if "SELECT v FROM status_page WHERE id = ?" in r]
    assert read, rows
    count, hits, misses = (figure(x) for x in re.findall(r'<td class="v"[^>]*>([^<]*)</td>', read[0])[:3])
    assert count >= 250 and hits >= 200 and hits + misses <= count, read[0]
    texts = {k: v for k, v in lines.items() if k.endswith(":text")}
    update = next(k.split(":")[1] for k, v in texts.items() if v == "UPDATE status_page SET v = ? WHERE id = ?")
    assert int(lines[f"pg_query:{update}:writes"]) == 1, lines
    i = next(k.split(":")[1] for k, v in texts.items() if v == "SELECT v FROM status_page WHERE id = ?")
    assert int(lines[f"pg_query:{i}:hits"]) >= 200, lines
    now = next(k.split(":")[1] for k, v in texts.items() if v == "SELECT now()")
    assert int(lines[f"pg_query:{now}:not_cached"]) == 1 and lines[f"pg_query:{now}:not_cached_reason"], lines
    # (psycopg prepares a statement after 5 executions: a named statement is a second result)
    assert cache.startswith("online, ") and re.search(r" hits, [12] results \(", cache) and "WAL lag " in cache, cache
    assert float(cache.split(", ")[1].split(" %")[0]) > 50, cache
    for chart in ("ops", "ratio"):
        label = (re.search(rf'id="{chart}"[^>]*aria-label="([^"]*)"', dom)
                 or re.search(rf'aria-label="([^"]*)"[^>]*id="{chart}"', dom))
        assert label and "PostgreSQL" in label.group(1), (chart, label)

