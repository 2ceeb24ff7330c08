//! MySQL operations on the caller's own thread (batch sizes 1): no hop to the backend's
//! runtime thread. Each thread that runs operations (a server worker, with its
//! single-threaded runtime) gets its own connections and two queues:
//!
//! * **reads**: the gets queued while this thread's reader connections are busy are
//!   merged into one `SELECT ... WHERE k IN (...)` per container (their keys, once each);
//! * **writes**: the writes queued likewise run as one group-commit transaction
//!   ([`super::group`]), committed before any of them is answered.
//!
//! An operation is queued and, if fewer than `thread_readers` / `thread_writers`
//! flusher tasks run on this thread, a flusher is spawned on the current runtime; a
//! flusher takes everything queued (one container's writes per group), runs it, answers,
//! and repeats until the queue is empty. At low load every operation runs at once on
//! its own connection; under load the queue fills while the connections are busy and
//! the groups grow by themselves.
//!
//! The per-thread state is found through a thread-local (keyed by backend) and removed
//! when the runtime that created it shuts down (a sentinel task's drop marks it dead),
//! so connections are only ever used on the runtime they were opened on.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use mysql_async::{Conn, Opts};
use tokio::sync::oneshot;

use super::group::{blind_sets, set_group, write_group, write_one, GroupErr, ROWS_PER_STATEMENT};
use super::myconn::{read_rows, MyErr, Shared, ER_DUP_ENTRY, ER_LOCK_DEADLOCK};
use super::{queue_timeout_error, stopped, Stats};
use crate::error::BackendError;
use crate::ops::{Op, OpResult, Row};
use crate::validate::Mapping;

type Answer = Result<OpResult, BackendError>;

/// Most operations (writes) or keys (reads) one flusher takes from the queue at once.
const MAX_GROUP: usize = 128;
/// Attempts of a whole group (deadlock, a concurrent insert, a dead connection) before
/// its operations are run one by one.
const GROUP_ATTEMPTS: usize = 3;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static STATES: RefCell<Vec<(u64, Arc<ThreadState>)>> = const { RefCell::new(Vec::new()) };
}

/// The per-thread path of one MySQL backend.
pub(super) struct Local {
    id: u64,
    sh: Arc<Shared>,
    opts: Opts,
    readers: usize,
    writers: usize,
}

struct Req {
    m: Arc<Mapping>,
    op: Op,
    /// None: fire and forget (lazy removal of expired rows).
    reply: Option<oneshot::Sender<Answer>>,
    deadline: Instant,
}

#[derive(Default)]
struct Queues {
    reads: Vec<Req>,
    writes: Vec<Req>,
    read_flushers: usize,
    write_flushers: usize,
    idle_readers: Vec<Conn>,
    idle_writers: Vec<Conn>,
}

struct ThreadState {
    q: Mutex<Queues>,
    /// Set when the runtime this state's connections belong to has shut down.
    dead: Arc<AtomicBool>,
}

struct Sentinel(Arc<AtomicBool>);
impl Drop for Sentinel {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

fn answer(r: Req, a: Answer) {
    if let Some(tx) = r.reply {
        let _ = tx.send(a);
    }
}

impl Local {
    /// `opts`: how to open a connection; `readers` / `writers`: per thread.
    pub fn new(sh: Arc<Shared>, opts: Opts, readers: usize, writers: usize) -> Local {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        Local { id, sh, opts, readers: readers.max(1), writers: writers.max(1) }
    }

    fn state(&self) -> Arc<ThreadState> {
        STATES.with(|s| {
            let mut s = s.borrow_mut();
            s.retain(|(_, t)| !t.dead.load(Ordering::Acquire));
            if let Some((_, t)) = s.iter().find(|(id, _)| *id == self.id) {
                return t.clone();
            }
            let dead = Arc::new(AtomicBool::new(false));
            let sentinel = Sentinel(dead.clone());
            tokio::spawn(async move {
                let _s = sentinel;
                std::future::pending::<()>().await
            });
            let t = Arc::new(ThreadState { q: Mutex::new(Queues::default()), dead });
            s.push((self.id, t.clone()));
            t
        })
    }

