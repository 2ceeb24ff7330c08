//! Changes accepted but not yet committed to disk.
//!
//! The queue keeps them in order for the committer, and `latest` keeps the newest state
//! of each queued key so that a read never falls through to an older version on disk.
//! The queue is bounded in bytes: a writer that outruns the disk waits (backpressure).

use std::collections::HashMap;
use std::sync::Arc;

use crate::record::Record;

/// One queued change.
#[derive(Debug, Clone)]
pub enum Op {
    /// Store a record (and whether it replaces an existing item).
    Put(Vec<u8>, Arc<Record>, bool),
    /// Remove a key.
    Delete(Vec<u8>),
    /// Drop everything.
    Flush,
    /// Remember a delayed `flush_all` deadline (unix time).
    FlushAt(i64),
}

impl Op {
    /// Bytes this change holds in memory.
    pub fn size(&self) -> usize {
        match self {
            Op::Put(k, r, _) => k.len() + r.value.len() + 64,
            Op::Delete(k) => k.len() + 32,
            Op::Flush | Op::FlushAt(_) => 16,
        }
    }
}

/// The queue and the newest uncommitted state per key.
#[derive(Default)]
pub struct Pending {
    /// Changes in the order they were made, with their sequence numbers.
    pub ops: Vec<(u64, Op)>,
    /// Newest queued state of each key: `None` means deleted.
    pub latest: HashMap<Vec<u8>, (u64, Option<Arc<Record>>)>,
    /// Sequence number of a queued `Flush` (0: none): older data on disk is gone.
    pub flush_seq: u64,
    /// Last sequence number handed out.
    pub seq: u64,
    /// Bytes held by `ops`.
    pub bytes: usize,
}

impl Pending {
    /// Queue a change; returns its sequence number.
    pub fn push(&mut self, op: Op) -> u64 {
        self.push_with(|_| op)
    }

    /// Queue a change built from its sequence number; returns that number.
    pub fn push_with(&mut self, make: impl FnOnce(u64) -> Op) -> u64 {
        self.seq += 1;
        let seq = self.seq;
        let op = make(seq);
        match &op {
            Op::Put(k, r, _) => {
                self.latest.insert(k.clone(), (seq, Some(r.clone())));
            }
            Op::Delete(k) => {
                self.latest.insert(k.clone(), (seq, None));
            }
            Op::Flush => {
                self.latest.clear();
                self.flush_seq = seq;
            }
            Op::FlushAt(_) => {}
        }
        self.bytes += op.size();
        self.ops.push((seq, op));
        seq
    }

    /// What a read of `key` must see from the queue: `Some(state)` if the queue decides
    /// (`state` `None` = deleted or flushed), `None` to read the disk.
    pub fn lookup(&self, key: &[u8]) -> Option<Option<Arc<Record>>> {
        if let Some((_, state)) = self.latest.get(key) {
            return Some(state.clone());
        }
        if self.flush_seq != 0 {
            return Some(None);
        }
        None
    }

    /// Take everything queued (for the committer).
    pub fn take(&mut self) -> Vec<(u64, Op)> {
        self.bytes = 0;
        std::mem::take(&mut self.ops)
    }

    /// The committer has made everything up to `seq` readable from disk.
    pub fn committed(&mut self, seq: u64) {
        self.latest.retain(|_, (s, _)| *s > seq);
        if self.flush_seq <= seq {
            self.flush_seq = 0;
        }
    }
}
