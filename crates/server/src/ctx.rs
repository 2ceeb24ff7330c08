//! What a command executor gets to work with.

use std::cell::Cell;

use crate::durable::Acks;
use crate::pending::Job;
use crate::shared::{ConnInfo, Shared, WorkerStats};

/// The shared server, this worker's counters and this connection.
pub struct Ctx<'a> {
    /// Server-wide state.
    pub shared: &'a Shared,
    /// Counters of the worker running this connection.
    pub worker: &'a WorkerStats,
    /// This connection.
    pub conn: &'a ConnInfo,
    /// The SQL container this connection is bound to (`bind`, `get @@name`, or a mapped
    /// key with `plain_keys = "default_container"`).
    pub bound: Cell<Option<usize>>,
    /// The writes whose replies wait in the output buffer for the disk tier.
    pub acks: Acks,
}

impl<'a> Ctx<'a> {
    /// A connection's context, bound to no container yet (its plain keys may still go to
    /// the default container: `containers::Sql::binding`).
    pub fn new(shared: &'a Shared, worker: &'a WorkerStats, conn: &'a ConnInfo) -> Ctx<'a> {
        Ctx { shared, worker, conn, bound: Cell::new(None), acks: Acks::default() }
    }
}

/// What the connection does after a command (or a batch of them).
pub enum Flow {
    /// Keep reading.
    Continue,
    /// Send what was written, then close (`quit`, fatal protocol errors).
    Close,
    /// The command's reply comes from a slow tier: await the job, append its reply, go on
    /// with the buffer after the bytes consumed (`crate::pending`).
    Pending(Job),
}

impl Flow {
    /// Is this [`Flow::Continue`]?
    pub fn is_continue(&self) -> bool {
        matches!(self, Flow::Continue)
    }
}
