"""Differential checks that cannot be a fixed byte script: stats output (names, settings
values, counters after a workload) and behaviour when memory runs out (-M / eviction).

Both servers are started with identical flags; memcached 1.6.18 is the reference."""
import os
import re
import socket
import struct

import pytest

import mcdiff
from harness.servers import sqlcached_bin, start_pair


@pytest.fixture(autouse=True)
def _require_binary():
    b = sqlcached_bin()
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        pytest.fail(f"sqlcached binary not found at {b}")


class Client:
    """Minimal blocking text-protocol client."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.f = self.sock.makefile("rb")

    def close(self):
        self.f.close()
        self.sock.close()

    def cmd(self, data: bytes) -> bytes:
        """Send a command, return its one-line reply."""
        self.sock.sendall(data)
        return self.f.readline()

    def stats(self, group=b"") -> list:
        """[(name, value)] of `stats [group]`, in server order."""
        self.sock.sendall(b"stats" + (b" " + group if group else b"") + b"\r\n")
        out = []
        while True:
            line = self.f.readline()
            if not line or line == b"END\r\n":
                return out
            parts = line.rstrip(b"\r\n").split(b" ", 2)
            assert parts[0] == b"STAT", line
            out.append((parts[1].decode(), parts[2].decode() if len(parts) > 2 else ""))

    def get_value(self, key: bytes):
        self.sock.sendall(b"get " + key + b"\r\n")
        line = self.f.readline()
        if line == b"END\r\n":
            return None
        n = int(line.split()[3])
        data = self.f.read(n + 2)[:-2]
        assert self.f.readline() == b"END\r\n"
        return data


class Pair:
    def __init__(self, *flags):
        self.servers = start_pair(*flags)
        self.mc, self.sq = (Client(s.port) for s in self.servers)

    def close(self):
        self.mc.close()
        self.sq.close()
        mcdiff.stop_servers(self.servers)


@pytest.fixture
def pair_factory():
    pairs = []

    def make(*flags):
        p = Pair(*flags)
        pairs.append(p)
        return p
    yield make
    for p in pairs:
        p.close()


# Stats that describe memcached's own machinery (libevent, slab allocator, LRU threads,
# hash table, logger, response/read buffers, extstore, TLS, NAPI): an implementation
# without that machinery may leave them out. Every other memcached stat must be there.
INTERNAL_STATS = re.compile(
    r"libevent|response_obj_.*|read_buf_.*|reserved_fds|hash_.*|slab_.*|slabs_moved|"
    r"lru_.*|malloc_fails|log_.*|unexpected_napi_ids|round_robin_fallback|evicted_active|"
    r"crawler_.*|lrutail_reflocked|moves_.*|direct_reclaims")
INTERNAL_SETTINGS = re.compile(
    r"growth_factor|chunk_size|num_threads_per_udp|hashpower_init|slab_.*|lru_.*|"
    r"tail_repair_time|hash_algorithm|hot_.*|warm_.*|temp_lru|temporary_ttl|"
    r"watcher_logbuf_size|worker_logbuf_size|read_buf_mem_limit|track_sizes|"
    r"inline_ascii_response|ext_.*|ssl_(?!enabled$).*|num_napi_ids|memory_file")


@pytest.mark.parametrize("group,internal", [("", INTERNAL_STATS),
                                            ("settings", INTERNAL_SETTINGS)],
                         ids=["stats", "stats settings"])
def test_stats_names_match(pair_factory, group, internal):
    """`stats` and `stats settings` have every memcached name that is not about
    memcached's internals, in memcached's order (monitoring tools scrape them).
    Names of sqlcached's own are allowed."""
    p = pair_factory()
    ref = [n for n, _ in p.mc.stats(group.encode())]
    got = [n for n, _ in p.sq.stats(group.encode())]
    missing = [n for n in ref if n not in got and not internal.fullmatch(n)]
    common_ref = [n for n in ref if n in got]
    common_got = [n for n in got if n in ref]
    extra = [n for n in got if n not in ref]
    assert not missing and common_ref == common_got, (
        f"`stats {group}`: missing {missing}; order of common names differs: "
        f"{common_ref != common_got}\nmemcached: {common_ref}\nsqlcached: {common_got}\n"
        f"(sqlcached-only names, allowed: {extra})")


