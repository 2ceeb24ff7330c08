"""The three consistent-hashing clients of tests/cluster/test_ketama.py behind one interface.

Each adapter wraps one unchanged client library configured as an application would, with
only the settings a node restart needs shortened (`SETTINGS` says which):

- `Pylibmc`: libmemcached (pylibmc 1.6.3) with behaviors {"ketama_weighted": True}: the ketama
  continuum with MD5 for keys and points, 160 points per node, the same ring as spymemcached's
  ({"ketama": True} alone keeps libmemcached's default one-at-a-time key hash and its own point
  layout: consistent too, but only about a third of the keys land where spymemcached's ring
  puts them, i.e. no better than chance);
- `Pymemcache`: pymemcache 4.0.0's HashClient with its default hasher, RendezvousHash
  (highest random weight, murmur3): consistent hashing, but not ketama;
- `Spymemcached`: spymemcached 2.12.3's KetamaConnectionFactory, in a JVM driven over
  stdin/stdout (tests/cluster/java, sqlcached.cluster.KetamaDriver).

`defaults=True` leaves those settings at the library's defaults (for measuring what they change).
Every adapter has set_all(keys) -> failed count and outcomes(keys) -> one character per key:
h (hit, right value), w (wrong value), m (miss), e (the client raised / timed out for it).
"""
import os
import select
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pylibmc
from pymemcache.client.hash import HashClient

from ketama_ring import value

JAVA_PROJECT = Path(__file__).resolve().parent / "java"
SPY_JAR = Path.home() / ".m2" / "repository" / "net" / "spy" / "spymemcached" / "2.12.3" / "spymemcached-2.12.3.jar"

# The settings each adapter changes, and what they are for. Measured with a 5 s outage of one
# of 3 nodes, time from the restart until every key of the node hit again through the client:
# pylibmc needs none (defaults: 0.2-2 s; libmemcached retries a failed server after
# retry_timeout, 2 s, counted in whole seconds); pymemcache's default dead_timeout of 60 s took
# 115 s (a dead server is re-added only when a check finds it dead > dead_timeout, and the
# checks themselves are dead_timeout apart) against 0.7 s with the short settings; spymemcached's
# reconnect back-off (2^n s up to 30 s) took 8.2 s against 1.2 s.
SETTINGS = {
    "pylibmc": 'behaviors={"ketama_weighted": True, "connect_timeout": 500 (ms), '
               '"retry_timeout": 1 (s)}: none of these needed to resume (defaults resume in 0.2-2 s)',
    "pymemcache": "HashClient(connect_timeout=0.5, timeout=1, retry_attempts=1, retry_timeout=0.5, "
                  "dead_timeout=1): dead_timeout needed (default 60 s: resume took 115 s)",
    "spymemcached": "KetamaConnectionFactory subclass: getMaxReconnectDelay()=1 (default 30 s, "
                    "doubling from 1 s: resume took 8 s), getOperationTimeout()=1000 ms (default "
                    "2500), FailureMode.Redistribute (the default)",
}


class Pylibmc:
    name = "pylibmc"
    ketama = True  # places keys on KetamaRing

    def __init__(self, servers, defaults=False):
        behaviors = {"ketama_weighted": True, "tcp_nodelay": True}
        if not defaults:
            behaviors.update({"connect_timeout": 500, "retry_timeout": 1})
        self.mc = pylibmc.Client([s.addr for s in servers], binary=False, behaviors=behaviors)

    def set_all(self, keys) -> int:
        failed = 0
        for i in range(0, len(keys), 1000):
            failed += len(self.mc.set_multi({k: value(k) for k in keys[i:i + 1000]}))
        return failed

    def outcomes(self, keys) -> str:
        out = []
        for k in keys:
            try:
                v = self.mc.get(k)
            except pylibmc.Error:
                out.append("e")
                continue
            out.append("m" if v is None else "h" if v == value(k) else "w")
        return "".join(out)

    def close(self):
        self.mc.disconnect_all()


