"""The Unix socket (-s) and UDP (-U) transports, side by side with memcached 1.6.18: the same
requests over each, byte-identical replies (UDP: frame headers and datagram split included).

tests/run.sh runs this directory under both I/O front ends (SQLCACHED_IO_URING=on/off): on
io_uring a Unix-socket connection is served by the ring workers, as TCP is."""
import os
import socket
import struct
import subprocess
import time

import pytest

from harness.servers import (Server, _root_flags, free_port, io_uring_args, memcached_argv, memcached_bin,
                             sqlcached_argv, sqlcached_bin)

# Text and meta requests; each chunk is sent alone and its reply read until quiet.
TEXT_SESSION = [
    b"set a 5 0 3\r\nabc\r\n",
    b"get a b\r\ngets a\r\n",
    b"mg a v f t\r\nms m 2\r\nhi\r\nmn\r\n",
    b"incr a 1\r\nset n 0 0 1\r\n7\r\nincr n 35\r\ndecr n 100\r\n",
    b"append a 0 0 2\r\nde\r\nget a\r\ndelete a\r\ndelete a\r\n",
    b"set big 0 0 200000\r\n" + b"x" * 200_000 + b"\r\nget big\r\n",
    b"bogus command\r\n",
    b"quit\r\n",
]
# Binary requests on a connection of their own: GET of "n" (opaque 0x11223344), NOOP.
BINARY_SESSION = [
    struct.pack(">BBHBBHIIQ", 0x80, 0x00, 1, 0, 0, 0, 1, 0x11223344, 0) + b"n"
    + struct.pack(">BBHBBHIIQ", 0x80, 0x0a, 0, 0, 0, 0, 0, 0, 0),
]


def _start_unix(binary, path, extra):
    """A server on the Unix socket `path` only (-s disables TCP), waited for."""
    argv = [binary, "-s", str(path), "-a", "700", *extra]
    if os.path.basename(binary).startswith("memcached"):
        argv += ["-U", "0", *_root_flags(binary, argv)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{binary} exited: {proc.stderr.read()!r}")
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(path))
                return proc
        except OSError:
            time.sleep(0.02)
    proc.kill()
    raise TimeoutError(f"{binary} did not listen on {path}")


def _unix_session(path, chunks):
    out = []
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(str(path))
        s.settimeout(0.15)
        for c in chunks:
            s.sendall(c)
            got = b""
            try:
                while True:
                    part = s.recv(1 << 20)
                    if not part:
                        got += b"<closed>"
                        break
                    got += part
            except (socket.timeout, TimeoutError):
                pass
            out.append(got)
    return out


def test_unix_socket_sessions_match_memcached(tmp_path):
    mc_path, sq_path = tmp_path / "mc.sock", tmp_path / "sq.sock"
    mc = _start_unix(memcached_bin(), mc_path, [])
    try:
        sq = _start_unix(sqlcached_bin(), sq_path, io_uring_args())
        try:
            for session in (TEXT_SESSION, BINARY_SESSION):
                want = _unix_session(mc_path, session)
                got = _unix_session(sq_path, session)
                for i, (w, g) in enumerate(zip(want, got)):
                    assert g == w, f"chunk {i} {session[i][:60]!r}\nmemcached {w[:300]!r}\nsqlcached {g[:300]!r}"
            # Several connections at once, interleaved: each sees its own replies.
            socks = []
            for _ in range(8):
                s = socket.socket(socket.AF_UNIX)
                s.connect(str(sq_path))
                s.settimeout(10)
                socks.append(s)
            for i, s in enumerate(socks):
                s.sendall(b"set u%d 0 0 1\r\n%d\r\nget u%d\r\n" % (i, i, i))
            for i, s in enumerate(socks):
                want = b"STORED\r\nVALUE u%d 0 1\r\n%d\r\nEND\r\n" % (i, i)
                got = b""
                while len(got) < len(want):
                    got += s.recv(4096)
                assert got == want
                s.close()
        finally:
            sq.terminate()
            sq.wait(10)
    finally:
        mc.terminate()
        mc.wait(10)


def _udp_exchange(port, request_id, payload, timeout=2.0):
    """Send one framed request; return the datagrams of its reply in arrival order."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
        u.settimeout(timeout)
        u.sendto(struct.pack(">HHHH", request_id, 0, 1, 0) + payload, ("127.0.0.1", port))
        first = u.recv(65536)
        total = struct.unpack(">H", first[4:6])[0]
        grams = [first]
        while len(grams) < total:
            grams.append(u.recv(65536))
        return grams


@pytest.fixture(scope="module")
def udp_pair():
    """memcached and sqlcached with -U on free ports; yields their UDP ports."""
    mc_udp, sq_udp = free_port(), free_port()
    mc_tcp, sq_tcp = free_port(), free_port()
    mc = Server(memcached_argv(mc_tcp, "-U", str(mc_udp)), mc_tcp, wait=False)
    sq = Server(sqlcached_argv(sq_tcp, "-U", str(sq_udp)), sq_tcp, wait=False)
    try:
        mc.wait_ready()
        sq.wait_ready()
        yield (mc_udp, sq_udp)
    finally:
        mc.stop()
        sq.stop()


@pytest.mark.parametrize("payload", [
    b"set k 3 0 5\r\nhello\r\n",
    b"get k\r\n",
    b"get nothere\r\n",
    b"mg k v f s\r\n",
    b"incr k 1\r\n",
    b"version\r\n",
    b"bogus\r\n",
    # binary GET of "k"
    struct.pack(">BBHBBHIIQ", 0x80, 0x00, 1, 0, 0, 0, 1, 7, 0) + b"k",
])
def test_udp_replies_match_memcached(udp_pair, payload):
    """(Not a multi-key get: memcached 1.6.18 answers `get k x k` over UDP with the first
    VALUE only, in one datagram, where sqlcached sends all of them.)"""
    mc_udp, sq_udp = udp_pair
    if payload.startswith((b"get", b"mg", b"incr")) or payload[0] == 0x80:
        for port in udp_pair:
            _udp_exchange(port, 1, b"set k 3 0 5\r\nhello\r\n")
    if payload.startswith(b"version"):
        want = _udp_exchange(mc_udp, 42, payload)
        got = _udp_exchange(sq_udp, 42, payload)
        assert got[0][:8] == want[0][:8] and got[0].startswith(got[0][:8] + b"VERSION ")
        return
    assert _udp_exchange(sq_udp, 42, payload) == _udp_exchange(mc_udp, 42, payload)


def test_udp_large_reply_is_split_like_memcached(udp_pair):
    mc_udp, sq_udp = udp_pair
    value = bytes(range(256)) * 16  # 4 KiB: three datagrams of at most 1400 bytes
    for port in udp_pair:
        assert _udp_exchange(port, 1, b"set big 0 0 %d\r\n%s\r\n" % (len(value), value))[0][8:] == b"STORED\r\n"
    want = _udp_exchange(mc_udp, 9, b"get big\r\n")
    got = _udp_exchange(sq_udp, 9, b"get big\r\n")
    assert len(want) > 1 and got == want
