//! Wiring the persistent tier (`--data-dir`) under the engine at start.

use std::sync::Arc;
use std::time::Duration;

use engine::Engine;
use tier_disk::{DiskTier, Durability, Options, Shares};

use config::Config;

/// CAS uniques handed out after a restart start this far above the highest one on disk,
/// so that none a client saw before the restart (even one never committed) is reused.
const CAS_RESTART_GAP: u64 = 1 << 32;

/// While the persistent tier is degraded (disk full, I/O errors): the `SERVER_ERROR`
/// line a write gets instead of being carried out (reads are still served).
pub fn refusal(shared: &crate::shared::Shared) -> Option<&'static [u8]> {
    match shared.disk.as_ref()?.write_refusal()? {
        "out of space for persistence" => Some(b"SERVER_ERROR out of space for persistence\r\n"),
        _ => Some(b"SERVER_ERROR persistence failed\r\n"),
    }
}

/// Open the data directory, put it under the engine and restore its state.
pub fn open(cfg: &Config, engine: &mut Engine) -> Result<Option<Arc<DiskTier>>, String> {
    let Some(dir) = &cfg.persistence.data_dir else { return Ok(None) };
    let dir = dir.trim_end_matches('/');
    let dir = if dir.is_empty() { "/" } else { dir };
    if std::fs::metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(format!(
            "--data-dir {dir} is not a directory (a file of that name is in the way): \
             give a directory, or a path where one can be created"
        ));
    }
    let shares = Shares::of(cfg.memory_limit, cfg.persistence.disk_cache);
    if let Some(asked) = cfg.persistence.disk_cache.filter(|&c| c > shares.cache) {
        log::warn!(
            "--disk-cache {} MiB is more than half of -m {} MiB: the block cache takes at most {} MiB of it \
             (-m is the budget of everything the server holds; docs/memory.md)",
            asked >> 20,
            cfg.memory_limit >> 20,
            shares.cache >> 20
        );
    }
    let opts = Options {
        dir: dir.into(),
        durability: if cfg.persistence.durability_sync { Durability::Sync } else { Durability::Async },
        flush_interval: Duration::from_millis(cfg.persistence.flush_interval_ms),
        disk_limit: cfg.persistence.disk_limit,
        cache_bytes: shares.cache,
        max_pending_bytes: shares.queue,
        stage_bytes: shares.stage,
    };
    let disk = match DiskTier::open(opts.clone()) {
        Ok(d) => d,
        Err(e) if cfg.persistence.data_dir_recover && e.contains("damaged") => {
            let aside = format!("{dir}.damaged-{}", engine.clock().unix_now());
            std::fs::rename(dir, &aside).map_err(|r| format!("{e}\ncould not move it aside: {r}"))?;
            log::error!("{e}");
            log::warn!("moved the damaged data directory to {aside}; starting empty");
            DiskTier::open(opts)?
        }
        Err(e) => return Err(e),
    };
    let r = disk.report().clone();
    let how =
        if r.clean || r.created { "" } else { "; the last run did not shut down cleanly: its journal was replayed" };
    let replayed = if r.replayed > 0 {
        format!("; {} changes replayed from the write-ahead log", r.replayed)
    } else {
        String::new()
    };
    log::info!(
        "data dir {dir}: {} ({} items, {} durability){how}{replayed}",
        if r.created { "created" } else { "opened" },
        r.items,
        if cfg.persistence.durability_sync { "sync" } else { "async" },
    );
    if let Some((recorded, recovered)) = r.lost {
        log::error!(
            "data dir {dir} is damaged: its journal was cut short; writes up to sequence {recorded} \
             were durable but only {recovered} could be recovered, so up to {} acknowledged writes are lost. \
             The rest was recovered and is served.",
            recorded - recovered
        );
    }
    if r.reindexed > 0 {
        log::info!("data dir {dir}: indexed {} items for --disk-limit", r.reindexed);
    }
    let disk = Arc::new(disk);
    if !r.created {
        engine.set_cas_floor(disk.cas_high_water().saturating_add(CAS_RESTART_GAP));
    }
    engine.restore_flush_deadline(disk.flush_deadline());
    engine.set_tier(disk.clone());
    disk.verify_in_background();
    Ok(Some(disk))
}
