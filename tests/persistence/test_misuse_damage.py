"""Misuse and damage: one server per data dir; a damaged data dir is refused with a clear
message naming it (and --data-dir-recover moves it aside and starts empty) or, if the
server starts, it says what it found; damage is never served as a wrong value."""
import hashlib
import os
import random
import shutil
import time
from pathlib import Path

import pytest

from harness.servers import Server, free_port, sqlcached_argv
from pclient import Conn, make_value, parse_value

SEED = 77031


def launch(data_dir, log, *flags, timeout=10.0):
    """Start sqlcached on data_dir. Returns (server, None) once it serves, or
    (None, exit code) if it exited first."""
    port = free_port()
    s = Server(sqlcached_argv(port, "--data-dir", str(data_dir), *flags), port, wait=False, log=str(log))
    try:
        s.wait_ready(timeout)
        return s, None
    except RuntimeError:
        return None, s.proc.wait()
    except TimeoutError:
        s.sigkill()
        raise


def fill(port, n, size, prefix="k"):
    with Conn(port) as c:
        assert c.set_many((f"{prefix}{i}", make_value(f"{prefix}{i}", i, size), i) for i in range(n)) == n


def read_back(port, n, prefix="k"):
    """(present, wrong): wrong lists keys served with a value or flags that is not theirs."""
    with Conn(port) as c:
        got = c.get_multi([f"{prefix}{i}" for i in range(n)], batch=200)
    wrong = [k for k, (f, v) in got.items() if parse_value(k, v) != int(k[len(prefix):]) or f != int(k[len(prefix):])]
    return len(got), wrong


def journal(data_dir: Path) -> Path:
    """The largest file of the write-ahead log (DIR/wal): where acknowledged writes are
    until they are ingested into fjall's tables (a server killed with SIGKILL right after
    writing leaves them there). By frames, not size: in sync mode a file is written full of
    zeros before it is used."""
    wals = sorted((data_dir / "wal").glob("*.wal"), key=used_length)
    assert wals, f"no write-ahead log file under {data_dir}/wal: {sorted(os.listdir(data_dir))}"
    return wals[-1]


def used_length(path: Path) -> int:
    """Length of a preallocated file up to its last non-zero byte."""
    data = path.read_bytes()
    return len(data.rstrip(b"\0"))


# -- one server per directory -------------------------------------------------------------
def test_second_server_on_same_dir_is_refused(persistent, tmp_path):
    first = persistent.start()
    fill(first.port, 100, 100)
    second, code = launch(persistent.dir, tmp_path / "second.log")
    if second:
        second.sigkill()
    assert second is None, "a second sqlcached started on a data dir in use"
    assert code != 0
    msg = (tmp_path / "second.log").read_text()
    assert str(persistent.dir) in msg and "in use" in msg, f"unclear refusal: {msg!r}"
    assert str(first.proc.pid) in msg, f"the refusal should name the holder's pid: {msg!r}"
    # The first one is unharmed.
    assert read_back(first.port, 100) == (100, [])
    # Once the holder is gone (even killed: the lock is not a stale-file check) a new
    # server starts on the dir.
    first.sigkill()
    third, code = launch(persistent.dir, tmp_path / "third.log")
    assert third, f"exit {code} after the holder died: {(tmp_path / 'third.log').read_text()!r}"
    try:
        assert read_back(third.port, 100) == (100, [])
    finally:
        third.sigkill()


# -- flags ------------------------------------------------------------------------------------
def start_plain(tmp_path, *flags):
    """(server or None, exit code, stderr) for sqlcached with these flags only."""
    log = tmp_path / "flags.log"
    log.write_bytes(b"")
    port = free_port()
    s = Server(sqlcached_argv(port, *flags), port, wait=False, log=str(log))
    try:
        s.wait_ready(5)
        time.sleep(0.1)
        return s, None, log.read_text()
    except RuntimeError:
        return None, s.proc.wait(), log.read_text()
    except TimeoutError:
        s.sigkill()
        raise


