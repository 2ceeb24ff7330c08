"""memcached's TLS (-Z, -o ssl_*, `notls:` listeners, refresh_certs; issue 12 item 3), side by
side with Debian's memcached 1.6.18 (built with OpenSSL) given the same certificates, made
by `openssl` for this module: the same replies over TLS, the same treatment of a plain-text
client on a TLS port, client certificates required or requested, the minimum version, the
TLS statistics and settings, and the same start-up errors."""
import os
import shutil
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.certs import client_context, make_certs  # noqa: E402
from harness.servers import (FAILED, assert_same_sessions, chunked_session, free_port,  # noqa: E402
                             memcached_argv, sqlcached_argv, start_memcached, start_sqlcached)

@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    return make_certs(tmp_path_factory.mktemp("certs"))


def tls_opts(certs, **extra) -> str:
    o = {"ssl_chain_cert": certs["server_crt"], "ssl_key": certs["server_key"], **extra}
    return ",".join(k if v is None else f"{k}={v}" for k, v in o.items())


def start_both(certs, *args, **opts):
    """memcached and sqlcached with -Z and the same options, each with a `notls:` listener."""
    out = []
    for start in (start_memcached, start_sqlcached):
        plain = free_port()
        s = start("-Z", "-o", tls_opts(certs, **opts), "-l", f"notls:127.0.0.1:{plain}", *args)
        s.plain = plain
        out.append(s)
    return out


def tls_session(port, chunks, ctx, pause=0.1):
    """chunked_session over TLS (FAILED when the handshake fails)."""
    return chunked_session(port, chunks, pause, tls=ctx)


