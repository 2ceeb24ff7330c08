//! Binlog events to `Change`s: TABLE_MAP bookkeeping, ROWS decoding, QUERY classification,
//! transaction boundaries (where the stream may safely resume).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use mysql_async::binlog::events::{Event, OptionalMetadataField, QueryEvent, RowsEventData, TableMapEvent};
use mysql_async::binlog::value::BinlogValue;
use mysql_async::binlog::EventType;
use mysql_async::consts::ColumnType;

use querycache::{Follow, TableName};

use crate::ddl::{classify, QueryAction};
use crate::images::{images, ColumnsInfo, Image, RowImages};
use crate::meta::{Meta, TableMeta};
use sql_source::{Change, RowsKind, TableSchema, Value};

/// MariaDB event types mysql_common does not know.
mod mariadb {
    pub const ANNOTATE_ROWS: u8 = 160;
    pub const BINLOG_CHECKPOINT: u8 = 161;
    pub const GTID: u8 = 162;
    pub const GTID_LIST: u8 = 163;
    pub const START_ENCRYPTION: u8 = 164;
    pub const QUERY_COMPRESSED: u8 = 165;
    /// WRITE/UPDATE/DELETE_ROWS_COMPRESSED_EVENT(_V1): 166..=171.
    pub const ROWS_COMPRESSED: std::ops::RangeInclusive<u8> = 166..=171;
    /// GTID event flag: a statement without BEGIN/COMMIT (DDL).
    pub const FL_STANDALONE: u8 = 1;
    /// GTID event flag: an XA transaction that ends prepared (committed later by XA COMMIT).
    pub const FL_PREPARED_XA: u8 = 64;
}

/// Table ids remembered before the map is cleared (ids change with every table reopen).
const MAX_TABLE_IDS: usize = 4096;
/// Prepared XA transactions whose changes are kept for their XA COMMIT (the oldest is
/// forgotten past it: its commit then changes everything).
const MAX_PREPARED_XA: usize = 64;
/// Row images kept per prepared XA transaction; past it, its tables as a whole (so at most
/// 64 x 1,000 row images are held for transactions prepared and not yet committed).
const MAX_XA_ROWS: usize = 1_000;
/// The grant tables (MariaDB's and MySQL's): a direct write to one takes effect at the next
/// FLUSH PRIVILEGES.
const GRANT_TABLES: &[&str] = &[
    "user",
    "global_priv",
    "db",
    "tables_priv",
    "columns_priv",
    "procs_priv",
    "proxies_priv",
    "roles_mapping",
    "host",
    "role_edges",
    "default_roles",
    "global_grants",
];

/// The changes of an XA transaction being logged, kept for its XA COMMIT: a prepared
/// transaction's rows are logged (and reported) at XA PREPARE, before they are visible, so a
/// cache may have read the old rows again by the time XA COMMIT makes them visible.
#[derive(Default)]
struct XaTrx {
    /// Its id, from `XA END`.
    xid: Option<String>,
    /// Its changes (past `MAX_XA_ROWS` row images: its tables as a whole).
    changes: Vec<Change>,
    rows: usize,
}

impl XaTrx {
    fn keep(&mut self, c: &Change) {
        match c {
            Change::Rows { rows, .. } => self.rows += rows.len(),
            Change::Connected | Change::Disconnected { .. } => return,
            _ => {}
        }
        self.changes.push(c.clone());
        if self.rows > MAX_XA_ROWS {
            let mut tables: Vec<Change> = Vec::new();
            for c in self.changes.drain(..) {
                let c = match c {
                    Change::Rows { db, table, .. } | Change::ManyRows { db, table } => Change::Table { db, table },
                    other => other,
                };
                if !tables.contains(&c) {
                    tables.push(c);
                }
            }
            self.changes = tables;
            self.rows = 0;
        }
    }
}

/// Whether `c` may have written the grant tables.
fn writes_grants(c: &Change) -> bool {
    match c {
        Change::Rows { db, table, .. }
        | Change::ManyRows { db, table }
        | Change::Table { db, table }
        | Change::Keys { db, table } => {
            db.eq_ignore_ascii_case("mysql") && GRANT_TABLES.iter().any(|g| table.eq_ignore_ascii_case(g))
        }
        Change::Database { db } => db.eq_ignore_ascii_case("mysql"),
        Change::All { .. } => true,
        _ => false,
    }
}

