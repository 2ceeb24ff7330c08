//! A ring worker: one thread, one ring, the memcached connections handed to it.
//!
//! Each loop turn makes one `io_uring_enter`, which submits everything the previous turn
//! queued (every connection's one `Send`, receives to arm, cancellations) and collects the
//! completions; it sleeps in that same call when there is nothing to do. The turn then runs
//! every completion (a receive's bytes through the connection's session, a send's end), the
//! wake-ups other threads rang the doorbell for, the new connections, and the connections
//! that yielded after `-R` requests last turn; it hands every provided buffer back. With
//! `-o idle_timeout` the wait wakes up at least once a second to close idle connections.

use std::os::fd::{IntoRawFd, RawFd};
use std::sync::Arc;

use io_uring::{cqueue, opcode, squeue, types, EnterFlags, IoUring, SubmissionQueue, Submitter};

use crate::session::Session;
use crate::shared::{Shared, WorkerStats};
use crate::uring::bell::{Bell, NewConn};
use crate::uring::bufring::BufRing;
use crate::uring::conn::{self, token, untoken, Env, Fate, Submit, UConn};
use crate::uring::ring;

/// Submission slots per ring (a turn with more to submit submits in several goes).
const ENTRIES: u32 = 1024;
/// Provided buffers per worker, and their size: 256 x 4 KiB = 1 MiB per worker thread.
/// They are handed back within the turn that filled them, so this bounds how many
/// receives one turn takes in, not how many connections there are (a receive that finds
/// none ends with ENOBUFS and is armed again).
const BUFFERS: u16 = 256;
const BUFFER_SIZE: usize = 4096;
const GROUP: u16 = 0;

/// Start ring worker `i` for `shared`'s connections; returns its doorbell once its ring
/// is set up (an error if the kernel refused it). Futures of its connections are polled in
/// the context of `rt` (a tokio worker's runtime).
pub fn spawn(
    i: usize,
    shared: Arc<Shared>,
    stats: Arc<WorkerStats>,
    rt: tokio::runtime::Handle,
) -> std::io::Result<Arc<Bell>> {
    let bell = Arc::new(Bell::new()?);
    let (tx, rx) = std::sync::mpsc::channel();
    let b = bell.clone();
    std::thread::Builder::new().name(format!("uring-{i}")).spawn(move || {
        // The ring is made on its own thread: SINGLE_ISSUER ties it to the thread that made it.
        let made = ring::build(ENTRIES).and_then(|ring| {
            let bufs = BufRing::register(&ring, BUFFERS, BUFFER_SIZE, GROUP)?;
            Ok((ring, bufs))
        });
        let (ring, bufs) = match made {
            Ok(m) => m,
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        };
        let _ = tx.send(Ok(()));
        b.own();
        Worker::new(&shared, &stats, b, rt, bufs).run(ring);
    })?;
    rx.recv().map_err(|_| std::io::Error::other("ring worker thread died"))??;
    Ok(bell)
}

/// The submission side of the ring, for one loop turn.
struct Queue<'r> {
    sub: Submitter<'r>,
    sq: SubmissionQueue<'r>,
}

impl Submit for Queue<'_> {
    fn push(&mut self, e: squeue::Entry) {
        // SAFETY: every buffer an entry points at stays put until its completion (a
        // connection's `out` while `sending`, the provided buffers, the doorbell's word).
        while unsafe { self.sq.push(&e) }.is_err() {
            // Full: submit what is queued and go on.
            self.sq.sync();
            let _ = self.sub.submit();
            self.sq.sync();
        }
    }
}

struct Slot {
    gen: u32,
    conn: Option<(UConn, u64)>,
}

/// What every connection of the worker shares.
struct Common<'a> {
    shared: &'a Shared,
    stats: &'a WorkerStats,
    bell: Arc<Bell>,
    rt: tokio::runtime::Handle,
    group: u16,
}

impl Common<'_> {
    fn env(&self, now: u32) -> Env<'_> {
        Env { shared: self.shared, stats: self.stats, bell: &self.bell, rt: &self.rt, now, group: self.group }
    }
}

struct Worker<'a> {
    c: Common<'a>,
    shared: &'a Shared,
    bell: Arc<Bell>,
    bufs: BufRing,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// The doorbell's eventfd is read into this.
    bell_word: Box<u64>,
    /// Connections that yielded after `-R` requests: run again next turn.
    again: Vec<(u32, u32)>,
    // Reused each turn.
    woken: Vec<u64>,
    inbox: Vec<NewConn>,
    running: Vec<(u32, u32)>,
    last_scan: u32,
}

