"""Start real server processes (sqlcached, memcached) for tests, on free loopback ports."""
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def sqlcached_bin() -> str:
    """Path of the sqlcached binary under test (SQLCACHED_BIN, else target/release)."""
    return os.environ.get("SQLCACHED_BIN", str(ROOT / "target" / "release" / "sqlcached"))


def io_uring_args() -> list:
    """`--io-uring MODE` when SQLCACHED_IO_URING is set (on, off or auto): tests/run.sh runs the
    memcached-facing suites once per I/O front end; empty otherwise (the server's default)."""
    mode = os.environ.get("SQLCACHED_IO_URING")
    if not mode or os.path.basename(sqlcached_bin()).startswith("memcached"):
        return []
    return ["--io-uring", mode]


def memcached_bin() -> str:
    """Path of Debian's memcached 1.6.18 binary."""
    return os.environ.get("MEMCACHED_BIN", shutil.which("memcached") or "/usr/bin/memcached")


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """Block until something accepts on 127.0.0.1:port, or fail if the process died."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listening on port {port}")


def _root_flags(binary: str, args) -> list:
    """Extra flags a memcached binary needs to start at all: `-u root` when we run as root
    (memcached refuses to run as root without -u and exits shortly after binding)."""
    if os.path.basename(binary).startswith("memcached") and "-u" not in args:
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            return ["-u", "root"]
    return []


class Server:
    """A running server process listening on 127.0.0.1:port.

    With wait=False the constructor returns as soon as the process is spawned; call
    wait_ready() before using it (lets callers start several servers in parallel)."""

    def __init__(self, argv, port, wait=True, log=None, env=None):
        self.port = port
        self.host = "127.0.0.1"
        self.addr = f"127.0.0.1:{port}"
        self.argv = argv
        # log: a file path that collects the process's stderr (appended to, so that it
        # holds every run of a restarted server); None keeps stderr on a pipe.
        self.log = log
        # env: extra environment variables for the process (on top of ours).
        penv = None if env is None else {**os.environ, **env}
        if log is None:
            self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=penv)
        else:
            with open(log, "ab") as f:
                self._log_start = f.tell()
                self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=f, env=penv)
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 10.0):
        """Block until the server accepts connections (raises if it died)."""
        wait_port(self.port, self.proc, timeout)
        return self

    def kill_nowait(self):
        """SIGKILL without waiting (fast teardown of throwaway servers); reap() later."""
        if self.proc.poll() is None:
            self.proc.kill()

    def reap(self):
        """Wait for a killed/exited process and release its pipes."""
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()

    def stop(self):
        """Terminate the process (SIGTERM, then SIGKILL)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()

    def sigkill(self):
        """SIGKILL (a crash of the server; the OS and its page cache survive) and reap."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.reap()
        return self.proc.returncode

    def terminate(self, timeout: float = 20.0) -> int:
        """SIGTERM and wait for the process to exit by itself; returns its exit code
        (raises TimeoutExpired, after a SIGKILL, if it does not exit in time)."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise
        if self.proc.stderr:
            self.proc.stderr.close()
        return self.proc.returncode

    def restart(self, wait=True, env=None) -> "Server":
        """A new process with the same command line, port and log (the old one must have
        exited), and `env` as extra environment. The log's earlier runs are kept;
        run_log() reads only the new run's."""
        if self.proc.poll() is None:
            raise RuntimeError("restart() of a server that is still running")
        return Server(self.argv, self.port, wait=wait, log=self.log, env=env)

    def run_log(self) -> str:
        """What this process wrote to stderr so far (needs log=...)."""
        if self.log is None:
            raise RuntimeError("run_log() needs a server started with log=")
        with open(self.log, "rb") as f:
            f.seek(self._log_start)
            return f.read().decode("utf-8", "replace")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def stats_settings(port: int) -> dict:
    """`stats settings` of the server on 127.0.0.1:port, as {name: value}."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"stats settings\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            assert chunk, "closed"
            buf += chunk
    out = {}
    for line in buf.decode().splitlines():
        parts = line.split(" ", 2)
        if parts[0] == "STAT":
            out[parts[1]] = parts[2]
    return out


def rss_mib(pid: int) -> float:
    """Resident memory of a process, MiB (0 if unknown)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def freeze(pid: int, timeout: float = 10.0):
    """SIGSTOP a process and wait until every one of its threads is stopped. kill() returns
    before the group stop completes: the one thread the kernel wakes for the signal starts it,
    and on a loaded machine another thread can still answer a request meanwhile (a CI run saw
    a "stopped" MariaDB answer one more query)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + timeout
    while True:
        states = []
        for t in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{t}/stat") as f:
                    states.append(f.read().rsplit(")", 1)[1].split()[0])
            except FileNotFoundError:
                pass  # a thread that exited
        if states and all(s in ("T", "t") for s in states):
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {pid} not stopped after {timeout} s: thread states {states}")
        time.sleep(0.01)


def sqlcached_argv(port: int, *args: str) -> list:
    """Command line for sqlcached. When SQLCACHED_BIN points at a memcached binary (to
    validate the tests memcached-vs-memcached) it gets memcached's -U 0 / -u root too."""
    binary = sqlcached_bin()
    extra = io_uring_args()
    if os.path.basename(binary).startswith("memcached"):
        extra = ([] if "-U" in args else ["-U", "0"]) + _root_flags(binary, args)
    return [binary, "-l", "127.0.0.1", "-p", str(port), *extra, *args]