/// A table id's TABLE_MAP and what was derived from it.
struct Mapped {
    tme: TableMapEvent<'static>,
    db: String,
    table: String,
    /// None: column names unknown (rows of this table become `Change::Table`).
    schema: Option<Arc<TableSchema>>,
    /// Per column: an integer column to read as unsigned (signedness missing from the binlog).
    fix_unsigned: Vec<bool>,
    /// What row images need per column (None: a column type unknown; mysql_common decodes).
    cols: Option<ColumnsInfo>,
}

/// Result of one event.
pub(crate) struct Decoded {
    /// Changes to report, in order.
    pub changes: Vec<Change>,
    /// After this event the stream is between transactions (a safe place to resume).
    pub boundary: bool,
    /// New binlog file name (ROTATE).
    pub rotate: Option<(String, u64)>,
}

/// Decoding state of one binlog connection.
pub(crate) struct Decoder {
    tables: HashMap<u64, Mapped>,
    in_trx: bool,
    pub(crate) meta: Meta,
    /// Row images per table id decoded in the current transaction.
    rows_in_trx: HashMap<u64, usize>,
    /// Table ids reported as `Change::ManyRows` in the current transaction (their later
    /// row events are skipped).
    bulk: HashSet<u64>,
    /// The grant tables may have been written since the last FLUSH PRIVILEGES (true at the
    /// start: what happened before this stream is not known).
    grants_written: bool,
    /// The XA transaction being logged, if any.
    xa: Option<XaTrx>,
    /// Prepared XA transactions, oldest first: (xid, changes).
    prepared: VecDeque<(String, Vec<Change>)>,
}

impl Decoder {
    pub(crate) fn new(meta: Meta) -> Decoder {
        Decoder {
            tables: HashMap::new(),
            in_trx: false,
            meta,
            rows_in_trx: HashMap::new(),
            bulk: HashSet::new(),
            grants_written: true,
            xa: None,
            prepared: VecDeque::new(),
        }
    }

