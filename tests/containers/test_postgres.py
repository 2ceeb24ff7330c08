"""SQL containers on PostgreSQL 15 (scripts/postgres.sh via tests/harness/postgres.py): the
core memcached commands, typed columns, bad mappings, the `caching` policy (following the WAL
through logical replication when the role may replicate; degraded to reading the table, and
said at start, when it may not), batched writes (read-your-writes,
a lost batch reported and not replayed), a backend restart under load, the backend down at
start. The module runs its own server (one test restarts it)."""
import os
import signal
import time
from pathlib import Path

import pytest

from conftest import restart_during_load, start_fails, start_with, wait_value
from harness.postgres import BIN, PostgreSQL, start_postgres
from harness.servers import freeze, rss_mib

pytestmark = pytest.mark.skipif(not (BIN / "postgres").exists(), reason="PostgreSQL 15 is not installed")

SCHEMA = """
CREATE TABLE demo_test (c1 VARCHAR(64) PRIMARY KEY, c2 VARCHAR(1024), c3 INT, c4 BIGINT, c5 INT);
CREATE TABLE untouched (k VARCHAR(32) PRIMARY KEY, v VARCHAR(32));
CREATE TABLE typed (id BIGINT PRIMARY KEY, n NUMERIC(10,2), t TEXT, ok BOOL, ts TIMESTAMPTZ, u UUID,
  j JSONB, s INT2);
CREATE TABLE bin (k TEXT PRIMARY KEY, v BYTEA);
CREATE TABLE multi (id TEXT PRIMARY KEY, first TEXT, last TEXT, email TEXT);
CREATE TABLE cached (k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE batched (k TEXT PRIMARY KEY, v TEXT);
INSERT INTO demo_test VALUES ('AA', 'HELLO, HELLO', 8, 0, 0);
INSERT INTO untouched VALUES ('x', 'keep me');
INSERT INTO cached VALUES ('c1', 'first');
GRANT ALL ON ALL TABLES IN SCHEMA public TO sqlcached_app;
"""

BACKEND = """
[backend]
kind = "postgres"
url = "{url}"
pool_size = {pool}
connect_timeout_ms = 1000
query_timeout_ms = 2000
plugin_tables = "off"
"""

CONTAINERS = """
[[container]]
name = "setup_1"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"
unique_index = "PRIMARY"

[[container]]
name = "typed"
table = "typed"
key_column = "id"
value_columns = ["n", "t", "ok", "ts", "u", "j", "s"]

[[container]]
name = "bin"
table = "bin"
key_column = "k"
value_columns = "v"

[[container]]
name = "multi"
table = "multi"
key_column = "id"
value_columns = "first,last,email"

[[container]]
name = "mem"
table = "untouched"
key_column = "k"
value_columns = "v"
policy = "cache_only"

[[container]]
name = "off"
table = "untouched"
key_column = "k"
value_columns = "v"
policy = { get = "innodb_only", set = "disabled", delete = "disabled", flush = "disabled" }

[[container]]
name = "cached"
table = "cached"
key_column = "k"
value_columns = "v"
policy = "caching"
cache_ttl = 3600
"""


def config(path, pg, pool=4, options="", containers=CONTAINERS, db="ct", user=None, **url_params):
    params = {"sslmode": "verify-full", "sslrootcert": pg.ca, **url_params}
    url = pg.url(db, user=user or pg.app_user, **{k: v for k, v in params.items() if v is not None})
    path.write_text(BACKEND.format(url=url, pool=pool) + options + containers)
    return path


def psql(pg, sql):
    return pg.sql(sql, database="ct").strip()


@pytest.fixture(scope="module")
def pgs(tmp_path_factory):
    with start_postgres() as pg:
        pg.sql("CREATE DATABASE ct")
        psql(pg, SCHEMA)
        d = tmp_path_factory.mktemp("pg")
        log = d / "sqlcached.log"
        with start_with(config(d / "p.toml", pg), log=str(log)) as s:
            yield pg, s, log


