//! `--invalidate`: plain memcached keys dropped when the binlog shows their rows changed,
//! as Facebook's mcsqueal did for memcache. An application's cache-aside code (read the
//! cache; on a miss read MySQL and `set`) stays fresh when another program writes the row.
//!
//! A rule names a table and the keys the application builds from its rows
//! (`shop.users` → `user:{id}`, `user_by_email:{email}`). For every row the binlog shows
//! inserted, updated or deleted, the keys built from its before and after images are
//! invalidated ([`engine::Access::invalidate`]): dropped from memory and the disk tier, and
//! held for `--invalidate-hold-ms` so that a reader that read the old row before the change
//! cannot put it back (see `engine::hold`). A change to a whole table (TRUNCATE, ALTER,
//! statement-format DML, or the tables its triggers and cascades wrote) or a binlog gap
//! cannot name keys: with `--invalidate-table-changes flush` (the default) every plain key
//! is flushed. What changes no row (FLUSH PRIVILEGES and other FLUSH, GRANT/REVOKE and
//! account statements, ANALYZE, OPTIMIZE, triggers and routines, indexes) changes no key.
//!
//! The follower is the server's feed of `--mysql-backend` (`binlog::feeds`), shared with the
//! query cache and the `caching` containers. A broken stream delays invalidations; the
//! follower resumes where it stopped, so none is lost (a gap is a table change of every rule).
//!
//! - [`check`]: the rules against the backend at start (tables, columns, row-format binlog).
//! - [`position`]: with `--data-dir`, the binlog position saved so a restart resumes there.
//! - [`stats`]: per-rule counters for `stats` and the metrics.

pub mod check;
pub mod position;
pub mod stats;

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use binlog::render_key;
use config::template::KeyTemplate;
use engine::Engine;
use parking_lot::Mutex;
use sql_source::Change;

use config::invalidate::{InvalidateConfig, TableChanges};

/// The keys of one table.
pub struct Rule {
    /// Database of the table.
    pub db: String,
    /// The table.
    pub table: String,
    /// The key templates, in the order given.
    pub templates: Vec<KeyTemplate>,
    /// This rule's counters.
    pub counters: stats::RuleCounters,
}

impl Rule {
    /// `db.table`, the rule's name in stats and logs.
    pub fn name(&self) -> String {
        format!("{}.{}", self.db, self.table)
    }

    fn is(&self, db: &str, table: &str) -> bool {
        self.db.eq_ignore_ascii_case(db) && self.table.eq_ignore_ascii_case(table)
    }
}

/// Every rule, the engine they invalidate in, and what a stream state was last logged.
pub struct Rules {
    /// One rule per table.
    pub rules: Vec<Rule>,
    engine: Arc<Engine>,
    hold: Option<Duration>,
    table_changes: TableChanges,
    /// Counters over every rule.
    pub totals: stats::Totals,
    /// Whether the stream was flowing at the last change (for logging transitions).
    connected: Mutex<bool>,
    /// With `--data-dir`: saves the binlog position.
    saver: OnceLock<position::Saver>,
}

impl Rules {
    /// The rules of `cfg`, grouped by table, invalidating in `engine`.
    pub fn new(cfg: &InvalidateConfig, engine: Arc<Engine>) -> Rules {
        let mut rules: Vec<Rule> = Vec::new();
        for spec in &cfg.rules {
            match rules.iter_mut().find(|r| r.is(&spec.db, &spec.table)) {
                Some(r) => r.templates.push(spec.template.clone()),
                None => rules.push(Rule {
                    db: spec.db.clone(),
                    table: spec.table.clone(),
                    templates: vec![spec.template.clone()],
                    counters: Default::default(),
                }),
            }
        }
        let hold = (cfg.hold_ms > 0).then(|| Duration::from_millis(cfg.hold_ms));
        Rules {
            rules,
            engine,
            hold,
            table_changes: cfg.table_changes,
            totals: Default::default(),
            connected: Mutex::new(false),
            saver: OnceLock::new(),
        }
    }

