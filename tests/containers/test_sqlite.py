"""SQL containers on SQLite, against a real sqlcached (--containers)."""
import sqlite3
import time

import pytest

from conftest import make_sqlite, start_fails, start_with

SEED_SCHEMA = """
CREATE TABLE demo_test (c1 TEXT PRIMARY KEY, c2 TEXT, c3 INTEGER, c4 INTEGER, c5 INTEGER);
CREATE TABLE new_demo (c1 TEXT NOT NULL, c2 TEXT, c3 INTEGER, c4 INTEGER, c5 INTEGER);
CREATE UNIQUE INDEX secondary_index_x ON new_demo (c1);
CREATE TABLE my_demo (c1 TEXT PRIMARY KEY, c2 TEXT, c3 INTEGER, c4 INTEGER, c5 INTEGER);
CREATE TABLE multi (id TEXT PRIMARY KEY, first TEXT, last TEXT, email TEXT);
CREATE TABLE cached (k TEXT PRIMARY KEY, v TEXT);
CREATE TABLE untouched (k TEXT PRIMARY KEY, v TEXT);
INSERT INTO demo_test VALUES ('AA', 'HELLO, HELLO', 8, 0, 0);
INSERT INTO my_demo VALUES ('key_a', 'value a', 0, 0, 0);
INSERT INTO my_demo VALUES ('key_b', 'value b', 0, 0, 0);
INSERT INTO untouched VALUES ('x', 'keep me');
"""


