"""Seed 000's cache-aside application in Java (spymemcached 2.12.3 binary protocol +
Connector/J 8.4, MD5-of-the-query keys, serialized CachedRowSets), kept fresh by one
`--invalidate` rule while another program updates rows straight on MariaDB.

The app (tests/invalidate/java, FreshReads) has no delete or TTL logic at all; sqlcached's rule
    test.customers -> md5(SELECT firstname,lastname FROM test.customers where id={id})
names the app's keys. Asserts: 0 reads that returned a name older than one committed 100 ms
before the read began, the cache really hits, and (probing keys the app does not read) the
invalidation delay is p99 <= 100 ms. FULL=1 runs longer.
"""
import hashlib
import os
import random
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pymysql
import pytest

from harness.mariadb import start_mariadb
from harness.mysqlproxy import stats
from inv_helpers import analyse, pct, prober, start_rules

APP = Path(__file__).resolve().parent / "java"
M2 = Path(os.environ.get("M2_REPO", Path.home() / ".m2" / "repository"))
JARS = [M2 / "net/spy/spymemcached/2.12.3/spymemcached-2.12.3.jar",
        M2 / "com/mysql/mysql-connector-j/8.4.0/mysql-connector-j-8.4.0.jar"]
QUERY = "SELECT firstname,lastname FROM test.customers where id={id}"

pytestmark = pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None,
                                reason="needs java and mvn (.ci/deps-clients.sh)")


def classpath():
    p = subprocess.run(["mvn", "-o", "-q", "-B", "-Dstyle.color=never", "compile"], cwd=APP,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    missing = [str(j) for j in JARS if not j.exists()]
    assert not missing, f"missing jars (run .ci/deps-clients.sh): {missing}"
    return os.pathsep.join([str(APP / "target" / "classes"), *map(str, JARS)])


def test_seed000_app_stays_fresh():
    rows, probe_rows, secs = 300, 300, (30 if os.environ.get("FULL") else 8)
    cp = classpath()
    with start_mariadb() as db:
        # The seed's table: no primary key (the rule names the id column, not a key).
        db.sql("CREATE DATABASE test; CREATE TABLE test.customers (id INT, firstname VARCHAR(40), lastname VARCHAR(40));")
        db.sql("INSERT INTO test.customers VALUES " +
               ",".join(f"({i}, 'v0', 'L{i}')" for i in range(1, rows + probe_rows + 1)) + ";")
        srv = start_rules(db, f"test.customers=md5({QUERY})")
        writes, probes, errors = [], [], []
        stop = threading.Event()

        def connect():
            return pymysql.connect(host=db.host, port=db.port, user=db.user, password=db.password, autocommit=True)

        def writer():
            rnd, version, conn = random.Random(3), {}, connect()
            try:
                while not stop.is_set():
                    i = rnd.randint(1, rows)
                    version[i] = version.get(i, 0) + 1
                    with conn.cursor() as cur:
                        cur.execute("UPDATE test.customers SET firstname = %s WHERE id = %s", (f"v{version[i]}", i))
                    writes.append((i, version[i], time.time()))
                    time.sleep(rnd.uniform(0.01, 0.04))
            except Exception as e:  # noqa: BLE001
                errors.append(repr(e))
            finally:
                conn.close()

        app = subprocess.Popen(["java", "-cp", cp, "sqlcached.invalidate.FreshReads", f"{db.host}:{db.port}", db.user,
                                db.password, f"127.0.0.1:{srv.port}", str(secs), str(rows), "4"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        probe = (srv.port, connect, list(range(rows + 1, rows + probe_rows + 1)),
                 lambda i: hashlib.md5(QUERY.format(id=i).encode()).hexdigest(),
                 "UPDATE test.customers SET lastname = CONCAT(lastname, 'x') WHERE id = %s", stop, probes, errors)
        side = [threading.Thread(target=writer), threading.Thread(target=prober, args=probe)]
        try:
            for t in side:
                t.start()
            out, err = app.communicate(timeout=secs + 120)
        finally:
            stop.set()
            for t in side:
                t.join(30)
            st = stats(srv.port)
            srv.stop()
    assert app.returncode == 0 and "DONE" in out, err[-3000:]
    assert not errors and "ERROR" not in out, (errors, [l for l in out.splitlines() if l.startswith("ERROR")][:5])
    reads = []
    for line in out.splitlines():
        if line.startswith("R "):
            _, i, first, start, _hit = line.split()
            reads.append((int(i), int(first[1:]), int(start) / 1000))
    hits = sum(line.endswith(" 1") for line in out.splitlines() if line.startswith("R "))
    stale, _ = analyse(writes, reads)
    probes.sort()
    print(f"Java seed 000 app: {len(reads)} reads ({hits / max(1, len(reads)):.2f} hits), {len(writes)} direct "
          f"updates, stale reads {stale}, held sets {st['invalidate_held_sets']}; invalidation delay over "
          f"{len(probes)} probes p50 {pct(probes, 50):.1f} ms p99 {pct(probes, 99):.1f} ms max {probes[-1]:.1f} ms")
    assert len(reads) > 1000 and len(writes) > 50 and len(probes) >= 80
    assert hits / len(reads) > 0.3
    assert stale == 0
    assert pct(probes, 99) <= 100
