"""memcached's ASCII authentication (-Y FILE, issue 12 item 1), side by side with Debian's
memcached 1.6.18 started with the same file: every session below must get the same bytes
from both, including memcached's quirks (only the last reply of a batch of unauthenticated
pipelined commands is sent; `quit` is refused before authentication). Plus the start-up
errors, `stats`/`stats settings`, and SIGHUP reloading the file."""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import (assert_same_sessions, chunked_session, free_port, memcached_argv, sqlcached_argv,  # noqa: E402
                             start_memcached, start_sqlcached)

# Each session: chunks sent one at a time, the reply read after each (a short pause lets
# both servers answer everything they will answer).
SESSIONS = [
    [b"get foo\r\n", b"version\r\n", b"stats\r\n", b"mg foo v\r\n", b"quit\r\n"],
    [b"set x 0 0 9\r\nalice bad\r\n", b"get x\r\n"],
    [b"set x 0 0 12\r\nalice secret\r\n", b"get x\r\n", b"set x 0 0 1\r\nv\r\n", b"get x\r\n", b"mg x v\r\n"],
    [b"set x 0 0 5\r\nalice\r\n", b"set x 0 0 300\r\n" + b"a" * 300 + b"\r\n"],
    [b"add x 0 0 12\r\nalice secret\r\n", b"cas x 0 0 12 1\r\nalice secret\r\n"],
    [b"set x 0 0 12 noreply\r\nalice secret\r\n", b"get x\r\n"],
    [b"set x 0 0 9\r\nbob pw2  \r\n", b"delete x\r\n"],
    [b"set x 0 0 bad\r\n", b"set x 0 0\r\n", b"\r\n", b"x\r\n"],
    [b"set x 0 0 12\r\nalice secret", b"\r\n", b"set x 0 0 9\r\nalice bad\r\n", b"get x\r\n"],
    [b"set x 0 0 12\r\nalice secretXXget a\r\n", b"get b\r\n"],
    [b"get a\r\nget b\r\nget c\r\n", b"set x 0 0 9\r\nalice bad\r\nget a\r\n"],
    [b"get a\r\nset x 0 0 12\r\nalice secret\r\n", b"get b\r\n"],
    [b"set x 0 0 12\r\nalice secret\r\nget a\r\nset a 0 0 1\r\nz\r\nget a\r\n"],
    [b"get a\r\n", b"set x 0 0 12\r\n", b"alice secret\r\n", b"get b\r\n"],
    [b"set x 0 0 13\r\nalice secret \r\n", b"set k 0 0 9\r\nalice  \0x\r\n"],
    [b"set x 0 0 16\r\nbob pw2 whatever\r\n", b"stats detail dump\r\n"],
]


def run_session(port, chunks):
    return chunked_session(port, chunks)


@pytest.fixture(scope="module")
def authfile(tmp_path_factory):
    p = tmp_path_factory.mktemp("auth") / "users"
    p.write_text("alice:secret\nbob:pw2\n")
    os.chmod(p, 0o644)
    return p


@pytest.fixture(scope="module")
def pair(authfile):
    mc = start_memcached("-Y", str(authfile))
    sq = start_sqlcached("-Y", str(authfile))
    yield mc, sq
    mc.stop()
    sq.stop()


@pytest.mark.parametrize("i", range(len(SESSIONS)))
def test_session_matches_memcached(pair, i):
    mc, sq = pair
    assert_same_sessions(mc.port, sq.port, SESSIONS[i])


def stats(port, sub=b""):
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"set x 0 0 12\r\nalice secret\r\nstats " + sub + b"\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(65536)
    return dict(line.split(" ", 2)[1:] for line in buf.decode().split("\r\n") if line.startswith("STAT "))


def test_stats_count_attempts_like_memcached(authfile):
    """auth_cmds counts checked credentials, auth_errors the wrong ones (format errors count
    in neither); `stats settings` shows the file's path as auth_enabled_ascii."""
    for start in (start_memcached, start_sqlcached):
        with start("-Y", str(authfile)) as s:
            run_session(s.port, [b"set x 0 0 9\r\nalice bad\r\n", b"set x 0 0 5\r\nalice\r\n"])
            st = stats(s.port)
            assert (st["auth_cmds"], st["auth_errors"]) == ("2", "1"), (start.__name__, st)
            assert stats(s.port, b"settings")["auth_enabled_ascii"] == str(authfile), start.__name__


def start_error(argv):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
    return p.returncode, p.stderr.strip()


@pytest.mark.parametrize("content,flags", [
    (None, []),                                  # missing file
    ("alice:secret\nnocolon\n", []),             # malformed line
    ("alice:secret\n\nbob:pw\n", []),            # a blank line is malformed too
    ("alice:secret\n", ["-U", "11299"]),         # UDP cannot be authenticated
    ("alice:secret\n", ["-B", "binary"]),        # nor the binary protocol
])
def test_start_errors_match_memcached(tmp_path, content, flags):
    f = tmp_path / "users"
    if content is not None:
        f.write_text(content)
        os.chmod(f, 0o644)
    port = free_port()
    mc = start_error(memcached_argv(port, *flags, "-Y", str(f)))
    sq = start_error(sqlcached_argv(port, *flags, "-Y", str(f)))
    assert mc[0] != 0 and sq[0] == mc[0], (mc, sq)
    assert mc[1] in sq[1], (mc, sq)


def test_sighup_reloads_the_file(tmp_path):
    f = tmp_path / "users"
    f.write_text("alice:secret\n")
    with start_sqlcached("-Y", str(f), log=tmp_path / "s.log") as s:
        ok = [b"set x 0 0 12\r\nalice secret\r\n"]
        assert run_session(s.port, ok) == [b"STORED\r\n"]
        f.write_text("carol:new\n")
        s.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert run_session(s.port, ok) == [b"CLIENT_ERROR authentication failure\r\n"]
        assert run_session(s.port, [b"set x 0 0 9\r\ncarol new\r\n"]) == [b"STORED\r\n"]
        # A broken file is not loaded: the users before stay, and the log says why.
        f.write_text("no colon here\n")
        s.proc.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        assert run_session(s.port, [b"set x 0 0 9\r\ncarol new\r\n"]) == [b"STORED\r\n"]
        assert s.proc.poll() is None
    log = (tmp_path / "s.log").read_text()
    assert "reloaded: 1 users" in log and "not reloaded" in log and "malformed entry" in log, log


def test_no_open_port_warning_with_auth(tmp_path):
    f = tmp_path / "users"
    f.write_text("alice:secret\n")
    with start_sqlcached("-Y", str(f), log=tmp_path / "s.log"):
        pass
    assert "no authentication" not in (tmp_path / "s.log").read_text()
