"""The unchanged Go client github.com/bradfitz/gomemcache (ASCII protocol) against sqlcached.

Runs `go test` in tests/clients/go with MEMCACHED_ADDR pointing at a fresh sqlcached.
Modules come from the Go module cache (fetch them once with .ci/deps-clients.sh).
"""
import os
import shutil
import subprocess
from pathlib import Path

import pytest

MODULE = Path(__file__).resolve().parent / "go"
TIMEOUT_S = 600


def _tail(text: str, limit: int = 30000) -> str:
    return text if len(text) <= limit else "...(cut)...\n" + text[-limit:]


def test_gomemcache_against_sqlcached(sqlcached):
    go = shutil.which("go") or next(
        (g for g in ("/usr/local/go/bin/go",) if os.access(g, os.X_OK)), None)
    if go is None:
        pytest.skip("Go toolchain (go) is not installed: run .ci/deps-clients.sh or install Go")
    env = dict(os.environ, MEMCACHED_ADDR=sqlcached.addr)
    # -count=1: never reuse a cached result (the port, and so the env, can repeat between runs).
    cmd = [go, "test", "-count=1", "-timeout=300s", "-v", "./..."]
    try:
        proc = subprocess.run(
            cmd, cwd=MODULE, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"{' '.join(cmd)} timed out after {TIMEOUT_S}s against {sqlcached.addr}\n{_tail(out)}")
    if proc.returncode != 0:
        failed = "\n".join(
            "  " + line.strip() for line in proc.stdout.splitlines() if line.lstrip().startswith("--- FAIL")
        )
        pytest.fail(
            f"{' '.join(cmd)} (in {MODULE}, MEMCACHED_ADDR={sqlcached.addr}) exited {proc.returncode}\n"
            f"failing tests:\n{failed or '  (none reported: see the output)'}\n"
            f"--- go test output ---\n{_tail(proc.stdout)}",
            pytrace=False,
        )
