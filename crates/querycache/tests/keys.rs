//! Finer tags: IN lists and two-sided ranges on the integer primary key, string primary
//! keys under their collation, composite primary keys and unique secondary keys; what a
//! write through the proxy and a binlog row change drop, and what they leave cached.

mod common;

use common::{exec, read, rows, session};
use querycache::{Invalidation, Param, PkColumn, Plan, QueryCache, Scope, Source, TableInfo};

/// The default test cache, plus:
/// - `codes`: code VARCHAR utf8mb4_general_ci primary key;
/// - `bins`: code VARBINARY primary key;
/// - `bcodes`: code VARCHAR utf8mb4_bin primary key;
/// - `pairs`: primary key (a INT, b VARCHAR latin1_swedish_ci);
/// - `users`: id INT primary key, UNIQUE(email) utf8mb4_general_ci, UNIQUE(handle) utf8mb4_bin;
/// - `people`: name VARCHAR _ci primary key, UNIQUE(email) _ci;
/// - `texts`: code VARCHAR latin1_general_cs primary key (a collation it cannot follow);
/// - `posts`: id INT primary key, INDEX(user_id INT), INDEX(author utf8mb4_bin).
fn cache() -> QueryCache {
    let c = common::cache();
    let s = |n: &str, coll: &str| PkColumn::new(n, "varchar", Some(coll));
    let ci = |n: &str| s(n, "utf8mb4_general_ci");
    let set = |t: &str, info: TableInfo| c.schema().set_table("sbtest", t, info);
    set("codes", TableInfo::base(vec![ci("code")]));
    set("bins", TableInfo::base(vec![PkColumn::new("code", "varbinary", Some("binary"))]));
    set("bcodes", TableInfo::base(vec![s("code", "utf8mb4_bin")]));
    set("pairs", TableInfo::base(vec![PkColumn::new("a", "int", None), s("b", "latin1_swedish_ci")]));
    let users = TableInfo::base(vec![PkColumn::int("id")]).with_unique(vec![ci("email")]);
    set("users", users.with_unique(vec![s("handle", "utf8mb4_bin")]));
    set("people", TableInfo::base(vec![ci("name")]).with_unique(vec![ci("email")]));
    set("texts", TableInfo::base(vec![s("code", "latin1_general_cs")]));
    let posts = TableInfo::base(vec![PkColumn::int("id")]).with_index(vec![PkColumn::int("user_id")]);
    set("posts", posts.with_index(vec![s("author", "utf8mb4_bin")]));
    c
}

/// Every table's scope, in FROM order.
fn scopes(c: &QueryCache, sql: &str) -> Vec<Scope> {
    let mut s = session(c);
    match c.on_query(&mut s, sql.as_bytes()) {
        Plan::Cached { tags, .. } => tags.0.iter().map(|t| t.scope.clone()).collect(),
        p => panic!("not cached: {sql}: {p:?}"),
    }
}

fn scope(c: &QueryCache, sql: &str) -> Scope {
    let mut s = session(c);
    match c.on_query(&mut s, sql.as_bytes()) {
        Plan::Cached { tags, .. } => {
            assert_eq!(tags.0.len(), 1, "{sql}");
            tags.0[0].scope.clone()
        }
        p => panic!("not cached: {sql}: {p:?}"),
    }
}

/// The key name and number of values of a `Scope::Values` (panics otherwise).
fn values(c: &QueryCache, sql: &str) -> (String, usize) {
    match scope(c, sql) {
        Scope::Values(kv) => (kv.key.to_string(), kv.values.len()),
        s => panic!("{sql}: {s:?}"),
    }
}

fn write(c: &QueryCache, sql: &str) -> Invalidation {
    let mut s = session(c);
    match c.on_query(&mut s, sql.as_bytes()) {
        Plan::Write(mut v) if v.len() == 1 => v.remove(0),
        p => panic!("not a one-table write: {sql}: {p:?}"),
    }
}

/// Fill every query, then run `change` and return which of them are still hits.
fn survivors(c: &QueryCache, queries: &[&str], change: impl FnOnce(&QueryCache)) -> Vec<bool> {
    let mut s = session(c);
    for q in queries {
        read(c, &mut s, q, &rows("x"));
        assert!(read(c, &mut s, q, &rows("x")).1, "cached: {q}");
    }
    change(c);
    queries.iter().map(|q| read(c, &mut s, q, &rows("x")).1).collect()
}

