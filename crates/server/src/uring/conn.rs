//! One memcached connection on a ring: the same [`Session`] as the epoll path, driven by
//! completions instead of awaits.
//!
//! Input arrives from the multishot receive in provided buffers and is run straight from
//! there; only the start of an incomplete request (or input that arrived while the
//! connection waits) is copied into a lent buffer of its own. Replies go to `pend`; when no
//! send is in flight, `pend` becomes `out` and one `Send` carries all of it, so a loop turn
//! sends once per connection whatever number of requests it ran. What the epoll loop
//! awaits becomes a state here: the disk tier's acknowledgement of the writes whose replies
//! are in `pend`, a container's reply (a [`Job`]), the rest of the input after `-R`
//! requests. While a connection waits, or its client does not read its replies, it runs no
//! more requests; once [`INPUT_HIGH`] bytes wait unread it stops receiving (memcached stops
//! reading a connection it cannot write to), so its memory stays bounded.

use std::future::Future;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use io_uring::{opcode, squeue, types};

use crate::pending::Job;
use crate::rbuf;
use crate::session::{self, Session, Step};
use crate::shared::{Shared, WorkerStats};
use crate::uring::bell::{self, Bell};

/// Replies waiting behind a send in flight, beyond which no more requests run until it
/// completes.
const PEND_HIGH: usize = 256 * 1024;
/// Input waiting while the connection cannot run it, beyond which it stops receiving.
pub const INPUT_HIGH: usize = 64 * 1024;

/// What a completion's `user_data` is about: its kind in the top byte, then the slot's
/// generation (24 bits) and the slot.
pub const RECV: u64 = 1;
/// A send's completion.
pub const SEND: u64 = 2;
/// The doorbell's eventfd read.
pub const BELL: u64 = 3;
/// A cancellation's own completion (nothing to do).
pub const CANCEL: u64 = 4;

/// `user_data` for an operation of `kind` on slot `slot`, generation `gen`.
#[inline]
pub fn token(kind: u64, slot: u32, gen: u32) -> u64 {
    kind << 56 | ((gen as u64) & 0xff_ffff) << 32 | slot as u64
}

/// The kind, generation and slot of a `user_data`.
#[inline]
pub fn untoken(t: u64) -> (u64, u32, u32) {
    (t >> 56, ((t >> 32) & 0xff_ffff) as u32, t as u32)
}

/// What the worker's loop provides to a connection.
pub struct Env<'a> {
    /// The server.
    pub shared: &'a Shared,
    /// This worker's counters.
    pub stats: &'a WorkerStats,
    /// The worker's doorbell (wakers of this worker's connections ring it).
    pub bell: &'a Arc<Bell>,
    /// The runtime whose context futures are polled in (a container's reply may use
    /// tokio's timers or sockets; that runtime's thread drives them).
    pub rt: &'a tokio::runtime::Handle,
    /// The clock's now, once per loop turn.
    pub now: u32,
    /// The buffer group the receives pick from.
    pub group: u16,
}

