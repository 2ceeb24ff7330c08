//! The follower's handle: its thread, its runtime, its counters.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::watch;

use crate::change::Change;
use crate::position::now_ms;
use crate::state::{Config, Shared, Stats};

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

    /// The follower's shared state (for `fresh.rs`, which reads the lag on hot paths
    /// without going through the feed).
    pub(crate) fn shared(&self) -> Arc<Shared> {
        self.shared.clone()
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
