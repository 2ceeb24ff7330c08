"""Reads inside transactions (--query-cache-in-transactions), against a real MariaDB through
the proxy: what each policy answers from the cache, and the isolation cases: own write then
read, another session's uncommitted write, ROLLBACK, savepoints, implicit commits, and a
repeatable-read snapshot older than a change the cache has already seen (its fill must not
be stored). docs/querycache.md, "Transactions"."""
import time

import pytest

from conftest import start_proxy
from qchelpers import q, run_counted, until_hit


@pytest.fixture(scope="module")
def tables(mariadb):
    mariadb.sql("USE qc; CREATE TABLE qc.tx (id INT PRIMARY KEY, v VARCHAR(32)) ENGINE=InnoDB; "
                "INSERT INTO qc.tx SELECT seq, CONCAT('t', seq) FROM seq_1_to_50;")


@pytest.fixture(scope="module")
def proxies(mariadb, tables, tmp_path_factory):
    """One proxy per policy."""
    out = {}
    try:
        for policy in ("never", "read-only", "until-write"):
            log = tmp_path_factory.mktemp(policy) / "sqlcached.log"
            out[policy] = start_proxy(mariadb, "--query-cache-in-transactions", policy, log=log)
        yield out
    finally:
        for px in out.values():
            px.stop()


def hit(px, conn, sql):
    rows, d = run_counted(px, conn, sql)
    return rows, d["Qcache_hits"] >= 1


def exec_(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)


@pytest.mark.parametrize("policy,plain,read_only", [("never", False, False), ("read-only", False, True),
                                                     ("until-write", True, True)])
def test_what_each_policy_answers(proxies, policy, plain, read_only):
    px = proxies[policy]
    c = px.connect("qc")
    try:
        sql = "SELECT v FROM qc.tx WHERE id = 1"
        until_hit(px, c, sql)
        exec_(c, "BEGIN")
        assert hit(px, c, sql) == ((("t1",),), plain), "BEGIN ... SELECT"
        exec_(c, "COMMIT")
        exec_(c, "START TRANSACTION READ ONLY")
        assert hit(px, c, sql) == ((("t1",),), read_only), "START TRANSACTION READ ONLY ... SELECT"
        exec_(c, "COMMIT")
        assert hit(px, c, sql)[1], "outside a transaction: cached"
    finally:
        c.close()


def test_own_write_then_read_rollback_and_savepoints(proxies, mariadb):
    px = proxies["until-write"]
    c, other = px.connect("qc"), px.connect("qc")
    try:
        sql = "SELECT v FROM qc.tx WHERE id = 2"
        until_hit(px, c, sql)
        exec_(c, "BEGIN")
        assert hit(px, c, sql) == ((("t2",),), True)
        exec_(c, "UPDATE qc.tx SET v = 'mine' WHERE id = 2")
        assert hit(px, c, sql) == ((("mine",),), False), "own write: the backend answers"
        # Another session never sees the uncommitted value, from the cache or not.
        assert q(other, sql) == (("t2",),)
        exec_(c, "ROLLBACK")
        assert q(c, sql) == (("t2",),)
        until_hit(px, other, sql)
        # A savepoint rolled back to: still after a write, the backend answers.
        exec_(c, "BEGIN")
        exec_(c, "SAVEPOINT s1")
        exec_(c, "UPDATE qc.tx SET v = 'sp' WHERE id = 2")
        exec_(c, "ROLLBACK TO SAVEPOINT s1")
        assert hit(px, c, sql) == ((("t2",),), False)
        exec_(c, "COMMIT")  # its writes are invalidated again: the next read refills
        assert until_hit(px, c, sql) == (("t2",),)
    finally:
        c.close()
        other.close()


def test_uncommitted_write_of_another_session(proxies):
    px = proxies["until-write"]
    writer, reader = px.connect("qc"), px.connect("qc")
    try:
        sql = "SELECT v FROM qc.tx WHERE id = 3"
        until_hit(px, reader, sql)
        exec_(writer, "BEGIN")
        exec_(writer, "UPDATE qc.tx SET v = 'uncommitted' WHERE id = 3")
        exec_(reader, "BEGIN")
        for _ in range(3):
            assert q(reader, sql) == (("t3",),)
        exec_(reader, "COMMIT")
        exec_(writer, "COMMIT")
        assert q(reader, sql) == (("uncommitted",),), "committed: visible at once"
    finally:
        writer.close()
        reader.close()


def test_implicit_commit_ends_the_transaction(proxies):
    px = proxies["until-write"]
    c = px.connect("qc")
    try:
        sql = "SELECT v FROM qc.tx WHERE id = 4"
        until_hit(px, c, sql)
        exec_(c, "BEGIN")
        exec_(c, "UPDATE qc.tx SET v = 'ddl' WHERE id = 4")
        exec_(c, "CREATE TABLE IF NOT EXISTS qc.tx_ddl (id INT PRIMARY KEY)")  # commits
        assert q(c, sql) == (("ddl",),)
        until_hit(px, c, sql)
    finally:
        c.close()


def test_snapshot_older_than_a_seen_change_is_not_stored(proxies, mariadb):
    """REPEATABLE READ: the transaction's snapshot keeps showing a row another session changed
    and committed after it began; the cache has seen that change (binlog), so the
    transaction's read of it must not be stored for others."""
    px = proxies["until-write"]
    c, other = px.connect("qc"), px.connect("qc")
    try:
        sql = "SELECT v FROM qc.tx WHERE id = 5"
        exec_(c, "BEGIN")
        assert q(c, "SELECT v FROM qc.tx WHERE id = 6") == (("t6",),)  # the snapshot is taken
        mariadb.sql("UPDATE qc.tx SET v = 'committed later' WHERE id = 5")
        time.sleep(0.3)  # the binlog invalidation has arrived
        for _ in range(3):
            assert q(c, sql) == (("t5",),), "repeatable read: the snapshot's value"
        exec_(c, "COMMIT")
        assert q(other, sql) == (("committed later",),), "the snapshot's value was not stored"
    finally:
        c.close()
        other.close()


def test_hits_carry_the_sessions_transaction_status(proxies):
    """A result stored outside a transaction and served inside one (and the reverse) says
    what the session's state is: SERVER_STATUS_IN_TRANS as MariaDB would (drivers read it)."""
    px = proxies["until-write"]
    c = px.connect("qc")
    try:
        sql = "SELECT v FROM qc.tx WHERE id = 7"
        until_hit(px, c, sql)
        assert not c.server_status & 1
        exec_(c, "BEGIN")
        assert hit(px, c, sql) == ((("t7",),), True)
        assert c.server_status & 1, "a hit inside a transaction says IN_TRANS"
        assert q(c, "SELECT v FROM qc.tx WHERE id = 8") == (("t8",),)  # filled inside the transaction
        exec_(c, "COMMIT")
        assert until_hit(px, c, "SELECT v FROM qc.tx WHERE id = 8") == (("t8",),)
        assert not c.server_status & 1, "a hit outside says no transaction, whoever filled it"
    finally:
        c.close()
