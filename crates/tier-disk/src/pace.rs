//! Compaction out of the foreground's way (issue 44 item 3).
//!
//! fjall compacts on its own worker threads (`fjall:worker`). After a bulk load it has
//! many tables to merge, and at normal priority those threads take CPU from the
//! connections' workers for seconds: seed 001's replay went from 2,100 to 1,140
//! transactions/s with p99 at 77 ms until it settled. So while compaction keeps up (fjall's
//! level 0 holds at most [`RELAXED_L0`] tables) its threads run at nice [`BACKGROUND_NICE`]:
//! the scheduler gives them what the foreground leaves (all of it while the server is idle);
//! once level 0 reaches [`URGENT_L0`] tables they run at the process's own priority until
//! it is back at [`RELAXED_L0`], so compaction never falls behind without bound (fjall
//! stops ingestions at 30 level-0 tables; every level-0 table is one more place a read
//! looks, with its filter held in memory).
//!
//! fjall starts its workers itself; they are found by name in `/proc/self/task` and their
//! priority set with `setpriority` (per thread on Linux). Looked at after each ingestion and
//! every second by the ingest thread. Bringing a thread back to nice 0 needs root,
//! `CAP_SYS_NICE` or an `RLIMIT_NICE` of 20 (systemd: `LimitNICE=20`); without it the
//! threads are never lowered (a compaction that could not be brought back could fall
//! behind for good), which is said at start.

use std::sync::atomic::{AtomicI32, Ordering};

/// Level-0 tables at or below which compaction runs in the background.
pub const RELAXED_L0: usize = 4;
/// Level-0 tables at or above which compaction runs at normal priority.
pub const URGENT_L0: usize = 12;
/// The compaction threads' nice value while compaction keeps up.
pub const BACKGROUND_NICE: i32 = 19;

/// Paces fjall's compaction threads by how far level 0 is behind.
pub struct Pacer {
    /// The nice value last set on the threads (-1: not yet set).
    nice: AtomicI32,
    /// Whether this process may bring a thread back to nice 0 (else pacing is off).
    can_restore: bool,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer { nice: AtomicI32::new(-1), can_restore: may_restore() }
    }
}

/// Whether this process may lower a thread's nice value back to 0: root (or a capability,
/// found out by trying on a thread that is at 0 already is not possible), or an
/// `RLIMIT_NICE` of at least 20.
fn may_restore() -> bool {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: plain system calls; `lim` is a valid out-parameter.
    unsafe { libc::geteuid() == 0 || (libc::getrlimit(libc::RLIMIT_NICE, &mut lim) == 0 && lim.rlim_cur >= 20) }
}

impl Pacer {
    /// Whether compaction is paced (see [`may_restore`]).
    pub fn active(&self) -> bool {
        self.can_restore
    }

    /// Set the compaction threads' priority for `l0` level-0 tables; returns the nice
    /// value now in force. Threads fjall started since (a reopen) are set too.
    pub fn pace(&self, l0: usize) -> i32 {
        if !self.can_restore {
            return 0;
        }
        let was = self.nice.load(Ordering::Relaxed);
        let nice = match l0 {
            n if n >= URGENT_L0 => 0,
            n if n <= RELAXED_L0 => BACKGROUND_NICE,
            _ if was < 0 => BACKGROUND_NICE,
            _ => was,
        };
        set_threads("fjall:worker", nice);
        if nice != was {
            if was >= 0 {
                log::debug!("compaction: {l0} level-0 tables, fjall's workers at nice {nice}");
            }
            self.nice.store(nice, Ordering::Relaxed);
        }
        nice
    }

    /// The nice value in force (-1 before the first look).
    pub fn nice(&self) -> i32 {
        self.nice.load(Ordering::Relaxed)
    }
}

/// Set the nice value of this process's threads named `name`; returns how many were
/// changed (those already at it are left).
fn set_threads(name: &str, nice: i32) -> usize {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    let mut n = 0;
    for t in tasks.flatten() {
        let Some(tid) = t.file_name().to_str().and_then(|s| s.parse::<libc::id_t>().ok()) else { continue };
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        // SAFETY: plain system calls on a thread id of this process.
        unsafe {
            *libc::__errno_location() = 0;
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            if now != nice && libc::setpriority(libc::PRIO_PROCESS, tid, nice) == 0 {
                n += 1;
            }
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread of that name is found and set (raising a nice value needs no privilege;
    /// lowering it back may, so the test only raises).
    #[test]
    fn threads_are_found_by_name_and_paced() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<libc::id_t>();
        let h = std::thread::Builder::new()
            .name("pace-test".into())
            .spawn(move || {
                // SAFETY: gettid has no preconditions.
                ready_tx.send(unsafe { libc::gettid() } as libc::id_t).unwrap();
                let _ = rx.recv();
            })
            .unwrap();
        let tid = ready_rx.recv().unwrap();
        assert_eq!(set_threads("pace-test", 7), 1);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::getpriority(libc::PRIO_PROCESS, tid) }, 7);
        assert_eq!(set_threads("pace-test", 7), 0, "already at it");
        tx.send(()).unwrap();
        h.join().unwrap();
        let p = Pacer { nice: AtomicI32::new(-1), can_restore: true };
        assert_eq!(p.pace(0), BACKGROUND_NICE);
        assert_eq!(p.pace(8), BACKGROUND_NICE, "between the marks it keeps what it had");
        assert_eq!(p.pace(URGENT_L0), 0);
        assert_eq!(p.pace(8), 0);
        assert_eq!(p.pace(RELAXED_L0), BACKGROUND_NICE);
    }
}
