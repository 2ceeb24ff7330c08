//! The query digest table (ProxySQL's `stats_mysql_query_digest`) of a query cache, whatever
//! its database: per normalized statement (literals as `?` for MySQL, `$n` for PostgreSQL),
//! how often it ran, how it was answered (cache hit, miss filled from the backend, not
//! cached and why, write), the backend time of misses and the bytes of replies.
//!
//! Bounded: at most [`MAX_DIGESTS`] statements are tracked; later new ones count in one
//! `(other statements)` row. The MySQL cache (`querycache`) and the PostgreSQL one
//! (`pg-proxy`) each keep one; the server shows them as `stats queries`, on the status page
//! and as metrics.

use std::collections::HashMap;

use parking_lot::Mutex;

/// The digest key's hash: fixed-seed, stable within the process.
fn hash64(b: &[u8]) -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = foldhash::fast::FixedState::with_seed(0x9e37_79b9_7f4a_7c15).build_hasher();
    h.write(b);
    h.finish()
}

/// Most distinct statements tracked.
pub const MAX_DIGESTS: usize = 2000;
/// Longest statement text kept per row (bytes).
const MAX_TEXT: usize = 240;
const SHARDS: usize = 16;

/// How one execution was answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Served from the cache.
    Hit,
    /// A cacheable read answered by the backend (and stored if it could be).
    Miss,
    /// A read not cached, and the rule that said so.
    NotCached(&'static str),
    /// A write (it invalidated what it may change).
    Write,
    /// A cacheable read answered by the backend and not stored: its statement's results do
    /// not pay back (the adaptive bypass, `crate::bypass`).
    Bypassed,
    /// Anything else (SET, USE, transaction control, ...).
    Other,
}

/// One row of the table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DigestStats {
    /// The digest's key (a hash of its text; 0 for the overflow row).
    pub id: u64,
    /// The digest text (literals as `?`), truncated.
    pub text: String,
    /// Executions.
    pub count: u64,
    /// Cache hits.
    pub hits: u64,
    /// Cacheable reads answered by the backend.
    pub misses: u64,
    /// Reads not cached.
    pub not_cached: u64,
    /// Why the last not-cached execution was not cached.
    pub reason: &'static str,
    /// Writes.
    pub writes: u64,
    /// Total backend time of misses, microseconds.
    pub backend_us: u64,
    /// Total bytes of replies (hits and misses).
    pub bytes: u64,
    /// Cached results of this statement dropped by invalidations (rows or tables it read
    /// changed; not counted: drop-everything invalidations).
    pub invalidations: u64,
    /// Cacheable reads answered by the backend and not stored because the statement was
    /// bypassed (its results were invalidated before they were read).
    pub bypassed: u64,
}

impl DigestStats {
    /// Counts how one execution was answered, its backend time and reply bytes.
    fn tally(&mut self, outcome: Outcome, backend_us: u64, bytes: u64) {
        self.backend_us += backend_us;
        self.bytes += bytes;
        match outcome {
            Outcome::Hit => self.hits += 1,
            Outcome::Miss => self.misses += 1,
            Outcome::Bypassed => self.bypassed += 1,
            Outcome::NotCached(r) => {
                self.not_cached += 1;
                self.reason = r;
            }
            Outcome::Write => self.writes += 1,
            Outcome::Other => {}
        }
    }
}

/// The table (see the module doc).
pub struct Digests {
    shards: Box<[Mutex<HashMap<u64, DigestStats>>]>,
    other: Mutex<DigestStats>,
}

impl Default for Digests {
    fn default() -> Self {
        Digests {
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            other: Mutex::new(DigestStats { text: "(other statements)".into(), ..DigestStats::default() }),
        }
    }
}

impl Digests {
    /// The key of a digest.
    pub fn key(digest: &[u8]) -> u64 {
        hash64(digest)
    }

    /// How a statement counted by [`Digests::record`] was then answered (a hit, a miss with
    /// its backend time, not cached and why, a write), with the reply's bytes.
    pub fn answered(&self, key: u64, outcome: Outcome, backend_us: u64, bytes: u64) {
        let mut shard = self.shards[(key >> 60) as usize % SHARDS].lock();
        let mut other;
        let row = match shard.get_mut(&key) {
            Some(r) => r,
            None => {
                other = self.other.lock();
                &mut *other
            }
        };
        row.tally(outcome, backend_us, bytes);
    }

    /// A cached result of the statement with key `key` was invalidated.
    pub fn invalidated(&self, key: u64) {
        let mut shard = self.shards[(key >> 60) as usize % SHARDS].lock();
        match shard.get_mut(&key) {
            Some(row) => row.invalidations += 1,
            None => {
                drop(shard);
                self.other.lock().invalidations += 1;
            }
        }
    }

