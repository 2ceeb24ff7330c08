"""Real clients through the PostgreSQL query cache (issue 41): asyncpg's prepared statements
(binary results) and SQLAlchemy's ORM on psycopg 3, unchanged but for the port. Repeated reads
are answered by the cache (pg_query_cache_hits grows); a write through the front is seen by
the very next read, one made straight on PostgreSQL once it reached the cache through the WAL
(within WAL_BOUND, 100 ms: issue 41 item 3; freshness.py holds reads to the same bound).
asyncpg's fetchrow/fetchval (an Execute limited to one row, ending in PortalSuspended) are
cached outside transaction blocks, where the Sync ends the portal; inside one the portal stays
open for the client's next Execute, so they go to PostgreSQL (a cursor over it still works).
Reads inside a transaction go to PostgreSQL under the default policy (an ORM session's
default; counted as pg_query_cache_not_cacheable_transaction): an ORM's reads are served with
autocommit reads."""
import asyncio
import time

from freshness import WAL_BOUND

import psycopg
import pytest

asyncpg = pytest.importorskip("asyncpg", reason="asyncpg missing: pip install -r tests/requirements.txt")
sqlalchemy = pytest.importorskip("sqlalchemy", reason="SQLAlchemy missing: pip install -r tests/requirements.txt")


@pytest.fixture(scope="module")
def cached(fcdb, direct_dsn):
    """A front with the cache on the database `fc`, and a table `drv.items` of 50 rows."""
    from harness.pgproxy import start_pgproxy

    with psycopg.connect(direct_dsn, autocommit=True) as c:
        c.execute("DROP SCHEMA IF EXISTS drv CASCADE")
        c.execute("CREATE SCHEMA drv")
        c.execute("CREATE TABLE drv.items (id int PRIMARY KEY, name text NOT NULL, price numeric(8,2))")
        c.execute("INSERT INTO drv.items SELECT i, 'item ' || i, i * 1.5 FROM generate_series(1, 50) i")
    with start_pgproxy(fcdb, "--pg-database", "fc", "--pg-slot", "drv_fc", "--pg-publication", "drv_fc") as px:
        yield px


def hits(px):
    return int(px.stats().get("pg_query_cache_hits", 0))


