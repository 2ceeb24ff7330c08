"""The first hour of a new operator (issue 42), as a test: from a fresh `git clone`, the
README's own start commands (memory-only, then persistent with a restart), a first client
(pymemcache), the SQLite containers example as crates/sql-containers/README.md gives it, the
MySQL proxy and an --invalidate rule against a real MariaDB, a real Prometheus scraping
/metrics, and the status page in headless Chromium, screenshotted. Plus the mistakes of that
hour: a misspelt flag, a file where the data dir should be, an unreachable backend.

The commands are read from the READMEs, so the documents and the server cannot drift
apart; they run with the built binary (SQLCACHED_BIN, else target/release) in place of
`cargo run --release -p sqlcached --`, on free ports instead of 11211."""
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness import png  # noqa: E402
from harness.mariadb import start_mariadb  # noqa: E402
from harness.servers import free_port, sqlcached_bin, wait_port  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CARGO_RUN = "cargo run --release -p sqlcached -- "
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def need(tool):
    if shutil.which(tool) is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing: .ci/run must install it")
        pytest.skip(f"{tool} is missing")


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of this repository (what is committed), else a copy of its documents."""
    dest = tmp_path_factory.mktemp("walk") / "sqlcached"
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--git-dir"], capture_output=True).returncode == 0:
        subprocess.run(["git", "clone", "-q", str(ROOT), str(dest)], check=True, timeout=120)
    else:
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns("target", ".git"))
    return dest


def commands(readme: Path, start: str):
    """The indented command lines of `readme` that begin with `start`, in order."""
    return [line.strip() for line in readme.read_text().splitlines() if line.startswith("    " + start)]


def argv(command: str, port: int):
    """A README command as run here: the built binary for `cargo run ...`, a free port."""
    assert command.startswith(CARGO_RUN), command
    args = shlex.split(command[len(CARGO_RUN):])
    if "-p" in args:
        args[args.index("-p") + 1] = str(port)
    else:
        args += ["-p", str(port)]
    return [sqlcached_bin(), *args]


class Run:
    """A sqlcached process started in `cwd`, its stderr in `log`."""

    def __init__(self, args, cwd, log, port, env=None):
        self.port, self.log = port, Path(log)
        with open(log, "ab") as f:
            self.proc = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=f,
                                         env=dict(os.environ, **(env or {})))
        wait_port(port, self.proc, timeout=30)

    def stop(self):
        """SIGTERM, as an operator (or systemd) stops it; returns the seconds it took."""
        t = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=30) == 0, self.log.read_text()[-3000:]
        return time.monotonic() - t

    def text(self):
        return self.log.read_text()


def client(port):
    from pymemcache.client.base import Client
    return Client(("127.0.0.1", port), connect_timeout=5, timeout=5)


def test_readme_start_commands_memory_then_persistent(clone, tmp_path):
    readme = clone / "README.md"
    starts = commands(readme, CARGO_RUN)
    assert len(starts) == 2, starts
    memory, persistent = starts
    assert "--data-dir" not in memory and "--data-dir ./data" in persistent
    text = readme.read_text()
    assert "memory-only" in text and "-l 127.0.0.1" in memory and "-l 127.0.0.1" in persistent

    # Memory-only: a first client stores and reads; a restart starts empty.
    port = free_port()
    s = Run(argv(memory, port), clone, tmp_path / "memory.log", port)
    c = client(port)
    c.set("greeting", b"hello")
    assert c.get("greeting") == b"hello"
    c.close()
    s.stop()
    s = Run(argv(memory, port), clone, tmp_path / "memory.log", port)
    assert client(port).get("greeting") is None, "memory-only, as the README says"
    s.stop()
    assert "reachable from other hosts" not in s.text(), "the README binds loopback"

    # Persistent: the same, and the value is back after a restart.
    port = free_port()
    s = Run(argv(persistent, port), clone, tmp_path / "persistent.log", port)
    c = client(port)
    for i in range(100):
        c.set(f"user:{i}", f"row {i}".encode())
    c.close()
    took = s.stop()
    assert took < 2, f"SIGTERM took {took:.2f} s"
    s = Run(argv(persistent, port), clone, tmp_path / "persistent.log", port)
    try:
        back = client(port).get("user:42")
        opened = "data dir ./data: opened (100 items" in s.text()
    finally:
        s.stop()
    # The data directory the README's command made is not something git wants to add.
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True).stdout
    assert "data" not in status, status
    # pymemcache sends sets with noreply: the stop must still answer what reached the socket.
    assert back == b"row 42" and opened, s.text()[-400:]

def containers_example(clone, tmp_path):
    """Run crates/sql-containers/README.md's SQLite example as written: its shell lines in
    the clone, then its server command; returns (server, readme text)."""
    readme = clone / "crates" / "sql-containers" / "README.md"
    section = readme.read_text().split("### SQLite example", 1)[1].split("###", 1)[0]
    # The first indented block is what to type; the later one (`$ memccat ...`) a session.
    block = section.split("\n\n    ", 1)[1].split("\n\n", 1)[0]
    shell = [line.strip() for line in ("    " + block).splitlines()]
    prepare = [line for line in shell if not line.startswith(CARGO_RUN)]
    start = [line for line in shell if line.startswith(CARGO_RUN)]
    assert prepare == ["mkdir -p data",
                       "sqlite3 data/containers.db < crates/sql-containers/examples/sqlite.sql"], prepare
    for line in prepare:
        subprocess.run(line, shell=True, cwd=clone, check=True, timeout=60)
    port = free_port()
    return Run(argv(start[0], port), clone, tmp_path / "containers.log", port), section


def test_containers_example_runs_as_written(clone, tmp_path):
    need("sqlite3")
    need("memccat")
    s, section = containers_example(clone, tmp_path)
    try:
        loaded = [line for line in s.text().splitlines() if "--containers" in line]
        assert any("2 containers on SQLite ./data/containers.db: @@default -> main.kv (key k; innodb_only), "
                   "@@users -> main.users (key id; get caching, set innodb_only, delete innodb_only, "
                   "flush disabled)" in line for line in loaded), s.text()
        # What the README shows a client reads.
        shown = re.search(r"\$ (memccat .*)\n\s+(.*)\n", section)
        cmd = shlex.split(shown.group(1).replace("--servers=127.0.0.1", f"--servers=127.0.0.1:{s.port}"))
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert out.stdout.strip() == shown.group(2).strip() == "Ann|ann@example.org", out
        c = client(s.port)
        c.set("@@default.greeting", b"hello")
        assert c.get("@@default.greeting") == b"hello"
        row = subprocess.run(["sqlite3", "data/containers.db", "SELECT v FROM kv WHERE k = 'greeting'"], cwd=clone,
                             capture_output=True, text=True).stdout.strip()
        assert row == "hello", "the row is in the table"
    finally:
        s.stop()


@pytest.fixture(scope="module")
def mariadb():
    with start_mariadb() as db:
        db.sql("CREATE DATABASE IF NOT EXISTS shop")
        db.sql("CREATE TABLE shop.users (id INT PRIMARY KEY, name VARCHAR(50))")
        db.sql("INSERT INTO shop.users VALUES (1, 'Ann'), (2, 'Bob')")
        yield db


def prometheus_scrape(mport, tmp_path):
    """A real Prometheus scraping /metrics every second: up, and the item gauge."""
    prom = shutil.which("prometheus")
    pport = free_port()
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text("global:\n  scrape_interval: 1s\n"
                   f"scrape_configs:\n  - job_name: sqlcached\n    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n")
    p = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                          f"--web.listen-address=127.0.0.1:{pport}"], stdout=subprocess.DEVNULL,
                         stderr=open(tmp_path / "prom.log", "wb"))
    try:
        wait_port(pport, p, timeout=30)

        def query(q):
            url = f"http://127.0.0.1:{pport}/api/v1/query?query=" + urllib.parse.quote(q)
            try:
                res = json.loads(urllib.request.urlopen(url, timeout=10).read())["data"]["result"]
            except urllib.error.HTTPError as e:
                if e.code == 503:
                    return None  # still starting (its storage is not ready)
                raise
            return float(res[0]["value"][1]) if res else None

        deadline = time.monotonic() + 30
        up = items = None
        while time.monotonic() < deadline and not (up == 1 and items is not None):
            up, items = query('up{job="sqlcached"}'), query("sqlcached_curr_items")
            time.sleep(0.5)
        return up, items
    finally:
        p.terminate()
        p.wait(timeout=20)


def load(port, stop):
    """Per round: a set, a hit and a miss; a container read every third round."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        i = 0
        while not stop.is_set():
            row = i % 3 == 0
            container = b"get @@users.42\r\n" if row else b""
            s.sendall(b"set k%d 0 0 1\r\nx\r\nget k%d\r\nget nope\r\n%s" % (i % 50, i % 50, container))
            for _ in range(1 + 3 + 1 + (3 if row else 0)):
                f.readline()
            i += 1
            time.sleep(0.001)


