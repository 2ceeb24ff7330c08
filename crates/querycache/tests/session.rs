//! Session state in the key, transactions, prepared statements.

mod common;

use common::{cache, exec, read, rows, session};
use querycache::{Param, Plan};

fn key(c: &querycache::QueryCache, s: &mut querycache::Session, sql: &str) -> querycache::Key {
    match c.on_query(s, sql.as_bytes()) {
        Plan::Cached { key, .. } => key,
        p => panic!("{p:?}"),
    }
}

#[test]
fn session_variables_and_identity_change_the_key() {
    let c = cache();
    let q = "SELECT c FROM sbtest1 WHERE id = 1";
    let mut a = session(&c);
    let mut b = session(&c);
    assert_eq!(key(&c, &mut a, q), key(&c, &mut b, q));
    exec(&c, &mut b, "SET time_zone = '+05:00'", 0x0002);
    assert_ne!(key(&c, &mut a, q), key(&c, &mut b, q));
    exec(&c, &mut a, "SET @@session.time_zone='+05:00'", 0x0002);
    assert_eq!(key(&c, &mut a, q), key(&c, &mut b, q));
    exec(&c, &mut a, "SET sql_mode = 'STRICT_ALL_TABLES'", 0x0002);
    assert_ne!(key(&c, &mut a, q), key(&c, &mut b, q));
    // A SET the backend refused changes nothing.
    let before = key(&c, &mut b, q);
    c.on_query(&mut b, b"SET time_zone = 'Mars/Olympus'");
    c.on_reply(&mut b, 0, false);
    assert_eq!(key(&c, &mut b, q), before);
    // Other user, database, charset, reply format.
    let mut u = c.session("other", Some("sbtest"), 45, 0x200);
    let mut cs = c.session("app", Some("sbtest"), 33, 0x200);
    let mut eof = c.session("app", Some("sbtest"), 45, 0x0100_0200);
    let base = key(&c, &mut session(&c), q);
    for mut s in [u, cs, eof] {
        assert_ne!(key(&c, &mut s, q), base);
    }
    u = session(&c);
    exec(&c, &mut u, "USE other", 0x0002);
    assert_ne!(key(&c, &mut u, "SELECT c FROM sbtest.sbtest1 WHERE id = 1"), base);
    cs = session(&c);
    c.on_init_db(&mut cs, "other");
    c.on_reply(&mut cs, 0x0002, true);
    assert_eq!(cs.db(), Some("other"));
    eof = session(&c);
    c.on_init_db(&mut eof, "nope");
    c.on_reply(&mut eof, 0, false);
    assert_eq!(eof.db(), Some("sbtest"));
}

#[test]
fn writes_in_a_transaction_invalidate_again_at_commit() {
    let c = cache();
    let mut w = session(&c);
    let mut r = session(&c);
    let q = "SELECT c FROM sbtest1 WHERE id = 5";
    read(&c, &mut r, q, &rows("v1"));
    exec(&c, &mut w, "BEGIN", 0x0003);
    exec(&c, &mut w, "UPDATE sbtest1 SET c = 'v2' WHERE id = 5", 0x0003);
    // Another session reads the committed (old) row before COMMIT and caches it.
    assert!(!read(&c, &mut r, q, &rows("v1")).1);
    assert!(read(&c, &mut r, q, &rows("v1")).1);
    exec(&c, &mut w, "COMMIT", 0x0002);
    assert!(!read(&c, &mut r, q, &rows("v2")).1, "COMMIT drops what the transaction wrote");
    // autocommit=0: the write is replayed when a COMMIT ends the transaction.
    exec(&c, &mut w, "SET autocommit=0", 0x0000);
    exec(&c, &mut w, "DELETE FROM sbtest1 WHERE id = 5", 0x0001);
    read(&c, &mut r, q, &rows("v2"));
    exec(&c, &mut w, "COMMIT", 0x0000);
    assert!(!read(&c, &mut r, q, &rows("")).1);
    // A lost backend connection invalidates the open transaction's writes.
    exec(&c, &mut w, "UPDATE sbtest1 SET c = 'v3' WHERE id = 5", 0x0001);
    read(&c, &mut r, q, &rows("v2"));
    c.on_backend_lost(&mut w);
    assert!(!read(&c, &mut r, q, &rows("v3")).1);
}

#[test]
fn prepared_statements_key_on_parameters_and_tag_by_them() {
    let c = cache();
    let mut s = session(&c);
    let p = c.prepare(&s, b"SELECT c FROM sbtest1 WHERE id=?");
    assert_eq!(p.param_count(), 1);
    let exec_with = |s: &mut querycache::Session, id: i64| {
        let raw = [&[0u8, 1, 8, 0][..], &id.to_le_bytes()].concat();
        c.on_execute(s, &p, &raw, &[Param::Int(id)], true)
    };
    let Plan::Cached { key: k1, tags } = exec_with(&mut s, 1) else { panic!() };
    assert_eq!(tags.0[0].scope, querycache::Scope::Points(vec![1]));
    let Plan::Cached { key: k2, .. } = exec_with(&mut s, 2) else { panic!() };
    assert_ne!(k1, k2);
    let Plan::Cached { key: k1b, .. } = exec_with(&mut s, 1) else { panic!() };
    assert_eq!(k1, k1b);
    // Text protocol result is a different entry.
    assert_ne!(key(&c, &mut s, "SELECT c FROM sbtest1 WHERE id=?"), k1);
    // Cursors and long data are not cached.
    let raw = [&[0u8, 1, 8, 0][..], &1i64.to_le_bytes()].concat();
    assert!(matches!(c.on_execute(&mut s, &p, &raw, &[Param::Int(1)], false), Plan::Forward { not_cached: true }));
    // A prepared write invalidates the parameter's key.
    let u = c.prepare(&s, b"UPDATE sbtest1 SET k=k+1 WHERE id=?");
    let plan = c.on_execute(&mut s, &u, &raw, &[Param::Int(7)], true);
    assert_eq!(
        plan,
        Plan::Write(vec![querycache::Invalidation::Keys {
            db: "sbtest".into(),
            table: "sbtest1".into(),
            keys: vec![7],
            values: vec![],
            change: querycache::RowChange::Update(vec!["k".into()])
        }])
    );
    // A prepared SET cannot be followed.
    let set = c.prepare(&s, b"SET time_zone = ?");
    c.on_execute(&mut s, &set, &raw, &[Param::Other], true);
    assert!(s.caching_disabled().is_some());
}