    /// Decodes one event; `bulk_rows` (0: none) is the number of row images of one table in
    /// one transaction past which its further row events become one `Change::ManyRows`.
    pub(crate) async fn event(&mut self, ev: &Event, bulk_rows: usize) -> Decoded {
        let ty = ev.header().event_type_raw();
        let mut out = Decoded { changes: Vec::new(), boundary: false, rotate: None };
        let all = |reason: String| vec![Change::All { reason }];
        match EventType::try_from(ty) {
            Ok(EventType::TABLE_MAP_EVENT) => match ev.read_event::<TableMapEvent<'_>>() {
                Ok(tme) => self.table_map(tme.into_owned()).await,
                Err(e) => out.changes = all(format!("undecodable TABLE_MAP: {e}")),
            },
            Ok(
                EventType::WRITE_ROWS_EVENT_V1
                | EventType::UPDATE_ROWS_EVENT_V1
                | EventType::DELETE_ROWS_EVENT_V1
                | EventType::WRITE_ROWS_EVENT
                | EventType::UPDATE_ROWS_EVENT
                | EventType::DELETE_ROWS_EVENT
                | EventType::PARTIAL_UPDATE_ROWS_EVENT,
            ) => out.changes = self.rows(ev, bulk_rows).await,
            Ok(EventType::QUERY_EVENT) => match ev.read_event::<QueryEvent<'_>>() {
                Ok(q) => out.changes = self.query(&q.schema(), &q.query()).await,
                Err(e) => out.changes = all(format!("undecodable QUERY: {e}")),
            },
            Ok(EventType::XID_EVENT) => self.in_trx = false,
            Ok(EventType::XA_PREPARE_LOG_EVENT) => {
                self.in_trx = false;
                if let Some(XaTrx { xid: Some(xid), changes, .. }) = self.xa.take() {
                    if self.prepared.len() >= MAX_PREPARED_XA {
                        self.prepared.pop_front();
                    }
                    self.prepared.push_back((xid, changes));
                }
            }
            Ok(EventType::ROTATE_EVENT) => out.rotate = rotate(ev),
            Ok(EventType::INCIDENT_EVENT) => out.changes = all("INCIDENT event (the server lost changes)".into()),
            Ok(
                EventType::LOAD_EVENT
                | EventType::CREATE_FILE_EVENT
                | EventType::EXEC_LOAD_EVENT
                | EventType::NEW_LOAD_EVENT
                | EventType::EXECUTE_LOAD_QUERY_EVENT
                | EventType::PRE_GA_WRITE_ROWS_EVENT
                | EventType::PRE_GA_UPDATE_ROWS_EVENT
                | EventType::PRE_GA_DELETE_ROWS_EVENT,
            ) => out.changes = all(format!("event type {ty} not interpreted")),
            // Headers, GTIDs, heartbeats, statement context: nothing changes.
            Ok(_) => {}
            Err(_) => match ty {
                mariadb::GTID => {
                    // seq_no (8), domain_id (4), flags2 (1).
                    let flags = ev.data().get(12).copied().unwrap_or(0);
                    self.in_trx = flags & mariadb::FL_STANDALONE == 0;
                    self.xa = (flags & mariadb::FL_PREPARED_XA != 0).then(XaTrx::default);
                }
                mariadb::ANNOTATE_ROWS
                | mariadb::BINLOG_CHECKPOINT
                | mariadb::GTID_LIST
                | mariadb::START_ENCRYPTION => {}
                t if mariadb::ROWS_COMPRESSED.contains(&t) => {
                    // Same post-header as ROWS events: table id (6 bytes).
                    let id = ev.data().get(..6).map(|b| b.iter().rev().fold(0u64, |a, &x| a << 8 | x as u64));
                    out.changes = match id.and_then(|id| self.tables.get(&id)) {
                        Some(m) => vec![Change::Table { db: m.db.clone(), table: m.table.clone() }],
                        None => all("compressed rows event of an unknown table".into()),
                    };
                }
                mariadb::QUERY_COMPRESSED => out.changes = all("compressed QUERY event".into()),
                t => out.changes = all(format!("unknown event type {t}")),
            },
        }
        if let Some(x) = &mut self.xa {
            out.changes.iter().for_each(|c| x.keep(c));
        }
        self.grants_written |= out.changes.iter().any(writes_grants);
        out.boundary = !self.in_trx;
        if out.boundary && !self.rows_in_trx.is_empty() {
            self.rows_in_trx.clear();
            self.bulk.clear();
        }
        if out.boundary && self.tables.len() > MAX_TABLE_IDS {
            // Every transaction maps its tables again: forgetting between transactions is safe.
            self.tables.clear();
        }
        out
    }

    async fn table_map(&mut self, tme: TableMapEvent<'static>) {
        let id = tme.table_id();
        if let Some(m) = self.tables.get(&id) {
            if m.tme == tme {
                return; // the same definition as last time: keep the shared schema
            }
        }
        let (db, table) = (tme.database_name().into_owned(), tme.table_name().into_owned());
        let ncols = tme.columns_count() as usize;
        // FULL metadata without a key field: the table has no primary key.
        let (mut names, mut pk, mut has_sign) = (None, Vec::new(), false);
        for field in tme.iter_optional_meta() {
            match field {
                Ok(OptionalMetadataField::ColumnName(n)) => {
                    names =
                        n.iter_names().map(|c| c.map(|c| c.name().into_owned())).collect::<Result<Vec<_>, _>>().ok();
                }
                Ok(OptionalMetadataField::SimplePrimaryKey(k)) => {
                    pk = k.iter_indexes().filter_map(Result::ok).map(|i| i as usize).collect();
                }
                Ok(OptionalMetadataField::PrimaryKeyWithPrefix(k)) => {
                    pk = k.iter_keys().filter_map(Result::ok).map(|k| k.column_index() as usize).collect();
                }
                Ok(OptionalMetadataField::Signedness(_)) => has_sign = true,
                Ok(_) => {}
                Err(_) => names = None,
            }
        }
        let mut fix_unsigned = vec![false; ncols];
        let schema = match names {
            Some(columns) if columns.len() == ncols && pk.iter().all(|&i| i < ncols) => {
                Some(Arc::new(TableSchema { columns, primary_key: pk }))
            }
            _ => match self.meta.table(&db, &table).await {
                Some(m) if m.columns.len() == ncols => {
                    if !has_sign {
                        fix_unsigned = m.unsigned.clone();
                    }
                    Some(schema_of(&m))
                }
                _ => None,
            },
        };
        let cols = ColumnsInfo::of(&tme);
        self.tables.insert(id, Mapped { tme, db, table, schema, fix_unsigned, cols });
    }

    async fn rows(&mut self, ev: &Event, bulk_rows: usize) -> Vec<Change> {
        let re = match ev.read_event_rows() {
            Ok(re) => re,
            Err(e) => return vec![Change::All { reason: format!("undecodable ROWS event: {e}") }],
        };
        let id = re.table_id();
        let Some(m) = self.tables.get(&id) else {
            return vec![Change::All { reason: format!("ROWS event for unmapped table id {id}") }];
        };
        if self.bulk.contains(&id) {
            return Vec::new(); // already reported as a whole for this transaction
        }
        let table = Change::Table { db: m.db.clone(), table: m.table.clone() };
        let seen = self.rows_in_trx.entry(id).or_default();
        let mut changes = if bulk_rows > 0 && *seen >= bulk_rows {
            // One big statement (or transaction) on one table: decoding and delivering every
            // row image would put the follower behind; from here on it is one table change.
            self.bulk.insert(id);
            vec![Change::ManyRows { db: m.db.clone(), table: m.table.clone() }]
        } else {
            match m.schema.as_ref().and_then(|s| decode_rows(&re, m, s).ok()) {
                Some((rows, kind)) => {
                    *seen += rows.len();
                    let schema = m.schema.clone().expect("decoded with a schema");
                    vec![Change::Rows { db: m.db.clone(), table: m.table.clone(), schema, rows, kind }]
                }
                None => vec![table],
            }
        };
        // InnoDB applies ON UPDATE/DELETE actions without logging them.
        if !matches!(re, RowsEventData::WriteRowsEvent(_) | RowsEventData::WriteRowsEventV1(_)) {
            let name = TableName::new(&m.db, &m.table);
            match self.meta.effects().await {
                Ok(fx) => changes.extend(
                    fx.cascades(&name)
                        .iter()
                        .map(|t| Change::Table { db: t.db.to_string(), table: t.table.to_string() }),
                ),
                Err(e) => changes.push(Change::All { reason: format!("foreign keys unknown ({e})") }),
            }
        }
        changes
    }

    async fn query(&mut self, db: &str, sql: &str) -> Vec<Change> {
        match classify(db, sql) {
            QueryAction::Begin => self.in_trx = true,
            QueryAction::XaStart => {
                self.in_trx = true;
                self.xa = Some(XaTrx::default());
            }
            QueryAction::End => self.in_trx = false,
            QueryAction::Ignore => {}
            QueryAction::XaEnd(xid) => {
                if let Some(x) = &mut self.xa {
                    x.xid = Some(xid);
                }
            }
            QueryAction::XaCommit(xid) => {
                // The prepared transaction's changes become visible now: report them again.
                return match self.prepared.iter().position(|(x, _)| *x == xid) {
                    Some(i) => self.prepared.remove(i).map(|(_, c)| c).unwrap_or_default(),
                    None => vec![Change::All {
                        reason: format!("XA COMMIT {xid} of a transaction prepared before the follower saw it"),
                    }],
                };
            }
            QueryAction::XaRollback(xid) => self.prepared.retain(|(x, _)| *x != xid),
            QueryAction::FlushPrivileges => {
                if std::mem::take(&mut self.grants_written) {
                    let reason = "FLUSH PRIVILEGES after a direct write to the grant tables (or before the follower \
                                  knew): privileges may be other than before"
                        .to_string();
                    return vec![Change::Privileges { reason }];
                }
            }
            QueryAction::Privileges(reason) => return vec![Change::Privileges { reason }],
            QueryAction::Routines(reason) => {
                self.meta.forget_effects();
                return vec![Change::Routines { reason }];
            }
            QueryAction::Changes(changes) => {
                for c in &changes {
                    match c {
                        Change::Table { db, table } | Change::Keys { db, table } => self.meta.forget(Some((db, table))),
                        _ => self.meta.forget(None),
                    }
                }
                return changes;
            }
            QueryAction::Writes(mut changes) => {
                self.follow_writes(&mut changes).await;
                return changes;
            }
        }
        Vec::new()
    }

    /// Adds to a statement-format write's tables what their triggers and cascading foreign
    /// keys changed (the binlog logs the statement only; a replica runs the triggers
    /// itself): the closure of `querycache::Effects`, the one proxied writes follow.
    async fn follow_writes(&mut self, changes: &mut Vec<Change>) {
        let fx = match self.meta.effects().await {
            Ok(fx) => fx,
            Err(e) => {
                let reason = format!("triggers and foreign keys unknown ({e}) after a statement-format write");
                return changes.push(Change::All { reason });
            }
        };
        let mut more: Vec<Change> = Vec::new();
        for c in changes.iter() {
            let follows: Vec<&Follow> = match c {
                Change::Table { db, table } => fx.follows(&TableName::new(db, table)).into_iter().collect(),
                Change::Database { db } => fx.follows_in(db).collect(),
                _ => Vec::new(),
            };
            for f in follows {
                match f {
                    Follow::All => {
                        let reason = "a statement-format write fired a trigger the follower cannot bound (CALL, \
                                      dynamic SQL, DDL or a stored function in its body)";
                        more.push(Change::All { reason: reason.into() });
                    }
                    Follow::Tables(ts) => {
                        for t in ts {
                            let c = Change::Table { db: t.db.to_string(), table: t.table.to_string() };
                            if !changes.contains(&c) && !more.contains(&c) {
                                more.push(c);
                            }
                        }
                    }
                }
            }
        }
        changes.extend(more);
    }
}

