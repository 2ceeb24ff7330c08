"""Fixtures for the PostgreSQL front's tests: the session's PostgreSQL 15 (`postgres`, from
tests/conftest.py) with a `pgp` database, and one sqlcached front before it per module."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.pgproxy import start_pgproxy  # noqa: E402

psycopg = pytest.importorskip("psycopg", reason="psycopg missing: pip install -r tests/requirements.txt")

SCHEMA = """
DROP DATABASE IF EXISTS pgp;
CREATE DATABASE pgp;
"""

TABLES = """
CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, price numeric(10,2), data bytea, at timestamptz);
INSERT INTO items SELECT g, 'item ' || g, g * 1.5, decode(lpad(to_hex(g), 8, '0'), 'hex'),
  '2026-01-01 00:00:00+00'::timestamptz + g * interval '1 hour' FROM generate_series(1, 100) g;
GRANT ALL ON ALL TABLES IN SCHEMA public TO PUBLIC;
GRANT ALL ON SCHEMA public TO PUBLIC;
"""


@pytest.fixture(scope="session")
def pgdb(postgres):
    """The session's PostgreSQL with database `pgp` (table `items`, 100 rows)."""
    postgres.sql(SCHEMA)
    postgres.sql(TABLES, database="pgp")
    return postgres


@pytest.fixture(scope="module")
def pgproxy(pgdb, tmp_path_factory):
    """A sqlcached front before `pgdb` (no TLS on either link unless a test starts its own)."""
    log = tmp_path_factory.mktemp("pgproxy") / "sqlcached.log"
    with start_pgproxy(pgdb, "--pg-backend-sslmode", "disable", log=str(log)) as px:
        yield px
