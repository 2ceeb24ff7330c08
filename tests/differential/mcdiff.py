"""Differential memcached-vs-sqlcached session runner.

A *session* is a list of steps sent over real sockets to a freshly started memcached 1.6.18
and a freshly started sqlcached (same flags). After every step both replies are read,
normalized (see NORMALIZATION below) and must be byte-identical.

Session files live in tests/differential/sessions/*.txt; the format is documented in
tests/differential/README.md. This module is also a command line tool:

    python3 tests/differential/mcdiff.py [--show] [--mc-only] [-k SUBSTR] [FILE...]

--show prints every step with the memcached reply (and the sqlcached one when it differs);
--mc-only runs memcached alone (to write new sessions); without --show it prints only the
mismatches, one block per step, and exits 1 if there were any.

NORMALIZATION (applied identically to both replies, nothing else is rewritten):
  * CAS values: `VALUE k f n <cas>`, meta flag `c<cas>`, `ME ... cas=<cas>` and the CAS field
    of binary response headers are replaced by `#N`, where N is the order in which this
    server first showed that CAS in the session (0 stays 0). So the two servers may use
    different CAS numbers but must agree on which items share a CAS and when it changes.
  * Time-relative numbers that depend on each server's own 1-second clock tick: meta flags
    `t<ttl>` and `l<secs>` and `ME` fields `exp=`/`la=` are compared with a tolerance of
    +-1 (shown as `t~N`); -1 (no expiry) never matches 0.
  * `ME` fields `cls=` (slab class) and `size=` (memcached's internal item size incl. its
    item header) become `<internal>`: they describe memcached's slab allocator, not data.
  * Per-process values: `STAT pid|uptime|time|version|libevent|rusage_user|rusage_system`
    (text stats and binary stat responses) become `<volatile>`; `VERSION <x>` becomes
    `VERSION <version>` and the value of a successful binary VERSION response `<version>`.
  * The sentinel reply appended by the runner (`MN\\r\\n`, or the binary NOOP response with
    the sentinel opaque) is removed.
  * A connection closed by the server is shown as `<EOF>` after the bytes received.
"""
from __future__ import annotations

import base64
import codecs
import os
import re
import select
import socket
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
SESSIONS_DIR = HERE / "sessions"
sys.path.insert(0, str(HERE.parent))
from harness.servers import start_memcached, start_pair  # noqa: E402

QUIET = float(os.environ.get("MCDIFF_QUIET", "0.25"))       # quiescence for `~` steps
STALL = float(os.environ.get("MCDIFF_STALL", "2.0"))        # silence => sentinel lost
SENTINEL_OPAQUE = 0x5E17E1A1

VOLATILE_STATS = {b"pid", b"uptime", b"time", b"version", b"libevent",
                  b"rusage_user", b"rusage_system"}

# --------------------------------------------------------------------------- binary


OPCODES = {
    "get": 0x00, "set": 0x01, "add": 0x02, "replace": 0x03, "delete": 0x04,
    "incr": 0x05, "decr": 0x06, "quit": 0x07, "flush": 0x08, "getq": 0x09,
    "noop": 0x0A, "version": 0x0B, "getk": 0x0C, "getkq": 0x0D, "append": 0x0E,
    "prepend": 0x0F, "stat": 0x10, "setq": 0x11, "addq": 0x12, "replaceq": 0x13,
    "deleteq": 0x14, "incrq": 0x15, "decrq": 0x16, "quitq": 0x17, "flushq": 0x18,
    "appendq": 0x19, "prependq": 0x1A, "verbosity": 0x1B, "touch": 0x1C, "gat": 0x1D,
    "gatq": 0x1E, "sasl_list_mechs": 0x20, "sasl_auth": 0x21, "sasl_step": 0x22,
    "gatk": 0x23, "gatkq": 0x24,
}
OPNAMES = {v: k for k, v in OPCODES.items()}
STATUS = {0x00: "OK", 0x01: "KEY_ENOENT", 0x02: "KEY_EEXISTS", 0x03: "E2BIG", 0x04: "EINVAL",
          0x05: "NOT_STORED", 0x06: "DELTA_BADVAL", 0x07: "NOT_MY_VBUCKET", 0x20: "AUTH_ERROR",
          0x21: "AUTH_CONTINUE", 0x81: "UNKNOWN_COMMAND", 0x82: "ENOMEM",
          0x83: "NOT_SUPPORTED", 0x84: "EINTERNAL", 0x85: "EBUSY", 0x86: "ETMPFAIL"}
