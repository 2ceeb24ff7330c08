"""The unchanged pure-Python client pymemcache (text protocol) against sqlcached.

Every test runs against the real memcached 1.6.18 too (ids `[memcached]`), which proves the
expectations are memcached's behaviour, not the client's or ours.
Install: pip install -r tests/requirements.txt (pymemcache==4.0.0)."""
import pytest

pymemcache = pytest.importorskip("pymemcache", reason="pip install -r tests/requirements.txt")
from pymemcache.client.base import Client, PooledClient  # noqa: E402
from pymemcache.client.hash import HashClient  # noqa: E402
from pymemcache.exceptions import (MemcacheClientError, MemcacheIllegalInputError,  # noqa: E402
                                   MemcacheServerError)

from harness.servers import start_memcached, start_sqlcached  # noqa: E402

# The largest value memcached 1.6.18 accepts with -I 1m for a 1-byte key and flags 0:
# 1 MiB - 48 (item header) - 8 (CAS) - 2 (key + NUL) - 2 (\r\n).
MAX_VALUE_1_BYTE_KEY = 1048516


@pytest.fixture(scope="module", params=["memcached", "sqlcached"])
def server(request):
    start = start_memcached if request.param == "memcached" else start_sqlcached
    with start() as s:
        yield s


@pytest.fixture
def client(server):
    c = Client((server.host, server.port), connect_timeout=5, timeout=10,
               default_noreply=False)
    c.flush_all()
    yield c
    c.close()


def test_set_get_delete(client):
    assert client.set("k", b"v1") is True
    assert client.get("k") == b"v1"
    assert client.get("missing") is None
    assert client.get("missing", default=b"dflt") == b"dflt"
    assert client.set("k", b"v2", expire=100) is True
    assert client.get("k") == b"v2"
    assert client.delete("k") is True
    assert client.delete("k") is False
    assert client.get("k") is None


def test_flags_round_trip(client):
    assert client.set("f", b"x", flags=123456) is True
    assert client.raw_command(b"get f", b"END\r\n") == b"VALUE f 123456 1\r\nx\r\n"
    value, cas = client.gets("f")
    assert value == b"x" and int(cas) > 0


def test_get_many_and_set_many(client):
    assert client.set_many({"a": b"1", "b": b"2", "c": b"3"}) == []
    assert client.get_many(["a", "b", "c", "nope"]) == {"a": b"1", "b": b"2", "c": b"3"}
    assert client.get_many([]) == {}
    many = {f"key:{i}": str(i).encode() * (i % 7 + 1) for i in range(300)}
    assert client.set_many(many) == []
    assert client.get_many(list(many)) == many
    assert client.delete_many(["a", "b", "zz"]) is True
    assert client.get_many(["a", "b", "c"]) == {"c": b"3"}


def test_add_replace(client):
    assert client.add("a", b"1") is True
    assert client.add("a", b"2") is False
    assert client.get("a") == b"1"
    assert client.replace("a", b"3") is True
    assert client.replace("nope", b"3") is False
    assert client.get("a") == b"3"
    assert client.get("nope") is None


def test_append_prepend(client):
    assert client.append("ap", b"x") is False
    assert client.prepend("ap", b"x") is False
    client.set("ap", b"mid")
    assert client.append("ap", b"_end") is True
    assert client.prepend("ap", b"start_") is True
    assert client.get("ap") == b"start_mid_end"


def test_cas_and_gets(client):
    assert client.cas("c", b"x", b"1") is None          # NOT_FOUND
    client.set("c", b"v1")
    value, token = client.gets("c")
    assert value == b"v1"
    assert client.cas("c", b"v2", token) is True
    assert client.cas("c", b"v3", token) is False        # EXISTS: token is stale
    value2, token2 = client.gets("c")
    assert value2 == b"v2" and token2 != token
    assert client.gets("nope") == (None, None)
    client.set("d", b"dd")
    got = client.gets_many(["c", "d", "nope"])
    assert set(got) == {"c", "d"}
    assert got["c"] == (b"v2", token2)
    assert got["d"][0] == b"dd"
    assert got["d"][1] != token2


def test_incr_decr(client):
    assert client.incr("n", 1) is None
    assert client.decr("n", 1) is None
    client.set("n", b"10")
    assert client.incr("n", 5) == 15
    assert client.decr("n", 20) == 0                      # decr floors at 0
    assert client.incr("n", 2**64 - 1) == 2**64 - 1
    assert client.incr("n", 1) == 0                       # incr wraps at 2**64
    client.set("n", b"99")
    assert client.incr("n", 1) == 100
    assert client.decr("n", 91) == 9
    # rewritten in place, space padded (no get before the decr: a get makes memcached
    # store a new, unpadded item instead, depending on its LRU thread's timing)
    assert client.get("n") == b"9  "
    client.set("s", b"abc")
    with pytest.raises(MemcacheClientError, match="non-numeric"):
        client.incr("s", 1)
    with pytest.raises(MemcacheClientError, match="invalid numeric delta"):
        client.incr("n", -1)                              # sent as "incr n -1"


