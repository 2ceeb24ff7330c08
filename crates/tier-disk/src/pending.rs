//! Changes accepted but not yet in fjall: queued for the log, and staged until ingested.
//!
//! A change is queued (`ops`, in order, for the committer to log) and at once becomes its
//! key's newest state in `staged`, so a read never falls through to an older version
//! on disk. The queue is bounded in bytes: a writer that outruns the disk waits
//! (backpressure). Once everything staged has been logged (`wal.rs`) and it is large,
//! the committer freezes it and the ingest thread (`ingest.rs`) writes it into fjall. A
//! read looks in `staged`, then `frozen`, then fjall: the first that knows the key
//! decides. A queued `flush_all` empties `staged` and hides `frozen` and fjall until the
//! committer has logged it and emptied fjall.

use std::sync::Arc;

use crate::entry::Entry;
pub use crate::states::States;

/// One queued change.
#[derive(Debug, Clone)]
pub enum Op {
    /// Store a key's record (and whether it replaces an existing item).
    Put(Entry, bool),
    /// Remove a key (the entry holds only the key).
    Delete(Entry),
    /// Drop everything.
    Flush,
    /// Remember a delayed `flush_all` deadline (unix time).
    FlushAt(i64),
}

impl Op {
    /// Bytes this change holds in the queue.
    pub fn size(&self) -> usize {
        match self {
            Op::Put(e, _) | Op::Delete(e) => e.size() + 16,
            Op::Flush | Op::FlushAt(_) => 16,
        }
    }
}