STORE_OPS = {"set", "add", "replace", "setq", "addq", "replaceq"}
ARITH_OPS = {"incr", "decr", "incrq", "decrq"}
EXP_OPS = {"touch", "gat", "gatq", "gatk", "gatkq"}


def bin_request(opcode: int, key: bytes = b"", value: bytes = b"", extras: bytes = b"",
                cas: int = 0, opaque: int = 0, magic: int = 0x80, datatype: int = 0,
                vbucket: int = 0, keylen=None, extlen=None, bodylen=None) -> bytes:
    """Pack one binary-protocol request; header fields can be overridden to make it bad."""
    kl = len(key) if keylen is None else keylen
    el = len(extras) if extlen is None else extlen
    bl = len(extras) + len(key) + len(value) if bodylen is None else bodylen
    hdr = struct.pack(">BBHBBHIIQ", magic, opcode, kl, el, datatype, vbucket, bl, opaque, cas)
    return hdr + extras + key + value


def parse_bin_frames(buf: bytes):
    """Split a binary response stream into frames. Returns (frames, rest); rest is the
    unparsed tail (incomplete frame, or garbage that doesn't start with magic 0x81)."""
    frames, i = [], 0
    while len(buf) - i >= 24 and buf[i] == 0x81:
        magic, op, kl, el, dt, st, bl, opq, cas = struct.unpack(">BBHBBHIIQ", buf[i:i + 24])
        if len(buf) - i - 24 < bl:
            break
        body = buf[i + 24:i + 24 + bl]
        frames.append(dict(op=op, keylen=kl, extlen=el, dt=dt, status=st, opaque=opq, cas=cas,
                           body=body))
        i += 24 + bl
    return frames, buf[i:]


# --------------------------------------------------------------------------- templates

_TEMPLATE = re.compile(r"\{(?:(cas)(?::(\d+))?(?:([+-])(\d+))?|b64:([^{}]*)|([^{}*]*)\*(\d+))\}")


class CasMap:
    """Per-server, per-session CAS normalization: raw CAS -> order of first appearance."""

    def __init__(self):
        self.ids: dict[int, int] = {}
        self.raw: list[int] = []
        self.last = 0

    def norm(self, raw: int) -> str:
        if raw == 0:
            return "0"
        self.last = raw
        if raw not in self.ids:
            self.raw.append(raw)
            self.ids[raw] = len(self.raw)
        return f"#{self.ids[raw]}"

    def lookup(self, n) -> int:
        if n is None:
            if not self.last:
                raise SessionError("{cas} used before any CAS was seen in a reply")
            return self.last
        n = int(n)
        if n < 1 or n > len(self.raw):
            raise SessionError(f"{{cas:{n}}}: only {len(self.raw)} distinct CAS values seen")
        return self.raw[n - 1]


class SessionError(Exception):
    """The session file itself is wrong (not a server mismatch)."""


def expand(text: str, cas: CasMap | None) -> bytes:
    """Expand {templates} then decode backslash escapes (\\r \\n \\t \\xNN \\\\ ...)."""
    def sub(m):
        if m.group(1):
            if cas is None:
                return "0"
            v = cas.lookup(m.group(2))
            if m.group(3):
                v = v + int(m.group(4)) if m.group(3) == "+" else v - int(m.group(4))
            return str(v)
        if m.group(5) is not None:
            raw = codecs.escape_decode(m.group(5).encode("utf-8"))[0]
            return base64.b64encode(raw).decode()
        return m.group(6) * int(m.group(7))
    text = _TEMPLATE.sub(sub, text)
    return codecs.escape_decode(text.encode("utf-8"))[0]


