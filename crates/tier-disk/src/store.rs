//! The fjall database behind the tier: keyspace `data` (key → record), `index`
//! (write sequence → size and key, oldest first, for `--disk-limit`), and `meta`.
//! Items arrive as sorted runs ([`Store::ingest`]): fjall writes them straight into
//! tables, past its memtable and journal (the write-ahead log already has them).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};
use parking_lot::{MappedRwLockReadGuard, RwLock, RwLockReadGuard};

use crate::pending::States;
use crate::record::Record;

/// On-disk format version of this directory: 2 has a write-ahead log (`wal/`) that
/// version 1's reader would ignore; a version 1 directory is read as it is.
const FORMAT: u64 = 2;

fn ks_opts() -> KeyspaceCreateOptions {
    KeyspaceCreateOptions::default().max_memtable_size(32 << 20)
}

fn err(e: fjall::Error) -> String {
    format!("{e:?}")
}

/// The keyspaces `flush_all` replaces.
struct Spaces {
    data: Keyspace,
    index: Keyspace,
}

/// What opening the directory found.
#[derive(Debug, Clone)]
pub struct OpenReport {
    /// Approximate number of items on disk.
    pub items: usize,
    /// Whether the previous run shut down cleanly (else fjall replayed its journal).
    pub clean: bool,
    /// Whether the directory was created now.
    pub created: bool,
    /// Writes recorded as durable that the journal no longer holds (damage), if any:
    /// (highest sequence recorded durable, highest sequence recovered).
    pub lost: Option<(u64, u64)>,
    /// Items whose eviction index was rebuilt at open (a `--disk-limit` on a directory
    /// written without one).
    pub reindexed: u64,
    /// Changes replayed from the write-ahead log (logged, not yet in fjall's tables).
    pub replayed: u64,
}

/// An open fjall database and its keyspaces.
struct Inner {
    db: Database,
    spaces: Spaces,
    meta: Keyspace,
}

/// The fjall database. After a write or sync failure fjall refuses every further write
/// ("poisoned"); [`Store::reopen`] closes it and opens the directory again (fjall replays
/// its journal), which is how the tier recovers once the fault clears.
pub struct Store {
    dir: PathBuf,
    cache_bytes: u64,
    inner: RwLock<Option<Inner>>,
}

/// How long [`Store::reopen`] waits for the old database's lock to be released.
const REOPEN_WAIT: Duration = Duration::from_secs(5);

fn open_db(dir: &Path, cache_bytes: u64) -> Result<Database, fjall::Error> {
    Database::builder(dir.join("db")).cache_size(cache_bytes).max_journaling_size(64 << 20).open()
}

fn open_inner(db: Database) -> Result<Inner, String> {
    let data = db.keyspace("data", ks_opts).map_err(err)?;
    let index = db.keyspace("index", ks_opts).map_err(err)?;
    let meta = db.keyspace("meta", KeyspaceCreateOptions::default).map_err(err)?;
    Ok(Inner { db, spaces: Spaces { data, index }, meta })
}

/// Values read back from `meta` at open.
#[derive(Debug, Default, Clone, Copy)]
pub struct Meta {
    /// Highest CAS unique committed.
    pub cas_hwm: u64,
    /// Highest write sequence committed.
    pub seq_hwm: u64,
    /// Pending delayed `flush_all` (unix time), 0 for none.
    pub flush_at: i64,
    /// Logical bytes of items on disk (for `--disk-limit`).
    pub bytes: u64,
    /// Items on disk.
    pub items: u64,
    /// Every change up to this sequence number is in fjall (later ones only in the
    /// write-ahead log).
    pub ingested: u64,
}

impl Meta {
    /// Account for one change (the committer as it logs it, and the replay at open).
    /// `bytes` is counted when items reach fjall ([`Store::ingest`]), not here.
    /// A change at or below `seq_hwm` is already counted (a batch logged again after a
    /// failed fsync) and is skipped.
    pub fn apply(&mut self, seq: u64, op: &crate::pending::Op) {
        use crate::pending::Op;
        if seq <= self.seq_hwm {
            return;
        }
        self.seq_hwm = seq;
        match op {
            Op::Put(e, replaced) => {
                self.cas_hwm = self.cas_hwm.max(e.record().map_or(0, Record::cas_of));
                if !replaced {
                    self.items += 1;
                }
            }
            Op::Delete(_) => self.items = self.items.saturating_sub(1),
            Op::Flush => {
                self.items = 0;
                self.bytes = 0;
                self.flush_at = 0;
            }
            Op::FlushAt(at) => self.flush_at = *at,
        }
    }
}

