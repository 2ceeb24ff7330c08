"""Deferred BEGIN and local COMMIT (crates/mysql-proxy/src/cache/txn.rs), against a real
MariaDB through the proxy: a transaction whose reads are all answered from the cache never
reaches the backend; one that needs the backend sends its BEGIN first (so its snapshot, its
writes and its ROLLBACK are MariaDB's); COMMIT under autocommit=0 is answered locally only when
the backend has no transaction open. docs/querycache.md, "Transactions"."""
import time

import pytest

import binproto
from conftest import start_proxy
from qchelpers import q, until_hit

SQL = "SELECT v FROM qc.dtx WHERE id = {}"


@pytest.fixture(scope="module")
def px(mariadb, tmp_path_factory):
    mariadb.sql("USE qc; CREATE TABLE qc.dtx (id INT PRIMARY KEY, v VARCHAR(32)) ENGINE=InnoDB; "
                "INSERT INTO qc.dtx SELECT seq, CONCAT('d', seq) FROM seq_1_to_50;")
    log = tmp_path_factory.mktemp("deferred") / "sqlcached.log"
    p = start_proxy(mariadb, "--query-cache-in-transactions", "until-write", log=log)
    try:
        yield p
    finally:
        p.stop()


def exec_(conn, sql):
    with conn.cursor() as cur:
        cur.execute(sql)


def local(px):
    s = px.stats()
    return s["mysql_begins_deferred"], s["mysql_commits_local"]


def backend_status(mariadb, name):
    return int(mariadb.sql(f"SHOW GLOBAL STATUS LIKE '{name}'").split()[1])


def learned(conn):
    """One transaction through to the backend: the proxy learns its BEGIN's and COMMIT's OKs."""
    exec_(conn, "BEGIN")
    exec_(conn, "COMMIT")


def test_a_transaction_of_hits_never_reaches_the_backend(px, mariadb):
    c = px.connect("qc")
    try:
        until_hit(px, c, SQL.format(1))
        learned(c)
        before, begins = local(px), backend_status(mariadb, "Com_begin")
        for _ in range(3):
            exec_(c, "BEGIN")
            assert c.server_status & 1, "the local OK says IN_TRANS, as MariaDB's"
            assert q(c, SQL.format(1)) == (("d1",),)
            exec_(c, "COMMIT")
            assert not c.server_status & 1
        after = local(px)
        assert (after[0] - before[0], after[1] - before[1]) == (3, 3), (before, after)
        assert backend_status(mariadb, "Com_begin") == begins, "no BEGIN reached MariaDB"
    finally:
        c.close()


def test_the_deferred_begin_goes_first(px, mariadb):
    """A command that needs the backend runs inside the transaction: MariaDB says so, and a
    ROLLBACK undoes a write (had the BEGIN not been sent first, the write would have been
    committed on its own)."""
    c = px.connect("qc")
    try:
        learned(c)
        exec_(c, "BEGIN")
        assert q(c, "SELECT @@in_transaction") == ((1,),)
        exec_(c, "COMMIT")
        assert q(c, "SELECT @@in_transaction") == ((0,),)
        before = local(px)
        exec_(c, "BEGIN")
        exec_(c, "UPDATE qc.dtx SET v = 'rolled back' WHERE id = 2")
        exec_(c, "ROLLBACK")
        assert local(px)[0] == before[0] + 1 and local(px)[1] == before[1], "BEGIN deferred, ROLLBACK forwarded"
        assert mariadb.sql("SELECT v FROM qc.dtx WHERE id = 2").strip() == "d2"
    finally:
        c.close()


def test_a_deferred_transaction_keeps_its_snapshot(px, mariadb):
    """REPEATABLE READ as MariaDB gives it: the first read that reaches the backend (a miss,
    its BEGIN pipelined with it) takes the snapshot; a change committed after it is not seen
    by the transaction's later reads, and is by the next transaction."""
    c = px.connect("qc")
    try:
        learned(c)
        exec_(c, "BEGIN")
        assert q(c, SQL.format(3)) == (("d3",),)  # a miss: BEGIN and this read reach MariaDB
        mariadb.sql("UPDATE qc.dtx SET v = 'later' WHERE id = 4")
        time.sleep(0.3)  # the binlog invalidation has arrived
        for _ in range(3):
            assert q(c, SQL.format(4)) == (("d4",),), "the snapshot's value"
        exec_(c, "COMMIT")
        assert q(c, SQL.format(4)) == (("later",),)
    finally:
        c.close()