def build_binary(spec: str, cas: CasMap | None) -> bytes:
    """Build binary request bytes from a step spec: packets separated by ' ; '.

    Packet: `OPNAME field=value ...` or `hex 80 0a ...`. Fields: k= v= (escaped text),
    flags= exp= delta= init= level= (numbers, packed into the opcode's standard extras),
    extras=HEX (replaces the extras), cas= opaque= magic= dt= vb= keylen= extlen=
    bodylen= (numbers; cas may be a {cas} template), op=NUM (with OPNAME `op`)."""
    out = b""
    for part in re.split(r"\s;\s", spec.strip()):
        toks = part.split()
        if not toks:
            continue
        name = toks[0]
        if name == "hex":
            out += bytes.fromhex("".join(toks[1:]))
            continue
        f = {}
        for t in toks[1:]:
            if "=" not in t:
                raise SessionError(f"bad binary field {t!r} in {part!r}")
            k, v = t.split("=", 1)
            f[k] = v

        def num(k, default=0):
            return int(expand(f[k], cas).decode(), 0) if k in f else default
        if name == "op":
            opcode = num("op")
        elif name in OPCODES:
            opcode = OPCODES[name]
        else:
            raise SessionError(f"unknown binary opcode {name!r}")
        key = expand(f["k"], cas) if "k" in f else b""
        value = expand(f["v"], cas) if "v" in f else b""
        if "extras" in f:
            extras = bytes.fromhex(f["extras"])
        elif name in STORE_OPS:
            extras = struct.pack(">II", num("flags"), num("exp"))
        elif name in ARITH_OPS:
            extras = struct.pack(">QQI", num("delta", 1), num("init"), num("exp"))
        elif name in EXP_OPS:
            extras = struct.pack(">I", num("exp"))
        elif name in ("flush", "flushq") and "exp" in f:
            extras = struct.pack(">I", num("exp"))
        elif name == "verbosity" and "level" in f:
            extras = struct.pack(">I", num("level"))
        else:
            extras = b""
        out += bin_request(opcode, key, value, extras, cas=num("cas"), opaque=num("opaque"),
                           magic=num("magic", 0x80), datatype=num("dt"), vbucket=num("vb"),
                           keylen=num("keylen") if "keylen" in f else None,
                           extlen=num("extlen") if "extlen" in f else None,
                           bodylen=num("bodylen") if "bodylen" in f else None)
    return out


# --------------------------------------------------------------------------- session files


@dataclass
class Step:
    kind: str            # "text" | "binary" | "sleep" | "conn" | "close" | "exit"
    arg: str = ""
    mode: str = "sentinel"      # "sentinel" (>), "quiet" (~) or "send" (| : no read)
    line: int = 0
    expect: str | None = None   # optional expected normalized memcached reply (escaped)

    @property
    def sentinel(self) -> bool:
        return self.mode == "sentinel"

    def label(self) -> str:
        if self.kind in ("text", "binary"):
            mark = {"sentinel": ">", "quiet": "~", "send": "|"}[self.mode]
            mark = "b" + mark if self.kind == "binary" else mark
            a = self.arg if len(self.arg) < 300 else self.arg[:300] + "..."
            return f"line {self.line}: {mark} {a}"
        return f"line {self.line}: @{self.kind} {self.arg}".rstrip()


@dataclass
class Session:
    name: str
    file: str
    line: int
    flags: list = field(default_factory=list)
    steps: list = field(default_factory=list)

    @property
    def id(self) -> str:
        return f"{Path(self.file).stem}::{self.name}"