    /// A read (`Op::Get`), merged with the other reads queued on this thread.
    pub async fn read(self: Arc<Self>, m: Arc<Mapping>, op: Op) -> Answer {
        self.submit(m, op, true).await
    }

    /// A write, in the next group commit of this thread.
    pub async fn write(self: Arc<Self>, m: Arc<Mapping>, op: Op) -> Answer {
        self.submit(m, op, false).await
    }

    async fn submit(self: Arc<Self>, m: Arc<Mapping>, op: Op, read: bool) -> Answer {
        let (tx, rx) = oneshot::channel();
        let req = Req { m, op, reply: Some(tx), deadline: Instant::now() + self.sh.query_timeout };
        let ts = self.state();
        self.enqueue(&ts, req, read);
        rx.await.unwrap_or_else(|_| Err(stopped()))
    }

    fn enqueue(self: &Arc<Self>, ts: &Arc<ThreadState>, req: Req, read: bool) {
        let spawn = {
            let mut guard = ts.q.lock().unwrap();
            let q = &mut *guard;
            let (list, running, max) = if read {
                (&mut q.reads, &mut q.read_flushers, self.readers)
            } else {
                (&mut q.writes, &mut q.write_flushers, self.writers)
            };
            list.push(req);
            let spawn = *running < max;
            if spawn {
                *running += 1;
            }
            spawn
        };
        if spawn {
            let (me, ts) = (self.clone(), ts.clone());
            if read {
                tokio::spawn(async move { me.read_flusher(ts).await });
            } else {
                tokio::spawn(async move { me.write_flusher(ts).await });
            }
        }
    }

    /// Takes queued requests (None, and the flusher ends, when there are none): reads of
    /// every container up to [`MAX_GROUP`] keys; writes of the first one's container up
    /// to [`MAX_GROUP`] (one at a time for a container whose key compares inexactly).
    fn take(&self, ts: &ThreadState, read: bool) -> Option<Vec<Req>> {
        let mut guard = ts.q.lock().unwrap();
        let q = &mut *guard;
        let (list, running) =
            if read { (&mut q.reads, &mut q.read_flushers) } else { (&mut q.writes, &mut q.write_flushers) };
        if list.is_empty() {
            *running -= 1;
            return None;
        }
        let first = list[0].m.clone();
        let single = !read && !first.key.exact;
        let (mut taken, mut rest, mut n) = (Vec::new(), Vec::new(), 0);
        for r in list.drain(..) {
            let fits = read || (Arc::ptr_eq(&r.m, &first) && !(single && n > 0));
            if fits && n < MAX_GROUP {
                n += if let Op::Get { keys } = &r.op { keys.len() } else { 1 };
                taken.push(r);
            } else {
                rest.push(r);
            }
        }
        *list = rest;
        Some(taken)
    }

    /// Drops requests that waited past their deadline (answered "too slow").
    fn live(reqs: Vec<Req>) -> Vec<Req> {
        let now = Instant::now();
        let (live, late): (Vec<Req>, Vec<Req>) = reqs.into_iter().partition(|r| r.deadline >= now);
        for r in late {
            answer(r, Err(queue_timeout_error(std::time::Duration::ZERO)));
        }
        live
    }

    /// An idle connection of this thread (`true`: reused, it may have died meanwhile) or
    /// a new one.
    async fn conn(&self, ts: &ThreadState, read: bool) -> Result<(Conn, bool), BackendError> {
        let idle = {
            let mut q = ts.q.lock().unwrap();
            if read {
                q.idle_readers.pop()
            } else {
                q.idle_writers.pop()
            }
        };
        if let Some(c) = idle {
            return Ok((c, true));
        }
        let c = self.sh.connect(Conn::new(self.opts.clone())).await?;
        Stats::bump(&self.sh.stats.connects, 1);
        Ok((c, false))
    }