    /// At a clean stop, once the disk tier is closed: save the binlog position reached.
    pub fn stop(&self) {
        if let Some(s) = self.saver.get() {
            s.finish();
        }
    }

    /// Applies one binlog change (called on the feed's thread, in binlog order).
    pub fn apply(&self, change: &Change) {
        match change {
            Change::Rows { db, table, schema, rows, .. } => {
                for rule in self.rules.iter().filter(|r| r.is(db, table)) {
                    let mut keys: Vec<Vec<u8>> = Vec::with_capacity(rows.len() * rule.templates.len());
                    for row in rows {
                        for t in &rule.templates {
                            match render_key(t, schema, row) {
                                Some(k) if !keys.contains(&k) => keys.push(k),
                                Some(_) => {}
                                None => rule.counters.skipped(),
                            }
                        }
                    }
                    let until = self.hold.map(|h| Instant::now() + h);
                    for k in &keys {
                        let found = self.engine.access(k, engine::Receipt::none()).invalidate(until);
                        rule.counters.invalidated(found);
                    }
                }
            }
            Change::Table { db, table } | Change::ManyRows { db, table } => {
                if let Some(rule) = self.rules.iter().find(|r| r.is(db, table)) {
                    self.table_change(&format!(
                        "table {} changed as a whole (TRUNCATE, DDL or statement-format DML)",
                        rule.name()
                    ));
                }
            }
            Change::Database { db } => {
                if self.rules.iter().any(|r| r.db.eq_ignore_ascii_case(db)) {
                    self.table_change(&format!("database {db} changed as a whole"));
                }
            }
            Change::All { reason } => self.table_change(reason),
            // No row changed: the keys built from rows stay right (docs/invalidation.md).
            Change::Privileges { .. } | Change::Routines { .. } | Change::Keys { .. } => {}
            Change::Disconnected { reason } => {
                let mut c = self.connected.lock();
                if *c {
                    log::warn!(
                        "--invalidate: binlog stream lost ({reason}): invalidations wait until it is back \
                         (it resumes where it stopped)"
                    );
                }
                *c = false;
            }
            Change::Connected => {
                let mut c = self.connected.lock();
                if !*c {
                    log::info!("--invalidate: binlog flowing: {} rule(s) applied as rows change", self.rules.len());
                }
                *c = true;
            }
        }
    }

    /// A change that names no keys: flush the plain keys, or only say it.
    fn table_change(&self, why: &str) {
        self.totals.table_change();
        match self.table_changes {
            TableChanges::Flush => {
                log::warn!("--invalidate: {why}: flushing every plain key (--invalidate-table-changes flush)");
                self.engine.flush_all(0, engine::Receipt::none());
            }
            TableChanges::Ignore => {
                log::warn!("--invalidate: {why}: keys left to their TTL (--invalidate-table-changes ignore)")
            }
        }
    }
}

