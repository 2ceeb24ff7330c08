"""Helpers for the multi-node freshness tests (tests/cluster/test_proxies.py,
test_containers_nodes.py): version histories, staleness and delay figures, a small memcached
text client, and a runner for the randomized threads.

Every row of a test table holds a version that only grows (one writer per row). A `Versions`
history records, per row, when each version became known (acknowledged to its writer, or
returned by some server); a read that started at time t and returned version v is then
- fresh if no newer version was known at t;
- stale by `Versions.stale_for(row, v, t)` seconds otherwise: how long before the read started
  a newer version was already known.
Times are time.monotonic(). A delay is measured from the write's OK to the arrival of the
first reply that shows the new version (a conservative upper bound: Python's scheduling and the
1 ms poll interval are included).
"""
import bisect
import socket
import threading
import time
from collections import defaultdict

# The freshness goal: a change is visible on every node within this (p99).
GOAL = 0.100
# A read stale by more than this is a lost invalidation, not a slow one: on a shared 2-CPU
# machine a plain read alone sometimes takes 100-300 ms, so single reads past GOAL are only
# counted (their share must stay within the p99 goal), reads past HARD fail a test.
HARD = 1.0


def now() -> float:
    return time.monotonic()


def pct(xs, p):
    """The p-quantile (0..1) of xs (nan if empty)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")


def figures(xs, slowest=0) -> str:
    """'n N, p50 x ms, p99 y ms, max z ms' of delays in seconds (and the `slowest` largest)."""
    if not xs:
        return "n 0"
    out = (f"n {len(xs)}, p50 {pct(xs, 0.5) * 1000:.1f} ms, p99 {pct(xs, 0.99) * 1000:.1f} ms, "
           f"max {max(xs) * 1000:.1f} ms")
    if slowest:
        out += " (slowest: " + ", ".join(f"{x * 1000:.0f}" for x in sorted(xs)[-slowest:]) + " ms)"
    return out


class Versions:
    """Per row, the times at which its versions became known (kept increasing in both)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.vers = defaultdict(list)
        self.times = defaultdict(list)

    def add(self, row, ver, t):
        """Version `ver` of `row` was known at time t (ignored unless newer than the last one)."""
        with self.lock:
            vs, ts = self.vers[row], self.times[row]
            if vs and ver <= vs[-1]:
                return
            vs.append(ver)
            ts.append(max(t, ts[-1]) if ts else t)

    def floor(self, row, t):
        """The newest version of `row` known at time t (0: none)."""
        with self.lock:
            i = bisect.bisect_right(self.times[row], t)
            return self.vers[row][i - 1] if i else 0

    def stale_for(self, row, got, t):
        """How long before time t a version of `row` newer than `got` was known (0: fresh)."""
        with self.lock:
            i = bisect.bisect_right(self.vers[row], got)
            ts = self.times[row]
            return t - ts[i] if i < len(ts) and ts[i] <= t else 0.0


def check_late(tally, reads):
    """The assertions on reads stale by more than GOAL that no stuck entry explains: none by
    more than HARD, and at most 1% of `reads` (the p99 goal, read by read)."""
    _, unexplained = tally.late_reads()
    hard = [x for x in unexplained if x[3] > HARD]
    assert not hard, f"reads stale by more than {HARD} s (name, row, version, age): {hard[:10]}"
    assert len(unexplained) <= reads / 100, (
        f"{len(unexplained)} of {reads} reads stale by more than {GOAL * 1000:.0f} ms: {unexplained[:10]}")


