//! The replication connection: connect, register, dump from a position, read events,
//! report them; on a break report `Disconnected` and retry with backoff.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{FutureExt, StreamExt};
use mysql_async::binlog::EventType;
use mysql_async::prelude::Queryable;
use mysql_async::{BinlogStreamRequest, Conn, Opts, OptsBuilder};
use tokio::sync::watch;

use crate::decode::Decoder;
use crate::meta::Meta;
use crate::position::{now_ms, Position};
use crate::state::{Config, Shared};
use sql_source::Change;

/// Heartbeat period asked of the server while it has no events to send.
const HEARTBEAT: Duration = Duration::from_millis(500);
/// Silence (no event, no heartbeat) after which the stream counts as broken.
const SILENCE: Duration = Duration::from_secs(3);
/// Longest wait between reconnection attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Connecting and set-up queries give up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// ER_PARSE_ERROR: a statement this server does not know.
const ER_PARSE_ERROR: u16 = 1064;
/// ER_MASTER_FATAL_ERROR_READING_BINLOG: e.g. the requested file was purged.
const ER_MASTER_FATAL_ERROR_READING_BINLOG: u16 = 1236;

/// Why a session ended.
enum End {
    /// Never got events flowing (connect/auth/query/dump request failed).
    NotStarted(String),
    /// The server cannot serve the requested position: restart at the end.
    Gap(String),
    /// Events flowed, then the stream broke.
    Broken(String),
}

/// Per-follower state that survives reconnections.
struct State {
    /// Where to resume: after the last complete transaction reported (None: the current end).
    resume: Option<Position>,
    /// `Connected` was reported and no `Disconnected` since.
    connected: bool,
    /// `Connected` has been reported at least once.
    ever_connected: bool,
    /// `Disconnected` was reported and no `Connected` since.
    reported_down: bool,
}

fn opts(cfg: &Config) -> Result<Opts, String> {
    let (host, port) = cfg.backend.rsplit_once(':').ok_or(format!("backend {:?}: expected host:port", cfg.backend))?;
    let port: u16 = port.parse().map_err(|_| format!("backend {:?}: bad port", cfg.backend))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok(OptsBuilder::default()
        .ip_or_hostname(host)
        .tcp_port(port)
        .user(Some(cfg.user.clone()))
        .pass(Some(cfg.password.clone()))
        .prefer_socket(false)
        .stmt_cache_size(0)
        // A binlog event can be as large as the server's max_allowed_packet allows rows to
        // be (1 GiB at most): accept up to that, or the stream breaks on a big row.
        .max_allowed_packet(Some(1 << 30))
        .into())
}

/// Runs until `stop` turns true: the replication stream, and beside it the probe of the
/// binlog's head (`head.rs`).
pub(crate) async fn run(cfg: Config, sink: impl Fn(Change), shared: Arc<Shared>, stop: watch::Receiver<bool>) {
    let opts = match opts(&cfg) {
        Ok(o) => o,
        Err(e) => return sink(Change::Disconnected { reason: e }),
    };
    let probe = crate::head::probe(opts.clone(), cfg.backend.clone(), &shared.head, &shared.connected, stop.clone());
    tokio::join!(follow(&cfg, &opts, sink, &shared, stop), probe);
}