/// File and position of a ROTATE event. The server's fake ROTATE at the start of a dump
/// comes before any FORMAT_DESCRIPTION, so its checksum (if any) is still in the data.
fn rotate(ev: &Event) -> Option<(String, u64)> {
    let d = ev.data();
    let pos = u64::from_le_bytes(d.get(..8)?.try_into().ok()?);
    let mut name = &d[8..];
    if name.len() >= 4 {
        let h = ev.header();
        let mut raw = Vec::with_capacity(19 + d.len());
        raw.extend_from_slice(&h.timestamp().to_le_bytes());
        raw.push(h.event_type_raw());
        raw.extend_from_slice(&h.server_id().to_le_bytes());
        raw.extend_from_slice(&h.event_size().to_le_bytes());
        raw.extend_from_slice(&h.log_pos().to_le_bytes());
        raw.extend_from_slice(&h.flags_raw().to_le_bytes());
        raw.extend_from_slice(&d[..d.len() - 4]);
        if crc32(&raw).to_le_bytes() == d[d.len() - 4..] {
            name = &name[..name.len() - 4];
        }
    }
    Some((String::from_utf8_lossy(name).into_owned(), pos))
}

/// CRC-32 (IEEE), as binlog checksums use (bitwise: only for rare ROTATE events).
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn schema_of(m: &TableMeta) -> Arc<TableSchema> {
    Arc::new(TableSchema { columns: m.columns.clone(), primary_key: m.primary_key.clone() })
}

