"""Crash consistency: client threads write (text, binary and meta protocol) while the
server is SIGKILLed at seeded random moments; after every restart each acknowledged
write is there with its value and flags, and nothing older or torn is ever served.

The checker is linearizability-based, so it also covers keys several threads write:
a write W may be the state after the restart unless some *acknowledged* write W' to the
same key was sent after W was acknowledged (then W' is definitely later and durable).
Writes still in flight at the kill may or may not have survived. A delete is a write
of "absent"."""
import itertools
import random
import threading
import time
from dataclasses import dataclass, field

import pytest

from pclient import OP_DELETE, OP_SET, BinConn, Closed, Conn, make_value, parse_value

SEED = 20240611
INF = float("inf")


@dataclass
class Write:
    version: object  # int, or None for a delete
    flags: int
    send: float
    ack: float = INF  # INF while (or if never) acknowledged
    how: str = ""


@dataclass
class History:
    writes: dict = field(default_factory=dict)  # key -> [Write]
    lock: threading.Lock = field(default_factory=threading.Lock)
    versions: itertools.count = field(default_factory=lambda: itertools.count(1))
    flushes: list = field(default_factory=list)  # flush_all: a delete of every key

    def begin_flush(self) -> Write:
        w = Write(None, 0, time.monotonic(), how="flush_all")
        with self.lock:
            self.flushes.append(w)
        return w

    def begin(self, key: str, version, flags: int, how: str) -> Write:
        w = Write(version, flags, time.monotonic(), how=how)
        with self.lock:
            self.writes.setdefault(key, [Write(None, 0, -INF, -INF, "initial")]).append(w)
        return w

    @staticmethod
    def done(w: Write):
        w.ack = time.monotonic()

    def candidates(self, key: str):
        """The writes whose result may be the key's state now."""
        ws = self.writes[key] + self.flushes
        acked_sends = [w.send for w in ws if w.ack < INF]
        latest_acked_send = max(acked_sends) if acked_sends else -INF
        return [w for w in ws if not latest_acked_send > w.ack]

    def rebase(self, key: str, observed):
        """After a check, the observed state is the key's known state."""
        t = time.monotonic()
        version, flags = observed if observed else (None, 0)
        self.writes[key] = [Write(version, flags, t, t, "observed after restart")]


def worker(tid: int, rnd: int, seed: int, port: int, hist: History, counts: dict):
    """Write until the server goes away. Each thread owns keys t<tid>-*; s* are shared."""
    rng = random.Random(seed)
    fresh = itertools.count()
    text = binc = None
    try:
        text = Conn(port)
        binc = BinConn(port)
        while True:
            r = rng.random()
            flags = rng.randrange(1 << 32)
            size = rng.choice([20, 100, 700, 3000, 20000])
            if r < 0.30:
                key = f"t{tid}-r{rnd}-n{next(fresh)}"
            elif r < 0.60:
                key = f"t{tid}-h{rng.randrange(6)}"
            else:
                key = f"s{rng.randrange(4)}" if rng.random() < 0.3 else f"t{tid}-h{rng.randrange(6)}"
            op = rng.random()
            if op < 0.62:  # text set
                w = hist.begin(key, next(hist.versions), flags, "set")
                reply = text.store("set", key, make_value(key, w.version, size), flags)
                assert reply == b"STORED", reply
            elif op < 0.72:  # text delete
                w = hist.begin(key, None, 0, "delete")
                reply = text.cmd(f"delete {key}")
                assert reply in (b"DELETED", b"NOT_FOUND"), reply
                if reply == b"NOT_FOUND" and key.startswith("s"):
                    continue  # says nothing durable about a key others write: stays unacked
            elif op < 0.82:  # binary set
                w = hist.begin(key, next(hist.versions), flags, "binary set")
                st = binc.bset(OP_SET, key, make_value(key, w.version, size), flags)[0]
                assert st == 0, st
            elif op < 0.86:  # binary delete
                w = hist.begin(key, None, 0, "binary delete")
                st = binc.request(OP_DELETE, key.encode())[0]
                assert st in (0, 1), st
                if st == 1 and key.startswith("s"):
                    continue
            elif op < 0.96:  # meta set
                w = hist.begin(key, next(hist.versions), flags, "ms")
                value = make_value(key, w.version, size)
                text.send(f"ms {key} {len(value)} F{flags}\r\n".encode() + value + b"\r\n")
                reply = text.readline()
                assert reply == b"HD", reply
            else:  # meta delete
                w = hist.begin(key, None, 0, "md")
                reply = text.cmd(f"md {key}")
                assert reply in (b"HD", b"NF"), reply
                if reply == b"NF" and key.startswith("s"):
                    continue
            hist.done(w)
            counts[tid] = counts.get(tid, 0) + 1
    except (Closed, ConnectionRefusedError, ConnectionResetError, TimeoutError):
        pass  # the server was killed: the write in flight stays unacknowledged
    finally:
        for c in (text, binc):
            if c:
                c.close()


def flusher(seed: int, port: int, hist: History):
    """A few flush_all while the writers write."""
    rng = random.Random(seed)
    try:
        with Conn(port) as c:
            for _ in range(rng.randint(1, 2)):
                time.sleep(rng.uniform(0.05, 0.3))
                w = hist.begin_flush()
                assert c.cmd("flush_all") == b"OK"
                hist.done(w)
    except (Closed, ConnectionRefusedError, ConnectionResetError, TimeoutError):
        pass


