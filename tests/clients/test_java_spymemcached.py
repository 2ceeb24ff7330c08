"""The unchanged Java client spymemcached 2.12.3 (binary and ASCII factories) against sqlcached.

Runs the Maven project in tests/clients/java with MEMCACHED_ADDR pointing at a fresh
sqlcached, and SASL_ADDR at another one started with -S (SaslTest: AuthDescriptor with
PLAIN and a PlainCallbackHandler). Dependencies come from ~/.m2 (fetch them once with .ci/deps-clients.sh).
"""
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness.servers import start_sqlcached

PROJECT = Path(__file__).resolve().parent / "java"
TIMEOUT_S = 900


REPORTS = PROJECT / "target" / "surefire-reports"


def _tail(text: str, limit: int = 30000) -> str:
    return text if len(text) <= limit else "...(cut)...\n" + text[-limit:]


def _surefire_failures() -> str:
    """One line per failed JUnit test (class.method: message), read from the surefire XML reports."""
    lines = []
    for report in sorted(REPORTS.glob("TEST-*.xml")):
        try:
            root = ET.parse(report).getroot()
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            for bad in list(case.findall("failure")) + list(case.findall("error")):
                msg = (bad.get("message") or bad.get("type") or "").strip()
                lines.append(f"  {case.get('classname', '').rsplit('.', 1)[-1]}.{case.get('name')}: {msg}")
    return "\n".join(lines) or "  (no surefire report: see the maven output)"


def test_spymemcached_against_sqlcached(sqlcached, tmp_path):
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.skip("Maven (mvn) is not installed: run .ci/deps-clients.sh or apt-get install maven")
    if shutil.which("java") is None:
        pytest.skip("Java is not installed: run .ci/deps-clients.sh or apt-get install openjdk-17-jdk-headless")
    # SaslTest: a second sqlcached with -S and a password file.
    pwdb = tmp_path / "pwdb"
    pwdb.write_text("javauser:javapass\n")
    sasl = start_sqlcached("-S", env={"MEMCACHED_SASL_PWDB": str(pwdb)})
    env = dict(os.environ, MEMCACHED_ADDR=sqlcached.addr, SASL_ADDR=sasl.addr, SASL_USER="javauser",
               SASL_PASSWORD="javapass")
    shutil.rmtree(REPORTS, ignore_errors=True)
    cmd = [mvn, "-q", "-B", "-Dstyle.color=never", "test"]
    try:
        proc = subprocess.run(
            cmd, cwd=PROJECT, env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"{' '.join(cmd)} timed out after {TIMEOUT_S}s against {sqlcached.addr}\n{_tail(out)}")
    sasl.stop()
    if proc.returncode != 0:
        pytest.fail(
            f"{' '.join(cmd)} (in {PROJECT}, MEMCACHED_ADDR={sqlcached.addr}) exited {proc.returncode}\n"
            f"failing tests:\n{_surefire_failures()}\n"
            f"per-test reports: {REPORTS}\n"
            f"--- maven output ---\n{_tail(proc.stdout)}",
            pytrace=False,
        )