    /// Record one execution of the statement with digest key `key` (`text`: its digest,
    /// used when the row is new).
    pub fn record(&self, key: u64, text: &[u8], outcome: Outcome, backend_us: u64, bytes: u64) {
        self.record_with(key, || text.to_vec(), outcome, backend_us, bytes)
    }

    /// [`Digests::record`], the row's text made by `text` only when the row is new.
    pub fn record_with(&self, key: u64, text: impl FnOnce() -> Vec<u8>, outcome: Outcome, backend_us: u64, bytes: u64) {
        let per = MAX_DIGESTS / SHARDS;
        let mut shard = self.shards[(key >> 60) as usize % SHARDS].lock();
        let full = shard.len() >= per && !shard.contains_key(&key);
        let mut other;
        let row = if full {
            other = self.other.lock();
            &mut *other
        } else {
            shard.entry(key).or_insert_with(|| {
                let text = text();
                let cut = text.len().min(MAX_TEXT);
                let text = pretty(&String::from_utf8_lossy(&text[..cut]));
                DigestStats { id: key, text, ..DigestStats::default() }
            })
        };
        row.count += 1;
        row.tally(outcome, backend_us, bytes);
    }

    /// The `n` rows with the most executions (the overflow row included if it has any).
    pub fn top(&self, n: usize) -> Vec<DigestStats> {
        let mut all: Vec<DigestStats> =
            self.shards.iter().flat_map(|s| s.lock().values().cloned().collect::<Vec<_>>()).collect();
        let other = self.other.lock().clone();
        if other.count > 0 {
            all.push(other);
        }
        all.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.text.cmp(&b.text)));
        all.truncate(n);
        all
    }

    /// Forget everything (`stats reset`).
    pub fn clear(&self) {
        for s in self.shards.iter() {
            s.lock().clear();
        }
        *self.other.lock() = DigestStats { text: "(other statements)".into(), ..DigestStats::default() };
    }
}

/// Row `i` (from 1) of a digest table as `stats` lines named `<prefix>:<i>:<field>` (what
/// `stats queries` and `stats pg_queries` print).
pub fn write_row(prefix: &str, i: usize, d: &DigestStats, sink: &mut dyn engine::stats::StatSink) {
    use engine::stats::Kind;
    let f = |field: &str| format!("{prefix}:{i}:{field}");
    sink.stat(&f("text"), Kind::Info, &d.text.replace(['\r', '\n'], " "));
    sink.stat(&f("count"), Kind::Counter, &d.count);
    sink.stat(&f("hits"), Kind::Counter, &d.hits);
    sink.stat(&f("misses"), Kind::Counter, &d.misses);
    sink.stat(&f("not_cached"), Kind::Counter, &d.not_cached);
    sink.stat(&f("not_cached_reason"), Kind::Info, &d.reason);
    sink.stat(&f("writes"), Kind::Counter, &d.writes);
    sink.stat(&f("backend_us"), Kind::Counter, &d.backend_us);
    sink.stat(&f("bytes"), Kind::Counter, &d.bytes);
    sink.stat(&f("invalidations"), Kind::Counter, &d.invalidations);
    sink.stat(&f("bypassed"), Kind::Counter, &d.bypassed);
}

/// A digest as people write SQL: no spaces around `.`, before `,` or inside parentheses.
fn pretty(digest: &str) -> String {
    digest.replace(" . ", ".").replace(" , ", ", ").replace("( ", "(").replace(" )", ")")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_digests() {
        assert_eq!(
            pretty("SELECT NOW ( ) , v FROM qc . t WHERE id IN ( ? , ? )"),
            "SELECT NOW (), v FROM qc.t WHERE id IN (?, ?)"
        );
    }

    #[test]
    fn counts_and_bounds() {
        let d = Digests::default();
        let a = b"SELECT c FROM t WHERE id = ?";
        d.record(Digests::key(a), a, Outcome::Other, 0, 0);
        d.answered(Digests::key(a), Outcome::Miss, 100, 10);
        d.record(Digests::key(a), a, Outcome::Other, 0, 0);
        d.answered(Digests::key(a), Outcome::Hit, 0, 10);
        d.record(Digests::key(a), a, Outcome::NotCached("user or system variable"), 0, 0);
        let top = d.top(5);
        assert_eq!(top[0].count, 3);
        assert_eq!((top[0].hits, top[0].misses, top[0].not_cached), (1, 1, 1));
        assert_eq!((top[0].backend_us, top[0].bytes, top[0].reason), (100, 20, "user or system variable"));
        for i in 0..3 * MAX_DIGESTS {
            let t = format!("SELECT {i}");
            d.record(Digests::key(t.as_bytes()), t.as_bytes(), Outcome::Other, 0, 0);
        }
        let all = d.top(usize::MAX);
        assert!(all.len() <= MAX_DIGESTS + 1, "{}", all.len());
        let total: u64 = all.iter().map(|r| r.count).sum();
        assert_eq!(total, 3 + 3 * MAX_DIGESTS as u64, "nothing is lost: the overflow row counts it");
    }
}