/// Where the submissions of a loop turn go.
pub trait Submit {
    /// Queue one submission (submitted with the turn's `io_uring_enter`).
    fn push(&mut self, e: squeue::Entry);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Recv {
    Off,
    Live,
    Cancelling,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Closing {
    /// Serving.
    Open,
    /// `quit` or a fatal protocol error: send what was written, then close.
    AfterReplies,
    /// Close as soon as nothing is in flight (send error, reset, idle timeout, stop).
    Now,
}

type Ack = Pin<Box<dyn Future<Output = Option<u64>> + Send>>;

enum Wait {
    None,
    /// The disk tier's acknowledgement of the writes behind the replies in `pend`.
    Durable(Ack),
    /// A reply from a slow tier.
    Job(Job),
}

/// What became of the connection after an event.
#[derive(PartialEq, Eq, Debug)]
pub enum Fate {
    /// Waiting for I/O or a wake-up.
    Idle,
    /// It yielded after `-R` requests: run it again next turn.
    Again,
    /// Nothing in flight and closing: the worker closes the socket and frees the slot.
    Closed,
}

/// One connection.
pub struct UConn {
    fd: RawFd,
    slot: u32,
    gen: u32,
    session: Session,
    /// Input not run yet (a lent buffer while not empty).
    input: Vec<u8>,
    /// `input` holds the start of an incomplete request only: run it again once more arrives.
    stalled: bool,
    /// Replies not handed to the kernel yet.
    pend: Vec<u8>,
    /// Replies being sent: `out[sent..]` still to go.
    out: Vec<u8>,
    sent: usize,
    sending: bool,
    recv: Recv,
    /// The client closed its side: no more input; close once what was read is answered.
    eof: bool,
    closing: Closing,
    wait: Wait,
    /// A reply from a slow tier that waits for the acknowledgement of the replies before it.
    job: Option<Job>,
    yielded: bool,
    /// On the worker's list of connections to run again next turn.
    pub queued: bool,
    /// A cancellation of the send in flight was asked for.
    send_cancelled: bool,
    last_input: u32,
    waker: Option<Waker>,
}

impl UConn {
    /// A connection on socket `fd` in slot `slot` (generation `gen`), receiving at once.
    pub fn new(fd: RawFd, slot: u32, gen: u32, session: Session, env: &Env<'_>, q: &mut impl Submit) -> UConn {
        let mut c = UConn {
            fd,
            slot,
            gen,
            session,
            input: Vec::new(),
            stalled: false,
            pend: Vec::new(),
            out: Vec::new(),
            sent: 0,
            sending: false,
            recv: Recv::Off,
            eof: false,
            closing: Closing::Open,
            wait: Wait::None,
            job: None,
            yielded: false,
            queued: false,
            send_cancelled: false,
            last_input: env.now,
            waker: None,
        };
        c.reconcile(env, q);
        c
    }

    /// The socket.
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// The session (its `stats conns` entry, for closing).
    pub fn session(&self) -> &Session {
        &self.session
    }

    fn token(&self, kind: u64) -> u64 {
        token(kind, self.slot, self.gen)
    }

    /// Bytes received (from a provided buffer, handed back by the caller after this).
    pub fn on_data(&mut self, env: &Env<'_>, q: &mut impl Submit, data: &[u8]) -> Fate {
        if self.closing != Closing::Open {
            return self.drive(env, q);
        }
        self.session.received(env.shared, env.stats, data.len());
        self.last_input = env.now;
        if self.input.is_empty() && !self.blocked() && !self.yielded {
            // The usual case: run the requests straight from the kernel's buffer.
            let used = self.run(env, data);
            if used < data.len() {
                let stalled = self.stalled;
                self.keep(&data[used..]);
                self.stalled = stalled;
            }
        } else {
            self.keep(data);
        }
        self.drive(env, q)
    }

    /// The multishot receive ended with `res` (0: the client closed; -ENOBUFS: out of
    /// provided buffers, armed again; -ECANCELED: cancelled by us).
    pub fn on_recv_end(&mut self, env: &Env<'_>, q: &mut impl Submit, res: i32) -> Fate {
        self.recv = Recv::Off;
        if res == 0 {
            self.eof = true;
        } else if res < 0 && res != -libc::ENOBUFS && res != -libc::ECANCELED {
            log::debug!("{}: receive: {}", self.session.info().addr, std::io::Error::from_raw_os_error(-res));
            self.closing = Closing::Now;
        }
        self.drive(env, q)
    }

    /// A send completed with `res` (bytes sent, or -errno).
    pub fn on_send(&mut self, env: &Env<'_>, q: &mut impl Submit, res: i32) -> Fate {
        self.sending = false;
        if res < 0 {
            if res != -libc::ECANCELED {
                log::debug!("{}: send: {}", self.session.info().addr, std::io::Error::from_raw_os_error(-res));
            }
            self.closing = Closing::Now;
            self.out.clear();
            return self.drive(env, q);
        }
        env.stats.bytes_written.fetch_add(res as u64, Ordering::Relaxed);
        self.sent += res as usize;
        if self.sent < self.out.len() && self.closing != Closing::Now {
            self.send_rest(q);
            return Fate::Idle;
        }
        self.out.clear();
        self.sent = 0;
        self.drive(env, q)
    }

    /// A future it waits for can make progress, or it yielded last turn: go on.
    pub fn on_wake(&mut self, env: &Env<'_>, q: &mut impl Submit) -> Fate {
        self.yielded = false;
        self.drive(env, q)
    }

    /// Idle past `-o idle_timeout` (`secs`) while waiting for input: close.
    pub fn idle_check(&mut self, env: &Env<'_>, q: &mut impl Submit, secs: u32) -> Fate {
        let waiting = self.closing == Closing::Open && !self.sending && !self.busy() && self.pend.is_empty();
        if waiting && env.now.saturating_sub(self.last_input) >= secs {
            self.closing = Closing::Now;
            return self.drive(env, q);
        }
        Fate::Idle
    }

    /// Request processing panicked on this connection: close it, dropping what it waits for
    /// and its unsent replies (in-flight operations are cancelled and waited for first).
    pub fn poison(&mut self, env: &Env<'_>, q: &mut impl Submit) -> Fate {
        self.closing = Closing::Now;
        self.wait = Wait::None;
        self.job = None;
        self.pend.clear();
        self.drive(env, q)
    }

    /// Waiting for the disk tier or a container's reply.
    fn busy(&self) -> bool {
        !matches!(self.wait, Wait::None) || self.job.is_some()
    }

    /// It may not run more requests now.
    fn blocked(&self) -> bool {
        self.busy() || (self.sending && self.pend.len() >= PEND_HIGH)
    }

    /// Keep input that cannot run now.
    fn keep(&mut self, data: &[u8]) {
        if self.input.capacity() == 0 {
            self.input = rbuf::take();
        }
        self.input.extend_from_slice(data);
        self.stalled = false;
    }

    /// Run the requests in `data` into `pend` until one must wait; returns the bytes used.
    fn run(&mut self, env: &Env<'_>, data: &[u8]) -> usize {
        if self.pend.capacity() == 0 {
            self.pend = rbuf::take();
        }
        let (used, step) = self.session.run(env.shared, env.stats, data, &mut self.pend);
        self.stalled = false;
        match step {
            Step::Read => self.stalled = true,
            Step::Yield => {
                env.stats.conn_yields.fetch_add(1, Ordering::Relaxed);
                self.yielded = true;
            }
            Step::Pending(job) => self.job = Some(job),
            Step::Close => self.closing = Closing::AfterReplies,
        }
        used
    }

    /// Make all the progress that can be made now: finish waits, acknowledge, send, run
    /// kept input; then arm or cancel the receive, and say whether it can be closed.
    fn drive(&mut self, env: &Env<'_>, q: &mut impl Submit) -> Fate {
        loop {
            if self.closing == Closing::Now {
                break;
            }
            if !self.poll_wait(env) {
                break;
            }
            if let (Some(disk), true) = (&env.shared.disk, matches!(self.wait, Wait::None)) {
                let seq = self.session.ack_seq();
                if seq > 0 {
                    self.wait = Wait::Durable(Box::pin(session::durable(disk.clone(), seq)));
                    continue;
                }
            }
            self.flush(q);
            if let Some(job) = self.job.take() {
                self.wait = Wait::Job(job);
                continue;
            }
            let can_run = self.closing == Closing::Open || self.eof;
            if can_run && !self.stalled && !self.yielded && !self.input.is_empty() && !self.blocked() {
                let input = std::mem::take(&mut self.input);
                let used = self.run(env, &input);
                self.input = input;
                self.input.drain(..used);
                if self.input.is_empty() {
                    rbuf::give(std::mem::take(&mut self.input));
                }
                continue;
            }
            break;
        }
        self.settle_buffers();
        self.reconcile(env, q);
        if self.closing == Closing::Now {
            if self.sending && !self.send_cancelled {
                // A client that does not read would hold the connection forever.
                q.push(opcode::AsyncCancel::new(self.token(SEND)).build().user_data(token(CANCEL, 0, 0)));
                self.send_cancelled = true;
            }
            return if self.sending || self.recv != Recv::Off { Fate::Idle } else { Fate::Closed };
        }
        if self.yielded {
            Fate::Again
        } else {
            Fate::Idle
        }
    }

    /// Poll what the connection waits for; true once nothing is left to wait for.
    fn poll_wait(&mut self, env: &Env<'_>) -> bool {
        if matches!(self.wait, Wait::None) {
            return true;
        }
        let waker = self.waker.get_or_insert_with(|| bell::waker(env.bell, token(RECV, self.slot, self.gen))).clone();
        let mut cx = Context::from_waker(&waker);
        let _rt = env.rt.enter();
        match &mut self.wait {
            Wait::None => true,
            Wait::Durable(f) => match f.as_mut().poll(&mut cx) {
                Poll::Pending => false,
                Poll::Ready(failed) => {
                    self.wait = Wait::None;
                    self.session.settle(env.shared, failed, &mut self.pend);
                    true
                }
            },
            Wait::Job(f) => match f.as_mut().poll(&mut cx) {
                Poll::Pending => false,
                Poll::Ready(reply) => {
                    self.wait = Wait::None;
                    self.pend.extend_from_slice(&reply);
                    true
                }
            },
        }
    }

    /// With no send in flight, send everything written so far in one `Send`.
    fn flush(&mut self, q: &mut impl Submit) {
        if self.sending || self.pend.is_empty() {
            return;
        }
        std::mem::swap(&mut self.out, &mut self.pend);
        self.sent = 0;
        self.send_rest(q);
    }

    fn send_rest(&mut self, q: &mut impl Submit) {
        let rest = &self.out[self.sent..];
        // The buffer is not touched until the send's completion (`sending`).
        let e = opcode::Send::new(types::Fd(self.fd), rest.as_ptr(), rest.len() as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(self.token(SEND));
        q.push(e);
        self.sending = true;
    }

    /// Everything answered and sent: the lent buffers go back (an idle connection holds none).
    fn settle_buffers(&mut self) {
        if !self.sending && self.pend.is_empty() {
            if self.out.capacity() > 0 {
                rbuf::give(std::mem::take(&mut self.out));
            }
            if self.pend.capacity() > 0 {
                rbuf::give(std::mem::take(&mut self.pend));
            }
        }
        if self.closing == Closing::Now && self.input.capacity() > 0 {
            rbuf::give(std::mem::take(&mut self.input));
        }
    }

    /// Arm the receive if the connection wants input, cancel it if it must stop reading;
    /// decide whether it is time to close.
    fn reconcile(&mut self, env: &Env<'_>, q: &mut impl Submit) {
        let answered = !self.sending && !self.busy() && self.pend.is_empty();
        let runnable = !self.stalled && !self.input.is_empty();
        match self.closing {
            Closing::AfterReplies if answered => self.closing = Closing::Now,
            Closing::Open if self.eof && answered && !runnable && !self.yielded => self.closing = Closing::Now,
            _ => {}
        }
        let want = self.closing == Closing::Open && !self.eof && !(self.blocked() && self.input.len() >= INPUT_HIGH);
        match self.recv {
            Recv::Off if want => {
                let e = opcode::RecvMulti::new(types::Fd(self.fd), env.group).build();
                q.push(e.user_data(self.token(RECV)));
                self.recv = Recv::Live;
            }
            Recv::Live if !want => {
                q.push(opcode::AsyncCancel::new(self.token(RECV)).build().user_data(token(CANCEL, 0, 0)));
                self.recv = Recv::Cancelling;
            }
            _ => {}
        }
    }
}
