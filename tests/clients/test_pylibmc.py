"""The unchanged C client pylibmc (libmemcached) against sqlcached, text and binary protocol.

Every test also runs against the real memcached 1.6.18 (ids `memcached-*`): the expectations
are memcached's behaviour as libmemcached reports it.
Install: pip install -r tests/requirements.txt (pylibmc==1.6.3 ships a manylinux wheel for
CPython 3.6-3.11 that bundles libmemcached; on other Pythons it builds from source and
needs `apt-get install -y libmemcached-dev zlib1g-dev build-essential python3-dev`)."""
import threading

import pytest

pylibmc = pytest.importorskip("pylibmc", reason="pip install -r tests/requirements.txt")

from harness.servers import start_memcached, start_sqlcached  # noqa: E402


@pytest.fixture(scope="module", params=["memcached", "sqlcached"])
def server(request):
    start = start_memcached if request.param == "memcached" else start_sqlcached
    with start() as s:
        yield s


@pytest.fixture(params=["text", "binary"])
def protocol(request):
    return request.param


@pytest.fixture
def mc(server, protocol):
    c = pylibmc.Client([server.addr], binary=(protocol == "binary"),
                       behaviors={"cas": True, "tcp_nodelay": True, "connect_timeout": 5000,
                                  "receive_timeout": 10_000_000, "send_timeout": 10_000_000})
    c.flush_all()
    yield c
    c.disconnect_all()


def test_set_get_delete(mc):
    assert mc.set("k", b"v") is True
    assert mc.get("k") == b"v"
    assert mc.get("missing") is None
    assert mc.set("k", b"v2", time=100) is True
    assert mc.get("k") == b"v2"
    assert mc.delete("k") is True
    assert mc.delete("k") is False
    assert mc.get("k") is None
    assert ("k" in mc) is False


def test_serialized_types_use_flags(mc):
    values = {"str": "text ✓", "int": 42, "long": 2**70, "bool": True, "bytes": b"\x00\xff",
              "obj": {"list": [1, 2, 3], "nested": {"a": None}}, "float": 1.5}
    for k, v in values.items():
        assert mc.set(k, v) is True
    assert mc.get_multi(list(values)) == values
    text = "compress me " * 2000
    assert mc.set("z", text, min_compress_len=1) is True   # zlib + a flag bit
    assert mc.get("z") == text


def test_multi(mc):
    assert mc.set_multi({"a": b"1", "b": b"2", "c": b"3"}) == []
    assert mc.get_multi(["a", "b", "c", "nope"]) == {"a": b"1", "b": b"2", "c": b"3"}
    batch = {f"batch:{i}": (b"%d" % i) * (i % 5 + 1) for i in range(500)}
    assert mc.set_multi(batch, time=300) == []
    assert mc.get_multi(list(batch)) == batch
    prefixed = mc.get_multi(["1", "2"], key_prefix="batch:")
    assert prefixed == {"1": b"11", "2": b"222"}
    assert mc.delete_multi(["a", "b"]) is True
    assert mc.delete_multi(["c", "nope"]) is False
    assert mc.get_multi(["a", "b", "c"]) == {}


def test_add_replace(mc, protocol):
    assert mc.add("a", b"1") is True
    assert mc.add("a", b"2") is False
    assert mc.get("a") == b"1"
    assert mc.replace("a", b"3") is True
    assert mc.get("a") == b"3"
    if protocol == "text":
        assert mc.replace("nope", b"x") is False
    else:   # libmemcached maps the binary KEY_ENOENT of replace to NotFound
        with pytest.raises(pylibmc.NotFound):
            mc.replace("nope", b"x")
    assert mc.get("nope") is None


def test_append_prepend(mc):
    assert mc.append("ap", b"x") is False
    assert mc.prepend("ap", b"x") is False
    assert mc.set("ap", b"mid") is True
    assert mc.append("ap", b"_end") is True
    assert mc.prepend("ap", b"start_") is True
    assert mc.get("ap") == b"start_mid_end"


def test_cas(mc):
    assert mc.set("c", b"v1") is True
    value, token = mc.gets("c")
    assert value == b"v1" and token > 0
    assert mc.cas("c", b"v2", token) is True
    assert mc.cas("c", b"v3", token) is False             # stale token: EXISTS
    value2, token2 = mc.gets("c")
    assert value2 == b"v2" and token2 != token
    assert mc.gets("nope") == (None, None)
    with pytest.raises(pylibmc.NotFound):
        mc.cas("nope", b"x", 1)


