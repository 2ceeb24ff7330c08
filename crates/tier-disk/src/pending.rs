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

    /// Put back a batch the committer took but could not write (the disk failed): it goes
    /// before anything queued since, and reads see its changes again unless newer ones
    /// replaced them.
    pub fn requeue(&mut self, batch: Vec<(u64, Op)>) {
        for (seq, op) in &batch {
            match op {
                Op::Put(k, r, _) => {
                    let e = self.latest.entry(k.clone()).or_insert((0, None));
                    if e.0 < *seq {
                        *e = (*seq, Some(r.clone()));
                    }
                }
                Op::Delete(k) => {
                    let e = self.latest.entry(k.clone()).or_insert((0, None));
                    if e.0 < *seq {
                        *e = (*seq, None);
                    }
                }
                Op::Flush => {
                    self.latest.retain(|_, (s, _)| *s > *seq);
                    self.flush_seq = self.flush_seq.max(*seq);
                }
                Op::FlushAt(_) => {}
            }
            self.bytes += op.size();
        }
        let newer = std::mem::replace(&mut self.ops, batch);
        self.ops.extend(newer);
    }

    /// The committer has made everything up to `seq` readable from disk.
    pub fn committed(&mut self, seq: u64) {
        self.latest.retain(|_, (s, _)| *s > seq);
        if self.flush_seq <= seq {
            self.flush_seq = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(p: &mut Pending, k: &str) -> u64 {
        let r = Arc::new(Record { flags: 0, exptime: 0, cas: 1, stored: 0, seq: 0, bits: 0, value: k.into() });
        p.push(Op::Put(k.into(), r, false))
    }

    /// A batch put back after a failed write goes first, and reads see its changes
    /// unless something newer was queued meanwhile.
    #[test]
    fn requeue_keeps_order_and_newest_state() {
        let mut p = Pending::default();
        put(&mut p, "a");
        put(&mut p, "b");
        let batch = p.take();
        p.committed(2); // what the committer did before this change; requeue must undo it
        let newer = put(&mut p, "b");
        p.push(Op::Delete(b"c".to_vec()));
        p.requeue(batch);
        let seqs: Vec<u64> = p.ops.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4]);
        assert!(p.lookup(b"a").is_some_and(|r| r.is_some()), "a is readable from the queue again");
        assert_eq!(p.latest.get(&b"b"[..]).map(|(s, _)| *s), Some(newer), "the newer b wins");
        assert!(p.bytes > 0);
    }
}
