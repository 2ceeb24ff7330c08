"""Fixtures for the cluster tests (tests/cluster): several server processes at once.

`nodes` starts N sqlcached nodes (each with its own --data-dir under the test's tmp dir, its
stderr in a log file beside it) or N real memcached 1.6.18 nodes, on free or given ports, in
parallel; restarts one on the same port and flags; and SIGKILLs whatever is still running when
the test ends."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.servers import Server, free_port, memcached_argv, sqlcached_argv  # noqa: E402


class Nodes:
    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.procs = []  # every Server started, to kill at the end
        self._count = 0

    def _start(self, argvs_ports, logs):
        started = [Server(argv, port, wait=False, log=log) for (argv, port), log in zip(argvs_ports, logs)]
        self.procs += started
        for s in started:
            s.wait_ready()
        return started

    def sqlcached(self, n: int = 3, *flags: str, ports=None, persistent: bool = True) -> list:
        """n sqlcached nodes; with persistent=True each gets its own --data-dir
        (tmp/nodeK-PORT, kept across restart()) and logs to tmp/nodeK-PORT.log."""
        ports = ports or [free_port() for _ in range(n)]
        argvs, logs = [], []
        for port in ports:
            self._count += 1
            base = self.tmp / f"node{self._count}-{port}"
            extra = ("--data-dir", str(base)) if persistent else ()
            argvs.append((sqlcached_argv(port, *extra, *flags), port))
            logs.append(str(base) + ".log")
        return self._start(argvs, logs)

    def memcached(self, n: int = 3, *flags: str, ports=None) -> list:
        """n real memcached nodes (stderr on a pipe, as harness.servers.start_memcached)."""
        ports = ports or [free_port() for _ in range(n)]
        return self._start([(memcached_argv(p, *flags), p) for p in ports], [None] * len(ports))

    def restart(self, server: Server, wait: bool = True) -> Server:
        """The same command line (port, --data-dir, log) again; the old process must have exited."""
        s = server.restart(wait=wait)
        self.procs.append(s)
        return s

    def stop(self, servers):
        """SIGKILL and reap (throwaway nodes; the port is free again afterwards)."""
        for s in servers:
            s.kill_nowait()
        for s in servers:
            s.reap()

    def stop_all(self):
        self.stop([s for s in self.procs if s.proc.poll() is None])


@pytest.fixture
def nodes(tmp_path):
    """Start several sqlcached / memcached nodes; all are killed when the test ends."""
    n = Nodes(tmp_path)
    try:
        yield n
    finally:
        n.stop_all()