def until_hit(px, read):
    """Run `read` until the cache answers it (a table is cached once the WAL follows it and
    the transactions older than that ended): at most 15 s."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        before = hits(px)
        read()
        if hits(px) > before:
            return
        time.sleep(0.1)
    raise AssertionError(f"never answered by the cache: {px.stats()}")


async def connect(px):
    """An asyncpg connection to the database `fc` through the front `px`, in clear."""
    pg = px.backend
    return await asyncpg.connect(f"postgresql://{pg.user}:{pg.password}@127.0.0.1:{px.pg_port}/fc", ssl=False)


def direct(direct_dsn, sql, *params):
    with psycopg.connect(direct_dsn, autocommit=True) as c:
        c.execute(sql, params)


def test_asyncpg_prepared_reads_hit_and_stay_fresh(cached, direct_dsn):
    async def run():
        conn = await connect(cached)
        try:
            stmt = await conn.prepare("SELECT name, price FROM drv.items WHERE id = $1")
            [first] = await stmt.fetch(7)
            assert (first["name"], str(first["price"])) == ("item 7", "10.50")
            deadline = time.monotonic() + 15
            while hits(cached) == 0 and time.monotonic() < deadline:
                await stmt.fetch(7)
                await asyncio.sleep(0.1)
            before = hits(cached)
            for _ in range(20):
                [row] = await stmt.fetch(7)
                assert row["name"] == "item 7"
            st = {k: v for k, v in cached.stats().items() if k.startswith("pg_query_cache")}
            answered = hits(cached) >= before + 10
            # A write straight to PostgreSQL: the next read through the cache sees it.
            direct(direct_dsn, "UPDATE drv.items SET name = 'renamed 7' WHERE id = 7")
            await asyncio.sleep(WAL_BOUND)
            assert (await stmt.fetch(7))[0]["name"] == "renamed 7"
            # A write through the front, in a transaction: seen at once after COMMIT.
            async with conn.transaction():
                await conn.execute("UPDATE drv.items SET price = 99.99 WHERE id = 7")
            assert str((await stmt.fetch(7))[0]["price"]) == "99.99"
            return answered, st
        finally:
            await conn.close()

    answered, st = asyncio.run(run())
    # asyncpg binds and executes a statement it described when preparing it: the reply has
    # no RowDescription (every fill was refused until 2026-12-07).
    assert answered, f"repeated prepared reads were not answered by the cache: {st}"


def test_asyncpg_fetchrow_and_fetchval_hit_outside_transactions(cached, direct_dsn):
    async def run():
        conn = await connect(cached)
        try:
            sql = "SELECT name FROM drv.items WHERE id = $1"
            assert await conn.fetchval(sql, 21) == "item 21"
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                before = hits(cached)
                await conn.fetchval(sql, 21)
                if hits(cached) > before:
                    break
                await asyncio.sleep(0.1)
            before = hits(cached)
            for _ in range(20):
                assert await conn.fetchval(sql, 21) == "item 21"
                assert (await conn.fetchrow(sql, 21))["name"] == "item 21"
            answered = hits(cached) - before
            # More rows than the limit: fetchrow gets the first, as from PostgreSQL.
            many = "SELECT id FROM drv.items WHERE id <= $1 ORDER BY id"
            for _ in range(3):
                assert await conn.fetchval(many, 5) == 1
            # Fresh: a direct write is seen within the WAL bound.
            direct(direct_dsn, "UPDATE drv.items SET name = 'renamed 21' WHERE id = 21")
            await asyncio.sleep(WAL_BOUND)
            assert await conn.fetchval(sql, 21) == "renamed 21"
            # In a transaction block the limited portal stays open on the server: a cursor
            # fetching it in steps (Execute with a row limit, again and again) works.
            async with conn.transaction():
                cur = await conn.cursor(many, 5)
                assert [r["id"] for r in await cur.fetch(2)] == [1, 2]
                assert [r["id"] for r in await cur.fetch(2)] == [3, 4]
                assert await conn.fetchval(sql, 21) == "renamed 21"
            return answered
        finally:
            await conn.close()

    answered = asyncio.run(run())
    assert answered >= 30, f"fetchrow/fetchval were not answered by the cache: {answered} hits of 40"


def test_sqlalchemy_orm_reads_hit_and_stay_fresh(cached, direct_dsn):
    from sqlalchemy import Numeric, String, create_engine, select
    from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

    class Base(DeclarativeBase):
        pass

    class Item(Base):
        __tablename__ = "items"
        __table_args__ = {"schema": "drv"}
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(String)
        price: Mapped[float] = mapped_column(Numeric(8, 2))

    pg = cached.backend
    url = f"postgresql+psycopg://{pg.user}:{pg.password}@127.0.0.1:{cached.pg_port}/fc?sslmode=disable"
    tx_engine = create_engine(url, pool_size=2)
    # Autocommit reads (the ORM unchanged, the engine's isolation level "AUTOCOMMIT"): cached.
    engine = create_engine(url, pool_size=2, isolation_level="AUTOCOMMIT")
    try:
        def name_of(i):
            with Session(engine) as s:
                return s.scalars(select(Item.name).where(Item.id == i)).one()

        assert name_of(11) == "item 11"
        until_hit(cached, lambda: name_of(11))
        before = hits(cached)
        for _ in range(20):
            assert name_of(11) == "item 11"
        assert hits(cached) >= before + 10, "repeated ORM reads were not answered by the cache"
        # The default: each Session reads in a transaction, which the cache leaves to PostgreSQL.
        before = hits(cached)
        with Session(tx_engine) as s:
            for _ in range(3):
                assert s.scalars(select(Item.name).where(Item.id == 11)).one() == "item 11"
        assert hits(cached) == before, "a read inside a transaction was answered by the cache"
        # The ORM's own unit of work through the front (a transaction: BEGIN, UPDATE, COMMIT
        # on an engine of the default isolation), then a direct write: both seen at once.
        with Session(tx_engine) as s:
            s.get(Item, 11).name = "orm 11"
            s.commit()
        assert name_of(11) == "orm 11"
        direct(direct_dsn, "UPDATE drv.items SET name = 'direct 11' WHERE id = 11")
        time.sleep(WAL_BOUND)
        assert name_of(11) == "direct 11"
    finally:
        engine.dispose()
        tx_engine.dispose()


def test_a_suspended_reply_is_not_answered_inside_a_transaction(cached, fcdb, direct_dsn, tmp_path):
    """Under until-write, reads in transactions are answered from memory, but not one whose
    stored reply is a suspended portal (fetchval's): in a transaction block PostgreSQL keeps
    that portal open, and a later Execute of it must find it there. (`cached`: the table.)"""
    from harness.pgproxy import start_pgproxy

    async def run(px):
        conn = await connect(px)
        try:
            sql = "SELECT name FROM drv.items WHERE id = $1"
            plain = "SELECT name FROM drv.items WHERE id = 33"
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                before = hits(px)
                await conn.fetchval(sql, 33)
                await conn.fetch(plain)
                if hits(px) >= before + 2:
                    break
                await asyncio.sleep(0.1)
            else:
                raise AssertionError(f"never answered by the cache: {px.stats()}")
            async with conn.transaction():
                before = hits(px)
                assert (await conn.fetch(plain))[0]["name"] == "item 33"
                in_tx_hits = hits(px) - before
                before = hits(px)
                assert await conn.fetchval(sql, 33) == "item 33"
                suspended_hits = hits(px) - before
            return in_tx_hits, suspended_hits
        finally:
            await conn.close()

    log = tmp_path / "log"
    with start_pgproxy(fcdb, "--pg-database", "fc", "--pg-slot", "drv_uw", "--pg-publication", "drv_uw",
                       "--pg-query-cache-in-transactions", "until-write", log=str(log)) as px:
        in_tx_hits, suspended_hits = asyncio.run(run(px))
    # Without --pg-ddl-trigger, the start says how late direct DDL and privilege changes are seen.
    assert "GRANT/REVOKE and policy changes made on the server directly are seen by the catalog reader within 250 ms" \
        in log.read_text(), log.read_text()
    assert in_tx_hits == 1, "until-write answers a complete reply inside the transaction"
    assert suspended_hits == 0, "a suspended portal's reply was answered inside a transaction"