def plain_attempt(port, data):
    """What a plain-text client gets from a TLS port: bytes, then `<reset>` or `<closed>`."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(data)
        s.settimeout(2)
        got = b""
        try:
            while True:
                part = s.recv(65536)
                if not part:
                    return got + b"<closed>"
                got += part
        except ConnectionResetError:
            return got + b"<reset>"
        except socket.timeout:
            return got + b"<open>"


def stats(port, sub=b""):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"stats " + sub + b"\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(65536)
    return dict(line.split(" ", 2)[1:] for line in buf.decode().split("\r\n") if line.startswith("STAT "))


BIN_NOOP = bytes([0x80, 0x0A]) + bytes(22)
BIN_VERSION = bytes([0x80, 0x0B]) + bytes(22)
SESSIONS = [
    [b"version\r\n", b"set a 0 0 5\r\nhello\r\n", b"get a\r\n", b"mg a v t\r\n", b"quit\r\n"],
    [b"set big 3 0 200000\r\n" + b"x" * 200000 + b"\r\n", b"get big\r\n"],
    [b"get a b c\r\nget a\r\n" * 50],
    [b"set p 0 0 2\r\n", b"ab\r\n", b"get p\r\n", b"bogus\r\n"],
    [BIN_VERSION, BIN_NOOP],
    [b"refresh_certs\r\n", b"refresh_certs noreply\r\nversion\r\n"],
]


@pytest.fixture(scope="module")
def pair(certs):
    mc, sq = start_both(certs)
    yield mc, sq
    mc.stop()
    sq.stop()


@pytest.mark.parametrize("i", range(len(SESSIONS)))
def test_session_over_tls_matches_memcached(pair, certs, i):
    mc, sq = pair
    want = assert_same_sessions(mc.port, sq.port, SESSIONS[i], tls=client_context(certs))
    assert FAILED not in want


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_both_versions_offered(pair, certs, version):
    ctx = client_context(certs, min_version=version, max_version=version)
    for s in pair:
        assert tls_session(s.port, [b"version\r\n"], ctx) == [b"VERSION 1.6.18\r\n"]


@pytest.mark.parametrize("data", [b"version\r\n", b"get foo\r\n" * 100, BIN_VERSION])
def test_plain_client_on_tls_port_is_reset_like_memcached(pair, data):
    mc, sq = pair
    before = [int(stats(s.plain)["ssl_handshake_errors"]) for s in pair]
    want, got = plain_attempt(mc.port, data), plain_attempt(sq.port, data)
    assert want == b"<reset>" and got == want
    after = [int(stats(s.plain)["ssl_handshake_errors"]) for s in pair]
    # memcached counts it only when the bytes are there by the time its accept thread
    # tries the handshake (otherwise the worker's failed read is not counted); sqlcached
    # counts every failed handshake.
    assert after[0] - before[0] in (0, 1) and after[1] - before[1] == 1


def test_notls_listener_speaks_plain_text(pair):
    mc, sq = pair
    assert_same_sessions(mc.plain, sq.plain, [b"set n 0 0 1\r\nv\r\n", b"get n\r\n", b"version\r\n"])


def test_stats_and_settings_match_memcached(pair):
    mc, sq = pair
    want, got = stats(mc.plain, b"settings"), stats(sq.plain, b"settings")
    ssl_keys = [k for k in want if k.startswith("ssl_")]
    assert len(ssl_keys) == 11
    assert {k: got.get(k) for k in ssl_keys} == {k: want[k] for k in ssl_keys}
    assert got["inter"] == want["inter"].replace(str(mc.plain), str(sq.plain))
    g, w = stats(sq.plain), stats(mc.plain)
    for k in ("ssl_handshake_errors", "time_since_server_cert_refresh"):
        assert k in w and k in g, k
    assert "ssl_new_sessions" not in g and "ssl_new_sessions" not in w


def test_stats_without_tls_match_memcached():
    with start_memcached() as mc, start_sqlcached() as sq:
        want, got = stats(mc.port, b"settings"), stats(sq.port, b"settings")
        assert want["ssl_enabled"] == got["ssl_enabled"] == "no"
        assert "ssl_handshake_errors" not in stats(sq.port)
        r = [b"refresh_certs\r\n"]
        assert chunked_session(sq.port, r) == chunked_session(mc.port, r) == [b"Error TLS not enabled\r\n"]


@pytest.mark.parametrize("mode", [1, 2, 3])
def test_client_certificates_like_memcached(certs, mode):
    """verify mode 1 asks for a certificate, 2 and 3 require one; a certificate from a CA
    not in ssl_ca_cert is refused in every mode."""
    servers = start_both(certs, ssl_verify_mode=mode, ssl_ca_cert=certs["ca"])
    try:
        clients = {
            "none": client_context(certs),
            "trusted": client_context(certs, certs["client_crt"], certs["client_key"]),
            "rogue": client_context(certs, certs["rogue_crt"], certs["rogue_key"]),
        }
        for name, ctx in clients.items():
            want = tls_session(servers[0].port, [b"version\r\n"], ctx)
            got = tls_session(servers[1].port, [b"version\r\n"], ctx)
            assert got == want, (mode, name, want, got)
            ok = name == "trusted" or (name == "none" and mode == 1)
            assert (want == [b"VERSION 1.6.18\r\n"]) == ok, (mode, name, want)
        assert stats(servers[1].plain, b"settings")["ssl_verify_mode"] == stats(servers[0].plain, b"settings")[
            "ssl_verify_mode"]
    finally:
        for s in servers:
            s.stop()


def test_min_version_tls13_refuses_tls12_like_memcached(certs):
    servers = start_both(certs, ssl_min_version=3)
    try:
        old = client_context(certs, max_version=ssl.TLSVersion.TLSv1_2)
        new = client_context(certs, min_version=ssl.TLSVersion.TLSv1_3)
        for s in servers:
            assert tls_session(s.port, [b"version\r\n"], old) == [FAILED]
            assert tls_session(s.port, [b"version\r\n"], new) == [b"VERSION 1.6.18\r\n"]
            assert stats(s.plain, b"settings")["ssl_min_version"] == "tlsv1.3"
    finally:
        for s in servers:
            s.stop()


def test_session_cache_resumes_and_counts(certs):
    servers = start_both(certs, ssl_session_cache=None)
    try:
        for s in servers:
            ctx = client_context(certs, max_version=ssl.TLSVersion.TLSv1_2)
            with ctx.wrap_socket(socket.create_connection(("127.0.0.1", s.port)), server_hostname="localhost") as a:
                a.sendall(b"version\r\n")
                a.recv(100)
                session = a.session
            with ctx.wrap_socket(socket.create_connection(("127.0.0.1", s.port)), server_hostname="localhost",
                                 session=session) as b:
                b.sendall(b"version\r\n")
                b.recv(100)
                assert b.session_reused, s.argv
            # memcached resumes through OpenSSL's stateless tickets (its counter stays 0);
            # sqlcached keeps sessions server side and counts them.
            assert int(stats(s.plain)["ssl_new_sessions"]) >= (s is servers[1])
            assert stats(s.plain, b"settings")["ssl_session_cache"] == "yes"
    finally:
        for s in servers:
            s.stop()


def test_refresh_certs(certs, tmp_path):
    """refresh_certs loads the files again: a broken file is refused with memcached's
    message (the certificate in use stays), a new one is served to new connections."""
    d = tmp_path / "live"
    d.mkdir()
    crt, key = d / "server.crt", d / "server.key"
    shutil.copy(certs["server_crt"], crt)
    shutil.copy(certs["server_key"], key)
    live = {**certs, "server_crt": str(crt), "server_key": str(key)}
    servers = start_both(live)
    try:
        ctx = client_context(certs)
        for s in servers:
            assert chunked_session(s.plain, [b"refresh_certs\r\n"]) == [b"OK\r\n"]
        crt.write_text("not a certificate\n")
        replies = [chunked_session(s.plain, [b"refresh_certs\r\n"])[0] for s in servers]
        prefix = f"Error loading the certificate chain: {crt} : ".encode()
        assert all(r.startswith(prefix) and r.endswith(b"\r\n") for r in replies), replies
        # sqlcached keeps serving the certificate it had.
        assert tls_session(servers[1].port, [b"version\r\n"], ctx) == [b"VERSION 1.6.18\r\n"]
        # A new certificate (other serial, same key) is what new connections get.
        subprocess.run(["openssl", "x509", "-req", "-in", str(Path(certs["server_crt"]).with_suffix(".csr")),
                        "-CA", certs["ca"], "-CAkey", str(Path(certs["ca"]).with_suffix(".key")),
                        "-set_serial", "4242", "-out", str(crt), "-days", "30", "-extfile",
                        str(Path(certs["server_crt"]).with_suffix(".ext"))], check=True, capture_output=True)
        for s in servers:
            assert chunked_session(s.plain, [b"refresh_certs\r\n"]) == [b"OK\r\n"]
            with ctx.wrap_socket(socket.create_connection(("127.0.0.1", s.port)), server_hostname="localhost") as c:
                assert int(c.getpeercert()["serialNumber"], 16) == 4242
    finally:
        for s in servers:
            s.stop()


def test_der_key(certs):
    with start_sqlcached("-Z", "-o", tls_opts(certs, ssl_key=certs["server_key_der"], ssl_keyformat=2)) as s:
        assert tls_session(s.port, [b"version\r\n"], client_context(certs)) == [b"VERSION 1.6.18\r\n"]


def start_error(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    return p.returncode, p.stderr


def memcached_message(stderr: str) -> str:
    """memcached's own line (OpenSSL's error-stack lines dropped), up to OpenSSL's reason."""
    lines = [ln for ln in stderr.splitlines() if not ln[:1].isdigit() and ":error:" not in ln]
    line = lines[0]
    for cut in (" : error:", ": error:"):
        if cut in line:
            return line[:line.index(cut) + 3]
    return line