/// Helper: read any ROWS event variant.
trait ReadRows {
    fn read_event_rows(&self) -> std::io::Result<RowsEventData<'_>>;
}

impl ReadRows for Event {
    fn read_event_rows(&self) -> std::io::Result<RowsEventData<'_>> {
        match self.read_data()? {
            Some(mysql_async::binlog::events::EventData::RowsEvent(r)) => Ok(r),
            _ => Err(std::io::Error::other("not a rows event")),
        }
    }
}

/// Every row image of `re`, one value per column; Err if an image lacks a key column.
/// The row images of a rows event, and what it did (for an update, the columns that
/// changed in some row, or that an image left out).
fn decode_rows(
    re: &RowsEventData<'_>,
    m: &Mapped,
    schema: &TableSchema,
) -> Result<(Vec<Vec<Value>>, RowsKind), String> {
    let fast = m.cols.as_ref().and_then(|c| images(re, c));
    let images: Vec<RowImages<'_>> = match fast {
        Some(rows) => rows.map_err(|e| e.to_string())?,
        None => slow_images(re, m)?,
    };
    #[cfg(debug_assertions)]
    if m.cols.as_ref().is_some_and(|c| c.mysql_common_agrees()) {
        // Checked against mysql_common's own decoding in every debug build (tests).
        assert_eq!(format!("{images:?}"), format!("{:?}", slow_images(re, m)?), "row images differ");
    }
    let ncols = schema.columns.len();
    let mut out = Vec::new();
    let mut changed = vec![false; ncols];
    for (before, after) in images {
        let pair = before.is_some() && after.is_some();
        for (img, bits) in [(before, re.columns_before_image()), (after, re.columns_after_image())] {
            let (Some(img), Some(bits)) = (img, bits) else { continue };
            let mut vals = img.into_iter();
            let mut row = Vec::with_capacity(ncols);
            for (i, c) in changed.iter_mut().enumerate() {
                if !bits.get(i).is_some_and(|b| *b) {
                    if schema.primary_key.contains(&i) {
                        return Err("key column missing from a row image".into());
                    }
                    *c = true;
                    row.push(Value::Null);
                    continue;
                }
                let v = vals.next().ok_or("short row image")?;
                row.push(convert(v, m.fix_unsigned[i], m.tme.get_column_type(i).ok().flatten()));
            }
            out.push(row);
        }
        if pair {
            let (b, a) = (&out[out.len() - 2], &out[out.len() - 1]);
            for (i, c) in changed.iter_mut().enumerate() {
                *c |= b[i] != a[i];
            }
        }
    }
    let kind = match re {
        RowsEventData::WriteRowsEvent(_) | RowsEventData::WriteRowsEventV1(_) => RowsKind::Insert,
        RowsEventData::DeleteRowsEvent(_) | RowsEventData::DeleteRowsEventV1(_) => RowsKind::Delete,
        _ => RowsKind::Update(changed.iter().enumerate().filter(|(_, c)| **c).map(|(i, _)| i).collect()),
    };
    Ok((out, kind))
}

