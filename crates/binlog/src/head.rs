//! How far the follower is behind the server's binlog head, in time.
//!
//! Event timestamps cannot say it: they are the statement's start (a long statement looks
//! late) with a one-second resolution, and a follower busy with a burst does not see the
//! events queued behind the one it reads. So a side connection asks the server where its
//! binlog ends (`SHOW MASTER STATUS`) every [`PROBE`], and each answer is kept, with the
//! time the question was sent, until the follower has read up to that position:
//!
//! * every transaction in the binlog when probe `(P, T)` was sent ends at or before `P`;
//! * so while the follower is short of `P`, a change committed before `T` may be unread,
//!   and the follower is at least `now - T` behind (`lag_ms`);
//! * a change committed at `t` is in the next probe, sent by `t + PROBE`: a cache that stops
//!   answering while `lag_ms > bound` serves nothing older than `bound + PROBE`.
//!
//! A probe that does not come back (no rights, server busy) counts too: the time since the
//! last probe that did, minus one period, is lag ("not looked at the head for that long").

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Opts};
use parking_lot::Mutex;
use tokio::sync::watch;

use crate::position::{now_ms, Position};

/// How often the server is asked where its binlog ends.
pub const PROBE: Duration = Duration::from_millis(20);
/// Probes waiting for the follower, at most (beyond, the newest one is moved forward,
/// keeping its older time: the lag reads larger, never smaller).
const MAX_PENDING: usize = 4096;
/// A probe query that takes longer than this counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The follower's distance to the head (shared by the follower, the prober and readers).
#[derive(Default)]
pub(crate) struct Head {
    inner: Mutex<Inner>,
    /// Send time (unix ms) of the oldest probe the follower has not reached; 0: none.
    behind_since_ms: AtomicU64,
    /// Send time of the last probe answered; 0: none yet.
    probed_ms: AtomicU64,
    /// Probes answered, and failed.
    pub(crate) probes: AtomicU64,
    pub(crate) probe_failures: AtomicU64,
}

#[derive(Default)]
struct Inner {
    /// Where the follower has read to (None: not started).
    read: Option<Position>,
    /// Probes ahead of `read`, oldest first, positions increasing.
    pending: VecDeque<(Position, u64)>,
}

/// `a` is at or past `b` in the binlog (files compare by their numeric suffix).
pub(crate) fn reached(a: &Position, b: &Position) -> bool {
    match (suffix(&a.file), suffix(&b.file)) {
        (Some(x), Some(y)) if x != y => x > y,
        _ if a.file != b.file => a.file > b.file,
        _ => a.pos >= b.pos,
    }
}

/// `binlog.000042` → 42.
fn suffix(file: &str) -> Option<u64> {
    file.rsplit_once('.').and_then(|(_, n)| n.parse().ok())
}

impl Head {
    /// The follower has read everything before `pos`.
    pub(crate) fn read_to(&self, pos: &Position) {
        let mut g = self.inner.lock();
        while g.pending.front().is_some_and(|(p, _)| reached(pos, p)) {
            g.pending.pop_front();
        }
        self.behind_since_ms.store(g.pending.front().map_or(0, |&(_, t)| t), Relaxed);
        g.read = Some(pos.clone());
    }

    /// The follower starts over at the server's current end (a gap: everything was dropped).
    pub(crate) fn restart(&self) {
        let mut g = self.inner.lock();
        g.pending.clear();
        g.read = None;
        self.behind_since_ms.store(0, Relaxed);
    }

    /// The server said, to a question sent at `sent_ms`, that its binlog ends at `head`.
    pub(crate) fn probed(&self, head: Position, sent_ms: u64) {
        let mut g = self.inner.lock();
        self.probes.fetch_add(1, Relaxed);
        self.probed_ms.store(sent_ms, Relaxed);
        let behind = g.read.as_ref().is_some_and(|r| !reached(r, &head));
        // Not started yet: the follower starts at (or before) this head, unknown where.
        let ahead_of_last = g.pending.back().is_none_or(|(p, _)| !reached(p, &head));
        if (behind || g.read.is_none()) && ahead_of_last {
            if g.pending.len() >= MAX_PENDING {
                if let Some(last) = g.pending.back_mut() {
                    last.0 = head;
                }
            } else {
                g.pending.push_back((head, sent_ms));
            }
        }
        self.behind_since_ms.store(g.pending.front().map_or(0, |&(_, t)| t), Relaxed);
    }

    /// How far behind the follower is, in ms, at `now` (see the module documentation).
    pub(crate) fn lag_ms(&self, now: u64) -> u64 {
        let since = self.behind_since_ms.load(Relaxed);
        let behind = if since == 0 { 0 } else { now.saturating_sub(since) };
        let probed = self.probed_ms.load(Relaxed);
        let unprobed = if probed == 0 { now } else { now.saturating_sub(probed + PROBE.as_millis() as u64) };
        behind.max(unprobed)
    }
}

