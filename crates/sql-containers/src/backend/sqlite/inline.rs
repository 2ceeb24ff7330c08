//! SQLite reads on the caller's own thread (`inline_reads`, the default).
//!
//! SQLite is in-process: a point read from the page cache takes a few microseconds,
//! less than the two thread wake-ups of a trip to a reader lane and back. So a get runs
//! its SELECTs on a read connection owned by the worker thread that asked (opened on
//! its first get, kept in a thread-local, closed with the thread or when a later backend
//! first reads on it after this one was dropped).
//!
//! * Each read is its own autocommit transaction: it sees every commit made before it
//!   began, so sqlcached's own acknowledged writes are always seen.
//! * Keys whose writer holds acknowledged, uncommitted writes (`w_batch_size` > 1) are not
//!   read here: the caller sends those reads to the writer lane (read-your-writes).
//! * The connection never waits for a lock (busy timeout 0). A read that finds the
//!   database busy, or fails in any other way, closes this thread's connection and is
//!   run again on the reader lanes, which wait up to `query_timeout_ms` and report
//!   errors as before. A connection that cannot be opened is tried again after a second.
//!
//! The trade: while SQLite reads, the worker thread serves nobody else, and a row that
//! is not in the OS page cache is a disk read. For tables far larger than RAM on slow
//! disks, `inline_reads = false` keeps every read on the reader threads.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{open, read_rows, OpenSpec};
use crate::error::BackendError;
use crate::ops::OpResult;
use crate::validate::Mapping;

/// How long a thread waits before trying again to open a connection that failed.
const REOPEN_AFTER: Duration = Duration::from_secs(1);

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// One thread's connection to one backend (None: opening failed until `retry_at`).
struct Slot {
    id: u64,
    alive: Weak<()>,
    conn: Option<Connection>,
    retry_at: Instant,
    /// Whether the current streak of failed opens was logged (once per streak).
    warned: bool,
}

thread_local! {
    static SLOTS: RefCell<Vec<Slot>> = const { RefCell::new(Vec::new()) };
}

/// The inline read path of one SQLite backend.
pub(in crate::backend) struct Inline {
    id: u64,
    spec: OpenSpec,
    /// Threads keep a weak reference: their connection is closed once this is dropped.
    alive: Arc<()>,
}

impl Inline {
    /// Reads of the database `spec` names.
    pub fn new(spec: OpenSpec) -> Inline {
        Inline { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), spec, alive: Arc::new(()) }
    }

    /// Reads `keys` on this thread's connection; None: run the read on the lanes instead.
    pub fn read(&self, m: &Mapping, keys: &[Vec<u8>]) -> Option<Result<OpResult, BackendError>> {
        SLOTS.with(|slots| {
            let mut slots = slots.try_borrow_mut().ok()?;
            let i = match slots.iter().position(|s| s.id == self.id) {
                Some(i) => i,
                None => {
                    // A new backend on this thread (rare): the connections of dropped ones
                    // close here, not on every read.
                    slots.retain(|s| s.alive.strong_count() > 0);
                    let alive = Arc::downgrade(&self.alive);
                    slots.push(Slot { id: self.id, alive, conn: None, retry_at: Instant::now(), warned: false });
                    slots.len() - 1
                }
            };
            let slot = &mut slots[i];
            if slot.conn.is_none() {
                if Instant::now() < slot.retry_at {
                    return None;
                }
                match self.open() {
                    Ok(c) => {
                        slot.conn = Some(c);
                        slot.warned = false;
                    }
                    Err(e) => {
                        if !slot.warned {
                            log::warn!(
                                "SQLite: no inline read connection on this thread ({e}); its reads use the \
                                 reader threads, trying again every second"
                            );
                            slot.warned = true;
                        }
                        slot.retry_at = Instant::now() + REOPEN_AFTER;
                        return None;
                    }
                }
            }
            let conn = slot.conn.as_ref()?;
            match read_rows(conn, m, keys) {
                Ok(r) => Some(Ok(r)),
                Err(_) => {
                    // Busy, or worse: the lanes run it again and report what they find.
                    slot.conn = None;
                    None
                }
            }
        })
    }

    fn open(&self) -> Result<Connection, String> {
        let conn = open(&self.spec, false)?;
        conn.busy_timeout(Duration::ZERO).map_err(|e| format!("SQLite: {e}"))?;
        Ok(conn)
    }
}