/// The row images as mysql_common's `rows` decodes them (one named `Column` per value).
fn slow_images<'s>(re: &'s RowsEventData<'s>, m: &'s Mapped) -> Result<Vec<RowImages<'s>>, String> {
    let image = |r: Option<mysql_async::binlog::row::BinlogRow>| -> Option<Image<'s>> {
        r.map(|r| r.unwrap().into_iter().collect())
    };
    re.rows(&m.tme).map(|item| item.map(|(b, a)| (image(b), image(a))).map_err(|e| e.to_string())).collect()
}

fn convert(v: BinlogValue<'_>, unsigned: bool, ty: Option<ColumnType>) -> Value {
    use mysql_async::Value as V;
    match v {
        BinlogValue::Value(V::NULL) => Value::Null,
        BinlogValue::Value(V::Int(i)) if unsigned && i < 0 => {
            let bits = match ty {
                Some(ColumnType::MYSQL_TYPE_TINY) => 8,
                Some(ColumnType::MYSQL_TYPE_SHORT) => 16,
                Some(ColumnType::MYSQL_TYPE_INT24) => 24,
                Some(ColumnType::MYSQL_TYPE_LONG) => 32,
                _ => 64,
            };
            Value::UInt(if bits == 64 { i as u64 } else { (i as u64) & ((1u64 << bits) - 1) })
        }
        BinlogValue::Value(V::Int(i)) => Value::Int(i),
        BinlogValue::Value(V::UInt(u)) => Value::UInt(u),
        BinlogValue::Value(V::Bytes(b)) => Value::Bytes(b),
        BinlogValue::Value(V::Float(f)) => Value::Other(f.to_string()),
        BinlogValue::Value(V::Double(f)) => Value::Other(f.to_string()),
        BinlogValue::Value(V::Date(y, mo, d, h, mi, s, us)) => {
            Value::Other(format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}"))
        }
        BinlogValue::Value(V::Time(neg, d, h, mi, s, us)) => {
            let sign = if neg { "-" } else { "" };
            Value::Other(format!("{sign}{:02}:{mi:02}:{s:02}.{us:06}", d * 24 + h as u32))
        }
        other => Value::Other(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn crc32_check_value() {
        assert_eq!(super::crc32(b"123456789"), 0xCBF4_3926);
    }
}
