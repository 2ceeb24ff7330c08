"""Reads inside transactions and the PostgreSQL query cache (issue 41: the MySQL cache's
policies, `--pg-query-cache-in-transactions never|read-only|until-write`). A read answered
from memory inside a transaction has READ COMMITTED semantics (the latest committed result);
after the transaction's first write (or anything that may write) its reads go to the server
and see its own writes; a miss inside a transaction never fills the shared cache (its
isolation level may be REPEATABLE READ through a default the proxy cannot see), so results
are filled by reads outside transactions. psycopg prepares a statement after 5 executions
(a named statement is another key): these tests turn that off to compare like with like."""
import time

import psycopg
import pytest

from freshness import WAL_BOUND


def start(fcdb, direct_dsn, slot, policy=None):
    from harness.pgproxy import start_pgproxy

    with psycopg.connect(direct_dsn, autocommit=True) as c:
        c.execute(f"DROP SCHEMA IF EXISTS {slot} CASCADE")
        c.execute(f"CREATE SCHEMA {slot}")
        c.execute(f"CREATE TABLE {slot}.t (id int PRIMARY KEY, v text NOT NULL)")
        c.execute(f"INSERT INTO {slot}.t SELECT i, 'v' || i FROM generate_series(1, 10) i")
    args = ["--pg-database", "fc", "--pg-slot", slot, "--pg-publication", slot]
    if policy:
        args += ["--pg-query-cache-in-transactions", policy]
    return start_pgproxy(fcdb, *args)


def hits(px):
    return int(px.stats().get("pg_query_cache_hits", 0))


