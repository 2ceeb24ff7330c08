"""Joins tagged per table by key (issue 13, item 2: "joins on keys where both sides are
tagged"), against a real MariaDB and the real proxy. A join's WHERE and inner ON
conditions bound each table's rows, and an equality between two tables' columns carries
an integer bound across (`u.id = 3 AND p.user_id = u.id` bounds the posts by user_id 3); a
LEFT JOIN's ON bounds its right side only. A write to rows outside every bound leaves the
result cached; one inside drops it. Each write goes through the proxy and, separately,
directly to MariaDB (seen through the binlog)."""
import pytest

from qchelpers import check, is_hit, q, until_hit, wait_for
from test_tags import via  # noqa: F401 - the fixture: writes through the proxy or directly

pytestmark = pytest.mark.usefixtures("tables")


@pytest.fixture(scope="module")
def tables(mariadb):
    mariadb.sql("""
USE qc;
CREATE TABLE qc.jt_user (id INT PRIMARY KEY, email VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci
  NOT NULL UNIQUE, karma INT NOT NULL) ENGINE=InnoDB;
INSERT INTO qc.jt_user SELECT seq, CONCAT('u', seq, '@x'), 0 FROM seq_1_to_10;
CREATE TABLE qc.jt_post (id INT AUTO_INCREMENT PRIMARY KEY, user_id INT NOT NULL, title VARCHAR(32) NOT NULL,
  author VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, KEY (user_id), KEY (author))
  ENGINE=InnoDB;
INSERT INTO qc.jt_post (id, user_id, title, author) SELECT seq, 1 + seq % 5, CONCAT('p', seq),
  CONCAT('u', 1 + seq % 5, '@x') FROM seq_1_to_40;
""")


def joined(user):
    """SQLAlchemy's joinedload of a user's posts."""
    return ("SELECT u.id, u.karma, p1.id, p1.title FROM qc.jt_user AS u LEFT OUTER JOIN qc.jt_post AS p1 "
            f"ON u.id = p1.user_id WHERE u.id = {user} ORDER BY p1.id")


def inner(user):
    """An inner join by the same key, tables named instead of aliased."""
    return ("SELECT jt_post.id, jt_post.title, jt_user.karma FROM qc.jt_post JOIN qc.jt_user "
            f"ON jt_post.user_id = jt_user.id WHERE jt_user.id IN ({user}, 99) ORDER BY jt_post.id")


def test_a_users_posts_stay_when_other_users_change(proxy, pc, mariadb, via):
    tag = via.kind
    mine, others = [joined(3), inner(3)], [joined(2), inner(4)]
    # A new post of user 3 (its id unknown before the insert), another user's new post.
    check(proxy, pc, mariadb, via, f"INSERT INTO qc.jt_post (user_id, title, author) VALUES (3, 'n-{tag}', 'u3@x')",
          mine, others)
    check(proxy, pc, mariadb, via, f"INSERT INTO qc.jt_post (user_id, title, author) VALUES (5, 'o-{tag}', 'u5@x')",
          [], mine + others[:1])
    # The user row itself, and another user's.
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_user SET karma = karma + 1 WHERE id = 3 -- {tag}", mine, others)
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_user SET karma = karma + 1 WHERE id = 5 -- {tag}", [], mine)


def test_a_post_moved_between_users(proxy, pc, mariadb, via):
    """An UPDATE that moves a post from user 1 to user 4 changes both users' joins. The
    binlog shows the row before and after: user 2's join stays. Through the proxy, the
    statement names the row and its new owner but not the old one: every join by user_id
    is dropped."""
    tag = via.kind
    pid = q(pc, "SELECT MAX(id) FROM qc.jt_post WHERE user_id = 1")[0][0]
    until_hit(proxy, pc, joined(2))
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_post SET user_id = 4 WHERE id = {pid} -- {tag}",
          [joined(1), joined(4)], [joined(2)] if via.kind == "direct" else [])
    if via.kind == "proxy":
        assert not is_hit(proxy, pc, joined(2))[0]