@pytest.mark.parametrize("case", [
    "no_port", "no_key", "missing_chain", "bad_chain", "mismatched_key", "missing_ca", "bad_verify_mode",
    "bad_min_version", "bad_ciphers", "notls_without_tls", "missing_value",
])
def test_start_errors_match_memcached(certs, tmp_path, case):
    bad = tmp_path / "bad.pem"
    bad.write_text("garbage\n")
    o = {
        "no_key": f"ssl_chain_cert={certs['server_crt']}",
        "missing_chain": f"ssl_chain_cert=/nonexistent.crt,ssl_key={certs['server_key']}",
        "bad_chain": f"ssl_chain_cert={bad},ssl_key={certs['server_key']}",
        "mismatched_key": tls_opts(certs, ssl_key=certs["other_key"]),
        "missing_ca": tls_opts(certs, ssl_verify_mode=2, ssl_ca_cert="/nonexistent-ca.crt"),
        "bad_verify_mode": tls_opts(certs, ssl_verify_mode=9),
        "bad_min_version": tls_opts(certs, ssl_min_version=7),
        "bad_ciphers": tls_opts(certs, ssl_ciphers="BOGUS"),
        "missing_value": "ssl_chain_cert",
    }.get(case, tls_opts(certs))
    args = ["-Z", "-o", o]
    if case == "no_port":
        args += ["-p", "0"]
    if case == "notls_without_tls":
        args = ["-l", f"notls:127.0.0.1:{free_port()}"]
    port = free_port()
    mc = start_error(memcached_argv(port, *args))
    sq = start_error(sqlcached_argv(port, *args))
    assert mc[0] != 0 and sq[0] == mc[0], (mc, sq)
    want = memcached_message(mc[1])
    assert want in sq[1], (want, sq[1])


