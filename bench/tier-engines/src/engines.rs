//! The two candidate engines behind one small trait, so every measurement
//! drives them through exactly the same code path.
//!
//! Record layout (value stored under the memcached key):
//!   [0..4)   flags   u32 LE
//!   [4..12)  exptime i64 LE
//!   [12..20) cas     u64 LE
//!   [20..28) wseq    u64 LE   (write sequence; also the "stored-time" order)
//!   [28..)   data
//! Seq index (optional): wseq (u64 BE) -> key, so the oldest-written item is
//! the first entry of the index.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub const HDR: usize = 28;
pub const SEQ_OFF: usize = 20;

pub fn seq_of(val: &[u8]) -> u64 {
    u64::from_le_bytes(val[SEQ_OFF..SEQ_OFF + 8].try_into().unwrap())
}

/// One mutation handed to the committer. `val` already carries the header;
/// the committer patches `wseq` in before the batch is written.
pub struct Put {
    pub key: Vec<u8>,
    pub val: Vec<u8>,
}

/// How the `wseq -> key` eviction index is maintained.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Idx {
    /// no index
    Off,
    /// each put deletes the item's previous wseq entry (needs the old value)
    Eager,
    /// each put only inserts its new wseq entry (blind write); stale entries
    /// are recognised and dropped at eviction time (data[key].wseq != wseq)
    Lazy,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Fjall,
    Redb,
    /// redb with quick-repair on every durable commit (2-phase commit +
    /// allocator state saved): slower commits, near-instant crash recovery.
    RedbQr,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Fjall => "fjall",
            Kind::Redb => "redb",
            Kind::RedbQr => "redb+qr",
        }
    }
    pub fn parse(s: &str) -> Kind {
        match s {
            "fjall" => Kind::Fjall,
            "redb" => Kind::Redb,
            "redb+qr" => Kind::RedbQr,
            _ => panic!("unknown engine {s}"),
        }
    }
}

pub trait Engine: Send + Sync {
    /// Write `puts` as ONE atomic batch/transaction. If `durable`, return only
    /// after it is on disk (fsync). `idx` says how wseq->key is maintained.
    fn write_batch(&self, puts: &[Put], durable: bool, idx: Idx);
    /// Point lookup; returns the value length (the bench does not need bytes).
    fn get(&self, key: &[u8]) -> Option<usize>;
    /// Evict the `n` oldest-written items (data + seq entries) in one
    /// non-durable batch, scanning the seq index from `from_seq`. A data item
    /// is only removed if its stored wseq still matches the index entry
    /// (works for both Eager and Lazy indexes). Returns (index entries
    /// consumed, next cursor).
    fn evict_oldest(&self, n: usize, from_seq: u64) -> (usize, u64);
    /// Drop everything, durably.
    fn flush_all(&self);
    /// Graceful shutdown work before drop (fjall: flush memtables so the
    /// journal is empty and the next open has nothing to replay).
    fn shutdown(&self) {}
    /// Wait (bounded) until background work (flush/compaction) is idle.
    fn settle(&self, _max: std::time::Duration) {}
}

pub fn open(kind: Kind, dir: &Path) -> Result<Box<dyn Engine>, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    match kind {
        Kind::Fjall => FjallEngine::open(dir).map(|e| Box::new(e) as Box<dyn Engine>),
        Kind::Redb => RedbEngine::open(dir, false).map(|e| Box::new(e) as Box<dyn Engine>),
        Kind::RedbQr => RedbEngine::open(dir, true).map(|e| Box::new(e) as Box<dyn Engine>),
    }
}

pub const CACHE_BYTES: u64 = 64 << 20;

// --------------------------------------------------------------------------
// fjall
// --------------------------------------------------------------------------

pub struct FjallEngine {
    db: fjall::Database,
    /// (data, seq). Behind a lock only so flush_all can swap in fresh
    /// keyspaces (delete_keyspace frees disk at once; clear() does not).
    ks: std::sync::RwLock<(fjall::Keyspace, fjall::Keyspace)>,
}

fn fjall_ks_opts() -> fjall::KeyspaceCreateOptions {
    fjall::KeyspaceCreateOptions::default().max_memtable_size(32 << 20)
}