def test_a_read_only_transactions_commit_is_answered_at_once(px, mariadb):
    """A transaction that only read (its BEGIN went with its first miss) gets its COMMIT's OK
    at once; the COMMIT still reaches MariaDB, before the next command. One that wrote waits
    for MariaDB's OK."""
    c = px.connect("qc")
    try:
        learned(c)
        commits = backend_status(mariadb, "Com_commit")
        before = local(px)
        exec_(c, "BEGIN")
        assert q(c, SQL.format(11)) == (("d11",),)  # a miss: BEGIN + this read reach MariaDB
        exec_(c, "COMMIT")
        assert not c.server_status & 1
        assert local(px) == (before[0] + 1, before[1] + 1), "answered here"
        assert q(c, "SELECT @@in_transaction") == ((0,),), "MariaDB ran the COMMIT before this"
        assert backend_status(mariadb, "Com_commit") == commits + 1
        exec_(c, "BEGIN")
        exec_(c, "UPDATE qc.dtx SET v = 'written' WHERE id = 12")
        exec_(c, "COMMIT")
        assert local(px)[1] == before[1] + 1, "a transaction that wrote: MariaDB's OK"
        exec_(c, "BEGIN")
        assert q(c, "SELECT v FROM qc.dtx WHERE id = 13 FOR UPDATE") == (("d13",),)
        exec_(c, "ROLLBACK")
        assert local(px)[1] == before[1] + 1, "a locking read: MariaDB's OK"
    finally:
        c.close()


def test_autocommit_off_commits_locally_only_without_a_backend_transaction(px, mariadb):
    """autocommit=0 (PyMySQL's and SQLAlchemy's default): a read that reaches MariaDB opens a
    transaction there (its status says IN_TRANS), so the COMMIT after it goes to MariaDB (answered
    at once, as that transaction only read) and the snapshot ends; after reads that were all
    hits, the COMMIT is answered here and MariaDB never sees it."""
    c = px.connect("qc", autocommit=False)
    try:
        c.commit()  # learn COMMIT's OK under autocommit=0
        for i, row in enumerate((5, 6, 7)):
            assert q(c, SQL.format(row)) == ((f"d{row}",),)  # a miss: a transaction at MariaDB
            before, commits = local(px), backend_status(mariadb, "Com_commit")
            c.commit()
            assert not c.server_status & 1
            assert local(px)[1] == before[1] + 1, "a transaction that only read: answered at once"
            assert q(c, "SELECT @@in_transaction") == ((0,),), "MariaDB ran the COMMIT first"
            assert backend_status(mariadb, "Com_commit") == commits + 1
            c.commit()
            mariadb.sql(f"UPDATE qc.dtx SET v = 'new{i}' WHERE id = {row}")
            time.sleep(0.3)
            assert q(c, SQL.format(row)) == ((f"new{i}",),), "no snapshot left open by the COMMIT"
            c.commit()
        until_hit(px, c, SQL.format(8))
        c.commit()
        before = local(px)
        assert q(c, SQL.format(8)) == (("d8",),)
        commits = backend_status(mariadb, "Com_commit")
        c.commit()
        c.rollback()
        assert local(px) == (before[0], before[1] + 2), "only hits since: COMMIT and ROLLBACK answered here"
        assert backend_status(mariadb, "Com_commit") == commits, "MariaDB saw neither"
        exec_(c, "UPDATE qc.dtx SET v = 'by autocommit=0' WHERE id = 14")
        before = local(px)
        c.commit()
        assert local(px) == before, "a transaction that wrote: MariaDB's OK"
        assert mariadb.sql("SELECT v FROM qc.dtx WHERE id = 14").strip() == "by autocommit=0"
    finally:
        c.close()


def test_prepared_begin_and_commit_are_deferred(px):
    """sysbench prepares BEGIN and COMMIT (--db-ps-mode=auto): executions of those are
    deferred and answered here too."""
    c = px.connect("qc")
    try:
        until_hit(px, c, SQL.format(9))
        begin, _ = binproto.prepare(c, "BEGIN")
        commit, _ = binproto.prepare(c, "COMMIT")
        binproto.execute(c, begin, [])
        binproto.execute(c, commit, [])  # learned
        before = local(px)
        for _ in range(2):
            binproto.execute(c, begin, [])
            assert q(c, SQL.format(9)) == (("d9",),)
            binproto.execute(c, commit, [])
        assert local(px) == (before[0] + 2, before[1] + 2)
        binproto.execute(c, begin, [])
        assert q(c, "SELECT @@in_transaction") == ((1,),), "sent before a command that needs the backend"
        binproto.execute(c, commit, [])
        assert q(c, "SELECT @@in_transaction") == ((0,),)
    finally:
        c.close()


def test_never_deferred_where_the_backend_must_see_it(px):
    """WITH CONSISTENT SNAPSHOT takes the snapshot at once; a BEGIN inside a transaction
    commits it: both go to MariaDB."""
    c = px.connect("qc")
    try:
        learned(c)
        before = local(px)
        exec_(c, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
        exec_(c, "COMMIT")
        exec_(c, "BEGIN")
        exec_(c, "UPDATE qc.dtx SET v = 'committed by BEGIN' WHERE id = 10")
        exec_(c, "BEGIN")  # an implicit commit of the open transaction
        exec_(c, "ROLLBACK")
        assert q(c, "SELECT v FROM qc.dtx WHERE id = 10") == (("committed by BEGIN",),)
        after = local(px)
        assert after[0] - before[0] == 1, "only the BEGIN before the UPDATE was deferred"
    finally:
        c.close()
