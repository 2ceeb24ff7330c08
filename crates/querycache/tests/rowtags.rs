//! Row tags: a single-table result is tagged with the primary keys of the rows it
//! returned, so a write to other rows that leaves the columns it selects by alone does
//! not drop it; and non-unique indexes tag results by value.
mod common;

use common::{exec, session};
use protocol_mysql::resultset::{write_text_row, ColumnDefinition};
use protocol_mysql::value::ColumnType;
use querycache::{
    CacheType, Config, InTransactions, Invalidation, Param, PkColumn, Plan, QueryCache, RowChange, Session, Source,
    TableInfo,
};

/// shop.users (id, email unique _ci, karma, updated_at ON UPDATE) and shop.posts (id,
/// user_id indexed, score, title).
fn cache() -> QueryCache {
    let c = QueryCache::new(Config {
        size: 64 << 20,
        limit: 1 << 20,
        mode: CacheType::On,
        in_transactions: InTransactions::ReadOnly,
    });
    let ci = |n: &str| PkColumn::new(n, "varchar", Some("utf8mb4_general_ci"));
    let users = TableInfo::base(vec![PkColumn::int("id")]).with_unique(vec![ci("email")]).with_implicit("updated_at");
    c.schema().set_table("shop", "users", users);
    let posts =
        TableInfo::base(vec![PkColumn::int("id")]).with_index(vec![PkColumn::int("user_id"), PkColumn::int("score")]);
    c.schema().set_table("shop", "posts", posts);
    c.schema().set_effects(querycache::EffectsBuilder::default().build());
    c
}

fn shop(c: &QueryCache) -> Session {
    let mut s = session(c);
    exec(c, &mut s, "USE shop", 0x0002);
    s
}

fn packet(seq: &mut u8, payload: &[u8], out: &mut Vec<u8>) {
    let n = payload.len();
    out.extend_from_slice(&[n as u8, (n >> 8) as u8, (n >> 16) as u8, *seq]);
    out.extend_from_slice(payload);
    *seq += 1;
}

/// A text result set of `table`'s columns `cols` (physical names) and these rows.
fn result(table: &str, cols: &[&str], rows: &[&[&str]]) -> Vec<u8> {
    let cols: Vec<_> = cols.iter().map(|c| (table, table, *c)).collect();
    let rows: Vec<Vec<Option<&str>>> = rows.iter().map(|r| r.iter().map(|v| Some(*v)).collect()).collect();
    joined(&cols, &rows.iter().map(Vec::as_slice).collect::<Vec<_>>())
}

/// Read `sql` once (filling with `reply`); true if it was a hit.
fn read(c: &QueryCache, s: &mut Session, sql: &str, reply: &[u8]) -> bool {
    common::read(c, s, sql, reply).1
}

/// Cache each (sql, reply), run `write`, and say which reads are still hits.
fn after(c: &QueryCache, s: &mut Session, reads: &[(&str, Vec<u8>)], write: &str) -> Vec<bool> {
    for (sql, r) in reads {
        read(c, s, sql, r);
        assert!(read(c, s, sql, r), "{sql} was not cached");
    }
    assert!(matches!(exec(c, s, write, 0x0002), Plan::Write(_)), "{write}");
    reads.iter().map(|(sql, r)| read(c, s, sql, r)).collect()
}

#[test]
fn unique_key_results_survive_updates_of_other_rows() {
    let c = cache();
    let mut s = shop(&c);
    let a = || {
        (
            "SELECT id, email, karma FROM users WHERE email = 'a@x'",
            result("users", &["id", "email", "karma"], &[&["1", "a@x", "0"]]),
        )
    };
    // Without the primary key in the select list the rows are not known: it goes.
    let blind = || ("SELECT karma FROM users WHERE email = 'b@x'", result("users", &["karma"], &[&["0"]]));
    assert_eq!(after(&c, &mut s, &[a(), blind()], "UPDATE users SET karma = karma + 1 WHERE id = 2"), [true, false]);
    assert_eq!(after(&c, &mut s, &[a(), blind()], "UPDATE users SET karma = karma + 1 WHERE id = 1"), [false, false]);
    // Assigning the column it selects by: any row may move into it.
    assert_eq!(after(&c, &mut s, &[a()], "UPDATE users SET email = 'a@x' WHERE id = 2"), [false]);
    // A delete takes out only rows a result holds.
    assert_eq!(after(&c, &mut s, &[a()], "DELETE FROM users WHERE id = 2"), [true]);
    assert_eq!(after(&c, &mut s, &[a()], "DELETE FROM users WHERE id = 1"), [false]);
    // An insert may add a row to any result not tagged by the key values it names.
    assert_eq!(after(&c, &mut s, &[a()], "INSERT INTO users (id, email) VALUES (9, 'z@x')"), [true]);
    assert_eq!(after(&c, &mut s, &[a()], "INSERT INTO users (id, email) VALUES (8, 'A@X')"), [false]);
}