def test_core(pgs, client_of):
    pg, s, _ = pgs
    c = client_of(s)
    assert c.value("@@setup_1.AA") == b"HELLO, HELLO"
    assert c.store("set", "@@setup_1.k1", "v1", flags=3) == b"STORED"
    assert psql(pg, "SELECT c2, c3 FROM demo_test WHERE c1='k1'") == "v1|3"
    psql(pg, "UPDATE demo_test SET c2='from sql' WHERE c1='k1'")
    assert c.value("@@setup_1.k1") == b"from sql"
    assert c.cmd("bind setup_1") == b"OK"
    assert c.store("add", "k1", "x") == b"NOT_STORED"
    assert c.store("add", "k2", "two", flags=7) == b"STORED"
    assert c.get("k2")[0]["k2"][:2] == (7, b"two")
    assert c.store("replace", "k2", "2") == b"STORED"
    assert c.store("replace", "nope", "x") == b"NOT_STORED"
    assert c.store("append", "k2", "3") == b"STORED"
    assert c.store("prepend", "k2", "1") == b"STORED"
    assert c.value("k2") == b"123"
    got, _ = c.get("k2", cmd="gets")
    cas = got["k2"][2]
    assert cas != 0
    assert c.store("cas", "k2", "x", extra=str(cas + 1)) == b"EXISTS"
    assert c.store("cas", "k2", "124", extra=str(cas)) == b"STORED"
    assert c.cmd("incr k2 1") == b"125"
    assert c.cmd("decr k2 200") == b"0"
    assert c.cmd("incr nope 1") == b"NOT_FOUND"
    assert c.cmd("delete k2") == b"DELETED"
    assert c.cmd("delete k2") == b"NOT_FOUND"
    # Expiry: stored as absolute unix time; a past one reads as absent and is removed.
    assert c.store("set", "e1", "soon", exptime=100) == b"STORED"
    assert int(psql(pg, "SELECT c5 FROM demo_test WHERE c1='e1'")) > time.time()
    assert c.cmd("touch e1 -1") == b"TOUCHED"
    assert c.value("e1") is None
    deadline = time.monotonic() + 5  # the read removes the expired row afterwards
    while psql(pg, "SELECT count(*) FROM demo_test WHERE c1='e1'") != "0" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert psql(pg, "SELECT count(*) FROM demo_test WHERE c1='e1'") == "0"
    assert c.cmd("touch e1 10") == b"NOT_FOUND"
    # Multi-key gets (IN-lists), in order, with misses.
    for i in range(5):
        assert c.store("set", f"m{i}", f"v{i}") == b"STORED"
    got, order = c.get("m3", "zz", "m0", "m4", "m1")
    assert order == ["m3", "m0", "m4", "m1"] and got["m4"][1] == b"v4"
    # Quoting: keys and values are parameters.
    for k in ["x'", "'OR'1'='1", "a;DROP_TABLE_untouched"]:
        assert c.store("set", k, "v'); DROP TABLE untouched; --") == b"STORED"
        assert c.value(k) == b"v'); DROP TABLE untouched; --"
    assert psql(pg, "SELECT k, v FROM untouched") == "x|keep me"


