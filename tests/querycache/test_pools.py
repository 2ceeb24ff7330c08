"""Pools see what the server does: when MariaDB closes an idle backend connection
(wait_timeout, KILL, a restart), the proxy closes its client at once, so a pool's liveness
check (SQLAlchemy pool_pre_ping, PyMySQL ping(reconnect=True)) replaces the connection and
no error reaches the application. Against MariaDB directly the same code works; before
this, through the proxy, the next command failed with ERROR 1158 "Lost connection to
MySQL backend"."""
import time

import pytest

from conftest import connect, start_mariadb, start_proxy

sqlalchemy = pytest.importorskip("sqlalchemy", reason="SQLAlchemy missing: pip install -r tests/requirements.txt")



@pytest.fixture(scope="module")
def mariadb():
    """A MariaDB of this module's own: a test restarts it."""
    with start_mariadb() as db:
        db.sql("CREATE DATABASE pools; CREATE TABLE pools.t (id INT PRIMARY KEY, v INT); "
               "INSERT INTO pools.t VALUES (1, 10), (2, 20);")
        yield db


def engine_for(port, db, **kw):
    url = f"mysql+pymysql://{db.user}:{db.password}@127.0.0.1:{port}/pools"
    return sqlalchemy.create_engine(url, pool_pre_ping=True, pool_size=2, max_overflow=0, **kw)


def read(engine):
    with engine.connect() as c:
        return c.execute(sqlalchemy.text("SELECT v FROM t WHERE id = 1")).scalar()


def backend_ids(engine):
    with engine.connect() as c:
        return c.execute(sqlalchemy.text("SELECT CONNECTION_ID()")).scalar()


def test_wait_timeout_closes_the_client_and_the_pool_recovers(mariadb, tmp_path):
    with start_proxy(mariadb, log=tmp_path / "p.log") as px:
        for port in (mariadb.port, px.mysql_port):  # direct first: the reference behaviour
            eng = engine_for(port, mariadb)
            sqlalchemy.event.listen(eng, "connect",
                                    lambda dbapi, rec: dbapi.cursor().execute("SET SESSION wait_timeout = 1"))
            assert read(eng) == 10
            time.sleep(2.5)  # the backend closes the idle connection
            assert read(eng) == 10, port  # pre-ping saw it dead and reconnected: no error
            eng.dispose()


def test_kill_closes_the_client(mariadb, tmp_path):
    with start_proxy(mariadb, log=tmp_path / "p.log") as px:
        c = px.connect("pools")
        with c.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            cid = cur.fetchone()[0]
        killer = connect(mariadb.port)
        with killer.cursor() as cur:
            cur.execute(f"KILL {cid}")
        killer.close()
        deadline = time.monotonic() + 5
        while c.open and time.monotonic() < deadline:
            try:
                c.ping(reconnect=False)
            except Exception:
                break
            time.sleep(0.05)
        # PyMySQL's ping(reconnect=True) (what pools call) gets a fresh, working connection.
        c.ping(reconnect=True)
        with c.cursor() as cur:
            cur.execute("SELECT v FROM t WHERE id = 2")
            assert cur.fetchone()[0] == 20
        c.close()


def test_backend_restart_every_pooled_connection_is_replaced(mariadb, tmp_path):
    with start_proxy(mariadb, log=tmp_path / "p.log") as px:
        eng = engine_for(px.mysql_port, mariadb)
        first = {backend_ids(eng) for _ in range(3)}
        assert read(eng) == 10
        mariadb.restart()
        time.sleep(0.5)
        # Every pooled connection was closed by the proxy; pre-ping replaces them silently.
        for _ in range(4):
            assert read(eng) == 10
        eng.dispose()
