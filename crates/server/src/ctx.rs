//! What a command executor gets to work with.

use crate::shared::{ConnInfo, Shared, WorkerStats};

/// The shared server, this worker's counters and this connection.
pub struct Ctx<'a> {
    /// Server-wide state.
    pub shared: &'a Shared,
    /// Counters of the worker running this connection.
    pub worker: &'a WorkerStats,
    /// This connection.
    pub conn: &'a ConnInfo,
}

/// What the connection does after a batch of commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// Send what was written, then close (`quit`, fatal protocol errors).
    Close,
}
