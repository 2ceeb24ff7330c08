"""Row tags and index tags (issue 13, item 2: what an ORM reads) against a real MariaDB and
the real proxy. A single-table result that shows its rows' integer primary key is tagged
with those rows: a write to other rows that assigns none of the columns the result selects
or orders by leaves it cached; a result by a non-unique index (`WHERE user_id = ?`) is
tagged by that value. Each write goes through the proxy and, separately, directly to
MariaDB (seen through the binlog); what it changes is fresh at once (through the binlog:
within seconds), the rest stays a hit (Qcache_hits)."""
import time

import pytest

import binproto as bp
from harness.mysqlproxy import connect
from qchelpers import check, is_hit, q, until_hit
from test_tags import via  # noqa: F401 - the fixture: writes through the proxy or directly

pytestmark = pytest.mark.usefixtures("tables")


@pytest.fixture(scope="module")
def tables(mariadb):
    mariadb.sql("""
USE qc;
CREATE TABLE qc.rt_user (id INT PRIMARY KEY, email VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci
  NOT NULL UNIQUE, karma INT NOT NULL,
  touched TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP) ENGINE=InnoDB;
INSERT INTO qc.rt_user SELECT seq, CONCAT('u', seq, '@x'), 0, '2000-01-01' FROM seq_1_to_10;
CREATE TABLE qc.rt_post (id INT AUTO_INCREMENT PRIMARY KEY, user_id INT NOT NULL, score INT NOT NULL,
  title VARCHAR(32) NOT NULL, KEY (user_id, score)) ENGINE=InnoDB;
INSERT INTO qc.rt_post (id, user_id, score, title) SELECT seq, 1 + seq % 5, seq, CONCAT('p', seq) FROM seq_1_to_50;
""")


def by_email(n, cols="id, karma"):
    return f"SELECT {cols} FROM qc.rt_user WHERE email = 'U{n}@x'"


def posts_of(user):
    return f"SELECT id, title FROM qc.rt_post WHERE user_id = {user} ORDER BY id DESC LIMIT 5"


def test_unique_key_lookups_stay_when_other_rows_change(proxy, pc, mariadb, via):
    tag = via.kind
    write = f"UPDATE qc.rt_user SET karma = karma + 1 WHERE id = 2 -- {tag}"
    check(proxy, pc, mariadb, via, write, [by_email(2)], [by_email(1), by_email(3, "id, email"), posts_of(1)])
    # Assigning the column the lookups select by: any of them may gain the row.
    if via.kind == "proxy":
        until_hit(proxy, pc, by_email(1))
        q(via, f"UPDATE qc.rt_user SET email = 'moved-{tag}@x' WHERE id = 4")
        assert not is_hit(proxy, pc, by_email(1))[0]
        q(via, "UPDATE qc.rt_user SET email = 'u4@x' WHERE id = 4")


def test_lists_by_an_index_stay_when_other_users_posts_change(proxy, pc, mariadb, via):
    tag = via.kind
    mine, other = posts_of(4), posts_of(3)
    # A new post of user 4 (auto-increment id), a title edit, a delete of one of its posts.
    check(proxy, pc, mariadb, via, f"INSERT INTO qc.rt_post (user_id, score, title) VALUES (4, 0, 'n-{tag}')",
          [mine], [other, by_email(1)])
    newest = q(pc, mine)[0][0]
    check(proxy, pc, mariadb, via, f"UPDATE qc.rt_post SET title = 'e-{tag}' WHERE id = {newest}", [mine], [other])
    check(proxy, pc, mariadb, via, f"DELETE FROM qc.rt_post WHERE id = {newest}", [mine], [other])
    # A post of user 4 that is not among the 5 newest: nothing it holds changes.
    # (Through the binlog, the event says which columns changed: the same holds.) The
    # binlog's events of the writes above (and their rechecks) drop user 4's list again
    # when they come: let them come first.
    oldest = q(pc, "SELECT MIN(id) FROM qc.rt_post WHERE user_id = 4")[0][0]
    time.sleep(1)
    check(proxy, pc, mariadb, via, f"UPDATE qc.rt_post SET title = 'old-{tag}' WHERE id = {oldest}", [], [mine])
    if via.kind == "direct":
        time.sleep(1)  # the binlog's invalidation has come by now
        assert is_hit(proxy, pc, mine)[0]


