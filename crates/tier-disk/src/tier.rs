//! [`DiskTier`]: the engine's `Tier` on top of the queue, the committer, the
//! write-ahead log, the ingest thread and fjall.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use engine::stats::{Kind, Series, StatSink, Value};
use engine::tier::{Tier, TierItem, WriteNo};
use parking_lot::{Condvar, Mutex};

use crate::entry::Entry;
use crate::lock::DirLock;
use crate::pending::{Op, Pending};
use crate::record::Record;
use crate::shared::{Counters, Durability, Options, Shared};
use crate::store::{Meta, OpenReport, Store};

/// The persistent tier.
pub struct DiskTier {
    shared: Arc<Shared>,
    committer: Mutex<Option<std::thread::JoinHandle<()>>>,
    ingester: Mutex<Option<std::thread::JoinHandle<()>>>,
    _lock: DirLock,
    report: OpenReport,
    meta_at_open: Meta,
}

impl DiskTier {
    /// Lock and open the directory, start the committer.
    pub fn open(opts: Options) -> Result<DiskTier, String> {
        std::fs::create_dir_all(&opts.dir).map_err(|e| format!("cannot create {}: {e}", opts.dir.display()))?;
        let lock = DirLock::acquire(&opts.dir)?;
        // The log is read (and refused if damaged) before fjall's open writes anything.
        let log = read_log(&opts.dir)?;
        let sync = opts.durability == Durability::Sync;
        let opened = (|| {
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
            let (wal, pending) = replay_log(&opts.dir, log, &store, &mut meta, &mut report, sync)?;
            Ok::<_, String>((store, meta, report, wal, pending))
        })();
        // fjall's own errors (a damaged table found by a compaction at open: "Poisoned") do
        // not say where: the refusal names the directory and the way out.
        let dir = opts.dir.display().to_string();
        let (store, meta, report, wal, pending) = opened.map_err(|e| match e.contains(&dir) {
            true => e,
            false => format!(
                "data directory {dir} cannot be opened ({e}): if its files are damaged, move it aside \
                 (or start with --data-dir-recover, which renames it to {dir}.damaged-<time> and starts empty)"
            ),
        })?;
        // A limit lower than what is on disk (or newly set) is enforced at once.
        let job = (opts.disk_limit > 0 && meta.bytes > opts.disk_limit).then_some(crate::shared::Job {
            upto: meta.ingested,
            meta,
            failed: false,
        });
        let shared = Arc::new(Shared {
            opts,
            store,
            pending: Mutex::new(pending),
            work: Condvar::new(),
            space: Condvar::new(),
            committed: crate::ack::AckPoint::new(meta.seq_hwm),
            durable: crate::ack::AckPoint::new(meta.seq_hwm),
            failed: AtomicBool::new(false),
            reason: Mutex::new(None),
            stopping: AtomicBool::new(false),
            counters: Counters::default(),
            meta: Mutex::new(meta),
            last_checkpoint: Mutex::new(std::time::Instant::now()),
            wal: Mutex::new(wal),
            job: Mutex::new(job),
            ingest_work: Condvar::new(),
            ingest_done: Condvar::new(),
            store_lock: Mutex::new(()),
            commit_lock: Mutex::new(()),
            pacer: crate::pace::Pacer::default(),
        });
        if !shared.pacer.active() {
            log::info!(
                "compaction runs at normal priority: bringing fjall's threads back from a lower one needs root, \
                 CAP_SYS_NICE or RLIMIT_NICE 20 (systemd: LimitNICE=20), so they are never lowered"
            );
        }
        shared.pacer.pace(shared.store.l0_tables());
        shared.counters.bytes.store(meta.bytes, Ordering::Relaxed);
        let s = shared.clone();
        let committer = std::thread::Builder::new()
            .name("disk-commit".into())
            .spawn(move || crate::committer::run(s))
            .map_err(|e| e.to_string())?;
        let s = shared.clone();
        let ingester = std::thread::Builder::new()
            .name("disk-ingest".into())
            .spawn(move || crate::ingest::run(s))
            .map_err(|e| e.to_string())?;
        Ok(DiskTier {
            shared,
            committer: Mutex::new(Some(committer)),
            ingester: Mutex::new(Some(ingester)),
            _lock: lock,
            report,
            meta_at_open: meta,
        })
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

    /// The state shared with the committer and ingest threads (unit tests).
    #[cfg(test)]
    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    /// The durability mode.
    pub fn durability(&self) -> Durability {
        self.shared.opts.durability
    }

    /// Wait until change `seq` may be acknowledged: in sync mode once it is fsynced; in
    /// async mode once it is committed (handed to the OS, so it survives a crash of
    /// sqlcached; fsynced within the flush interval). `Err(d)` if the disk failed first:
    /// changes up to `d` may still be acknowledged, later ones not.
    ///
    /// In async mode the changes are logged by this call's thread: first it yields, so
    /// that the other connections of this thread that are ready queue their changes too,
    /// then it logs everything queued as one batch (unless another thread is already
    /// logging: then the committer thread is woken).
    pub async fn wait_ack(&self, seq: u64) -> Result<(), u64> {
        let s = &self.shared;
        let point = match s.opts.durability {
            Durability::Sync => &s.durable,
            Durability::Async => &s.committed,
        };
        if s.opts.durability == Durability::Async && point.get() < seq {
            tokio::task::yield_now().await;
            if point.get() < seq && !crate::committer::commit_inline(s) {
                s.work.notify_one();
            }
        }
        match point.wait(seq, &s.failed).await {
            d if d >= seq => Ok(()),
            d => Err(d),
        }
    }

    /// What the tier holds of the memory budget now: (fjall's block cache, the changes
    /// not yet in fjall: staged and frozen states, the queue's list, fjall's memtables).
    pub fn memory(&self) -> (usize, usize) {
        let s = &self.shared;
        let writes = {
            let p = s.pending.lock();
            p.state_bytes() + p.ops.capacity() * std::mem::size_of::<(u64, Op)>()
        };
        (s.store.cache_used() as usize, writes + s.store.memtable_bytes() as usize)
    }

    /// The tier's bounds on its shares of the memory budget: (block cache capacity, most
    /// bytes of changes held before writers wait: twice the ingestion threshold plus the
    /// queue's bound).
    pub fn memory_caps(&self) -> (usize, usize) {
        let o = &self.shared.opts;
        (o.cache_bytes as usize, 2 * crate::ingest::stage_limit(o) + o.max_pending_bytes)
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
        Some(if crate::fault::is_full(r) { "out of space for persistence" } else { "persistence failed" })
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
                            // Only if no newer state of that key is held in memory.
                            if !p.holds(&k) {
                                p.push(Op::Delete(Entry::delete(&k)));
                            }
                        }
                        s.work.notify_one();
                    }
                }
                Err(e) => log::error!("data dir {}: verification stopped: {e}", s.opts.dir.display()),
            }
        });
    }

    /// Stop: log and fsync everything queued, put what is staged into fjall, record a
    /// clean shutdown. If fjall cannot take the staged changes (a failing disk), they
    /// stay in the log and the next start replays it.
    pub fn close(&self) {
        let s = &self.shared;
        // Set under the queue's lock, which the committer holds from its look at
        // `stopping` until it sleeps: it either sees the flag or is asleep when woken. Set
        // outside it, the wake-up could fall between its look and its sleep, and the stop
        // would wait out the sleep (up to a second).
        {
            let _queue = s.pending.lock();
            s.stopping.store(true, Ordering::SeqCst);
        }
        s.work.notify_all();
        if let Some(h) = self.committer.lock().take() {
            let _ = h.join();
        }
        // The same for the ingest thread, which looks at `stopping` under the job's lock.
        drop(s.job.lock());
        s.ingest_work.notify_all();
        if let Some(h) = self.ingester.lock().take() {
            let _ = h.join();
        }
        // Before the ingestion's rotation, so that it starts a plain file and a prepared
        // one is kept for the next start.
        s.wal.lock().finish();
        let dir = s.opts.dir.display();
        if s.failed.load(Ordering::SeqCst) {
            // The committer said what could not be written; the log has the rest.
            return;
        }
        let ingested = ingest_now(s)
            .map_err(|e| {
                log::warn!(
                    "writing the staged changes into fjall at shutdown failed ({e}); nothing is lost: \
                         the next start replays the journal (the write-ahead log in {dir}/wal)"
                )
            })
            .is_ok();
        let meta = *s.meta.lock();
        let closed = if ingested {
            s.store.close(&s.opts.dir, &meta)
        } else {
            crate::checkpoint::write(&s.opts.dir, crate::checkpoint::Checkpoint { seq: meta.seq_hwm, clean: true })
                .map_err(|e| e.to_string())
        };
        if let Err(e) = closed {
            log::error!("clean shutdown of {dir} failed: {e}");
        }
    }

    /// Queues a change; returns its sequence number (what a writer waits for).
    /// `waited`: its writer will call [`DiskTier::wait_ack`], which logs it in async mode,
    /// so the committer is not woken for it.
    fn enqueue(&self, make: impl FnOnce(u64) -> Op, waited: bool) -> u64 {
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
        let inline = waited && s.opts.durability == Durability::Async;
        if (was_empty && !inline) || big {
            s.work.notify_one();
        }
        seq
    }
}

