"""The unchanged MySQL Connector/J through the proxy: the Maven project tests/clients/mysql/java
(useServerPrepStmts=true and false: selects, writes, a transaction, errors, multi-results,
a > 16 MiB row, a wrong password, sslMode=VERIFY_CA against the proxy's TLS), every result compared with MariaDB's direct answer.
Dependencies come from ~/.m2 (.ci/deps-clients.sh fetches them)."""
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1] / "clients" / "mysql" / "java"
REPORTS = PROJECT / "target" / "surefire-reports"

# passthrough only: no need to wait for the binlog follower
PROXY_ONLINE = False


@pytest.fixture(scope="module")
def truststores(certs, tmp_path_factory):
    """PKCS12 trust stores (keytool) holding the test CA, and a rogue CA."""
    d = tmp_path_factory.mktemp("truststores")
    keytool = shutil.which("keytool")
    if keytool:
        for name, ca in (("trust.p12", certs["ca"]), ("rogue.p12", certs["rogue_ca"])):
            subprocess.run([keytool, "-importcert", "-noprompt", "-alias", "ca", "-file", ca, "-keystore",
                            str(d / name), "-storetype", "PKCS12", "-storepass", "changeit"],
                           check=True, capture_output=True, timeout=120)
    return str(d / "trust.p12"), str(d / "rogue.p12")


def failures() -> str:
    lines = []
    for report in sorted(REPORTS.glob("TEST-*.xml")):
        try:
            root = ET.parse(report).getroot()
        except ET.ParseError:
            continue
        for case in root.iter("testcase"):
            for bad in list(case.findall("failure")) + list(case.findall("error")):
                lines.append(f"  {case.get('name')}: {(bad.get('message') or bad.get('type') or '').strip()[:300]}")
    return "\n".join(lines) or "  (no surefire report: see the maven output)"


def test_connector_j(tls_proxy, mariadb, truststores):
    """The plain tests and tlsVerifyCa share one proxy that offers TLS."""
    proxy = tls_proxy
    mvn = shutil.which("mvn")
    if mvn is None or shutil.which("java") is None:
        pytest.skip("Maven/Java not installed: run .ci/deps-clients.sh")
    env = dict(os.environ, PROXY_ADDR=proxy.mysql_addr, DIRECT_ADDR=f"127.0.0.1:{mariadb.port}",
               MYSQL_USER=mariadb.user, MYSQL_PASSWORD=mariadb.password, MYSQL_DB="qc",
               TLS_TRUSTSTORE=truststores[0], TLS_ROGUE_TRUSTSTORE=truststores[1])
    shutil.rmtree(REPORTS, ignore_errors=True)
    cmd = [mvn, "-q", "-B", "-Dstyle.color=never", "test"]
    p = subprocess.run(cmd, cwd=PROJECT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=900)
    if p.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} in {PROJECT} exited {p.returncode}\nfailing:\n{failures()}\n"
                    f"--- output ---\n{p.stdout[-20000:]}", pytrace=False)
