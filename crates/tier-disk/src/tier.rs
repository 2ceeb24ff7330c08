//! [`DiskTier`]: the engine's `Tier` on top of the queue, the committer and fjall.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use engine::stats::{Kind, Series, StatSink, Value};
use engine::tier::{Tier, TierItem, WriteNo};
use parking_lot::{Condvar, Mutex};

use crate::lock::DirLock;
use crate::pending::{Op, Pending};
use crate::record::Record;
use crate::shared::{Counters, Durability, Options, Shared};
use crate::store::{Meta, OpenReport, Store};

/// The persistent tier.
pub struct DiskTier {
    shared: Arc<Shared>,
    committer: Mutex<Option<std::thread::JoinHandle<()>>>,
    _lock: DirLock,
    report: OpenReport,
    meta_at_open: Meta,
}

impl DiskTier {
    /// Lock and open the directory, start the committer.
    pub fn open(opts: Options) -> Result<DiskTier, String> {
        std::fs::create_dir_all(&opts.dir).map_err(|e| format!("cannot create {}: {e}", opts.dir.display()))?;
        let lock = DirLock::acquire(&opts.dir)?;
        let (store, mut meta, mut report) = Store::open(&opts.dir, opts.cache_bytes)?;
        if opts.disk_limit > 0 {
            if !store.indexed()? {
                let (n, bytes) = store.rebuild_index()?;
                report.reindexed = n;
                meta.bytes = bytes;
                meta.items = n;
                store.set_indexed(true)?;
            }
        } else {
            store.set_indexed(false)?;
        }
        let (durable, _) = tokio::sync::watch::channel(meta.seq_hwm);
        let (committed, _) = tokio::sync::watch::channel(meta.seq_hwm);
        let pending = Pending { seq: meta.seq_hwm, ..Pending::default() };
        let shared = Arc::new(Shared {
            opts,
            store,
            pending: Mutex::new(pending),
            work: Condvar::new(),
            space: Condvar::new(),
            committed,
            durable,
            failed: AtomicBool::new(false),
            reason: Mutex::new(None),
            stopping: AtomicBool::new(false),
            counters: Counters::default(),
            meta: Mutex::new(meta),
            last_checkpoint: Mutex::new(std::time::Instant::now()),
        });
        shared.counters.bytes.store(meta.bytes, Ordering::Relaxed);
        let s = shared.clone();
        let committer = std::thread::Builder::new()
            .name("disk-commit".into())
            .spawn(move || crate::committer::run(s))
            .map_err(|e| e.to_string())?;
        Ok(DiskTier { shared, committer: Mutex::new(Some(committer)), _lock: lock, report, meta_at_open: meta })
    }

    /// What opening found (items, clean shutdown or not).
    pub fn report(&self) -> &OpenReport {
        &self.report
    }

    /// Highest CAS unique on disk at open.
    pub fn cas_high_water(&self) -> u64 {
        self.meta_at_open.cas_hwm
    }

    /// A delayed `flush_all` deadline pending at open (unix time), 0 for none.
    pub fn flush_deadline(&self) -> i64 {
        self.meta_at_open.flush_at
    }

    /// The durability mode.
    pub fn durability(&self) -> Durability {
        self.shared.opts.durability
    }

    /// What a connection awaits before acknowledging a write: the fsynced sequence number
    /// in sync mode; in async mode the committed one (handed to the OS, so it survives a
    /// crash of sqlcached; fsynced within the flush interval).
    pub fn ack_signal(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        Some(match self.shared.opts.durability {
            Durability::Sync => self.shared.durable.subscribe(),
            Durability::Async => self.shared.committed.subscribe(),
        })
    }

    /// Wait until change `seq` may be acknowledged. `Err(d)` if the disk failed first:
    /// changes up to `d` may still be acknowledged, later ones not.
    pub async fn wait_ack(&self, rx: &mut tokio::sync::watch::Receiver<u64>, seq: u64) -> Result<(), u64> {
        let failed = &self.shared.failed;
        let r = rx.wait_for(|&d| d >= seq || failed.load(Ordering::Relaxed)).await.map(|d| *d);
        match r {
            Ok(d) if d >= seq => Ok(()),
            Ok(d) => Err(d),
            Err(_) => Err(*rx.borrow()),
        }
    }

