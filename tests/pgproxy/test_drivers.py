"""Real drivers used unchanged through sqlcached's PostgreSQL front (only the port differs):
psycopg 3 (sync and async; server-side binding, prepared statements, binary format, pipeline
mode, COPY, LISTEN/NOTIFY, cancel), asyncpg (prepared statements, binary codecs, COPY,
listeners, cancellation by wait_for and by timeout), psql (\\copy)."""
import asyncio
import os
import subprocess
import threading
import time

import psycopg
import pytest

asyncpg = pytest.importorskip("asyncpg", reason="asyncpg missing: pip install -r tests/requirements.txt")

PSQL = "/usr/lib/postgresql/15/bin/psql"


def test_psycopg_simple_extended_prepared_and_binary(pgproxy):
    with psycopg.connect(pgproxy.dsn(database="pgp"), autocommit=True) as c:
        # Simple protocol (no parameters) and server-side binding (extended protocol).
        assert c.execute("SELECT count(*) FROM items").fetchone() == (100,)
        row = c.execute("SELECT name, price, data, at FROM items WHERE id = %s", (7,)).fetchone()
        assert row[0] == "item 7" and str(row[1]) == "10.50" and bytes(row[2]) == bytes.fromhex("00000007")
        # Named prepared statements (prepare=True), executed many times.
        for i in (1, 2, 3, 50):
            assert c.execute("SELECT name FROM items WHERE id = %s", (i,), prepare=True).fetchone() == (f"item {i}",)
        # Binary results and binary parameters.
        with c.cursor(binary=True) as cur:
            cur.execute("SELECT id, price, data, at FROM items WHERE id = ANY(%b)", ([3, 4],))
            rows = cur.fetchall()
        assert [r[0] for r in rows] == [3, 4] and bytes(rows[0][2]) == bytes.fromhex("00000003")
        # Errors end the batch and the session goes on; a failed transaction block too.
        with pytest.raises(psycopg.errors.UndefinedTable):
            c.execute("SELECT * FROM nope")
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            with c.transaction():
                with pytest.raises(psycopg.errors.DivisionByZero):
                    c.execute("SELECT 1/0")
                c.execute("SELECT 1")
        # Several statements in one simple Query, and an empty query.
        cur = c.execute("SELECT 1; SELECT 2")
        assert cur.fetchone() == (1,) and cur.nextset() and cur.fetchone() == (2,)
        assert c.execute("").statusmessage is None
        # A server-side cursor (named portal, fetched in chunks).
        with c.transaction():
            with c.cursor(name="walk") as sc:
                sc.itersize = 7
                sc.execute("SELECT id FROM items ORDER BY id")
                assert [r[0] for r in sc] == list(range(1, 101))


def test_psycopg_pipeline_mode(pgproxy):
    with psycopg.connect(pgproxy.dsn(database="pgp"), autocommit=True) as c:
        c.execute("CREATE TEMP TABLE pipe (id int PRIMARY KEY, v text)")
        with c.pipeline() as p:
            curs = []
            for i in range(200):
                c.execute("INSERT INTO pipe VALUES (%s, %s)", (i, f"v{i}"))
                if i % 50 == 0:
                    p.sync()  # several Syncs in flight
                curs.append(c.execute("SELECT v FROM pipe WHERE id = %s", (i,)))
        assert [cur.fetchone()[0] for cur in curs] == [f"v{i}" for i in range(200)]
        # An error inside a pipeline aborts up to the next Sync only.
        with pytest.raises(psycopg.errors.UniqueViolation):
            with c.pipeline():
                c.execute("INSERT INTO pipe VALUES (1, 'dup')")
        assert c.execute("SELECT count(*) FROM pipe").fetchone() == (200,)


