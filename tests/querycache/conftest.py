"""Fixtures for the MySQL query cache tests: a MariaDB per test module (binlog ROW), a sqlcached
proxy in front of it (tests/harness/mysqlproxy.py), and helpers that tell, from the proxy's
Qcache_* counters, whether a statement was served from the cache."""
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.certs import make_certs, proxy_tls_args  # noqa: E402
from harness.mariadb import start_mariadb  # noqa: E402
from harness.mysqlproxy import connect, start_proxy  # noqa: E402

pymysql = pytest.importorskip("pymysql", reason="PyMySQL missing: pip install -r tests/requirements.txt")

if not (shutil.which("mariadbd") or Path("/usr/sbin/mariadbd").exists()):
    pytest.skip("mariadbd is not installed", allow_module_level=True)

# qc.t: 100 rows; qc2.t: the same ids with other values (same statement, other default db);
# a view, a sequence and a stored function for the cacheability rules.
SCHEMA = """
SET GLOBAL max_allowed_packet = 67108864;
CREATE DATABASE qc;
USE qc;
CREATE TABLE qc.t (id INT PRIMARY KEY, v VARCHAR(64), n INT, ts TIMESTAMP NULL,
  s VARCHAR(16) CHARACTER SET utf8mb4) ENGINE=InnoDB;
SET time_zone = '+00:00';
INSERT INTO qc.t SELECT seq, CONCAT('v', seq), seq * 10, FROM_UNIXTIME(1700000000 + seq), 'é' FROM seq_1_to_100;
CREATE VIEW qc.vt AS SELECT id, v FROM qc.t;
CREATE SEQUENCE qc.seq;
CREATE FUNCTION qc.f(x INT) RETURNS INT DETERMINISTIC RETURN x + 1;
CREATE DATABASE qc2;
CREATE TABLE qc2.t LIKE qc.t;
INSERT INTO qc2.t SELECT id, CONCAT('other', id), n, ts, s FROM qc.t;
"""


@pytest.fixture(scope="module")
def mariadb():
    """A MariaDB for this module with the qc schema."""
    with start_mariadb() as db:
        db.sql(SCHEMA)
        yield db


@pytest.fixture(scope="module")
def proxy(request, mariadb, tmp_path_factory):
    """sqlcached proxying to the module's MariaDB (cache ON, defaults), binlog connected; a
    module with PROXY_ONLINE = False (pure passthrough tests) does not wait for the binlog."""
    log = tmp_path_factory.mktemp("proxy") / "sqlcached.log"
    online = getattr(request.module, "PROXY_ONLINE", True)
    with start_proxy(mariadb, "-t", "2", log=log, online=online) as px:
        yield px
    if request.session.testsfailed:
        print(f"sqlcached log: {log}")


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """Test certificates made with openssl (harness/certs.py)."""
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def tls_proxy(request, mariadb, certs, tmp_path_factory):
    """Like `proxy`, but offering TLS to clients (optional for them)."""
    log = tmp_path_factory.mktemp("tlsproxy") / "sqlcached.log"
    online = getattr(request.module, "PROXY_ONLINE", True)
    with start_proxy(mariadb, *proxy_tls_args(certs), log=log, online=online) as px:
        yield px


@pytest.fixture
def pc(proxy):
    """A PyMySQL connection through the proxy to database qc (autocommit)."""
    c = proxy.connect("qc")
    yield c
    c.close()


@pytest.fixture
def dc(mariadb):
    """A PyMySQL connection straight to MariaDB, database qc."""
    c = connect(mariadb.port, "qc")
    yield c
    c.close()
