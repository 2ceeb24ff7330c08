"""memcached's binary SASL authentication (-S, issue 12 item 2), side by side with Debian's
memcached 1.6.18: memcached reads the users from a Cyrus sasldb made by `saslpasswd2`
(SASL_CONF_PATH with `mech_list: plain`), sqlcached from the MEMCACHED_SASL_PWDB file
(memcached's built-in password database format) with the same users; every session below
must get the same bytes from both: mechanisms, PLAIN in one step or two, wrong passwords,
commands before authentication (refused and closed), a SASL command forgetting an earlier
login, mechanism names too long, and the auth_* statistics and start-up errors."""
import os
import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import (Server, assert_same_sessions, chunked_session, free_port,  # noqa: E402
                             memcached_argv, sqlcached_argv, sqlcached_bin, start_memcached, start_sqlcached)

SASLPASSWD = shutil.which("saslpasswd2") or "/usr/sbin/saslpasswd2"
USERS = {"alice": "secret", "bob": "pw2"}

pytestmark = pytest.mark.skipif(not os.path.exists(SASLPASSWD), reason="saslpasswd2 (sasl2-bin) is not installed")

GET, SET, QUIET_GET, NOOP, VERSION, STAT = 0x00, 0x01, 0x09, 0x0A, 0x0B, 0x10
LIST, AUTH, STEP = 0x20, 0x21, 0x22


def req(op, key=b"", value=b"", extras=b"", opaque=0):
    return struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, len(key) + len(extras) + len(value),
                       opaque, 0) + extras + key + value


def auth(user="alice", password="secret", mech=b"PLAIN", opaque=0):
    return req(AUTH, mech, f"\0{user}\0{password}".encode(), opaque=opaque)


SET_K = req(SET, b"k", b"v", extras=b"\0" * 8)
SESSIONS = [
    [req(LIST)],
    [req(GET, b"k"), req(VERSION)],
    [req(VERSION, opaque=9), req(NOOP)],
    [req(STAT)],
    [req(QUIET_GET, b"k")],
    [SET_K],
    [auth(opaque=7), SET_K, req(GET, b"k"), req(NOOP)],
    [auth(password="wrong"), req(GET, b"k")],
    [auth(password="wrong"), auth(), req(GET, b"k")],
    [req(AUTH, b"PLAIN"), req(STEP, b"PLAIN", b"\0alice\0secret"), req(GET, b"k")],
    [req(AUTH, b"PLAIN"), req(STEP, b"PLAIN", b"\0alice\0secret"), req(STEP, b"PLAIN", b"\0alice\0secret")],
    [auth(mech=b"CRAM-MD5"), req(GET, b"k")],
    [auth(mech=b"plain"), req(GET, b"k")],
    [req(STEP, b"PLAIN", b"\0alice\0secret"), req(GET, b"k")],
    [req(AUTH, b"", b"\0alice\0secret")],
    [req(AUTH, b"X" * 40, b"\0alice\0secret"), req(VERSION)],
    [req(AUTH, b"PLAIN", b"alice\0alice\0secret"), req(GET, b"k")],
    [req(AUTH, b"PLAIN", b"bob\0alice\0secret"), req(GET, b"k")],
    [req(AUTH, b"PLAIN", b"alicesecret"), req(GET, b"k")],
    [auth(password=""), req(VERSION)],
    [auth(), req(LIST), req(GET, b"k")],
    [auth(), auth(password="wrong"), req(GET, b"k")],
    [auth(), req(STEP, b"PLAIN", b"\0alice\0secret"), req(GET, b"k")],
    [auth("bob", "pw2"), req(GET, b"k")],
    [req(LIST, b"x"), req(VERSION)],
    [auth() + SET_K + req(GET, b"k") + req(VERSION)],
    [b"version\r\n" + b"x" * 30],
]


@pytest.fixture(scope="module")
def sasl_env(tmp_path_factory):
    d = tmp_path_factory.mktemp("sasl")
    realm = socket.gethostname()
    db = d / "sasldb2"
    for user, password in USERS.items():
        subprocess.run([SASLPASSWD, "-p", "-c", "-a", "memcached", "-f", str(db), "-u", realm, user],
                       input=password.encode(), check=True, timeout=30)
    os.chmod(db, 0o644)
    (d / "memcached.conf").write_text(f"mech_list: plain\nsasldb_path: {db}\n")
    pwdb = d / "pwdb"
    pwdb.write_text("".join(f"{u}:{p}\n" for u, p in USERS.items()))
    return {"memcached": {"SASL_CONF_PATH": str(d)}, "sqlcached": {"MEMCACHED_SASL_PWDB": str(pwdb)}, "pwdb": pwdb}


@pytest.fixture(scope="module")
def pair(sasl_env):
    mc = start_memcached("-S", env=sasl_env["memcached"])
    sq = start_sqlcached("-S", env=sasl_env["sqlcached"])
    yield mc, sq
    mc.stop()
    sq.stop()