def test_proxy_invalidation_metrics_and_status_page(clone, tmp_path, mariadb):
    need("sqlite3")
    need("prometheus")
    if not CHROMIUM:
        need("chromium")
    import pymysql
    subprocess.run(["bash", "-c", "mkdir -p data && sqlite3 data/containers.db < crates/sql-containers/examples/sqlite.sql"],
                   cwd=clone, check=True)
    port, myport, mport = free_port(), free_port(), free_port()
    env = {"SQLCACHED_MYSQL_PASSWORD": mariadb.password}
    s = Run([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(port), "--data-dir", "./data",
             "--containers", "crates/sql-containers/examples/sqlite.toml", "--metrics-listen", f"127.0.0.1:{mport}",
             "--mysql-listen", f"127.0.0.1:{myport}", "--mysql-backend", f"127.0.0.1:{mariadb.port}",
             "--mysql-user", mariadb.user, "--invalidate", "shop.users=user:{id}"],
            clone, tmp_path / "full.log", port, env=env)
    try:
        wait_port(myport, s.proc)
        t0 = time.monotonic()
        deadline = time.monotonic() + 30
        while "query cache online" not in s.text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "query cache online" in s.text(), s.text()
        print(f"query cache online {time.monotonic() - t0:.1f} s after the port opened")
        # A query through the proxy, again until an answer comes from the cache (the first
        # runs of a table's first query learn its columns: the proxy caches once it knows them).
        db = pymysql.connect(host="127.0.0.1", port=myport, user=mariadb.user, password=mariadb.password,
                             database="shop", autocommit=True)
        mc = client(port)
        runs = 0
        with db.cursor() as cur:
            while int(mc.stats()[b"Qcache_hits"]) == 0 and runs < 40:
                cur.execute("SELECT name FROM users WHERE id = 1")
                assert cur.fetchall() == (("Ann",),)
                runs += 1
                time.sleep(0.05)
        assert int(mc.stats()[b"Qcache_hits"]) >= 1, f"never answered from the cache in {runs} runs"
        print(f"the proxy answered from its cache at run {runs}")
        # Cache-aside key deleted when the row changes on the backend (not through the proxy).
        mc.set("user:2", b"Bob (cached)")
        mariadb.sql("UPDATE shop.users SET name = 'Robert' WHERE id = 2")
        deadline = time.monotonic() + 10
        while mc.get("user:2") is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert mc.get("user:2") is None, "--invalidate deleted the key"

        t0 = time.monotonic()
        up, items = prometheus_scrape(mport, tmp_path)
        print(f"Prometheus scraped /metrics in {time.monotonic() - t0:.1f} s")
        assert up == 1 and items is not None, (tmp_path / "prom.log").read_text()[-2000:]

        stop = threading.Event()
        t = threading.Thread(target=load, args=(port, stop), daemon=True)
        t.start()
        try:
            time.sleep(3)
            base = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--virtual-time-budget=1000"]
            url = f"http://127.0.0.1:{mport}/"
            dom = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=120).stdout
            shot = ROOT / "target" / "walk-status-page.png"
            shot.parent.mkdir(exist_ok=True)
            subprocess.run([*base, "--window-size=1280,1380", f"--screenshot={shot}", url], capture_output=True,
                           timeout=120)
        finally:
            stop.set()
            t.join(5)
        for section in ("qc", "disk", "inv", "containers"):
            assert f'id="{section}" class="hidden' not in dom, f"the {section} section is shown"
        assert "flowing" in dom and "shop.users" in dom and "user:{id}" in dom, "the --invalidate rule and its feed"
        assert re.search(r'id="mc-get-rate"[^>]*>\d', dom) and "measuring" not in dom.split("<script>")[0]
        width, height, px = png.read(shot)
        assert png.count_near(px, (0x2A, 0x6F, 0xDB), box=(0, height // 3, width, height)) > 150
        took = s.stop()
        assert took < 2, f"SIGTERM took {took:.2f} s"
    finally:
        if s.proc.poll() is None:
            s.proc.kill()
            s.proc.wait()


def test_the_mistakes_of_the_first_hour_are_said_clearly(tmp_path):
    def start(*args, env=None):
        p = subprocess.run([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(free_port()), *args], capture_output=True,
                           text=True, timeout=30, env=dict(os.environ, **(env or {})))
        return p.returncode, p.stderr

    rc, err = start("--data-dri", "./data")
    assert rc == 64 and err.startswith("sqlcached: ") and "did you mean --data-dir?" in err, err
    file = tmp_path / "data"
    file.write_text("not a directory\n")
    rc, err = start("--data-dir", str(file))
    assert rc != 0 and f"--data-dir {file} is not a directory" in err and "File exists" not in err, err
    assert err.startswith("sqlcached: error: "), err
    # An unreachable backend: one sentence, the cause once.
    dead = free_port()
    p = subprocess.Popen([sqlcached_bin(), "-l", "127.0.0.1", "-p", str(free_port()), "--mysql-listen",
                          f"127.0.0.1:{free_port()}", "--mysql-backend", f"127.0.0.1:{dead}", "--mysql-user", "u"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, SQLCACHED_MYSQL_PASSWORD="x"))
    time.sleep(1.5)
    p.send_signal(signal.SIGTERM)
    err = p.communicate(timeout=30)[1]
    assert f"binlog of 127.0.0.1:{dead}: cannot connect: Connection refused" in err, err
    assert "Input/output error" not in err, err
    help_text = subprocess.run([sqlcached_bin(), "--help"], capture_output=True, text=True).stdout
    assert help_text.startswith("Usage: sqlcached [OPTION]...")
