//! A logged-in session: the client's messages go to its own backend connection and the
//! backend's to the client, both directions at once (a pipelining client writes while the
//! server streams replies; neither waits for the other, so neither can deadlock the
//! proxy), message-exact, in one write per read.
//!
//! Each direction looks only at type bytes, except for the few bodies the proxy needs
//! (ParameterStatus, ReadyForQuery's status, an ErrorResponse's severity). The replies in
//! flight are counted as [`protocol_postgres::Pipeline`] does: one per Query, Sync and
//! FunctionCall sent, one fewer per ReadyForQuery received; each is a *unit* of work
//! ([`Flow`]) timed from the read that brought its first message to the write of its
//! ReadyForQuery.
//!
//! The seam for the query cache (docs/pgproxy.md, "Where the cache plugs in"): the unit
//! queue is where a cached answer takes its place among the backend's replies (written
//! when the units before it are answered), and where a fill learns the reply that ends at
//! its ReadyForQuery; [`up`] sees every unit's messages first (Query, or Parse / Bind /
//! Describe / Execute up to Sync) and [`down`] every reply's.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::Instant;

use parking_lot::Mutex;
use protocol_postgres::{backend_limit, frontend_limit};

use crate::counters::Unit;
use crate::errors::{self, fatal};
use crate::handshake::{is_fatal, Login};
use crate::link::{Link, Reader, Writer};
use crate::session::Session;
use crate::Proxy;

/// Why a session ended.
#[derive(Debug)]
pub enum End {
    /// The client said Terminate (passed on to the backend).
    ClientQuit,
    /// The client's connection closed or failed without Terminate.
    ClientGone,
    /// The client sent a message the server would refuse (told, FATAL 08P01).
    ClientGarbage(String),
    /// The backend's connection closed or failed (the client was told, unless the backend
    /// said FATAL itself).
    BackendGone(String),
    /// The backend sent something no server sends (the client was told).
    BackendGarbage(String),
    /// sqlcached is stopping and the session was idle (the client was told, FATAL 57P01).
    Stopped,
}

/// Units of work that are bounded in the queue (a pipeline deeper than this is still
/// relayed; its later units are just not timed).
const TIMED_UNITS: usize = 4096;

/// The state both directions share (one task: the lock is never contended, nor held
/// across an await).
#[derive(Default)]
pub struct Flow {
    /// Replies in flight.
    pending: u64,
    /// The oldest in-flight units with their start (timed when `--metrics-listen`).
    units: VecDeque<(Unit, Option<Instant>)>,
    /// In-flight units beyond `units` (all newer than every queued one).
    untimed: u64,
    /// When the current extended-protocol batch's first message arrived.
    batch_start: Option<Instant>,
    /// Units whose ReadyForQuery is in the current write to the client.
    done: Vec<(Unit, Option<Instant>)>,
    /// The last backend message relayed was a FATAL ErrorResponse.
    backend_said_fatal: bool,
    /// sqlcached is stopping: end at the next moment no reply is in flight.
    stopping: bool,
}

impl Flow {
    /// A unit was sent to the backend.
    fn sent(&mut self, unit: Unit, started: Option<Instant>) {
        self.pending += 1;
        if self.untimed == 0 && self.units.len() < TIMED_UNITS {
            self.units.push_back((unit, started));
        } else {
            self.untimed += 1;
        }
    }

    /// A ReadyForQuery came back: the oldest unit is answered.
    fn received(&mut self) {
        if self.pending == 0 {
            return; // not asked for (a server bug): nothing to end
        }
        self.pending -= 1;
        match self.units.pop_front() {
            Some(u) => self.done.push(u),
            None => self.untimed = self.untimed.saturating_sub(1),
        }
    }

    /// Replies in flight.
    pub fn pending(&self) -> u64 {
        self.pending
    }
}

/// Runs a session until either side ends it; the client is told why when the proxy or the
/// backend ended it.
pub async fn run(client: Link, server: Box<Link>, login: Box<Login>, proxy: &Proxy) -> End {
    let Login { mut session, key: _key } = *login; // the key lives as long as the session
    let (mut cr, mut cw) = client.into_halves();
    let (mut br, mut bw) = server.into_halves();
    let flow = Mutex::new(Flow::default());
    let mut stop = proxy.stop_signal();
    let end = tokio::select! {
        e = up(&mut cr, &mut bw, &flow, proxy) => e,
        e = down(&mut br, &mut cw, &flow, &mut session, proxy) => e,
        () = idle_stop(&mut stop, &flow) => End::Stopped,
    };
    // The client is told why unless a message to it was cut short (more would be garbage).
    let tell = |bytes: Vec<u8>| if br.mid_message() { None } else { Some(bytes) };
    let to_client = match &end {
        End::ClientQuit | End::ClientGone => None,
        End::ClientGarbage(why) => tell(fatal(errors::PROTOCOL_VIOLATION, why, None, None)),
        End::BackendGone(why) if !flow.lock().backend_said_fatal => tell(fatal(
            errors::CONNECTION_FAILURE,
            &format!("sqlcached: the connection to PostgreSQL at {} was lost", proxy.backend),
            Some(why),
            None,
        )),
        End::BackendGone(_) => None,
        End::BackendGarbage(why) => tell(fatal(
            errors::CONNECTION_FAILURE,
            &format!("sqlcached: PostgreSQL at {} sent an invalid message", proxy.backend),
            Some(why),
            None,
        )),
        End::Stopped => {
            tell(fatal(errors::ADMIN_SHUTDOWN, "terminating connection due to administrator command", None, None))
        }
    };
    if let Some(bytes) = to_client {
        let _ = cw.write(&bytes).await;
    }
    // The backend session ends cleanly (Terminate) when the client's side is at a message
    // boundary; otherwise closing the socket ends it (a COPY or transaction rolled back).
    if !matches!(end, End::ClientQuit | End::BackendGone(_) | End::BackendGarbage(_)) && !cr.mid_message() {
        let _ = bw.write(b"X\0\0\0\x04").await;
    }
    cw.shutdown().await;
    end
}

