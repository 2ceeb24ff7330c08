"""Finer tags (issue 13, item 2) against a real MariaDB and the real proxy: IN lists and
two-sided ranges on an integer primary key, string primary keys under _ci, _bin and binary
collations, composite primary keys and unique secondary keys. For each, a write through the
proxy and the same write made directly on MariaDB (seen through the binlog) drop the results
it changes (the next read is fresh) and leave results of other keys cached (the next read is a
hit, from the proxy's Qcache_hits)."""
import pytest

from harness.mysqlproxy import connect
from qchelpers import check, is_hit, q, until_hit, wait_for

pytestmark = pytest.mark.usefixtures("tables")


@pytest.fixture(scope="module")
def tables(mariadb):
    mariadb.sql("""
USE qc;
CREATE TABLE qc.tg_int (id INT PRIMARY KEY, v VARCHAR(32)) ENGINE=InnoDB;
INSERT INTO qc.tg_int SELECT seq, CONCAT('i', seq) FROM seq_1_to_200;
CREATE TABLE qc.tg_ci (code VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci PRIMARY KEY,
  v VARCHAR(32)) ENGINE=InnoDB;
INSERT INTO qc.tg_ci VALUES ('abc', 'a0'), ('xyz', 'x0');
CREATE TABLE qc.tg_bin (code VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PRIMARY KEY,
  v VARCHAR(32)) ENGINE=InnoDB;
INSERT INTO qc.tg_bin VALUES ('abc', 'lower0'), ('ABC', 'upper0');
CREATE TABLE qc.tg_vb (code VARBINARY(32) PRIMARY KEY, v VARCHAR(32)) ENGINE=InnoDB;
INSERT INTO qc.tg_vb VALUES ('abc', 'plain0'), ('abc ', 'space0');
CREATE TABLE qc.tg_pair (a INT, b VARCHAR(16) CHARACTER SET latin1 COLLATE latin1_swedish_ci, v VARCHAR(32),
  PRIMARY KEY (a, b)) ENGINE=InnoDB;
INSERT INTO qc.tg_pair VALUES (1, 'x', 'p0'), (1, 'y', 'p0'), (2, 'x', 'p0');
CREATE TABLE qc.tg_user (id INT PRIMARY KEY, email VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci,
  name VARCHAR(32), UNIQUE KEY (email)) ENGINE=InnoDB;
INSERT INTO qc.tg_user VALUES (1, 'a@x', 'ann'), (2, 'b@x', 'bob'), (3, 'c@x', 'cid');
CREATE TABLE qc.tg_person (name VARCHAR(32) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci PRIMARY KEY,
  email VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci UNIQUE, n INT) ENGINE=InnoDB;
INSERT INTO qc.tg_person VALUES ('ann', 'a@x', 0), ('bob', 'b@x', 0);
""")


@pytest.fixture(params=["proxy", "direct"])
def via(request, proxy, mariadb):
    """How the test's writes reach MariaDB: through the proxy, or directly (binlog)."""
    c = proxy.connect("qc") if request.param == "proxy" else connect(mariadb.port, "qc")
    c.kind = request.param
    yield c
    c.close()


def test_in_lists(proxy, pc, mariadb, via):
    n = 1 if via.kind == "proxy" else 2
    reads = [f"SELECT id, v FROM qc.tg_int WHERE id IN ({n}, 10, 11)", f"SELECT id, v FROM qc.tg_int WHERE id IN ({n + 2}, 12)",
             f"SELECT v FROM qc.tg_int WHERE id = {n + 4}"]
    check(proxy, pc, mariadb, via, f"UPDATE qc.tg_int SET v = CONCAT(v, '!') WHERE id = {n}", reads[:1], reads[1:])