impl Tier for DiskTier {
    fn get(&self, key: &[u8]) -> Option<TierItem> {
        let s = &self.shared;
        let held = s.pending.lock().lookup(key);
        let rec = match held {
            // Checked when it was made (or read from the log).
            Some(state) => state.map(|e| Record::decode_checked(e.record().expect("a put"))),
            None => match s.store.get(key) {
                Ok(Some(raw)) => match Record::decode(&raw) {
                    Ok(r) => Some(r),
                    Err(damage) => {
                        log::error!("damaged record on disk ({damage}); dropped");
                        s.counters.damaged.fetch_add(1, Ordering::Relaxed);
                        // Nobody acknowledges this removal: its number is not needed.
                        let _ = self.enqueue(|_| Op::Delete(Entry::delete(key)), false);
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
            value: rec.value,
            flags: rec.flags,
            exptime_unix: rec.exptime,
            cas: rec.cas,
            stored_unix: rec.stored,
            bits: rec.bits,
        })
    }

    fn put(&self, key: &[u8], item: TierItem<&[u8]>, replaced: bool, waited: bool) -> WriteNo {
        let op = |seq| {
            let rec = Record {
                flags: item.flags,
                exptime: item.exptime_unix,
                cas: item.cas,
                stored: item.stored_unix,
                seq,
                bits: item.bits,
                value: item.value,
            };
            Op::Put(Entry::put(key, &rec), replaced)
        };
        self.enqueue(op, waited)
    }

    fn delete(&self, key: &[u8], waited: bool) -> WriteNo {
        self.enqueue(|_| Op::Delete(Entry::delete(key)), waited)
    }

    fn flush(&self, at_unix: i64, _waited: bool) -> WriteNo {
        // The committer empties fjall for a flush: wake it whoever waits.
        self.enqueue(|_| if at_unix == 0 { Op::Flush } else { Op::FlushAt(at_unix) }, false)
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
        let states = s.pending.lock().state_bytes();
        sink.stat("disk_memtable_bytes", Kind::Gauge, &(s.store.memtable_bytes() + states as u64));
        sink.stat("disk_log_bytes", Kind::Gauge, &s.wal.lock().disk_bytes());
        sink.stat("disk_ingestions", Kind::Counter, &get(&c.ingestions));
        sink.stat("disk_l0_tables", Kind::Gauge, &s.store.l0_tables());
        sink.stat("disk_compaction_nice", Kind::Gauge, &s.pacer.nice());
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

/// Ingest everything staged in this thread (at shutdown), after an ingestion the ingest
/// thread left (it stops once nothing is handed to it).
fn ingest_now(s: &Shared) -> Result<(), String> {
    let left = *s.job.lock();
    if let Some(job) = left {
        crate::ingest::ingest(s, job)?;
    }
    let _lead = s.commit_lock.lock();
    let sync = s.opts.durability == Durability::Sync;
    crate::committer::start_ingestion(s, sync, &mut std::time::Instant::now())?;
    let job = *s.job.lock();
    match job {
        Some(job) => crate::ingest::ingest(s, job),
        None => Ok(()),
    }
}

/// Read the write-ahead log at open; damage refuses the start, changing nothing.
fn read_log(dir: &std::path::Path) -> Result<crate::wal::Replay, String> {
    crate::wal::replay(&crate::wal::dir(dir)).map_err(|e| {
        format!(
            "data directory {} is damaged and was left untouched: its write-ahead log cannot be read ({e}). \
             Move it aside (or start with --data-dir-recover, which renames it to {}.damaged-<time> and starts empty).",
            dir.display(),
            dir.display()
        )
    })
}

/// Replay the write-ahead log at open: every change after what fjall holds is counted
/// into `meta` and staged in memory, as if just logged; a flush in it empties fjall.
fn replay_log(
    dir: &std::path::Path,
    r: crate::wal::Replay,
    store: &Store,
    meta: &mut Meta,
    report: &mut OpenReport,
    sync: bool,
) -> Result<(crate::wal::Wal, Pending), String> {
    r.cut_torn_tails()?;
    for (path, at) in &r.torn {
        log::warn!(
            "write-ahead log {}: a write cut short at byte {at} (a crash during it; never acknowledged in sync mode) was dropped",
            path.display()
        );
    }
    let ops: Vec<(u64, Op)> = r.ops.into_iter().filter(|(seq, _)| *seq > meta.ingested).collect();
    if let Some(&(at, _)) = ops.iter().rev().find(|(_, op)| matches!(op, Op::Flush)) {
        store.flush_as_of(at, meta)?;
    }
    for (seq, op) in &ops {
        meta.apply(*seq, op);
    }
    report.replayed = ops.len() as u64;
    report.items = meta.items as usize;
    if let Some((durable, _)) = report.lost {
        report.lost = (durable > meta.seq_hwm).then_some((durable, meta.seq_hwm));
    }
    let mut pending = Pending { seq: meta.seq_hwm, ..Pending::default() };
    pending.replayed(ops);
    let mut wal = crate::wal::Wal::open(dir, r.next_file, r.files, sync)?;
    if let (true, Some(why)) = (sync, wal.not_prepared()) {
        log::info!(
            "write-ahead log: files are not prepared ahead of time ({why}); each fsync also writes the file's size"
        );
    }
    // Files whose every change fjall already has (an ingestion that ended just before a
    // crash, or an empty file of a clean stop) go now.
    if let Err(e) = wal.remove_upto(meta.ingested) {
        log::warn!("write-ahead log: {e}");
    }
    Ok((wal, pending))
}
