//! Worker rotation: a scheduling tick for worker threads that share a CPU.
//!
//! When the process may run on fewer CPUs than it has worker threads (`-t 4` on a
//! two-CPU machine, or a server pinned to one CPU with `taskset`), busy workers take
//! turns on a CPU. The kernel switches between two busy threads only at its scheduler
//! tick (4 ms at HZ=250) or when some thread wakes up, so a request that arrives on the
//! waiting worker's connection waits up to a tick. That was sqlcached's p99 in
//! `bench/run.sh` (servers pinned to one CPU, `-t 2`): 4.3 ms against memcached's 3 ms.
//! memcached gets shorter turns as a side effect: its LRU maintainer thread wakes about
//! every millisecond, and each wake-up lets the scheduler pick the other worker.
//!
//! So, in that case only, a thread of ours wakes every [`TICK`] while the process is
//! busy (it used at least half a CPU over the last interval; idle, it looks every
//! [`IDLE_CHECK`], and every [`DEEP_IDLE_CHECK`] once idle for [`DEEP_IDLE_AFTER`]),
//! which bounds a busy worker's turn to about a millisecond. With at least as many CPUs
//! as workers it does not run. It is said at start, and `stats settings` shows
//! `worker_rotation_us` (0: off).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often the rotation thread wakes while the process is busy.
pub const TICK: Duration = Duration::from_millis(1);
/// How often it looks whether the process became busy. Not longer: with 100 ms (ten idle
/// wake-ups a second instead of a hundred) a burst after a pause ran its first 100 ms on 4 ms
/// turns, and `bench/run.sh --cases "a b" --reps 3 --duration 6` (1 s slices) showed p99 at
/// 1.43x/1.09x memcached's instead of 0.69x/0.55x.
const IDLE_CHECK: Duration = Duration::from_millis(10);
/// How often it looks once the process has been idle for [`DEEP_IDLE_AFTER`]: an idle
/// server wakes ten times a second, not a hundred (memcached's LRU maintainer also backs
/// off when idle). Only the first 100 ms of a burst after a long pause run on 4 ms turns.
const DEEP_IDLE_CHECK: Duration = Duration::from_millis(100);
/// Idle time after which it looks every [`DEEP_IDLE_CHECK`].
const DEEP_IDLE_AFTER: Duration = Duration::from_secs(10);

/// The rotation thread's next sleep: [`TICK`] while busy, else [`IDLE_CHECK`], or
/// [`DEEP_IDLE_CHECK`] once the process has been idle for `idle_for` >= [`DEEP_IDLE_AFTER`].
fn next_wait(busy: bool, idle_for: Duration) -> Duration {
    match (busy, idle_for >= DEEP_IDLE_AFTER) {
        (true, _) => TICK,
        (false, false) => IDLE_CHECK,
        (false, true) => DEEP_IDLE_CHECK,
    }
}

static INTERVAL_US: AtomicU64 = AtomicU64::new(0);

/// The rotation tick in µs, 0 when rotation is off (for `stats settings`).
pub fn interval_us() -> u64 {
    INTERVAL_US.load(Ordering::Relaxed)
}

/// CPUs the calling thread may run on (at start: the process's affinity).
fn allowed_cpus() -> usize {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the kernel fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            libc::CPU_COUNT(&set).max(1) as usize
        } else {
            usize::MAX
        }
    }
}

/// CPU time the process has used (user + system).
fn cpu_time() -> Duration {
    let (user, sys) = engine::clock::process_cpu();
    user + sys
}

/// Starts the rotation thread if `workers` outnumber the CPUs this process may use.
pub fn start(workers: usize) {
    let cpus = allowed_cpus();
    if workers <= cpus {
        return;
    }
    let spawned = std::thread::Builder::new().name("rotate".into()).spawn(|| {
        let mut last = cpu_time();
        let mut wait = IDLE_CHECK;
        let mut idle_for = Duration::ZERO;
        loop {
            std::thread::sleep(wait);
            let now = cpu_time();
            let busy = now.saturating_sub(last) >= wait / 2;
            last = now;
            idle_for = if busy { Duration::ZERO } else { idle_for + wait };
            wait = next_wait(busy, idle_for);
        }
    });
    if spawned.is_ok() {
        INTERVAL_US.store(TICK.as_micros() as u64, Ordering::Relaxed);
        log::info!(
            "{workers} worker threads share {cpus} CPU(s): busy workers take turns of about {} ms \
             (worker_rotation_us)",
            TICK.as_millis()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Busy: 1 ms turns; idle: a look every 10 ms, every 100 ms after 10 s of idleness.
    #[test]
    fn waits_back_off_only_after_a_long_idle_time() {
        assert_eq!(next_wait(true, Duration::from_secs(60)), TICK);
        assert_eq!(next_wait(false, Duration::from_secs(1)), IDLE_CHECK);
        assert_eq!(next_wait(false, DEEP_IDLE_AFTER), DEEP_IDLE_CHECK);
    }

    #[test]
    fn affinity_and_cpu_time_are_read() {
        assert!(allowed_cpus() >= 1);
        // The kernel may account CPU time per scheduler tick, so spin until the clock
        // moves (bounded by wall time) rather than for a fixed amount of work: a fixed
        // loop finished inside one tick on CI and read the same time twice.
        let t0 = cpu_time();
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while cpu_time() == t0 && start.elapsed() < Duration::from_secs(5) {
            for i in 0..100_000u64 {
                x = x.wrapping_add(std::hint::black_box(i) * i);
            }
        }
        std::hint::black_box(x);
        assert!(cpu_time() > t0, "no CPU time accounted after 5 s of spinning");
    }
}