def test_incr_decr(mc):
    assert mc.set("n", b"10") is True
    assert mc.incr("n") == 11
    assert mc.incr("n", 5) == 16
    assert mc.decr("n", 100) == 0                          # floors at 0
    assert mc.set("n", b"18446744073709551614") is True    # pylibmc deltas are C longs
    assert mc.incr("n", 1) == 2**64 - 1
    assert mc.incr("n", 1) == 0                            # wraps at 2**64
    assert mc.set("n", b"99") is True
    assert mc.incr("n") == 100
    assert mc.get("n") == b"100"
    assert mc.decr("n", 91) == 9
    assert mc.get("n") in (b"9  ", b"9")                   # text pads in place, binary too
    with pytest.raises(pylibmc.NotFound):
        mc.incr("missing", 1)
    assert mc.set("m", b"0") is True
    assert mc.incr_multi(["m", "n"], delta=2) is None
    assert mc.get_multi(["m", "n"]) in ({"m": b"2", "n": b"11 "}, {"m": b"2", "n": b"11"})
    assert mc.set("s", b"abc") is True
    # last: after the binary DELTA_BADVAL reply libmemcached marks the server failed
    with pytest.raises(pylibmc.Error):
        mc.incr("s", 1)


def test_touch_text_protocol(server):
    # libmemcached's binary TOUCH is refused by memcached 1.6.18 itself (the connection
    # fails), so touch is exercised over the text protocol only.
    c = pylibmc.Client([server.addr], binary=False)
    try:
        c.flush_all()
        assert c.touch("t", 100) is False
        assert c.set("t", b"x") is True
        assert c.touch("t", 100) is True
        assert c.get("t") == b"x"
        assert c.touch("t", 0) is True
        assert c.get("t") == b"x"
    finally:
        c.disconnect_all()


def test_expiry_in_the_past(mc, protocol):
    assert mc.set("gone", b"x", time=-1) is True
    # text: a negative exptime expires at once; binary: the 32-bit extras field makes
    # -1 = 0xffffffff, an absolute time far in the future (memcached behaves the same).
    assert mc.get("gone") == (None if protocol == "text" else b"x")
    assert mc.set("long", b"x", time=86400) is True
    assert mc.get("long") == b"x"


def test_flush_all(mc):
    mc.set_multi({"x": b"1", "y": b"2"})
    assert mc.flush_all() is True
    assert mc.get_multi(["x", "y"]) == {}
    assert mc.set("x", b"1") is True
    assert mc.get("x") == b"1"


def test_large_values(mc):
    value = bytes(range(256)) * 3900 + b"tail"             # 998,404 bytes
    assert mc.set("big", value) is True
    assert mc.get("big") == value
    assert mc.get_multi(["big", "nope"]) == {"big": value}
    with pytest.raises(pylibmc.TooBig):
        mc.set("huge", b"x" * (2 * 1024 * 1024))
    assert mc.get("huge") is None
    assert mc.set("after", b"ok") is True                  # connection still in sync
    assert mc.get("after") == b"ok"


def test_keys(mc, protocol):
    assert mc.set("ключ-鍵", b"u") is True                 # UTF-8 encoded by pylibmc
    assert mc.get("ключ-鍵") == b"u"
    assert mc.set(b"raw\xc3\xa9", b"r") is True
    assert mc.get(b"raw\xc3\xa9") == b"r"
    assert mc.set("k" * 250, b"L") is True
    assert mc.get("k" * 250) == b"L"
    with pytest.raises(ValueError):
        mc.set("k" * 251, b"x")
    if protocol == "binary":                               # binary keys may contain spaces
        assert mc.set("with space", b"s") is True
        assert mc.get("with space") == b"s"


def test_noreply(server, protocol):
    c = pylibmc.Client([server.addr], binary=(protocol == "binary"), behaviors={"_noreply": True})
    try:
        c.flush_all()
        for i in range(100):
            assert c.set(f"nr{i}", b"%d" % i) is True
        assert c.add("nr0", b"other") is True
        assert c.delete("nr1") is True
        assert c.set("nr2", b"new") is True
        got = c.get_multi([f"nr{i}" for i in range(3)])
        assert got == {"nr0": b"0", "nr2": b"new"}
        assert c.get("nr99") == b"99"
    finally:
        c.disconnect_all()


def test_stats(mc):
    mc.set("s", b"x")
    mc.get("s")
    mc.get("s-miss")
    (name, stats), = mc.get_stats()
    assert stats["version"]
    for key in ("pid", "uptime", "curr_items", "get_hits", "get_misses", "cmd_get", "cmd_set",
                "limit_maxbytes", "curr_connections", "threads", "evictions"):
        assert key in stats, key
    assert int(stats["get_hits"]) >= 1 and int(stats["get_misses"]) >= 1
    assert int(stats["limit_maxbytes"]) == 64 * 1024 * 1024


def test_pool_with_threads(server, protocol):
    master = pylibmc.Client([server.addr], binary=(protocol == "binary"))
    pool = pylibmc.ClientPool(master, 4)
    errors = []

    def worker(n):
        try:
            for i in range(200):
                with pool.reserve() as c:
                    key = f"t{n}:{i}"
                    assert c.set(key, b"%d" % i) is True
                    assert c.get(key) == b"%d" % i
                    c.incr(f"counter{protocol}", 1) if i else None
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))
    master.set(f"counter{protocol}", b"0")
    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    assert master.get(f"counter{protocol}") == b"%d" % (4 * 199)
    master.disconnect_all()