SETTINGS_COMPARED = ["maxbytes", "maxconns", "udpport", "verbosity", "evictions",
                     "num_threads", "cas_enabled", "item_size_max", "binding_protocol",
                     "flush_enabled", "shutdown_command", "detail_enabled"]


@pytest.mark.parametrize("flags", [
    (),
    ("-m", "32", "-c", "500", "-t", "2", "-I", "2m"),
    ("-C", "-M", "-A", "-B", "ascii", "-v"),
    ("-B", "auto", "-I", "512k"),
], ids=lambda f: " ".join(f) or "defaults")
def test_stats_settings_follow_flags(pair_factory, flags):
    """Settings that reflect the command line have memcached's values; tcpport is the
    server's own port."""
    p = pair_factory(*flags)
    ref = dict(p.mc.stats(b"settings"))
    got = dict(p.sq.stats(b"settings"))
    diffs = {k: (ref.get(k), got.get(k)) for k in SETTINGS_COMPARED if ref.get(k) != got.get(k)}
    assert not diffs, f"flags {flags}: settings (memcached, sqlcached) differ: {diffs}"
    assert got.get("tcpport") == str(p.servers[1].port)


# Not compared: curr_items, total_items, get_expired, get_flushed. memcached's LRU
# crawler/maintainer may reclaim expired or flushed items, or hold an item reference
# (making incr copy the item), at any moment: memcached races against itself on them.
COUNTERS = ["cmd_get", "cmd_set", "cmd_flush", "cmd_touch", "cmd_meta", "get_hits", "get_misses",
            "delete_misses", "delete_hits", "incr_misses",
            "incr_hits", "decr_misses", "decr_hits", "cas_misses", "cas_hits", "cas_badval",
            "touch_hits", "touch_misses", "store_too_large",
            "limit_maxbytes", "threads", "evictions", "auth_cmds", "auth_errors"]

WORKLOAD = [
    b"flush_all\r\n", b"set a 0 0 1\r\n1\r\n", b"set b 0 0 1\r\n2\r\n", b"add a 0 0 1\r\n3\r\n",
    b"replace c 0 0 1\r\n3\r\n", b"append a 0 0 1\r\n0\r\n", b"prepend b 0 0 1\r\n1\r\n",
    b"get a b c d\r\n", b"gets a\r\n", b"delete b\r\n", b"delete b\r\n",
    b"incr a 5\r\n", b"incr zz 1\r\n", b"decr a 1\r\n", b"decr zz 1\r\n",
    b"cas a 0 0 1 1\r\nx\r\n", b"cas q 0 0 1 1\r\nx\r\n", b"touch a 100\r\n", b"touch q 1\r\n",
    b"gat 100 a q\r\n", b"gats 100 a\r\n",
    b"set big 0 0 2000000\r\n" + b"x" * 2000000 + b"\r\n",
    b"mg a v\r\n", b"mg q v\r\n", b"ms m 1\r\nx\r\n", b"md m\r\n", b"md m\r\n",
    b"ma a\r\n", b"ma q\r\n", b"ma a MD\r\n", b"set g 0 0 1\r\nx\r\n",
]


def _run_text(client, cmds):
    for c in cmds:
        client.sock.sendall(c)
    client.sock.sendall(b"mn\r\n")
    buf = b""
    while not buf.endswith(b"MN\r\n"):
        chunk = client.sock.recv(65536)
        assert chunk, "connection closed during the workload"
        buf += chunk
    return buf


def test_stats_counters_after_workload(pair_factory):
    """After the same text + meta workload, the command/hit/miss counters agree."""
    p = pair_factory()
    for c in (p.mc, p.sq):
        _run_text(c, WORKLOAD)
        # binary get/set/incr/delete on another connection
        b = socket.create_connection(("127.0.0.1", c.sock.getpeername()[1]), timeout=10)
        pkts = (mcdiff.build_binary("set k=bin v=1 ; get k=bin ; get k=nobin ; incr k=bin "
                                    "delta=2 ; delete k=bin ; touch k=nobin exp=5", None)
                + mcdiff.bin_request(0x0A, opaque=1))
        b.sendall(pkts)
        buf = b""
        while not mcdiff._binary_done(buf.replace(struct.pack(">I", 1),
                                                  struct.pack(">I", mcdiff.SENTINEL_OPAQUE))):
            chunk = b.recv(65536)
            assert chunk
            buf += chunk
        b.close()
    ref, got = dict(p.mc.stats()), dict(p.sq.stats())
    diffs = {k: (ref.get(k), got.get(k)) for k in COUNTERS if ref.get(k) != got.get(k)}
    assert not diffs, f"counters (memcached, sqlcached) differ: {diffs}"


