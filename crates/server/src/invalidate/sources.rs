//! The servers whose logs the rules follow, built from the settings: for each, the check
//! its source crate offers (`sql_source::check::Check`) and its follower on the server's
//! shared feeds. This is the one place the rules name a source.

use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use config::invalidate::RuleSource;
use source_postgres::follower::FollowConfig;
use sql_source::check::Check;
use sql_source::feeds::Sink;

use super::position;
use crate::feeds::SourceFeeds;

/// One source of rules.
pub enum Source {
    /// `--mysql-backend`'s binlog, read as `--mysql-user`.
    Binlog(binlog::Config),
    /// `--pg-backend`'s WAL, read through `--pg-slot` as `--pg-user`.
    Wal(FollowConfig),
}

impl Source {
    /// The source of `which` rules, from the settings.
    pub fn of(cfg: &config::Config, which: RuleSource) -> Result<Source, String> {
        match which {
            RuleSource::Mysql => {
                let m = &cfg.mysql;
                Ok(Source::Binlog(binlog::Config {
                    backend: m.backend.clone().ok_or("no --mysql-backend")?,
                    user: m.user.clone().ok_or("no --mysql-user")?,
                    password: m.password().map_err(|e| format!("--mysql-password-file: {e}"))?,
                    server_id: m.server_id(),
                    start: None,
                }))
            }
            RuleSource::Postgres => {
                let pg = &cfg.postgres;
                let password = pg.password().map_err(|e| e.to_string())?;
                let conn = pg_proxy::tls::source_config(pg, password)?;
                let tables = cfg
                    .invalidate
                    .rules
                    .iter()
                    .filter(|r| r.source == RuleSource::Postgres)
                    .map(|r| (r.db.clone(), r.table.clone()))
                    .fold(Vec::new(), |mut v, t| {
                        if !v.contains(&t) {
                            v.push(t);
                        }
                        v
                    });
                // With a data directory, a commit is confirmed (and the slot lets its WAL go)
                // once its invalidations are on disk: a restart after a crash replays it.
                let confirm_delay = match cfg.persistence.data_dir {
                    Some(_) => Duration::from_millis(cfg.persistence.flush_interval_ms + 1000),
                    None => Duration::ZERO,
                };
                Ok(Source::Wal(FollowConfig {
                    backend: format!("{}/{}", pg.backend.clone().unwrap_or_default(), pg.database),
                    conn,
                    slot: pg.slot.clone(),
                    publication: pg.publication.clone(),
                    tables,
                    confirm_delay,
                    ddl_trigger: pg.ddl_trigger,
                }))
            }
        }
    }

    /// The source's check.
    pub fn check(&self) -> Arc<dyn Check> {
        match self {
            Source::Binlog(c) => Arc::new(c.clone()),
            Source::Wal(c) => Arc::new(c.clone()),
        }
    }

    /// What its log is called in log lines.
    pub fn log(&self) -> &'static str {
        match self {
            Source::Binlog(_) => "binlog",
            Source::Wal(_) => "WAL",
        }
    }

    /// The server, for log lines.
    pub fn backend(&self) -> String {
        self.check().backend()
    }

    /// Subscribes `sink` to the source's feed; the binlog resumes from the position saved in
    /// `--data-dir` (and saves it there from now on, through `saver`).
    pub fn subscribe(self, cfg: &config::Config, feeds: &SourceFeeds, sink: Sink, saver: &OnceLock<position::Saver>) {
        match self {
            Source::Binlog(mut config) => {
                let dir = cfg.persistence.data_dir.as_deref().map(Path::new);
                config.start = dir.and_then(position::load);
                match (dir, &config.start) {
                    (Some(d), Some(p)) => log::info!(
                        "--invalidate: resuming the binlog at {}:{} (saved in {}): changes made while sqlcached \
                         was down are invalidated first",
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
                let feed = binlog::subscribe(&feeds.binlog, config, "the --invalidate rules", false, true, sink);
                if let Some(d) = dir {
                    let _ = saver.set(position::Saver::start(d.to_path_buf(), Arc::downgrade(&feed)));
                }
            }
            Source::Wal(config) => {
                log::info!(
                    "--invalidate: the WAL is read through slot {} (publication {}): it resumes from the slot's \
                     confirmed position after a restart; the slot holds WAL on the server until dropped \
                     (sqlcached --pg-drop-slot)",
                    config.slot,
                    config.publication
                );
                source_postgres::follower::subscribe(&feeds.wal, config, "the --invalidate rules", false, true, sink);
            }
        }
    }
}
