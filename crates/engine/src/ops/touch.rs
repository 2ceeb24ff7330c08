//! `touch`: set a new TTL without fetching.

use crate::store::Engine;
use crate::tier::Receipt;

/// Give `key` a new TTL (a client exptime); returns whether the key was there.
pub fn touch(engine: &Engine, key: &[u8], exptime: i64, receipt: &Receipt) -> bool {
    let rel = engine.clock().realtime(exptime);
    let mut a = engine.access(key, receipt);
    a.stats().cmd_touch += 1;
    let hit = match a.lookup() {
        Ok(it) => {
            it.exptime = rel;
            true
        }
        Err(_) => false,
    };
    if hit {
        a.bump();
        a.changed();
        a.stats().touch_hits += 1;
    } else {
        a.stats().touch_misses += 1;
    }
    hit
}
