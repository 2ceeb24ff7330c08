//! The follower's thread: sessions one after another until told to stop, each one making
//! sure of the publication and the slot, then streaming; and the slot's health monitor.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use protocol_postgres::replication::pgoutput::LogicalMessage;
use protocol_postgres::replication::stream::PG_EPOCH_UNIX_SECS;
use sql_source::Change;
use tokio::sync::watch;
use tokio::time::Instant;

use super::decode::Decoder;
use super::{now_ms, FollowConfig, Shared, MONITOR};
use crate::conn::Connection;
use crate::error::Error;
use crate::replication::{Event, Publication, ReplicationClient, StartOptions};
use crate::sql::{quote_ident, quote_literal};
use crate::Lsn;

/// The longest wait between two connection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Sessions until `stop`; the health monitor beside them.
pub(crate) async fn run(cfg: FollowConfig, sink: &dyn Fn(Change), sh: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let monitor = tokio::spawn(monitor(cfg.clone(), sh.clone()));
    let mut backoff = Duration::from_millis(100);
    let mut first = true;
    let mut last_error = String::new();
    loop {
        let ended = tokio::select! {
            r = session(&cfg, sink, &sh, first) => r,
            _ = stop.changed() => break,
        };
        let Err(e) = ended else { break };
        first = false;
        let reason = e.to_string();
        sh.open_commit_ms.store(0, Relaxed);
        if sh.connected.swap(false, Relaxed) {
            sh.broken_at_ms.store(now_ms(), Relaxed);
            log::warn!("WAL of {}: stream lost ({reason}): reconnecting", cfg.backend);
            sink(Change::Disconnected { reason: reason.clone() });
            backoff = Duration::from_millis(100);
        } else if reason != last_error {
            log::warn!("WAL of {}: cannot follow the slot {}: {reason} (retrying)", cfg.backend, cfg.slot);
        }
        last_error = reason;
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => break,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
    monitor.abort();
}

/// One session: publication, slot, stream; returns when the stream breaks.
async fn session(cfg: &FollowConfig, sink: &dyn Fn(Change), sh: &Shared, first: bool) -> Result<(), Error> {
    let mut client = ReplicationClient::connect(&cfg.conn).await?;
    ensure_publication(&mut client, cfg).await?;
    ensure_slot(&mut client, cfg, sink, sh, first).await?;
    if cfg.ddl_trigger {
        if let Err(e) = client.connection().simple_query(super::ddl::INSTALL).await {
            log::warn!(
                "WAL of {}: cannot install the DDL event triggers ({e}): DDL shows only at the table's next row \
                 change",
                cfg.backend
            );
        }
    }
    let mut opts = StartOptions::new(&[&cfg.publication]);
    opts.status_interval = Duration::from_secs(1);
    opts.messages = true;
    let mut stream = client.start(&cfg.slot, Lsn::INVALID, opts).await?;
    if !first || sh.reconnects.load(Relaxed) > 0 || sh.events.load(Relaxed) > 0 {
        sh.reconnects.fetch_add(1, Relaxed);
    }
    sh.connected.store(true, Relaxed);
    sh.broken_at_ms.store(0, Relaxed);
    sh.last_message_ms.store(now_ms(), Relaxed);
    log::info!("WAL of {}: following slot {} (publication {})", cfg.backend, cfg.slot, cfg.publication);
    sink(Change::Connected);
    let mut decoder = Decoder::new();
    let mut out = Vec::new();
    let mut pending: VecDeque<(Instant, Lsn)> = VecDeque::new();
    loop {
        let event = stream.recv().await?;
        if let Event::Message { message, .. } = event {
            sh.events.fetch_add(1, Relaxed);
            sh.last_message_ms.store(now_ms(), Relaxed);
            decoder.decode(&message, sh.bulk_rows.load(Relaxed), &mut out);
            // A transaction's changes are delivered at its Commit (they arrive together: the
            // server sends a transaction once committed), so consecutive row changes of a
            // table merge into few Changes; at most 64 wait.
            if matches!(message, LogicalMessage::Commit(_)) || out.len() >= 64 {
                for c in out.drain(..) {
                    sink(c);
                }
            }
            if let LogicalMessage::Begin(b) = &message {
                let commit_ms = (b.commit_time / 1000).saturating_add(PG_EPOCH_UNIX_SECS as i64 * 1000);
                sh.open_commit_ms.store(commit_ms.max(1) as u64, Relaxed);
            }
            if let LogicalMessage::Commit(c) = message {
                sh.open_commit_ms.store(0, Relaxed);
                let commit_ms = (c.commit_time / 1000).saturating_add(PG_EPOCH_UNIX_SECS as i64 * 1000);
                sh.commit_delay_ms.store(now_ms().saturating_sub(commit_ms.max(0) as u64), Relaxed);
                sh.received.store(c.end_lsn.0, Relaxed);
                pending.push_back((Instant::now() + cfg.confirm_delay, c.end_lsn));
            }
        }
        while let Some(&(due, lsn)) = pending.front() {
            if due > Instant::now() {
                break;
            }
            stream.confirm(lsn);
            sh.confirmed.store(lsn.0, Relaxed);
            pending.pop_front();
        }
    }
}

/// Creates the publication for the followed tables, or adds the ones it lacks.
async fn ensure_publication(client: &mut ReplicationClient, cfg: &FollowConfig) -> Result<(), Error> {
    let tables: Vec<(&str, &str)> = cfg.tables.iter().map(|(s, t)| (s.as_str(), t.as_str())).collect();
    if !client.publication_exists(&cfg.publication).await? {
        if tables.is_empty() {
            // Tables are added later by whoever knows them (the query cache's catalog).
            client.simple_query(&format!("CREATE PUBLICATION {}", quote_ident(&cfg.publication))).await?;
            log::info!(
                "WAL of {}: created publication {} (empty: tables are added as they are cached)",
                cfg.backend,
                cfg.publication
            );
            return Ok(());
        }
        client.create_publication(&cfg.publication, Publication::Tables(&tables)).await?;
        log::info!(
            "WAL of {}: created publication {} for {}",
            cfg.backend,
            cfg.publication,
            tables.iter().map(|(s, t)| format!("{s}.{t}")).collect::<Vec<_>>().join(", ")
        );
        return Ok(());
    }
    let sql = format!(
        "SELECT schemaname, tablename FROM pg_catalog.pg_publication_tables WHERE pubname = {}",
        quote_literal(&cfg.publication)
    );
    let results = client.simple_query(&sql).await?;
    let published: Vec<(String, String)> =
        results.first().map(|r| r.rows.iter().map(|row| (cell(row, 0), cell(row, 1))).collect()).unwrap_or_default();
    for (s, t) in &tables {
        if !published.iter().any(|(ps, pt)| ps == s && pt == t) {
            let sql = format!(
                "ALTER PUBLICATION {} ADD TABLE {}.{}",
                quote_ident(&cfg.publication),
                quote_ident(s),
                quote_ident(t)
            );
            client.simple_query(&sql).await?;
            log::info!("WAL of {}: added {s}.{t} to publication {}", cfg.backend, cfg.publication);
        }
    }
    Ok(())
}

/// Makes sure the slot exists and holds its WAL; a slot created again after the first
/// start (dropped under us, or its WAL lost) means changes were missed: `Change::All`.
async fn ensure_slot(
    client: &mut ReplicationClient,
    cfg: &FollowConfig,
    sink: &dyn Fn(Change),
    sh: &Shared,
    first: bool,
) -> Result<(), Error> {
    let slot = client.slot(&cfg.slot).await?;
    let missed = match &slot {
        None if first => {
            client.create_slot(&cfg.slot, false).await?;
            log::info!("WAL of {}: created replication slot {} (drop it with --pg-drop-slot when sqlcached is retired: it holds WAL on the server)", cfg.backend, cfg.slot);
            return Ok(());
        }
        None => format!("replication slot {} was dropped", cfg.slot),
        Some(s) if s.wal_status.as_deref() == Some("lost") => {
            client.drop_slot(&cfg.slot, true).await?;
            format!("replication slot {} lost WAL it needed (max_slot_wal_keep_size)", cfg.slot)
        }
        Some(s) if s.plugin.as_deref() != Some("pgoutput") => {
            return Err(Error::Config(format!(
                "replication slot {} exists with plugin {:?}, not pgoutput: name another slot",
                cfg.slot, s.plugin
            )))
        }
        Some(_) => return Ok(()),
    };
    client.create_slot(&cfg.slot, false).await?;
    sh.slot_recreated.fetch_add(1, Relaxed);
    log::error!(
        "WAL of {}: {missed}: created it again; changes made meanwhile are unknown, so everything that depends on it is flushed",
        cfg.backend
    );
    sink(Change::All { reason: format!("{missed}: recreated") });
    Ok(())
}

fn cell(row: &[Option<String>], i: usize) -> String {
    row.get(i).cloned().flatten().unwrap_or_default()
}

/// Reads the slot's health every [`MONITOR`] on an ordinary connection (reopened as needed).
async fn monitor(cfg: FollowConfig, sh: Arc<Shared>) {
    let mut conn: Option<Connection> = None;
    let sql = format!(
        "SELECT wal_status, pg_catalog.pg_wal_lsn_diff(pg_catalog.pg_current_wal_lsn(), restart_lsn)::bigint \
         FROM pg_catalog.pg_replication_slots WHERE slot_name = {}",
        quote_literal(&cfg.slot)
    );
    loop {
        if conn.is_none() {
            conn = Connection::connect(&cfg.conn, false).await.ok();
        }
        let read = match conn.as_mut() {
            Some(c) => c.simple_query(&sql).await.ok(),
            None => None,
        };
        match read {
            Some(results) => {
                let row = results.first().and_then(|r| r.rows.first());
                let status = row.map_or("missing".to_string(), |r| cell(r, 0));
                let held = row.and_then(|r| cell(r, 1).parse().ok()).unwrap_or(0);
                *sh.wal_status.lock().unwrap_or_else(|e| e.into_inner()) = status;
                sh.retained_bytes.store(held, Relaxed);
            }
            None => {
                conn = None;
                sh.monitor_failures.fetch_add(1, Relaxed);
            }
        }
        tokio::time::sleep(MONITOR).await;
    }
}
