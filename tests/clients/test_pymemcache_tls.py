"""The unchanged pymemcache client over TLS (`tls_context=`), against sqlcached -Z and, with
the same certificates, the real memcached 1.6.18 -Z (ids `[memcached]`): plain operations,
a pooled client, values spanning many TLS records, and a client certificate when the server
requires one (issue 12 item 3)."""
import ssl

import pytest

pymemcache = pytest.importorskip("pymemcache", reason="pip install -r tests/requirements.txt")
from pymemcache.client.base import Client, PooledClient  # noqa: E402

from harness.certs import client_context, make_certs  # noqa: E402
from harness.servers import start_memcached, start_sqlcached  # noqa: E402


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def opts(certs, extra=""):
    return f"ssl_chain_cert={certs['server_crt']},ssl_key={certs['server_key']}" + extra


@pytest.fixture(scope="module", params=["memcached", "sqlcached"])
def server(request, certs):
    start = start_memcached if request.param == "memcached" else start_sqlcached
    with start("-Z", "-o", opts(certs)) as s:
        yield s


def make_client(server, ctx, cls=Client, **kw):
    return cls((server.host, server.port), tls_context=ctx, connect_timeout=5, timeout=10,
               default_noreply=False, **kw)


def test_operations_over_tls(server, certs):
    c = make_client(server, client_context(certs))
    assert c.set("k", b"v1") is True
    assert c.get("k") == b"v1"
    assert c.add("k", b"x") is False
    assert c.incr("n", 1) is None
    c.set("n", b"41")
    assert c.incr("n", 1) == 42
    result, cas = c.gets("k")
    assert c.cas("k", b"v2", cas) is True
    assert c.get_many(["k", "n", "missing"]) == {"k": b"v2", "n": b"42"}
    assert c.delete("k") is True
    assert c.version().startswith(b"1.6.18")
    c.close()


def test_large_values_span_records(server, certs):
    c = make_client(server, client_context(certs))
    for size in (16383, 16384, 16385, 100_000, 1_000_000):
        v = bytes(i % 251 for i in range(size))
        assert c.set(f"big{size}", v) is True
        assert c.get(f"big{size}") == v
    c.close()


def test_large_pipelined_batch_over_tls(certs):
    """300 sets in one write (about 50 KB of pipelined requests). sqlcached only: memcached
    1.6.18 stops answering such a batch over TLS after ~290 replies (the rest of the batch
    sits decrypted in OpenSSL's buffer and no socket event wakes the connection again;
    reproduced with a bare ssl socket too), while the same batch in clear works."""
    with start_sqlcached("-Z", "-o", opts(certs)) as s:
        c = make_client(s, client_context(certs))
        many = {f"m{i}": str(i).encode() * 50 for i in range(300)}
        assert c.set_many(many) == []
        assert c.get_many(list(many)) == many
        c.close()


def test_pooled_client_over_tls(server, certs):
    c = make_client(server, client_context(certs), cls=PooledClient, max_pool_size=4)
    for i in range(50):
        c.set(f"p{i}", str(i).encode())
    assert all(c.get(f"p{i}") == str(i).encode() for i in range(50))
    c.close()


@pytest.mark.parametrize("start", [start_memcached, start_sqlcached], ids=["memcached", "sqlcached"])
def test_client_certificate_required(certs, start):
    with start("-Z", "-o", opts(certs, f",ssl_verify_mode=2,ssl_ca_cert={certs['ca']}")) as s:
        ok = make_client(s, client_context(certs, certs["client_crt"], certs["client_key"]))
        assert ok.set("a", b"b") is True and ok.get("a") == b"b"
        ok.close()
        refused = make_client(s, client_context(certs))
        with pytest.raises((ssl.SSLError, ConnectionError, OSError)):
            refused.set("a", b"c")
            refused.get("a")
        refused.close()
