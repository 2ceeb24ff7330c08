//! What a persistent set costs the disk tier (`cargo bench -p tier-disk --bench writes`):
//! 50 writers on one thread, as 50 connections on one worker, each storing a 100-byte
//! value under one of 100k keys and waiting for its acknowledgement, in async and in
//! sync mode. Reports the process's CPU time per set (the committer, ingest and fjall
//! threads included) and sets per second: the tier's share of `bench/persist.sh`'s
//! server CPU per op, without the network, and steadier than it on a noisy machine.

use std::rc::Rc;
use std::time::{Duration, Instant};

use engine::tier::{Tier, TierItem};
use tier_disk::{DiskTier, Durability, Options};

const WRITERS: usize = 50;
const KEYS: u64 = 100_000;

fn cpu_time() -> Duration {
    let (user, sys) = engine::clock::process_cpu();
    user + sys
}

/// Drive `sets` acknowledged sets through a fresh tier; returns (CPU us per set, sets/s).
fn run(durability: Durability, sets: u64) -> (f64, f64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = Options {
        dir: dir.path().to_path_buf(),
        durability,
        flush_interval: Duration::from_secs(1),
        disk_limit: 0,
        cache_bytes: 32 << 20,
        max_pending_bytes: 64 << 20,
        stage_bytes: tier_disk::STAGE_MAX,
    };
    let tier = Rc::new(DiskTier::open(opts).expect("open"));
    let rt = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    let local = tokio::task::LocalSet::new();
    let (cpu0, t0) = (cpu_time(), Instant::now());
    for w in 0..WRITERS as u64 {
        let tier = tier.clone();
        local.spawn_local(async move {
            let mut key = Vec::with_capacity(16);
            let value = [b'v'; 100];
            for i in 0..sets / WRITERS as u64 {
                key.clear();
                key.extend_from_slice(format!("key:{}", (w * 7919 + i * 104_729) % KEYS).as_bytes());
                let item = TierItem { value: &value[..], flags: 0, exptime_unix: 0, cas: i, stored_unix: 0, bits: 0 };
                let seq = tier.put(&key, item, true, true);
                tier.wait_ack(seq).await.expect("acknowledged");
            }
        });
    }
    rt.block_on(local);
    let (cpu, wall) = (cpu_time() - cpu0, t0.elapsed());
    tier.close();
    (cpu.as_secs_f64() * 1e6 / sets as f64, sets as f64 / wall.as_secs_f64())
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let reps = if quick { 1 } else { 5 };
    for (name, durability, sets) in [("async", Durability::Async, 2_000_000), ("sync", Durability::Sync, 200_000)] {
        let sets = if quick { sets / 10 } else { sets };
        let mut runs: Vec<(f64, f64)> = (0..reps).map(|_| run(durability, sets)).collect();
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (cpu, rate) = runs[runs.len() / 2];
        let (lo, hi) = (runs[0].0, runs[runs.len() - 1].0);
        println!("{name:<6} {sets} sets x {reps}: {cpu:.2} us CPU/set (min {lo:.2}, max {hi:.2}), {rate:.0} sets/s");
    }
}
