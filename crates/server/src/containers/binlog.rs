//! Binlog invalidation for the `caching` policy on MariaDB/MySQL (crate `binlog`): a
//! change made to a container's table by anyone (SQL clients included) drops the memory
//! copies of the changed keys as soon as the follower reads it, instead of leaving them
//! stale for up to `cache_ttl`.
//!
//! * Row events (`binlog_format = ROW`): every row image's key column value (before and
//!   after images) is removed from that container's memory copy, except where the copy is
//!   the row as of the event: a row a write through sqlcached stored is put there when its
//!   event shows it (write-through, `through.rs`), and a later delivery of the same event
//!   keeps it (see [`rows_changed`]).
//! * A change to the whole table (TRUNCATE, DDL, statement-format DML with what its
//!   triggers and cascades wrote), the database, or anything (a gap in the stream) empties
//!   the memory copy of every container concerned; so does a broken stream (changes may be
//!   missed until the follower is back). What changes no row (privileges, stored programs,
//!   a table's indexes, FLUSH, ANALYZE, OPTIMIZE) keeps them (docs/invalidation.md).
//! * Keys are matched byte for byte as the binlog gives them (integers as decimal
//!   digits): with a case-insensitive key collation a copy cached under another spelling
//!   of the key still waits for `cache_ttl`.
//! * While the follower is further behind the binlog head than `max_lag_ms` (default
//!   100), gets skip the memory copy and read the table (`container_<c>_lag_bypasses`).
//! * Needs an account with replication rights (REPLICATION SLAVE, BINLOG MONITOR). It is
//!   checked at start ([`::binlog::health`], the check the MySQL proxy uses): without them
//!   the start says `containers: DEGRADED: ...` with the GRANT to run, `stats` shows
//!   `containers_binlog_degraded 1`, gets read the table (the follower never catches up,
//!   so `max_lag_ms` sends them there) until the account passes, checked every 10 s.

use std::sync::Arc;

use ::sql_source::{Change, RowsKind, TableSchema, Value};
use sql_containers::{Container, MysqlLogin, Row};

use super::cache::{fill, peek, Copy};
use super::through::Expect;
use crate::feeds::SourceFeeds as Feeds;
use ::binlog::health::{Health, Who};
use ::sql_source::feeds::Pass;
use ::sql_source::fresh::Freshness;

/// One `caching` container's table and its memory copy.
pub struct Watched {
    /// Database of the table.
    pub db: String,
    /// Table name.
    pub table: String,
    /// Key column name.
    pub key_column: String,
    /// The container (reads a row image as a get reads the row).
    pub container: Container,
    /// The container's memory copy.
    pub copy: Arc<Copy>,
    /// The container's counters (`invalidations`, `written_through`).
    pub stats: Arc<super::stats::ContainerStats>,
}

/// The bytes a memcached key (or a get) has for a column value (None: NULL).
fn value_bytes(v: &Value) -> Option<Vec<u8>> {
    v.text_bytes().map(std::borrow::Cow::into_owned)
}

/// Applies one change to the memory copies (`first`: the first delivery, not a recheck).
pub fn apply(watched: &[Watched], change: &Change, first: bool) {
    let same =
        |w: &Watched, db: &str, table: &str| w.db.eq_ignore_ascii_case(db) && w.table.eq_ignore_ascii_case(table);
    match change {
        Change::Rows { db, table, schema, rows, kind } => {
            for w in watched.iter().filter(|w| same(w, db, table)) {
                match schema.columns.iter().position(|c| c.eq_ignore_ascii_case(&w.key_column)) {
                    Some(i) => rows_changed(w, schema, i, rows, kind, first),
                    None => flush(w, first),
                }
            }
        }
        Change::Table { db, table } | Change::ManyRows { db, table } => {
            watched.iter().filter(|w| same(w, db, table)).for_each(|w| flush(w, first))
        }
        Change::Database { db } => {
            watched.iter().filter(|w| w.db.eq_ignore_ascii_case(db)).for_each(|w| flush(w, first))
        }
        Change::All { .. } => watched.iter().for_each(|w| flush(w, first)),
        Change::Disconnected { .. } => watched.iter().for_each(|w| {
            flush(w, first);
            // Their events may never come.
            w.copy.expect.as_deref().inspect(|x| x.clear());
        }),
        // No row changed: privileges, stored programs, a table's keys (docs/containers.md).
        Change::Privileges { .. } | Change::Routines { .. } | Change::Keys { .. } | Change::Connected => {}
    }
}

