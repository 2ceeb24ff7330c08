"""Shared pytest fixtures: real sqlcached and memcached processes."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from harness.servers import start_memcached, start_sqlcached  # noqa: E402


@pytest.fixture
def sqlcached():
    """A fresh sqlcached (memory only, defaults) for one test."""
    with start_sqlcached() as s:
        yield s


@pytest.fixture(scope="module")
def sqlcached_module():
    """One sqlcached shared by a test module."""
    with start_sqlcached() as s:
        yield s


@pytest.fixture
def memcached():
    """A fresh real memcached 1.6.18 for one test."""
    with start_memcached() as s:
        yield s


@pytest.fixture(scope="session")
def postgres():
    """One real PostgreSQL 15 (scripts/postgres.sh: wal_level=logical, TLS, a SCRAM superuser
    and a SCRAM non-superuser) shared by the whole session, started on first use. Tests that
    restart, kill or reconfigure a server start their own with harness.postgres.start_postgres."""
    from harness.postgres import start_postgres

    with start_postgres() as pg:
        yield pg
