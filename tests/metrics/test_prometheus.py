"""--metrics-listen: GET /metrics in the OpenMetrics text format, scraped by a real
Prometheus (Debian's `prometheus`) while sqlcached serves load; the test asks Prometheus's
HTTP API for a counter's rate and a gauge's value. Real processes only."""
import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import free_port, sqlcached_bin, start_sqlcached, wait_port  # noqa: E402


def get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def load(port, n_set, seconds):
    """n_set items, then gets for `seconds`; returns how many gets were sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        for i in range(n_set):
            s.sendall(b"set m%d 0 0 2\r\nhi\r\n" % i)
            assert s.recv(100) == b"STORED\r\n"
        gets, end = 0, time.monotonic() + seconds
        while time.monotonic() < end:
            s.sendall(b"get m1\r\n")
            buf = b""
            while not buf.endswith(b"END\r\n"):
                buf += s.recv(100)
            gets += 1
            time.sleep(0.001)
        return gets


def test_metrics_endpoint_format(tmp_path):
    mport = free_port()
    with start_sqlcached("--metrics-listen", f"127.0.0.1:{mport}", "--data-dir", str(tmp_path / "d")) as s:
        load(s.port, 5, 0.2)
        status, ctype, body = get(f"http://127.0.0.1:{mport}/metrics")
        assert status == 200 and ctype.startswith("application/openmetrics-text")
        assert "# TYPE sqlcached_cmd_get counter" in body
        assert "# TYPE sqlcached_curr_items gauge" in body
        assert "\nsqlcached_curr_items 5\n" in body
        assert 'sqlcached_build{version="' in body
        assert "\nsqlcached_disk_items " in body  # the disk tier's figures through the same sink
        assert "sqlcached_uptime_seconds" in body
        assert body.endswith("# EOF\n")
        with pytest.raises(urllib.error.HTTPError) as e:
            get(f"http://127.0.0.1:{mport}/nope")
        assert e.value.code == 404


def test_metrics_listen_address_in_use_fails_the_start():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        p = subprocess.run([sqlcached_bin(), "-p", str(free_port()), "-l", "127.0.0.1",
                            "--metrics-listen", f"127.0.0.1:{busy.getsockname()[1]}"],
                           capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "failed to listen on metrics" in p.stderr, p


def test_real_prometheus_scrapes_rates_and_gauges(tmp_path):
    prom = shutil.which("prometheus")
    if prom is None:
        pytest.skip("prometheus is not installed (apt-get install prometheus; .ci/run does)")
    mport, pport = free_port(), free_port()
    with start_sqlcached("--metrics-listen", f"127.0.0.1:{mport}") as s:
        cfg = tmp_path / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: sqlcached\n    static_configs:\n      - targets: ['127.0.0.1:{mport}']\n"
        )
        p = subprocess.Popen([prom, f"--config.file={cfg}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                              f"--web.listen-address=127.0.0.1:{pport}"],
                             stdout=subprocess.DEVNULL, stderr=open(tmp_path / "prom.log", "wb"))
        try:
            wait_port(pport, p, timeout=30)
            gets = load(s.port, 7, 6.0)
            api = f"http://127.0.0.1:{pport}/api/v1/query?query="

            def query(q):
                _, _, body = get(api + urllib.parse.quote(q))
                res = json.loads(body)["data"]["result"]
                return float(res[0]["value"][1]) if res else None

            deadline = time.monotonic() + 20
            rate = items = up = p99 = gets_by_label = None
            hist = 'sqlcached_memcached_command_duration_seconds_bucket{protocol="text",command="get"}'
            while time.monotonic() < deadline:
                rate = query("rate(sqlcached_cmd_get_total[5s])")
                items = query("sqlcached_curr_items")
                up = query('up{job="sqlcached"}')
                p99 = query(f"histogram_quantile(0.99, sum by (le) (rate({hist}[5s])))")
                gets_by_label = query(
                    'sqlcached_memcached_command_duration_seconds_count{protocol="text",command="get"}')
                if rate and items is not None and up == 1 and p99:
                    break
                time.sleep(0.5)
            assert up == 1, (tmp_path / "prom.log").read_text()[-2000:]
            assert items == 7
            assert rate is not None and rate > 0, rate
            # The latency histogram: a finite p99 of a few microseconds to milliseconds, and
            # its count is the number of text gets the server answered.
            assert p99 is not None and 0 < p99 < 1, p99
            assert gets_by_label is not None and 0 < gets_by_label <= gets, (gets_by_label, gets)
            print(f"Prometheus saw rate(cmd_get) = {rate:.0f}/s while the client sent {gets / 6:.0f}/s; "
                  f"server-side p99 of text gets {p99 * 1e6:.0f} us")
        finally:
            p.terminate()
            p.wait(timeout=20)
