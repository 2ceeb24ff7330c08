"""The live status page (`GET /` on --metrics-listen) in a real headless browser (Debian's
chromium): loaded against a server under load, it must fetch /stats.json again and again
(live), show the memcached figures (rates, hit ratio, items) and the disk tier's state, and
the screenshot is kept as a CI artefact (target/status-page.png)."""
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
from harness.servers import free_port, start_sqlcached  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="chromium is not installed (apt-get install chromium)")


def load(port, stop):
    with socket.create_connection(("127.0.0.1", port)) as s:
        f = s.makefile("rb")
        i = 0
        while not stop.is_set():
            s.sendall(b"set k%d 0 0 1\r\nx\r\nget k%d\r\nget missing\r\n" % (i % 300, i % 300))
            for _ in range(4):
                f.readline()
            f.readline()  # VALUE line's data
            i += 1


def chromium(*args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--virtual-time-budget=5000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_status_page_is_live_in_a_browser(tmp_path):
    mport = free_port()
    with start_sqlcached("--metrics-listen", f"127.0.0.1:{mport}", "--data-dir", str(tmp_path / "d")) as s:
        url = f"http://127.0.0.1:{mport}/"
        stats = json.loads(urllib.request.urlopen(url + "stats.json", timeout=10).read())
        assert stats["curr_items"] == 0 and "disk_items" in stats
        stop = threading.Event()
        t = threading.Thread(target=load, args=(s.port, stop), daemon=True)
        t.start()
        try:
            time.sleep(1)
            dom = chromium("--dump-dom", url).stdout
            shot = ROOT / "target" / "status-page.png"
            shot.parent.mkdir(exist_ok=True)
            chromium("--window-size=1280,900", f"--screenshot={shot}", url)
        finally:
            stop.set()
            t.join(5)

        def text(id_):
            m = re.search(r'id="%s"[^>]*>([^<]*)<' % re.escape(id_), dom)
            assert m, f"#{id_} missing from the page:\n{dom[:2000]}"
            return m.group(1)

        assert int(text("updates")) >= 3, "the page polls /stats.json again and again"
        assert re.fullmatch(r"\d+\.\d % overall", text("mc-hit-ratio")), text("mc-hit-ratio")
        assert 40 <= float(text("mc-hit-ratio").split()[0]) <= 60, "one hit, one miss per round"
        assert float(text("mc-get-rate").split()[0]) > 0
        assert int(text("items")) == 300
        assert text("disk-state") == "ok"
        assert text("error") == "", "no fetch failed"
        assert shot.stat().st_size > 10_000, "a screenshot was rendered"


def test_unknown_paths_are_404(tmp_path):
    mport = free_port()
    with start_sqlcached("--metrics-listen", f"127.0.0.1:{mport}"):
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"http://127.0.0.1:{mport}/nope", timeout=10)
        assert e.value.code == 404