impl Store {
    /// Open (or create) the database in `dir`.
    pub fn open(dir: &Path, cache_bytes: u64) -> Result<(Store, Meta, OpenReport), String> {
        let created = !dir.join("data").exists() && std::fs::read_dir(dir).map(|d| d.count() <= 1).unwrap_or(true);
        let db = open_db(dir, cache_bytes).map_err(|e| {
            format!(
                "data directory {} is damaged and was left untouched: fjall could not open it ({e:?}). \
                     Move it aside (or start with --data-dir-recover, which renames it to \
                     {}.damaged-<time> and starts empty).",
                dir.display(),
                dir.display()
            )
        })?;
        let inner = open_inner(db)?;
        let meta_ks = inner.meta.clone();
        let get_u64 = |k: &str| -> Result<Option<u64>, String> {
            match meta_ks.get(k).map_err(err)? {
                None => Ok(None),
                Some(v) if v.len() == 8 => Ok(Some(u64::from_le_bytes(v[..8].try_into().unwrap_or([0; 8])))),
                Some(v) => {
                    Err(format!("data directory {}: meta entry {k} is damaged ({} bytes)", dir.display(), v.len()))
                }
            }
        };
        match get_u64("format")? {
            None | Some(1) | Some(FORMAT) => {}
            Some(v) => {
                return Err(format!(
                    "data directory {} has format version {v}; this sqlcached reads {FORMAT}",
                    dir.display()
                ))
            }
        }
        let checkpoint = crate::checkpoint::read(dir);
        let clean = checkpoint.is_none_or(|c| c.clean);
        let meta = Meta {
            cas_hwm: get_u64("cas_hwm")?.unwrap_or(0),
            seq_hwm: get_u64("seq_hwm")?.unwrap_or(0),
            flush_at: get_u64("flush_at")?.unwrap_or(0) as i64,
            bytes: get_u64("bytes")?.unwrap_or(0),
            items: get_u64("items")?.unwrap_or(0),
            ingested: 0,
        };
        // A version 1 directory has everything in fjall.
        let meta = Meta { ingested: get_u64("ingested")?.unwrap_or(meta.seq_hwm), ..meta };
        let lost = checkpoint.filter(|c| c.seq > meta.seq_hwm).map(|c| (c.seq, meta.seq_hwm));
        let report = OpenReport { items: meta.items as usize, clean, created, lost, reindexed: 0, replayed: 0 };
        let store = Store { dir: dir.to_path_buf(), cache_bytes, inner: RwLock::new(Some(inner)) };
        {
            let i = store.inner()?;
            let mut b = i.db.batch();
            b.insert(&i.meta, "format", FORMAT.to_le_bytes());
            b.commit().map_err(err)?;
        }
        store.persist()?;
        // Mark the directory as in use until a clean shutdown.
        crate::checkpoint::write(dir, crate::checkpoint::Checkpoint { seq: meta.seq_hwm, clean: false })
            .map_err(|e| format!("cannot write {}/CHECKPOINT: {e}", dir.display()))?;
        Ok((store, meta, report))
    }