@pytest.mark.parametrize("flags,needle", [
    (["--durability", "bogus"], "--durability"),
    (["--flush-interval-ms", "0"], "--flush-interval-ms"),
    (["--disk-limit", "4q"], "--disk-limit"),
    (["--data-dir"], "--data-dir"),
])
def test_bad_persistence_flags_are_refused(tmp_path, flags, needle):
    s, code, err = start_plain(tmp_path, *flags, "--data-dir", str(tmp_path / "d")) if flags != ["--data-dir"] \
        else start_plain(tmp_path, *flags)
    if s:
        s.sigkill()
    assert s is None and code != 0 and needle in err, f"{flags}: exit {code}, stderr {err!r}"


def test_data_dir_that_is_a_file_is_refused(tmp_path):
    f = tmp_path / "afile"
    f.write_text("not a directory")
    s, code, err = start_plain(tmp_path, "--data-dir", str(f))
    if s:
        s.sigkill()
    assert s is None and code != 0 and str(f) in err, f"exit {code}, stderr {err!r}"
    assert f.read_text() == "not a directory"


@pytest.mark.parametrize("flags", [["--durability", "sync"], ["--disk-limit", "4m"]])
def test_persistence_flags_without_data_dir_are_not_silently_ignored(tmp_path, flags):
    """Asking for durability (or a disk limit) without --data-dir gets none: the server
    must refuse, or at least warn on stderr, naming --data-dir."""
    s, code, err = start_plain(tmp_path, *flags)
    if s:
        s.sigkill()
    assert "--data-dir" in err, (
        f"{' '.join(flags)} without --data-dir: {'started' if s else f'exit {code}'} without a word about "
        f"--data-dir (stderr {err!r}): the user believes writes are persisted")


# -- damaged journal (the write-ahead log) ----------------------------------------------------
def journal_digest(data_dir) -> str:
    """Digest of the write-ahead log and fjall's journal(s): what 'left untouched' must keep
    as it was. (fjall may delete obsolete files of other keyspaces at open; that loses
    nothing.)"""
    h = hashlib.sha256()
    for p in sorted([*Path(data_dir).rglob("*.jnl"), *Path(data_dir).rglob("*.wal")]):
        h.update(p.name.encode())
        h.update(p.read_bytes())
    return h.hexdigest()


def damage_journal_at(data_dir: Path, key: str, version: int, size: int, where: str):
    """Flip 16 bytes of the log entry of `key`: inside its value ('value': the frame's
    checksum no longer matches) or just before the key ('header': the entry cannot be
    parsed)."""
    value = make_value(key, version, size)
    # The log may span files (sync mode moves into a prepared file once one is ready).
    j = next((p for p in (data_dir / "wal").glob("*.wal") if value in p.read_bytes()), journal(data_dir))
    data = j.read_bytes()
    at = data.find(value)
    assert at > 0, f"value of {key} not found in {j} (journal compressed?)"
    if where == "value":
        pos = at + size // 2
    else:
        pos = data.rfind(key.encode(), 0, at) - 16
        assert pos > 0
    with open(j, "r+b") as f:
        f.seek(pos)
        f.write(bytes(b ^ 0x5A for b in data[pos:pos + 16]))