/// A rows event of a watched table (`key`: the key column's position in its images).
///
/// A copy is kept only where it is the row as of this event: a deleted row's goes; an
/// inserted or updated row's goes unless it equals the row's after image (read as a get
/// reads it); and the after image that shows what a write through sqlcached stored
/// (`through.rs`, first delivery only) is put in memory, confirmed. A recheck finds a
/// confirmed copy equal to its image and keeps it, and drops any copy filled from an older
/// read in between.
fn rows_changed(w: &Watched, schema: &TableSchema, key: usize, rows: &[Vec<Value>], kind: &RowsKind, first: bool) {
    let key_of = |img: &Vec<Value>| img.get(key).and_then(value_bytes);
    let drop = |k: &[u8]| {
        w.copy.drop_changed(k);
        if first {
            w.stats.invalidated(1);
        }
    };
    let now = w.copy.engine.clock().unix_now();
    let row_of = |img: &Vec<Value>| -> Option<Row> {
        w.container.row_of_columns(now, |name| {
            let j = schema.columns.iter().position(|c| c.eq_ignore_ascii_case(name))?;
            img.get(j).map(value_bytes)
        })
    };
    let after = |img: &Vec<Value>| {
        let Some(k) = key_of(img) else { return };
        // Reads in flight read the table before this change (or before it was visible):
        // their fills must not stay.
        w.copy.changed(&k);
        let row = row_of(img);
        let expect: Option<&Expect> = w.copy.expect.as_deref();
        if let (true, Some(row), Some(x)) = (first, &row, expect) {
            if x.confirm(&k, row) {
                fill(&w.container, &w.copy.engine, &k, row, true);
                w.stats.written_through();
                return;
            }
        }
        match (&row, peek(&w.copy.engine, &k)) {
            (Some(row), Some((copy, true))) if copy == *row => {}
            (_, None) => {}
            _ => drop(&k),
        }
    };
    match kind {
        RowsKind::Insert => rows.iter().for_each(after),
        RowsKind::Delete => rows.iter().filter_map(key_of).for_each(|k| drop(&k)),
        RowsKind::Update(_) => {
            for pair in rows.chunks(2) {
                let (before, img) = (&pair[0], pair.get(1).unwrap_or(&pair[0]));
                match (key_of(before), key_of(img)) {
                    (Some(b), Some(a)) if b != a => drop(&b),
                    (Some(b), None) => drop(&b),
                    _ => {}
                }
                after(img);
            }
        }
    }
}

/// Drops a container's whole memory copy (counted as one invalidation unless a recheck).
fn flush(w: &Watched, counted: bool) {
    w.copy.changed_all();
    w.copy.engine.flush_all(0, engine::Receipt::none());
    if counted {
        w.stats.invalidated(1);
    }
}

/// The caching containers, as their account check speaks of them.
const WHO: Who = Who {
    name: "containers",
    degraded: "the caching containers cannot follow the binlog, their gets read the table",
    stats: "containers_binlog",
};

/// Checks the backend account (logging what it finds) and follows the backend's binlog
/// for `watched` (nothing to do if it is empty), on the server's feed of that backend
/// (shared with the query cache and the invalidation rules): the freshness rule of
/// `max_lag_ms` on that feed, and the account's health.
pub fn start(
    login: MysqlLogin,
    watched: Vec<Watched>,
    feeds: &Feeds,
    max_lag_ms: u64,
) -> (Option<Arc<Freshness>>, Option<Arc<Health>>) {
    if watched.is_empty() {
        return (None, None);
    }
    let cfg = ::binlog::Config {
        backend: login.address,
        user: login.user,
        password: login.password,
        server_id: feeds.server_id,
        start: None,
    };
    let health = Health::start(WHO, cfg.clone());
    let sink: ::sql_source::feeds::Sink = Box::new(move |change, pass| apply(&watched, change, pass == Pass::First));
    let feed = ::binlog::subscribe(&feeds.binlog, cfg, "the caching containers", true, false, sink);
    if max_lag_ms == 0 {
        log::warn!("containers: max_lag_ms = 0: caching containers serve memory copies however far the binlog follower is behind");
    }
    (Some(Arc::new(Freshness::new(&feed, max_lag_ms, "the caching containers"))), Some(health))
}

#[cfg(test)]
mod tests {
    //! The write-through and recheck rules on events in the orders the binlog can deliver
    //! them (a SQLite container only lends its column mapping: nothing here runs SQL).
    use super::*;
    use crate::containers::stats::ContainerStats;
    use ::sql_source::TableSchema;
    use engine::{Engine, EngineConfig};
    use sql_containers::{Containers, SqlConfig};

