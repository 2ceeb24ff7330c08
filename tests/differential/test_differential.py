"""Every session in sessions/*.txt, run against memcached 1.6.18 and sqlcached side by side.

Each session gets a fresh pair of server processes started with the session's flags; the
normalized replies of every step must be identical (see README.md in this directory)."""
import os
import warnings
from pathlib import Path

import pytest

import mcdiff
from harness.servers import sqlcached_bin

SESSIONS = mcdiff.load_sessions()


def _require_binary():
    b = sqlcached_bin()
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        pytest.fail(f"sqlcached binary not found at {b} (build it with "
                    f"`cargo build --release -p sqlcached` or set SQLCACHED_BIN)")


@pytest.mark.parametrize("session", SESSIONS, ids=[s.id for s in SESSIONS])
def test_session(session):
    _require_binary()
    results, runs, first = mcdiff.run_differential(session)
    bad = [r for r in results if not r.ok]
    if not bad and runs > 1:
        flaky = [r for r in first if not r.ok]
        warnings.warn(f"{session.id}: matched only on run {runs}; first run differed at "
                      + mcdiff.describe_mismatch(session, flaky[0]))
    if bad:
        msg = [f"{len(bad)} of {len(results)} steps differ in each of {runs} runs on fresh "
               f"servers; first difference:",
               mcdiff.describe_mismatch(session, bad[0])]
        for r in bad[1:6]:
            msg.append(f"  also differs: {r.step.label()}")
        if len(bad) > 6:
            msg.append(f"  ... and {len(bad) - 6} more")
        pytest.fail("\n".join(msg), pytrace=False)


def test_sessions_are_well_formed():
    """The session files parse, and there are enough steps to mean something."""
    steps = sum(len([s for s in sess.steps if s.kind in ("text", "binary")])
                for sess in SESSIONS)
    assert len(SESSIONS) >= 50, len(SESSIONS)
    assert steps >= 200, steps
    ids = [s.id for s in SESSIONS]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate session names: {dup}"
    files = {Path(s.file).name for s in SESSIONS}
    assert files, "no session files"