def test_string_bounds_are_not_carried_across(proxy, pc, mariadb, via):
    """`u.email = 'U3@X'` finds the user 'u3@x' under general_ci, and through `p.author =
    u.email` the posts by author 'u3@x': carried to p.author (utf8mb4_bin), the bound 'U3@X'
    would miss a write of author 'u3@x'. It is not carried: any post write drops."""
    tag = via.kind
    sql = ("SELECT p.id, p.title FROM qc.jt_user u JOIN qc.jt_post p ON p.author = u.email "
           "WHERE u.email = 'U3@X' ORDER BY p.id")
    assert q(pc, sql), "the join must match rows for this test to mean anything"
    check(proxy, pc, mariadb, via, f"INSERT INTO qc.jt_post (user_id, title, author) VALUES (3, 's-{tag}', 'u3@x')",
          [sql], [])


def test_unbounded_sides_are_table_level(proxy, pc, mariadb, via):
    """`WHERE p.id = 7` bounds the posts only: the users side of the join is table-level
    (any user write drops it), the posts side by key (another post's write does not)."""
    tag = via.kind
    sql = "SELECT p.id, u.karma FROM qc.jt_post p INNER JOIN qc.jt_user u ON p.user_id = u.id WHERE p.id = 7"
    owner = q(pc, "SELECT user_id FROM qc.jt_post WHERE id = 7")[0][0]
    other = 1 + owner % 10
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_post SET title = 't-{tag}' WHERE id = 8", [], [sql])
    until_hit(proxy, pc, sql)
    q(via, f"UPDATE qc.jt_user SET karma = karma + 1 WHERE id = {other}")
    # Not asserted fresh (the karma it shows did not change), only that it is not a hit.
    got, _ = wait_for(lambda: not is_hit(proxy, pc, sql)[0], timeout=5 if via.kind == "direct" else 0)
    assert got, f"{sql!r} stayed cached after a write to users ({via.kind}): its users side is table-level"


def test_joined_rows_shown_by_key_are_row_tagged(proxy, pc, mariadb, via):
    """Django's select_related (a post with its author): the users side is bounded only by
    the post's user_id, which the statement does not say. The result shows u.id, so it is
    tagged with the user rows it holds: another user's write leaves it, its author's drops
    it. A LEFT JOIN row without a match (p.id NULL) holds no post row: a write to another
    post's title leaves it, one that moves a post to that user drops it."""
    tag = via.kind
    sql = "SELECT p.id, p.title, u.id, u.karma FROM qc.jt_post p JOIN qc.jt_user u ON u.id = p.user_id WHERE p.id = 9"
    owner = q(pc, "SELECT user_id FROM qc.jt_post WHERE id = 9")[0][0]
    other = 1 + owner % 10
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_user SET karma = karma + 1 WHERE id = {other} -- {tag}", [], [sql])
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_user SET karma = karma + 1 WHERE id = {owner} -- {tag}", [sql], [])
    lonely = ("SELECT u.id, u.karma, p.id, p.title FROM qc.jt_user u LEFT JOIN qc.jt_post p ON p.user_id = u.id "
              "WHERE u.id = 8 ORDER BY p.id")
    assert q(pc, lonely)[0][2] is None, "user 8 must have no posts for this test to mean anything"
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_post SET title = 'l-{tag}' WHERE id = 12", [], [lonely])
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_post SET user_id = 8 WHERE id = 12 -- {tag}", [lonely], [])
    q(via, "UPDATE qc.jt_post SET user_id = 3 WHERE id = 12")


def test_joins_naming_no_updated_column_stay(proxy, pc, mariadb, via):
    """Column tags for joins: a join that shows no primary key (no row tags) stays cached
    through an update of its own rows that assigns no column it names of that table
    (through its alias, or unqualified); one that assigns such a column, or a `u.*` join
    under any update of users, is dropped and answered fresh."""
    tag = via.kind
    names = ("SELECT u.email, p.title FROM qc.jt_user u JOIN qc.jt_post p ON p.user_id = u.id "
             "WHERE u.id = 2 ORDER BY p.title")
    star = ("SELECT u.*, p.title FROM qc.jt_user u JOIN qc.jt_post p ON p.user_id = u.id "
            "WHERE u.id = 2 ORDER BY p.title")
    post = q(pc, "SELECT MIN(id) FROM qc.jt_post WHERE user_id = 2")[0][0]
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_user SET karma = karma + 1 WHERE id = 2 -- {tag}", [star], [names])
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_post SET title = 'c-{tag}' WHERE id = {post}", [names, star], [])
    check(proxy, pc, mariadb, via, f"UPDATE qc.jt_user SET email = 'u2-{tag}@x' WHERE id = 2", [names, star], [])