def test_psycopg_copy_and_notify(pgproxy):
    with psycopg.connect(pgproxy.dsn(database="pgp"), autocommit=True) as c:
        c.execute("CREATE TEMP TABLE cp (id int, v text, b bytea)")
        big = b"x" * 300_000  # rows longer than the front's streaming threshold
        with c.cursor().copy("COPY cp FROM STDIN") as cp:
            for i in range(5000):
                cp.write_row((i, f"row {i}", big if i == 17 else b"\x00\x01"))
        assert c.execute("SELECT count(*), sum(length(b)) FROM cp").fetchone() == (5000, 300_000 + 4999 * 2)
        with c.cursor().copy("COPY (SELECT id, v FROM cp ORDER BY id) TO STDOUT (FORMAT BINARY)") as cp:
            cp.set_types(["int4", "text"])
            rows = list(cp.rows())
        assert len(rows) == 5000 and rows[4999] == (4999, "row 4999")
        # A failed COPY FROM (the client aborts it) leaves the session usable.
        with pytest.raises(psycopg.errors.QueryCanceled):
            with c.cursor().copy("COPY cp FROM STDIN") as cp:
                cp.write_row((1, "a", b""))
                raise psycopg.errors.QueryCanceled("abandoned")
        assert c.execute("SELECT count(*) FROM cp").fetchone() == (5000,)

        c.execute("LISTEN chan")
        with psycopg.connect(pgproxy.dsn(database="pgp"), autocommit=True) as other:
            other.execute("NOTIFY chan, 'hello'")
            other.execute("SELECT pg_notify('chan', 'world')")
        got = []
        for n in c.notifies(timeout=5, stop_after=2):
            got.append((n.channel, n.payload))
        assert got == [("chan", "hello"), ("chan", "world")]
        # A notice is relayed too.
        notices = []
        c.add_notice_handler(lambda d: notices.append(d.message_primary))
        c.execute("DO $$ BEGIN RAISE NOTICE 'from plpgsql'; END $$")
        assert notices == ["from plpgsql"]


def test_psycopg_cancel(pgproxy):
    with psycopg.connect(pgproxy.dsn(database="pgp"), autocommit=True) as c:
        threading.Timer(0.5, c.cancel).start()
        t0 = time.monotonic()
        with pytest.raises(psycopg.errors.QueryCanceled):
            c.execute("SELECT pg_sleep(30)")
        assert time.monotonic() - t0 < 10
        assert c.execute("SELECT 42").fetchone() == (42,)
        # The BackendKeyData's pid is the backend's own.
        assert c.info.backend_pid == c.execute("SELECT pg_backend_pid()").fetchone()[0]
    s = pgproxy.stats()
    assert s["pg_cancels_forwarded"] >= 1


def test_psycopg_async_with_pipeline(pgproxy):
    async def main():
        async with await psycopg.AsyncConnection.connect(pgproxy.dsn(database="pgp"), autocommit=True) as c:
            cur = await c.execute("SELECT name FROM items WHERE id = %s", (9,))
            assert await cur.fetchone() == ("item 9",)
            async with c.pipeline():
                curs = [await c.execute("SELECT %s::int * 2", (i,)) for i in range(100)]
            assert [(await cur.fetchone())[0] for cur in curs] == [i * 2 for i in range(100)]
            # Concurrent connections on one event loop.
            async def one(i):
                async with await psycopg.AsyncConnection.connect(pgproxy.dsn(database="pgp")) as d:
                    r = await (await d.execute("SELECT id FROM items WHERE id = %s", (i,))).fetchone()
                    return r[0]
            assert await asyncio.gather(*(one(i) for i in range(1, 21))) == list(range(1, 21))

    asyncio.run(main())


def _asyncpg_connect(pgproxy, **kw):
    pg = pgproxy.backend
    return asyncpg.connect(host="127.0.0.1", port=pgproxy.pg_port, user=pg.user, password=pg.password,
                           database="pgp", ssl=False, **kw)