#[test]
fn columns_the_table_updates_itself_count_as_assigned() {
    let c = cache();
    let mut s = shop(&c);
    let recent = || ("SELECT id FROM users WHERE updated_at > 5", result("users", &["id"], &[&["1"]]));
    let plain = || ("SELECT id FROM users WHERE karma > 5", result("users", &["id"], &[&["1"]]));
    assert_eq!(after(&c, &mut s, &[recent(), plain()], "UPDATE users SET email = 'q' WHERE id = 3"), [false, true]);
}

#[test]
fn index_lists_are_tagged_by_value_and_rows() {
    let c = cache();
    let mut s = shop(&c);
    let list = || {
        let sql = "SELECT id, title FROM posts WHERE user_id = 3 ORDER BY id DESC LIMIT 10";
        (sql, result("posts", &["id", "title"], &[&["9", "t"], &["5", "t"]]))
    };
    let by_score = || {
        let sql = "SELECT id, score AS s FROM posts WHERE user_id = 4 ORDER BY s LIMIT 2";
        (sql, result("posts", &["id", "score"], &[&["6", "1"]]))
    };
    let other = || ("SELECT id FROM posts WHERE user_id = 7", result("posts", &["id"], &[&["70"]]));
    let w = |sql| after(&c, &mut shop(&c), &[list(), by_score(), other()], sql);
    // New posts (auto-increment ids) of another user, of this user.
    assert_eq!(w("INSERT INTO posts (user_id, title, score) VALUES (8, 'n', 1)"), [true, true, true]);
    assert_eq!(w("INSERT INTO posts (user_id, title, score) VALUES (3, 'n', 1)"), [false, true, true]);
    // Updates by primary key: of a row not in it, of a row in it, of a column it orders by
    // (through an alias), of the column it selects by.
    assert_eq!(w("UPDATE posts SET title = 'x' WHERE id = 7"), [true, true, true]);
    assert_eq!(w("UPDATE posts SET title = 'x' WHERE id = 9"), [false, true, true]);
    assert_eq!(w("UPDATE posts SET score = 2 WHERE id = 7"), [true, false, true]);
    // (the new value is not used: any result selecting by the column goes).
    assert_eq!(w("UPDATE posts SET user_id = 3 WHERE id = 7"), [false, false, false]);
    let _ = read(&c, &mut s, list().0, &list().1);
}

#[test]
fn results_whose_rows_depend_on_other_rows_are_not_row_tagged() {
    let c = cache();
    let mut s = shop(&c);
    let r = |sql: &'static str| (sql, result("posts", &["id"], &[&["5"]]));
    let reads = [
        r("SELECT id FROM posts WHERE user_id = 3 ORDER BY id LIMIT 10 OFFSET 1"),
        r("SELECT id, COUNT(*) FROM posts WHERE user_id = 3"),
        r("SELECT DISTINCT id FROM posts WHERE user_id = 3"),
        r("SELECT id FROM posts WHERE user_id = 3 GROUP BY id"),
        r("SELECT id FROM posts WHERE user_id = 3 ORDER BY 1"),
        r("SELECT id FROM posts WHERE user_id = 3"),
    ];
    assert_eq!(after(&c, &mut s, &reads, "DELETE FROM posts WHERE id = 7"), [false, false, false, false, true, true]);
    assert_eq!(after(&c, &mut s, &reads, "UPDATE posts SET id = 70 WHERE id = 7"), [false; 6]);
}

#[test]
fn primary_key_points_go_with_inserts_of_unknown_keys() {
    let c = cache();
    let mut s = shop(&c);
    let missing = || ("SELECT id, title FROM posts WHERE id = 100", result("posts", &["id", "title"], &[]));
    let list = || ("SELECT id FROM posts WHERE user_id = 3", result("posts", &["id"], &[&["5"]]));
    assert_eq!(
        after(&c, &mut s, &[missing(), list()], "INSERT INTO posts (user_id, title) VALUES (4, 'n')"),
        [false, true]
    );
    assert_eq!(
        after(&c, &mut s, &[missing(), list()], "INSERT INTO posts (id, user_id) VALUES (101, 4)"),
        [true, true]
    );
}