fn proxy_write(sql: &str) -> impl FnOnce(&QueryCache) + '_ {
    move |c| {
        let mut s = session(c);
        assert!(matches!(exec(c, &mut s, sql, 0x0002), Plan::Write(_)), "{sql}");
    }
}

/// A binlog row change of `table` with these column names and row images (strings are
/// string columns, numbers integer ones, "NULL" a NULL).
fn binlog<'a>(table: &'a str, columns: &'a [&'a str], images: &'a [&'a [&'a str]]) -> impl FnOnce(&QueryCache) + 'a {
    move |c| {
        let cols: Vec<String> = columns.iter().map(|s| s.to_string()).collect();
        let value = |r: &&[&str], i: usize| match r[i] {
            "NULL" => Param::Null,
            v => v.parse::<i64>().map_or_else(|_| Param::Str(v.as_bytes().into()), Param::Int),
        };
        let inv = c.rows_changed("sbtest", table, &cols, images, value, querycache::RowChange::Any);
        assert!(matches!(inv, Invalidation::Keys { .. }), "{inv:?}");
        c.invalidate(&inv, Source::Binlog);
    }
}

#[test]
fn in_lists_are_capped() {
    let c = cache();
    let list = |n: i64| (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",");
    let q = |n: i64| format!("SELECT c FROM sbtest1 WHERE id IN ({})", list(n));
    assert_eq!(scope(&c, &q(64)), Scope::Points((1..=64).collect()));
    assert_eq!(scope(&c, &q(65)), Scope::Range(1, 65), "too many points: the range they span");
    let q = format!("SELECT c FROM sbtest1 WHERE id IN ({}) AND id BETWEEN 3 AND 4", list(100));
    assert_eq!(scope(&c, &q), Scope::Points(vec![3, 4]));
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id IN (1, 7) AND id > 3"), Scope::Points(vec![7]));
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id IN (1, 2) AND id > 3"), Scope::Table);
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id IN (1, '2')"), Scope::Table);
    let ok = survivors(
        &c,
        &["SELECT c FROM sbtest1 WHERE id IN (1,2,3)", "SELECT c FROM sbtest1 WHERE id IN (4,5)"],
        proxy_write("UPDATE sbtest1 SET c = 'x' WHERE id = 2"),
    );
    assert_eq!(ok, [false, true]);
}

#[test]
fn two_sided_ranges() {
    let c = cache();
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id >= 5 AND id < 10"), Scope::Range(5, 9));
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id > 5 AND id <= 10"), Scope::Range(6, 10));
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE 10 > id AND 5 < id"), Scope::Range(6, 9));
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 10 AND id < 8"), Scope::Range(5, 7));
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id BETWEEN -3 AND 3"), Scope::Range(-3, 3));
    // One-sided, very wide, empty: table-level.
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id > 5"), Scope::Table);
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 1048576"), Scope::Range(1, 1048576));
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id BETWEEN 1 AND 1048577"), Scope::Table);
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id BETWEEN 10 AND 5"), Scope::Table);
    assert_eq!(scope(&c, "SELECT c FROM sbtest1 WHERE id > 9223372036854775807 AND id < 5"), Scope::Table);
    let q =
        ["SELECT c FROM sbtest1 WHERE id >= 5 AND id < 10", "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 20 AND 29"];
    // Boundaries: 4 and 10 are outside [5, 10), 5 and 9 inside; 19 and 30 outside [20, 29].
    for (key, expect) in [(4, [true, true]), (10, [true, true]), (19, [true, true]), (30, [true, true])] {
        assert_eq!(survivors(&c, &q, proxy_write(&format!("DELETE FROM sbtest1 WHERE id = {key}"))), expect, "{key}");
    }
    for (key, expect) in [(5, [false, true]), (9, [false, true]), (20, [true, false]), (29, [true, false])] {
        assert_eq!(survivors(&c, &q, proxy_write(&format!("DELETE FROM sbtest1 WHERE id = {key}"))), expect, "{key}");
    }
    // An INSERT of a key inside the range changes it; from the binlog too.
    let ins = proxy_write("INSERT INTO sbtest1 (id, k) VALUES (7, 1)");
    assert_eq!(survivors(&c, &q, ins), [false, true]);
    assert_eq!(survivors(&c, &q, binlog("sbtest1", &["id", "k"], &[&["25", "1"]])), [true, false]);
    // A write narrowed by a two-sided range drops exactly the ranges it overlaps.
    assert_eq!(survivors(&c, &q, proxy_write("UPDATE sbtest1 SET k = 1 WHERE id > 10 AND id <= 20")), [true, false]);
}

#[test]
fn string_keys_follow_the_collation() {
    let c = cache();
    let same = |a: &str, b: &str| scope(&c, a) == scope(&c, b);
    let ci = "SELECT v FROM codes WHERE code = ";
    assert_eq!(values(&c, &format!("{ci}'abc'")), ("code".into(), 1));
    assert!(same(&format!("{ci}'abc'"), &format!("{ci}'ABC'")));
    assert!(same(&format!("{ci}'abc'"), &format!("{ci}\"abc   \"")));
    assert!(!same(&format!("{ci}'abc'"), &format!("{ci}' abc'")));
    let bin = "SELECT v FROM bcodes WHERE code = ";
    assert!(!same(&format!("{bin}'abc'"), &format!("{bin}'ABC'")));
    assert!(same(&format!("{bin}'abc'"), &format!("{bin}'abc '")));
    let bytes = "SELECT v FROM bins WHERE code = ";
    assert!(!same(&format!("{bytes}'abc'"), &format!("{bytes}'ABC'")));
    assert!(!same(&format!("{bytes}'abc'"), &format!("{bytes}'abc '")));
    assert_eq!(values(&c, "SELECT v FROM codes WHERE code IN ('a', 'A', 'b')"), ("code".into(), 2));
    // Numbers compare numerically with strings; escapes, non-ASCII, unknown collations,
    // other operators: table-level.
    for sql in [
        "SELECT v FROM codes WHERE code = 5",
        "SELECT v FROM codes WHERE code = 'a\\'b'",
        "SELECT v FROM codes WHERE code = 'it''s'",
        "SELECT v FROM codes WHERE code = 'é'",
        "SELECT v FROM codes WHERE code = X'616263'",
        "SELECT v FROM codes WHERE code = _latin1'abc'",
        "SELECT v FROM codes WHERE code = 'abc' COLLATE utf8mb4_bin",
        "SELECT v FROM codes WHERE code LIKE 'abc'",
        "SELECT v FROM codes WHERE code > 'abc'",
        "SELECT v FROM texts WHERE code = 'abc'",
    ] {
        let mut s = session(&c);
        // Not cached at all is fine too.
        if let Plan::Cached { tags, .. } = c.on_query(&mut s, sql.as_bytes()) {
            assert_eq!(tags.0[0].scope, Scope::Table, "{sql}");
        }
    }
    // A write under one spelling drops every spelling; other keys stay.
    let q = [
        "SELECT v FROM codes WHERE code = 'abc'",
        "SELECT v FROM codes WHERE code = 'ABC '",
        "SELECT v FROM codes WHERE code = 'xyz'",
    ];
    assert_eq!(survivors(&c, &q, proxy_write("UPDATE codes SET v = 1 WHERE code = 'Abc'")), [false, false, true]);
    assert_eq!(survivors(&c, &q, proxy_write("DELETE FROM codes WHERE code IN ('XYZ')")), [true, true, false]);
    assert_eq!(survivors(&c, &q, proxy_write("INSERT INTO codes (code, v) VALUES ('aBc  ', 1)")), [false, false, true]);
    assert_eq!(
        survivors(&c, &q, binlog("codes", &["code", "v"], &[&["abc", "1"], &["ABC", "2"]])),
        [false, false, true]
    );
    // Under _bin, 'ABC' is another key but 'abc ' the same; VARBINARY: exact bytes.
    let q = ["SELECT v FROM bcodes WHERE code = 'abc'", "SELECT v FROM bcodes WHERE code = 'ABC'"];
    assert_eq!(survivors(&c, &q, proxy_write("UPDATE bcodes SET v = 1 WHERE code = 'ABC'")), [true, false]);
    assert_eq!(survivors(&c, &q, binlog("bcodes", &["code"], &[&["abc  "]])), [false, true]);
    let q = ["SELECT v FROM bins WHERE code = 'abc'", "SELECT v FROM bins WHERE code = 'abc '"];
    assert_eq!(survivors(&c, &q, proxy_write("DELETE FROM bins WHERE code = 'abc '")), [true, false]);
    // A write it cannot narrow (non-ASCII, no key predicate, assigning the key): all of them.
    let q = ["SELECT v FROM codes WHERE code = 'abc'", "SELECT v FROM codes WHERE code = 'xyz'"];
    assert_eq!(survivors(&c, &q, proxy_write("UPDATE codes SET v = 1 WHERE code = 'é'")), [false, false]);
    assert_eq!(survivors(&c, &q, proxy_write("UPDATE codes SET code = 'q' WHERE code = 'abc'")), [false, false]);
    assert_eq!(survivors(&c, &q, proxy_write("UPDATE codes SET v = 1 WHERE v = 3")), [false, false]);
}

#[test]
fn composite_primary_keys() {
    let c = cache();
    assert_eq!(values(&c, "SELECT * FROM pairs WHERE a = 1 AND b = 'x'"), ("a,b".into(), 1));
    assert_eq!(values(&c, "SELECT * FROM pairs WHERE b = 'X ' AND a = 1"), ("a,b".into(), 1));
    assert_eq!(values(&c, "SELECT * FROM pairs WHERE a IN (1, 2) AND b IN ('x', 'y')"), ("a,b".into(), 4));
    assert_eq!(scope(&c, "SELECT * FROM pairs WHERE a = 1"), Scope::Table);
    assert_eq!(scope(&c, "SELECT * FROM pairs WHERE a = '1' AND b = 'x'"), Scope::Table);
    let q = [
        "SELECT * FROM pairs WHERE a = 1 AND b = 'x'",
        "SELECT * FROM pairs WHERE a = 1 AND b = 'y'",
        "SELECT * FROM pairs WHERE a = 2 AND b = 'x'",
        "SELECT * FROM pairs WHERE a = 1",
    ];
    let upd = proxy_write("UPDATE pairs SET v = 1 WHERE a = 1 AND b = 'X'");
    assert_eq!(survivors(&c, &q, upd), [false, true, true, false]);
    let ins = proxy_write("INSERT INTO pairs (a, b, v) VALUES (2, 'x', 1), (3, 'z', 1)");
    assert_eq!(survivors(&c, &q, ins), [true, true, false, false]);
    assert_eq!(survivors(&c, &q, binlog("pairs", &["a", "b", "v"], &[&["1", "Y", "1"]])), [true, false, true, false]);
    // Only part of the key: every tuple.
    assert_eq!(survivors(&c, &q, proxy_write("DELETE FROM pairs WHERE a = 1")), [false, false, false, false]);
}

#[test]
fn unique_secondary_keys() {
    let c = cache();
    assert_eq!(values(&c, "SELECT id FROM users WHERE email = 'A@x'"), ("email".into(), 1));
    assert_eq!(values(&c, "SELECT id FROM users WHERE handle = 'ann'"), ("handle".into(), 1));
    assert_eq!(scope(&c, "SELECT id FROM users WHERE id = 3 AND email = 'a@x'"), Scope::Points(vec![3]));
    let q = [
        "SELECT id FROM users WHERE email = 'a@x'",
        "SELECT id FROM users WHERE email = 'b@x'",
        "SELECT id FROM users WHERE handle = 'ann'",
        "SELECT email FROM users WHERE id = 1",
        "SELECT email FROM users WHERE id = 2",
    ];
    // Through the proxy an UPDATE by primary key does not know the row's old email or
    // handle: every result by email goes, other primary keys stay, and so does the
    // lookup by handle (it names no column the UPDATE assigns).
    let upd = proxy_write("UPDATE users SET email = 'c@x' WHERE id = 1");
    assert_eq!(survivors(&c, &q, upd), [false, false, true, false, true]);
    // An INSERT knows every value of its row.
    let ins = proxy_write("INSERT INTO users (id, email, handle) VALUES (3, 'A@X', 'bob')");
    assert_eq!(survivors(&c, &q, ins), [false, true, true, true, true]);
    let ins = proxy_write("INSERT INTO users (id, email) VALUES (4, 'z@x')");
    assert_eq!(survivors(&c, &q, ins), [true, true, false, true, true], "handle unknown (default)");
    // A binlog row change carries every value, before and after.
    let b = binlog("users", &["id", "email", "handle"], &[&["1", "a@x", "ann"], &["1", "c@x", "ann"]]);
    assert_eq!(survivors(&c, &q, b), [false, true, false, false, true]);
    let b = binlog("users", &["id", "email", "handle"], &[&["2", "NULL", "zed"]]);
    assert_eq!(survivors(&c, &q, b), [false, false, true, true, false], "a NULL email is unknown");
    // A table whose primary key is a string: a write by the unique key knows that key only.
    let q = [
        "SELECT * FROM people WHERE email = 'a@x'",
        "SELECT * FROM people WHERE email = 'b@x'",
        "SELECT * FROM people WHERE name = 'ann'",
    ];
    assert_eq!(survivors(&c, &q, proxy_write("UPDATE people SET v = 1 WHERE email = 'A@x'")), [false, true, false]);
    assert_eq!(survivors(&c, &q, proxy_write("DELETE FROM people WHERE name = 'bob'")), [false, false, true]);
}

#[test]
fn writes_carry_their_key_values() {
    let c = cache();
    let keys = |inv: Invalidation| match inv {
        Invalidation::Keys { keys, values, .. } => {
            (keys, values.into_iter().map(|kv| (kv.key.to_string(), kv.values.len())).collect::<Vec<_>>())
        }
        i => panic!("{i:?}"),
    };
    assert_eq!(keys(write(&c, "UPDATE sbtest1 SET k = 1 WHERE id >= 5 AND id < 8")), (vec![5, 6, 7], vec![]));
    assert_eq!(keys(write(&c, "UPDATE users SET v = 1 WHERE id = 3")), (vec![3], vec![]));
    let both = vec![("email".into(), 1), ("handle".into(), 1)];
    assert_eq!(keys(write(&c, "INSERT INTO users (id, email, handle) VALUES (3, 'a', 'b')")), (vec![3], both));
    assert_eq!(keys(write(&c, "DELETE FROM pairs WHERE a = 1 AND b IN ('x', 'y')")), (vec![], vec![("a,b".into(), 2)]));
    let table = |t: &str| Invalidation::Table { db: "sbtest".into(), table: t.into() };
    assert_eq!(write(&c, "UPDATE users SET v = 1 WHERE email = 'a'"), table("users"));
    assert_eq!(write(&c, "INSERT INTO pairs (a, b) VALUES (0, 'x')"), table("pairs"), "0: auto-increment");
    assert_eq!(write(&c, "UPDATE pairs SET b = 'y' WHERE a = 1 AND b = 'x'"), table("pairs"));
    assert_eq!(write(&c, "REPLACE INTO codes (code) VALUES ('x')"), table("codes"));
}

#[test]
fn tables_with_triggers_are_not_narrowed() {
    let c = cache();
    let mut fx = querycache::EffectsBuilder::default();
    fx.trigger(querycache::TableName::new("sbtest", "codes"), "sbtest", "SET NEW.code = UPPER(NEW.code)");
    c.schema().set_effects(fx.build());
    assert_eq!(
        write(&c, "UPDATE codes SET v = 1 WHERE code = 'a'"),
        Invalidation::Table { db: "sbtest".into(), table: "codes".into() }
    );
    assert!(matches!(write(&c, "UPDATE sbtest1 SET k = 1 WHERE id = 1"), Invalidation::Keys { .. }));
}

#[test]
fn prepared_string_parameters() {
    let c = cache();
    let mut s = session(&c);
    let p = c.prepare(&s, b"SELECT v FROM codes WHERE code = ?");
    let exec = |s: &mut _, v: Param| match c.on_execute(s, &p, &[], &[v], true) {
        Plan::Cached { tags, .. } => tags.0[0].scope.clone(),
        p => panic!("{p:?}"),
    };
    let a = exec(&mut s, Param::Str(b"Abc".to_vec().into()));
    assert_eq!(a, scope(&c, "SELECT v FROM codes WHERE code = 'abc'"));
    assert_eq!(exec(&mut s, Param::Int(5)), Scope::Table);
    assert_eq!(exec(&mut s, Param::Other), Scope::Table);
}

#[test]
fn joins_are_tagged_per_table() {
    let c = cache();
    let joined = |u: i64| {
        format!("SELECT * FROM users u LEFT OUTER JOIN posts AS p ON u.id = p.user_id WHERE u.id = {u} ORDER BY p.id")
    };
    let sc = scopes(&c, &joined(3));
    assert_eq!(sc[0], Scope::Points(vec![3]));
    assert!(matches!(&sc[1], Scope::Values(kv) if kv.values.len() == 1), "{sc:?}");
    // The posts side follows user_id: a post of user 2 leaves user 3's join, one of user 3
    // drops it (through the proxy and through the binlog), and so does a write to user 3.
    let q3 = joined(3);
    let qs = [q3.as_str()];
    assert_eq!(survivors(&c, &qs, proxy_write("INSERT INTO posts (user_id, author) VALUES (2, 'a')")), [true]);
    assert_eq!(survivors(&c, &qs, proxy_write("INSERT INTO posts (user_id, author) VALUES (3, 'a')")), [false]);
    let cols = ["id", "user_id", "author"];
    assert_eq!(survivors(&c, &qs, binlog("posts", &cols, &[&["9", "2", "a"]])), [true]);
    assert_eq!(survivors(&c, &qs, binlog("posts", &cols, &[&["9", "2", "a"], &["9", "3", "a"]])), [false]);
    assert_eq!(survivors(&c, &qs, proxy_write("UPDATE users SET email = 'x' WHERE id = 4")), [true]);
    assert_eq!(survivors(&c, &qs, proxy_write("UPDATE users SET email = 'x' WHERE id = 3")), [false]);
}

#[test]
fn self_joins_keep_one_tag_per_alias() {
    let c = cache();
    let sql = "SELECT * FROM posts a JOIN posts b ON b.id = a.user_id WHERE a.user_id = 3";
    let sc = scopes(&c, sql);
    assert!(matches!(&sc[0], Scope::Values(_)) && sc[1] == Scope::Points(vec![3]), "{sc:?}");
    let cols = ["id", "user_id", "author"];
    let row = |id: &'static str, user: &'static str| -> [&'static str; 3] { [id, user, "a"] };
    let (r9, r3, r10) = (row("9", "2"), row("3", "1"), row("10", "3"));
    assert_eq!(survivors(&c, &[sql], binlog("posts", &cols, &[&r9])), [true]);
    assert_eq!(survivors(&c, &[sql], binlog("posts", &cols, &[&r3])), [false]);
    assert_eq!(survivors(&c, &[sql], binlog("posts", &cols, &[&r10])), [false]);
}

#[test]
fn joins_carry_only_integer_bounds() {
    let c = cache();
    // A string bound is not carried over `p.author = u.email` (they compare under
    // utf8mb4_bin, the email under general_ci): the posts side is table-level.
    let sql = "SELECT * FROM users u JOIN posts p ON p.author = u.email WHERE u.email = 'A@x'";
    let sc = scopes(&c, sql);
    assert!(matches!(&sc[0], Scope::Values(_)) && sc[1] == Scope::Table, "{sc:?}");
    // Prepared: an integer parameter is carried, a string or a huge one is not.
    let mut s = session(&c);
    let p = c.prepare(&s, b"SELECT * FROM users u JOIN posts p ON p.user_id = u.id WHERE u.id = ?");
    let mut posts = |v: Param| match c.on_execute(&mut s, &p, &[], &[v], true) {
        Plan::Cached { tags, .. } => tags.0[1].scope.clone(),
        p => panic!("{p:?}"),
    };
    assert!(matches!(posts(Param::Int(7)), Scope::Values(_)));
    assert_eq!(posts(Param::Str(b"7".to_vec().into())), Scope::Table);
    assert_eq!(posts(Param::Int((1 << 53) + 1)), Scope::Table);
    // Only from a column known to be an integer one (`k` is not a key: its type is not
    // known; an ENUM compares with a number by position, with a column by name).
    let sql = "SELECT * FROM sbtest1 a JOIN posts p ON p.user_id = a.k WHERE a.k = 5";
    assert_eq!(scopes(&c, sql), [Scope::Table, Scope::Table]);
    // A cross join bounds each table by its own conjuncts; a subquery's table is
    // table-level (and so is everything, as its FROM does not name every table).
    assert_eq!(scopes(&c, "SELECT * FROM sbtest1 a, t3 b WHERE a.id = 1"), [Scope::Points(vec![1]), Scope::Table]);
    let sql = "SELECT * FROM users u JOIN posts p ON p.user_id = u.id WHERE u.id = 1 AND p.id IN (SELECT id FROM t3)";
    assert!(scopes(&c, sql).iter().all(|s| *s == Scope::Table));
}