class Tally:
    """What the threads of one run found: violations (bugs), errors, figures by name."""

    def __init__(self):
        self.lock = threading.Lock()
        self.violations = []
        self.errors = []
        self.samples = defaultdict(list)
        self.counts = defaultdict(int)
        self.stuck_entries = set()
        self.stuck_log = []
        self.late = []
        self.stop = threading.Event()

    def fail(self, msg):
        with self.lock:
            if len(self.violations) < 20:
                self.violations.append(msg)
            self.counts["violations"] += 1

    def sample(self, name, x):
        with self.lock:
            self.samples[name].append(x)

    def count(self, name, n=1):
        with self.lock:
            self.counts[name] += n

    def stuck(self, name, row, old, ver):
        """A known bug: `name` still answered version `old` of `row` long after version `ver` was
        acknowledged (and its backend had it): a stale entry left by a binlog invalidation."""
        with self.lock:
            self.stuck_entries.add((name, row, old))
            self.counts[f"{name}_stuck"] += 1
            if len(self.stuck_log) < 10:
                self.stuck_log.append(f"{name}: row {row} still version {old}, version {ver} acknowledged")

    def stale(self, name, age, row=None, got=None):
        """A read through `name` that was `age` seconds stale (0: fresh), counted; with its `row`
        and the version `got`, a read stale by more than GOAL is kept for late_reads()."""
        with self.lock:
            self.counts[f"{name}_reads"] += 1
            if age > 0:
                self.counts[f"{name}_stale"] += 1
                self.samples[f"{name}_stale_age"].append(age)
            if age > GOAL:
                self.counts[f"{name}_stale_past_goal"] += 1
                if row is not None:
                    self.late.append((name, row, got, age))

    def late_reads(self):
        """(explained, unexplained) reads stale by more than GOAL, as (name, row, got, age):
        explained ones returned a version some writer found stuck on the same node (the known
        bug, see stuck())."""
        with self.lock:
            exp = [x for x in self.late if (x[0], x[1], x[2]) in self.stuck_entries]
            return exp, [x for x in self.late if (x[0], x[1], x[2]) not in self.stuck_entries]

    def run(self, seconds, targets):
        """Run each (name, fn) in a thread of its own for `seconds` (fn loops until self.stop
        is set); an exception in a thread is recorded and stops the run."""

        def wrap(name, fn):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - reported by the test
                with self.lock:
                    self.errors.append(f"{name}: {e!r}")
                self.stop.set()

        threads = [threading.Thread(target=wrap, args=t, name=t[0], daemon=True) for t in targets]
        for t in threads:
            t.start()
        self.stop.wait(seconds)
        self.stop.set()
        for t in threads:
            t.join(30)
        stuck = [t.name for t in threads if t.is_alive()]
        if stuck:
            self.errors.append(f"threads still running 30 s after the end: {stuck}")


def poll_all(reads, ver, t_ok, rnd, limit=2.0, interval=0.001, on_read=None):
    """Poll every read() of `reads` ({name: fn}) in a random order each round, until each has
    returned at least `ver` or `limit` seconds have passed since t_ok. Returns (delays, first_old,
    last): {name: seconds from t_ok to the arrival of its first reply >= ver} (names that never
    got there are missing), {name: whether its first reply was older}, {name: its last reply}.
    on_read(name, got, t) sees every reply."""
    delays, first_old, last = {}, {}, {}
    while True:
        for name in rnd.sample(sorted(reads), len(reads)):
            if name in delays:
                continue
            got = reads[name]()
            t = now()
            last[name] = got
            if on_read:
                on_read(name, got, t)
            first_old.setdefault(name, got < ver)
            if got >= ver:
                delays[name] = t - t_ok
        if len(delays) == len(reads) or now() - t_ok > limit:
            return delays, first_old, last
        time.sleep(interval)


def hammered_updates(write, read, connect_reader, seconds):
    """Three threads keep reading through connections from connect_reader() while write(v)
    sets versions 1, 2, ... for `seconds`; 5 ms after each write's OK, read()
    on another such connection must show it, or still shows the old version 0.3 s later: a
    stuck entry. Returns ([(version, read 5 ms after, read 0.3 s after)], number of writes)."""
    stop = threading.Event()

    def hammer():
        c = connect_reader()
        try:
            while not stop.is_set():
                read(c)
        finally:
            c.close()

    threads = [threading.Thread(target=hammer, daemon=True) for _ in range(3)]
    for t in threads:
        t.start()
    stale, v = [], 0
    check = connect_reader()
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            v += 1
            write(v)
            time.sleep(0.005)
            got = read(check)
            if got < v:
                time.sleep(0.3)
                again = read(check)
                if again < v:
                    stale.append((v, got, again))
    finally:
        stop.set()
        for t in threads:
            t.join(10)
        check.close()
    return stale, v


class Memcache:
    """A minimal memcached text-protocol client (get / set / stats) for container keys."""

    def __init__(self, port, host="127.0.0.1"):
        self.s = socket.create_connection((host, port), timeout=10)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _fill(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed")
        self.buf += chunk

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def exact(self, n) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def get(self, key):
        """The value of key (bytes) or None; raises on an error reply."""
        self.s.sendall(f"get {key}\r\n".encode())
        value = None
        while True:
            line = self.line()
            if line == b"END":
                return value
            parts = line.split()
            if parts[0] != b"VALUE":
                raise RuntimeError(f"get {key}: {line!r}")
            value = self.exact(int(parts[3]) + 2)[:-2]

    def set(self, key, value) -> bytes:
        if isinstance(value, str):
            value = value.encode()
        self.s.sendall(f"set {key} 0 0 {len(value)}\r\n".encode() + value + b"\r\n")
        return self.line()

    def stats(self) -> dict:
        self.s.sendall(b"stats\r\n")
        out = {}
        while True:
            line = self.line()
            if line == b"END":
                return out
            parts = line.decode().split(" ", 2)
            if len(parts) == 3 and parts[0] == "STAT":
                try:
                    out[parts[1]] = int(parts[2])
                except ValueError:
                    out[parts[1]] = parts[2]

    def close(self):
        self.s.close()
