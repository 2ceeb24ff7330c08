use super::*;
use proptest::prelude::*;
use protocol_postgres::replication::pgoutput::{Delete, Insert, RelationColumn, Truncate, Update};

fn rel(identity: ReplicaIdentity, key: &[bool]) -> LogicalMessage<'static> {
    let names = ["id", "email", "bio"];
    let types = [23, 25, 25];
    LogicalMessage::Relation(Relation {
        xid: None,
        id: 7,
        namespace: "public",
        name: "users",
        replica_identity: identity,
        columns: (0..3)
            .map(|i| RelationColumn {
                flags: u8::from(key[i] || identity == ReplicaIdentity::Full),
                name: names[i],
                type_oid: types[i],
                type_modifier: -1,
            })
            .collect(),
    })
}

fn tuple(cols: &[Column<'static>]) -> TupleData<'static> {
    TupleData { columns: cols.to_vec() }
}

fn run(msgs: &[LogicalMessage<'_>]) -> Vec<Change> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for m in msgs {
        d.decode(m, 0, &mut out);
    }
    out
}

fn rows_of(c: &Change) -> (&Vec<Vec<Value>>, &RowsKind) {
    match c {
        Change::Rows { rows, kind, .. } => (rows, kind),
        other => panic!("rows expected, got {other:?}"),
    }
}

#[test]
fn insert_update_delete_with_a_primary_key() {
    let new = tuple(&[Column::Text(b"1"), Column::Text(b"a@x"), Column::Text(b"hi")]);
    let newer = tuple(&[Column::Text(b"1"), Column::Text(b"b@x"), Column::UnchangedToast]);
    let out = run(&[
        rel(ReplicaIdentity::Default, &[true, false, false]),
        LogicalMessage::Insert(Insert { xid: None, relation: 7, new: new.clone() }),
        LogicalMessage::Update(Update { xid: None, relation: 7, old: None, new: new.clone() }),
        LogicalMessage::Update(Update { xid: None, relation: 7, old: None, new: newer }),
        LogicalMessage::Delete(Delete {
            xid: None,
            relation: 7,
            old: OldTuple::Key(tuple(&[Column::Text(b"1"), Column::Null, Column::Null])),
        }),
    ]);
    assert_eq!(out.len(), 4, "{out:?}");
    let (rows, kind) = rows_of(&out[0]);
    assert_eq!(kind, &RowsKind::Insert);
    assert_eq!(rows[0], vec![Value::Int(1), Value::Bytes(b"a@x".to_vec()), Value::Bytes(b"hi".to_vec())]);
    if let Change::Rows { schema, db, table, .. } = &out[0] {
        assert_eq!((db.as_str(), table.as_str()), ("public", "users"));
        assert_eq!(schema.primary_key, vec![0]);
    }
    // Key unchanged, no old row: the before image has the key only.
    let (rows, _) = rows_of(&out[1]);
    assert_eq!(rows[0], vec![Value::Int(1), Value::Null, Value::Null]);
    // An unchanged TOAST value and no old row: never a made-up value, the whole table.
    assert_eq!(out[2], Change::Table { db: "public".into(), table: "users".into() });
    let (rows, kind) = rows_of(&out[3]);
    assert_eq!(kind, &RowsKind::Delete);
    assert_eq!(rows[0][0], Value::Int(1));
}

#[test]
fn full_identity_fills_toast_from_the_old_row() {
    let old = tuple(&[Column::Text(b"1"), Column::Text(b"a@x"), Column::Text(b"long")]);
    let new = tuple(&[Column::Text(b"1"), Column::Text(b"b@x"), Column::UnchangedToast]);
    let out = run(&[
        rel(ReplicaIdentity::Full, &[false, false, false]),
        LogicalMessage::Update(Update { xid: None, relation: 7, old: Some(OldTuple::Full(old)), new }),
    ]);
    let (rows, kind) = rows_of(&out[0]);
    assert_eq!(kind, &RowsKind::Update(vec![1]));
    assert_eq!(rows[0][1], Value::Bytes(b"a@x".to_vec()));
    assert_eq!(rows[1][1], Value::Bytes(b"b@x".to_vec()));
    assert_eq!(rows[1][2], Value::Bytes(b"long".to_vec()));
}

#[test]
fn keyless_tables_truncate_ddl_and_bulk() {
    let row = tuple(&[Column::Text(b"1"), Column::Text(b"a"), Column::Null]);
    let out = run(&[
        rel(ReplicaIdentity::Default, &[false, false, false]),
        LogicalMessage::Insert(Insert { xid: None, relation: 7, new: row.clone() }),
        LogicalMessage::Update(Update { xid: None, relation: 7, old: None, new: row.clone() }),
        LogicalMessage::Truncate(Truncate { xid: None, options: 0, relations: vec![7, 99] }),
        rel(ReplicaIdentity::Default, &[true, false, false]),
    ]);
    let table = Change::Table { db: "public".into(), table: "users".into() };
    assert!(matches!(out[0], Change::Rows { .. }), "inserts stay row-level");
    assert_eq!(out[1], table, "keyless update: whole table");
    assert_eq!(out[2], table);
    assert!(matches!(out[3], Change::All { .. }), "unknown relation");
    assert_eq!(out[4], table, "a changed definition: whole table");
    // Bulk: past the limit one ManyRows, the rest skipped, until the next transaction.
    let mut d = Decoder::new();
    let mut out = Vec::new();
    d.decode(&rel(ReplicaIdentity::Default, &[true, false, false]), 2, &mut out);
    for _ in 0..5 {
        d.decode(&LogicalMessage::Insert(Insert { xid: None, relation: 7, new: row.clone() }), 2, &mut out);
    }
    assert_eq!(out.len(), 2, "{out:?}");
    assert_eq!(rows_of(&out[0]).0.len(), 2, "consecutive inserts share one change");
    assert_eq!(out[1], Change::ManyRows { db: "public".into(), table: "users".into() });
}

fn column() -> impl Strategy<Value = Column<'static>> {
    prop_oneof![
        Just(Column::Null),
        Just(Column::UnchangedToast),
        Just(Column::Text(b"42")),
        Just(Column::Text(b"x")),
        Just(Column::Binary(b"\x00\xff")),
    ]
}

proptest! {
    /// Whatever the server sends (widths, identities, TOAST markers), the decoder never
    /// panics, and every row image it reports has one value per column of its schema.
    #[test]
    fn images_always_match_their_schema(
        identity in prop_oneof![Just(ReplicaIdentity::Default), Just(ReplicaIdentity::Full), Just(ReplicaIdentity::Index), Just(ReplicaIdentity::Nothing)],
        key in proptest::collection::vec(any::<bool>(), 3),
        ops in proptest::collection::vec((0u8..4, proptest::collection::vec(column(), 0..5), proptest::collection::vec(column(), 0..5)), 0..20),
        bulk in 0usize..4,
    ) {
        let mut d = Decoder::new();
        let mut out = Vec::new();
        d.decode(&rel(identity, &key), bulk, &mut out);
        for (op, a, b) in &ops {
            let m = match op {
                0 => LogicalMessage::Insert(Insert { xid: None, relation: 7, new: tuple(a) }),
                1 => LogicalMessage::Update(Update { xid: None, relation: 7, old: Some(OldTuple::Full(tuple(b))), new: tuple(a) }),
                2 => LogicalMessage::Update(Update { xid: None, relation: 7, old: None, new: tuple(a) }),
                _ => LogicalMessage::Delete(Delete { xid: None, relation: 7, old: OldTuple::Key(tuple(a)) }),
            };
            d.decode(&m, bulk, &mut out);
        }
        for c in &out {
            if let Change::Rows { schema, rows, .. } = c {
                for r in rows {
                    prop_assert_eq!(r.len(), schema.columns.len());
                }
            }
        }
    }
}