impl FjallEngine {
    pub fn open(dir: &Path) -> Result<Self, String> {
        // Tier config: bound the journal (= crash-recovery replay work) to
        // 64 MiB (default 512 MiB) and memtables to 32 MiB (default 64 MiB).
        let db = fjall::Database::builder(dir)
            .cache_size(CACHE_BYTES)
            .max_journaling_size(64 << 20)
            .open()
            .map_err(|e| format!("{e:?}"))?;
        let data = db.keyspace("data", fjall_ks_opts).map_err(|e| format!("{e:?}"))?;
        let seq = db.keyspace("seq", fjall_ks_opts).map_err(|e| format!("{e:?}"))?;
        Ok(Self { db, ks: std::sync::RwLock::new((data, seq)) })
    }
    pub fn data(&self) -> fjall::Keyspace {
        self.ks.read().unwrap().0.clone()
    }
}

impl Engine for FjallEngine {
    fn write_batch(&self, puts: &[Put], durable: bool, idx: Idx) {
        let ks = self.ks.read().unwrap();
        let (data, seq) = (&ks.0, &ks.1);
        let mut b = self.db.batch();
        if idx == Idx::Lazy {
            for p in puts {
                b.insert(seq, seq_of(&p.val).to_be_bytes().to_vec(), p.key.as_slice());
                b.insert(data, p.key.as_slice(), p.val.as_slice());
            }
        } else if idx == Idx::Eager {
            // Previous wseq of a key written earlier in this same batch.
            let mut in_batch: HashMap<&[u8], u64> = HashMap::new();
            for p in puts {
                let new_seq = seq_of(&p.val);
                let old = match in_batch.insert(&p.key, new_seq) {
                    Some(s) => Some(s),
                    // read-before-write: LSM needs a point lookup for the old seq
                    None => data.get(&p.key).unwrap().map(|v| seq_of(&v)),
                };
                if let Some(old) = old {
                    b.remove(seq, old.to_be_bytes().to_vec());
                }
                b.insert(seq, new_seq.to_be_bytes().to_vec(), p.key.as_slice());
                b.insert(data, p.key.as_slice(), p.val.as_slice());
            }
        } else {
            for p in puts {
                b.insert(data, p.key.as_slice(), p.val.as_slice());
            }
        }
        b.commit().unwrap();
        if durable {
            self.db.persist(fjall::PersistMode::SyncData).unwrap();
        }
    }

    fn get(&self, key: &[u8]) -> Option<usize> {
        self.ks.read().unwrap().0.get(key).unwrap().map(|v| v.len())
    }

    fn evict_oldest(&self, n: usize, from_seq: u64) -> (usize, u64) {
        let ks = self.ks.read().unwrap();
        let mut b = self.db.batch();
        let mut cnt = 0;
        let mut next = from_seq;
        for kv in ks.1.range(from_seq.to_be_bytes()..).take(n) {
            let (k, v) = kv.into_inner().unwrap();
            let sq = u64::from_be_bytes(k[..8].try_into().unwrap());
            if ks.0.get(&v).unwrap().map(|d| seq_of(&d)) == Some(sq) {
                b.remove(&ks.0, v);
            }
            next = sq + 1;
            b.remove(&ks.1, k);
            cnt += 1;
        }
        b.commit().unwrap();
        (cnt, next)
    }

    fn flush_all(&self) {
        // Keyspace::clear() is O(1) too, but in fjall 3.1.13 its tables stay
        // on disk until the next open (see README); deleting + recreating the
        // keyspaces frees them immediately.
        let mut ks = self.ks.write().unwrap();
        let (old_data, old_seq) = (ks.0.clone(), ks.1.clone());
        self.db.delete_keyspace(old_data).unwrap();
        self.db.delete_keyspace(old_seq).unwrap();
        let data = self.db.keyspace("data", fjall_ks_opts).unwrap();
        let seq = self.db.keyspace("seq", fjall_ks_opts).unwrap();
        self.db.persist(fjall::PersistMode::SyncData).unwrap();
        *ks = (data, seq);
    }

    fn shutdown(&self) {
        // rotate_memtable_and_wait is #[doc(hidden)] in fjall 3.1.13
        let ks = self.ks.read().unwrap();
        ks.0.rotate_memtable_and_wait().unwrap();
        ks.1.rotate_memtable_and_wait().unwrap();
    }