@pytest.mark.parametrize("key,dropped", [(20, [1]), (30, []), (31, [2]), (40, [2]), (41, [3]), (44, [])])
def test_two_sided_ranges(proxy, pc, mariadb, via, key, dropped):
    reads = [
        "SELECT id, v FROM qc.tg_int WHERE id BETWEEN 10 AND 19",
        "SELECT id, v FROM qc.tg_int WHERE id >= 20 AND id < 30",
        "SELECT SUM(LENGTH(v)) FROM qc.tg_int WHERE id > 30 AND id <= 40",
        "SELECT DISTINCT v FROM qc.tg_int WHERE id BETWEEN 41 AND 43 ORDER BY v",
    ]
    write = f"UPDATE qc.tg_int SET v = CONCAT(v, '{via.kind[0]}') WHERE id = {key}"
    check(proxy, pc, mariadb, via, write, [reads[i] for i in dropped],
          [r for i, r in enumerate(reads) if i not in dropped])


def test_inserts_and_deletes_inside_a_range(proxy, pc, mariadb, via):
    base = 1000 if via.kind == "proxy" else 2000
    inside = f"SELECT COUNT(*), MAX(v) FROM qc.tg_int WHERE id BETWEEN {base} AND {base + 10}"
    outside = f"SELECT COUNT(*) FROM qc.tg_int WHERE id BETWEEN {base + 11} AND {base + 20}"
    point = "SELECT v FROM qc.tg_int WHERE id = 150"
    check(proxy, pc, mariadb, via, f"INSERT INTO qc.tg_int (id, v) VALUES ({base + 5}, 'new')", [inside], [outside, point])
    check(proxy, pc, mariadb, via, f"DELETE FROM qc.tg_int WHERE id = {base + 5}", [inside], [outside, point])


def test_sysbench_range_reads_are_cached_by_range(proxy, pc):
    for sql in ["SELECT v FROM qc.tg_int WHERE id BETWEEN 100 AND 199",
                "SELECT SUM(id) FROM qc.tg_int WHERE id BETWEEN 100 AND 199",
                "SELECT v FROM qc.tg_int WHERE id BETWEEN 100 AND 199 ORDER BY v",
                "SELECT DISTINCT v FROM qc.tg_int WHERE id BETWEEN 100 AND 199 ORDER BY v"]:
        until_hit(proxy, pc, sql)
        q(pc, "UPDATE qc.tg_int SET v = v WHERE id = 5")  # outside: stays cached
        assert is_hit(proxy, pc, sql)[0], sql


def test_string_key_case_insensitive(proxy, pc, mariadb, via):
    mark = via.kind
    spellings = ["SELECT v FROM qc.tg_ci WHERE code = 'abc'", "SELECT v FROM qc.tg_ci WHERE code = 'ABC'",
                 "SELECT v FROM qc.tg_ci WHERE code = 'abc  '", "SELECT v FROM qc.tg_ci WHERE code IN ('aBc', 'q')"]
    other = ["SELECT v FROM qc.tg_ci WHERE code = 'xyz'"]
    check(proxy, pc, mariadb, via, f"UPDATE qc.tg_ci SET v = CONCAT(v, '{mark}') WHERE code = 'Abc '", spellings, other)
    # A new row under another spelling of a cached (empty) key: the empty result goes too.
    empty = ["SELECT v FROM qc.tg_ci WHERE code = 'new'", "SELECT COUNT(*) FROM qc.tg_ci WHERE code = 'NEW '"]
    check(proxy, pc, mariadb, via, f"INSERT INTO qc.tg_ci (code, v) VALUES ('NeW', '{mark}')", empty, other)
    check(proxy, pc, mariadb, via, "DELETE FROM qc.tg_ci WHERE code = 'new'", empty, other)


def test_string_key_binary_collations(proxy, pc, mariadb, via):
    mark = via.kind
    lower, upper = "SELECT v FROM qc.tg_bin WHERE code = 'abc'", "SELECT v FROM qc.tg_bin WHERE code = 'ABC'"
    check(proxy, pc, mariadb, via, f"UPDATE qc.tg_bin SET v = CONCAT(v, '{mark}') WHERE code = 'ABC'", [upper], [lower])
    # utf8mb4_bin pads: 'abc ' is 'abc'.
    check(proxy, pc, mariadb, via, f"UPDATE qc.tg_bin SET v = CONCAT(v, '{mark}') WHERE code = 'abc '", [lower], [upper])
    # VARBINARY: exact bytes, 'abc ' is another key.
    plain, space = "SELECT v FROM qc.tg_vb WHERE code = 'abc'", "SELECT v FROM qc.tg_vb WHERE code = 'abc '"
    check(proxy, pc, mariadb, via, f"UPDATE qc.tg_vb SET v = CONCAT(v, '{mark}') WHERE code = 'abc '", [space], [plain])