def test_stats_reset_clears_counters(pair_factory):
    p = pair_factory()
    for c in (p.mc, p.sq):
        _run_text(c, [b"set a 0 0 1\r\n1\r\n", b"get a b\r\n", b"stats reset\r\n"])
    ref, got = dict(p.mc.stats()), dict(p.sq.stats())
    diffs = {k: (ref.get(k), got.get(k)) for k in COUNTERS if ref.get(k) != got.get(k)}
    assert not diffs, f"counters after `stats reset` (memcached, sqlcached) differ: {diffs}"


def _fill(client, n=200, size=100_000):
    """Store n values of `size` bytes; return (index of the first failure, its reply)."""
    for i in range(n):
        r = client.cmd(b"set k%d 0 0 %d\r\n" % (i, size) + b"x" * size + b"\r\n")
        if r != b"STORED\r\n":
            return i, r
    return None, None


def test_out_of_memory_with_M_returns_error_and_keeps_items(pair_factory):
    """-M -m 2: once memory is full a set fails with memcached's exact error line and
    nothing already stored is evicted. (How many items fit is allocator specific.)"""
    p = pair_factory("-M", "-m", "2")
    mc_i, mc_r = _fill(p.mc)
    sq_i, sq_r = _fill(p.sq)
    assert mc_r == b"SERVER_ERROR out of memory storing object\r\n", (mc_i, mc_r)
    assert sq_r == mc_r, f"sqlcached: first failing set #{sq_i} replied {sq_r!r}"
    assert sq_i and sq_i > 0
    for c, last in ((p.mc, mc_i), (p.sq, sq_i)):
        assert c.get_value(b"k0") == b"x" * 100_000
        assert c.get_value(b"k%d" % (last - 1)) == b"x" * 100_000
    assert p.sq.cmd(b"version\r\n").startswith(b"VERSION ")


def test_memory_limit_evicts_oldest_without_M(pair_factory):
    """-m 2 without -M: 20 MB of sets all succeed, the oldest items are evicted and the
    newest are still there."""
    p = pair_factory("-m", "2")
    for c in (p.mc, p.sq):
        i, r = _fill(c)
        assert i is None, f"set #{i} failed with {r!r}"
        assert c.get_value(b"k0") is None
        assert c.get_value(b"k199") == b"x" * 100_000
    ref, got = dict(p.mc.stats()), dict(p.sq.stats())
    assert int(got["evictions"]) > 0, got.get("evictions")
    assert ref["limit_maxbytes"] == got["limit_maxbytes"]


def _start_under_nofile(argv, hard):
    """Run argv with RLIMIT_NOFILE soft = hard = `hard` for 1.5 s: (exit status or None if
    still running, stderr)."""
    import resource
    import subprocess

    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    p = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, preexec_fn=limit)
    try:
        p.wait(1.5)
    except subprocess.TimeoutExpired:
        p.terminate()
        p.wait()
        return None, p.stderr.read().decode()
    return p.returncode, p.stderr.read().decode()


def test_conn_limit_above_the_open_files_limit_is_memcached_s_error():
    """-c above what RLIMIT_NOFILE allows: memcached raises its limit at start and, when it
    cannot, prints its error and exits 71 (EX_OSERR); sqlcached does the same, and runs
    when -c fits (raising the soft limit as needed)."""
    from harness.servers import free_port, memcached_argv, sqlcached_argv

    line = "failed to set rlimit for open files. Try starting as root or requesting smaller maxconns value."
    for argv in (memcached_argv, sqlcached_argv):
        port = free_port()
        code, err = _start_under_nofile(argv(port, "-c", "100000"), 512)
        if code is None and os.geteuid() == 0:
            pytest.skip("running as root with CAP_SYS_RESOURCE: the hard limit can be raised")
        assert (code, line in err) == (71, True), (argv(port), code, err)
        code, err = _start_under_nofile(argv(free_port(), "-c", "400"), 512)
        assert code is None, (argv(port), code, err)
