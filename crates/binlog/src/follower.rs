//! The follower's handle: its thread, its runtime, its counters.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::watch;

use crate::position::{now_ms, Position};
use crate::state::{Config, Shared, Stats};
use sql_source::Change;

/// A running binlog follower; dropping it stops the stream and joins its thread.
pub struct Follower {
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
}

impl Follower {
    /// Starts following `config.backend`'s binlog from its current end on a thread of its own;
    /// `sink` receives every change in binlog order, on that thread (keep it quick).
    pub fn spawn(config: Config, sink: impl Fn(Change) + Send + 'static) -> Follower {
        let shared = Arc::new(Shared::default());
        shared.broken_at_ms.store(now_ms(), Relaxed);
        let (stop, stopped) = watch::channel(false);
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("sqlcached-binlog".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build();
                let rt = match rt {
                    Ok(rt) => rt,
                    Err(e) => return sink(Change::Disconnected { reason: format!("binlog runtime: {e}") }),
                };
                rt.block_on(crate::session::run(config, sink, sh, stopped));
            })
            .expect("spawn the binlog follower thread");
        Follower { shared, stop, thread: Some(thread) }
    }

    /// How far behind the server's binlog head the follower is now, in ms (cheap: two
    /// atomic loads and the clock; what `--query-cache-max-lag` compares).
    pub fn lag_ms(&self) -> u64 {
        self.shared.lag_ms()
    }

    /// From now on, a transaction's row events of one table past `rows` row images are
    /// reported as one `Change::ManyRows` instead of decoded (0: every row is reported).
    pub fn set_bulk_rows(&self, rows: usize) {
        self.shared.bulk_rows.store(rows, Relaxed);
    }

    /// The follower's counters now.
    pub fn stats(&self) -> Stats {
        let sh = &self.shared;
        let connected = sh.connected.load(Relaxed);
        let lag_ms = self.lag_ms();
        Stats {
            connected,
            events: sh.events.load(Relaxed),
            reconnects: sh.reconnects.load(Relaxed),
            lag_ms,
            head_probes: sh.head.probes.load(Relaxed),
            head_probe_failures: sh.head.probe_failures.load(Relaxed),
            position: sh.position.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            resume: sh.resume.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl sql_source::Lag for crate::state::Shared {
    fn lag_ms(&self) -> u64 {
        crate::state::Shared::lag_ms(self)
    }
}

impl sql_source::Follow for Follower {
    fn lag_ms(&self) -> u64 {
        Follower::lag_ms(self)
    }

    fn stats(&self) -> sql_source::FeedStats {
        let s = Follower::stats(self);
        sql_source::FeedStats {
            connected: s.connected,
            events: s.events,
            reconnects: s.reconnects,
            lag_ms: s.lag_ms,
            head_probes: s.head_probes,
            head_probe_failures: s.head_probe_failures,
            position: s.position.as_ref().map(Position::token),
            resume: s.resume.as_ref().map(Position::token),
            extra: Vec::new(),
        }
    }

    fn set_bulk_rows(&self, rows: usize) {
        Follower::set_bulk_rows(self, rows)
    }

    fn lag(&self) -> Arc<dyn sql_source::Lag> {
        self.shared.clone()
    }
}

/// Adds `sink` to the follower of `config.backend` among `feeds` (see
/// `sql_source::feeds::Feeds::subscribe`), starting a binlog follower if there is none yet.
pub fn subscribe(
    feeds: &sql_source::feeds::Feeds,
    config: Config,
    who: &str,
    recheck: bool,
    every_row: bool,
    sink: sql_source::feeds::Sink,
) -> Arc<sql_source::feeds::Feed> {
    let backend = config.backend.clone();
    let start: sql_source::feeds::Start<'_> = Box::new(move |deliver| Box::new(Follower::spawn(config, deliver)));
    feeds.subscribe(&backend, who, recheck, every_row, sink, start)
}