def parse_file(path) -> list:
    """Parse one session file (format: tests/differential/README.md)."""
    path = Path(path)
    sessions, file_flags, cur = [], [], None
    for no, raw in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        where = f"{path.name}:{no}"
        if line.startswith("=== "):
            cur = Session(line[4:].strip(), str(path), no, list(file_flags))
            sessions.append(cur)
            continue
        if line.startswith("@flags"):
            flags = line[len("@flags"):].split()
            if cur is None:
                file_flags = flags
            else:
                cur.flags = flags
            continue
        if cur is None:
            raise SessionError(f"{where}: step outside of a session (start one with '=== name')")
        for prefix, kind, mode in (("b> ", "binary", "sentinel"), ("b~ ", "binary", "quiet"),
                                   ("b| ", "binary", "send"), ("> ", "text", "sentinel"),
                                   ("~ ", "text", "quiet"), ("| ", "text", "send")):
            if line.startswith(prefix):
                cur.steps.append(Step(kind, line[len(prefix):], mode, no))
                break
        else:
            if line.startswith("< ") or line == "<":
                if not cur.steps or cur.steps[-1].kind not in ("text", "binary") \
                        or cur.steps[-1].mode == "send":
                    raise SessionError(f"{where}: '<' must follow a step")
                prev = cur.steps[-1].expect or ""
                cur.steps[-1].expect = prev + line[2:]
            elif line.startswith("@"):
                word, _, arg = line[1:].partition(" ")
                if word not in ("sleep", "conn", "close", "exit", "chunk"):
                    raise SessionError(f"{where}: unknown directive @{word}")
                cur.steps.append(Step(word, arg.strip(), line=no))
            else:
                raise SessionError(f"{where}: cannot parse {line!r}")
    return sessions


def load_sessions(files=None) -> list:
    files = files or sorted(SESSIONS_DIR.glob("*.txt"))
    out = []
    for f in files:
        out.extend(parse_file(f))
    return out


# --------------------------------------------------------------------------- normalization


def _meta_flag(tok: bytes, cas: CasMap) -> bytes:
    if len(tok) > 1 and tok[:1] == b"c" and tok[1:].isdigit():
        return b"c" + cas.norm(int(tok[1:])).encode()
    if len(tok) > 1 and tok[:1] in (b"t", b"l") and re.fullmatch(rb"-?\d+", tok[1:]):
        return tok[:1] + b"~" + tok[1:]
    return tok


def norm_text(data: bytes, cas: CasMap) -> bytes:
    """Normalize a text/meta reply stream (see module doc)."""
    out, i, n = [], 0, len(data)
    while i < n:
        j = data.find(b"\r\n", i)
        if j < 0:
            out.append(data[i:])
            break
        line, i = data[i:j], j + 2
        toks = line.split(b" ")
        head = toks[0]
        skip = None
        if head == b"VALUE" and len(toks) in (4, 5) and toks[3].isdigit():
            if len(toks) == 5 and toks[4].isdigit():
                toks[4] = cas.norm(int(toks[4])).encode()
            skip = int(toks[3])
        elif head == b"VA" and len(toks) >= 2 and toks[1].isdigit():
            toks[2:] = [_meta_flag(t, cas) for t in toks[2:]]
            skip = int(toks[1])
        elif head in (b"HD", b"EN", b"NF", b"NS", b"EX"):
            toks[1:] = [_meta_flag(t, cas) for t in toks[1:]]
        elif head == b"ME":
            for x, t in enumerate(toks[2:], 2):
                k, eq, v = t.partition(b"=")
                if eq and k == b"cas" and v.isdigit():
                    toks[x] = b"cas=" + cas.norm(int(v)).encode()
                elif eq and k in (b"exp", b"la") and re.fullmatch(rb"-?\d+", v):
                    toks[x] = k + b"=~" + v
                elif eq and k in (b"cls", b"size"):
                    toks[x] = k + b"=<internal>"
        elif head == b"STAT" and len(toks) >= 3 and toks[1] in VOLATILE_STATS:
            toks[2:] = [b"<volatile>"]
        elif head == b"VERSION" and len(toks) == 2:
            toks[1] = b"<version>"
        out.append(b" ".join(toks) + b"\r\n")
        if skip is not None:
            out.append(data[i:i + skip + 2])
            i += skip + 2
    return b"".join(out)