#[test]
fn binlog_row_changes_spare_results_that_do_not_hold_the_rows() {
    let c = cache();
    let mut s = shop(&c);
    let list = "SELECT id, title FROM posts WHERE user_id = 4 ORDER BY id DESC LIMIT 5";
    let reply = result("posts", &["id", "title"], &[&["48", "t"], &["43", "t"]]);
    let user4 = || {
        let v = c.rows_changed(
            "shop",
            "posts",
            &["id".into(), "user_id".into()],
            &[[3, 4]],
            |r, i| Param::Int(r[i]),
            RowChange::Any,
        );
        match v {
            Invalidation::Keys { values, .. } => values,
            other => panic!("{other:?}"),
        }
    };
    let binlog = |keys: Vec<i64>, change| {
        let inv = Invalidation::Keys { db: "shop".into(), table: "posts".into(), keys, values: user4(), change };
        c.invalidate(&inv, Source::Binlog);
    };
    let cached = |s: &mut Session| {
        read(&c, s, list, &reply);
        read(&c, s, list, &reply)
    };
    // Row 3 of user 4 (not among its newest) retitled, deleted: the list stays.
    assert!(cached(&mut s));
    binlog(vec![3], RowChange::Update(vec!["title".into()]));
    assert!(read(&c, &mut s, list, &reply));
    binlog(vec![3], RowChange::Delete);
    assert!(read(&c, &mut s, list, &reply));
    // Row 43 retitled; row 3 moved (a column the list orders or selects by); a new row.
    binlog(vec![43], RowChange::Update(vec!["title".into()]));
    assert!(!read(&c, &mut s, list, &reply));
    assert!(cached(&mut s));
    binlog(vec![3], RowChange::Update(vec!["user_id".into()]));
    assert!(!read(&c, &mut s, list, &reply));
    assert!(cached(&mut s));
    binlog(vec![99], RowChange::Any);
    assert!(!read(&c, &mut s, list, &reply));
}

#[test]
fn results_naming_no_assigned_column_survive_any_update() {
    let c = cache();
    let mut s = shop(&c);
    let one = || result("posts", &["title"], &[&["t"]]);
    let reads = [
        ("SELECT title FROM posts WHERE id = 7", one()),
        ("SELECT title FROM posts WHERE id BETWEEN 1 AND 9 ORDER BY title", one()),
        ("SELECT DISTINCT title FROM posts WHERE id BETWEEN 1 AND 9", one()),
        ("SELECT COUNT(*) FROM posts WHERE id BETWEEN 1 AND 9", one()),
        ("SELECT SUM(score) FROM posts WHERE id BETWEEN 1 AND 9", one()),
        ("SELECT * FROM posts WHERE id = 7", one()),
        ("SELECT title FROM posts WHERE MATCH (title) AGAINST ('x') AND id = 7", one()),
    ];
    // sysbench's writer, `UPDATE ... SET k = k + 1 WHERE id = ?`, through the proxy and
    // from the binlog: only what names the column goes.
    let kept = [true, true, true, true, false, false, false];
    assert_eq!(after(&c, &mut s, &reads, "UPDATE posts SET score = score + 1 WHERE id = 7"), kept);
    let binlog = Invalidation::Keys {
        db: "shop".into(),
        table: "posts".into(),
        keys: vec![7],
        values: vec![],
        change: RowChange::Update(vec!["score".into()]),
    };
    for (sql, r) in &reads {
        read(&c, &mut s, sql, r);
    }
    c.invalidate(&binlog, Source::Binlog);
    let got: Vec<bool> = reads.iter().map(|(sql, r)| read(&c, &mut s, sql, r)).collect();
    assert_eq!(got, kept);
    // A column the table updates by itself counts as assigned; deletes and inserts change
    // which rows there are.
    let touched = || ("SELECT id FROM users WHERE updated_at > 5 AND id = 4", result("users", &["id"], &[]));
    assert_eq!(after(&c, &mut s, &[touched()], "UPDATE users SET karma = 1 WHERE id = 4"), [false]);
    assert_eq!(after(&c, &mut s, &reads[..1], "DELETE FROM posts WHERE id = 7"), [false]);
}

