//! `stats detail`: per-key-prefix counters (memcached's `stats_prefix_*`), kept only while
//! enabled (`stats detail on`, or `-D`). The prefix is the key up to the first delimiter;
//! keys without one are not counted.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

/// Counters of one prefix.
#[derive(Default, Clone, Copy)]
struct Prefix {
    get: u64,
    hit: u64,
    set: u64,
    del: u64,
}

/// The per-prefix table.
pub struct Detail {
    enabled: AtomicBool,
    delimiter: u8,
    prefixes: Mutex<BTreeMap<Vec<u8>, Prefix>>,
}

impl Detail {
    /// A table for prefixes ending at `delimiter`; `enabled` as with `-D`.
    pub fn new(delimiter: u8, enabled: bool) -> Detail {
        Detail { enabled: AtomicBool::new(enabled), delimiter, prefixes: Mutex::new(BTreeMap::new()) }
    }

    /// `stats detail on|off`.
    pub fn set_enabled(&self, on: bool) {
        self.enabled.store(on, Ordering::Relaxed);
    }

    #[inline]
    fn record(&self, key: &[u8], f: impl FnOnce(&mut Prefix)) {
        if !self.enabled.load(Ordering::Relaxed) {
            return;
        }
        let Some(end) = key.iter().position(|&b| b == self.delimiter) else { return };
        f(self.prefixes.lock().entry(key[..end].to_vec()).or_default());
    }

    /// A retrieval of `key`.
    #[inline]
    pub fn get(&self, key: &[u8], hit: bool) {
        self.record(key, |p| {
            p.get += 1;
            p.hit += hit as u64;
        });
    }

    /// A store of `key`.
    #[inline]
    pub fn set(&self, key: &[u8]) {
        self.record(key, |p| p.set += 1);
    }

    /// A delete of `key`.
    #[inline]
    pub fn delete(&self, key: &[u8]) {
        self.record(key, |p| p.del += 1);
    }

    /// `stats detail dump`: one `PREFIX` line per prefix, then `END`.
    pub fn dump(&self, out: &mut Vec<u8>) {
        for (name, p) in self.prefixes.lock().iter() {
            out.extend_from_slice(b"PREFIX ");
            out.extend_from_slice(name);
            out.extend_from_slice(format!(" get {} hit {} set {} del {}\r\n", p.get, p.hit, p.set, p.del).as_bytes());
        }
        out.extend_from_slice(b"END\r\n");
    }
}
