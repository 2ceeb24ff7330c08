"""The ketama continuum computed in Python, and what the cluster nodes actually hold.

`KetamaRing` is the ring spymemcached's KetamaConnectionFactory and libmemcached's
ketama_weighted build for equal-weight nodes: 40 MD5 digests of "host:port-N" (N = 0..39) per
node, 4 little-endian 32-bit points from each (160 points per node); a key goes to the first
point >= the first 4 bytes (little-endian) of its MD5, wrapping around. tests/cluster/test_ketama.py
asserts that both clients place every key exactly where this ring says, on sqlcached and on
memcached alike, so the ring is the specification of "same key -> same node".

With 160 points per node a 3-node ring is not always within 15% of even shares: over random
port triples about 5% of rings give some node more than 15% off a third (0.073 median
deviation, 0.13 at the 90th percentile). `pick_balanced_ports` therefore draws free ports until
the ring it predicts for the test's keys is within the bound: the balance is a property of the
labels, which the test states and checks, not something the server could change.
"""
import bisect
import hashlib
import socket

from pymemcache.client.base import Client

POINTS_PER_HASH = 4
HASHES_PER_NODE = 40  # 160 points per node, spymemcached's and libmemcached's default


def _md5(s: str) -> bytes:
    return hashlib.md5(s.encode()).digest()


class KetamaRing:
    """Ketama continuum over node labels ("127.0.0.1:PORT")."""

    def __init__(self, labels):
        points = []
        for index, label in enumerate(labels):
            for n in range(HASHES_PER_NODE):
                d = _md5(f"{label}-{n}")
                for h in range(POINTS_PER_HASH):
                    points.append((int.from_bytes(d[4 * h:4 * h + 4], "little"), index))
        points.sort()
        self._hashes = [p for p, _ in points]
        self._nodes = [i for _, i in points]

    def node(self, key: str) -> int:
        """Index (in the labels' order) of the node the key belongs to."""
        h = int.from_bytes(_md5(key)[:4], "little")
        i = bisect.bisect_left(self._hashes, h)
        return self._nodes[i if i < len(self._nodes) else 0]

    def counts(self, keys, n_nodes: int) -> list:
        out = [0] * n_nodes
        for k in keys:
            out[self.node(k)] += 1
        return out


def keys(prefix: str, n: int) -> list:
    """The test keys: PREFIX00000 ..."""
    return [f"{prefix}{i:05d}" for i in range(n)]


def value(key: str) -> bytes:
    """Every client stores "v:" + key (spymemcached stores a String as its UTF-8 bytes, flags 0)."""
    return b"v:" + key.encode()


def deviation(counts) -> float:
    """Largest relative distance of a node's count from an even share."""
    even = sum(counts) / len(counts)
    return max(abs(c - even) / even for c in counts)


def spread(counts) -> str:
    """'3391 / 3290 / 3319 (max 1.7% off an even share)'."""
    return " / ".join(str(c) for c in counts) + f" (max {100 * deviation(counts):.1f}% off an even share)"


def _free_ports(n: int) -> list:
    socks = []
    try:
        for _ in range(n):  # held together, so the n ports are distinct
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def pick_balanced_ports(test_keys, n: int = 3, within: float = 0.12, tries: int = 200):
    """n free loopback ports whose ketama ring puts the test keys within `within` of even
    shares; returns (ports, first_rejected_deviations) so the caller can say how many draws
    were unbalanced."""
    rejected = []
    for _ in range(tries):
        ports = _free_ports(n)
        dev = deviation(KetamaRing([f"127.0.0.1:{p}" for p in ports]).counts(test_keys, n))
        if dev <= within:
            return ports, rejected
        rejected.append(dev)
    raise RuntimeError(f"no balanced ketama ring in {tries} port draws")


def stats(server) -> dict:
    """`stats` of one node, values decoded to str."""
    c = Client((server.host, server.port), connect_timeout=5, timeout=10)
    try:
        return {k.decode(): (v.decode() if isinstance(v, bytes) else v) for k, v in c.stats().items()}
    finally:
        c.close()


def holdings(servers, test_keys, batch: int = 500) -> list:
    """For each node, the set of test keys it answers (with the right value), asking each node
    directly (not through a hashing client)."""
    out = []
    for s in servers:
        c = Client((s.host, s.port), connect_timeout=5, timeout=10)
        held = set()
        try:
            for i in range(0, len(test_keys), batch):
                chunk = test_keys[i:i + batch]
                got = c.get_many(chunk)
                held.update(k for k, v in got.items() if v == value(k))
        finally:
            c.close()
        out.append(held)
    return out
