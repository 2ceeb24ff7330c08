//! memcached's clock: seconds since the process started, and its TTL rules.
//!
//! Times inside the engine are "relative" seconds (`rel`), as in memcached. Like memcached,
//! the relative clock starts a little above zero so that `1` can mean "already expired".

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Exptimes above this many seconds (30 days) are absolute unix times.
pub const REALTIME_MAXDELTA: i64 = 60 * 60 * 24 * 30;

/// memcached starts its relative clock this many seconds before the real start.
const START_OFFSET: u32 = 62;

/// A shared relative clock, advanced by a background thread.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

struct Inner {
    now: AtomicU32,
    started: Instant,
    /// Unix time that corresponds to relative time 0.
    process_started: i64,
}

impl Clock {
    /// A clock that starts now and is advanced by its own thread, which wakes once a
    /// second, just after each second of the clock begins (a wake-up is a context switch
    /// on a core the workers share: memcached's clock also ticks once a second).
    pub fn start() -> Clock {
        let clock = Clock::manual();
        let c = clock.clone();
        std::thread::Builder::new()
            .name("clock".into())
            .spawn(move || loop {
                std::thread::sleep(c.until_next_second());
                c.tick();
            })
            .expect("spawn clock thread");
        clock
    }

    /// How long until just after the next whole second since the start (1 ms past it, so
    /// the tick that follows reads the new second).
    fn until_next_second(&self) -> Duration {
        let e = self.inner.started.elapsed();
        Duration::from_secs(e.as_secs() + 1) - e + Duration::from_millis(1)
    }

    /// A clock that only moves when [`Clock::tick`] or [`Clock::advance`] is called.
    pub fn manual() -> Clock {
        let unix = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
        Clock {
            inner: Arc::new(Inner {
                now: AtomicU32::new(START_OFFSET),
                started: Instant::now(),
                process_started: unix - START_OFFSET as i64,
            }),
        }
    }

    /// Re-read the monotonic clock.
    pub fn tick(&self) {
        let secs = self.inner.started.elapsed().as_secs() as u32 + START_OFFSET;
        self.inner.now.fetch_max(secs, Ordering::Relaxed);
    }

    /// Move the clock forward (tests).
    pub fn advance(&self, secs: u32) {
        self.inner.now.fetch_add(secs, Ordering::Relaxed);
    }

    /// Current relative time in seconds.
    #[inline]
    pub fn now(&self) -> u32 {
        self.inner.now.load(Ordering::Relaxed)
    }

    /// Unix time of relative time 0.
    pub fn process_started(&self) -> i64 {
        self.inner.process_started
    }

    /// Current unix time as the engine sees it.
    pub fn unix_now(&self) -> i64 {
        self.inner.process_started + self.now() as i64
    }

    /// Convert a client exptime to relative time, exactly as memcached's `realtime()`:
    /// 0 never expires, up to 30 days is relative, larger is a unix time, and a negative
    /// exptime is already expired.
    pub fn realtime(&self, exptime: i64) -> u32 {
        let exptime = if exptime < 0 { REALTIME_MAXDELTA + 1 } else { exptime };
        if exptime == 0 {
            return 0;
        }
        if exptime > REALTIME_MAXDELTA {
            if exptime <= self.inner.process_started {
                return 1;
            }
            let rel = exptime - self.inner.process_started;
            return rel.min(u32::MAX as i64) as u32;
        }
        (exptime + self.now() as i64).min(u32::MAX as i64) as u32
    }

    /// Relative exptime back to a unix time (0 stays 0).
    pub fn to_unix(&self, rel: u32) -> i64 {
        if rel == 0 {
            0
        } else {
            self.inner.process_started + rel as i64
        }
    }

    /// Seconds since the server started (memcached's `uptime`).
    pub fn uptime(&self) -> u32 {
        self.now() - START_OFFSET.min(self.now())
    }
}

/// memcached's exptime rule on unix times, for stores that keep absolute times (SQL
/// containers): 0 never expires; negative is already expired (a time in the past, never
/// 0); up to [`REALTIME_MAXDELTA`] is relative to `now`; above that an absolute unix time.
pub fn absolute_unix_exptime(exptime: i64, now: i64) -> i64 {
    if exptime == 0 {
        0
    } else if exptime < 0 {
        (now - 1).max(1)
    } else if exptime <= REALTIME_MAXDELTA {
        now + exptime
    } else {
        exptime
    }
}

/// Seconds left before an absolute unix exptime, as meta's `t` flag reports it: -1 for
/// none, 0 once passed.
pub fn ttl_left_unix(exptime: i64, now: i64) -> i64 {
    if exptime == 0 {
        -1
    } else {
        (exptime - now).max(0)
    }
}

/// CPU time this process has used so far, (user, system): what `stats` reports as
/// `rusage_user`/`rusage_system`, what worker rotation watches, and what benchmarks divide by.
pub fn process_cpu() -> (std::time::Duration, std::time::Duration) {
    // SAFETY: getrusage fills the struct we pass; a zeroed rusage is a valid value.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_rules() {
        let c = Clock::manual();
        let now = c.now();
        assert_eq!(c.realtime(0), 0);
        assert_eq!(c.realtime(10), now + 10);
        assert_eq!(c.realtime(-1), 1);
        assert_eq!(c.realtime(REALTIME_MAXDELTA), now + REALTIME_MAXDELTA as u32);
        // An absolute time in the past is already expired.
        assert_eq!(c.realtime(REALTIME_MAXDELTA + 1), 1);
        let future = c.unix_now() + 100;
        assert_eq!(c.realtime(future), now + 100);
    }

    #[test]
    #[cfg_attr(miri, ignore = "real time: miri runs too slowly for a 50 ms tolerance")]
    fn the_clock_thread_ticks_each_second() {
        let c = Clock::start();
        let wait = c.until_next_second();
        assert!(wait > Duration::from_millis(1) && wait <= Duration::from_millis(1001), "{wait:?}");
        let n = c.now();
        std::thread::sleep(wait + Duration::from_millis(50));
        assert_eq!(c.now(), n + 1, "the clock moved on within 50 ms of the second");
    }
}
