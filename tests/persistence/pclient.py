"""A small raw memcached client for the persistence tests.

Raw sockets rather than a client library because these tests need to know exactly
which replies arrived (an arrived reply = an acknowledged write) and to keep going
sensibly when the server is killed mid-request."""
import hashlib
import socket
import struct
import time


class Closed(Exception):
    """The server closed the connection (or reset it): e.g. it was killed."""


class Conn:
    """One text-protocol connection (meta commands go over it too)."""

    def __init__(self, port: int, timeout: float = 15.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- raw I/O ------------------------------------------------------------------
    def send(self, data: bytes):
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise Closed(str(e)) from e

    def _fill(self):
        try:
            chunk = self.sock.recv(1 << 16)
        except (ConnectionResetError, BrokenPipeError) as e:
            raise Closed(str(e)) from e
        if not chunk:
            raise Closed("connection closed by the server")
        self.buf += chunk

    def readline(self) -> bytes:
        while True:
            i = self.buf.find(b"\r\n")
            if i >= 0:
                line, self.buf = self.buf[:i], self.buf[i + 2:]
                return line
            self._fill()

    def read_exact(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def cmd(self, line: str) -> bytes:
        """Send one command line, return its one-line reply."""
        self.send(line.encode() + b"\r\n")
        return self.readline()

    # -- storage ------------------------------------------------------------------
    def store(self, verb: str, key: str, value: bytes, flags: int = 0, exptime: int = 0, cas=None) -> bytes:
        extra = f" {cas}" if cas is not None else ""
        self.send(f"{verb} {key} {flags} {exptime} {len(value)}{extra}\r\n".encode() + value + b"\r\n")
        return self.readline()

    def set(self, key, value, flags=0, exptime=0) -> bytes:
        return self.store("set", key, value, flags, exptime)

    def set_many(self, items, exptime=0, window: int = 200):
        """Pipelined sets of (key, value, flags); returns how many were acknowledged
        (STORED arrived) before an error, raising Closed with .acked set if the server
        went away."""
        acked = 0
        items = list(items)
        for start in range(0, len(items), window):
            chunk = items[start:start + window]
            payload = b"".join(
                f"set {k} {f} {exptime} {len(v)}\r\n".encode() + v + b"\r\n" for k, v, f in chunk)
            try:
                self.send(payload)
                for _ in chunk:
                    r = self.readline()
                    if r != b"STORED":
                        raise AssertionError(f"set answered {r!r}")
                    acked += 1
            except Closed as e:
                e.acked = acked
                raise
        return acked

    # -- retrieval ----------------------------------------------------------------
    def _values(self, verb: str, keys, with_cas: bool):
        self.send(f"{verb} {' '.join(keys)}\r\n".encode())
        out = {}
        while True:
            line = self.readline()
            if line == b"END":
                return out
            parts = line.split()
            if parts[0] != b"VALUE":
                raise AssertionError(f"{verb} answered {line!r}")
            key, flags, n = parts[1].decode(), int(parts[2]), int(parts[3])
            data = self.read_exact(n + 2)
            if data[-2:] != b"\r\n":
                raise AssertionError(f"value of {key} not followed by CRLF")
            out[key] = (flags, data[:-2], int(parts[4])) if with_cas else (flags, data[:-2])

    def get_multi(self, keys, batch: int = 100) -> dict:
        """{key: (flags, value)} for the keys that are present."""
        keys = list(keys)
        out = {}
        for i in range(0, len(keys), batch):
            out.update(self._values("get", keys[i:i + batch], False))
        return out

    def get(self, key):
        """(flags, value) or None."""
        return self._values("get", [key], False).get(key)

    def gets(self, key):
        """(flags, value, cas) or None."""
        return self._values("gets", [key], True).get(key)

    def mg(self, key: str, flags: str = "v"):
        """Meta get: (header line parts, value or None); header starts with HD/VA/EN."""
        self.send(f"mg {key} {flags}\r\n".encode())
        line = self.readline()
        parts = line.decode().split()
        value = None
        if parts[0] == "VA":
            value = self.read_exact(int(parts[1]) + 2)[:-2]
        return parts, value

    def mg_ttl(self, key: str):
        """Remaining TTL by `mg key t` (-1 = never expires), None if missing."""
        parts, _ = self.mg(key, "t")
        if parts[0] == "EN":
            return None
        for p in parts[1:]:
            if p.startswith("t"):
                return int(p[1:])
        raise AssertionError(f"mg {key} t answered {parts}")

    def stats(self, sub: str = "") -> dict:
        self.send(f"stats {sub}".strip().encode() + b"\r\n")
        out = {}
        while True:
            line = self.readline()
            if line == b"END":
                return out
            _, name, val = line.decode().split(" ", 2)
            out[name] = val


# -- binary protocol -------------------------------------------------------------------
OP_GET, OP_SET, OP_ADD, OP_REPLACE, OP_DELETE, OP_INCR, OP_DECR = 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06
OP_FLUSH, OP_APPEND, OP_PREPEND, OP_TOUCH, OP_GAT = 0x08, 0x0E, 0x0F, 0x1C, 0x1D
HDR = struct.Struct(">BBHBBHIIQ")


class BinConn(Conn):
    """One binary-protocol connection."""

    def request(self, op: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"", cas: int = 0,
                opaque: int = 0):
        """Send one request, return (status, extras, key, value, cas)."""
        body = extras + key + value
        self.send(HDR.pack(0x80, op, len(key), len(extras), 0, 0, len(body), opaque, cas) + body)
        magic, rop, klen, elen, _dt, status, blen, _opq, rcas = HDR.unpack(self.read_exact(24))
        if magic != 0x81 or rop != op:
            raise AssertionError(f"bad binary response magic={magic:#x} op={rop:#x} for op {op:#x}")
        body = self.read_exact(blen)
        return status, body[:elen], body[elen:elen + klen], body[elen + klen:], rcas

    def bset(self, op: int, key: str, value: bytes, flags: int = 0, exptime: int = 0, cas: int = 0):
        return self.request(op, key.encode(), value, struct.pack(">II", flags, exptime), cas)

    def bget(self, key: str):
        """(flags, value, cas) or None."""
        st, ex, _, val, cas = self.request(OP_GET, key.encode())
        if st == 1:
            return None
        assert st == 0, f"binary get status {st:#x}"
        return struct.unpack(">I", ex)[0], val, cas

    def barith(self, op: int, key: str, delta: int, initial: int = 0, exptime: int = 0xFFFFFFFF):
        st, _, _, val, cas = self.request(op, key.encode(), b"", struct.pack(">QQI", delta, initial, exptime))
        return st, (struct.unpack(">Q", val)[0] if st == 0 else None), cas


# -- values whose content tells what they are ---------------------------------------------
def make_value(key: str, version: int, size: int) -> bytes:
    """A value that encodes key and version, padded to `size` bytes with bytes derived
    from key, version and size: a torn, mixed or stale value cannot pass parse_value()
    as an intact value of a different (key, version). Keys must not contain '#'."""
    head = f"{key}#{version}#".encode()
    size = max(size, len(head))
    seed = hashlib.blake2b(head + str(size).encode(), digest_size=32).digest()
    pad = (seed * (size // 32 + 1))[: size - len(head)]
    return head + pad


def parse_value(key: str, value: bytes):
    """The version encoded in `value` if it is an intact value of `key`, else None."""
    try:
        k, ver, _ = value.split(b"#", 2)
        ver = int(ver)
    except ValueError:
        return None
    if k != key.encode():
        return None
    return ver if make_value(key, ver, len(value)) == value else None


def wait_for(pred, timeout: float = 10.0, interval: float = 0.05):
    """Poll pred() until truthy; returns its last value."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(interval)