def check_after_restart(port: int, hist: History):
    """Every key's state is one its history allows; returns (keys, present, failures)."""
    failures = []
    keys = sorted(hist.writes)
    present = 0
    with Conn(port) as c:
        got = c.get_multi(keys)
        for key in keys:
            cands = hist.candidates(key)
            if key in got:
                flags, value = got[key]
                version = parse_value(key, value)
                if version is None:
                    failures.append(f"{key}: garbage value {value[:60]!r}... ({len(value)} bytes)")
                    continue
                observed = (version, flags)
                present += 1
            else:
                observed = None
            ok = any(
                (w.version is None and observed is None)
                or (observed is not None and w.version == observed[0] and w.flags == observed[1])
                for w in cands
            )
            if not ok:
                acked = [w for w in hist.writes[key] if w.ack < INF]
                last = max(acked, key=lambda w: w.send) if acked else None
                failures.append(
                    f"{key}: after restart {'absent' if observed is None else f'version {observed[0]} flags {observed[1]}'}"
                    f"; allowed: {[(w.how, w.version, w.flags, 'acked' if w.ack < INF else 'in flight') for w in cands]}"
                    f"; last acknowledged write: {last and (last.how, last.version, last.flags)}"
                )
            hist.rebase(key, observed)
    hist.flushes.clear()
    return len(keys), present, failures


@pytest.mark.parametrize("durability", ["sync", "async"])
def test_sigkill_while_writing_loses_no_acknowledged_write(persistent, durability):
    rng = random.Random(f"{SEED}-{durability}")
    rounds = 8 if durability == "sync" else 6
    flags = ["--durability", durability]
    if durability == "async":
        flags += ["--flush-interval-ms", "100"]
    srv = persistent.start(*flags, "-t", "4")
    hist = History()
    total_acked = total_present = 0
    for rnd in range(rounds):
        counts = {}
        threads = [
            threading.Thread(target=worker, args=(tid, rnd, rng.randrange(1 << 30), srv.port, hist, counts), daemon=True)
            for tid in range(4)
        ]
        if rng.random() < 0.4:
            threads.append(threading.Thread(target=flusher, args=(rng.randrange(1 << 30), srv.port, hist),
                                            daemon=True))
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.15, 0.7))
        srv.sigkill()
        for t in threads:
            t.join(20)
            assert not t.is_alive(), "a client thread hung after the server was killed"
        acked = sum(counts.values())
        total_acked += acked
        assert acked >= 20, f"round {rnd}: only {acked} writes acknowledged before the kill: test is vacuous"
        srv = persistent.restart(srv)
        if rng.random() < 0.4:
            # Crash again right after it came up (while it may still be verifying),
            # then start once more.
            srv.sigkill()
            srv = persistent.restart(srv)
        log = srv.run_log()
        assert "did not shut down cleanly" in log, f"restart after SIGKILL should say so; log: {log!r}"
        nkeys, present, failures = check_after_restart(srv.port, hist)
        assert not failures, (
            f"round {rnd} ({durability}): {len(failures)} of {nkeys} keys wrong after SIGKILL + restart "
            f"({acked} writes acknowledged this round):\n" + "\n".join(failures[:20])
        )
        total_present += present
        print(f"round {rnd}: {acked} acknowledged writes, {nkeys} keys checked, {present} present")
    with Conn(srv.port) as c:
        st = c.stats()
    assert st["disk_failed"] == "0" and st["disk_damaged_records"] == "0", st
    assert total_acked >= 200
    assert total_present > 0


def test_sync_group_commit_shares_fsyncs(persistent):
    """Concurrent writers in sync mode share fsyncs: fewer fsyncs than writes, and every
    acknowledged write was fsynced (disk_fsyncs grew while they wrote)."""
    srv = persistent.start("--durability", "sync", "-t", "4")
    n_threads, per_thread = 8, 150

    def writer(tid):
        with Conn(srv.port) as c:
            for i in range(per_thread):
                key = f"g{tid}-{i}"
                assert c.set(key, make_value(key, 1, 200)) == b"STORED"

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    with Conn(srv.port) as c:
        st = c.stats()
    writes, fsyncs, batches = int(st["disk_writes"]), int(st["disk_fsyncs"]), int(st["disk_batches"])
    assert st["disk_durability"] == "sync"
    assert writes >= n_threads * per_thread, st
    assert 1 <= fsyncs < writes, f"no group commit: {fsyncs} fsyncs for {writes} writes"
    assert batches <= fsyncs + 1, f"sync mode: every batch is fsynced ({batches} batches, {fsyncs} fsyncs)"


def test_udp_writes_are_acknowledged_only_when_durable(persistent):
    """-U: a set over UDP answered STORED survives a SIGKILL right after the answer
    (sync durability: it was fsynced before the answer was sent). The committer is kept
    busy by a burst of large TCP writes so that an early answer would show."""
    from harness.servers import free_port
    import socket
    import struct

    udp_port = free_port()
    srv = persistent.start("--durability", "sync", "-U", str(udp_port))
    lost = []
    for r in range(5):
        with Conn(srv.port) as c, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            big = b"x" * 200_000
            c.send(b"".join(b"set load%d 0 0 %d\r\n%s\r\n" % (i, len(big), big) for i in range(60)))
            u.settimeout(10)
            u.sendto(struct.pack(">HHHH", r, 0, 1, 0) + b"set udp%d 5 0 2\r\nok\r\n" % r, ("127.0.0.1", udp_port))
            reply = u.recv(2048)
            assert reply[8:] == b"STORED\r\n", reply
            srv.sigkill()
        srv = persistent.restart(srv)
        with Conn(srv.port) as c:
            if c.get(f"udp{r}") != (5, b"ok"):
                lost.append(f"udp{r}")
    assert not lost, (f"UDP sets answered STORED (--durability sync) lost by a SIGKILL right after the answer: "
                      f"{lost} of 5")
