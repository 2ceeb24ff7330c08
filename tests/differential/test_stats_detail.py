"""`stats detail` (on, off, dump, the -D delimiter) and `stats reset` clearing it, byte for
byte against Debian's memcached 1.6.18 (issue 12, item 6): the same commands on both, the
same dump (memcached's order: by bucket of its 256-bucket prefix table, newest first)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import chunked_session, start_memcached, start_sqlcached  # noqa: E402


def session(port, chunks):
    return chunked_session(port, chunks, pause=0.08)


WORKLOAD = (b"set a:1 0 0 1\r\nx\r\nget a:1 a:2 b:1 nokey\r\ndelete a:1\r\ndelete zz:9\r\n"
            b"set b:2 0 0 1\r\ny\r\ngets b:2\r\ntouch a:1 10\r\nincr b:2 1\r\nadd user:1 0 0 1\r\nu\r\n"
            b"add user:1 0 0 1\r\nu\r\nreplace sess:4 0 0 1\r\ns\r\nappend b:2 0 0 1\r\nq\r\n"
            b"gat 0 user:1 sess:4\r\nmg user:1 v\r\nms k:2 1\r\nv\r\nmd k:2\r\n")


@pytest.mark.parametrize("flags,chunks", [
    ([], [b"stats detail dump\r\n", b"stats detail on\r\n", WORKLOAD, b"stats detail dump\r\n",
          b"stats reset\r\n", b"stats detail dump\r\n", b"stats detail off\r\n", b"get a:1\r\n",
          b"stats detail dump\r\n", b"stats detail\r\n", b"stats detail foo\r\n"]),
    (["-D", "/"], [b"stats detail on\r\nset p/1 0 0 1\r\nx\r\nget p/1 q:1 r/2\r\n", b"stats detail dump\r\n"]),
])
def test_stats_detail_matches_memcached(flags, chunks):
    with start_memcached(*flags) as mc, start_sqlcached(*flags) as sq:
        want = session(mc.port, chunks)
        got = session(sq.port, chunks)
    for c, w, g in zip(chunks, want, got):
        assert g == w, f"after {c!r}\nmemcached: {w!r}\nsqlcached: {g!r}"


def test_detail_enabled_setting():
    with start_sqlcached() as s:
        out = session(s.port, [b"stats detail on\r\nstats settings\r\n"])[0]
        assert b"STAT detail_enabled yes\r\n" in out
        out = session(s.port, [b"stats detail off\r\nstats settings\r\n"])[0]
        assert b"STAT detail_enabled no\r\n" in out