    fn put_back(&self, ts: &ThreadState, c: Conn, read: bool) {
        let mut q = ts.q.lock().unwrap();
        if read {
            q.idle_readers.push(c)
        } else {
            q.idle_writers.push(c)
        }
    }

    /// A connection died: the idle ones of this thread probably did too (backend restart).
    fn forget_idle(&self, ts: &ThreadState) {
        let mut q = ts.q.lock().unwrap();
        q.idle_readers.clear();
        q.idle_writers.clear();
    }

    async fn read_flusher(self: Arc<Self>, ts: Arc<ThreadState>) {
        while let Some(reqs) = self.take(&ts, true) {
            let mut reqs = Self::live(reqs);
            while !reqs.is_empty() {
                // One container at a time; its requests' keys read once each.
                let m = reqs[0].m.clone();
                let (mine, rest): (Vec<Req>, Vec<Req>) = reqs.into_iter().partition(|r| Arc::ptr_eq(&r.m, &m));
                reqs = rest;
                self.read_one_container(&ts, &m, mine).await;
            }
        }
    }

    async fn read_one_container(self: &Arc<Self>, ts: &Arc<ThreadState>, m: &Arc<Mapping>, reqs: Vec<Req>) {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for r in &reqs {
            if let Op::Get { keys: ks } = &r.op {
                for k in ks {
                    if seen.insert(&k[..]) {
                        keys.push(k.clone());
                    }
                }
            }
        }
        let res = loop {
            let (mut c, reused) = match self.conn(ts, true).await {
                Ok(c) => c,
                Err(e) => break Err(e),
            };
            match read_rows(&self.sh, &mut c, m, &keys).await {
                Err(e @ MyErr::Fatal(_)) => {
                    // A pooled connection found dead: once more on a new one (reads are
                    // idempotent); a timeout is not tried again.
                    self.forget_idle(ts);
                    if !(reused && e.dead_at_once()) {
                        break Err(e.into_backend());
                    }
                }
                r => {
                    self.put_back(ts, c, true);
                    break r.map_err(MyErr::into_backend);
                }
            }
        };
        let (rows, expired) = match res {
            Ok(OpResult::Read { rows, expired }) => (rows, expired),
            Ok(_) => unreachable!("a read answers rows"),
            Err(e) => {
                Stats::bump(&self.sh.stats.errors, reqs.len() as u64);
                for r in reqs {
                    answer(r, Err(e.clone()));
                }
                return;
            }
        };
        let by_key: std::collections::HashMap<&[u8], &Option<Row>> =
            keys.iter().map(|k| &k[..]).zip(rows.iter()).collect();
        for r in reqs {
            let out = match &r.op {
                Op::Get { keys } => keys.iter().map(|k| by_key.get(&k[..]).and_then(|r| (*r).clone())).collect(),
                _ => Vec::new(),
            };
            answer(r, Ok(OpResult::Rows(out)));
        }
        if m.expire.is_some() {
            for key in expired {
                let del = Req {
                    m: m.clone(),
                    op: Op::DeleteExpired { key },
                    reply: None,
                    deadline: Instant::now() + self.sh.query_timeout,
                };
                self.enqueue(ts, del, false);
            }
        }
    }

    async fn write_flusher(self: Arc<Self>, ts: Arc<ThreadState>) {
        while let Some(reqs) = self.take(&ts, false) {
            let reqs = Self::live(reqs);
            if reqs.is_empty() {
                continue;
            }
            let m = reqs[0].m.clone();
            let ops: Vec<&Op> = reqs.iter().map(|r| &r.op).collect();
            // Plain sets go in statements of ROWS_PER_STATEMENT; anything else in one
            // transaction.
            let size = if ops.iter().all(|o| blind_sets(&[o])) { ROWS_PER_STATEMENT } else { ops.len() };
            let mut answers = Vec::with_capacity(ops.len());
            for chunk in ops.chunks(size) {
                answers.extend(self.chunk(&ts, &m, chunk).await);
            }
            drop(ops);
            let errors = answers.iter().filter(|a| a.is_err()).count();
            Stats::bump(&self.sh.stats.errors, errors as u64);
            for (r, a) in reqs.into_iter().zip(answers) {
                answer(r, a);
            }
        }
    }