def test_asyncpg_prepared_binary_copy_listen(pgproxy):
    async def main():
        c = await _asyncpg_connect(pgproxy)
        try:
            st = await c.prepare("SELECT id, name, price, data, at FROM items WHERE id = $1")
            for i in (5, 6):
                r = await st.fetchrow(i)
                assert r["name"] == f"item {i}" and r["data"] == bytes.fromhex(f"{i:08x}")
            assert str((await st.fetchrow(5))["price"]) == "7.50"
            assert await c.fetchval("SELECT $1::int8 + $2", 2**40, 1) == 2**40 + 1
            rows = await c.fetch("SELECT g, g::text FROM generate_series(1, 2000) g")
            assert len(rows) == 2000 and rows[-1][1] == "2000"
            async with c.transaction():
                cur_rows = [r[0] async for r in c.cursor("SELECT id FROM items ORDER BY id", prefetch=13)]
            assert cur_rows == list(range(1, 101))
            await c.execute("CREATE TEMP TABLE ac (id int, v text)")
            assert await c.copy_records_to_table("ac", records=[(i, f"v{i}") for i in range(3000)]) == "COPY 3000"
            out = []
            await c.copy_from_query("SELECT * FROM ac ORDER BY id", output=lambda b: out.append(b) or asyncio.sleep(0))
            assert b"".join(out).count(b"\n") == 3000
            await c.executemany("INSERT INTO ac VALUES ($1, $2)", [(i, "m") for i in range(50)])
            assert await c.fetchval("SELECT count(*) FROM ac") == 3050
            got = asyncio.get_running_loop().create_future()
            await c.add_listener("ach", lambda conn, pid, ch, payload: got.done() or got.set_result(payload))
            other = await _asyncpg_connect(pgproxy)
            await other.execute("NOTIFY ach, 'ping'")
            await other.close()
            assert await asyncio.wait_for(got, 5) == "ping"
        finally:
            await c.close()

    asyncio.run(main())


def test_asyncpg_cancellation(pgproxy):
    before = pgproxy.stats()["pg_cancels_forwarded"]

    async def main():
        c = await _asyncpg_connect(pgproxy)
        try:
            t0 = time.monotonic()
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(c.fetchval("SELECT pg_sleep(30)"), 0.5)
            # asyncpg cancelled the query (a cancel request through the front): usable at once.
            assert await c.fetchval("SELECT 1") == 1
            # A statement timeout of asyncpg's own: it cancels the query the same way.
            with pytest.raises(asyncio.TimeoutError):
                await c.execute("SELECT pg_sleep(30)", timeout=0.5)
            assert time.monotonic() - t0 < 10
            assert await c.fetchval("SELECT 2") == 2
            assert c.get_server_pid() == await c.fetchval("SELECT pg_backend_pid()")
        finally:
            await c.close()

    asyncio.run(main())
    assert pgproxy.stats()["pg_cancels_forwarded"] >= before + 2


def test_psql_copy(pgproxy, tmp_path):
    pg = pgproxy.backend
    src = tmp_path / "in.csv"
    src.write_text("".join(f"{i},name {i}\n" for i in range(1000)))
    dst = tmp_path / "out.csv"
    env = {**os.environ, "PGPASSWORD": pg.password, "PGSSLMODE": "disable"}
    script = f"""
CREATE TEMP TABLE pc (id int, name text);
\\copy pc FROM '{src}' WITH (FORMAT csv)
\\copy (SELECT * FROM pc ORDER BY id) TO '{dst}' WITH (FORMAT csv)
SELECT count(*) FROM pc;
"""
    p = subprocess.run([PSQL, "-X", "-tA", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(pgproxy.pg_port),
                        "-U", pg.user, "-d", "pgp"], input=script, capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "1000"
    assert dst.read_text() == src.read_text()
    s = pgproxy.stats()
    assert s["pg_copy_in"] >= 1 and s["pg_copy_out"] >= 1
    assert s["pg_queries_simple"] > 0 and s["pg_queries_extended"] > 0 and s["pg_logins_ok"] > 0