def config(db, delimiter=None, extra_opts="", policies=None):
    policies = policies or {}
    opts = f'table_map_delimiter = "{delimiter}"\n' if delimiter else ""
    return f"""
[backend]
kind = "sqlite"
path = "{db}"
plugin_tables = "off"

[options]
w_batch_size = 1
{opts}{extra_opts}

[[container]]
name = "setup_1"
table = "demo_test"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"
unique_index = "PRIMARY"
policy = "{policies.get('setup_1', 'innodb_only')}"

[[container]]
name = "setup_2"
table = "new_demo"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"
unique_index = "secondary_index_x"

[[container]]
name = "setup_3"
table = "my_demo"
key_column = "c1"
value_columns = "c2"
flags_column = "c3"
cas_column = "c4"
expire_column = "c5"

[[container]]
name = "people"
table = "multi"
key_column = "id"
value_columns = "first,last,email"

[[container]]
name = "cached"
table = "cached"
key_column = "k"
value_columns = "v"
cache_ttl = 2
policy = {{ get = "caching", set = "caching", delete = "caching", flush = "disabled" }}

[[container]]
name = "memonly"
table = "cached"
key_column = "k"
value_columns = "v"
policy = "cache_only"

[[container]]
name = "off"
table = "untouched"
key_column = "k"
value_columns = "v"
policy = "disabled"
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    d = tmp_path_factory.mktemp("sqlc")
    db = d / "c.db"
    make_sqlite(db, SEED_SCHEMA)
    cfg = d / "c.toml"
    cfg.write_text(config(db))
    with start_with(cfg) as s:
        yield s, db, d


def q(db, sql, *args):
    c = sqlite3.connect(db)
    try:
        rows = c.execute(sql, args).fetchall()
        c.commit()
        return rows
    finally:
        c.close()


def test_seed_walkthrough(env, client_of):
    s, db, _ = env
    c = client_of(s)
    # Plain keys: the in-memory engine, as memcached.
    assert c.store("set", "plain", "mem") == b"STORED"
    assert c.value("@@setup_1.AA") == b"HELLO, HELLO"
    got, _ = c.get("@@setup_1.AA")
    assert got["@@setup_1.AA"][0] == 8
    assert c.value("@@setup_3.key_a") == b"value a"
    assert c.value("plain") == b"mem"  # a mapped key does not bind in "memory" mode
    # get @@name switches the connection.
    assert c.cmd("get @@setup_3") == b"END"
    assert c.value("key_b") == b"value b"
    assert c.store("set", "key_c", "value c") == b"STORED"
    assert q(db, "SELECT c2 FROM my_demo WHERE c1='key_c'") == [("value c",)]
    assert c.value("plain") is None  # plain keys now go to my_demo
    # bind switches too.
    assert c.cmd("bind setup_1") == b"OK"
    assert c.value("AA") == b"HELLO, HELLO"
    assert c.cmd("bind nosuch") == b"CLIENT_ERROR unknown container 'nosuch'"
    assert c.cmd("get @@nosuch.k") == b"CLIENT_ERROR unknown container 'nosuch'"
    assert c.value("AA") == b"HELLO, HELLO"  # connection survives, still bound
    # other connections are unaffected
    c2 = client_of(s)
    assert c2.value("plain") == b"mem"


def test_set_visible_to_sql_and_sql_update_visible(env, client_of):
    s, db, _ = env
    c = client_of(s)
    assert c.store("set", "@@setup_2.k1", "v1", flags=5) == b"STORED"
    assert q(db, "SELECT c2, c3 FROM new_demo WHERE c1='k1'") == [("v1", 5)]
    q(db, "UPDATE new_demo SET c2='from sql' WHERE c1='k1'")
    assert c.value("@@setup_2.k1") == b"from sql"


def test_all_text_commands(env, client_of):
    s, db, _ = env
    c = client_of(s)
    k = "@@setup_2.cmd"
    assert c.store("add", k, "1") == b"STORED"
    assert c.store("add", k, "1") == b"NOT_STORED"
    assert c.store("replace", k, "10") == b"STORED"
    assert c.store("replace", "@@setup_2.none", "x") == b"NOT_STORED"
    assert c.cmd(f"incr {k} 5") == b"15"
    assert c.cmd(f"decr {k} 20") == b"0"
    assert c.cmd("incr @@setup_2.none 1") == b"NOT_FOUND"
    assert c.store("append", k, "1") == b"STORED"
    assert c.store("prepend", k, "9") == b"STORED"
    # As memcached: decr rewrote "15" as "0 " (padded in place), incr reads "90 1" as 90.
    assert c.value(k) == b"90 1"
    assert c.cmd(f"incr {k} 1") == b"91"
    got, _ = c.get(k, cmd="gets")
    cas = got[k][2]
    assert cas > 0
    assert c.store("cas", k, "new", extra=str(cas)) == b"STORED"
    assert c.store("cas", k, "newer", extra=str(cas)) == b"EXISTS"
    assert c.store("cas", "@@setup_2.none", "x", extra="1") == b"NOT_FOUND"
    assert c.cmd(f"touch {k} 100") == b"TOUCHED"
    assert c.cmd("touch @@setup_2.none 100") == b"NOT_FOUND"
    got, _ = c.get(k, cmd="gat 0")
    assert got[k][1] == b"new"
    assert c.cmd(f"incr {k} 1") == b"CLIENT_ERROR cannot increment or decrement non-numeric value"
    assert c.cmd(f"delete {k}") == b"DELETED"
    assert c.cmd(f"delete {k}") == b"NOT_FOUND"
    assert q(db, "SELECT count(*) FROM new_demo WHERE c1='cmd'") == [(0,)]
    # noreply: nothing comes back, the next command answers
    c.send(b"set @@setup_2.nr 0 0 1 noreply\r\nx\r\n")
    assert c.value("@@setup_2.nr") == b"x"


def test_multiget_order(env, client_of):
    s, _, _ = env
    c = client_of(s)
    assert c.store("set", "m1", "mem1") == b"STORED"
    assert c.store("set", "m2", "mem2") == b"STORED"
    got, order = c.get("m1", "@@setup_1.AA", "nokey", "@@setup_3.key_a", "m2", "@@setup_1.none")
    assert order == ["m1", "@@setup_1.AA", "@@setup_3.key_a", "m2"]
    assert got["@@setup_3.key_a"][1] == b"value a"


def test_pipelined_order(env, client_of):
    s, _, _ = env
    c = client_of(s)
    c.send(b"set p1 0 0 1\r\na\r\nset @@setup_2.p2 0 0 1\r\nb\r\nget p1\r\nget @@setup_2.p2\r\nversion\r\n")
    assert c.line() == b"STORED"
    assert c.line() == b"STORED"
    assert c.line().startswith(b"VALUE p1")
    assert c.line() == b"a"
    assert c.line() == b"END"
    assert c.line().startswith(b"VALUE @@setup_2.p2")
    assert c.line() == b"b"
    assert c.line() == b"END"
    assert c.line().startswith(b"VERSION")


def test_meta(env, client_of):
    s, _, _ = env
    c = client_of(s)
    c.send(b"ms @@setup_2.mk 2 F7 T0 c\r\nhi\r\n")
    assert c.line().startswith(b"HD c")
    c.send(b"mg @@setup_2.mk v f k Oabc s\r\n")
    assert c.line() == b"VA 2 f7 k@@setup_2.mk Oabc s2"
    assert c.line() == b"hi"
    assert c.cmd("mg @@setup_2.none v Oxy") == b"EN Oxy"
    c.send(b"mg @@setup_2.none v q\r\nmn\r\n")
    assert c.line() == b"MN"
    c.send(b"ms @@setup_2.mk 1 ME q\r\nx\r\nmn\r\n")
    assert c.line() == b"NS"
    assert c.line() == b"MN"


def test_meta_arith_delete(env, client_of):
    s, _, _ = env
    c = client_of(s)
    assert c.cmd("ma @@setup_2.ctr N0 J10 v") == b"VA 2"
    assert c.line() == b"10"
    assert c.cmd("ma @@setup_2.ctr D5") == b"HD"
    assert c.cmd("ma @@setup_2.ctr v") == b"VA 2"
    assert c.line() == b"16"
    assert c.cmd("md @@setup_2.ctr k") == b"HD k@@setup_2.ctr"
    assert c.cmd("md @@setup_2.ctr") == b"NF"


def test_multi_column_values(env, client_of):
    s, db, _ = env
    c = client_of(s)
    assert c.store("set", "@@people.1", "Ann|Lee|ann@example.org") == b"STORED"
    assert q(db, "SELECT first, last, email FROM multi WHERE id='1'") == [("Ann", "Lee", "ann@example.org")]
    q(db, "INSERT INTO multi VALUES ('2', 'Bob', NULL, 'bob@x')")
    assert c.value("@@people.2") == b"Bob||bob@x"
    r = c.store("set", "@@people.3", "a|b|c|d")
    assert r.startswith(b"CLIENT_ERROR"), r


def test_injection_inert(env, client_of):
    s, db, _ = env
    c = client_of(s)
    evil = ["x'", "x';DROP_TABLE_untouched;--", "'OR'1'='1", "a\"b", "%", "k;DELETE_FROM_untouched"]
    for k in evil:
        assert c.store("set", f"@@setup_2.{k}", "v'); DROP TABLE untouched; --") == b"STORED"
        assert c.value(f"@@setup_2.{k}") == b"v'); DROP TABLE untouched; --"
    assert c.cmd("delete @@setup_2.'OR'1'='1") == b"DELETED"
    assert q(db, "SELECT * FROM untouched") == [("x", "keep me")]
    assert q(db, "SELECT c2 FROM demo_test WHERE c1='AA'") == [("HELLO, HELLO",)]
    assert c.value("@@setup_2.%") == b"v'); DROP TABLE untouched; --"


def test_caching_policy(env, client_of):
    s, db, _ = env
    c = client_of(s)
    assert c.store("set", "@@cached.ck", "one") == b"STORED"
    assert q(db, "SELECT v FROM cached WHERE k='ck'") == [("one",)]
    assert c.value("@@cached.ck") == b"one"  # miss -> backend -> memory
    q(db, "UPDATE cached SET v='two' WHERE k='ck'")
    assert c.value("@@cached.ck") == b"one"  # served from memory
    time.sleep(3.1)  # cache_ttl = 2
    assert c.value("@@cached.ck") == b"two"
    assert c.cmd("delete @@cached.ck") == b"DELETED"
    assert c.value("@@cached.ck") is None
    assert c.cmd("bind cached") == b"OK"
    assert c.cmd("flush_all") == b"SERVER_ERROR operation disabled for container cached"


def test_cache_only_and_disabled(env, client_of):
    s, db, _ = env
    c = client_of(s)
    assert c.store("set", "@@memonly.mo", "mem") == b"STORED"
    assert c.value("@@memonly.mo") == b"mem"
    assert q(db, "SELECT count(*) FROM cached WHERE k='mo'") == [(0,)]
    assert c.value("mo") is None  # not the client key space
    assert c.cmd("get @@off.x") == b"SERVER_ERROR operation disabled for container off"
    assert c.store("set", "@@off.x", "y") == b"SERVER_ERROR operation disabled for container off"
    assert c.value("@@setup_1.AA") == b"HELLO, HELLO"


def test_flush_bound_and_plain(env, client_of):
    s, db, _ = env
    c = client_of(s)
    assert c.store("set", "fl", "mem") == b"STORED"
    assert c.cmd("bind memonly") == b"OK"
    assert c.store("set", "a", "b") == b"STORED"
    assert c.cmd("flush_all") == b"OK"
    assert c.value("a") is None
    c2 = client_of(s)
    assert c2.value("fl") == b"mem"  # bound flush did not touch memory
    assert c2.cmd("flush_all") == b"OK"
    assert c2.value("fl") is None


def test_delimiter_and_default_container(tmp_path, client_of):
    db = tmp_path / "d.db"
    make_sqlite(db, SEED_SCHEMA)
    cfg = tmp_path / "d.toml"
    cfg.write_text(config(db, delimiter=":", extra_opts='plain_keys = "default_container"\ndefault_container = "setup_3"'))
    with start_with(cfg) as s:
        c = client_of(s)
        assert c.value("key_a") == b"value a"  # starts bound to the default container
        assert c.value("@@setup_1:AA") == b"HELLO, HELLO"
        assert c.value("AA") == b"HELLO, HELLO"  # a mapped key binds in plugin mode
        assert c.cmd("get @@setup_1.AA") == b"CLIENT_ERROR unknown container 'setup_1.AA'"


def _bin_request(sock, opcode, key, extras=b"", val=b"", cas=0):
    """Send one binary request; returns (status, body) of its reply."""
    import struct
    hdr = struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0, len(extras) + len(key) + len(val), 9, cas)
    sock.sendall(hdr + extras + key + val)
    r = b""
    while len(r) < 24:
        r += sock.recv(100)
    blen = struct.unpack(">I", r[8:12])[0]
    while len(r) < 24 + blen:
        r += sock.recv(100)
    assert r[0] == 0x81
    return struct.unpack(">H", r[6:8])[0], r[24:24 + blen]


def _bin_set(sock, key, val, cas=0, flags=0):
    import struct
    return _bin_request(sock, 0x01, key, struct.pack(">II", flags, 0), val, cas)[0]


def test_binary_mapped_key(env):
    import socket
    import struct
    s, _, _ = env
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    key = b"@@setup_2.bin"
    assert _bin_set(sock, key, b"bval", flags=3) == 0
    status, body = _bin_request(sock, 0x00, key)
    assert status == 0
    assert body[:4] == struct.pack(">I", 3)
    assert body[4:] == b"bval"
    sock.close()


@pytest.mark.parametrize(
    "table,container,needle",
    [
        ("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT);", 'key_column = "k"\nvalue_columns = "nope"', ["bad1", "nope"]),
        ("CREATE TABLE t (k TEXT PRIMARY KEY, v REAL);", 'key_column = "k"\nvalue_columns = "v"', ["bad1", "v"]),
        ("CREATE TABLE t (k TEXT, v TEXT);", 'key_column = "k"\nvalue_columns = "v"', ["bad1", "k"]),
        ("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT, f REAL);", 'key_column = "k"\nvalue_columns = "v"\nflags_column = "f"', ["bad1", "f"]),
    ],
)
def test_bad_configs(tmp_path, table, container, needle):
    db = tmp_path / "b.db"
    make_sqlite(db, table)
    cfg = tmp_path / "b.toml"
    cfg.write_text(f"""
