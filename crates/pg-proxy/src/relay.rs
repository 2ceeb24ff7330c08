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
use protocol_postgres::{backend_limit, frontend_limit, TransactionStatus};
use sql_source::digests::Outcome;

use crate::cache::session::{CacheState, Effect};
use crate::cache::{Fill, Plan};
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

/// What the cache does when a unit's ReadyForQuery comes back.
enum Action {
    /// Nothing.
    None,
    /// Store the reply (collected as it is relayed) unless it cannot be kept.
    /// `digest`, `at`: the statement's row in the digest table, and when it was sent.
    Fill { fill: Fill, reply: Vec<u8>, shape: protocol_postgres::Reply, whole: bool, digest: Option<u64>, at: Instant },
    /// Drop what the unit wrote, before the client sees its ReadyForQuery.
    Wrote(Effect),
}

/// The state both directions share (one task: the lock is never contended, nor held
/// across an await).
#[derive(Default)]
pub struct Flow {
    /// The session (settings, transaction status).
    session: Session,
    /// The query cache's view of it.
    cache: CacheState,
    /// One action per unit in flight, in order.
    actions: VecDeque<Action>,
    /// An extended batch is open (a Parse, Bind, Describe, Execute or Close since the last Sync).
    batch_open: bool,
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
    /// A unit was sent to the backend (no cache action).
    #[cfg(test)]
    fn sent(&mut self, unit: Unit, started: Option<Instant>) {
        self.sent_with(unit, started, Action::None);
    }

    /// A unit was sent to the backend, with what the cache does at its end.
    fn sent_with(&mut self, unit: Unit, started: Option<Instant>, action: Action) {
        self.actions.push_back(action);
        self.pending += 1;
        if self.untimed == 0 && self.units.len() < TIMED_UNITS {
            self.units.push_back((unit, started));
        } else {
            self.untimed += 1;
        }
    }

    /// A ReadyForQuery came back: the oldest unit is answered; its cache action.
    fn received(&mut self) -> Option<Action> {
        if self.pending == 0 {
            return None; // not asked for (a server bug): nothing to end
        }
        self.pending -= 1;
        let action = self.actions.pop_front();
        match self.units.pop_front() {
            Some(u) => self.done.push(u),
            None => self.untimed = self.untimed.saturating_sub(1),
        }
        action
    }

    /// Replies in flight.
    pub fn pending(&self) -> u64 {
        self.pending
    }
}