def test_composite_primary_key(proxy, pc, mariadb, via):
    mark = via.kind
    reads = ["SELECT v FROM qc.tg_pair WHERE a = 1 AND b = 'x'", "SELECT v FROM qc.tg_pair WHERE a = 1 AND b = 'y'",
             "SELECT v FROM qc.tg_pair WHERE b = 'X' AND a = 2", "SELECT v FROM qc.tg_pair WHERE a IN (2, 3) AND b = 'z'"]
    check(proxy, pc, mariadb, via, f"UPDATE qc.tg_pair SET v = CONCAT(v, '{mark}') WHERE a = 1 AND b = 'X'",
          reads[:1], reads[1:])
    check(proxy, pc, mariadb, via, f"INSERT INTO qc.tg_pair (a, b, v) VALUES (3, 'Z', '{mark}')", reads[3:], reads[:3])
    check(proxy, pc, mariadb, via, "DELETE FROM qc.tg_pair WHERE a = 3 AND b = 'z'", reads[3:], reads[:3])


def test_unique_key(proxy, pc, mariadb, via):
    mark = via.kind
    by_email = ["SELECT id, name FROM qc.tg_user WHERE email = 'a@x'", "SELECT id, name FROM qc.tg_user WHERE email = 'B@X'"]
    by_id = ["SELECT name FROM qc.tg_user WHERE id = 1", "SELECT name FROM qc.tg_user WHERE id = 2"]
    third = "SELECT email, name FROM qc.tg_user WHERE id = 3"
    write = f"UPDATE qc.tg_user SET name = CONCAT(name, '{mark}') WHERE id = 3"
    if via.kind == "proxy":
        # The statement does not say row 3's email: results by email that show their rows'
        # primary key (row tags) and do not hold row 3 stay; one without it goes.
        blind = "SELECT name FROM qc.tg_user WHERE email = 'a@x'"
        direct = connect(mariadb.port, "qc")
        for sql in by_email + by_id + [third, blind]:
            until_hit(proxy, pc, sql)
        q(via, write)
        assert q(pc, third) == q(direct, third)
        assert not is_hit(proxy, pc, blind)[0]
        for sql in by_email + by_id:
            assert is_hit(proxy, pc, sql)[0], sql
        direct.close()
    else:
        # The binlog images carry row 3's email: results of other emails stay.
        check(proxy, pc, mariadb, via, write, [third], by_email + by_id)
    # Changing an email: before and after values both go.
    a_old, a_new = by_email[0], "SELECT id, name FROM qc.tg_user WHERE email = 'Z@x'"
    check(proxy, pc, mariadb, via, "UPDATE qc.tg_user SET email = 'z@x' WHERE id = 1", [a_old, a_new, by_id[0].replace("name", "email")], [by_id[1]])
    check(proxy, pc, mariadb, via, "UPDATE qc.tg_user SET email = 'a@x' WHERE id = 1", [a_old, a_new], [by_id[1]])