/// The queue and the newest state per key of everything not yet in fjall.
#[derive(Default)]
pub struct Pending {
    /// Changes not yet logged, in the order they were made, with their sequence numbers.
    pub ops: Vec<(u64, Op)>,
    /// Sequence number of a queued `Flush` (0: none): older data on disk is gone.
    pub flush_seq: u64,
    /// Last sequence number handed out.
    pub seq: u64,
    /// Bytes held by `ops`.
    pub bytes: usize,
    /// Newest state of each key changed since the last freeze, logged or still queued.
    pub staged: States,
    /// States the ingest thread is writing into fjall (readable until it is done).
    pub frozen: Option<Arc<States>>,
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
            Op::Put(e, _) | Op::Delete(e) => self.staged.insert(seq, e.clone()),
            Op::Flush => {
                self.staged.clear();
                self.flush_seq = seq;
            }
            Op::FlushAt(_) => {}
        }
        self.bytes += op.size();
        self.ops.push((seq, op));
        seq
    }

    /// What a read of `key` must see from memory: `Some(state)` if the staged or the
    /// frozen states decide (`state` is the put, `None` = deleted or flushed), `None` to
    /// read fjall.
    pub fn lookup(&self, key: &[u8]) -> Option<Option<Entry>> {
        let put = |(_, e): &(u64, Entry)| e.record().is_some().then(|| e.clone());
        if let Some(state) = self.staged.get(key) {
            return Some(put(state));
        }
        if self.flush_seq != 0 {
            return Some(None);
        }
        self.frozen.as_deref().and_then(|f| f.get(key)).map(put)
    }

    /// Whether a state newer than fjall's is held in memory for `key` (staged or frozen).
    pub fn holds(&self, key: &[u8]) -> bool {
        self.staged.contains(key) || self.frozen.as_deref().is_some_and(|f| f.contains(key))
    }

    /// Take everything queued (for the committer).
    pub fn take(&mut self) -> Vec<(u64, Op)> {
        self.bytes = 0;
        std::mem::take(&mut self.ops)
    }

    /// Put back a batch the committer took but could not write (the disk failed): it goes
    /// before anything queued since. Its states are still staged (or replaced by newer
    /// ones): nothing is frozen while changes are out of the queue unlogged.
    pub fn requeue(&mut self, batch: Vec<(u64, Op)>) {
        for (seq, op) in &batch {
            if matches!(op, Op::Flush) {
                self.flush_seq = self.flush_seq.max(*seq);
            }
            self.bytes += op.size();
        }
        let newer = std::mem::replace(&mut self.ops, batch);
        self.ops.extend(newer);
    }

    /// The committer has logged everything up to `last` (and, for a `Flush`, emptied
    /// fjall): a logged flush no longer hides fjall.
    pub fn logged(&mut self, last: u64) {
        if self.flush_seq <= last {
            self.flush_seq = 0;
        }
    }

    /// Stage changes replayed from the log at open, as if just logged.
    pub fn replayed(&mut self, ops: Vec<(u64, Op)>) {
        for (seq, op) in ops {
            match op {
                Op::Put(e, _) | Op::Delete(e) => self.staged.insert(seq, e),
                Op::Flush => self.staged.clear(),
                Op::FlushAt(_) => {}
            }
        }
    }

    /// Hand the staged states to the ingest thread (None if some are still being
    /// ingested, or nothing is staged). Only with nothing queued, so that every frozen
    /// state is in the log: the log files an ingestion covers are deleted after it.
    pub fn freeze(&mut self) -> Option<Arc<States>> {
        debug_assert!(self.ops.is_empty(), "frozen states must all be logged");
        if self.frozen.is_some() || self.staged.is_empty() {
            return None;
        }
        let f = Arc::new(std::mem::take(&mut self.staged));
        self.frozen = Some(f.clone());
        Some(f)
    }

    /// The frozen states are in fjall now.
    pub fn ingested(&mut self) -> Option<Arc<States>> {
        self.frozen.take()
    }

    /// Bytes held by the staged and frozen states.
    pub fn state_bytes(&self) -> usize {
        self.staged.bytes() + self.frozen.as_deref().map_or(0, States::bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;

    fn put(p: &mut Pending, k: &str) -> u64 {
        let r = Record { flags: 0, exptime: 0, cas: 1, stored: 0, seq: 0, bits: 0, value: k.as_bytes() };
        p.push(Op::Put(Entry::put(k.as_bytes(), &r), false))
    }

    /// A batch put back after a failed write goes first, and reads still see the
    /// newest state of each key.
    #[test]
    fn requeue_keeps_order_and_newest_state() {
        let mut p = Pending::default();
        put(&mut p, "a");
        put(&mut p, "b");
        let batch = p.take();
        let newer = put(&mut p, "b");
        p.push(Op::Delete(Entry::delete(b"c")));
        p.requeue(batch);
        let seqs: Vec<u64> = p.ops.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4]);
        assert!(p.lookup(b"a").is_some_and(|r| r.is_some()), "a is readable");
        assert_eq!(p.staged.get(b"b").map(|(s, _)| *s), Some(newer), "the newer b wins");
        assert!(p.bytes > 0);
    }

    /// A key's newest state is found in the staged, then the frozen states; a queued
    /// flush hides everything older.
    #[test]
    fn reads_see_the_newest_state_through_every_stage() {
        let mut p = Pending::default();
        put(&mut p, "a");
        put(&mut p, "b");
        assert!(p.lookup(b"a").is_some_and(|r| r.is_some()), "queued");
        let batch = p.take();
        p.logged(batch.last().unwrap().0);
        let frozen = p.freeze().expect("staged states to freeze");
        assert_eq!(frozen.len(), 2);
        assert!(p.freeze().is_none(), "one frozen set at a time");
        p.push(Op::Delete(Entry::delete(b"a")));
        assert!(p.lookup(b"a").is_some_and(|r| r.is_none()), "the queued delete wins over the frozen put");
        assert!(p.lookup(b"b").is_some_and(|r| r.is_some()), "frozen");
        p.push(Op::Flush);
        assert!(p.lookup(b"b").is_some_and(|r| r.is_none()), "a queued flush hides the frozen b");
        assert!(p.ingested().is_some());
        let batch = p.take();
        p.logged(batch.last().unwrap().0);
        assert!(p.staged.is_empty() && p.state_bytes() == 0);
        assert!(p.lookup(b"b").is_none(), "fjall decides now");
    }
}