    /// While the tier is degraded: why a write must be refused, as memcached-style error
    /// text (`out of space for persistence` for a full disk or quota, `persistence failed`
    /// for other I/O errors). None while writes are accepted.
    pub fn write_refusal(&self) -> Option<&'static str> {
        if !self.shared.failed.load(Ordering::Relaxed) {
            return None;
        }
        let reason = self.shared.reason.lock();
        let r = reason.as_deref().unwrap_or("");
        Some(if crate::committer::is_full(r) { "out of space for persistence" } else { "persistence failed" })
    }

    /// Whether the disk failed (writes can no longer be made durable).
    pub fn failed(&self) -> bool {
        self.shared.failed.load(Ordering::Relaxed)
    }

    /// Check every record's checksum in the background, logging and removing damaged ones.
    pub fn verify_in_background(&self) {
        let s = self.shared.clone();
        let _ = std::thread::Builder::new().name("disk-verify".into()).spawn(move || {
            match s.store.verify() {
                Ok((checked, damaged)) => {
                    if !damaged.is_empty() {
                        log::error!(
                            "data dir {}: {} of {checked} records failed their checksum and were removed",
                            s.opts.dir.display(),
                            damaged.len()
                        );
                        s.counters.damaged.fetch_add(damaged.len() as u64, Ordering::Relaxed);
                        let mut p = s.pending.lock();
                        for k in damaged {
                            // Only if nothing newer is queued for that key.
                            if !p.latest.contains_key(&k) {
                                p.push(Op::Delete(k));
                            }
                        }
                        s.work.notify_one();
                    }
                }
                Err(e) => log::error!("data dir {}: verification stopped: {e}", s.opts.dir.display()),
            }
        });
    }

    /// Stop: commit and fsync everything queued, record a clean shutdown.
    pub fn close(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.work.notify_all();
        if let Some(h) = self.committer.lock().take() {
            let _ = h.join();
        }
        let meta = *self.shared.meta.lock();
        if let Err(e) = self.shared.store.close(&self.shared.opts.dir, &meta) {
            log::error!("clean shutdown of {} failed: {e}", self.shared.opts.dir.display());
        }
    }

    /// Queues a change; returns its sequence number (what a writer waits for).
    fn enqueue(&self, make: impl FnOnce(u64) -> Op) -> u64 {
        let s = &self.shared;
        let mut p = s.pending.lock();
        while p.bytes > s.opts.max_pending_bytes && !s.failed.load(Ordering::Relaxed) {
            s.work.notify_one();
            s.space.wait_for(&mut p, Duration::from_millis(100));
        }
        let was_empty = p.ops.is_empty();
        let seq = p.push_with(make);
        let big = p.bytes > s.opts.max_pending_bytes / 4;
        drop(p);
        s.counters.writes.fetch_add(1, Ordering::Relaxed);
        // The committer takes everything queued when it wakes: waking it again for every
        // change would cost a context switch per write.
        if was_empty || big {
            s.work.notify_one();
        }
        seq
    }
}

impl Tier for DiskTier {
    fn get(&self, key: &[u8]) -> Option<TierItem> {
        let s = &self.shared;
        let rec = match s.pending.lock().lookup(key) {
            Some(state) => state,
            None => match s.store.get(key) {
                Ok(Some(raw)) => match Record::decode(&raw) {
                    Ok(r) => Some(Arc::new(r)),
                    Err(damage) => {
                        log::error!("damaged record on disk ({damage}); dropped");
                        s.counters.damaged.fetch_add(1, Ordering::Relaxed);
                        // Nobody acknowledges this removal: its number is not needed.
                        let _ = self.enqueue(|_| Op::Delete(key.to_vec()));
                        None
                    }
                },
                Ok(None) => None,
                Err(e) => {
                    s.counters.read_error(&e);
                    None
                }
            },
        }?;
        Some(TierItem {
            value: rec.value.clone(),
            flags: rec.flags,
            exptime_unix: rec.exptime,
            cas: rec.cas,
            stored_unix: rec.stored,
            bits: rec.bits,
        })
    }

    fn put(&self, key: &[u8], item: TierItem, replaced: bool) -> WriteNo {
        self.enqueue(|seq| {
            let rec = Record {
                flags: item.flags,
                exptime: item.exptime_unix,
                cas: item.cas,
                stored: item.stored_unix,
                seq,
                bits: item.bits,
                value: item.value,
            };
            Op::Put(key.to_vec(), Arc::new(rec), replaced)
        })
    }

    fn delete(&self, key: &[u8]) -> WriteNo {
        self.enqueue(|_| Op::Delete(key.to_vec()))
    }

    fn flush(&self, at_unix: i64) -> WriteNo {
        self.enqueue(|_| if at_unix == 0 { Op::Flush } else { Op::FlushAt(at_unix) })
    }

    fn stats(&self, sink: &mut dyn StatSink) {
        let s = &self.shared;
        let c = &s.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let durability = if s.opts.durability == Durability::Sync { "sync" } else { "async" };
        sink.stat("disk_durability", Kind::Info, &durability);
        sink.stat("disk_items", Kind::Gauge, &s.meta.lock().items);
        sink.stat("disk_bytes", Kind::Gauge, &get(&c.bytes));
        sink.stat("disk_space", Kind::Gauge, &s.store.disk_space());
        sink.stat("disk_limit", Kind::Gauge, &s.opts.disk_limit);
        sink.stat("disk_cache", Kind::Gauge, &s.opts.cache_bytes);
        sink.stat("disk_memtable_bytes", Kind::Gauge, &s.store.memtable_bytes());
        sink.stat("disk_writes", Kind::Counter, &get(&c.writes));
        sink.stat("disk_batches", Kind::Counter, &get(&c.batches));
        sink.stat("disk_fsyncs", Kind::Counter, &get(&c.fsyncs));
        sink.stat("disk_evictions", Kind::Counter, &get(&c.evictions));
        sink.stat("disk_damaged_records", Kind::Counter, &get(&c.damaged));
        sink.stat("disk_read_errors", Kind::Counter, &get(&c.read_errors));
        sink.stat("disk_queue_bytes", Kind::Gauge, &s.pending.lock().bytes);
        sink.stat("disk_failed", Kind::Gauge, &u8::from(s.failed.load(Ordering::Relaxed)));
        sink.stat("disk_error", Kind::Info, &s.reason.lock().as_deref().unwrap_or("").replace(['\r', '\n'], " "));
        sink.stat("disk_failures", Kind::Counter, &get(&c.failures));
        sink.stat("disk_recoveries", Kind::Counter, &get(&c.recoveries));
        let series: Vec<Series> = [("write", &c.write_latency), ("fsync", &c.fsync_latency)]
            .into_iter()
            .map(|(stage, h)| Series::new(vec![("stage", stage.to_string())], Value::Histogram(h.snapshot())))
            .collect();
        sink.family("disk_commit_duration", "Disk tier commits: time to write a batch and to fsync", &series);
    }
}
