//! Changes accepted but not yet in fjall: queued, then staged, then frozen.
//!
//! The queue keeps them in order for the committer, and `latest` keeps the newest state
//! of each queued key so that a read never falls through to an older version on disk.
//! The queue is bounded in bytes: a writer that outruns the disk waits (backpressure).
//! Once the committer has written a batch to the write-ahead log (`wal.rs`), its changes
//! move to `staged`, the newest state per key of everything logged but not yet in
//! fjall's tables; the committer freezes `staged` when it is large and the ingest thread
//! (`ingest.rs`) writes it into fjall. A read looks in `latest`, `staged`, `frozen`,
//! then fjall: the first that knows the key decides.

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

/// Newest state of each key (`None`: deleted) with the sequence number that set it.
pub type States = HashMap<Vec<u8>, (u64, Option<Arc<Record>>)>;

/// The queue and the newest state per key of everything not yet in fjall.
#[derive(Default)]
pub struct Pending {
    /// Changes in the order they were made, with their sequence numbers.
    pub ops: Vec<(u64, Op)>,
    /// Newest queued state of each key: `None` means deleted.
    pub latest: States,
    /// Sequence number of a queued `Flush` (0: none): older data on disk is gone.
    pub flush_seq: u64,
    /// Last sequence number handed out.
    pub seq: u64,
    /// Bytes held by `ops`.
    pub bytes: usize,
    /// Newest state of each key written to the log and not yet frozen.
    pub staged: States,
    /// Bytes held by `staged`.
    pub staged_bytes: usize,
    /// States the ingest thread is writing into fjall (readable until it is done).
    pub frozen: Option<Arc<States>>,
    /// Bytes held by `frozen`.
    pub frozen_bytes: usize,
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

    /// What a read of `key` must see from memory: `Some(state)` if the queue, the staged
    /// or the frozen states decide (`state` `None` = deleted or flushed), `None` to read
    /// fjall.
    pub fn lookup(&self, key: &[u8]) -> Option<Option<Arc<Record>>> {
        if let Some((_, state)) = self.latest.get(key) {
            return Some(state.clone());
        }
        if self.flush_seq != 0 {
            return Some(None);
        }
        let frozen = self.frozen.as_deref().and_then(|f| f.get(key));
        self.staged.get(key).or(frozen).map(|(_, state)| state.clone())
    }

    /// Whether a state newer than fjall's is held in memory for `key` (staged or frozen).
    pub fn holds(&self, key: &[u8]) -> bool {
        self.latest.contains_key(key)
            || self.staged.contains_key(key)
            || self.frozen.as_deref().is_some_and(|f| f.contains_key(key))
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

    /// The committer has written `batch` to the log: its changes move to `staged`. A
    /// `Flush` in it empties `staged` (the committer has already emptied fjall, and no
    /// state is frozen then).
    pub fn committed(&mut self, batch: Vec<(u64, Op)>) {
        let Some(&(last, _)) = batch.last() else { return };
        for (seq, op) in batch {
            let (key, state) = match op {
                Op::Put(k, r, _) => (k, Some(r)),
                Op::Delete(k) => (k, None),
                Op::Flush => {
                    self.staged.clear();
                    self.staged_bytes = 0;
                    continue;
                }
                Op::FlushAt(_) => continue,
            };
            if self.latest.get(&key).is_some_and(|(s, _)| *s <= seq) {
                self.latest.remove(&key);
            }
            let klen = key.len();
            self.staged_bytes += state_size(klen, &state);
            if let Some((_, old)) = self.staged.insert(key, (seq, state)) {
                self.staged_bytes = self.staged_bytes.saturating_sub(state_size(klen, &old));
            }
        }
        if self.flush_seq <= last {
            self.flush_seq = 0;
        }
    }

    /// Hand the staged states to the ingest thread (None if some are still being
    /// ingested, or nothing is staged).
    pub fn freeze(&mut self) -> Option<Arc<States>> {
        if self.frozen.is_some() || self.staged.is_empty() {
            return None;
        }
        let f = Arc::new(std::mem::take(&mut self.staged));
        self.frozen_bytes = std::mem::take(&mut self.staged_bytes);
        self.frozen = Some(f.clone());
        Some(f)
    }

    /// The frozen states are in fjall now.
    pub fn ingested(&mut self) -> Option<Arc<States>> {
        self.frozen_bytes = 0;
        self.frozen.take()
    }
}

/// Bytes a staged state holds in memory.
fn state_size(key_len: usize, state: &Option<Arc<Record>>) -> usize {
    key_len + state.as_ref().map_or(0, |r| r.value.len()) + 96
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
        let newer = put(&mut p, "b");
        p.push(Op::Delete(b"c".to_vec()));
        p.requeue(batch);
        let seqs: Vec<u64> = p.ops.iter().map(|(s, _)| *s).collect();
        assert_eq!(seqs, vec![1, 2, 3, 4]);
        assert!(p.lookup(b"a").is_some_and(|r| r.is_some()), "a is readable from the queue again");
        assert_eq!(p.latest.get(&b"b"[..]).map(|(s, _)| *s), Some(newer), "the newer b wins");
        assert!(p.bytes > 0);
    }

    /// A key's newest state is found in the queue, then the staged, then the frozen
    /// states; a queued flush hides everything older.
    #[test]
    fn reads_see_the_newest_state_through_every_stage() {
        let mut p = Pending::default();
        put(&mut p, "a");
        put(&mut p, "b");
        let batch = p.take();
        p.committed(batch);
        assert!(p.latest.is_empty(), "committed changes leave the queue");
        assert!(p.lookup(b"a").is_some_and(|r| r.is_some()), "staged");
        let frozen = p.freeze().expect("staged states to freeze");
        assert_eq!(frozen.len(), 2);
        assert!(p.freeze().is_none(), "one frozen set at a time");
        p.push(Op::Delete(b"a".to_vec()));
        assert!(p.lookup(b"a").is_some_and(|r| r.is_none()), "the queued delete wins over the frozen put");
        assert!(p.lookup(b"b").is_some_and(|r| r.is_some()), "frozen");
        let batch = p.take();
        p.committed(batch);
        assert!(p.lookup(b"a").is_some_and(|r| r.is_none()), "the staged delete wins over the frozen put");
        p.push(Op::Flush);
        assert!(p.lookup(b"b").is_some_and(|r| r.is_none()), "a queued flush hides the frozen b");
        assert!(p.ingested().is_some());
        let batch = p.take();
        p.committed(batch);
        assert!(p.staged.is_empty() && p.staged_bytes == 0);
        assert!(p.lookup(b"b").is_none(), "fjall decides now");
    }
}