def test_unique_key_of_a_string_keyed_table(proxy, pc, mariadb, via):
    mark = via.kind
    reads = ["SELECT n FROM qc.tg_person WHERE email = 'A@x'", "SELECT n FROM qc.tg_person WHERE email = 'b@x'",
             "SELECT n FROM qc.tg_person WHERE name = 'ANN'", "SELECT n FROM qc.tg_person WHERE name = 'bob'"]
    # By the unique key: the primary key's value is not in the statement (all its results go).
    write = "UPDATE qc.tg_person SET n = n + 1 WHERE email = 'a@X'"
    if via.kind == "proxy":
        check(proxy, pc, mariadb, via, write, [reads[0], reads[2]], [reads[1]])
        assert not is_hit(proxy, pc, reads[3])[0]
    else:
        check(proxy, pc, mariadb, via, write, [reads[0], reads[2]], [reads[1], reads[3]])
    write = f"UPDATE qc.tg_person SET n = n + 1 WHERE name = 'Bob' -- {mark}"
    if via.kind == "proxy":
        check(proxy, pc, mariadb, via, write, [reads[1], reads[3]], [reads[2]])
    else:
        check(proxy, pc, mariadb, via, write, [reads[1], reads[3]], [reads[0], reads[2]])


def test_prepared_string_parameters(proxy, pc):
    """Binary protocol: a VAR_STRING parameter tags like a literal (another key's write
    leaves the result cached, a write under another spelling of its key drops it)."""
    import binproto as bp  # noqa: PLC0415

    c = proxy.connect("qc")
    try:
        sid, _ = bp.prepare(c, "SELECT v FROM qc.tg_ci WHERE code = ?")

        def hit(value):
            before = proxy.counters()["Qcache_hits"]
            rows = bp.execute(c, sid, [value])
            return rows, proxy.counters()["Qcache_hits"] > before

        first, _ = hit("XYZ")
        assert any(hit("xyz")[1] for _ in range(20)), "the prepared read was never a hit"
        q(pc, "UPDATE qc.tg_ci SET v = v WHERE code = 'abc'")
        assert hit("xyz") == (first, True)
        q(pc, "UPDATE qc.tg_ci SET v = 'prepared' WHERE code = 'XYZ '")
        assert hit("xYz") == ([(b"prepared",)], False)
    finally:
        c.close()


def test_collation_rule_matches_mariadb(mariadb):
    """The normalization the tags rely on (crates/querycache/src/keys.rs): under each collation
    it accepts, two short printable-ASCII strings are equal exactly when they are equal after
    ASCII lower-casing (not for _bin) and trimming trailing spaces; no printable character is
    ignored. Checked on MariaDB itself for every collation of the accepted families it has."""
    families = ["general_ci", "general_nopad_ci", "general_mysql500_ci", "unicode_ci", "unicode_nopad_ci",
                "unicode_520_ci", "unicode_520_nopad_ci", "swedish_ci", "swedish_nopad_ci", "bin", "nopad_bin"]
    c = connect(mariadb.port)
    try:
        names = [r[0] for r in q(c, "SELECT COLLATION_NAME FROM information_schema.COLLATIONS")]
        chosen = sorted(n for n in names for cs in ("utf8mb4_", "utf8mb3_", "latin1_", "ascii_")
                        if n.startswith(cs) and n[len(cs):] in families)
        assert "utf8mb4_general_ci" in chosen and "latin1_swedish_ci" in chosen
        chars = [chr(x) for x in range(0x20, 0x7f)]
        strs = sorted(set(chars + [a + b for a in "aZ -." for b in chars] + ["a" + ch + "b" for ch in chars] + ["ab"]))
        q(c, "CREATE DATABASE IF NOT EXISTS coll")
        for coll in chosen:
            cs = coll.split("_")[0]
            q(c, f"CREATE OR REPLACE TABLE coll.s (s VARCHAR(8) CHARACTER SET {cs} COLLATE {coll})")
            with c.cursor() as cur:
                cur.executemany("INSERT INTO coll.s VALUES (%s)", strs)
            pairs = q(c, "SELECT a.s, b.s FROM coll.s a JOIN coll.s b ON a.s = b.s AND BINARY a.s < BINARY b.s")
            fold = (lambda s: s.rstrip(" ")) if coll.endswith("_bin") else (lambda s: s.rstrip(" ").lower())
            wrong = [(a, b) for a, b in pairs if fold(a) != fold(b)]
            assert not wrong, f"{coll}: MariaDB says equal: {wrong[:5]}"
        q(c, "DROP DATABASE coll")
    finally:
        c.close()