def memcached_argv(port: int, *args: str) -> list:
    """Command line for the real memcached (-U 0 unless given, -u root when root)."""
    binary = memcached_bin()
    extra = ([] if "-U" in args else ["-U", "0"]) + _root_flags(binary, args)
    return [binary, "-l", "127.0.0.1", "-p", str(port), *extra, *args]


def start_sqlcached(*args: str, wait: bool = True, log=None, env=None) -> Server:
    """Start sqlcached with memcached-style flags (a -p is added). With log=PATH its
    stderr goes to that file (see Server.run_log / restart); env adds variables."""
    port = free_port()
    return Server(sqlcached_argv(port, *args), port, wait=wait, log=log, env=env)


def start_memcached(*args: str, wait: bool = True, env=None) -> Server:
    """Start the real memcached with the same flags (a -p is added; -U 0 unless given;
    -u root when running as root, which memcached requires); env adds variables."""
    port = free_port()
    return Server(memcached_argv(port, *args), port, wait=wait, env=env)


def start_pair(*args: str, extra=()):
    """Start memcached and sqlcached with identical flags, in parallel (`extra`: flags
    for sqlcached only, e.g. --containers). Returns (memcached, sqlcached); both are ready."""
    mc = start_memcached(*args, wait=False)
    try:
        port = free_port()
        while port == mc.port:  # mc may not have bound its port yet
            port = free_port()
        sq = Server(sqlcached_argv(port, *args, *extra), port, wait=False)
    except Exception:
        mc.stop()
        raise
    try:
        mc.wait_ready()
        sq.wait_ready()
    except Exception:
        mc.stop()
        sq.stop()
        raise
    return mc, sq


FAILED = "<handshake failed>"


def chunked_session(port: int, chunks, pause: float = 0.1, tls=None) -> list:
    """Send each chunk of bytes on one connection and collect what the server answered to it
    (read until it stays quiet for 0.25 s after a `pause`); `<closed>` marks a close. For
    comparing two servers reply by reply, quirks of batching included.

    With `tls` (an ssl.SSLContext) the session runs over TLS to `localhost`; then a failed
    handshake (or, in TLS 1.3, the first read after it, where a refused client certificate
    shows) ends the list with FAILED instead of raising."""
    errors = (ssl.SSLError, ConnectionError, OSError) if tls else ()
    out = []
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if tls:
            s = tls.wrap_socket(s, server_hostname="localhost")
    except errors:
        return [FAILED]
    with s:
        s.settimeout(0.25)
        for c in chunks:
            try:
                s.sendall(c)
            except errors:
                out.append(FAILED)
                break
            time.sleep(pause)
            got = b""
            try:
                while True:
                    part = s.recv(65536)
                    if not part:
                        got += b"<closed>"
                        break
                    got += part
            except (socket.timeout, TimeoutError):
                pass
            except errors:
                out.append(FAILED)
                break
            out.append(got)
    return out


def assert_same_sessions(memcached_port: int, sqlcached_port: int, chunks, **kw) -> list:
    """Run the same chunked session against memcached and sqlcached and assert the replies
    are identical, byte for byte; returns memcached's."""
    want = chunked_session(memcached_port, chunks, **kw)
    got = chunked_session(sqlcached_port, chunks, **kw)
    assert got == want, f"session {chunks!r:.300}\nmemcached: {want!r:.800}\nsqlcached: {got!r:.800}"
    return want