@pytest.mark.parametrize("trailing_slash", [False, True], ids=["dir", "dir-with-slash"])
def test_corrupt_journal_is_refused_and_recover_moves_it_aside(persistent, tmp_path, trailing_slash):
    srv = persistent.start()
    fill(srv.port, 1000, 1000)
    srv.sigkill()  # the writes stay in the write-ahead log (a clean stop ingests them)
    damage_journal_at(persistent.dir, "k500", 500, 1000, "value")
    before = journal_digest(persistent.dir)
    arg = str(persistent.dir) + ("/" if trailing_slash else "")

    s, code = launch(arg, tmp_path / "refused.log")
    if s:
        # Starting is acceptable only if it said what it found and serves no wrong value.
        present, wrong = read_back(s.port, 1000)
        s.sigkill()
        assert not wrong
        pytest.fail(f"started on a journal with a damaged batch in the middle ({present} of 1000 items) instead "
                    f"of refusing; log: {(tmp_path / 'refused.log').read_text()!r}")
    msg = (tmp_path / "refused.log").read_text()
    assert code != 0
    assert str(persistent.dir) in msg and "damaged" in msg and "--data-dir-recover" in msg, f"unclear: {msg!r}"
    assert journal_digest(persistent.dir) == before, "the journal of the refused data dir was modified"

    s, code = launch(arg, tmp_path / "recover.log", "--data-dir-recover")
    msg = (tmp_path / "recover.log").read_text()
    assert s, f"--data-dir-recover {arg} did not start (exit {code}): {msg!r}"
    try:
        aside = [p for p in tmp_path.iterdir() if p.name.startswith("data.damaged-")]
        assert len(aside) == 1, f"damaged dir not moved aside next to the data dir: {sorted(os.listdir(tmp_path))}"
        assert str(aside[0]) in msg, f"the log should say where the damaged dir went: {msg!r}"
        assert journal_digest(aside[0]) == before, "the moved-aside dir is not the damaged dir as it was"
        assert read_back(s.port, 1000) == (0, []), "recovered server should start empty"
        with Conn(s.port) as c:
            assert c.set("after-recover", b"ok") == b"STORED"
        assert s.terminate() == 0
    finally:
        s.sigkill()
    # And the new dir is a normal one: a plain restart keeps what was written.
    s, code = launch(arg, tmp_path / "after.log")
    assert s, f"exit {code}: {(tmp_path / 'after.log').read_text()!r}"
    try:
        with Conn(s.port) as c:
            assert c.get("after-recover") == (0, b"ok")
    finally:
        s.sigkill()


def test_corrupt_journal_entry_is_not_silently_dropped(persistent, tmp_path):
    """Damage to an entry header in the middle of the write-ahead log of a killed server
    (sync durability): refusing (clear message naming the dir) or starting with a report
    of the loss are both fine; starting with half of the acknowledged writes gone while
    saying every acknowledged write is kept is not."""
    srv = persistent.start("--durability", "sync")
    fill(srv.port, 1000, 1000)
    srv.sigkill()
    damage_journal_at(persistent.dir, "k500", 500, 1000, "header")
    before = journal_digest(persistent.dir)
    s, code = launch(persistent.dir, tmp_path / "hdr.log")
    msg = (tmp_path / "hdr.log").read_text()
    if s is None:
        assert code != 0 and str(persistent.dir) in msg and "--data-dir-recover" in msg, f"unclear: {msg!r}"
        assert journal_digest(persistent.dir) == before, "the journal of the refused data dir was modified"
        return
    try:
        present, wrong = read_back(s.port, 1000)
    finally:
        s.sigkill()
    assert not wrong, f"wrong values served: {wrong[:5]}"
    assert str(persistent.dir) in msg
    if present < 1000:
        assert "every acknowledged write is kept" not in msg, (
            f"{1000 - present} of 1000 acknowledged (sync) writes of a cleanly stopped server silently dropped "
            f"(damaged journal entry, everything after it discarded; the journal was truncated on disk: "
            f"{'yes' if journal_digest(persistent.dir) != before else 'no'}); start log: {msg.strip()!r}")