def test_refused_settings_say_why(certs):
    """What rustls cannot do is refused at start, not ignored: kernel TLS offload, and
    client verification without a CA to verify against."""
    for extra, msg in [({"ssl_kernel_tls": None}, "Kernel TLS offload is not available"),
                       ({"ssl_verify_mode": 2}, "ssl_verify_mode 2 needs ssl_ca_cert")]:
        code, err = start_error(sqlcached_argv(free_port(), "-Z", "-o", tls_opts(certs, **extra)))
        assert code == 64 and msg in err, (extra, code, err)


def test_settings_rustls_lacks_are_said_at_start(certs, tmp_path):
    log = tmp_path / "s.log"
    with start_sqlcached("-Z", "-o", tls_opts(certs, ssl_min_version=0, ssl_ca_cert=certs["ca"],
                                              ssl_ciphers="ECDHE-ECDSA-AES128-GCM-SHA256:HIGH"), log=log) as s:
        ctx = client_context(certs, max_version=ssl.TLSVersion.TLSv1_2)
        c = ctx.wrap_socket(socket.create_connection(("127.0.0.1", s.port)), server_hostname="localhost")
        assert c.cipher()[0] == "ECDHE-ECDSA-AES128-GCM-SHA256"
        c.close()
    text = log.read_text()
    assert "no TLS 1.0 or 1.1" in text and "client certificates are not asked for" in text, text
    assert "HIGH not available" in text, text


def test_stalled_handshake_is_bounded_by_idle_timeout(certs):
    """A client that starts a handshake and stalls holds its connection only until
    -o idle_timeout, as an idle plain-text client does."""
    with start_sqlcached("-Z", "-o", tls_opts(certs, idle_timeout=1)) as s:
        with socket.create_connection(("127.0.0.1", s.port), timeout=5) as c:
            c.sendall(b"\x16\x03\x01")  # the start of a ClientHello, then nothing
            t = time.time()
            try:
                got = c.recv(100)
            except ConnectionResetError:
                got = b""
            assert got == b"" and time.time() - t < 4


def test_config_file_form(certs, tmp_path):
    """The same settings from a --config file: enable-ssl and extended = { ssl_* }."""
    f = tmp_path / "sqlcached.toml"
    f.write_text(f'enable-ssl = true\nextended = {{ ssl_chain_cert = "{certs["server_crt"]}", '
                 f'ssl_key = "{certs["server_key"]}", ssl_session_cache = true }}\n')
    with start_sqlcached("--config", str(f)) as s:
        assert tls_session(s.port, [b"version\r\n"], client_context(certs)) == [b"VERSION 1.6.18\r\n"]


def test_check_config_loads_the_certificates(certs):
    """--check-config says whether -Z's files load and match, without serving."""
    from harness.servers import sqlcached_bin
    ok = subprocess.run([sqlcached_bin(), "-Z", "-o", tls_opts(certs), "--check-config"], capture_output=True,
                        text=True, timeout=20)
    assert ok.returncode == 0 and "ok:   -Z:" in ok.stdout, ok
    bad = subprocess.run([sqlcached_bin(), "-Z", "-o", tls_opts(certs, ssl_key=certs["other_key"]), "--check-config"],
                         capture_output=True, text=True, timeout=20)
    assert bad.returncode == 78 and "key values mismatch" in bad.stdout, bad


def test_ssl_options_without_tls_are_said_at_start(certs, tmp_path):
    """memcached ignores -o ssl_* without -Z; sqlcached says TLS is off."""
    log = tmp_path / "s.log"
    with start_sqlcached("-o", tls_opts(certs), log=log) as s:
        assert chunked_session(s.port, [b"version\r\n"]) == [b"VERSION 1.6.18\r\n"]
    assert "-o ssl_* options are set but -Z is not" in log.read_text()
