//! pgoutput messages → the SQL-source vocabulary's [`Change`]s.
//!
//! A [`Decoder`] keeps the latest Relation of every table (pgoutput sends one before a
//! table's first change in a session and again after its definition changed) and turns
//! each row message into a `Change::Rows` whose images have one [`Value`] per column:
//!
//! - integers (`int2`, `int4`, `int8`) are `Value::Int`; text-like and exact types
//!   (`text`, `varchar`, `bpchar`, `name`, `numeric`, `bytea` as its `\x..` text, `uuid`)
//!   are `Value::Bytes` of their text form; anything else (`bool`, timestamps, `jsonb`,
//!   floats) is `Value::Other` with its text form;
//! - an UPDATE's before image is the old row under `REPLICA IDENTITY FULL`, the old key
//!   when the key changed, else the new row's key columns; columns the log does not carry
//!   are NULL there (a key built from them cannot be named: see docs/postgres.md);
//! - an unchanged TOASTed value (`u`) is taken from the old row when it is there; when it is
//!   not, the value is unknown and the change is reported for the whole table, never with a
//!   made-up value;
//! - UPDATE and DELETE of a table without a replica identity key (no primary key, not
//!   FULL) change the whole table; TRUNCATE changes each table it names;
//! - a Relation that differs from the one known (ALTER TABLE) changes the whole table.

use std::collections::HashMap;
use std::sync::Arc;

use protocol_postgres::replication::pgoutput::{
    Column, LogicalMessage, OldTuple, Relation, ReplicaIdentity, TupleData,
};
use sql_source::{Change, RowsKind, TableSchema, Value};

/// Row images one Change holds at most (consecutive changes of a table are merged up to it).
const MERGE_ROWS: usize = 1024;

/// Type OIDs of the integer types (`pg_type.oid`).
const INT_TYPES: [u32; 3] = [20, 21, 23];
/// Type OIDs reported as their text's bytes: bytea, name, text, bpchar, varchar, numeric, uuid.
const BYTES_TYPES: [u32; 7] = [17, 19, 25, 1042, 1043, 1700, 2950];

/// One table as its last Relation described it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Table {
    schema_name: String,
    name: String,
    types: Vec<u32>,
    identity: ReplicaIdentity,
    schema: Arc<TableSchema>,
}

/// Turns one session's pgoutput messages into changes.
#[derive(Default)]
pub struct Decoder {
    tables: HashMap<u32, Table>,
    /// Row images reported per table in the current transaction (for the bulk limit).
    rows_in_tx: HashMap<u32, usize>,
    /// Tables reported as `ManyRows` in the current transaction (their later rows skipped).
    many: Vec<u32>,
}

impl Decoder {
    /// A decoder that knows no table yet (one per replication session).
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// The changes `m` means, appended to `out`; `bulk_rows` is the bulk limit (0: none).
    pub fn decode(&mut self, m: &LogicalMessage<'_>, bulk_rows: usize, out: &mut Vec<Change>) {
        match m {
            LogicalMessage::Begin(_) | LogicalMessage::Commit(_) => {
                self.rows_in_tx.clear();
                self.many.clear();
            }
            LogicalMessage::Relation(r) => self.relation(r, out),
            LogicalMessage::Insert(i) => {
                if let Some(row) = self.image(i.relation, &i.new, None) {
                    self.rows(i.relation, vec![row], RowsKind::Insert, bulk_rows, out);
                } else {
                    self.whole(i.relation, out);
                }
            }
            LogicalMessage::Update(u) => self.update(u.relation, u.old.as_ref(), &u.new, bulk_rows, out),
            LogicalMessage::Delete(d) => {
                let keyed = self.tables.get(&d.relation).is_some_and(|t| !t.schema.primary_key.is_empty());
                match self.image(d.relation, d.old.tuple(), None) {
                    Some(row) if keyed || matches!(d.old, OldTuple::Full(_)) => {
                        self.rows(d.relation, vec![row], RowsKind::Delete, bulk_rows, out)
                    }
                    _ => self.whole(d.relation, out),
                }
            }
            LogicalMessage::Message(m) if m.prefix == super::ddl::PREFIX => out.push(super::ddl::change(m.content)),
            LogicalMessage::Truncate(t) => {
                for rel in &t.relations {
                    self.whole(*rel, out);
                }
            }
            _ => {}
        }
    }

    /// Records a table's definition; a changed definition changes the whole table.
    fn relation(&mut self, r: &Relation<'_>, out: &mut Vec<Change>) {
        let columns: Vec<String> = r.columns.iter().map(|c| c.name.to_string()).collect();
        // Under FULL every column is flagged: the log then names no key of its own.
        let primary_key = if r.replica_identity == ReplicaIdentity::Full {
            Vec::new()
        } else {
            r.columns.iter().enumerate().filter(|(_, c)| c.is_key()).map(|(i, _)| i).collect()
        };
        let schema_name = if r.namespace.is_empty() { "pg_catalog" } else { r.namespace };
        let table = Table {
            schema_name: schema_name.to_string(),
            name: r.name.to_string(),
            types: r.columns.iter().map(|c| c.type_oid).collect(),
            identity: r.replica_identity,
            schema: Arc::new(TableSchema { columns, primary_key }),
        };
        if let Some(old) = self.tables.insert(r.id, table.clone()) {
            if old != table {
                let renamed = (&old.schema_name, &old.name) != (&table.schema_name, &table.name);
                out.push(Change::Table { db: old.schema_name, table: old.name });
                if renamed {
                    out.push(Change::Table { db: table.schema_name, table: table.name });
                }
            }
        }
    }

