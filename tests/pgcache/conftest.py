"""Fixtures for the PostgreSQL query-cache freshness tests: the session's PostgreSQL 15
(`postgres`, tests/conftest.py) with a database `fc`, and the caches put in front of it."""
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

pytest.importorskip("psycopg", reason="psycopg missing: pip install -r tests/requirements.txt")


@pytest.fixture(scope="session")
def fcdb(postgres):
    """The session's PostgreSQL with an empty database `fc` (each case makes its own schema)."""
    postgres.sql("DROP DATABASE IF EXISTS fc; CREATE DATABASE fc;")
    return postgres


@pytest.fixture(scope="session")
def direct_dsn(fcdb):
    """libpq URL straight to PostgreSQL's `fc` (the superuser, no TLS)."""
    return fcdb.url("fc", sslmode="disable")