/// Runs a session until either side ends it; the client is told why when the proxy or the
/// backend ended it.
pub async fn run(client: Link, server: Box<Link>, login: Box<Login>, proxy: &Proxy) -> End {
    let Login { session, key: _key } = *login; // the key lives as long as the session
    let (mut cr, cw) = client.into_halves();
    let (mut br, mut bw) = server.into_halves();
    let cw = tokio::sync::Mutex::new(cw);
    let flow = Mutex::new(Flow { session, ..Flow::default() });
    let mut stop = proxy.stop_signal();
    let end = tokio::select! {
        e = up(&mut cr, &mut bw, &cw, &flow, proxy) => e,
        e = down(&mut br, &cw, &flow, proxy) => e,
        () = idle_stop(&mut stop, &flow) => End::Stopped,
    };
    let mut cw = cw.into_inner();
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
/// With the cache, a simple Query or a held extended batch it can answer is answered here
/// instead ([`query`], [`held_sync`]): the hits are written first (nothing is in flight
/// before a hit), then what goes to the server.
async fn up(
    cr: &mut Reader,
    bw: &mut Writer,
    cw: &tokio::sync::Mutex<Writer>,
    flow: &Mutex<Flow>,
    proxy: &Proxy,
) -> End {
    let c = &proxy.counters;
    let caching = proxy.cache.is_some();
    let mut out: Vec<u8> = Vec::new();
    let mut hits: Vec<Vec<u8>> = Vec::new();
    loop {
        match cr.fill().await {
            Ok(n) => c.bytes_from_clients.fetch_add(n as u64, Ordering::Relaxed),
            Err(_) => return End::ClientGone,
        };
        let now = c.start();
        let mut quit = false;
        // The rest of a long message comes first, shown to no callback: relayed as it is.
        let prefix = cr.passing().min(cr.buffered().len());
        let (mut offset, mut long_from) = (prefix, None);
        out.clear();
        hits.clear();
        if caching && prefix > 0 {
            out.extend_from_slice(&cr.buffered()[..prefix]);
        }
        let scanned = {
            let mut f = flow.lock();
            cr.scan(frontend_limit, |tag, body| {
                let start = offset;
                match body {
                    Some(b) => offset += 5 + b.len(),
                    None => long_from = Some(start),
                }
                // A held batch is released by anything that is not one of its messages.
                if f.cache.held.holding && (body.is_none() || !matches!(tag, b'P' | b'B' | b'D' | b'E' | b'S')) {
                    let held = f.cache.held.release();
                    out.extend_from_slice(&held);
                }
                let mut forward = true;
                match tag {
                    b'Q' => {
                        c.queries_simple.fetch_add(1, Ordering::Relaxed);
                        match query(&mut f, body, proxy) {
                            Answer::Hit(bytes) => {
                                hits.push(bytes);
                                forward = false;
                            }
                            Answer::Forward(action) => f.sent_with(Unit::Simple, now, action),
                        }
                    }
                    b'S' => {
                        let t = f.batch_start.take().or(now);
                        f.batch_open = false;
                        if f.cache.held.holding {
                            match held_sync(&mut f, proxy) {
                                Answer::Hit(bytes) => {
                                    f.cache.held.release();
                                    hits.push(bytes);
                                    forward = false;
                                }
                                Answer::Forward(action) => {
                                    let held = f.cache.held.release();
                                    out.extend_from_slice(&held);
                                    f.sent_with(Unit::Extended, t, action);
                                }
                            }
                        } else {
                            let effect = std::mem::take(&mut f.cache.batch);
                            let action = if effect == Effect::None { Action::None } else { Action::Wrote(effect) };
                            f.sent_with(Unit::Extended, t, action);
                        }
                    }
                    b'F' => {
                        c.function_calls.fetch_add(1, Ordering::Relaxed);
                        // A function may write anything.
                        let action = if caching { Action::Wrote(Effect::All) } else { Action::None };
                        f.sent_with(Unit::Function, now, action);
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
                        if caching {
                            extended(&mut f, tag, body, proxy);
                            if let (Some(b), true) = (body, tag != b'C') {
                                let idle = f.pending == 0 && f.session.status == Some(TransactionStatus::Idle);
                                let (db, policy) = proxy
                                    .cache
                                    .as_ref()
                                    .map_or(("", config::querycache::InTransactions::Never), |(c, d)| {
                                        (d.as_str(), c.in_transactions)
                                    });
                                let in_tx = f.pending == 0 && f.cache.tx_may_hit(policy, &f.session);
                                if !f.batch_open && (idle || in_tx) && f.cache.may_hold(&f.session, db) {
                                    f.cache.held.start();
                                }
                                if f.session.status != Some(TransactionStatus::Idle) && !f.cache.held.holding {
                                    // Not held: whatever it runs may write (conservative).
                                    f.cache.tx.wrote = true;
                                }
                                if f.cache.held.holding {
                                    f.cache.held.push(tag, b);
                                    forward = false;
                                }
                            }
                        }
                        f.batch_open = true;
                    }
                    b'X' => {
                        quit = true;
                        if let (true, Some(b)) = (caching, body) {
                            push_message(&mut out, tag, b);
                        }
                        return false;
                    }
                    _ => {} // Flush, COPY data/done/fail, password messages: relayed as they are
                }
                if let (true, true, Some(b)) = (caching, forward, body) {
                    push_message(&mut out, tag, b);
                }
                true
            })
        };
        let len = match scanned {
            Ok(len) => len,
            Err(e) => return End::ClientGarbage(format!("invalid message from the client: {e}")),
        };
        if caching {
            if let Some(from) = long_from {
                out.extend_from_slice(&cr.buffered()[from..len]);
            }
            cr.consume(len);
            for bytes in &hits {
                if cw.lock().await.write(bytes).await.is_err() {
                    return End::ClientGone;
                }
                c.bytes_to_clients.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                c.served(now, Unit::Simple);
            }
            if !out.is_empty() {
                if let Err(e) = bw.write(&out).await {
                    return End::BackendGone(e.to_string());
                }
            }
        } else if len > 0 {
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

/// Appends one message (type byte, length, body).
fn push_message(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    out.extend_from_slice(body);
}

/// A cacheable read: the stored reply, or forwarded as a fill (or with `otherwise` when
/// the cache takes no fill now).
fn hit_or_fill(
    cache: &crate::cache::PgCache,
    key: crate::cache::Key,
    tags: Vec<crate::cache::Tag>,
    otherwise: Action,
    digest: Option<u64>,
) -> Answer {
    match cache.lookup(&key) {
        Some(bytes) => {
            answered(cache, digest, Outcome::Hit, 0, bytes.len());
            Answer::Hit(bytes)
        }
        None => match cache.begin_fill(key, tags) {
            Some(fill) => Answer::Forward(Action::Fill {
                fill,
                reply: Vec::new(),
                shape: protocol_postgres::Reply::new(),
                whole: true,
                digest,
                at: Instant::now(),
            }),
            None => {
                answered(cache, digest, Outcome::NotCached("offline"), 0, 0);
                Answer::Forward(otherwise)
            }
        },
    }
}

/// How the statement of the digest table's row `digest` was answered.
fn answered(cache: &crate::cache::PgCache, digest: Option<u64>, outcome: Outcome, us: u64, bytes: usize) {
    if let Some(d) = digest {
        cache.digests.answered(d, outcome, us, bytes as u64);
    }
}

/// A read the cache does not answer, and why (its counter and its digest's row).
fn not_cached(cache: &crate::cache::PgCache, digest: Option<u64>, why: &'static str) {
    cache.counters.not_cacheable[crate::cache::reason_index(why)].fetch_add(1, Ordering::Relaxed);
    answered(cache, digest, Outcome::NotCached(why), 0, 0);
}

/// A read inside a transaction the policy lets the cache answer: the stored reply with its
/// ReadyForQuery saying "in a transaction"; a miss goes to the server and fills nothing
/// (a transaction's snapshot may be older than the cache's rows). A reply whose portal was
/// suspended (an Execute's row limit) is not answered: in a transaction block the portal
/// would stay open on the server for the client's next Execute.
fn hit_in_tx(cache: &crate::cache::PgCache, key: &crate::cache::Key, digest: Option<u64>) -> Answer {
    const SUSPENDED_THEN_IDLE: &[u8] = &[b's', 0, 0, 0, 4, b'Z', 0, 0, 0, 5, b'I'];
    let usable = |b: &[u8]| b.ends_with(&[b'Z', 0, 0, 0, 5, b'I']) && !b.ends_with(SUSPENDED_THEN_IDLE);
    match cache.lookup_if(key, usable) {
        Some(mut bytes) => {
            if let Some(status) = bytes.last_mut() {
                *status = b'T';
            }
            answered(cache, digest, Outcome::Hit, 0, bytes.len());
            Answer::Hit(bytes)
        }
        _ => {
            answered(cache, digest, Outcome::Miss, 0, 0);
            Answer::Forward(Action::None)
        }
    }
}

/// A held extended batch at its Sync: a hit, a fill, or forwarded with what it writes.
fn held_sync(f: &mut Flow, proxy: &Proxy) -> Answer {
    let effect = std::mem::take(&mut f.cache.batch);
    let wrote = if effect == Effect::None { Action::None } else { Action::Wrote(effect) };
    let Some((cache, _)) = &proxy.cache else { return Answer::Forward(wrote) };
    let Flow { cache: state, session, .. } = f;
    let in_tx = session.status == Some(TransactionStatus::InTransaction);
    let plan = state.batch_plan(cache, session);
    if in_tx && !matches!(plan, Some(Plan::Cached(..))) {
        // Not a cacheable read: the transaction may have written (conservative).
        state.tx.wrote = true;
    }
    let digest = state.digest;
    match plan {
        Some(Plan::Cached(key, _)) if in_tx => match state.tx_may_hit(cache.in_transactions, session) {
            true => hit_in_tx(cache, &key, digest),
            false => {
                not_cached(cache, digest, "transaction");
                Answer::Forward(wrote)
            }
        },
        Some(Plan::Cached(key, tags)) => hit_or_fill(cache, key, tags, wrote, digest),
        Some(Plan::Forward(why)) => {
            not_cached(cache, digest, why);
            Answer::Forward(wrote)
        }
        Some(Plan::Write(_)) => {
            answered(cache, digest, Outcome::Write, 0, 0);
            Answer::Forward(wrote)
        }
        // Not one statement into the unnamed portal, or not a read.
        None => {
            not_cached(cache, digest, "extended");
            Answer::Forward(wrote)
        }
    }
}

/// What a simple Query gets.
enum Answer {
    /// The stored reply (RowDescription .. ReadyForQuery): written to the client, the Query
    /// not forwarded.
    Hit(Vec<u8>),
    /// Forwarded, with what the cache does at its end.
    Forward(Action),
}

/// A simple Query through the cache: a hit when it is cacheable, the session is idle with
/// nothing in flight, and the result is stored; else forwarded, filling on a miss or
/// dropping what it writes at its end.
fn query(f: &mut Flow, body: Option<&[u8]>, proxy: &Proxy) -> Answer {
    let Some((cache, db)) = &proxy.cache else { return Answer::Forward(Action::None) };
    // A statement too long to be buffered whole may write anything.
    let Some(text) = body.and_then(|b| std::str::from_utf8(b.strip_suffix(b"\0")?).ok()) else {
        return Answer::Forward(Action::Wrote(Effect::All));
    };
    let idle = f.pending == 0 && f.session.status == Some(protocol_postgres::TransactionStatus::Idle);
    let Flow { cache: state, session, .. } = f;
    let plan = state.query(cache, session, db, text);
    let digest = state.digest;
    match plan {
        Plan::Cached(key, tags) if idle => hit_or_fill(cache, key, tags, Action::None, digest),
        Plan::Cached(key, _) if f.pending == 0 && state.tx_may_hit(cache.in_transactions, session) => {
            hit_in_tx(cache, &key, digest)
        }
        Plan::Cached(..) => {
            not_cached(cache, digest, "transaction");
            Answer::Forward(Action::None)
        }
        Plan::Forward(why) => {
            not_cached(cache, digest, why);
            Answer::Forward(Action::None)
        }
        Plan::Write(tables) => {
            answered(cache, digest, Outcome::Write, 0, 0);
            Answer::Forward(Action::Wrote(match tables {
                Some(t) => Effect::Tables(t),
                None => Effect::All,
            }))
        }
    }
}

/// Parse, Bind, Execute, Close: what the extended batch writes (its reads are not cached).
fn extended(f: &mut Flow, tag: u8, body: Option<&[u8]>, proxy: &Proxy) {
    use protocol_postgres::frontend::{Bind, Execute, Named, Parse};
    let Some((cache, db)) = &proxy.cache else { return };
    let Some(body) = body else {
        // Too long to read whole: whatever it is may write anything.
        f.cache.batch.and(Effect::All);
        return;
    };
    let other_db = f.session.database != *db;
    let Flow { cache: state, session, .. } = f;
    match tag {
        b'P' => match Parse::parse(body) {
            Ok(p) if !other_db => {
                let sql = String::from_utf8_lossy(p.query);
                state.parse(cache, session, &String::from_utf8_lossy(p.name), &sql);
            }
            Ok(p) => state.parse_neutral(&String::from_utf8_lossy(p.name)),
            Err(_) => state.batch.and(Effect::All),
        },
        b'B' => match Bind::parse(body) {
            Ok(b) => state.bind(&String::from_utf8_lossy(b.portal), &String::from_utf8_lossy(b.statement)),
            Err(_) => state.batch.and(Effect::All),
        },
        b'E' => match Execute::parse(body) {
            Ok(e) => state.execute(&String::from_utf8_lossy(e.portal)),
            Err(_) => state.batch.and(Effect::All),
        },
        b'C' => {
            if let Ok(n) = Named::parse(body, "Close") {
                state.close(n.target.byte(), &String::from_utf8_lossy(n.name));
            }
        }
        _ => {}
    }
}

/// Backend to client: every complete message (and long ones as they arrive) in one write;
/// the session learns reported settings and the transaction status on the way, and the
/// cache stores fills and drops what writes changed, before the client sees the
/// ReadyForQuery that ends them.
async fn down(br: &mut Reader, cw: &tokio::sync::Mutex<Writer>, flow: &Mutex<Flow>, proxy: &Proxy) -> End {
    let c = &proxy.counters;
    let cache = proxy.cache.as_ref().map(|(c, _)| c.as_ref());
    loop {
        if let Err(e) = br.fill().await {
            return End::BackendGone(e.to_string());
        }
        let scanned = {
            let mut f = flow.lock();
            let f = &mut *f;
            br.scan(backend_limit, |tag, body| {
                f.backend_said_fatal = false;
                if let Some(Action::Fill { reply, shape, whole, .. }) = f.actions.front_mut() {
                    match body {
                        Some(b) if *whole => {
                            reply.push(tag);
                            reply.extend_from_slice(&(b.len() as u32 + 4).to_be_bytes());
                            reply.extend_from_slice(b);
                            shape.feed(tag, b);
                        }
                        _ => *whole = false,
                    }
                }
                match tag {
                    b'Z' => {
                        let before = f.session.status;
                        if let Some(b) = body {
                            f.session.ready(b);
                        }
                        let action = f.received();
                        if let Some(cache) = cache {
                            finish(cache, f, action, before);
                        }
                    }
                    b'S' if body.is_some_and(|b| f.session.parameter_status(b)) => f.session.changes += 1,
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
            if cw.lock().await.write(&br.buffered()[..len]).await.is_err() {
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

/// A unit's ReadyForQuery: store its fill, or drop what it wrote (again at the end of the
/// transaction it wrote in, for the sessions that read after the commit).
fn finish(cache: &crate::cache::PgCache, f: &mut Flow, action: Option<Action>, before: Option<TransactionStatus>) {
    let now = f.session.status;
    match action {
        Some(Action::Fill { fill, reply, shape, whole, digest, at }) => {
            answered(cache, digest, Outcome::Miss, at.elapsed().as_micros() as u64, reply.len());
            if whole && crate::cache::storable(&shape) && before == Some(TransactionStatus::Idle) {
                cache.finish_fill(fill, &reply);
            } else {
                cache.counters.fills_refused.fetch_add(1, Ordering::Relaxed);
            }
        }
        Some(Action::Wrote(effect)) => {
            effect.apply(cache);
            if now != Some(TransactionStatus::Idle) {
                f.cache.in_tx.and(effect);
            }
        }
        Some(Action::None) | None => {}
    }
    if now == Some(TransactionStatus::Idle) && before != Some(TransactionStatus::Idle) {
        std::mem::take(&mut f.cache.in_tx).apply(cache);
    }
    if now == Some(TransactionStatus::Idle) && f.pending == 0 {
        // No transaction open (any more), nothing sent behind: the next one starts afresh.
        f.cache.tx = Default::default();
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