def test_truncated_journal_after_clean_stop_is_not_reported_as_intact(persistent, tmp_path):
    """Half of the write-ahead log of a killed server is cut off: the server must refuse
    (clear message naming the dir) or start and report the damage; it must not claim that
    every acknowledged write is kept when half of them are gone, nor serve a wrong value."""
    srv = persistent.start("--durability", "sync")
    fill(srv.port, 2000, 1000)
    time.sleep(1.2)  # the durable horizon is recorded outside the log once a second
    with Conn(srv.port) as c:
        assert c.set("last", b"x") == b"STORED"
    srv.sigkill()
    j = journal(persistent.dir)
    os.truncate(j, used_length(j) // 2)
    s, code = launch(persistent.dir, tmp_path / "trunc.log")
    msg = (tmp_path / "trunc.log").read_text()
    if s is None:
        assert code != 0 and str(persistent.dir) in msg, f"unclear refusal: {msg!r}"
        return
    try:
        present, wrong = read_back(s.port, 2000)
    finally:
        s.sigkill()
    assert not wrong, f"wrong values served from a truncated journal: {wrong[:5]}"
    assert str(persistent.dir) in msg
    if present < 2000:
        assert "every acknowledged write is kept" not in msg, (
            f"{2000 - present} of 2000 acknowledged (sync) writes of a cleanly stopped server are gone after its "
            f"journal was truncated, yet the start log says: {msg.strip()!r}")


# -- damage anywhere in the files is never served as a wrong value ------------------------------
N_TABLE, SIZE_TABLE = 8600, 4096  # ~35 MB: more than the 32 MB staged before an ingestion, so a table is written
N_JNL, SIZE_JNL = 1500, 1000


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """Two data dirs: one cleanly stopped, with data tables on disk, one killed, whose
    data is only in the write-ahead log."""
    base = tmp_path_factory.mktemp("pristine")
    out = {}
    for name, n, size in (("table", N_TABLE, SIZE_TABLE), ("journal", N_JNL, SIZE_JNL)):
        d = base / name
        s, code = launch(d, base / f"{name}.log")
        assert s, code
        fill(s.port, n, size)
        if name == "table":
            time.sleep(0.5)  # let the ingestion write its tables
            assert s.terminate() == 0
        else:
            s.sigkill()
        out[name] = (d, n)
    tables = [p for p in (out["table"][0] / "db").rglob("tables/*") if p.stat().st_size > 1 << 20]
    assert tables, "no data table written: the damage test would only cover the journal"
    return out


def damage_cases():
    rng = random.Random(SEED)
    cases = []
    for i in range(4):
        cases.append(("table", rng.random(), rng.randrange(1, 48)))
    for i in range(3):
        cases.append(("journal", rng.random(), rng.randrange(1, 48)))
    return cases


@pytest.mark.parametrize("kind,where,nbytes", damage_cases(),
                         ids=lambda v: f"{v:.3f}" if isinstance(v, float) else str(v))
def test_damage_is_never_served_as_a_wrong_value(pristine, tmp_path, kind, where, nbytes):
    src, n = pristine[kind]
    d = tmp_path / "data"
    shutil.copytree(src, d)
    if kind == "table":
        target = max((p for p in (d / "db").rglob("tables/*")), key=lambda p: p.stat().st_size)
        length = target.stat().st_size
    else:
        target = journal(d)
        length = used_length(target)
    pos = int(where * (length - nbytes))
    with open(target, "r+b") as f:
        f.seek(pos)
        old = f.read(nbytes)
        f.seek(pos)
        f.write(bytes(b ^ 0x5A for b in old))
    log = tmp_path / "damaged.log"
    s, code = launch(d, log)
    if s is None:
        msg = log.read_text()
        assert code != 0 and str(d) in msg and "--data-dir-recover" in msg, \
            f"damage at {target.name}+{pos}: unclear refusal (exit {code}): {msg!r}"
        return
    try:
        present, wrong = read_back(s.port, n)
        assert not wrong, f"damage at {target.name}+{pos} ({nbytes} bytes): wrong values served for {wrong[:5]}"
        with Conn(s.port) as c:
            time.sleep(0.3)  # the background verification
            st = c.stats()
            assert c.set("still", b"serving") == b"STORED" and c.get("still") == (0, b"serving")
        msg = log.read_text()
        assert str(d) in msg
        if present < n:
            # Items were lost: the server must have said something about it.
            reported = int(st["disk_read_errors"]) + int(st["disk_damaged_records"])
            assert reported > 0 or "damaged" in msg or "fail" in msg, (
                f"damage at {target.name}+{pos}: {n - present} items silently missing; stats {st}; log {msg!r}")
            assert "every acknowledged write is kept" not in msg, (
                f"damage at {target.name}+{pos}: {n - present} items missing, yet the log says {msg!r}")
    finally:
        s.sigkill()