@pytest.mark.parametrize("i", range(len(SESSIONS)))
def test_session_matches_memcached(pair, i):
    mc, sq = pair
    assert_same_sessions(mc.port, sq.port, SESSIONS[i])


def binary_stats(port, sub=b""):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(auth() + req(STAT, sub))
        buf = b""
        out = {}
        while True:
            while len(buf) < 24 or len(buf) < 24 + struct.unpack(">I", buf[8:12])[0]:
                buf += s.recv(65536)
            kl, bl = struct.unpack(">H", buf[2:4])[0], struct.unpack(">I", buf[8:12])[0]
            op, key, value = buf[1], buf[24:24 + kl], buf[24 + kl:24 + bl]
            buf = buf[24 + bl:]
            if op == STAT:
                if not key:
                    return out
                out[key.decode()] = value.decode()


def test_stats_count_like_memcached(sasl_env):
    """auth_cmds counts finished attempts (not a PLAIN that asks for its step), auth_errors
    the failed ones; stats settings shows auth_enabled_sasl and the binary protocol."""
    counts = {}
    for name, start in (("memcached", start_memcached), ("sqlcached", start_sqlcached)):
        with start("-S", env=sasl_env[name]) as s:
            chunked_session(s.port, [auth(password="bad"), auth(), req(AUTH, b"PLAIN"), req(STEP, b"", b"x")])
            chunked_session(s.port, [req(STEP, b"PLAIN", b"\0alice\0secret")])
            st = binary_stats(s.port)
            settings = binary_stats(s.port, b"settings")
            counts[name] = (st["auth_cmds"], st["auth_errors"], settings["auth_enabled_sasl"],
                            settings["binding_protocol"])
    assert counts["sqlcached"] == counts["memcached"], counts


def test_password_file_is_read_at_each_attempt(sasl_env, tmp_path):
    pwdb = tmp_path / "pwdb"
    pwdb.write_text("alice:secret\n")
    with start_sqlcached("-S", env={"MEMCACHED_SASL_PWDB": str(pwdb)}) as s:
        ok = chunked_session(s.port, [auth()])[0]
        assert ok[5:8] == b"\x00\x00\x00" and ok.endswith(b"Authenticated")
        pwdb.write_text("alice:changed\n")
        assert chunked_session(s.port, [auth()])[0].endswith(b"Auth failure.")
        assert chunked_session(s.port, [auth(password="changed")])[0].endswith(b"Authenticated")


def start_error(argv, env=None):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=20, env={**os.environ, **(env or {})})
    return p.returncode, p.stderr.strip()


@pytest.mark.parametrize("flags", [["-B", "ascii"], ["-U", "11299"]])
def test_start_errors_match_memcached(sasl_env, flags):
    port = free_port()
    mc = start_error(memcached_argv(port, "-S", *flags), sasl_env["memcached"])
    sq = start_error(sqlcached_argv(port, "-S", *flags), sasl_env["sqlcached"])
    assert mc[0] != 0 and sq[0] == mc[0] and mc[1] in sq[1], (mc, sq)


def test_without_a_password_file_sqlcached_says_why(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MEMCACHED_SASL_PWDB"}
    p = subprocess.run(sqlcached_argv(free_port(), "-S"), capture_output=True, text=True, timeout=20, env=env)
    assert p.returncode == 64 and "MEMCACHED_SASL_PWDB" in p.stderr, p
    code, err = start_error(sqlcached_argv(free_port(), "-S"), {"MEMCACHED_SASL_PWDB": str(tmp_path / "none")})
    assert code == 64 and "No such file" in err, err


def test_no_open_port_warning_with_sasl(sasl_env, tmp_path):
    log = tmp_path / "s.log"
    port = free_port()
    argv = [sqlcached_bin(), "-S", "-l", "0.0.0.0", "-p", str(port)]
    with Server(argv, port, log=log, env=sasl_env["sqlcached"]):
        pass
    text = log.read_text()
    assert "listening on TCP 0.0.0.0" in text and "no authentication" not in text, text


def test_oversized_sasl_data_is_not_buffered(pair):
    """Bounded before authentication: a SASL_AUTH claiming 100 MB is refused from its header
    ("Out of memory", as memcached answers SASL data it cannot put in an item) and its body
    skipped as it arrives. memcached 1.6.18 instead reads such a body into a chunked item
    (up to its -m), so this one is sqlcached's own."""
    mc, sq = pair
    head = struct.pack(">BBHBBHIIQ", 0x80, AUTH, 5, 0, 0, 0, 100_000_000, 3, 0) + b"PLAIN"
    got = chunked_session(sq.port, [head + b"\0" * 1000])[0]
    assert got[:2] == b"\x81\x21" and got[6:8] == b"\x00\x82" and got.endswith(b"Out of memory"), got


def test_password_file_without_sasl_is_said_at_start(sasl_env, tmp_path):
    log = tmp_path / "s.log"
    with start_sqlcached(env=sasl_env["sqlcached"], log=log):
        pass
    assert "MEMCACHED_SASL_PWDB is set but -S is not" in log.read_text()
