//! What a command executor gets to work with.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::Pin;

use crate::durable::Acks;
use crate::shared::{ConnInfo, Shared, WorkerStats};

/// A reply that needs a slow tier (a SQL container today): an owned future that resolves
/// to the command's reply bytes, awaited by the connection in request order.
pub type Job = Pin<Box<dyn Future<Output = Vec<u8>> + Send>>;

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
    /// A container command handed back to the connection loop (`Flow::Job`).
    pub job: RefCell<Option<Job>>,
    /// The writes whose replies wait in the output buffer for the disk tier.
    pub acks: Acks,
}

impl<'a> Ctx<'a> {
    /// A connection's context, bound to no container yet (its plain keys may still go to
    /// the default container: `containers::Sql::binding`).
    pub fn new(shared: &'a Shared, worker: &'a WorkerStats, conn: &'a ConnInfo) -> Ctx<'a> {
        Ctx { shared, worker, conn, bound: Cell::new(None), job: RefCell::new(None), acks: Acks::default() }
    }
}

/// What the connection does after a batch of commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// Send what was written, then close (`quit`, fatal protocol errors).
    Close,
    /// A container command is waiting in `Ctx::job`: await it, append its reply, go on
    /// with the buffer after the bytes consumed.
    Job,
}