    fn settle(&self, max: std::time::Duration) {
        let t = std::time::Instant::now();
        while t.elapsed() < max && (self.db.outstanding_flushes() > 0 || self.db.active_compactions() > 0) {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

// --------------------------------------------------------------------------
// redb
// --------------------------------------------------------------------------

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

pub const DATA: TableDefinition<&[u8], &[u8]> = TableDefinition::new("data");
pub const SEQ: TableDefinition<u64, &[u8]> = TableDefinition::new("seq");

pub fn redb_file(dir: &Path) -> PathBuf {
    dir.join("tier.redb")
}

pub struct RedbEngine {
    db: redb::Database,
    quick_repair: bool,
}

impl RedbEngine {
    pub fn open(dir: &Path, quick_repair: bool) -> Result<Self, String> {
        let db = redb::Builder::new()
            .set_cache_size(CACHE_BYTES as usize)
            .create(redb_file(dir))
            .map_err(|e| format!("{e:?}"))?;
        // make sure both tables exist so readers never see TableDoesNotExist
        let tx = db.begin_write().unwrap();
        tx.open_table(DATA).unwrap();
        tx.open_table(SEQ).unwrap();
        tx.commit().unwrap();
        Ok(Self { db, quick_repair })
    }
}

impl Engine for RedbEngine {
    fn write_batch(&self, puts: &[Put], durable: bool, idx: Idx) {
        let mut tx = self.db.begin_write().unwrap();
        if durable {
            tx.set_durability(redb::Durability::Immediate).unwrap();
            tx.set_quick_repair(self.quick_repair);
        } else {
            tx.set_durability(redb::Durability::None).unwrap();
        }
        {
            let mut t = tx.open_table(DATA).unwrap();
            if idx == Idx::Lazy {
                let mut s = tx.open_table(SEQ).unwrap();
                for p in puts {
                    s.insert(seq_of(&p.val), p.key.as_slice()).unwrap();
                    t.insert(p.key.as_slice(), p.val.as_slice()).unwrap();
                }
            } else if idx == Idx::Eager {
                let mut s = tx.open_table(SEQ).unwrap();
                for p in puts {
                    let new_seq = seq_of(&p.val);
                    // B-tree insert hands back the old value: no extra lookup
                    let old = t.insert(p.key.as_slice(), p.val.as_slice()).unwrap().map(|g| seq_of(g.value()));
                    if let Some(old) = old {
                        s.remove(old).unwrap();
                    }
                    s.insert(new_seq, p.key.as_slice()).unwrap();
                }
            } else {
                for p in puts {
                    t.insert(p.key.as_slice(), p.val.as_slice()).unwrap();
                }
            }
        }
        tx.commit().unwrap();
    }

    fn get(&self, key: &[u8]) -> Option<usize> {
        // a fresh read transaction per lookup: sees the latest commit
        let rtx = self.db.begin_read().unwrap();
        let t = rtx.open_table(DATA).unwrap();
        let r = t.get(key).unwrap().map(|g| g.value().len());
        r
    }

    fn evict_oldest(&self, n: usize, from_seq: u64) -> (usize, u64) {
        let mut tx = self.db.begin_write().unwrap();
        tx.set_durability(redb::Durability::None).unwrap();
        let mut cnt = 0;
        let mut next = from_seq;
        {
            let mut t = tx.open_table(DATA).unwrap();
            let mut s = tx.open_table(SEQ).unwrap();
            let mut victims: Vec<(u64, Vec<u8>)> = Vec::with_capacity(n);
            for kv in s.range(from_seq..).unwrap().take(n) {
                let (k, v) = kv.unwrap();
                victims.push((k.value(), v.value().to_vec()));
            }
            for (sq, key) in victims {
                let cur = t.get(key.as_slice()).unwrap().map(|g| seq_of(g.value()));
                if cur == Some(sq) {
                    t.remove(key.as_slice()).unwrap();
                }
                s.remove(sq).unwrap();
                next = sq + 1;
                cnt += 1;
            }
        }
        tx.commit().unwrap();
        (cnt, next)
    }

    fn flush_all(&self) {
        let mut tx = self.db.begin_write().unwrap();
        tx.set_durability(redb::Durability::Immediate).unwrap();
        tx.set_quick_repair(self.quick_repair);
        tx.delete_table(DATA).unwrap();
        tx.delete_table(SEQ).unwrap();
        tx.open_table(DATA).unwrap();
        tx.open_table(SEQ).unwrap();
        tx.commit().unwrap();
    }
}