def test_concurrent_sets_and_gets_grouped(pgs, client_of):
    """Many connections at once: plain sets queued on a writer lane are written by one
    autocommitted upsert, gets queued on a reader lane by one SELECT (lane.rs set_group,
    read_group). Every set is in the table and reads back; one key set from every
    connection ends as one of the values, the same in the table and through memcached."""
    import threading

    pg, s, _ = pgs
    clients = [client_of(s) for _ in range(24)]
    errors = []

    def work(n, c):
        try:
            for i in range(40):
                assert c.store("set", f"@@setup_1.g{n}-{i}", f"v{n}-{i}", flags=n) == b"STORED"
                assert c.store("set", "@@setup_1.shared", f"s{n}-{i}") == b"STORED"
            for i in range(40):
                assert c.value(f"@@setup_1.g{n}-{i}") == f"v{n}-{i}".encode()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(f"{n}: {e!r}")

    threads = [threading.Thread(target=work, args=(n, c)) for n, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors[:5]
    assert psql(pg, "SELECT count(*) FROM demo_test WHERE c1 LIKE 'g%-%'") == str(24 * 40)
    assert psql(pg, "SELECT c2, c3 FROM demo_test WHERE c1 = 'g7-39'") == "v7-39|7"
    shared = psql(pg, "SELECT c2 FROM demo_test WHERE c1 = 'shared'")
    assert shared.startswith("s") and clients[0].value("@@setup_1.shared") == shared.encode()


def test_multi_column_values(pgs, client_of):
    pg, s, _ = pgs
    c = client_of(s)
    assert c.store("set", "@@multi.u1", "Ada|Lovelace|ada@example.org") == b"STORED"
    assert psql(pg, "SELECT first, last, email FROM multi WHERE id='u1'") == "Ada|Lovelace|ada@example.org"
    assert c.value("@@multi.u1") == b"Ada|Lovelace|ada@example.org"
    assert c.store("set", "@@multi.u2", "Bob") == b"STORED"
    assert psql(pg, "SELECT first, last IS NULL FROM multi WHERE id='u2'") == "Bob|t"
    assert c.store("set", "@@multi.u3", "a|b|c|d").startswith(b"CLIENT_ERROR")


def test_typed_columns_round_trip(pgs, client_of):
    pg, s, _ = pgs
    c = client_of(s)
    value = '1.50|héllo|true|2024-01-02 03:04:05+00|A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11|{"b": 2, "a": 1}|-7'
    assert c.store("set", "@@typed.42", value) == b"STORED"
    # Read back as PostgreSQL writes each type as text (what psql shows too).
    want = psql(pg, "SELECT concat_ws('|', n::text, t, ok::text, ts::text, u::text, j::text, s::text) FROM typed WHERE id = 42")
    assert c.value("@@typed.42").decode() == want
    assert want.startswith("1.50|héllo|true|") and "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11" in want
    assert c.value("@@typed.042") == c.value("@@typed.42"), "integer keys compare as numbers"
    assert c.value("@@typed.abc") is None
    got, _ = c.get("@@typed.42", "@@typed.43", "@@typed.042")
    assert set(got) == {"@@typed.42", "@@typed.042"}
    # A value the type refuses is the backend's error; the connection goes on.
    r = c.store("set", "@@typed.43", "not a number|x")
    assert r.startswith(b"SERVER_ERROR") and b"numeric" in r, r
    assert c.value("@@typed.43") is None
    assert c.store("set", "@@typed.43", "2|x") == b"STORED"
    # bytea: any bytes, as they are.
    raw = bytes(range(256))
    assert c.store("set", "@@bin.b", raw) == b"STORED"
    assert c.value("@@bin.b") == raw
    assert psql(pg, "SELECT length(v) FROM bin WHERE k='b'") == "256"


@pytest.mark.parametrize(
    "ddl,container,needle",
    [
        ("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT)", 'key_column = "k"\nvalue_columns = "nope"', ["bad1", "'nope'"]),
        ("CREATE TABLE t (k TEXT PRIMARY KEY, v POINT)", 'key_column = "k"\nvalue_columns = "v"', ["bad1", "'v'", "point"]),
        ("CREATE TABLE t (k TEXT, v TEXT)", 'key_column = "k"\nvalue_columns = "v"', ["bad1", "'k'", "unique"]),
        ("CREATE TABLE t (k TEXT, v TEXT); CREATE UNIQUE INDEX t_k ON t (k) WHERE k <> ''",
         'key_column = "k"\nvalue_columns = "v"', ["bad1", "'k'", "unique"]),
        ("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT, f TEXT)",
         'key_column = "k"\nvalue_columns = "v"\nflags_column = "f"', ["bad1", "flags column 'f'", "integer"]),
        ("CREATE VIEW t AS SELECT 'a'::text AS k, 'b'::text AS v", 'key_column = "k"\nvalue_columns = "v"',
         ["bad1", "view"]),
        ("SELECT 1", 'key_column = "k"\nvalue_columns = "v"', ["bad1", "does not exist"]),
        ("SELECT 1", 'key_column = "k"\nvalue_columns = "v"', ["bad1", "schema 'nope'"]),
    ],
)
def test_bad_mappings(pgs, tmp_path, ddl, container, needle):
    pg, _, _ = pgs
    psql(pg, "DROP SCHEMA IF EXISTS bad CASCADE; CREATE SCHEMA bad; SET search_path = bad; " + ddl)
    schema = "nope" if "schema 'nope'" in needle else "bad"
    cfg = config(tmp_path / "b.toml", pg,
                 containers=f'[[container]]\nname = "bad1"\nschema = "{schema}"\ntable = "t"\n{container}\n')
    code, err = start_fails(cfg)
    assert code != 0
    for n in needle:
        assert n in err, err


def test_cache_only_and_disabled_policies(pgs, client_of):
    pg, s, _ = pgs
    c = client_of(s)
    assert c.store("set", "@@mem.x", "memory only") == b"STORED"
    assert c.value("@@mem.x") == b"memory only"
    assert c.value("@@off.x") == b"keep me", "the table was not written"
    r = c.store("set", "@@off.x", "no")
    assert r.startswith(b"SERVER_ERROR operation disabled for container off"), r
    assert c.cmd("delete @@off.x").startswith(b"SERVER_ERROR operation disabled")
    assert psql(pg, "SELECT v FROM untouched WHERE k='x'") == "keep me"


@pytest.mark.parametrize("sslmode", ["disable", "prefer", "require", "verify-ca", "verify-full"])
def test_sslmodes(pgs, tmp_path, client_of, sslmode):
    pg, _, _ = pgs
    root = None if sslmode in ("disable", "prefer") else pg.ca
    cfg = config(tmp_path / "t.toml", pg, pool=2, sslmode=sslmode, sslrootcert=root)
    with start_with(cfg) as s:
        c = client_of(s)
        assert c.value("@@setup_1.AA") == b"HELLO, HELLO"
        ssl = psql(pg, "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
                       "WHERE a.application_name = 'sqlcached-containers' AND a.usename = 'sqlcached_app'")
        assert ssl == ("f" if sslmode == "disable" else "t"), (sslmode, ssl)


def test_caching_without_replication_rights_is_degraded_and_reads_the_table(pgs, client_of):
    pg, s, log = pgs
    text = Path(log).read_text()
    # The app role has no REPLICATION: said at start with the fix, and gets read the table.
    assert "containers: DEGRADED" in text and "ALTER ROLE sqlcached_app REPLICATION" in text, text
    c = client_of(s)
    assert c.value("@@cached.c1") == b"first"
    psql(pg, "UPDATE cached SET v = 'direct' WHERE k = 'c1'")
    assert c.value("@@cached.c1") == b"direct", "a memory copy served while the WAL cannot be followed"
    # Writes go to the table (write-through) and the next get sees them.
    assert c.store("set", "@@cached.c1", "second") == b"STORED"
    assert psql(pg, "SELECT v FROM cached WHERE k='c1'") == "second"
    assert c.value("@@cached.c1") == b"second"
    assert c.cmd("delete @@cached.c1") == b"DELETED"
    assert c.value("@@cached.c1") is None
    psql(pg, "INSERT INTO cached VALUES ('c1', 'first') ON CONFLICT (k) DO UPDATE SET v = 'first'")


def test_caching_follows_the_wal(pgs, tmp_path, client_of):
    """With a role that may replicate, a direct SQL change drops the memory copy at once
    (cache_ttl is an hour), through the slot sqlcached_containers."""
    pg, _, _ = pgs
    cfg = config(tmp_path / "w.toml", pg, user=pg.user)
    log = tmp_path / "w.log"
    with start_with(cfg, log=str(log)) as s:
        c = client_of(s)
        deadline = time.monotonic() + 20
        while "caching containers follow the WAL" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        psql(pg, "INSERT INTO cached VALUES ('w1', 'one') ON CONFLICT (k) DO UPDATE SET v = 'one'")
        assert c.value("@@cached.w1") == b"one"
        for i in range(3):
            t0 = time.monotonic()
            psql(pg, f"UPDATE cached SET v = 'v{i}' WHERE k = 'w1'")
            while c.value("@@cached.w1") != f"v{i}".encode():
                assert time.monotonic() - t0 < 2, "the WAL did not drop the copy"
                time.sleep(0.005)
        psql(pg, "DELETE FROM cached WHERE k = 'w1'")
        t0 = time.monotonic()
        while c.value("@@cached.w1") is not None:
            assert time.monotonic() - t0 < 2
            time.sleep(0.005)
        # Write-through, as on MariaDB: a set's own WAL row (its after image reads back the
        # bytes it stored) puts the row in memory, so the read after it is a hit.
        def stat(name):
            c.send(b"stats\r\n")
            n = 0
            while (line := c.line()) != b"END":
                _, k, v = line.decode().split(" ", 2)
                n = int(v) if k == name else n
            return n

        def written_through():
            return stat("container_cached_written_through")

        before = written_through()
        assert c.store("set", "@@cached.w2", "mine") == b"STORED"
        t0 = time.monotonic()
        while written_through() == before:
            assert time.monotonic() - t0 < 5, "the write's WAL row did not fill the copy"
            time.sleep(0.02)
        # Answered from memory: a change the WAL does not carry to this slot's publication
        # cannot be made on a published table, so the proof is the hit counter.
        h0 = stat("container_cached_get_hits")
        assert c.value("@@cached.w2") == b"mine"
        assert stat("container_cached_get_hits") == h0 + 1
        psql(pg, "UPDATE cached SET v = 'direct' WHERE k = 'w2'")
        t0 = time.monotonic()
        while c.value("@@cached.w2") != b"direct":
            assert time.monotonic() - t0 < 2, "a direct change did not drop the written-through copy"
            time.sleep(0.005)
    psql(pg, "SELECT pg_drop_replication_slot('sqlcached_containers'); DROP PUBLICATION sqlcached_containers")


def test_batched_writes_read_your_writes_and_a_lost_batch(pgs, tmp_path, client_of):
    pg, _, _ = pgs
    opts = "writers = 1\n\n[options]\nw_batch_size = 10\nbk_commit_interval = 60\n"
    containers = '[[container]]\nname = "b"\ntable = "batched"\nkey_column = "k"\nvalue_columns = "v"\n'
    cfg = config(tmp_path / "b.toml", pg, pool=2, options=opts, containers=containers)
    with start_with(cfg) as s:
        c = client_of(s)
        for k in ["l1", "l2", "l3"]:
            assert c.store("set", f"@@b.{k}", "acked") == b"STORED"
        assert c.value("@@b.l2") == b"acked", "read-your-writes on the dirty writer"
        assert psql(pg, "SELECT count(*) FROM batched") == "0", "not committed yet"
        # A refused write inside the batch fails alone (a savepoint keeps the batch).
        assert c.store("set", "@@b.bad", b"\xff\xfe").startswith(b"SERVER_ERROR")
        assert c.value("@@b.l1") == b"acked"
        psql(pg, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                 "WHERE application_name = 'sqlcached-containers' AND datname = 'ct'")
        time.sleep(0.3)
        r = c.store("set", "@@b.l4", "x")
        assert r.startswith(b"SERVER_ERROR") and b"lost" in r, r
        assert b"3 acknowledged" in r, r
        stats = {}
        c.send(b"stats\r\n")
        while (line := c.line()) != b"END":
            _, k, v = line.decode().split(" ", 2)
            stats[k] = v
        assert stats["containers_backend_lost_writes"] == "3", stats
        assert psql(pg, "SELECT count(*) FROM batched") == "0", "the lost batch is not replayed"
        assert c.store("set", "@@b.l5", "x") == b"STORED"
        # flush_all on a bound connection commits every lane, then TRUNCATEs the table.
        assert c.cmd("bind b") == b"OK"
        assert c.cmd("flush_all") == b"OK"
        assert psql(pg, "SELECT count(*) FROM batched") == "0"
        assert c.store("set", "l6", "y") == b"STORED"
    # Dropping the server commits the open batch.
    assert psql(pg, "SELECT k FROM batched") == "l6"


PLUGIN = """
DROP SCHEMA IF EXISTS innodb_memcache CASCADE;
CREATE SCHEMA innodb_memcache;
CREATE TABLE innodb_memcache.containers (name VARCHAR(50) PRIMARY KEY, db_schema VARCHAR(250),
  db_table VARCHAR(250), key_columns VARCHAR(250), value_columns VARCHAR(250), flags VARCHAR(250),
  cas_column VARCHAR(250), expire_time_column VARCHAR(250), unique_idx_name_on_key VARCHAR(250));
CREATE TABLE innodb_memcache.cache_policies (policy_name VARCHAR(40) PRIMARY KEY, get_policy TEXT,
  set_policy TEXT, delete_policy TEXT, flush_policy TEXT);
CREATE TABLE innodb_memcache.config_options (name VARCHAR(50) PRIMARY KEY, value VARCHAR(50));
INSERT INTO innodb_memcache.containers VALUES
  ('aaa', 'public', 'demo_test', 'c1', 'c2', 'c3', 'c4', 'c5', 'PRIMARY'),
  ('ppl', NULL, 'multi', 'id', 'first,last,email', '0', NULL, '', 'multi_pkey');
INSERT INTO innodb_memcache.cache_policies VALUES
  ('cache_policy', 'innodb_only', 'innodb_only', 'innodb_only', 'disabled');
INSERT INTO innodb_memcache.config_options VALUES ('separator', ';'), ('table_map_delimiter', '.');
GRANT USAGE ON SCHEMA innodb_memcache TO sqlcached_app;
GRANT SELECT ON ALL TABLES IN SCHEMA innodb_memcache TO sqlcached_app;
"""


def test_plugin_tables(pgs, tmp_path, client_of):
    """The plugin's innodb_memcache tables, read from the schema of that name."""
    pg, _, _ = pgs
    psql(pg, PLUGIN)
    try:
        cfg = config(tmp_path / "p.toml", pg, containers="")
        cfg.write_text(cfg.read_text().replace('plugin_tables = "off"', 'plugin_tables = "required"'))
        with start_with(cfg) as s:
            c = client_of(s)
            assert c.value("@@aaa.AA") == b"HELLO, HELLO"
            assert c.store("set", "@@ppl.p1", "Ann;Lee;ann@example.org") == b"STORED"
            assert psql(pg, "SELECT last FROM multi WHERE id='p1'") == "Lee"
            assert c.value("@@ppl.p1") == b"Ann;Lee;ann@example.org"
    finally:
        psql(pg, "DROP SCHEMA innodb_memcache CASCADE")


def test_backend_name_not_resolved(tmp_path, client_of):
    cfg = tmp_path / "c.toml"
    cfg.write_text(BACKEND.format(url="postgres://u:p@no-such-host.invalid:5432/x?sslmode=disable", pool=2)
                   + '[[container]]\nname = "kv"\ntable = "kv"\nkey_column = "k"\nvalue_columns = "v"\n')
    with start_with(cfg) as s:
        c = client_of(s)
        r = c.cmd("get @@kv.AA")
        assert r.startswith(b"SERVER_ERROR containers unavailable") and b"cannot connect" in r, r
        assert c.store("set", "plain", "p") == b"STORED"
        time.sleep(2.5)  # retries fail the same way; the server stays up
        assert c.cmd("get @@kv.AA").startswith(b"SERVER_ERROR containers unavailable")
        assert s.proc.poll() is None


def cluster_pids(pg):
    """The postmaster and its children (the sessions, the background workers)."""
    root = pg.pid()
    pids = [root]
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == root:
                        pids.append(int(d))
            except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
                pass
    return pids


def test_hung_backend_times_out_and_recovers(pgs, tmp_path, client_of):
    pg, _, _ = pgs
    cfg = config(tmp_path / "h.toml", pg, pool=2, sslmode="disable", sslrootcert=None)
    with start_with(cfg) as s:
        c = client_of(s)
        assert c.value("@@setup_1.AA") == b"HELLO, HELLO"
        rss0 = rss_mib(s.proc.pid)
        pids = cluster_pids(pg)
        try:
            for p in pids:
                freeze(p)
            for cmd in ["get @@setup_1.AA", "set @@setup_1.hung 0 0 1\r\nx", "delete @@setup_1.AA"]:
                t0 = time.monotonic()
                r = c.cmd(cmd)
                took = time.monotonic() - t0
                assert r.startswith(b"SERVER_ERROR backend unavailable"), (cmd, r)
                assert took < 5, f"{cmd}: {took:.1f} s (query_timeout_ms 2000, connect_timeout_ms 1000)"
            other = client_of(s)
            assert other.store("set", "plain", "p") == b"STORED"
            many = [client_of(s) for _ in range(20)]
            for m in many:
                m.send(b"get @@setup_1.AA\r\n")
            for m in many:
                assert m.line().startswith(b"SERVER_ERROR"), "every waiting client gets its error"
            assert rss_mib(s.proc.pid) < rss0 + 32
        finally:
            for p in pids:
                os.kill(p, signal.SIGCONT)
        wait_value(c, "@@setup_1.AA", b"HELLO, HELLO")
        assert c.store("set", "@@setup_1.after", "y") == b"STORED"
        assert psql(pg, "SELECT c2 FROM demo_test WHERE c1='after'") == "y"
        assert psql(pg, "SELECT count(*) FROM demo_test WHERE c1='hung'") == "0", \
            "a write answered SERVER_ERROR must not have been applied"


def test_backend_restart_during_load(pgs, client_of):
    pg, s, _ = pgs
    restart_during_load(s, client_of, pg.stop, pg.start,
                        lambda: psql(pg, "SELECT c1 FROM demo_test WHERE c1 LIKE 'load%'").split())


def test_backend_down_at_start_then_up(tmp_path, client_of):
    pg = PostgreSQL()
    log = tmp_path / "sqlcached.log"
    try:
        containers = '[[container]]\nname = "kv"\ntable = "kv"\nkey_column = "k"\nvalue_columns = "v"\n'
        cfg = config(tmp_path / "c.toml", pg, containers=containers, db="postgres", user=pg.user, sslmode="disable",
                     sslrootcert=None)
        with start_with(cfg, log=str(log)) as s:
            c = client_of(s)
            r = c.cmd("get @@kv.AA")
            assert r.startswith(
                b"SERVER_ERROR containers unavailable: backend unavailable: PostgreSQL: cannot connect"), r
            assert c.store("set", "@@kv.new", "x").startswith(b"SERVER_ERROR containers unavailable")
            assert c.store("set", "plain", "p") == b"STORED"
            assert "starting without them" in log.read_text()
            pg.start()
            pg.sql("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT); INSERT INTO kv VALUES ('AA', 'HELLO');")
            wait_value(c, "@@kv.AA", b"HELLO")
            assert c.store("set", "@@kv.new", "x") == b"STORED"
            assert pg.sql("SELECT v FROM kv WHERE k='new'").strip() == "x"
            assert s.proc.poll() is None
    finally:
        pg.close()


def test_pool_of_one_and_plain_tls_modes(pgs, tmp_path, client_of):
    """sslmode=require (TLS, no check), a pool of one connection (one writer, one reader)
    and read batches (r_batch_size > 1: read-only transactions on the reader)."""
    pg, _, _ = pgs
    cfg = config(tmp_path / "r.toml", pg, pool=1, sslmode="require", options="\n[options]\nr_batch_size = 3\n")
    with start_with(cfg) as s:
        c = client_of(s)
        for _ in range(7):
            assert c.value("@@setup_1.AA") == b"HELLO, HELLO"
        assert c.value("@@typed.abc") is None
        psql(pg, "UPDATE demo_test SET c2 = 'changed' WHERE c1 = 'AA'")
        assert c.value("@@setup_1.AA") == b"changed", "READ COMMITTED: every read sees the latest commits"
        psql(pg, "UPDATE demo_test SET c2 = 'HELLO, HELLO' WHERE c1 = 'AA'")
        assert c.value("@@setup_1.AA") == b"HELLO, HELLO"
        assert c.store("set", "@@setup_1.tls", "y") == b"STORED"
    assert psql(pg, "SELECT c2 FROM demo_test WHERE c1='tls'") == "y"
    assert os.path.exists(pg.ca)