def test_touch_and_expiry(client):
    assert client.touch("t", 100) is False
    client.set("t", b"x")
    assert client.touch("t", 100) is True
    assert client.raw_command(b"mg t t", b"\r\n").startswith(b"HD t")
    assert client.touch("t", -1) is True                  # negative = expire now
    assert client.get("t") is None
    client.set("gone", b"x", expire=-1)
    assert client.get("gone") is None


def test_flush_all(client):
    client.set_many({"x": b"1", "y": b"2"})
    assert client.flush_all() is True
    assert client.get_many(["x", "y"]) == {}
    client.set("x", b"1")
    assert client.flush_all(delay=100) is True            # delayed flush keeps items for now
    assert client.get("x") == b"1"


def test_noreply_pipeline(client, server):
    nr = Client((server.host, server.port), timeout=10, default_noreply=True)
    try:
        for i in range(200):
            assert nr.set(f"nr{i}", str(i).encode()) is True
        assert nr.add("nr0", b"other") is True            # noreply: the client can't know
        assert nr.append("nr1", b"+") is True
        assert nr.prepend("nr2", b"-") is True
        assert nr.replace("nr3", b"r") is True
        assert nr.delete("nr4") is True
        assert nr.touch("nr5", 100) is True
        assert nr.incr("nr6", 1, noreply=True) is None
        assert nr.decr("nr7", 1, noreply=True) is None
        assert nr.flush_all(delay=0, noreply=True) is True
        assert nr.set("after", b"ok") is True
        assert nr.get("after") == b"ok"
        assert nr.get("nr0") is None
    finally:
        nr.close()
    for i in range(20):
        client.set(f"nr{i}", str(i).encode(), noreply=True)
    expect = {f"nr{i}": str(i).encode() for i in range(20)}
    assert client.get_many(list(expect)) == expect


def test_large_values(client):
    big = bytes(range(256)) * 4096                         # exactly 1 MiB
    near = b"z" * MAX_VALUE_1_BYTE_KEY
    assert client.set("n", near) is True
    assert client.get("n") == near
    with pytest.raises(MemcacheServerError, match="object too large for cache"):
        client.set("b", big)
    assert client.get("b") is None
    medium = big[: 900 * 1024]
    assert client.set("m", medium) is True
    assert client.get("m") == medium
    assert client.set("after", b"still in sync") is True   # the big value was swallowed
    assert client.get("after") == b"still in sync"


def test_binary_values_and_keys(client, server):
    value = bytes(range(256)) + b"\r\nEND\r\n\x00"
    assert client.set("bin", value) is True
    assert client.get("bin") == value
    uc = Client((server.host, server.port), timeout=10, allow_unicode_keys=True,
                default_noreply=False)
    try:
        assert uc.set("clé-ключ-鍵", "välue".encode()) is True
        assert uc.get("clé-ключ-鍵") == "välue".encode()
        assert uc.get_many(["clé-ключ-鍵", "ascii"]) == {"clé-ключ-鍵": "välue".encode()}
    finally:
        uc.close()
    assert client.set(b"bytes-key", b"1") is True
    assert client.get(b"bytes-key") == b"1"
    long_key = "k" * 250
    assert client.set(long_key, b"L") is True
    assert client.get(long_key) == b"L"
    with pytest.raises(MemcacheIllegalInputError):
        client.set("k" * 251, b"x")
    with pytest.raises(MemcacheIllegalInputError):
        client.set("has space", b"x")


def test_stats_and_version(client):
    version = client.version()
    assert version and not version.startswith(b"VERSION")
    client.set("s1", b"x")
    client.get("s1")
    client.get("s-miss")
    stats = client.stats()
    for name in (b"pid", b"uptime", b"curr_items", b"get_hits", b"get_misses", b"cmd_get",
                 b"cmd_set", b"limit_maxbytes", b"curr_connections", b"bytes", b"evictions"):
        assert name in stats, name
    assert stats[b"get_hits"] >= 1 and stats[b"get_misses"] >= 1
    assert stats[b"limit_maxbytes"] == 64 * 1024 * 1024
    settings = client.stats("settings")
    assert settings[b"item_size_max"] == 1024 * 1024
    assert client.raw_command(b"stats reset", b"\r\n") == b"RESET"


def test_pooled_and_hash_clients(server):
    pooled = PooledClient((server.host, server.port), max_pool_size=4, timeout=10,
                          default_noreply=False)
    hashed = HashClient([(server.host, server.port)], timeout=10, default_noreply=False)
    try:
        assert pooled.set("p", b"1") is True
        assert hashed.get("p") == b"1"
        assert hashed.set_many({"h1": b"a", "h2": b"b"}) == []
        assert pooled.get_many(["h1", "h2", "p"]) == {"h1": b"a", "h2": b"b", "p": b"1"}
        assert hashed.incr("p", 41) == 42
    finally:
        pooled.close()
        hashed.close()


def test_quit_then_reconnect(client):
    client.set("q", b"1")
    client.quit()
    assert client.get("q") == b"1"                         # client reconnects
