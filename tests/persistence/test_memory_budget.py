"""`-m` is the budget of everything the server holds (issue 44, docs/memory.md): with
--data-dir, a server runs the mixed workload of docs/persistence.md and a bulk load inside a
memory cgroup limited to `-m` plus the documented overhead (1.1 x -m + 24 MiB), and must
neither be OOM-killed nor ever hold more resident memory than that (its peak, VmHWM).

cgroup v2 where the memory controller is there, else v1 (a child of this process's own
cgroup), else an RSS watchdog (the peak is checked all the same)."""
import random
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from pclient import Conn  # noqa: E402

MIB = 1 << 20


def allowed_bytes(m_mib: int) -> int:
    """The documented bound: 1.1 x -m + 24 MiB (docs/memory.md)."""
    return int(1.1 * m_mib * MIB) + 24 * MIB


class MemoryLimit:
    """A memory cgroup of `limit` bytes that a command joins before exec (`wrap`), or
    nothing where none can be made (then only the RSS watchdog checks)."""

    def __init__(self, limit: int):
        self.limit = limit
        self.path = None
        self.version = None
        name = f"sqlcached-test-{uuid.uuid4().hex[:8]}"
        v2 = Path("/sys/fs/cgroup")
        own = self._own_cgroup()
        try:
            if (v2 / "cgroup.controllers").exists() and "memory" in (v2 / "cgroup.controllers").read_text().split():
                p = v2 / own.get("", "/").lstrip("/") / name
                p.mkdir()
                (p / "memory.max").write_text(str(limit))
                (p / "memory.swap.max").write_text("0") if (p / "memory.swap.max").exists() else None
                self.path, self.version = p, 2
            elif Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists():
                p = Path("/sys/fs/cgroup/memory") / own.get("memory", "/").lstrip("/") / name
                p.mkdir()
                (p / "memory.limit_in_bytes").write_text(str(limit))
                self.path, self.version = p, 1
        except OSError:
            self.path = None

    @staticmethod
    def _own_cgroup() -> dict:
        """This process's cgroup per controller ('' for v2's unified one)."""
        out = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrls, path = line.split(":", 2)
            for c in ctrls.split(",") if ctrls else [""]:
                out[c] = path
        return out

    def wrap(self, argv):
        """argv that joins the cgroup, then execs the command."""
        if self.path is None:
            return argv
        return ["sh", "-c", f'echo $$ > "{self.path}/cgroup.procs" && exec "$@"', "sh", *argv]

    def oom_kills(self) -> int:
        """OOM kills in the cgroup so far."""
        if self.path is None:
            return 0
        f = self.path / ("memory.events" if self.version == 2 else "memory.oom_control")
        for line in f.read_text().splitlines():
            k, _, v = line.partition(" ")
            if k == "oom_kill":
                return int(v)
        return 0

    def remove(self):
        if self.path is not None:
            for _ in range(50):
                try:
                    self.path.rmdir()
                    return
                except OSError:
                    time.sleep(0.1)


def peak_rss(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def start_limited(persistent, m_mib: int, *flags):
    """sqlcached -m m_mib --data-dir in a memory cgroup of the documented bound."""
    from harness.servers import Server, free_port, sqlcached_argv
    limit = MemoryLimit(allowed_bytes(m_mib))
    port = free_port()
    argv = limit.wrap(sqlcached_argv(port, "-m", str(m_mib), "-t", "2", "--data-dir", str(persistent.dir), *flags))
    srv = Server(argv, port, log=str(persistent.log))
    persistent.servers.append(srv)
    return srv, limit


def check_bounded(srv, limit, m_mib, what):
    assert srv.proc.poll() is None, f"{what}: the server died (exit {srv.proc.returncode}; OOM kills: {limit.oom_kills()})"
    assert limit.oom_kills() == 0, f"{what}: OOM-killed in a cgroup of {limit.limit >> 20} MiB"
    peak = peak_rss(srv.proc.pid)
    assert peak <= allowed_bytes(m_mib), (
        f"{what}: peak RSS {peak / MIB:.1f} MiB over 1.1 x -m + 24 MiB = {allowed_bytes(m_mib) / MIB:.1f} MiB")
    with Conn(srv.port) as c:
        st = c.stats()
    assert int(st["memory_budget"]) == m_mib * MIB
    for share in ("items", "disk_cache", "disk_writes"):
        assert int(st[f"memory_{share}"]) >= 0
    assert int(st["memory_disk_cache"]) <= int(st["memory_disk_cache_max"])
    assert int(st["memory_used"]) <= m_mib * MIB + (1 << 20), st["memory_used"]
    return st


def load(port: int, prefix: str, n: int, size: int):
    """Set `prefix:0` .. `prefix:n-1` to `size`-byte values, pipelined."""
    value = b"b" * size
    with Conn(port, timeout=60) as c:
        for start in range(0, n, 20_000):
            keys = range(start, min(n, start + 20_000))
            assert c.set_many(((f"{prefix}:{i}", value, 0) for i in keys), window=1000) == len(keys)


def mixed(port: int, keys: int, value: int, seconds: float, seed: int):
    """30 % sets and 70 % gets over `keys` keys (pipelined in batches), for `seconds`."""
    rnd = random.Random(seed)
    end = time.monotonic() + seconds
    with Conn(port, timeout=60) as c:
        while time.monotonic() < end:
            batch = [f"key:{rnd.randrange(keys)}" for _ in range(100)]
            c.set_many(((k, bytes([97 + len(k) % 26]) * value, 0) for k in batch[:30]), window=30)
            c.get_multi(batch[30:])


@pytest.mark.parametrize("m_mib", [32])
def test_mixed_workload_and_bulk_load_stay_within_the_budget(persistent, m_mib):
    """docs/persistence.md's mixed workload (400,000 keys of 200 bytes, 30 % sets and 70 %
    gets, most read back from disk) then a bulk load of 640,000 new keys, with -m 32, inside
    a memory cgroup of 1.1 x -m + 24 MiB: no OOM kill, peak RSS within it, and `stats`
    shows each share against the budget."""
    srv, limit = start_limited(persistent, m_mib)
    try:
        load(srv.port, "key", 400_000, 200)
        threads = [threading.Thread(target=mixed, args=(srv.port, 400_000, 200, 20, s)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        st = check_bounded(srv, limit, m_mib, "mixed workload")
        assert int(st["disk_hits"]) > 0, "the mixed workload should read from disk"
        # Bulk load: 640,000 new keys of 100 bytes, as fast as one pipelined client sends.
        load(srv.port, "bulk", 640_000, 100)
        check_bounded(srv, limit, m_mib, "bulk load")
        # Everything is still there (the last bulk key from disk or memory).
        with Conn(srv.port) as c:
            assert c.get("bulk:639999") == (0, b"b" * 100)
            assert c.get("bulk:17") == (0, b"b" * 100)
    finally:
        srv.stop()
        limit.remove()


def test_disk_cache_is_a_share_of_the_budget(persistent):
    """--disk-cache asks for more than half of -m: the block cache gets half (said at start),
    and the block cache never holds more than its cap."""
    srv = persistent.start("-m", "8", "--disk-cache", "64m")
    with Conn(srv.port) as c:
        st = c.stats()
    assert int(st["disk_cache"]) == 4 * MIB
    assert int(st["memory_disk_cache_max"]) == 4 * MIB
    assert "--disk-cache 64 MiB is more than half of -m 8 MiB" in persistent.log.read_text()
    srv.stop()