def norm_binary(data: bytes, cas: CasMap) -> bytes:
    """Render a binary reply stream as readable, normalized text lines."""
    frames, rest = parse_bin_frames(data)
    out = []
    for f in frames:
        body, el, kl = f["body"], f["extlen"], f["keylen"]
        name = OPNAMES.get(f["op"], f"0x{f['op']:02x}")
        status = STATUS.get(f["status"], f"0x{f['status']:04x}")
        if el + kl <= len(body):
            ext, key, val = body[:el], body[el:el + kl], body[el + kl:]
            if f["op"] == OPCODES["stat"] and key in VOLATILE_STATS:
                val = b"<volatile>"
            if f["op"] == OPCODES["version"] and f["status"] == 0:
                val = b"<version>"
            shown = f"ext={ext.hex() or '-'} key={key!r} val={val!r}"
        else:
            shown = f"keylen={kl} extlen={el} body={body!r}"
        out.append(f"[{name} {status} opaque=0x{f['opaque']:x} cas={cas.norm(f['cas'])} "
                   f"dt={f['dt']} {shown}]\n".encode())
    if rest:
        out.append(b"raw:" + rest)
    return b"".join(out)


_FUZZ = re.compile(rb"~(-?\d+)")


def same(a: bytes, b: bytes) -> bool:
    """Equal, except time-relative numbers (marked ~N) may differ by 1 (but -1, which
    means 'never expires' for t/exp, never matches 0)."""
    if a == b:
        return True
    pa, pb = _FUZZ.split(a), _FUZZ.split(b)
    if len(pa) != len(pb) or len(pa) == 1:
        return False
    for x, (u, v) in enumerate(zip(pa, pb)):
        if x % 2 == 0:
            if u != v:
                return False
        else:
            iu, iv = int(u), int(v)
            if iu == iv:
                continue
            if abs(iu - iv) > 1 or -1 in (iu, iv) and max(iu, iv) >= 0:
                return False
    return True


# --------------------------------------------------------------------------- I/O


class Endpoint:
    """One server under test with its connections and CAS map for the current session."""

    def __init__(self, label, server):
        self.label, self.server = label, server
        self.conns: dict[str, socket.socket] = {}
        self.cas = CasMap()

    def sock(self, cid) -> socket.socket:
        s = self.conns.get(cid)
        if s is None:
            s = socket.create_connection(("127.0.0.1", self.server.port), timeout=5)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.conns[cid] = s
        return s

    def drop(self, cid):
        s = self.conns.pop(cid, None)
        if s is not None:
            s.close()

    def close_all(self):
        for cid in list(self.conns):
            self.drop(cid)


def _text_done(buf: bytes, need: int) -> bool:
    if not buf.endswith(b"MN\r\n"):
        return False
    return len(re.findall(rb"(?:^|\n)(?=MN\r\n)", buf)) >= need


def _binary_done(buf: bytes) -> bool:
    frames, _ = parse_bin_frames(buf)
    return any(f["op"] == 0x0A and f["opaque"] == SENTINEL_OPAQUE for f in frames)


def send(sock, data: bytes, chunk: int = 0):
    """sendall, or (chunk > 0) in pieces of `chunk` bytes, 1 ms apart (TCP_NODELAY is on,
    so each piece is its own segment)."""
    if not chunk:
        sock.sendall(data)
        return
    for i in range(0, len(data), chunk):
        sock.sendall(data[i:i + chunk])
        time.sleep(0.001)


def exchange(eps, cid, payloads, sentinel, kind, need_mn=1, chunk=0):
    """Send payloads[i] to eps[i] on connection cid, read the replies concurrently.
    Returns a list of (raw_reply, marker) where marker is '', '<EOF>' or a problem."""
    state = []
    for ep, data in zip(eps, payloads):
        st = dict(ep=ep, buf=bytearray(), done=False, marker="", last=time.monotonic())
        try:
            s = ep.sock(cid)
            send(s, data, chunk)
            st["sock"] = s
        except OSError as e:
            st.update(done=True, marker=f"<SEND FAILED: {e.__class__.__name__}>")
            ep.drop(cid)
        state.append(st)
    while True:
        live = [st for st in state if not st["done"]]
        if not live:
            break
        now = time.monotonic()
        for st in live:
            idle = now - st["last"]
            if not sentinel and idle >= QUIET:
                st["done"] = True
            elif sentinel and idle >= STALL:
                st.update(done=True, marker="<NO REPLY TO SENTINEL>")
        live = [st for st in state if not st["done"]]
        if not live:
            break
        wait = min((QUIET if not sentinel else STALL) - (now - st["last"]) for st in live)
        r, _, _ = select.select([st["sock"] for st in live], [], [], max(wait, 0.001))
        for st in live:
            if st["sock"] not in r:
                continue
            try:
                chunk = st["sock"].recv(1 << 20)
            except ConnectionResetError:
                chunk = b""     # closed with unread input (RST): same as a close for us
            except OSError as e:
                chunk, st["marker"] = b"", f"<RECV FAILED: {e.__class__.__name__}>"
            if not chunk:
                st["done"] = True
                st["marker"] = st["marker"] or "<EOF>"
                st["ep"].drop(cid)
                continue
            st["buf"] += chunk
            st["last"] = time.monotonic()
            if sentinel:
                if kind == "text" and _text_done(st["buf"], need_mn):
                    del st["buf"][-4:]
                    st["done"] = True
                elif kind == "binary" and _binary_done(st["buf"]):
                    del st["buf"][-24:]
                    st["done"] = True
    return [(bytes(st["buf"]), st["marker"]) for st in state]