[backend]
kind = "sqlite"
path = "{db}"
plugin_tables = "off"

[[container]]
name = "bad1"
table = "t"
{container}
""")
    code, err = start_fails(cfg)
    assert code != 0
    for n in needle:
        assert n in err, err


def test_container_and_memory_keys_agree_on_cas_off_and_item_size(tmp_path, client_of):
    """One store-mode mapping and one size check for both paths: with -C a binary set's CAS
    is ignored on a container key as on a memory key, and -I refuses the same sizes (key
    length and flags counted) on both."""
    import socket
    db = tmp_path / "m.db"
    make_sqlite(db, SEED_SCHEMA)
    cfg = tmp_path / "m.toml"
    cfg.write_text(config(db))
    with start_with(cfg, "-C", "-I", "1k") as s:
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        for key in (b"plainkey12345", b"@@memonly.cas"):
            assert _bin_set(sock, key, b"v", 0) == 0
            assert _bin_set(sock, key, b"w", 12345) == 0, key  # CAS ignored with -C
        sock.close()
        c = client_of(s)
        mem, cont = "m" * len("@@memonly.sz"), "@@memonly.sz"
        for n in range(900, 1030, 4):
            got = [c.store("set", k, "x" * n, flags=4000000000) for k in (mem, cont)]
            assert got[0] == got[1], (n, got)


def test_container_metrics_by_container_outcome_and_op(tmp_path, client_of):
    """/metrics: keys by container and outcome, operations by kind, latency histograms by
    container and kind (issue 15 item 1)."""
    import urllib.request
    from harness.servers import free_port
    db = tmp_path / "m.db"
    make_sqlite(db, SEED_SCHEMA)
    toml = tmp_path / "c.toml"
    toml.write_text(config(db))
    mport = free_port()
    with start_with(toml, "--metrics-listen", f"127.0.0.1:{mport}") as s:
        c = client_of(s)
        assert c.value("@@setup_3.key_a") == b"value a"
        assert c.value("@@setup_3.nope") is None
        assert c.store("set", "@@setup_3.key_c", "v") == b"STORED"
        assert c.cmd("delete @@setup_3.key_c") == b"DELETED"
        with urllib.request.urlopen(f"http://127.0.0.1:{mport}/metrics", timeout=10) as r:
            body = r.read().decode()
    lines = body.splitlines()

    def value(prefix, *needles):
        hits = [ln for ln in lines if ln.startswith(prefix) and all(n in ln for n in needles)]
        assert hits, f"no {prefix} {needles}:\n" + "\n".join(ln for ln in lines if "container" in ln)
        return float(hits[0].rsplit(" ", 1)[1])

    assert value("sqlcached_container_keys_total{", 'container="setup_3"', 'outcome="hit"') == 1
    assert value("sqlcached_container_keys_total{", 'container="setup_3"', 'outcome="miss"') == 1
    assert value("sqlcached_container_operations_total{", 'container="setup_3"', 'op="write"') == 1
    assert value("sqlcached_container_operations_total{", 'container="setup_3"', 'op="delete"') == 1
    assert value("sqlcached_container_operation_duration_seconds_count{", 'container="setup_3"', 'op="get"') == 2
    assert value("sqlcached_container_operation_duration_seconds_count{", 'container="setup_3"', 'op="write"') == 1
    assert value("sqlcached_container_operation_duration_seconds_bucket{", 'le="+Inf"', 'container="setup_3"',
                 'op="delete"') == 1


def _stats(c):
    c.send(b"stats\r\n")
    out = {}
    while (line := c.line()) != b"END":
        _, k, v = line.decode().split(" ", 2)
        out[k] = v
    return out


@pytest.mark.parametrize("inline", [True, False])
def test_concurrent_writers_and_inline_reads(tmp_path, client_of, inline):
    """16 clients set and read back their own keys at once: every acknowledged set is in
    the table (group commit answers after COMMIT) and every get sees it; with
    inline_reads (the default) the gets are read on the worker's own connection."""
    import threading
    db = tmp_path / "g.db"
    make_sqlite(db, SEED_SCHEMA)
    toml = tmp_path / "c.toml"
    text = config(db)
    if not inline:
        text = text.replace('plugin_tables = "off"', 'plugin_tables = "off"\ninline_reads = false')
    toml.write_text(text)
    errors = []
    with start_with(toml) as s:
        def worker(t):
            c = client_of(s)
            try:
                for i in range(40):
                    k, v = f"@@setup_3.w{t}_{i}", f"v{t}.{i}"
                    assert c.store("set", k, v) == b"STORED"
                    assert c.value(k) == v.encode(), k
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert not errors, errors[:3]
        st = _stats(client_of(s))
    assert q(db, "SELECT count(*) FROM my_demo WHERE c1 LIKE 'w%'") == [(640,)]
    assert int(st["container_setup_3_get_hits"]) == 640
    assert int(st["containers_backend_errors"]) == 0
    if inline:
        # Every get inline, but for one that found the database busy (WAL readers hardly
        # ever are; such a read goes to the reader threads and is not counted).
        assert int(st["containers_backend_reads_inline"]) >= 600, st
    else:
        assert int(st["containers_backend_reads_inline"]) == 0, st