#[test]
fn an_order_that_is_not_total_counts_the_scanned_index() {
    let c = cache();
    let mut s = shop(&c);
    let r = |sql: &'static str| (sql, result("posts", &["id"], &[&["5"]]));
    // posts has KEY (user_id, score): a read by user_id without a total ORDER BY comes in
    // score order, and under a LIMIT score decides which rows it holds.
    // (A row-tagged result without a LIMIT is kept: a row it does not hold is not user 3's,
    // and its own rows' order changes only with them.)
    let reads = [
        r("SELECT id FROM posts WHERE user_id = 3"),
        r("SELECT id FROM posts WHERE user_id = 3 ORDER BY id"),
        r("SELECT id FROM posts WHERE user_id = 3 LIMIT 1"),
        r("SELECT COUNT(*) FROM posts WHERE user_id = 3"),
        ("SELECT title FROM posts WHERE user_id = 3", result("posts", &["title"], &[&["t"]])),
        // ORDER BY an alias named like the key orders by the aliased column: not total.
        ("SELECT title AS id FROM posts WHERE user_id = 3 ORDER BY id LIMIT 2", result("posts", &["title"], &[])),
    ];
    let w = "UPDATE posts SET score = 1 WHERE id = 9";
    assert_eq!(after(&c, &mut s, &reads, w), [true, true, false, false, false, false]);
    let w = "UPDATE posts SET title = 'x' WHERE id = 9";
    assert_eq!(after(&c, &mut s, &reads, w), [true, true, true, true, false, false]);
}

/// A text result set of joined columns (table as the query names it, table, column); a
/// `None` cell is NULL.
fn joined(cols: &[(&str, &str, &str)], rows: &[&[Option<&str>]]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut seq = 1;
    packet(&mut seq, &[cols.len() as u8], &mut out);
    for (alias, table, c) in cols {
        let def = ColumnDefinition {
            table: alias.as_bytes(),
            ..ColumnDefinition::new(b"shop", table.as_bytes(), c.as_bytes(), ColumnType::Long)
        };
        let mut p = Vec::new();
        def.write(&mut p);
        packet(&mut seq, &p, &mut out);
    }
    packet(&mut seq, &[0xfe, 0, 0, 2, 0], &mut out);
    for r in rows {
        let mut p = Vec::new();
        write_text_row(&mut p, &r.iter().map(|v| v.map(str::as_bytes)).collect::<Vec<_>>());
        packet(&mut seq, &p, &mut out);
    }
    packet(&mut seq, &[0xfe, 0, 0, 2, 0], &mut out);
    out
}

#[test]
fn each_side_of_a_join_is_tagged_with_the_rows_it_shows() {
    let c = cache();
    let mut s = shop(&c);
    // Django's select_related: a post with its author. The users side is bounded only by
    // the post's user_id, which the statement does not say: its rows tell it.
    let related = || {
        let sql = "SELECT p.id, p.score, u.id, u.karma FROM posts p JOIN users u ON u.id = p.user_id WHERE p.id = 5";
        let cols = [("p", "posts", "id"), ("p", "posts", "score"), ("u", "users", "id"), ("u", "users", "karma")];
        (sql, joined(&cols, &[&[Some("5"), Some("1"), Some("3"), Some("0")]]))
    };
    // Without u.id in the select list the user rows are not known.
    let blind = || {
        let sql = "SELECT p.id, u.karma FROM posts p JOIN users u ON u.id = p.user_id WHERE p.id = 6";
        (sql, joined(&[("p", "posts", "id"), ("u", "users", "karma")], &[&[Some("6"), Some("0")]]))
    };
    // A user without posts: the posts side shows NULL, so it holds no post row.
    let lonely = || {
        let sql = "SELECT u.id, p.id, p.score FROM users u LEFT JOIN posts p ON p.user_id = u.id WHERE u.id = 9";
        let cols = [("u", "users", "id"), ("p", "posts", "id"), ("p", "posts", "score")];
        (sql, joined(&cols, &[&[Some("9"), None, None]]))
    };
    let w = |sql| after(&c, &mut shop(&c), &[related(), blind(), lonely()], sql);
    // Another user's row, the author's own row, a column the join matches on.
    assert_eq!(w("UPDATE users SET karma = karma + 1 WHERE id = 4"), [true, false, true]);
    assert_eq!(w("UPDATE users SET karma = karma + 1 WHERE id = 3"), [false, false, true]);
    assert_eq!(w("DELETE FROM users WHERE id = 4"), [true, false, true]);
    assert_eq!(w("DELETE FROM users WHERE id = 9"), [true, false, false]);
    assert_eq!(w("INSERT INTO users (id, email) VALUES (10, 'z@x')"), [false, false, true]);
    // Posts: another post's score (posts is bounded by p.id, and lonely holds no post row);
    // a post moved to user 9 (user_id decides lonely's rows).
    assert_eq!(w("UPDATE posts SET score = 2 WHERE id = 7"), [true, true, true]);
    assert_eq!(w("UPDATE posts SET user_id = 9 WHERE id = 7"), [true, true, false]);
    assert_eq!(w("UPDATE posts SET score = 2 WHERE id = 5"), [false, true, true]);
    let _ = read(&c, &mut s, related().0, &related().1);
}