/// The replication stream, reconnecting with backoff, until `stop` turns true.
async fn follow(cfg: &Config, opts: &Opts, sink: impl Fn(Change), shared: &Shared, mut stop: watch::Receiver<bool>) {
    let mut state = State { resume: cfg.start.clone(), connected: false, ever_connected: false, reported_down: false };
    let mut backoff = Duration::from_millis(50);
    loop {
        // A panic while following (an event nothing here can handle, or the sink's own
        // code) must not end the thread, and with it every invalidation: the stream is
        // dropped, everything is invalidated, and following starts again from the end of
        // the binlog (not from the event that failed, which would fail again).
        let run = std::panic::AssertUnwindSafe(session(cfg, opts, &mut state, &sink, shared)).catch_unwind();
        let end = tokio::select! {
            end = run => end,
            _ = stop.wait_for(|s| *s) => return,
        };
        let end = match end {
            Ok(end) => end,
            Err(panic) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".into());
                let reason = format!("the follower failed ({what}); following again from the end of the binlog");
                log::error!("binlog follower of {}: {reason}", cfg.backend);
                state.resume = None;
                shared.head.restart();
                sink(Change::All { reason: reason.clone() });
                // Retried with a growing backoff, in case it fails again at once.
                End::NotStarted(reason)
            }
        };
        let reason = match end {
            End::Gap(reason) => {
                state.resume = None;
                shared.head.restart();
                sink(Change::All { reason: format!("binlog gap: {reason}") });
                continue;
            }
            End::NotStarted(r) => r,
            End::Broken(r) => {
                backoff = Duration::from_millis(50);
                r
            }
        };
        if !state.reported_down {
            sink(Change::Disconnected { reason });
            state.reported_down = true;
        }
        state.connected = false;
        shared.connected.store(false, Relaxed);
        if shared.broken_at_ms.load(Relaxed) == 0 {
            shared.broken_at_ms.store(now_ms(), Relaxed);
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn setup(opts: &Opts, state: &State) -> Result<(Conn, Position), String> {
    let mut conn =
        Conn::new(opts.clone()).await.map_err(|e| format!("cannot connect: {}", engine::errors::cause(&e)))?;
    let start = match &state.resume {
        Some(p) => p.clone(),
        None => {
            let row: Option<mysql_async::Row> = match conn.query_first("SHOW MASTER STATUS").await {
                Ok(r) => r,
                // MySQL 8.4 renamed it; any other error (no BINLOG MONITOR) is the one to say.
                Err(mysql_async::Error::Server(e)) if e.code == ER_PARSE_ERROR => {
                    conn.query_first("SHOW BINARY LOG STATUS").await.map_err(|e| e.to_string())?
                }
                Err(e) => return Err(e.to_string()),
            };
            let row = row.ok_or("binary logging is off on the server (SHOW MASTER STATUS is empty)")?;
            let file: String = row.get(0).ok_or("SHOW MASTER STATUS: no file")?;
            let pos: u64 = row.get(1).ok_or("SHOW MASTER STATUS: no position")?;
            Position { file, pos }
        }
    };
    let hb = HEARTBEAT.as_nanos() as u64;
    // MariaDB: send GTID/ANNOTATE/... events as they are (4 = MARIA_SLAVE_CAPABILITY_GTID)
    // instead of rewriting them into dummy events for old replicas; harmless on MySQL.
    for sql in [format!("SET @master_heartbeat_period = {hb}"), "SET @mariadb_slave_capability = 4".to_string()] {
        conn.query_drop(sql).await.map_err(|e| e.to_string())?;
    }
    Ok((conn, start))
}

async fn session(cfg: &Config, opts: &Opts, state: &mut State, sink: &impl Fn(Change), shared: &Shared) -> End {
    let (conn, start) = match tokio::time::timeout(CONNECT_TIMEOUT, setup(opts, state)).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => return End::NotStarted(e),
        Err(_) => return End::NotStarted("connect timeout".into()),
    };
    let req = BinlogStreamRequest::new(cfg.server_id).with_filename(start.file.as_bytes()).with_pos(start.pos);
    let mut stream = match conn.get_binlog_stream(req).await {
        Ok(s) => s,
        Err(e) => return End::NotStarted(e.to_string()),
    };
    let mut decoder = Decoder::new(Meta::new(opts.clone()));
    shared.head.read_to(&start);
    let mut pos = start;
    loop {
        let ev = match tokio::time::timeout(SILENCE, stream.next()).await {
            Err(_) => return broken(state, format!("no event or heartbeat for {SILENCE:?}")),
            Ok(None) => return broken(state, "the server ended the stream".into()),
            Ok(Some(Err(e))) => {
                if let mysql_async::Error::Server(se) = &e {
                    if se.code == ER_MASTER_FATAL_ERROR_READING_BINLOG && !state.connected {
                        return End::Gap(e.to_string());
                    }
                }
                return broken(state, e.to_string());
            }
            Ok(Some(Ok(ev))) => ev,
        };
        if !state.connected {
            state.connected = true;
            shared.connected.store(true, Relaxed);
            shared.broken_at_ms.store(0, Relaxed);
            if state.ever_connected {
                shared.reconnects.fetch_add(1, Relaxed);
            }
            state.ever_connected = true;
            state.reported_down = false;
            sink(Change::Connected);
        }
        let header = ev.header();
        if header.event_type_raw() == EventType::HEARTBEAT_EVENT as u8 {
            continue;
        }
        shared.events.fetch_add(1, Relaxed);
        let d = decoder.event(&ev, shared.bulk_rows.load(Relaxed)).await;
        for c in d.changes {
            sink(c);
        }
        if let Some((file, p)) = d.rotate {
            pos = Position { file, pos: p };
        } else if header.log_pos() != 0 {
            pos.pos = header.log_pos() as u64;
        }
        if d.boundary {
            state.resume = Some(pos.clone());
            *shared.resume.lock().unwrap_or_else(|e| e.into_inner()) = Some(pos.clone());
        }
        *shared.position.lock().unwrap_or_else(|e| e.into_inner()) = Some(pos.clone());
        // Every change before `pos` has been handed to the sinks.
        shared.head.read_to(&pos);
    }
}

fn broken(state: &State, reason: String) -> End {
    if state.connected {
        End::Broken(reason)
    } else {
        End::NotStarted(reason)
    }
}