# --------------------------------------------------------------------------- running


@dataclass
class StepResult:
    step: Step
    replies: list        # normalized bytes per endpoint (marker appended)
    raws: list

    @property
    def ok(self) -> bool:
        return len(self.replies) < 2 or same(self.replies[0], self.replies[1])


def _norm(kind, raw, marker, cas):
    body = norm_text(raw, cas) if kind == "text" else norm_binary(raw, cas)
    return body + marker.encode()


def run_session(session: Session, servers, labels=("memcached", "sqlcached"), on_step=None):
    """Run a session against already started servers (one per label).
    Returns the list of StepResult (all steps are run, even after a mismatch)."""
    eps = [Endpoint(lbl, srv) for lbl, srv in zip(labels, servers)]
    results, cid, chunk = [], "1", 0
    try:
        for step in session.steps:
            if step.kind == "sleep":
                time.sleep(float(step.arg))
                continue
            if step.kind == "chunk":
                chunk = int(step.arg or 0)
                continue
            if step.kind == "conn":
                cid = step.arg or "1"
                continue
            if step.kind == "close":
                for ep in eps:
                    ep.drop(cid)
                continue
            if step.kind == "exit":
                outs = []
                for ep in eps:
                    try:
                        rc = ep.server.proc.wait(float(step.arg or 5))
                        outs.append(f"<exited rc={rc}>".encode())
                    except Exception:
                        outs.append(b"<still running>")
                res = StepResult(step, outs, outs)
                results.append(res)
                if on_step:
                    on_step(res)
                continue
            payloads = []
            for ep in eps:
                if step.kind == "text":
                    data = expand(step.arg, ep.cas)
                    if step.sentinel:
                        data += b"mn\r\n"
                else:
                    data = build_binary(step.arg, ep.cas)
                    if step.sentinel:
                        data += bin_request(0x0A, opaque=SENTINEL_OPAQUE)
                payloads.append(data)
            if step.mode == "send":
                for ep, data in zip(eps, payloads):
                    try:
                        send(ep.sock(cid), data, chunk)
                    except OSError:
                        ep.drop(cid)
                continue
            need = 1 + len(re.findall(rb"(?:^|\n)mn(?:\r?\n| )", payloads[0][:-4])) \
                if step.kind == "text" else 1
            got = exchange(eps, cid, payloads, step.sentinel, step.kind, need, chunk)
            norms = [_norm(step.kind, raw, mk, ep.cas) for (raw, mk), ep in zip(got, eps)]
            res = StepResult(step, norms, [g[0] for g in got])
            results.append(res)
            if on_step:
                on_step(res)
            if step.sentinel and got[0][1] == "<NO REPLY TO SENTINEL>":
                raise SessionError(
                    f"{session.id} {step.label()}: memcached did not answer the sentinel; "
                    f"the step leaves the connection mid-command: write it as a '~' step")
            if step.expect is not None:
                want = expand(step.expect, None)
                if not same(want, norms[0]):
                    raise SessionError(
                        f"{session.id} {step.label()}: memcached itself replied "
                        f"{norms[0]!r}, the session file expects {want!r}")
    finally:
        for ep in eps:
            ep.close_all()
    return results