#[test]
fn joins_that_cannot_tell_their_rows_are_not_row_tagged() {
    let c = cache();
    let mut s = shop(&c);
    let one = |sql: &'static str| {
        let cols = [("a", "users", "id"), ("b", if sql.contains("posts b") { "posts" } else { "users" }, "id")];
        (sql, joined(&cols, &[&[Some("1"), Some("2")]]))
    };
    let reads = [
        // A self-join: one record of rows per table and entry.
        one("SELECT a.id, b.id FROM users a JOIN users b ON b.karma = a.karma WHERE a.id = 1"),
        // USING names its columns unqualified and implicitly; an aggregate; DISTINCT.
        one("SELECT a.id, b.id FROM users a JOIN posts b USING (id) WHERE a.id = 1"),
        one("SELECT a.id, COUNT(b.id) FROM users a JOIN posts b ON b.user_id = a.id WHERE a.id = 1"),
        one("SELECT DISTINCT a.id, b.id FROM users a JOIN posts b ON b.user_id = a.id WHERE a.id = 1"),
        // An unqualified column counts for every table: karma decides users' rows here.
        one("SELECT a.id, b.id FROM posts a JOIN users b ON b.id = a.user_id WHERE karma = 1"),
    ];
    // (Their users side is bounded by a.id = 1 but for the first and the last.)
    let users = [reads[0].clone(), reads[4].clone()];
    assert_eq!(after(&c, &mut s, &users, "UPDATE users SET karma = 3 WHERE id = 7"), [false; 2]);
    assert_eq!(after(&c, &mut s, &reads[1..4], "UPDATE posts SET score = 3 WHERE id = 7"), [false; 3]);
    // The control: shown, the rows of a join keep it.
    let shown = one("SELECT a.id, b.id FROM users a JOIN posts b ON b.user_id = a.id WHERE a.id = 1");
    assert_eq!(after(&c, &mut s, &[shown], "UPDATE posts SET score = 3 WHERE id = 7"), [true]);
}

#[test]
fn joins_naming_no_assigned_column_survive_updates_of_their_rows() {
    let c = cache();
    let mut s = shop(&c);
    // No primary key in the select lists: no row tags, only column tags keep them.
    let r = || joined(&[("u", "users", "email"), ("p", "posts", "title")], &[&[Some("a@x"), Some("t")]]);
    let join = "FROM users u JOIN posts p ON p.user_id = u.id WHERE u.id = 1";
    let (qualified, star, unqualified, grouped) = (
        format!("SELECT u.email, p.title {join}"),
        format!("SELECT u.*, p.title {join}"),
        format!("SELECT email, title {join}"),
        format!("SELECT u.email, COUNT(*) {join} GROUP BY u.email HAVING SUM(p.score) > 2"),
    );
    let reads = [(qualified.as_str(), r()), (star.as_str(), r()), (unqualified.as_str(), r()), (grouped.as_str(), r())];
    // users' karma: named only through u.*.
    let kept = after(&c, &mut s, &reads, "UPDATE users SET karma = karma + 1 WHERE id = 1");
    assert_eq!(kept, [true, false, true, true]);
    // users' email: named by all.
    assert_eq!(after(&c, &mut s, &reads, "UPDATE users SET email = 'b@x' WHERE id = 1"), [false; 4]);
    // A posts column none names; then one the first three name (title), then the HAVING's.
    assert_eq!(after(&c, &mut s, &reads, "UPDATE posts SET body = 'x' WHERE id = 5"), [true; 4]);
    assert_eq!(after(&c, &mut s, &reads, "UPDATE posts SET title = 'x' WHERE id = 5"), [false, false, false, true]);
    assert_eq!(after(&c, &mut s, &reads[3..], "UPDATE posts SET score = 1 WHERE id = 5"), [false]);
    // The join column itself: a post may join another user.
    assert_eq!(after(&c, &mut s, &reads[..1], "UPDATE posts SET user_id = 1 WHERE id = 6"), [false]);
    // A table joined with itself gets no column tags: any update of it drops the result.
    let selfjoin = "SELECT a.title FROM posts a JOIN posts b ON b.id = a.user_id WHERE a.user_id = 3";
    let one = joined(&[("a", "posts", "title")], &[&[Some("t")]]);
    assert_eq!(after(&c, &mut s, &[(selfjoin, one)], "UPDATE posts SET body = 'x' WHERE id = 3"), [false]);
}
