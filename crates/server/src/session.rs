//! The protocol side of one memcached connection, with no I/O in it: bytes in, replies
//! out. This is the seam between the I/O back ends and the protocol front ends: the epoll
//! loop (`conn.rs`), the io_uring loop (`uring/`) and the UDP listener (`udp.rs`) all run
//! requests through [`Session::run`] and nothing else, so parsing, routing, the engine, the
//! composers, `-R`, the pending mechanism of container keys and the disk tier's
//! acknowledgements are written once, whatever carries the bytes.
//!
//! What a back end does around it: feed it what it read, send what it wrote, and obey the
//! [`Step`]: yield to other connections, await a [`Job`] (its reply goes after the replies
//! before it), or close. Before sending, replies of writes wait for the disk tier
//! ([`Session::ack_seq`], [`durable`], [`Session::settle`]).

use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::binary::{self, BinaryState};
use crate::ctx::{Ctx, Flow};
use crate::durable::Acks;
use crate::pending::Job;
use crate::shared::{ConnInfo, Shared, WorkerStats};
use crate::text::{self, TextState};
use config::Protocol;
use tier_disk::DiskTier;

enum Proto {
    Text(TextState),
    Binary(BinaryState),
}

/// What the connection does after [`Session::run`].
pub enum Step {
    /// Every complete request ran; the bytes not consumed are the start of an incomplete
    /// one: read more.
    Read,
    /// `-R` requests ran (memcached's `reqs_per_event`): send what was written, let the
    /// other connections run, then call again with the rest.
    Yield,
    /// A reply from a slow tier: once the replies before it are acknowledged, await the
    /// job, append its reply to the output, then call again with the rest.
    Pending(Job),
    /// Send what was written, then close (`quit`, a fatal protocol error).
    Close,
}

/// One connection's protocol state: which protocol it speaks and where it is in it, the
/// container it is bound to, and the writes whose replies wait for the disk tier.
pub struct Session {
    proto: Option<Proto>,
    bound: Option<usize>,
    acks: Acks,
    info: Arc<ConnInfo>,
}

impl Session {
    /// A new connection (`info`: its `stats conns` entry). The protocol is fixed by `-B`
    /// and `-Y`, or picked from the first byte read.
    pub fn new(shared: &Shared, info: Arc<ConnInfo>) -> Session {
        let proto = match shared.cfg.protocol {
            // With -Y every connection starts with the ASCII authentication exchange.
            _ if shared.auth.is_some() => Some(Proto::Text(TextState::default())),
            Protocol::Ascii => Some(Proto::Text(TextState::default())),
            Protocol::Binary => Some(Proto::Binary(BinaryState::default())),
            Protocol::Auto => None,
        };
        Session { proto, bound: None, acks: Acks::default(), info }
    }

    /// The connection's `stats conns` entry.
    pub fn info(&self) -> &Arc<ConnInfo> {
        &self.info
    }

    /// `n` bytes arrived: counted, and the connection's last command time set.
    #[inline]
    pub fn received(&self, shared: &Shared, worker: &WorkerStats, n: usize) {
        worker.bytes_read.fetch_add(n as u64, Ordering::Relaxed);
        self.info.last_cmd.store(shared.engine.clock().now(), Ordering::Relaxed);
    }

    /// Run the complete requests at the start of `input` (at most `-R` of them), appending
    /// their replies to `out`. Returns how many bytes were consumed and what to do next.
    pub fn run(&mut self, shared: &Shared, worker: &WorkerStats, input: &[u8], out: &mut Vec<u8>) -> (usize, Step) {
        let Some(&first) = input.first() else { return (0, Step::Read) };
        let mut ctx = Ctx::new(shared, worker, &self.info);
        ctx.bound = Cell::new(self.bound);
        std::mem::swap(&mut ctx.acks, &mut self.acks);
        let proto = self.proto.get_or_insert_with(|| {
            if first == protocol_memcache::binary::REQUEST_MAGIC {
                Proto::Binary(BinaryState::default())
            } else {
                Proto::Text(TextState::default())
            }
        });
        let mut budget = shared.cfg.reqs_per_event;
        let (used, flow) = match proto {
            Proto::Text(st) => text::process(input, st, &ctx, out, &mut budget),
            Proto::Binary(st) => binary::process(input, st, &ctx, out, &mut budget),
        };
        self.bound = ctx.bound.get();
        std::mem::swap(&mut ctx.acks, &mut self.acks);
        let step = match flow {
            Flow::Continue if budget == 0 => Step::Yield,
            Flow::Continue => Step::Read,
            Flow::Close => Step::Close,
            Flow::Pending(job) => Step::Pending(job),
        };
        (used, step)
    }

    /// The disk tier's number of the last write whose reply is in the output: wait for it
    /// with [`durable`] before sending (0: nothing to wait for).
    pub fn ack_seq(&self) -> u64 {
        self.acks.highest()
    }

    /// After [`durable`]: if the disk failed (`failed`: changes up to that number are
    /// durable), the replies of the writes that did not make it become errors (see
    /// `crate::durable`); the notes are cleared either way.
    pub fn settle(&mut self, shared: &Shared, failed: Option<u64>, out: &mut Vec<u8>) {
        if let Some(d) = failed {
            let line = crate::persistence::refusal(shared).unwrap_or(b"SERVER_ERROR persistence failed\r\n");
            self.acks.refuse_after(d, out, line);
        }
        self.acks.clear();
    }
}

/// Wait until the writes up to change `seq` may be acknowledged: fsynced in sync mode,
/// handed to the OS in async mode. `Some(d)` if the disk failed first, with changes up to
/// `d` durable.
pub async fn durable(disk: Arc<DiskTier>, seq: u64) -> Option<u64> {
    disk.wait_ack(seq).await.err()
}