/// Resolves once sqlcached is stopping and no reply is in flight; if one is, the reply's
/// end ([`down`]) ends the session instead.
async fn idle_stop(rx: &mut tokio::sync::watch::Receiver<bool>, flow: &Mutex<Flow>) {
    while !*rx.borrow_and_update() {
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
    let idle = {
        let mut f = flow.lock();
        f.stopping = true;
        f.pending == 0
    };
    if !idle {
        std::future::pending::<()>().await;
    }
}

/// Client to backend: every complete message (and long ones as they arrive) in one write.
async fn up(cr: &mut Reader, bw: &mut Writer, flow: &Mutex<Flow>, proxy: &Proxy) -> End {
    let c = &proxy.counters;
    loop {
        match cr.fill().await {
            Ok(n) => c.bytes_from_clients.fetch_add(n as u64, Ordering::Relaxed),
            Err(_) => return End::ClientGone,
        };
        let now = c.start();
        let mut quit = false;
        let scanned = {
            let mut f = flow.lock();
            cr.scan(frontend_limit, |tag, _body| {
                match tag {
                    b'Q' => {
                        c.queries_simple.fetch_add(1, Ordering::Relaxed);
                        f.sent(Unit::Simple, now);
                    }
                    b'S' => {
                        let t = f.batch_start.take().or(now);
                        f.sent(Unit::Extended, t);
                    }
                    b'F' => {
                        c.function_calls.fetch_add(1, Ordering::Relaxed);
                        f.sent(Unit::Function, now);
                    }
                    b'E' | b'P' | b'B' | b'D' | b'C' => {
                        match tag {
                            b'E' => c.queries_extended.fetch_add(1, Ordering::Relaxed),
                            b'P' => c.parses.fetch_add(1, Ordering::Relaxed),
                            _ => 0,
                        };
                        if f.batch_start.is_none() {
                            f.batch_start = now;
                        }
                    }
                    b'X' => {
                        quit = true;
                        return false;
                    }
                    _ => {} // Flush, COPY data/done/fail, password messages: relayed as they are
                }
                true
            })
        };
        let len = match scanned {
            Ok(len) => len,
            Err(e) => return End::ClientGarbage(format!("invalid message from the client: {e}")),
        };
        if len > 0 {
            if let Err(e) = bw.write(&cr.buffered()[..len]).await {
                return End::BackendGone(e.to_string());
            }
            cr.consume(len);
        }
        if quit {
            return End::ClientQuit;
        }
    }
}

/// Backend to client: every complete message (and long ones as they arrive) in one write;
/// the session learns reported settings and the transaction status on the way.
async fn down(br: &mut Reader, cw: &mut Writer, flow: &Mutex<Flow>, session: &mut Session, proxy: &Proxy) -> End {
    let c = &proxy.counters;
    loop {
        if let Err(e) = br.fill().await {
            return End::BackendGone(e.to_string());
        }
        let scanned = {
            let mut f = flow.lock();
            let f = &mut *f;
            br.scan(backend_limit, |tag, body| {
                f.backend_said_fatal = false;
                match tag {
                    b'Z' => {
                        if let Some(b) = body {
                            session.ready(b);
                        }
                        f.received();
                    }
                    b'S' if body.is_some_and(|b| session.parameter_status(b)) => session.changes += 1,
                    b'A' => {
                        c.notifications.fetch_add(1, Ordering::Relaxed);
                    }
                    b'G' => {
                        c.copy_in.fetch_add(1, Ordering::Relaxed);
                    }
                    b'H' => {
                        c.copy_out.fetch_add(1, Ordering::Relaxed);
                    }
                    b'E' => f.backend_said_fatal = body.is_some_and(is_fatal),
                    _ => {}
                }
                true
            })
        };
        let len = match scanned {
            Ok(len) => len,
            Err(e) => return End::BackendGarbage(e.to_string()),
        };
        if len > 0 {
            if cw.write(&br.buffered()[..len]).await.is_err() {
                return End::ClientGone;
            }
            c.bytes_to_clients.fetch_add(len as u64, Ordering::Relaxed);
            br.consume(len);
        }
        let mut f = flow.lock();
        for (unit, t) in f.done.drain(..) {
            c.served(t, unit);
        }
        if f.stopping && f.pending == 0 {
            return End::Stopped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_are_answered_in_order_and_bounded() {
        let mut f = Flow::default();
        let t = Some(Instant::now());
        f.sent(Unit::Simple, t);
        f.sent(Unit::Extended, None);
        f.received();
        assert_eq!(f.done.pop().map(|u| u.0), Some(Unit::Simple));
        f.received();
        assert_eq!(f.done.pop().map(|u| u.0), Some(Unit::Extended));
        f.received(); // nothing in flight: ignored
        assert_eq!(f.pending(), 0);
        for _ in 0..TIMED_UNITS + 10 {
            f.sent(Unit::Extended, t);
        }
        assert_eq!((f.units.len(), f.untimed), (TIMED_UNITS, 10));
        for _ in 0..TIMED_UNITS + 10 {
            f.received();
        }
        assert_eq!((f.pending(), f.units.len(), f.untimed, f.done.len()), (0, 0, 0, TIMED_UNITS));
    }
}