def warm(px, conn, sql, params=None):
    """Autocommit reads of `sql` until the cache answers it (the table joins the publication
    and older transactions end first): at most 15 s."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        before = hits(px)
        conn.execute(sql, params).fetchall()
        if hits(px) > before:
            return
        time.sleep(0.1)
    raise AssertionError(f"never answered by the cache: {px.stats()}")


def test_read_only_policy_default(fcdb, direct_dsn):
    """Default `read-only`: reads of a transaction begun READ ONLY are answered from memory,
    reads of any other transaction go to PostgreSQL."""
    with start(fcdb, direct_dsn, "txro") as px:
        sql = "SELECT v FROM txro.t WHERE id = %s"
        with psycopg.connect(px.dsn(database="fc"), autocommit=True, prepare_threshold=None) as c:
            warm(px, c, sql, (1,))
        with psycopg.connect(px.dsn(database="fc"), prepare_threshold=None) as c:  # autocommit off: BEGIN before each read
            before = hits(px)
            for _ in range(5):
                assert c.execute(sql, (1,)).fetchone() == ("v1",)
            assert c.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            c.commit()
            assert hits(px) == before, "a read in a read-write transaction was answered from memory"
            c.read_only = True  # psycopg begins with BEGIN READ ONLY
            for _ in range(5):
                assert c.execute(sql, (1,)).fetchone() == ("v1",)
            assert c.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            c.commit()
            assert hits(px) >= before + 5, "reads of a READ ONLY transaction were not answered from memory"
            # The simple protocol too, and the session state stays right after a hit.
            c.autocommit = True
            warm(px, psycopg.ClientCursor(c), "SELECT v FROM txro.t WHERE id = 1")
            c.autocommit = False
            c.read_only = True
            cur = psycopg.ClientCursor(c)
            before = hits(px)
            cur.execute("SELECT v FROM txro.t WHERE id = 1")
            assert cur.fetchone() == ("v1",) and hits(px) == before + 1
            assert c.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
            c.rollback()
            assert c.info.transaction_status == psycopg.pq.TransactionStatus.IDLE


def test_until_write_sees_its_own_writes(fcdb, direct_dsn):
    """`until-write`: a transaction's reads are answered from memory until its first write;
    then they go to PostgreSQL and see that write; after COMMIT every session sees it. A
    direct write is seen (within the WAL bound) by a transaction that has not written."""
    with start(fcdb, direct_dsn, "txuw", "until-write") as px:
        sql = "SELECT v FROM txuw.t WHERE id = %s"
        with psycopg.connect(px.dsn(database="fc"), autocommit=True, prepare_threshold=None) as c:
            warm(px, c, sql, (2,))
        with psycopg.connect(px.dsn(database="fc"), prepare_threshold=None) as w, \
                psycopg.connect(px.dsn(database="fc"), prepare_threshold=None) as r:
            before = hits(px)
            assert w.execute(sql, (2,)).fetchone() == ("v2",)
            assert hits(px) == before + 1, "a read before the first write was not answered from memory"
            w.execute("UPDATE txuw.t SET v = 'mine' WHERE id = 2")
            before = hits(px)
            assert w.execute(sql, (2,)).fetchone() == ("mine",), "the transaction does not see its own write"
            assert psycopg.ClientCursor(w).execute("SELECT v FROM txuw.t WHERE id = 2").fetchone() == ("mine",)
            assert hits(px) == before
            # Another transaction, not written: the committed value (READ COMMITTED).
            assert r.execute(sql, (2,)).fetchone() == ("v2",)
            w.commit()
            assert r.execute(sql, (2,)).fetchone() == ("mine",), "a committed write not seen"
            r.commit()
            # A write made straight on PostgreSQL, then a read in a transaction that has not written.
            with psycopg.connect(direct_dsn, autocommit=True) as d:
                d.execute("UPDATE txuw.t SET v = 'direct' WHERE id = 2")
            time.sleep(WAL_BOUND)
            assert r.execute(sql, (2,)).fetchone() == ("direct",)
            r.commit()
            # A volatile function call may write: the transaction's reads go to the server after it.
            assert w.execute(sql, (3,)).fetchone() == ("v3",)
            w.execute("SELECT random()")
            before = hits(px)
            assert w.execute(sql, (3,)).fetchone() == ("v3",)
            assert hits(px) == before
            w.rollback()


def test_until_write_serves_an_orm_session(fcdb, direct_dsn):
    """SQLAlchemy's Session reads in a transaction: under `until-write` those reads are
    answered from memory, and the unit of work's own flush is seen by its later reads."""
    sqlalchemy = pytest.importorskip("sqlalchemy")
    from sqlalchemy import String, create_engine
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

    class Base(DeclarativeBase):
        pass

    class Row(Base):
        __tablename__ = "t"
        __table_args__ = {"schema": "txorm"}
        id: Mapped[int] = mapped_column(primary_key=True)
        v: Mapped[str] = mapped_column(String)

    with start(fcdb, direct_dsn, "txorm", "until-write") as px:
        pg = px.backend
        url = f"postgresql+psycopg://{pg.user}:{pg.password}@127.0.0.1:{px.pg_port}/fc?sslmode=disable"
        args = {"prepare_threshold": None}
        engine = create_engine(url, pool_size=1, connect_args=args)
        # The same reads in autocommit fill the cache (a miss in a transaction fills nothing).
        filler = create_engine(url, pool_size=1, connect_args=args, isolation_level="AUTOCOMMIT")
        try:
            deadline = time.monotonic() + 15
            while hits(px) == 0 and time.monotonic() < deadline:
                with Session(filler) as s:
                    assert s.get(Row, 4).v == "v4"
                time.sleep(0.1)
            before = hits(px)
            for _ in range(5):
                with Session(engine) as s:
                    assert s.get(Row, 4).v == "v4"
            assert hits(px) > before, f"the ORM's reads in transactions were not answered: {sqlalchemy.__version__}"
            with Session(engine) as s:
                s.get(Row, 4).v = "orm"
                s.flush()
                assert s.get(Row, 4, populate_existing=True).v == "orm"
                s.commit()
            with Session(engine) as s:
                assert s.get(Row, 4).v == "orm"
        finally:
            engine.dispose()
            filler.dispose()


def test_never_policy(fcdb, direct_dsn):
    with start(fcdb, direct_dsn, "txnv", "never") as px:
        sql = "SELECT v FROM txnv.t WHERE id = %s"
        with psycopg.connect(px.dsn(database="fc"), autocommit=True, prepare_threshold=None) as c:
            warm(px, c, sql, (5,))
        with psycopg.connect(px.dsn(database="fc"), prepare_threshold=None) as c:
            c.read_only = True
            before = hits(px)
            for _ in range(3):
                assert c.execute(sql, (5,)).fetchone() == ("v5",)
            c.commit()
            assert hits(px) == before