    fn watched() -> (tempfile::TempDir, Watched) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        rusqlite::Connection::open(&db)
            .unwrap()
            .execute_batch("CREATE TABLE kv (k TEXT PRIMARY KEY, a TEXT, n INTEGER, f INTEGER);")
            .unwrap();
        let toml = format!(
            "[backend]\nkind = \"sqlite\"\npath = {:?}\n[options]\n[[container]]\nname = \"kv\"\ntable = \"kv\"\n\
             key_column = \"k\"\nvalue_columns = \"a,n\"\nflags_column = \"f\"\npolicy = \"caching\"\ncache_ttl = 3600\n",
            db.to_str().unwrap()
        );
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let set = rt.block_on(Containers::load(&SqlConfig::from_toml_str(&toml).unwrap())).unwrap();
        let cfg = EngineConfig { memory_limit: 2 << 20, item_size_max: 1 << 20, evict: true, use_cas: true, shards: 4 };
        let copy = Arc::new(Copy::new(Arc::new(Engine::new(cfg)), Some(Arc::new(Expect::default()))));
        let w = Watched {
            db: "main".into(),
            table: "kv".into(),
            key_column: "k".into(),
            container: set.default_container().clone(),
            copy,
            stats: Arc::new(ContainerStats::default()),
        };
        (dir, w)
    }

    fn schema() -> Arc<TableSchema> {
        Arc::new(TableSchema { columns: ["k", "a", "n", "f"].map(String::from).to_vec(), primary_key: vec![0] })
    }

    fn img(k: &str, a: &str, n: i64, f: i64) -> Vec<Value> {
        vec![Value::Bytes(k.into()), Value::Bytes(a.into()), Value::Int(n), Value::Int(f)]
    }

    fn rows(kind: RowsKind, rows: Vec<Vec<Value>>) -> Change {
        Change::Rows { db: "main".into(), table: "kv".into(), schema: schema(), rows, kind }
    }

    fn update(before: Vec<Value>, after: Vec<Value>) -> Change {
        rows(RowsKind::Update(vec![1]), vec![before, after])
    }

    /// The memory copy of `k`: (value, confirmed).
    fn copy_of(w: &Watched, k: &str) -> Option<(Vec<u8>, bool)> {
        peek(&w.copy.engine, k.as_bytes()).map(|(r, c)| (r.value, c))
    }

    fn expect(w: &Watched) -> &Expect {
        w.copy.expect.as_deref().unwrap()
    }

    #[test]
    fn a_write_s_own_event_fills_and_its_recheck_keeps() {
        let (_d, w) = watched();
        let ws = std::slice::from_ref(&w);
        expect(&w).register(b"p1", b"x|5", 3, 0);
        let ev = update(img("p1", "x", 4, 3), img("p1", "x", 5, 3));
        apply(ws, &ev, true);
        assert_eq!(copy_of(&w, "p1"), Some((b"x|5".to_vec(), true)));
        apply(ws, &ev, false);
        assert_eq!(copy_of(&w, "p1"), Some((b"x|5".to_vec(), true)), "the recheck of its own event keeps it");
    }

    #[test]
    fn a_later_write_drops_it_even_when_it_arrives_first() {
        let (_d, w) = watched();
        let ws = std::slice::from_ref(&w);
        expect(&w).register(b"p1", b"x|5", 0, 0);
        let ours = rows(RowsKind::Insert, vec![img("p1", "x", 5, 0)]);
        let direct = update(img("p1", "x", 5, 0), img("p1", "y", 6, 0));
        apply(ws, &ours, true);
        apply(ws, &direct, true);
        assert_eq!(copy_of(&w, "p1"), None, "a direct write after ours drops the copy");
        // Rechecks in binlog order: nothing comes back.
        apply(ws, &ours, false);
        apply(ws, &direct, false);
        assert_eq!(copy_of(&w, "p1"), None);
        // A read refilled the old row (before the direct write was visible): dropped by the recheck.
        fill(&w.container, &w.copy.engine, b"p1", &Row { value: b"x|5".to_vec(), flags: 0, cas: 0, exptime: 0 }, false);
        apply(ws, &direct, false);
        assert_eq!(copy_of(&w, "p1"), None);
    }

    #[test]
    fn an_older_event_never_fills_and_its_recheck_drops_a_newer_copy() {
        let (_d, w) = watched();
        let ws = std::slice::from_ref(&w);
        let older = update(img("p1", "a", 1, 0), img("p1", "b", 2, 0));
        expect(&w).register(b"p1", b"c|3", 0, 0);
        apply(ws, &older, true);
        assert_eq!(copy_of(&w, "p1"), None);
        let ours = update(img("p1", "b", 2, 0), img("p1", "c", 3, 0));
        apply(ws, &ours, true);
        assert_eq!(copy_of(&w, "p1"), Some((b"c|3".to_vec(), true)), "the expectation waited for its event");
        apply(ws, &older, false);
        assert_eq!(copy_of(&w, "p1"), None, "a stale recheck costs a miss, never a wrong answer");
    }

    #[test]
    fn another_spelling_of_the_value_is_never_cached() {
        let (_d, w) = watched();
        let ws = std::slice::from_ref(&w);
        // `042` into an integer column reads back `42`; fewer parts than columns read back
        // with an empty one; other flags.
        for (written, image) in [("x|042", img("p", "x", 42, 0)), ("x", img("p", "x", 0, 0))] {
            expect(&w).register(b"p", written.as_bytes(), 0, 0);
            apply(ws, &rows(RowsKind::Insert, vec![image]), true);
            assert_eq!(copy_of(&w, "p"), None, "{written}");
        }
        expect(&w).register(b"p", b"x|1", 7, 0);
        apply(ws, &rows(RowsKind::Insert, vec![img("p", "x", 1, 8)]), true);
        assert_eq!(copy_of(&w, "p"), None);
    }

    #[test]
    fn read_fills_still_go_on_every_change_and_deletes_drop() {
        let (_d, w) = watched();
        let ws = std::slice::from_ref(&w);
        let row = Row { value: b"x|1".to_vec(), flags: 0, cas: 0, exptime: 0 };
        fill(&w.container, &w.copy.engine, b"p", &row, false);
        // Even an event showing the same row: an unconfirmed copy goes (as before write-through).
        apply(ws, &update(img("p", "x", 1, 0), img("p", "x", 1, 0)), false);
        assert_eq!(copy_of(&w, "p"), None);
        expect(&w).register(b"q", b"z|9", 0, 0);
        apply(ws, &rows(RowsKind::Insert, vec![img("q", "z", 9, 0)]), true);
        apply(ws, &rows(RowsKind::Delete, vec![img("q", "z", 9, 0)]), true);
        assert_eq!(copy_of(&w, "q"), None);
        // A key change drops the old key's copy.
        expect(&w).register(b"r", b"a|1", 0, 0);
        apply(ws, &rows(RowsKind::Insert, vec![img("r", "a", 1, 0)]), true);
        apply(ws, &update(img("r", "a", 1, 0), img("s", "a", 1, 0)), true);
        assert_eq!(copy_of(&w, "r"), None);
    }

    #[test]
    fn a_read_slower_than_the_change_and_its_recheck_keeps_nothing() {
        let (_d, w) = watched();
        let ws = std::slice::from_ref(&w);
        let old = Row { value: b"x|1".to_vec(), flags: 0, cas: 0, exptime: 0 };
        let change = update(img("p", "x", 1, 0), img("p", "y", 2, 0));
        // A miss read the table before the change was visible; the change and its recheck
        // were applied while it was on its way back; then it fills.
        let stamp = w.copy.stamp(b"p");
        apply(ws, &change, true);
        apply(ws, &change, false);
        assert!(!w.copy.fill_read(&w.container, b"p", &old, stamp));
        assert_eq!(copy_of(&w, "p"), None, "the row of before the change stays out");
        // Another key's change, or none: the fill stays (the key's bucket did not move).
        let stamp = w.copy.stamp(b"p");
        apply(ws, &update(img("other", "a", 1, 0), img("other", "b", 2, 0)), true);
        let other_bucket_moved = w.copy.stamp(b"p") != stamp;
        assert_eq!(w.copy.fill_read(&w.container, b"p", &old, stamp), !other_bucket_moved);
        // A whole-table change spoils every fill in flight.
        let stamp = w.copy.stamp(b"p");
        apply(ws, &Change::Table { db: "main".into(), table: "kv".into() }, true);
        assert!(!w.copy.fill_read(&w.container, b"p", &old, stamp));
    }

    #[test]
    fn a_broken_stream_forgets_what_waits() {
        let (_d, w) = watched();
        let ws = std::slice::from_ref(&w);
        expect(&w).register(b"p", b"x|1", 0, 0);
        apply(ws, &Change::Disconnected { reason: "test".into() }, true);
        apply(ws, &rows(RowsKind::Insert, vec![img("p", "x", 1, 0)]), true);
        assert_eq!(copy_of(&w, "p"), None);
    }
}
