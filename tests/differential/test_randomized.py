"""Seeded random differential sessions (see randomized.py): 20 seeds x 400 commands mixing
text, meta and binary over a small key space. A failure names the seed; reproduce with

    python3 tests/differential/randomized.py SEED 400 > /tmp/r.txt
    python3 tests/differential/mcdiff.py --show /tmp/r.txt
"""
import os

import pytest

import mcdiff
import randomized
from harness.servers import sqlcached_bin

SEEDS = list(range(1, 21))
STEPS = 400


@pytest.mark.parametrize("seed", SEEDS)
def test_random_session(seed, tmp_path):
    b = sqlcached_bin()
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        pytest.fail(f"sqlcached binary not found at {b}")
    session = randomized.session_for(seed, STEPS, tmp_path)
    results, runs, _ = mcdiff.run_differential(session)
    bad = [r for r in results if not r.ok]
    if bad:
        pytest.fail(f"seed {seed}: {len(bad)} of {len(results)} steps differ in {runs} runs "
                    f"(reproduce: python3 tests/differential/randomized.py {seed} {STEPS})\n"
                    + mcdiff.describe_mismatch(session, bad[0]), pytrace=False)