def show_bytes(b: bytes, limit=600) -> str:
    r = repr(b)
    return r if len(r) <= limit else r[:limit] + f"... ({len(b)} bytes)"


def describe_mismatch(session: Session, res: StepResult, labels=("memcached", "sqlcached")):
    a, b = res.replies
    n = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    lines = [f"session {session.id!r} ({Path(session.file).name}:{session.line}, "
             f"flags {' '.join(session.flags) or '(default)'})",
             f"  step   {res.step.label()}"]
    if len(a) > 400 or len(b) > 400:
        lo = max(0, n - 100)
        lines.append(f"  first difference at byte {n} (lengths {len(a)} vs {len(b)})")
        lines.append(f"  {labels[0]:9} [{lo}:] {show_bytes(a[lo:lo + 300])}")
        lines.append(f"  {labels[1]:9} [{lo}:] {show_bytes(b[lo:lo + 300])}")
    else:
        lines.append(f"  {labels[0]:9} {a!r}")
        lines.append(f"  {labels[1]:9} {b!r}")
    return "\n".join(lines)


def start_servers(session: Session, mc_only=False):
    if mc_only:
        return [start_memcached(*session.flags)]
    return list(start_pair(*session.flags))


def stop_servers(servers):
    for s in servers:
        s.kill_nowait()
    for s in servers:
        s.reap()


ATTEMPTS = int(os.environ.get("MCDIFF_ATTEMPTS", "3"))


def run_differential(session: Session, attempts: int = ATTEMPTS):
    """Run a session on fresh memcached+sqlcached pairs until one run matches completely,
    at most `attempts` runs. Retrying absorbs memcached's own races (e.g. incr/decr rewrite
    the value in place, keeping its padded length, only when no background thread holds a
    reference to the item; otherwise they store a new, shorter item).
    Returns (results of the last run, runs made, results of the first run)."""
    first = None
    for run in range(1, attempts + 1):
        servers = start_servers(session)
        try:
            results = run_session(session, servers)
        finally:
            stop_servers(servers)
        if first is None:
            first = results
        if all(r.ok for r in results):
            return results, run, first
    return results, attempts, first


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="*")
    ap.add_argument("-k", default="", help="only sessions whose id contains this")
    ap.add_argument("--show", action="store_true", help="print every step and reply")
    ap.add_argument("--mc-only", action="store_true", help="run against memcached only")
    args = ap.parse_args(argv)
    files = [Path(f) for f in args.files] or None
    sessions = [s for s in load_sessions(files) if args.k in s.id]
    labels = ("memcached",) if args.mc_only else ("memcached", "sqlcached")
    bad = nsteps = flaky = 0
    t0 = time.monotonic()
    for sess in sessions:
        if args.show:
            print(f"=== {sess.id}  flags: {' '.join(sess.flags)}")

        def on_step(res, sess=sess):
            if not args.show:
                return
            print(f"  {res.step.label()}")
            print(f"     {labels[0]}: {show_bytes(res.replies[0], 2000)}")
            if not res.ok:
                print(f"  !! {labels[1]}: {show_bytes(res.replies[1], 2000)}")
        try:
            if args.show or args.mc_only:
                servers = start_servers(sess, args.mc_only)
                try:
                    results = run_session(sess, servers, labels, on_step)
                finally:
                    stop_servers(servers)
            else:
                results, runs, first = run_differential(sess)
                if runs > 1 and all(r.ok for r in results):
                    flaky += 1
                    print(f"FLAKY (matched on run {runs}): {sess.id}: " + "; ".join(
                        r.step.label() for r in first if not r.ok) + "\n")
        except SessionError as e:
            print(f"SESSION ERROR: {e}")
            bad += 1
            continue
        nsteps += len(results)
        for res in results:
            if not res.ok:
                bad += 1
                if not args.show:
                    print(describe_mismatch(sess, res, labels) + "\n")
    print(f"{len(sessions)} sessions, {nsteps} steps, {bad} mismatches, {flaky} flaky sessions "
          f"in {time.monotonic() - t0:.1f}s")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
