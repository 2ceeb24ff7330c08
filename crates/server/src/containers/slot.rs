//! The containers as the server holds them: loaded, or waiting for their backend.
//!
//! A MariaDB/MySQL backend that cannot be reached at start (refused, name not resolved, no
//! answer within `connect_timeout_ms`) does not stop the server: plain memcached keys are
//! served at once, every container command answers `SERVER_ERROR containers unavailable:
//! <why>`, and a thread retries the whole load every second until it succeeds (then the
//! containers work as if they had loaded at start). A configuration that is wrong (a bad
//! file, a missing table or column) still stops the start: retrying would not fix it.
//! ProxySQL starts with its backends down in the same way.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sql_containers::LoadError;

use super::sql::{load, Budget, Sql};
use crate::pending::Fail;

/// How often a waiting slot tries to load its containers again.
const RETRY: Duration = Duration::from_secs(1);

/// The containers of `--containers FILE`, loaded or not yet.
pub struct Slot {
    ready: OnceLock<Arc<Sql>>,
    /// Why they are not loaded (the last attempt's error).
    why: Mutex<String>,
    /// The file's `options.plain_keys = "default_container"`: plain keys are container
    /// keys too, and wait like `@@name.key` ones.
    plain_default: bool,
}

impl Slot {
    /// Containers loaded at start.
    pub fn ready(sql: Sql) -> Slot {
        let slot = Slot { ready: OnceLock::new(), why: Mutex::new(String::new()), plain_default: false };
        let _ = slot.ready.set(Arc::new(sql));
        slot
    }

    /// Containers whose backend could not be reached (`why`).
    pub fn waiting(why: String, plain_default: bool) -> Slot {
        Slot { ready: OnceLock::new(), why: Mutex::new(why), plain_default }
    }

    /// The loaded containers, `None` while waiting.
    pub fn get(&self) -> Option<&Arc<Sql>> {
        self.ready.get()
    }

    /// The reply to a container command while waiting.
    pub fn unavailable(&self) -> Fail {
        let why = self.why.lock().map(|w| w.clone()).unwrap_or_default();
        Fail::Down(format!("containers unavailable: {why}"))
    }

    /// While waiting: does `key` belong to the containers (`@@name...`, or every key with
    /// `plain_keys = "default_container"`)?
    pub fn waiting_claims(&self, key: &[u8]) -> bool {
        self.plain_default || key.starts_with(b"@@")
    }

    /// While waiting: does a command without a key (`flush_all`) go to the containers?
    pub fn waiting_claims_keyless(&self) -> bool {
        self.plain_default
    }

    /// `containers_ready` (0 while waiting for the backend), then the containers' own
    /// figures once loaded.
    pub fn write_stats(&self, sink: &mut dyn engine::stats::StatSink) {
        let ready = self.get();
        sink.stat("containers_ready", engine::stats::Kind::Gauge, &u64::from(ready.is_some()));
        if let Some(sql) = ready {
            sql.write_stats(sink);
        }
    }

    /// Zero the containers' counters (`stats reset`).
    pub fn reset_stats(&self) {
        if let Some(sql) = self.get() {
            sql.reset_stats();
        }
    }

    /// Try to load the containers every second (on a thread of its own) until they load.
    /// Each distinct failure is logged once; success is logged.
    pub fn retry(self: &Arc<Self>, path: String, budget: Budget, timing: bool, feeds: Arc<crate::feeds::SourceFeeds>) {
        let slot = Arc::downgrade(self);
        let shown = path.clone();
        let spawned = std::thread::Builder::new().name("sqlcached-containers".into()).spawn(move || loop {
            std::thread::sleep(RETRY);
            let Some(slot) = slot.upgrade() else { return };
            let path = path.as_str();
            match load(path, &budget, timing, &feeds) {
                Ok(sql) => {
                    let loaded = super::describe::summary(&sql);
                    let _ = slot.ready.set(Arc::new(sql));
                    log::warn!("--containers {path}: backend reachable again; loaded and serving {loaded}");
                    return;
                }
                Err(e) => {
                    let msg = e.to_string();
                    let mut why = slot.why.lock().unwrap_or_else(|p| p.into_inner());
                    if *why != msg {
                        match e {
                            LoadError::Unreachable(_) => log::warn!("--containers {path}: still unavailable: {msg}"),
                            LoadError::Invalid(_) => log::error!(
                                "--containers {path}: the backend is reachable but the containers do not load \
                                 (retrying every second): {msg}"
                            ),
                        }
                        *why = msg;
                    }
                }
            }
        });
        if let Err(e) = spawned {
            log::error!("--containers {shown}: cannot start the retry thread ({e}): containers stay unavailable");
        }
    }
}