    /// The open database (an error while a reopen after a failure has not succeeded).
    fn inner(&self) -> Result<MappedRwLockReadGuard<'_, Inner>, String> {
        RwLockReadGuard::try_map(self.inner.read(), Option::as_ref)
            .map_err(|_| format!("data directory {} is closed after a failure", self.dir.display()))
    }

    /// Close the database and open the directory again (after a failure: fjall refuses
    /// writes once one failed). Waits up to 5 s for the old database's lock.
    pub fn reopen(&self) -> Result<(), String> {
        let mut g = self.inner.write();
        drop(g.take());
        let started = Instant::now();
        loop {
            match open_db(&self.dir, self.cache_bytes) {
                Ok(db) => {
                    *g = Some(open_inner(db)?);
                    return Ok(());
                }
                Err(e) if started.elapsed() >= REOPEN_WAIT => return Err(err(e)),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Whether every item has an eviction-index entry (the index was maintained since the
    /// directory was created or last flushed).
    pub fn indexed(&self) -> Result<bool, String> {
        Ok(self.inner()?.meta.get("indexed").map_err(err)?.is_some_and(|v| v.first() == Some(&1)))
    }

    /// Record whether the eviction index is complete.
    pub fn set_indexed(&self, on: bool) -> Result<(), String> {
        let i = self.inner()?;
        let mut b = i.db.batch();
        b.insert(&i.meta, "indexed", (on as u64).to_le_bytes());
        b.commit().map_err(err)
    }

    /// Rebuild the eviction index from the items (oldest-written first by their stored
    /// write sequence); returns (items indexed, logical bytes). Also recounts the items.
    pub fn rebuild_index(&self) -> Result<(u64, u64), String> {
        {
            let mut g = self.inner.write();
            let i = g.as_mut().ok_or("data directory closed")?;
            let old = i.spaces.index.clone();
            i.db.delete_keyspace(old).map_err(err)?;
            i.spaces.index = i.db.keyspace("index", ks_opts).map_err(err)?;
        }
        let i = self.inner()?;
        let spaces = &i.spaces;
        let mut n = 0;
        let mut bytes = 0u64;
        let mut b = i.db.batch();
        for kv in spaces.data.iter() {
            let (k, v) = kv.into_inner().map_err(err)?;
            let Ok(rec) = Record::decode(&v) else { continue };
            let size = (k.len() + v.len() + 32) as u32;
            let mut iv = size.to_le_bytes().to_vec();
            iv.extend_from_slice(&k);
            b.insert(&spaces.index, rec.seq.to_be_bytes(), iv);
            n += 1;
            bytes += size as u64;
            if n % 10_000 == 0 {
                std::mem::replace(&mut b, i.db.batch()).commit().map_err(err)?;
            }
        }
        b.commit().map_err(err)?;
        Ok((n, bytes))
    }

    /// Read a raw record.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>, String> {
        let data = self.inner()?.spaces.data.clone();
        data.get(key).map(|v| v.map(|s| s.to_vec())).map_err(err)
    }

    /// Make everything committed so far durable (fdatasync).
    pub fn persist(&self) -> Result<(), String> {
        self.inner()?.db.persist(PersistMode::SyncData).map_err(err)
    }

    /// Write the frozen states into fjall as sorted runs (records and tombstones into
    /// `data`; with `index`, new eviction-index entries, counted into `meta.bytes`),
    /// then `meta` with `ingested = upto`, and sync. Idempotent: after a crash in the
    /// middle, the log still holds these changes and they are ingested again.
    pub fn ingest(&self, states: &States, index: bool, meta: &mut Meta, upto: u64) -> Result<(), String> {
        let i = self.inner()?;
        let spaces = &i.spaces;
        let keys = states.sorted();
        let mut entries = Vec::new();
        let mut data = spaces.data.start_ingestion().map_err(err)?;
        for (seq, e) in keys {
            let key = e.key();
            match e.record() {
                Some(rec) => {
                    if index {
                        let size = (key.len() + rec.len() + 32) as u32;
                        entries.push((*seq, size, key));
                    }
                    data.write(key, rec).map_err(err)?;
                }
                None => data.write_tombstone(key).map_err(err)?,
            }
        }
        data.finish().map_err(err)?;
        if !entries.is_empty() {
            entries.sort_unstable_by_key(|e| e.0);
            let mut ix = spaces.index.start_ingestion().map_err(err)?;
            for (seq, size, key) in entries {
                let mut v = size.to_le_bytes().to_vec();
                v.extend_from_slice(key);
                ix.write(seq.to_be_bytes(), v).map_err(err)?;
                meta.bytes += size as u64;
            }
            ix.finish().map_err(err)?;
        }
        meta.ingested = meta.ingested.max(upto);
        let mut b = i.db.batch();
        put_meta(&i.meta, &mut b, meta);
        b.commit().map_err(err)?;
        drop(i);
        self.persist()
    }

    /// Record `meta` (after a flush or at a clean stop) and sync.
    pub fn write_meta(&self, meta: &Meta) -> Result<(), String> {
        {
            let i = self.inner()?;
            let mut b = i.db.batch();
            put_meta(&i.meta, &mut b, meta);
            b.commit().map_err(err)?;
        }
        self.persist()
    }

    /// Bytes of memtables not yet written out as tables (sealed ones included).
    pub fn memtable_bytes(&self) -> u64 {
        self.inner().map(|i| i.db.write_buffer_size()).unwrap_or(0)
    }

    /// Tables in level 0 of the items' keyspace (what compaction has yet to merge).
    pub fn l0_tables(&self) -> usize {
        self.inner().map(|i| i.spaces.data.l0_table_count()).unwrap_or(0)
    }

    /// Bytes of blocks in fjall's block cache now (at most its capacity).
    pub fn cache_used(&self) -> u64 {
        self.inner().map(|i| i.db.cache_size()).unwrap_or(0)
    }

    /// Apply a `flush_all` logged at sequence `at`: drop every item and record fjall's
    /// `meta` as of that flush (nothing held, `ingested = at`; later changes are replayed
    /// from the log). Used as the committer logs it and as the log is replayed at open.
    pub fn flush_as_of(&self, at: u64, meta: &Meta) -> Result<(), String> {
        self.flush_all()?;
        self.write_meta(&Meta { ingested: at, seq_hwm: at, items: 0, bytes: 0, flush_at: 0, ..*meta })
    }

    /// Drop every item: replace the keyspaces (frees their files at once).
    pub fn flush_all(&self) -> Result<(), String> {
        let mut g = self.inner.write();
        let i = g.as_mut().ok_or("data directory closed")?;
        let (data, index) = (i.spaces.data.clone(), i.spaces.index.clone());
        i.db.delete_keyspace(data).map_err(err)?;
        i.db.delete_keyspace(index).map_err(err)?;
        i.spaces.data = i.db.keyspace("data", ks_opts).map_err(err)?;
        i.spaces.index = i.db.keyspace("index", ks_opts).map_err(err)?;
        Ok(())
    }

    /// Evict up to `n` of the oldest-written items; returns (index entries visited, items
    /// evicted, updated meta).
    /// Index entries of keys rewritten or deleted since are dropped on the way.
    /// A key for which `newer` says memory holds a newer state is not evicted (its newer
    /// state gets its own index entry when it is ingested).
    pub fn evict_oldest(
        &self,
        n: usize,
        mut meta: Meta,
        newer: impl Fn(&[u8]) -> bool,
    ) -> Result<(usize, usize, Meta), String> {
        let i = self.inner()?;
        let spaces = &i.spaces;
        let mut b = i.db.batch();
        let mut evicted = 0;
        let mut visited = 0;
        for kv in spaces.index.iter().take(n) {
            visited += 1;
            let (k, v) = kv.into_inner().map_err(err)?;
            let (Ok(seq), Some((size, key))) = (<[u8; 8]>::try_from(&k[..]), v.split_first_chunk::<4>()) else {
                // Not an entry this code writes (damage fjall's checksums did not catch): drop it.
                b.remove(&spaces.index, k.to_vec());
                continue;
            };
            let (seq, size) = (u64::from_be_bytes(seq), u32::from_le_bytes(*size) as u64);
            let live = !newer(key)
                && match spaces.data.get(key).map_err(err)? {
                    Some(rec) => Record::decode(&rec).map(|r| r.seq == seq).unwrap_or(true),
                    None => false,
                };
            if live {
                b.remove(&spaces.data, key.to_vec());
                evicted += 1;
                meta.items = meta.items.saturating_sub(1);
            }
            b.remove(&spaces.index, k.to_vec());
            meta.bytes = meta.bytes.saturating_sub(size);
        }
        put_meta(&i.meta, &mut b, &meta);
        b.commit().map_err(err)?;
        Ok((visited, evicted, meta))
    }

    /// Record a clean shutdown (after the last ingestion): `meta`, a sync, and the
    /// clean checkpoint.
    pub fn close(&self, dir: &Path, meta: &Meta) -> Result<(), String> {
        self.write_meta(meta)?;
        crate::checkpoint::write(dir, crate::checkpoint::Checkpoint { seq: meta.seq_hwm, clean: true })
            .map_err(|e| e.to_string())
    }

    /// Bytes the database takes on disk.
    pub fn disk_space(&self) -> u64 {
        self.inner().ok().and_then(|i| i.db.disk_space().ok()).unwrap_or(0)
    }

    /// Check every record's checksum, removing damaged ones; returns (checked, damaged).
    pub fn verify(&self) -> Result<(u64, Vec<Vec<u8>>), String> {
        let data = self.inner()?.spaces.data.clone();
        let mut checked = 0;
        let mut damaged = Vec::new();
        for kv in data.iter() {
            let (k, v) = kv.into_inner().map_err(err)?;
            checked += 1;
            if Record::decode(&v).is_err() {
                damaged.push(k.to_vec());
            }
        }
        Ok((checked, damaged))
    }
}

fn put_meta(meta_ks: &Keyspace, b: &mut fjall::OwnedWriteBatch, meta: &Meta) {
    b.insert(meta_ks, "cas_hwm", meta.cas_hwm.to_le_bytes());
    b.insert(meta_ks, "seq_hwm", meta.seq_hwm.to_le_bytes());
    b.insert(meta_ks, "flush_at", (meta.flush_at as u64).to_le_bytes());
    b.insert(meta_ks, "bytes", meta.bytes.to_le_bytes());
    b.insert(meta_ks, "items", meta.items.to_le_bytes());
    b.insert(meta_ks, "ingested", meta.ingested.to_le_bytes());
}
