//! The integer-key ranges of one table's results (`Scope::Range`), arranged so that the
//! ranges holding one key are found without scanning the others.
//!
//! Ranges are grouped by width class: class `c` holds ranges of width `hi - lo` in
//! `[2^(c-1), 2^c)` (class 0: single keys), each class ordered by `lo`. A range holding
//! key `k` in class `c` starts in `(k - 2^c, k]`, so an invalidation looks at that window
//! of each class only; every range starting in the upper half of the window holds `k`,
//! so at most the lower half are looked at in vain. Ranges wider than
//! [`MAX_RANGE_WIDTH`] are never stored: such reads are tagged table-level at planning.

use std::collections::BTreeMap;

use crate::hash::Hk;

/// Widest range (`hi - lo`) tagged as a range; wider reads are tagged table-level.
pub(crate) const MAX_RANGE_WIDTH: u64 = (1 << 20) - 1;

/// Number of width classes (class of `MAX_RANGE_WIDTH` is 20).
const CLASSES: usize = 21;

/// One table's ranges: per width class, `(lo, entry) → hi`.
#[derive(Default)]
pub(crate) struct Ranges {
    classes: Vec<BTreeMap<(i64, Hk), i64>>,
    len: usize,
}

/// The width class of `lo..=hi` (None: wider than [`MAX_RANGE_WIDTH`] or empty).
fn class(lo: i64, hi: i64) -> Option<usize> {
    let w = u64::try_from(hi as i128 - lo as i128).ok()?;
    (w <= MAX_RANGE_WIDTH).then(|| (u64::BITS - w.leading_zeros()) as usize)
}

impl Ranges {
    /// Add `lo..=hi` for `hk`; returns whether it is new, or None if it is too wide or
    /// empty (the planner never makes such ranges) and was not stored.
    pub fn insert(&mut self, lo: i64, hi: i64, hk: Hk) -> Option<bool> {
        let c = class(lo, hi)?;
        if self.classes.is_empty() {
            self.classes.resize_with(CLASSES, BTreeMap::new);
        }
        let new = self.classes[c].insert((lo, hk), hi).is_none();
        self.len += usize::from(new);
        Some(new)
    }

    /// Remove every range holding `k` except those of entries `keep` names, appending
    /// their entries to `out`; returns how many.
    pub fn drain_key_unless(&mut self, k: i64, keep: &dyn Fn(&Hk) -> bool, out: &mut Vec<Hk>) -> usize {
        let mut n = 0;
        for (c, m) in self.classes.iter_mut().enumerate() {
            if m.is_empty() {
                continue;
            }
            let from = k.saturating_sub((1i64 << c) - 1);
            let hit: Vec<(i64, Hk)> = m
                .range((from, [0u8; 16])..=(k, [0xffu8; 16]))
                .filter(|(key, hi)| **hi >= k && !keep(&key.1))
                .map(|(key, _)| *key)
                .collect();
            for key in hit {
                m.remove(&key);
                out.push(key.1);
                n += 1;
            }
        }
        self.len -= n;
        n
    }

    /// Remove everything, appending the entries to `out`; returns how many.
    pub fn drain_all(&mut self, out: &mut Vec<Hk>) -> usize {
        for m in &mut self.classes {
            out.extend(m.keys().map(|(_, h)| *h));
            m.clear();
        }
        std::mem::take(&mut self.len)
    }

    /// Keep only the ranges of entries `alive` says exist; returns how many are left.
    pub fn retain(&mut self, alive: &dyn Fn(&Hk) -> bool) -> usize {
        for m in &mut self.classes {
            m.retain(|(_, h), _| alive(h));
        }
        self.len = self.classes.iter().map(BTreeMap::len).sum();
        self.len
    }

    /// Ranges held.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hk(n: u8) -> Hk {
        [n; 16]
    }

    /// The entries a brute-force scan says hold `k`.
    fn holding(all: &[(i64, i64, u8)], k: i64) -> Vec<u8> {
        let mut v: Vec<u8> = all.iter().filter(|(lo, hi, _)| *lo <= k && k <= *hi).map(|r| r.2).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn classes() {
        assert_eq!(class(5, 5), Some(0));
        assert_eq!(class(5, 6), Some(1));
        assert_eq!(class(1, 100), Some(7));
        assert_eq!(class(0, MAX_RANGE_WIDTH as i64), Some(20));
        assert_eq!(class(0, MAX_RANGE_WIDTH as i64 + 1), None);
        assert_eq!(class(6, 5), None);
        assert_eq!(class(i64::MIN, i64::MAX), None);
    }

    #[test]
    fn bounds_are_inclusive() {
        let mut r = Ranges::default();
        assert_eq!(r.insert(10, 20, hk(1)), Some(true));
        assert_eq!(r.insert(10, 20, hk(1)), Some(false));
        assert_eq!(r.insert(0, MAX_RANGE_WIDTH as i64 + 1, hk(2)), None);
        assert_eq!(r.insert(5, 4, hk(2)), None);
        let mut out = Vec::new();
        assert_eq!(r.drain_key_unless(9, &|_| false, &mut out), 0);
        assert_eq!(r.drain_key_unless(21, &|_| false, &mut out), 0);
        assert_eq!(r.drain_key_unless(20, &|_| false, &mut out), 1);
        assert_eq!(r.insert(10, 20, hk(1)), Some(true));
        assert_eq!(r.drain_key_unless(10, &|_| false, &mut out), 1);
        assert_eq!(out, vec![hk(1), hk(1)]);
        assert_eq!(r.len(), 0);
    }

    #[test]
    fn matches_a_brute_force_scan() {
        // A deterministic pseudo-random mix of widths and positions, near i64's ends too.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..50 {
            let base = match round % 3 {
                0 => 0,
                1 => i64::MAX - 3000,
                _ => i64::MIN,
            };
            let mut r = Ranges::default();
            let mut all = Vec::new();
            for n in 0..120u8 {
                let lo = base.saturating_add((next() % 2000) as i64);
                let w = [0, 1, 3, 50, 99, 700, 1500][(next() % 7) as usize];
                let hi = lo.saturating_add(w);
                if r.insert(lo, hi, hk(n)) == Some(true) {
                    all.push((lo, hi, n));
                }
            }
            for _ in 0..40 {
                let k = base.saturating_add((next() % 2100) as i64);
                let mut out = Vec::new();
                let n = r.drain_key_unless(k, &|_| false, &mut out);
                let mut got: Vec<u8> = out.iter().map(|h| h[0]).collect();
                got.sort_unstable();
                assert_eq!(got, holding(&all, k), "key {k}");
                assert_eq!(n, got.len());
                all.retain(|(lo, hi, _)| !(*lo <= k && k <= *hi));
                assert_eq!(r.len(), all.len());
            }
            let mut out = Vec::new();
            assert_eq!(r.drain_all(&mut out), all.len());
        }
    }
}