/// Builds the rules, checks them against the backend (a wrong table or column, or a binlog
/// that cannot name rows, stops the start; an unreachable backend is said and checked again
/// once it answers) and subscribes them to the backend's feed, from the position saved in
/// `--data-dir` if there is one.
pub fn start(
    cfg: &config::Config,
    engine: Arc<Engine>,
    feeds: &crate::feeds::SourceFeeds,
) -> Result<Arc<Rules>, String> {
    let rules = Arc::new(Rules::new(&cfg.invalidate, engine));
    let login = check::Login::of(&cfg.mysql).map_err(|e| format!("--invalidate: {e}"))?;
    check::at_start(&login, &rules)?;
    let summary: Vec<String> =
        rules.rules.iter().map(|r| format!("{} ({} key(s))", r.name(), r.templates.len())).collect();
    log::info!(
        "--invalidate: following the binlog of {} for {}; fills held {} ms after each invalidation",
        login.backend,
        summary.join(", "),
        cfg.invalidate.hold_ms
    );
    let dir = cfg.persistence.data_dir.as_deref().map(Path::new);
    let start = dir.and_then(position::load);
    match (dir, &start) {
        (Some(d), Some(p)) => log::info!(
            "--invalidate: resuming the binlog at {}:{} (saved in {}): changes made while sqlcached was down \
             are invalidated first",
            p.file,
            p.pos,
            d.display()
        ),
        (Some(d), None) => log::warn!(
            "--invalidate: no binlog position saved in {} yet: rows changed before this start are not \
             invalidated (from now on the position is saved there)",
            d.display()
        ),
        _ => {}
    }
    let config = binlog::Config {
        backend: login.backend.clone(),
        user: login.user.clone(),
        password: login.password.clone(),
        server_id: cfg.mysql.server_id(),
        start,
    };
    let sink_rules = rules.clone();
    // No rechecks: the hold already refuses fills made before the commit was visible.
    let sink: sql_source::feeds::Sink = Box::new(move |change, _| sink_rules.apply(change));
    let feed = binlog::subscribe(&feeds.binlog, config, "the --invalidate rules", false, true, sink);
    if let Some(d) = dir {
        let _ = rules.saver.set(position::Saver::start(d.to_path_buf(), Arc::downgrade(&feed)));
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::ops::{self, StoreMode, StoreRequest};
    use engine::EngineConfig;
    use sql_source::{TableSchema, Value};

    fn set(e: &Engine, key: &[u8]) {
        let r = StoreRequest::new(StoreMode::Set, key, b"v", 0, 0, 0);
        ops::store(e, &r, engine::Receipt::none());
    }

    fn present(e: &Engine, key: &[u8]) -> bool {
        ops::get(e, key, Default::default(), engine::Receipt::none(), |it| it.is_some())
    }

    #[test]
    fn before_and_after_images_name_keys() {
        let mut cfg = InvalidateConfig::default();
        for r in ["shop.users=user:{id}", "shop.users=email:{email}", "shop.orders=order:{id}"] {
            cfg.set("invalidate", r).unwrap();
        }
        let engine = Arc::new(Engine::new(EngineConfig::default()));
        let rules = Rules::new(&cfg, engine.clone());
        assert_eq!(rules.rules.len(), 2);
        for k in ["user:1", "email:old@x", "email:new@x", "user:2", "order:1", "email:other@x"] {
            set(&engine, k.as_bytes());
        }
        let schema = Arc::new(TableSchema { columns: vec!["id".into(), "email".into()], primary_key: vec![0] });
        let row = |id, email: &str| vec![Value::Int(id), Value::Bytes(email.as_bytes().to_vec())];
        rules.apply(&Change::Rows {
            db: "SHOP".into(),
            table: "users".into(),
            schema,
            rows: vec![row(1, "old@x"), row(1, "new@x")],
            kind: sql_source::RowsKind::Update(vec![1]),
        });
        for (k, there) in [
            ("user:1", false),
            ("email:old@x", false),
            ("email:new@x", false),
            ("user:2", true),
            ("order:1", true),
            ("email:other@x", true),
        ] {
            assert_eq!(present(&engine, k.as_bytes()), there, "{k}");
        }
        let c = &rules.rules[0].counters;
        assert_eq!(c.snapshot(), (3, 3, 0), "keys, hits, skipped");
        // Held: the reader who read the old row cannot put it back.
        set(&engine, b"user:1");
        assert!(!present(&engine, b"user:1"));
        // A table change flushes by default.
        rules.apply(&Change::Table { db: "shop".into(), table: "orders".into() });
        assert!(!present(&engine, b"user:2"));
        rules.apply(&Change::Table { db: "shop".into(), table: "other".into() });
        assert_eq!(rules.totals.table_changes(), 1);
    }
}
