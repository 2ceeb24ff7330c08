"""Seeded random sessions: a random mix of text, meta and binary commands over a small
key space, run through the same differential engine as the scripted sessions.

    python3 tests/differential/randomized.py SEED [STEPS] > /tmp/r.txt   # write it out
    python3 tests/differential/mcdiff.py /tmp/r.txt                      # replay it

The generator avoids memcached's own races, so that any difference is sqlcached's:
  * no incr/decr/ma on a key fetched since it was last stored: memcached then either
    rewrites the number in place (space padded) or stores a new item (unpadded, with the
    hit-before flag cleared), depending on its LRU thread's timing; and no numbers near
    2**64;
  * TTLs are 0, far (1000 s) or already past (-1), never a few seconds.
"""
from __future__ import annotations

import random
import sys

import mcdiff

KEYS = ["a", "b", "c", "num", "n2", "k:1", "k:2", "long" + "x" * 60]
NUMERIC = ["num", "n2"]
ALPHABET = "abcdefghij0123456789 -_"


def _value(rng, key):
    if key in NUMERIC and rng.random() < 0.8:
        return str(rng.choice([0, 1, 9, 10, 99, 100, 12345, 2**32]))
    return "".join(rng.choice(ALPHABET) for _ in range(rng.choice([0, 1, 3, 8, 20])))


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\")