impl<'a> Worker<'a> {
    fn new(
        shared: &'a Shared,
        stats: &'a WorkerStats,
        bell: Arc<Bell>,
        rt: tokio::runtime::Handle,
        bufs: BufRing,
    ) -> Worker<'a> {
        Worker {
            c: Common { shared, stats, bell: bell.clone(), rt, group: bufs.group() },
            shared,
            bell,
            bufs,
            slots: Vec::new(),
            free: Vec::new(),
            bell_word: Box::new(0),
            again: Vec::new(),
            woken: Vec::new(),
            inbox: Vec::new(),
            running: Vec::new(),
            last_scan: 0,
        }
    }

    fn run(mut self, mut ring: IoUring) {
        let (mut sub, sq, mut cq) = ring.split();
        // The enter calls then skip the kernel's descriptor lookup (Linux 5.18+).
        let _ = sub.register_ring_fd();
        let mut q = Queue { sub, sq };
        self.arm_bell(&mut q);
        let idle = self.shared.cfg.idle_timeout.min(u32::MAX as u64) as u32;
        let second = types::Timespec::new().sec(1);
        let timed = types::SubmitArgs::new().timespec(&second);
        let mut failing = false;
        loop {
            q.sq.sync();
            let sleep = self.again.is_empty() && !self.bell.has_woken();
            let entered = if !sleep {
                // SAFETY: no pointer argument; GETEVENTS runs the deferred completions.
                unsafe { q.sub.enter::<libc::sigset_t>(q.sq.len() as u32, 0, EnterFlags::GETEVENTS.bits(), None) }
            } else if idle > 0 {
                q.sub.submit_with_args(1, &timed)
            } else {
                q.sub.submit_and_wait(1)
            };
            if let Err(e) = entered {
                match e.raw_os_error() {
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY | libc::EAGAIN) => {}
                    _ => {
                        // Not expected (ENOMEM at worst): said once, retried; its connections
                        // wait meanwhile.
                        if !failing {
                            log::error!("io_uring_enter: {e}; retrying every 10 ms");
                            failing = true;
                        }
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                }
            } else if failing {
                log::info!("io_uring_enter works again");
                failing = false;
            }
            q.sq.sync();
            cq.sync();
            let now = self.shared.engine.clock().now();
            let mut gave = false;
            for cqe in &mut cq {
                gave |= self.complete(&mut q, now, cqe);
            }
            if gave {
                self.bufs.publish();
            }
            self.turn_end(&mut q, now, idle);
        }
    }

    fn arm_bell(&mut self, q: &mut Queue<'_>) {
        let word: *mut u64 = &mut *self.bell_word;
        q.push(opcode::Read::new(types::Fd(self.bell.fd()), word.cast(), 8).build().user_data(token(conn::BELL, 0, 0)));
    }

    /// One completion; true if it handed a provided buffer back.
    fn complete(&mut self, q: &mut Queue<'_>, now: u32, cqe: cqueue::Entry) -> bool {
        let (kind, gen, slot) = untoken(cqe.user_data());
        let res = cqe.result();
        match kind {
            conn::BELL => {
                self.bell.rearm();
                self.arm_bell(q);
                false
            }
            conn::RECV => {
                let bid = cqueue::buffer_select(cqe.flags());
                let more = cqueue::more(cqe.flags());
                let env = self.c.env(now);
                let bufs = &self.bufs;
                let fate = event(&mut self.slots, &env, q, slot, gen, |c, env, q| {
                    let mut fate = Fate::Idle;
                    if let (true, Some(bid)) = (res > 0, bid) {
                        fate = c.on_data(env, q, bufs.data(bid, res as usize));
                    }
                    if !more {
                        // Ended: by the client (0), an error, no provided buffer left, a
                        // cancellation, or after these bytes (armed again if still wanted).
                        let end = c.on_recv_end(env, q, res);
                        if end != Fate::Idle {
                            fate = end;
                        }
                    }
                    fate
                });
                if let Some(bid) = bid {
                    self.bufs.give(bid);
                }
                self.after(slot, gen, fate);
                bid.is_some()
            }
            conn::SEND => {
                let env = self.c.env(now);
                let fate = event(&mut self.slots, &env, q, slot, gen, |c, env, q| c.on_send(env, q, res));
                self.after(slot, gen, fate);
                false
            }
            _ => false,
        }
    }

    /// Act on what a connection's event left it as.
    fn after(&mut self, slot: u32, gen: u32, fate: Fate) {
        match fate {
            Fate::Idle => {}
            Fate::Again => {
                if let Some(Slot { gen: g, conn: Some((c, _)) }) = self.slots.get_mut(slot as usize) {
                    if *g == gen && !c.queued {
                        c.queued = true;
                        self.again.push((slot, gen));
                    }
                }
            }
            Fate::Closed => self.close(slot),
        }
    }

    /// Close the socket of the connection in `slot` (nothing of it is in flight) and free the slot.
    fn close(&mut self, slot: u32) {
        let s = &mut self.slots[slot as usize];
        let Some((c, id)) = s.conn.take() else { return };
        s.gen = s.gen.wrapping_add(1);
        self.free.push(slot);
        // Forget the descriptor (under the table's lock) before closing it: a stop never
        // shuts down a reused descriptor.
        self.shared.closing(c.session().info());
        // SAFETY: the connection's socket, owned by it, with nothing in flight. The FIN goes
        // first, after everything sent (as the epoll path's shutdown), so a client reads all
        // its replies and then the end even if a close with unread input resets.
        unsafe {
            libc::shutdown(c.fd(), libc::SHUT_WR);
            libc::close(c.fd());
        }
        drop(c);
        self.shared.conn_gone(id);
    }

    /// After the completions: the doorbell's news, the yielded connections, idle ones.
    fn turn_end(&mut self, q: &mut Queue<'_>, now: u32, idle: u32) {
        let mut inbox = std::mem::take(&mut self.inbox);
        self.bell.take_inbox(&mut inbox);
        for n in inbox.drain(..) {
            self.accept(q, now, n);
        }
        self.inbox = inbox;
        let mut woken = std::mem::take(&mut self.woken);
        self.bell.take_woken(&mut woken);
        for t in woken.drain(..) {
            let (_, gen, slot) = untoken(t);
            self.wake(q, now, slot, gen);
        }
        self.woken = woken;
        // The connections that yielded before this turn; those that yield now go next turn.
        let mut running = std::mem::take(&mut self.running);
        std::mem::swap(&mut running, &mut self.again);
        for (slot, gen) in running.drain(..) {
            if let Some(Slot { gen: g, conn: Some((c, _)) }) = self.slots.get_mut(slot as usize) {
                if *g == gen {
                    c.queued = false;
                }
            }
            self.wake(q, now, slot, gen);
        }
        self.running = running;
        if idle > 0 && now != self.last_scan {
            self.last_scan = now;
            self.scan_idle(q, now, idle);
        }
    }

    fn wake(&mut self, q: &mut Queue<'_>, now: u32, slot: u32, gen: u32) {
        let env = self.c.env(now);
        let fate = event(&mut self.slots, &env, q, slot, gen, |c, env, q| c.on_wake(env, q));
        self.after(slot, gen, fate);
    }

    fn scan_idle(&mut self, q: &mut Queue<'_>, now: u32, idle: u32) {
        for slot in 0..self.slots.len() as u32 {
            let env = self.c.env(now);
            let gen = self.slots[slot as usize].gen;
            let fate = event(&mut self.slots, &env, q, slot, gen, |c, env, q| c.idle_check(env, q, idle));
            self.after(slot, gen, fate);
        }
    }

    /// A connection from the accept thread: a slot, a session, a receive armed.
    fn accept(&mut self, q: &mut Queue<'_>, now: u32, n: NewConn) {
        let fd: RawFd = n.fd.into_raw_fd();
        if self.shared.shutting_down.load(std::sync::atomic::Ordering::SeqCst) {
            // Accepted during a stop (Shared::drain shut the others' reading side): it is
            // served for what it sent before, then sees the end of the stream.
            // SAFETY: the socket just handed over, open.
            unsafe { libc::shutdown(fd, libc::SHUT_RD) };
        }
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(Slot { gen: 0, conn: None });
            self.slots.len() as u32 - 1
        });
        let gen = self.slots[slot as usize].gen;
        let session = Session::new(self.shared, n.info);
        let env = self.c.env(now);
        let c = UConn::new(fd, slot, gen, session, &env, q);
        self.slots[slot as usize].conn = Some((c, n.id));
    }
}

/// Run `f` on the connection in `slot` if it is still generation `gen`. A panic in it (a bug
/// in request processing) closes that connection only, as a panicking task does on epoll;
/// the worker and its other connections go on.
fn event(
    slots: &mut [Slot],
    env: &Env<'_>,
    q: &mut Queue<'_>,
    slot: u32,
    gen: u32,
    f: impl FnOnce(&mut UConn, &Env<'_>, &mut Queue<'_>) -> Fate,
) -> Fate {
    let Some(Slot { gen: g, conn: Some((c, _)) }) = slots.get_mut(slot as usize) else { return Fate::Idle };
    if *g != gen {
        return Fate::Idle;
    }
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(c, env, q))) {
        Ok(fate) => fate,
        // (The panic hook has logged it.)
        Err(_) => c.poison(env, q),
    }
}
