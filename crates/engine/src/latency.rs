//! Latency histograms: how long requests took, in fixed buckets from 1 µs to 10 s.
//!
//! A [`Histogram`] is a row of relaxed atomic counters, so recording costs one bucket
//! search and two uncontended additions; the hot paths keep one per worker thread (or per
//! container, per front end) so threads do not share its cache lines, and a scrape sums
//! [`Snapshot`]s. Buckets are Prometheus's `le` upper bounds, in seconds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Upper bounds of the buckets, in seconds (a last, implicit bucket holds the rest).
pub const BOUNDS: [f64; 21] = [
    0.000001, 0.0000025, 0.000005, 0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// The same bounds in nanoseconds, for the search.
const BOUNDS_NS: [u64; 21] = [
    1_000,
    2_500,
    5_000,
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    10_000_000_000,
];

/// Number of buckets, the overflow bucket included.
pub const BUCKETS: usize = BOUNDS.len() + 1;

/// A latency histogram updated without locks.
#[derive(Debug, Default)]
pub struct Histogram {
    counts: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl Histogram {
    /// Count one duration.
    #[inline]
    pub fn record(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = BOUNDS_NS.iter().position(|&b| ns <= b).unwrap_or(BOUNDS.len());
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// Count the time since `start`.
    #[inline]
    pub fn record_since(&self, start: Instant) {
        self.record(start.elapsed());
    }

    /// The counts now.
    pub fn snapshot(&self) -> Snapshot {
        let mut s = Snapshot::default();
        s.add(self);
        s
    }

    /// Zero it (`stats reset`).
    pub fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
        self.sum_ns.store(0, Ordering::Relaxed);
    }
}

/// A histogram's counts at one moment (a sum of several histograms, possibly).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Observations per bucket (not cumulative), the last one above every bound.
    pub counts: [u64; BUCKETS],
    /// Sum of all observations, nanoseconds.
    pub sum_ns: u64,
}

impl Snapshot {
    /// Add a live histogram's counts.
    pub fn add(&mut self, h: &Histogram) {
        for (to, from) in self.counts.iter_mut().zip(&h.counts) {
            *to += from.load(Ordering::Relaxed);
        }
        self.sum_ns += h.sum_ns.load(Ordering::Relaxed);
    }

    /// Observations in all.
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Sum of the observations in seconds.
    pub fn sum_seconds(&self) -> f64 {
        self.sum_ns as f64 / 1e9
    }

    /// The upper bound of the bucket holding quantile `q` (0..=1), in seconds; `None` when
    /// empty, infinity when it lies past the last bound.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(BOUNDS.get(i).copied().unwrap_or(f64::INFINITY));
            }
        }
        Some(f64::INFINITY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_by_upper_bound() {
        let h = Histogram::default();
        h.record(Duration::from_micros(1)); // on the first bound: first bucket
        h.record(Duration::from_nanos(1001));
        h.record(Duration::from_millis(3));
        h.record(Duration::from_secs(60)); // past the last bound
        let s = h.snapshot();
        assert_eq!(s.counts[0], 1);
        assert_eq!(s.counts[1], 1);
        assert_eq!(s.counts[11], 1); // <= 5 ms
        assert_eq!(s.counts[BUCKETS - 1], 1);
        assert_eq!(s.count(), 4);
        assert_eq!(s.quantile(0.5), Some(0.0000025));
        assert_eq!(s.quantile(1.0), Some(f64::INFINITY));
        h.reset();
        assert_eq!(h.snapshot().count(), 0);
        assert_eq!(h.snapshot().quantile(0.5), None);
    }

    #[test]
    fn bounds_agree() {
        for (s, ns) in BOUNDS.iter().zip(BOUNDS_NS) {
            assert_eq!((s * 1e9).round() as u64, ns);
        }
    }
}
