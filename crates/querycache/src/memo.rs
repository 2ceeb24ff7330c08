//! The bounded memo of digest analyses: a repeated statement costs one lexer pass and
//! one hash lookup.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::analyze::analyze;
use crate::hash::hash64;
use crate::kind::Analysis;

const SHARDS: usize = 32;
/// Longer digests (bulk inserts) are analysed every time rather than kept, so the memo
/// holds at most 16384 x 4 KiB.
const MAX_DIGEST: usize = 4 << 10;

type Shard = RwLock<HashMap<u64, Vec<(Box<[u8]>, Arc<Analysis>)>>>;

/// digest → analysis, bounded by entry count (a full shard is emptied).
pub(crate) struct Memo {
    shards: Box<[Shard]>,
    per_shard: usize,
}

impl Memo {
    /// A memo holding about `capacity` digests.
    pub fn new(capacity: usize) -> Memo {
        Memo {
            shards: (0..SHARDS).map(|_| RwLock::new(HashMap::new())).collect(),
            per_shard: (capacity / SHARDS).max(16),
        }
    }

    /// The analysis of `digest`, computed once.
    pub fn get(&self, digest: &[u8]) -> Arc<Analysis> {
        if digest.len() > MAX_DIGEST {
            return Arc::new(analyze(digest));
        }
        let h = hash64(digest);
        let shard = &self.shards[(h >> 59) as usize % SHARDS];
        if let Some(v) = shard.read().get(&h) {
            if let Some((_, a)) = v.iter().find(|(d, _)| **d == *digest) {
                return a.clone();
            }
        }
        let a = Arc::new(analyze(digest));
        let mut w = shard.write();
        if w.len() >= self.per_shard {
            w.clear();
        }
        let v = w.entry(h).or_default();
        if !v.iter().any(|(d, _)| **d == *digest) {
            v.push((digest.into(), a.clone()));
        }
        a
    }
}
