"""The query digest table (issue 15, item 2): per normalized statement, executions, hits, misses,
not-cached with the rule, writes, backend time and bytes; as `stats queries` on the memcached
port and as the status page's table (headless Chromium)."""
import re
import shutil
import socket
import subprocess

import pytest

from harness.mysqlproxy import start_proxy
from harness.servers import free_port
from qchelpers import q, until_hit


def stats_queries(port):
    """`stats queries` on the memcached port as {name: value}."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"stats queries\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(65536)
    out = {}
    for line in buf.decode().split("\r\n"):
        if line.startswith("STAT "):
            _, k, v = line.split(" ", 2)
            out[k] = v
    return out


def queries(px):
    """`stats queries` as a list of row dicts, rank order."""
    rows = {}
    for k, v in stats_queries(px.port).items():
        m = re.fullmatch(r"query:(\d+):(\w+)", k)
        if m:
            rows.setdefault(int(m.group(1)), {})[m.group(2)] = v
    return [rows[i] for i in sorted(rows)]


def row(px, needle):
    for r in queries(px):
        if needle in str(r["text"]):
            return r
    raise AssertionError(f"{needle!r} not in the digest table: {queries(px)}")


def test_stats_queries(proxy, pc):
    for i in range(1, 6):
        until_hit(proxy, pc, f"SELECT v FROM qc.t WHERE id = {i}")
    for _ in range(3):
        q(pc, "SELECT NOW(), v FROM qc.t WHERE id = 1")
    q(pc, "UPDATE qc.t SET n = n + 1 WHERE id = 100")
    r = row(proxy, "SELECT v FROM qc.t WHERE id = ?")
    assert int(r["count"]) >= 10, r
    assert int(r["hits"]) >= 5 and int(r["misses"]) >= 5, r
    assert int(r["count"]) == int(r["hits"]) + int(r["misses"]) + int(r["not_cached"]), r
    assert int(r["backend_us"]) > 0 and int(r["bytes"]) > 0, r
    n = row(proxy, "SELECT NOW (), v FROM qc.t")
    assert int(n["not_cached"]) == 3 and n["not_cached_reason"] == "non-deterministic function", n
    w = row(proxy, "UPDATE qc.t SET n = n + ? WHERE id = ?")
    assert int(w["writes"]) == 1, w


@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium is not installed")
def test_status_page_shows_the_digest_table(mariadb, tmp_path):
    mport = free_port()
    with start_proxy(mariadb, "--metrics-listen", f"127.0.0.1:{mport}", log=tmp_path / "s.log") as px:
        c = px.connect("qc")
        until_hit(px, c, "SELECT v FROM qc.t WHERE id = 7")
        q(c, "SELECT RAND(), v FROM qc.t WHERE id = 7")
        c.close()
        out = subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=3000",
                              "--dump-dom", f"http://127.0.0.1:{mport}/"], capture_output=True, text=True, timeout=120)
        dom = out.stdout
        assert 'id="queries" class="wide"' in dom or 'class="wide" id="queries"' in dom or \
            re.search(r'id="queries" class="(?!.*hidden)[^"]*"', dom), dom[:3000]
        assert "SELECT v FROM qc.t WHERE id = ?" in dom.replace("&gt;", ">"), dom[:3000]
        assert "non-deterministic function" in dom


def test_digest_tables_and_latency_as_metrics(mariadb, tmp_path):
    """The top statements, the tables invalidated most and the proxy's latency histograms
    (hit / miss / passthrough) on /metrics; `stats tables` on the memcached port."""
    import urllib.request
    mport = free_port()
    with start_proxy(mariadb, "--metrics-listen", f"127.0.0.1:{mport}", log=tmp_path / "s.log") as px:
        c = px.connect("qc")
        until_hit(px, c, "SELECT v FROM qc.t WHERE id = 9")
        q(c, "SELECT RAND(), v FROM qc.t WHERE id = 9")
        for _ in range(3):
            q(c, "UPDATE qc.t SET n = n + 1, v = v WHERE id = 9")  # assigns v: the SELECT names it
        c.close()
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10) as r:
            body = r.read().decode()
        lines = body.splitlines()

        def sample(prefix, *needles):
            for ln in lines:
                if ln.startswith(prefix) and all(n in ln for n in needles):
                    return float(ln.rsplit(" ", 1)[1])
            raise AssertionError(f"no {prefix} with {needles} in /metrics:\n" + "\n".join(
                ln for ln in lines if "digest" in ln or "duration" in ln or "table" in ln))

        sel = 'query="SELECT v FROM qc.t WHERE id = ?"'
        assert sample("sqlcached_query_digest_executions_total{", sel, 'outcome="hit"') >= 1
        assert sample("sqlcached_query_digest_executions_total{", sel, 'outcome="miss"') >= 1
        assert sample("sqlcached_query_digest_executions_total{", "RAND", 'outcome="not_cached"') == 1
        assert sample("sqlcached_query_digest_backend_seconds_total{", sel) > 0
        assert sample("sqlcached_query_digest_bytes_total{", sel) > 0
        # The UPDATE of row 9 dropped the cached result of the SELECT of row 9.
        assert sample("sqlcached_query_digest_invalidations_total{", sel) >= 1
        assert int(row(px, "SELECT v FROM qc.t WHERE id = ?")["invalidations"]) >= 1
        assert sample("sqlcached_query_cache_table_invalidations_total{", 'table="qc.t"') >= 3
        for outcome in ("hit", "miss", "passthrough"):
            assert sample("sqlcached_mysql_query_duration_seconds_count{", f'outcome="{outcome}"') >= 1
            assert sample("sqlcached_mysql_query_duration_seconds_bucket{", 'le="+Inf"', f'outcome="{outcome}"') >= 1
        assert "# TYPE sqlcached_mysql_query_duration_seconds histogram" in body
        # The same per-table counts on the memcached port.
        with socket.create_connection(("127.0.0.1", px.port), timeout=10) as s:
            s.sendall(b"stats tables\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                buf += s.recv(65536)
        m = re.search(rb"STAT table:qc\.t:invalidations (\d+)\r\n", buf)
        assert m and int(m.group(1)) >= 3, buf