    /// An UPDATE: before and after images, or the whole table.
    fn update(
        &mut self,
        rel: u32,
        old: Option<&OldTuple<'_>>,
        new: &TupleData<'_>,
        bulk_rows: usize,
        out: &mut Vec<Change>,
    ) {
        let Some(t) = self.tables.get(&rel) else { return self.whole(rel, out) };
        let full_old = matches!(old, Some(OldTuple::Full(_)));
        if t.schema.primary_key.is_empty() && !full_old {
            return self.whole(rel, out);
        }
        let before = match old {
            Some(o) => self.image(rel, o.tuple(), None),
            None => self.image(rel, new, None).map(|mut row| {
                for (i, v) in row.iter_mut().enumerate() {
                    if !t.schema.primary_key.contains(&i) {
                        *v = Value::Null;
                    }
                }
                row
            }),
        };
        let full_before = if full_old { old.and_then(|o| self.image(rel, o.tuple(), None)) } else { None };
        let after = self.image(rel, new, full_before.as_deref());
        match (before, after) {
            (Some(b), Some(a)) => {
                let changed = (0..a.len()).filter(|&i| b.get(i) != a.get(i)).collect();
                self.rows(rel, vec![b, a], RowsKind::Update(changed), bulk_rows, out)
            }
            _ => self.whole(rel, out),
        }
    }

    /// One row image as values; None if the table is unknown, the image has the wrong
    /// width, or a value is an unchanged TOAST value not found in `fill`.
    fn image(&self, rel: u32, tuple: &TupleData<'_>, fill: Option<&[Value]>) -> Option<Vec<Value>> {
        let t = self.tables.get(&rel)?;
        if tuple.columns.len() != t.types.len() {
            return None;
        }
        let mut row = Vec::with_capacity(tuple.columns.len());
        for (i, c) in tuple.columns.iter().enumerate() {
            row.push(match c {
                Column::Null => Value::Null,
                Column::UnchangedToast => fill.and_then(|f| f.get(i)).cloned()?,
                Column::Text(b) | Column::Binary(b) => value(t.types[i], b),
            });
        }
        Some(row)
    }

    /// Row images of one table, within the bulk limit.
    fn rows(&mut self, rel: u32, rows: Vec<Vec<Value>>, kind: RowsKind, bulk_rows: usize, out: &mut Vec<Change>) {
        let Some(t) = self.tables.get(&rel) else { return };
        if self.many.contains(&rel) {
            return;
        }
        let n = self.rows_in_tx.entry(rel).or_default();
        *n += 1;
        if bulk_rows > 0 && *n > bulk_rows {
            self.many.push(rel);
            out.push(Change::ManyRows { db: t.schema_name.clone(), table: t.name.clone() });
            return;
        }
        let (db, table, schema) = (t.schema_name.clone(), t.name.clone(), t.schema.clone());
        // Consecutive changes of one kind to one table share one Change, as a binlog event
        // (an UPDATE of many rows is then a few changes, not one per row): updates keep their
        // images in (before, after) pairs and the union of their changed columns.
        if let Some(Change::Rows { db: d, table: tb, rows: r, kind: k, .. }) = out.last_mut() {
            if *d == db && *tb == table && r.len() < MERGE_ROWS {
                match (k, &kind) {
                    (RowsKind::Update(cols), RowsKind::Update(more)) => {
                        for c in more {
                            if !cols.contains(c) {
                                cols.push(*c);
                            }
                        }
                        r.extend(rows);
                        return;
                    }
                    (k, kind) if k == kind => {
                        r.extend(rows);
                        return;
                    }
                    _ => {}
                }
            }
        }
        out.push(Change::Rows { db, table, schema, rows, kind });
    }

    /// Any row of the table may have changed (unknown tables: everything may have).
    fn whole(&self, rel: u32, out: &mut Vec<Change>) {
        match self.tables.get(&rel) {
            Some(t) => out.push(Change::Table { db: t.schema_name.clone(), table: t.name.clone() }),
            None => out.push(Change::All { reason: format!("a change to relation {rel}, never described") }),
        }
    }
}

/// One value in its text form, typed by its column's type OID.
fn value(type_oid: u32, text: &[u8]) -> Value {
    if INT_TYPES.contains(&type_oid) {
        if let Some(v) = std::str::from_utf8(text).ok().and_then(|s| s.parse().ok()) {
            return Value::Int(v);
        }
    }
    if BYTES_TYPES.contains(&type_oid) {
        return Value::Bytes(text.to_vec());
    }
    Value::Other(String::from_utf8_lossy(text).into_owned())
}

#[cfg(test)]
mod tests;