class Pymemcache:
    name = "pymemcache"
    ketama = False  # RendezvousHash

    def __init__(self, servers, defaults=False):
        short = {} if defaults else dict(connect_timeout=0.5, timeout=1, retry_attempts=1, retry_timeout=0.5,
                                         dead_timeout=1)
        self.mc = HashClient([(s.host, s.port) for s in servers], default_noreply=False, **short)

    def set_all(self, keys) -> int:
        failed = 0
        for i in range(0, len(keys), 1000):
            failed += len(self.mc.set_many({k: value(k) for k in keys[i:i + 1000]}))
        return failed

    def outcomes(self, keys) -> str:
        out = []
        for k in keys:
            try:
                v = self.mc.get(k)
            except Exception:  # ConnectionRefusedError, MemcacheUnexpectedCloseError, ...
                out.append("e")
                continue
            out.append("m" if v is None else "h" if v == value(k) else "w")
        return "".join(out)

    def close(self):
        self.mc.close()


def build_java() -> str:
    """`mvn -o -q compile` of tests/cluster/java (offline, from ~/.m2) unless its classes are
    newer than its sources; returns the driver's classpath. FileNotFoundError (the test skips)
    when Maven, Java or the spymemcached jar is missing."""
    mvn = shutil.which("mvn")
    if mvn is None or shutil.which("java") is None:
        raise FileNotFoundError("mvn/java not installed: run .ci/deps-clients.sh")
    if not SPY_JAR.exists():
        raise FileNotFoundError(f"{SPY_JAR} missing: run .ci/deps-clients.sh")
    classpath = f"{JAVA_PROJECT / 'target' / 'classes'}{os.pathsep}{SPY_JAR}"
    sources = [JAVA_PROJECT / "pom.xml", *(JAVA_PROJECT / "src").rglob("*")]
    built = list((JAVA_PROJECT / "target" / "classes").rglob("*.class"))
    if built and min(f.stat().st_mtime for f in built) > max(f.stat().st_mtime for f in sources):
        return classpath  # up to date: skip Maven's ~4 s start-up
    proc = subprocess.run([mvn, "-o", "-q", "-B", "-Dstyle.color=never", "compile"], cwd=JAVA_PROJECT,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"mvn -o compile in {JAVA_PROJECT} failed:\n{proc.stdout[-5000:]}")
    return classpath


class JavaDriver:
    """One JVM running sqlcached.cluster.KetamaDriver, shared by the Spymemcached adapters."""

    def __init__(self, classpath: str, log: Path):
        self.log = log
        with open(log, "ab") as f:
            self.proc = subprocess.Popen(
                ["java", "-Xss1m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classpath,
                 "sqlcached.cluster.KetamaDriver"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=f, text=True, bufsize=1)

    def ask(self, line: str, timeout: float = 60) -> str:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            raise TimeoutError(f"KetamaDriver gave no answer to {line[:60]!r} in {timeout}s (log: {self.log})")
        reply = self.proc.stdout.readline().rstrip("\n")
        if not reply or reply.startswith("error"):
            raise RuntimeError(f"KetamaDriver: {line[:60]!r} -> {reply!r} (log: {self.log})")
        return reply

    def quit(self):
        if self.proc.poll() is None:
            try:
                self.ask("quit", timeout=10)
                self.proc.wait(10)
            except Exception:
                self.proc.kill()
                self.proc.wait()


class Spymemcached:
    name = "spymemcached"
    ketama = True

    def __init__(self, servers, driver: JavaDriver, defaults=False):
        self.driver = driver
        driver.ask("connect " + ("--defaults " if defaults else "") + " ".join(s.addr for s in servers))

    def set_all(self, keys) -> int:
        return int(self.driver.ask("set " + " ".join(keys)).split()[1])

    def outcomes(self, keys) -> str:
        out = self.driver.ask("get " + " ".join(keys))
        assert len(out) == len(keys), out[:200]
        return out

    def close(self):
        self.driver.ask("close")


def wait_answers(port: int, since: float, timeout: float = 10.0) -> float:
    """Seconds from `since` (a time.monotonic()) until 127.0.0.1:port answers `version`."""
    while time.monotonic() - since < timeout:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"version\r\n")
                if s.recv(100).startswith(b"VERSION"):
                    return time.monotonic() - since
        except OSError:
            time.sleep(0.005)
    raise TimeoutError(f"nothing answered on {port} in {timeout}s")
