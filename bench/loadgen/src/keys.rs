//! Key distributions: the xorshift RNG, the YCSB zipfian generator and `--dist` selection.

use crate::args::{die, Args};

pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub(crate) fn next(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        (((self.next() >> 32) as u128 * n as u128) >> 32) as u64
    }
    pub(crate) fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipfian key ranks (YCSB's generator, after Gray et al., "Quickly generating billion-record
/// synthetic databases"): rank r in 0..n with probability ~ 1/(r+1)^theta. Ranks are spread
/// over the key space by a fixed bijection (r * mult mod n), so hot keys are not neighbours.
#[derive(Clone, Copy)]
pub(crate) struct Zipf {
    pub(crate) n: u64,
    pub(crate) theta: f64,
    pub(crate) alpha: f64,
    pub(crate) zetan: f64,
    pub(crate) eta: f64,
    pub(crate) mult: u64,
}

pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl Zipf {
    pub(crate) fn new(n: u64, theta: f64) -> Zipf {
        if !(theta > 0.0 && theta < 1.0) {
            die("--zipf-theta must be in (0, 1)");
        }
        let n = n.max(2);
        let zeta = |m: u64| (1..=m).map(|i| 1.0 / (i as f64).powf(theta)).sum::<f64>();
        let zetan = zeta(n);
        let zeta2 = zeta(2);
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        let mut mult = 0x9E37_79B9u64 % n; // odd; stepped until coprime with n
        while mult < 2 || gcd(mult, n) != 1 {
            mult = (mult + 1) % n;
        }
        Zipf { n, theta, alpha: 1.0 / (1.0 - theta), zetan, eta, mult }
    }
    pub(crate) fn rank(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        ((self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64).min(self.n - 1)
    }
    pub(crate) fn index(&self, u: f64) -> u64 {
        ((self.rank(u) as u128 * self.mult as u128) % self.n as u128) as u64
    }
}

#[derive(Clone, Copy)]
pub(crate) enum KeySource {
    /// uniformly random key indexes in 0..n
    Random(u64),
    /// zipfian key indexes in 0..n (`--dist zipf`)
    Zipf(Zipf),
    /// each index once, in order, then stop
    Seq { next: u64, end: u64 },
}

/// `--dist uniform` (default) or `--dist zipf [--zipf-theta 0.99]` over key indexes 0..keys.
pub(crate) fn random_keys(a: &Args, keys: u64) -> KeySource {
    match a.str("dist", "uniform").as_str() {
        "uniform" => KeySource::Random(keys),
        "zipf" => KeySource::Zipf(Zipf::new(keys, a.num("zipf-theta", 0.99))),
        other => die(&format!("--dist must be uniform or zipf, not {other:?}")),
    }
}