def test_a_column_the_table_updates_itself(proxy, pc, mariadb):
    """`touched` has ON UPDATE CURRENT_TIMESTAMP: an UPDATE that does not name it still
    moves the row into a result that selects by it."""
    w = proxy.connect("qc")
    try:
        sql = "SELECT id FROM qc.rt_user WHERE touched > '2001-01-01' AND email = 'u7@x'"
        assert until_hit(proxy, pc, sql) == ()
        q(w, "UPDATE qc.rt_user SET karma = karma + 1 WHERE id = 7")
        assert q(pc, sql) == ((7,),)
    finally:
        w.close()


def test_inserts_of_unknown_keys_drop_point_reads(proxy, pc, mariadb):
    w = proxy.connect("qc")
    direct = connect(mariadb.port, "qc")
    try:
        nxt = q(direct, "SELECT AUTO_INCREMENT FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA = 'qc' AND TABLE_NAME = 'rt_post'")[0][0]
        sql = f"SELECT id, title FROM qc.rt_post WHERE id = {nxt}"
        assert until_hit(proxy, pc, sql) == ()
        q(w, "INSERT INTO qc.rt_post (user_id, score, title) VALUES (5, 0, 'auto')")
        assert q(pc, sql) == ((nxt, "auto"),)
    finally:
        w.close()
        direct.close()


def test_prepared_results_are_row_tagged(proxy, pc, mariadb):
    """Binary-protocol replies carry the rows' keys too."""
    w = proxy.connect("qc")
    try:
        until_hit(proxy, pc, by_email(1))
        sid, _ = bp.prepare(pc, "SELECT id, karma FROM qc.rt_user WHERE email = ?")

        def executed(email):
            before = proxy.counters()
            rows = bp.execute(pc, sid, [email])
            return rows, proxy.counters()["Qcache_hits"] - before["Qcache_hits"]

        for _ in range(3):
            first, _ = executed("u8@x")
        assert executed("u8@x")[1] == 1
        q(w, "UPDATE qc.rt_user SET karma = karma + 1 WHERE id = 9")
        assert executed("u8@x") == (first, 1)
        q(w, "UPDATE qc.rt_user SET karma = karma + 1 WHERE id = 8")
        rows, hits = executed("u8@x")
        assert hits == 0 and rows != first
        bp.close(pc, sid)
    finally:
        w.close()


def test_results_naming_no_assigned_column_stay(proxy, pc, mariadb, via):
    """sysbench's writer (`UPDATE ... SET k = k + 1 WHERE id = ?`) against oltp_read_only's
    reads: only those that name the column go, through the proxy or the binlog."""
    kept = ["SELECT title FROM qc.rt_post WHERE id = 12",
            "SELECT title FROM qc.rt_post WHERE id BETWEEN 10 AND 20 ORDER BY title",
            "SELECT DISTINCT title FROM qc.rt_post WHERE id BETWEEN 10 AND 20 ORDER BY title",
            "SELECT COUNT(*) FROM qc.rt_post WHERE id BETWEEN 10 AND 20"]
    dropped = ["SELECT SUM(score) FROM qc.rt_post WHERE id BETWEEN 10 AND 20",
               "SELECT * FROM qc.rt_post WHERE id = 12"]
    check(proxy, pc, mariadb, via, "UPDATE qc.rt_post SET score = score + 1 WHERE id = 12", dropped, kept)
    if via.kind == "direct":
        time.sleep(1)  # the binlog's invalidation has come by now
        for sql in kept:
            assert is_hit(proxy, pc, sql)[0], sql
