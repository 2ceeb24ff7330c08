//! Keeping `-m` as one budget (`engine::budget`, `docs/memory.md`): a `memory` thread that
//! every [`PERIOD`] reads what each share holds (the disk tier's block cache and staged
//! changes, the query cache, the containers' copies, items), gives items the room the
//! others leave (`Engine::set_room`) and evicts items down to it off the request path.
//! A share that grows between two looks (a write burst staging changes) is at most what
//! its owner bounds it by; items give the room back within a period.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use engine::budget::Share;

use crate::shared::Shared;

/// How often the thread looks: a pipelined bulk load grows the write share and the
/// allocator's free lists by ~1 MiB per 25 ms on this class of machine (measured:
/// 5-8 MiB within the 100 ms looks first used, past the bound's headroom).
const PERIOD: Duration = Duration::from_millis(25);
/// Most item bytes evicted per look (so a lowered room is reached over a few looks, each
/// short, rather than by one store evicting megabytes).
const EVICT_STEP: usize = 8 << 20;

/// glibc malloc arenas (`M_ARENA_MAX`): each arena keeps the free memory of the threads
/// that used it, so more arenas hold more memory that no share accounts for. Measured with
/// `-m 32 --data-dir` under the mixed workload (docs/memory.md): RSS 70.8 MiB with glibc's
/// default (8 per CPU), 65.2 MiB with 2, 59.2 MiB with 1 (jemalloc 5.3: 70.6 MiB; tuned,
/// 70.1 MiB). Two: one per worker thread on a 2-CPU node keeps their `malloc`s apart.
const ARENAS: i32 = 2;
/// How far RSS may exceed what the shares hold (binary, stacks, hash tables, fjall's own
/// structures: about 20 MiB measured) before free memory is given back to the kernel.
const TRIM_SLACK: usize = 20 << 20;
/// Least time between two trims.
const TRIM_EVERY: Duration = Duration::from_secs(1);

/// Headroom kept under the documented bound (1.1 x -m + 24 MiB) for what can grow
/// between two looks.
const HEADROOM: usize = 6 << 20;

/// The resident memory the process is held to: 1.1 x `-m` + 24 MiB (docs/memory.md), less
/// [`HEADROOM`].
pub fn rss_target(total: usize) -> usize {
    total + total / 10 + (24 << 20) - HEADROOM
}

/// Trims done (`memory_trims`) and microseconds they took (`memory_trim_us`).
static TRIMS: AtomicU64 = AtomicU64::new(0);
static TRIM_US: AtomicU64 = AtomicU64::new(0);

/// Set the allocator up for a bounded process (before any thread starts: `main`).
pub fn configure_allocator() {
    // SAFETY: mallopt only changes glibc's tunables; called before other threads exist.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}

/// Give free heap pages back to the kernel (`malloc_trim`) when RSS exceeds what the
/// shares hold by more than [`TRIM_SLACK`]: glibc returns only the top of an arena by
/// itself, and pages freed in its middle (a block cache that turned over, an ingestion's
/// states) would otherwise stay resident.
fn trim_if_due(used: usize, last: &mut Instant, now: bool) {
    let every = if now { TRIM_EVERY / 10 } else { TRIM_EVERY };
    if last.elapsed() < every || (!now && engine::budget::process_rss() <= used + TRIM_SLACK) {
        return;
    }
    *last = Instant::now();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
    TRIMS.fetch_add(1, Ordering::Relaxed);
    TRIM_US.fetch_add(last.elapsed().as_micros() as u64, Ordering::Relaxed);
}

/// Write `memory_trims` and `memory_trim_us` (how often free memory was given back, and
/// the time it took).
pub fn write_stats(sink: &mut dyn engine::stats::StatSink) {
    use engine::stats::Kind;
    sink.stat("memory_trims", Kind::Counter, &TRIMS.load(Ordering::Relaxed));
    sink.stat("memory_trim_us", Kind::Counter, &TRIM_US.load(Ordering::Relaxed));
}

/// Record each share's cap and start the thread; it ends with the server.
pub fn start(shared: &Arc<Shared>) -> std::io::Result<()> {
    let b = &shared.budget;
    if let Some(d) = &shared.disk {
        let (cache, writes) = d.memory_caps();
        b.set_cap(Share::DiskCache, cache);
        b.set_cap(Share::DiskWrites, writes);
    }
    if let Some(qc) = shared.mysql.as_ref().and_then(|p| p.cache.as_ref()) {
        b.set_cap(Share::QueryCache, qc.config().size);
    }
    if let Some((pc, _)) = shared.postgres.as_ref().and_then(|p| p.cache.as_ref()) {
        b.set_cap(Share::PgQueryCache, pc.memory().1);
    }
    balance(shared);
    let weak = Arc::downgrade(shared);
    std::thread::Builder::new().name("memory".into()).spawn(move || run(weak)).map(|_| ())
}

fn run(weak: Weak<Shared>) {
    let mut last_trim = Instant::now();
    loop {
        std::thread::sleep(PERIOD);
        let Some(shared) = weak.upgrade() else { return };
        if shared.shutting_down.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let pressed = balance(&shared);
        trim_if_due(shared.budget.used_total(), &mut last_trim, pressed);
    }
}

/// Read every share, give items the rest, evict down to it. What no share accounts for
/// (the allocator's free memory, fjall's own structures, hash tables) is measured, not
/// bounded by an owner: so items also get no more than keeps the process's RSS within
/// [`rss_target`]. Returns whether that held items lower than the budget alone would
/// (the caller then gives the freed memory back to the kernel at once).
pub fn balance(shared: &Shared) -> bool {
    let b = &shared.budget;
    if let Some(d) = &shared.disk {
        let (cache, writes) = d.memory();
        b.set_used(Share::DiskCache, cache);
        b.set_used(Share::DiskWrites, writes);
    }
    if let Some(qc) = shared.mysql.as_ref().and_then(|p| p.cache.as_ref()) {
        b.set_used(Share::QueryCache, qc.stats().bytes as usize);
    }
    if let Some((pc, _)) = shared.postgres.as_ref().and_then(|p| p.cache.as_ref()) {
        b.set_used(Share::PgQueryCache, pc.memory().0);
    }
    if let Some(sql) = shared.sql.as_ref().and_then(|s| s.get()) {
        b.set_used(Share::Containers, sql.memory_used());
    }
    let engine = &shared.engine;
    let items = engine.mem_used();
    let outside = engine::budget::process_rss().saturating_sub(items);
    // Room kept for a write burst: half of what the write share may still take (the rest
    // of its growth lands in the allocator's free lists that the trim returns).
    let burst = b.cap(Share::DiskWrites).saturating_sub(b.used(Share::DiskWrites)) / 2;
    let by_rss = rss_target(b.total()).saturating_sub(outside + burst);
    let room = b.room();
    let pressed = by_rss < room && by_rss < items;
    engine.set_room(room.min(by_rss).max(b.total() / 16));
    engine.evict_to_bound(EVICT_STEP);
    b.set_cap(Share::Items, engine.bound());
    b.set_used(Share::Items, engine.mem_used());
    pressed
}