class Generator:
    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.fetched: set = set()
        self.lines: list = []

    def step(self, text: str):
        self.lines.append("> " + text)

    def store_line(self, cmd, key, value, flags=0, exptime=0, noreply=False, cas=None):
        extra = f" {cas}" if cas is not None else ""
        nr = " noreply" if noreply else ""
        self.step(f"{cmd} {key} {flags} {exptime} {len(value)}{extra}{nr}\\r\\n"
                  f"{_esc(value)}\\r\\n")

    def text_command(self):
        rng, key = self.rng, self.rng.choice(KEYS)
        r = rng.random()
        ttl = rng.choice([0, 0, 0, 1000, -1])
        if r < 0.22:
            cmd = rng.choice(["set", "set", "add", "replace", "append", "prepend"])
            self.store_line(cmd, key, _value(rng, key), rng.choice([0, 0, 7, 4294967295]),
                            ttl, noreply=rng.random() < 0.15)
            self.fetched.discard(key)
        elif r < 0.30:
            cas = rng.choice(["{cas}", "{cas}", "99999999"])
            self.store_line("cas", key, _value(rng, key), 0, ttl,
                            noreply=rng.random() < 0.1, cas=cas)
            self.fetched.discard(key)
        elif r < 0.45:
            keys = rng.sample(KEYS, rng.randint(1, 4))
            cmd = rng.choice(["get", "gets", "gets"])
            if rng.random() < 0.2:
                cmd = rng.choice(["gat", "gats"]) + " " + str(rng.choice([0, 1000]))
            self.step(f"{cmd} {' '.join(keys)}\\r\\n")
            self.fetched.update(keys)
        elif r < 0.52:
            self.step(f"delete {key}{' noreply' if rng.random() < 0.2 else ''}\\r\\n")
            self.fetched.discard(key)
        elif r < 0.62:
            key = rng.choice(NUMERIC + [key])
            if key in self.fetched:
                self.step(f"mg {key} s v\\r\\n")
                return
            op = "incr" if rng.random() < 0.6 else "decr"
            delta = rng.choice([0, 1, 5, 100])
            self.step(f"{op} {key} {delta}{' noreply' if rng.random() < 0.1 else ''}\\r\\n")
        elif r < 0.66:
            self.step(f"touch {key} {rng.choice([0, 1000, -1])}\\r\\n")
            self.fetched.add(key)
        elif r < 0.68:
            self.step(rng.choice(["flush_all\\r\\n", "flush_all 0\\r\\n", "version\\r\\n",
                                  "verbosity 0\\r\\n", "mn\\r\\n"]))
        else:
            self.meta_command(key)

    def meta_command(self, key):
        rng = self.rng
        r = rng.random()
        if r < 0.35:
            flags = rng.sample(["v", "s", "f", "k", "c", "t", "h", "q", "O7", "T1000",
                                "N1000", "R30", "u"], rng.randint(0, 5))
            self.step(f"mg {key} {' '.join(flags)}".rstrip() + "\\r\\n")
            self.fetched.add(key)
        elif r < 0.65:
            value = _value(rng, key)
            flags = rng.sample(["T0", "T1000", "F5", "c", "k", "q", "O1", "MS", "ME", "MR",
                                "MA", "MP", "C{cas}", "I"], rng.randint(0, 4))
            modes = [f for f in flags if f.startswith("M")]
            flags = [f for f in flags if not f.startswith("M")] + modes[:1]
            if "I" in flags and "C{cas}" not in flags:
                flags.remove("I")
            self.step(f"ms {key} {len(value)} {' '.join(flags)}".rstrip()
                      + f"\\r\\n{_esc(value)}\\r\\n")
            self.fetched.discard(key)
        elif r < 0.8:
            flags = rng.sample(["q", "k", "O3", "C{cas}", "I", "T1000"], rng.randint(0, 3))
            if "T1000" in flags and "I" not in flags:
                flags.remove("T1000")
            self.step(f"md {key} {' '.join(flags)}".rstrip() + "\\r\\n")
            if "I" not in flags:
                self.fetched.discard(key)
        else:
            key = rng.choice(NUMERIC + [key])
            if key in self.fetched:
                self.step(f"me {key}\\r\\n")
                return
            flags = rng.sample(["v", "t", "c", "q", "N0", "J7", "D3", "MI", "C{cas}"],
                               rng.randint(0, 4))
            if rng.random() < 0.4:
                flags.append("MD")
            if "J7" in flags and "N0" not in flags:
                flags.append("N0")
            self.step(f"ma {key} {' '.join(flags)}".rstrip() + "\\r\\n")

    def binary_command(self):
        rng, key = self.rng, self.rng.choice(KEYS)
        op = rng.choice(["get", "getk", "getq", "getkq", "set", "add", "replace", "append",
                         "prepend", "delete", "incr", "setq", "deleteq", "noop", "touch",
                         "gat"])
        if op in ("set", "add", "replace", "setq"):
            v = _value(rng, key)
            self.lines.append(f"b> {op} k={key} v={v.replace(' ', '_')} "
                              f"flags={rng.choice([0, 3])} exp={rng.choice([0, 1000])}")
            self.fetched.discard(key)
        elif op in ("append", "prepend"):
            self.lines.append(f"b> {op} k={key} v=_x")
            self.fetched.discard(key)
        elif op == "incr":
            k = rng.choice(NUMERIC)
            if k in self.fetched:
                self.lines.append(f"b> getk k={k}")
                return
            self.lines.append(f"b> incr k={k} delta={rng.choice([1, 7])} init=5 "
                              f"exp={rng.choice([0, 1000])}")
        elif op in ("touch", "gat"):
            self.lines.append(f"b> {op} k={key} exp={rng.choice([0, 1000])}")
            self.fetched.add(key)
        elif op == "noop":
            self.lines.append("b> noop opaque=9")
        else:
            self.lines.append(f"b> {op} k={key} opaque={rng.randint(1, 99)}")
            if op.startswith("get"):
                self.fetched.add(key)
            else:
                self.fetched.discard(key)

    def session(self, name: str, steps: int) -> str:
        self.lines.append(f"=== {name}")
        self.lines.append("> set a 0 0 1\\r\\nx\\r\\n")   # so that {cas} has a value
        self.lines.append("> gets a\\r\\n")
        self.fetched.add("a")
        conn = "text"
        for _ in range(steps):
            want = "bin" if self.rng.random() < 0.15 else "text"
            if want != conn:
                self.lines.append(f"@conn {want}")
                conn = want
            if conn == "bin":
                self.binary_command()
            else:
                self.text_command()
        return "\n".join(self.lines) + "\n"


def generate(seed: int, steps: int = 250) -> str:
    return (f"# generated by randomized.py, seed {seed}, {steps} steps\n"
            + Generator(seed).session(f"random seed {seed}", steps))


def session_for(seed: int, steps: int = 250, tmpdir=None) -> mcdiff.Session:
    import tempfile
    from pathlib import Path
    d = Path(tmpdir or tempfile.mkdtemp(prefix="mcdiff-random-"))
    path = d / f"random_{seed}.txt"
    path.write_text(generate(seed, steps))
    (sess,) = mcdiff.parse_file(path)
    return sess


if __name__ == "__main__":
    seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 250
    sys.stdout.write(generate(seed, n))
