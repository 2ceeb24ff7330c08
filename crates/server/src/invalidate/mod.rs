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
//! A rule follows the binlog of `--mysql-backend` or, written `postgres:SCHEMA.TABLE=...`,
//! the WAL of `--pg-backend` (a logical replication slot, `source_postgres::follower`). The
//! follower is the server's feed of that server (`sql_source::feeds`), shared with the
//! query cache and the `caching` containers. A broken stream delays invalidations; the
//! follower resumes where it stopped, so none is lost (a gap is a table change of every rule).
//!
//! - [`check`]: the rules against their sources at start (tables, columns, the log's settings).
//! - [`sources`]: each source's check and follower, built from the settings.
//! - [`position`]: with `--data-dir`, the binlog position saved so a restart resumes there
//!   (PostgreSQL keeps its own in the slot: commits are confirmed once on disk).
//! - [`stats`]: per-rule counters for `stats` and the metrics.

pub mod check;
pub mod position;
pub mod sources;
pub mod stats;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use binlog::render_key;
use config::template::KeyTemplate;
use engine::Engine;
use parking_lot::Mutex;
use sql_source::Change;

use config::invalidate::{InvalidateConfig, RuleSource, TableChanges};

/// The keys of one table.
pub struct Rule {
    /// The server whose log the rule follows.
    pub source: RuleSource,
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
    /// `db.table` (`postgres:schema.table`), the rule's name in stats and logs.
    pub fn name(&self) -> String {
        match self.source {
            RuleSource::Mysql => format!("{}.{}", self.db, self.table),
            RuleSource::Postgres => format!("postgres:{}.{}", self.db, self.table),
        }
    }

    /// MariaDB/MySQL names compare without case (as `lower_case_table_names` servers and
    /// information_schema do); PostgreSQL's as the WAL spells them.
    fn is(&self, source: RuleSource, db: &str, table: &str) -> bool {
        self.source == source
            && match source {
                RuleSource::Mysql => self.db.eq_ignore_ascii_case(db) && self.table.eq_ignore_ascii_case(table),
                RuleSource::Postgres => self.db == db && self.table == table,
            }
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
    /// Whether each source's stream was flowing at its last change (for logging transitions).
    connected: Mutex<[bool; 2]>,
    /// With `--data-dir`: saves the binlog position.
    saver: OnceLock<position::Saver>,
}

impl Rules {
    /// The rules of `cfg`, grouped by table, invalidating in `engine`.
    pub fn new(cfg: &InvalidateConfig, engine: Arc<Engine>) -> Rules {
        let mut rules: Vec<Rule> = Vec::new();
        for spec in &cfg.rules {
            match rules.iter_mut().find(|r| r.is(spec.source, &spec.db, &spec.table)) {
                Some(r) => r.templates.push(spec.template.clone()),
                None => rules.push(Rule {
                    source: spec.source,
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
            connected: Mutex::new([false; 2]),
            saver: OnceLock::new(),
        }
    }

    /// At a clean stop, once the disk tier is closed: save the binlog position reached.
    pub fn stop(&self) {
        if let Some(s) = self.saver.get() {
            s.finish();
        }
    }

    /// The rules of one source.
    pub fn of(&self, source: RuleSource) -> Vec<&Rule> {
        self.rules.iter().filter(|r| r.source == source).collect()
    }

    /// Applies one change of `source`'s log (called on the feed's thread, in log order).
    pub fn apply(&self, source: RuleSource, change: &Change) {
        let log = match source {
            RuleSource::Mysql => "binlog",
            RuleSource::Postgres => "WAL",
        };
        match change {
            Change::Rows { db, table, schema, rows, .. } => {
                for rule in self.rules.iter().filter(|r| r.is(source, db, table)) {
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
                if let Some(rule) = self.rules.iter().find(|r| r.is(source, db, table)) {
                    self.table_change(&format!(
                        "table {} changed as a whole (TRUNCATE, DDL, statement-format DML, or a change the {log} \
                         cannot name rows of)",
                        rule.name()
                    ));
                }
            }
            Change::Database { db } => {
                if self.rules.iter().any(|r| r.source == source && r.db.eq_ignore_ascii_case(db)) {
                    self.table_change(&format!("database {db} changed as a whole"));
                }
            }
            Change::All { reason } => self.table_change(reason),
            // No row changed: the keys built from rows stay right (docs/invalidation.md).
            Change::Privileges { .. } | Change::Routines { .. } | Change::Keys { .. } => {}
            Change::Disconnected { reason } => {
                let c = &mut self.connected.lock()[source as usize];
                if *c {
                    log::warn!(
                        "--invalidate: {log} stream lost ({reason}): invalidations wait until it is back \
                         (it resumes where it stopped)"
                    );
                }
                *c = false;
            }
            Change::Connected => {
                let c = &mut self.connected.lock()[source as usize];
                if !*c {
                    let n = self.of(source).len();
                    log::info!("--invalidate: {log} flowing: {n} rule(s) applied as rows change");
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

/// Builds the rules, checks them against their sources (a wrong table or column, or a log
/// that cannot name rows, stops the start; an unreachable server is said and checked again
/// once it answers) and subscribes them to each source's feed (the binlog from the position
/// saved in `--data-dir` if there is one; the WAL from its slot's confirmed position).
pub fn start(
    cfg: &config::Config,
    engine: Arc<Engine>,
    feeds: &crate::feeds::SourceFeeds,
) -> Result<Arc<Rules>, String> {
    let rules = Arc::new(Rules::new(&cfg.invalidate, engine));
    for source in [RuleSource::Mysql, RuleSource::Postgres] {
        let mine = rules.of(source);
        if mine.is_empty() {
            continue;
        }
        let src = sources::Source::of(cfg, source).map_err(|e| format!("--invalidate: {e}"))?;
        check::at_start(src.check(), &mine)?;
        let summary: Vec<String> =
            mine.iter().map(|r| format!("{} ({} key(s))", r.name(), r.templates.len())).collect();
        log::info!(
            "--invalidate: following the {} of {} for {}; fills held {} ms after each invalidation",
            src.log(),
            src.backend(),
            summary.join(", "),
            cfg.invalidate.hold_ms
        );
        let sink_rules = rules.clone();
        // No rechecks: the hold already refuses fills made before the commit was visible.
        let sink: sql_source::feeds::Sink = Box::new(move |change, _| sink_rules.apply(source, change));
        src.subscribe(cfg, feeds, sink, &rules.saver);
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
        let apply = |c: &Change| rules.apply(RuleSource::Mysql, c);
        for k in ["user:1", "email:old@x", "email:new@x", "user:2", "order:1", "email:other@x"] {
            set(&engine, k.as_bytes());
        }
        let schema = Arc::new(TableSchema { columns: vec!["id".into(), "email".into()], primary_key: vec![0] });
        let row = |id, email: &str| vec![Value::Int(id), Value::Bytes(email.as_bytes().to_vec())];
        apply(&Change::Rows {
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
        apply(&Change::Table { db: "shop".into(), table: "orders".into() });
        // The same table named by the other source's log: not this rule's.
        set(&engine, b"order:1");
        rules.apply(RuleSource::Postgres, &Change::Table { db: "shop".into(), table: "orders".into() });
        assert!(present(&engine, b"order:1"));
        assert!(!present(&engine, b"user:2"));
        apply(&Change::Table { db: "shop".into(), table: "other".into() });
        assert_eq!(rules.totals.table_changes(), 1);
    }
}