    /// One group, or its operations one by one when the group cannot run as one.
    async fn chunk(&self, ts: &ThreadState, m: &Mapping, ops: &[&Op]) -> Vec<Answer> {
        match self.group(ts, m, ops).await {
            Ok(a) => a,
            Err(GroupFail::OneByOne) => {
                let mut a = Vec::with_capacity(ops.len());
                for op in ops {
                    a.push(match self.group(ts, m, &[op]).await {
                        Ok(mut r) => r.pop().unwrap_or_else(|| Err(stopped())),
                        Err(GroupFail::OneByOne) => Err(BackendError::Unavailable(
                            "MySQL: the write kept conflicting with concurrent writes".into(),
                        )),
                        Err(GroupFail::Error(e)) => Err(e),
                    });
                }
                a
            }
            Err(GroupFail::Error(e)) => vec![Err(e); ops.len()],
        }
    }

    /// Runs one group commit, again after a deadlock, a concurrent insert or a dead
    /// connection (nothing of it happened then), up to [`GROUP_ATTEMPTS`] times.
    async fn group(&self, ts: &ThreadState, m: &Mapping, ops: &[&Op]) -> Result<Vec<Answer>, GroupFail> {
        let blind = blind_sets(ops);
        for _ in 0..GROUP_ATTEMPTS {
            let (mut c, reused) = self.conn(ts, false).await.map_err(GroupFail::Error)?;
            let run = match ops {
                _ if blind => set_group(&self.sh, &mut c, m, ops).await,
                [op] => write_one(&self.sh, &mut c, m, op).await,
                _ => write_group(&self.sh, &mut c, m, ops).await,
            };
            match run {
                Ok(a) => {
                    Stats::bump(&self.sh.stats.commits, 1);
                    self.put_back(ts, c, false);
                    return Ok(a);
                }
                Err(GroupErr::Commit(e)) if blind && reused && e.dead_at_once() => {
                    // A pooled connection found dead under plain sets: they are
                    // idempotent, run them again on a new connection.
                    self.forget_idle(ts);
                }
                Err(GroupErr::Commit(e)) => {
                    self.forget_idle(ts);
                    let e = e.into_backend().to_string();
                    return Err(GroupFail::Error(BackendError::Unavailable(format!(
                        "{e} (the connection died during COMMIT: outcome unknown)"
                    ))));
                }
                Err(GroupErr::Before(e @ MyErr::Fatal(_))) => {
                    // Rolled back by the server; a reused connection found dead is
                    // replaced (once: a new connection is not reused).
                    self.forget_idle(ts);
                    if !(reused && e.dead_at_once()) {
                        return Err(GroupFail::Error(e.into_backend()));
                    }
                }
                Err(GroupErr::Before(e)) => {
                    self.rollback(ts, c).await;
                    match e {
                        MyErr::Server { code: ER_DUP_ENTRY | ER_LOCK_DEADLOCK, .. } => {}
                        e if ops.len() == 1 => return Err(GroupFail::Error(e.into_backend())),
                        // One bad write (a value too long for its column, a row locked
                        // elsewhere past the lock wait timeout) fails alone.
                        _ => return Err(GroupFail::OneByOne),
                    }
                }
                Err(GroupErr::Stray) => {
                    self.rollback(ts, c).await;
                    return Err(GroupFail::OneByOne);
                }
            }
        }
        Err(GroupFail::OneByOne)
    }

    async fn rollback(&self, ts: &ThreadState, mut c: Conn) {
        use mysql_async::prelude::Queryable;
        if self.sh.timed(c.query_drop("ROLLBACK")).await.is_ok() {
            self.put_back(ts, c, false);
        }
    }
}

enum GroupFail {
    /// Every operation of the group fails with this.
    Error(BackendError),
    /// Run the operations one by one (a single one answers its own error).
    OneByOne,
}
