use super::*;
use catalog::Table;
use sql_source::{TableSchema, Value};

fn catalog() -> Catalog {
    let t = |name: &str, key: Option<(&str, KeyKind)>, not_cached: Option<&'static str>, spreads: bool| Table {
        schema: "public".into(),
        name: name.into(),
        not_cached,
        key: key.map(|(c, k)| (c.to_string(), k)),
        spreads,
        signature: "s".into(),
        published: true,
        publishable: true,
    };
    Catalog::new(vec![
        t("accounts", Some(("aid", KeyKind::Int)), None, false),
        t("logs", None, Some("unlogged table (not in the WAL)"), false),
        t("parents", Some(("id", KeyKind::Int)), None, true),
    ])
}

fn view(path: &[String]) -> View<'_> {
    View { database: "db", role: "app", settings: b"TimeZone=UTC", search_path: path }
}

fn reply() -> Vec<u8> {
    b"T...D...C...Z\0\0\0\x05I".to_vec()
}

#[test]
fn points_fill_hit_and_are_dropped_by_their_row() {
    let c = PgCache::new(4 << 20, 1 << 20);
    c.set_catalog(catalog());
    c.set_online(true);
    let path = vec!["public".to_string()];
    let v = view(&path);
    let Plan::Cached(k5, tags) = c.plan(&v, "SELECT abalance FROM accounts WHERE aid = 5") else { panic!() };
    assert!(matches!(&tags[0].scope, Scope::Point(p) if p == "5"));
    assert!(c.lookup(&k5).is_none());
    let fill = c.begin_fill(k5.clone(), tags).unwrap();
    c.finish_fill(fill, &reply());
    assert_eq!(c.lookup(&k5), Some(reply()));
    // Another session state: another key.
    let other = View { role: "other", ..view(&path) };
    let Plan::Cached(ko, _) = c.plan(&other, "SELECT abalance FROM accounts WHERE aid = 5") else { panic!() };
    assert!(c.lookup(&ko).is_none());
    // Row 6 changed: row 5's result stays; row 5 changed: it goes.
    let schema = Arc::new(TableSchema { columns: vec!["aid".into(), "abalance".into()], primary_key: vec![0] });
    let change = |aid| Change::Rows {
        db: "public".into(),
        table: "accounts".into(),
        schema: schema.clone(),
        rows: vec![vec![Value::Int(aid), Value::Int(0)], vec![Value::Int(aid), Value::Int(1)]],
        kind: RowsKind::Update(vec![1]),
    };
    c.apply(&change(6));
    assert!(c.lookup(&k5).is_some());
    c.apply(&change(5));
    assert!(c.lookup(&k5).is_none());
    // A fill that raced with a change to its table is refused.
    let Plan::Cached(k7, tags) = c.plan(&v, "SELECT abalance FROM accounts WHERE aid = 7") else { panic!() };
    assert!(matches!(&tags[0].scope, Scope::Point(p) if p == "7"), "the memo puts this text's literal back");
    let fill = c.begin_fill(k7.clone(), tags).unwrap();
    c.apply(&change(9));
    c.finish_fill(fill, &reply());
    assert!(c.lookup(&k7).is_none());
    // Offline: nothing answered.
    c.apply(&Change::Disconnected { reason: "test".into() });
    assert!(c.lookup(&k5).is_none());
}

#[test]
fn parameters_are_points_too() {
    let c = PgCache::new(4 << 20, 1 << 20);
    c.set_catalog(catalog());
    let path = vec!["public".to_string()];
    let ext = Extended { params: vec![Some("12".into())], tail: b"B...".to_vec() };
    let sql = "SELECT abalance FROM accounts WHERE aid = $1";
    let Plan::Cached(_, tags) = c.plan_statements(&view(&path), sql, &c.analyze(sql), &ext) else { panic!() };
    assert_eq!(tags[0].scope, Scope::Point("12".into()));
}

#[test]
fn plans() {
    let c = PgCache::new(4 << 20, 1 << 20);
    c.set_catalog(catalog());
    let path = vec!["public".to_string()];
    let v = view(&path);
    assert!(matches!(c.plan(&v, "SELECT * FROM logs"), Plan::Forward("table")));
    assert!(matches!(c.plan(&v, "SELECT * FROM missing"), Plan::Forward("table")));
    assert!(matches!(c.plan(&v, "SELECT now() FROM accounts"), Plan::Forward("volatile")));
    assert!(matches!(c.plan(&v, "UPDATE accounts SET abalance = 1"), Plan::Write(Some(t)) if t.len() == 1));
    assert!(matches!(c.plan(&v, "UPDATE parents SET id = 1"), Plan::Write(None)), "triggers: everything");
    assert!(matches!(c.plan(&v, "ALTER TABLE accounts ADD c int"), Plan::Write(None)));
    assert!(matches!(c.plan(&v, "BEGIN"), Plan::Forward(_)));
    let Plan::Cached(_, tags) = c.plan(&v, "SELECT * FROM accounts WHERE abalance = 5") else { panic!() };
    assert_eq!(tags[0].scope, Scope::Table);
}