/// Asks the server where its binlog ends every [`PROBE`] (on its own connection, reopened
/// with backoff when it breaks) until `stop`. A failure is logged once per outage, and only
/// while the replication stream flows (`streaming`): when both fail for one cause (the
/// server is down, the account is refused) the stream's own message says it.
pub(crate) async fn probe(
    opts: Opts,
    backend: String,
    head: &Head,
    streaming: &AtomicBool,
    mut stop: watch::Receiver<bool>,
) {
    let mut conn: Option<Conn> = None;
    let mut logged: Option<String> = None;
    let mut tick = tokio::time::interval(PROBE);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        let sent = now_ms();
        let got = tokio::time::timeout(PROBE_TIMEOUT, ask(&mut conn, &opts)).await.unwrap_or_else(|_| {
            conn = None;
            Err("no answer within 2 s".into())
        });
        match got {
            Ok(pos) => {
                if logged.take().is_some() {
                    log::info!("binlog of {backend}: the binlog head is known again");
                }
                head.probed(pos, sent);
            }
            Err(e) => {
                head.probe_failures.fetch_add(1, Relaxed);
                if streaming.load(Relaxed) && logged.as_deref() != Some(e.as_str()) {
                    log::warn!(
                        "binlog of {backend}: cannot ask where the binlog ends ({e}): the follower's distance to \
                         the head is unknown and counts as lag (binlog_lag_ms) until it can"
                    );
                    logged = Some(e);
                }
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        }
    }
}

/// One `SHOW MASTER STATUS` (MySQL 8.4: `SHOW BINARY LOG STATUS`), connecting first if needed.
async fn ask(conn: &mut Option<Conn>, opts: &Opts) -> Result<Position, String> {
    if conn.is_none() {
        *conn = Some(Conn::new(opts.clone()).await.map_err(|e| e.to_string())?);
    }
    let c = conn.as_mut().expect("just connected");
    let row: Result<Option<mysql_async::Row>, _> = match c.query_first("SHOW MASTER STATUS").await {
        Err(mysql_async::Error::Server(_)) => c.query_first("SHOW BINARY LOG STATUS").await,
        r => r,
    };
    let row = match row {
        Ok(r) => r,
        Err(e) => {
            *conn = None;
            return Err(e.to_string());
        }
    };
    let row = row.ok_or("binary logging is off on the server (SHOW MASTER STATUS is empty)")?;
    let file: String = row.get(0).ok_or("SHOW MASTER STATUS: no file")?;
    let pos: u64 = row.get(1).ok_or("SHOW MASTER STATUS: no position")?;
    Ok(Position { file, pos })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(file: &str, pos: u64) -> Position {
        Position { file: file.into(), pos }
    }

    #[test]
    fn positions_order_by_file_number_then_offset() {
        assert!(reached(&p("b.000010", 4), &p("b.000009", 900)));
        assert!(!reached(&p("b.000009", 900), &p("b.000010", 4)));
        assert!(reached(&p("b.000009", 900), &p("b.000009", 900)));
        assert!(!reached(&p("b.000009", 899), &p("b.000009", 900)));
    }

    #[test]
    fn lag_counts_from_the_oldest_probe_not_reached() {
        let h = Head::default();
        assert!(h.lag_ms(10_000) >= 10_000, "never probed: unknown");
        h.read_to(&p("b.1", 100));
        h.probed(p("b.1", 100), 1_000);
        assert_eq!(h.lag_ms(1_010), 0, "caught up");
        h.probed(p("b.1", 500), 1_020);
        h.probed(p("b.1", 900), 1_040);
        assert_eq!(h.lag_ms(1_100), 80, "the 1_020 probe is ahead");
        h.read_to(&p("b.1", 600));
        assert_eq!(h.lag_ms(1_100), 60, "the 1_040 probe is still ahead");
        h.read_to(&p("b.2", 4));
        assert_eq!(h.lag_ms(1_050), 0);
        // No answer for a while: that is lag too.
        assert_eq!(h.lag_ms(1_040 + 20 + 300), 300);
    }

    #[test]
    fn before_the_follower_starts_probes_wait_for_it() {
        let h = Head::default();
        h.probed(p("b.1", 100), 1_000);
        assert_eq!(h.lag_ms(1_030), 30);
        h.read_to(&p("b.1", 100));
        assert_eq!(h.lag_ms(1_015), 0);
        h.probed(p("b.1", 100), 1_040);
        assert_eq!(h.lag_ms(1_050), 0, "a probe at the follower's position is not ahead");
    }

    #[test]
    fn the_queue_is_bounded_and_errs_towards_more_lag() {
        let h = Head::default();
        h.read_to(&p("b.1", 0));
        for i in 0..(MAX_PENDING as u64 + 100) {
            h.probed(p("b.1", 10 + i), 1_000 + i);
        }
        assert_eq!(h.inner.lock().pending.len(), MAX_PENDING);
        h.read_to(&p("b.1", 10 + MAX_PENDING as u64 + 50));
        // The last entry was moved to the newest head but kept its older time.
        assert!(h.lag_ms(1_000 + MAX_PENDING as u64 + 100) >= 100);
        h.read_to(&p("b.1", 10 + MAX_PENDING as u64 + 99));
        assert_eq!(h.lag_ms(1_000 + MAX_PENDING as u64 + 100), 0);
        h.restart();
        assert_eq!(h.lag_ms(1_000 + MAX_PENDING as u64 + 100), 0);
    }
}
