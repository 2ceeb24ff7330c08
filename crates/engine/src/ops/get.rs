//! Retrieval: `get`, `gets`, `gat`, `gats`, binary GET/GETK/GAT.

use crate::item::Item;
use crate::store::{Engine, Miss};
use crate::tier::Receipt;

/// How a retrieval treats the item it finds.
#[derive(Clone, Copy, Debug, Default)]
pub struct GetOptions {
    /// Also set a new TTL (a client exptime), as `gat` does.
    pub touch: Option<i64>,
}

/// Look `key` up and hand the live item (if any) to `f` while the shard is locked,
/// counting hits and misses as memcached does.
pub fn get<R>(
    engine: &Engine,
    key: &[u8],
    opts: GetOptions,
    receipt: &Receipt,
    f: impl FnOnce(Option<&Item>) -> R,
) -> R {
    let mut a = engine.access(key, receipt);
    let touched = opts.touch.map(|t| engine.clock().realtime(t));
    let found = a.lookup().map(|_| ());
    {
        let st = a.stats();
        // memcached counts gat/touch as touch commands, not gets.
        if touched.is_some() {
            st.cmd_touch += 1;
        } else {
            st.cmd_get += 1;
        }
        match found {
            Ok(()) => {
                if touched.is_some() {
                    st.touch_hits += 1;
                } else {
                    st.get_hits += 1;
                }
            }
            Err(why) => {
                if touched.is_some() {
                    st.touch_misses += 1;
                } else {
                    st.get_misses += 1;
                }
                match why {
                    Miss::Expired => st.get_expired += 1,
                    Miss::Flushed => st.get_flushed += 1,
                    Miss::Absent => {}
                }
            }
        }
    }
    if found.is_err() {
        return f(None);
    }
    a.bump();
    // The reply shows the item as found; the new TTL applies after (so `gat -1` still
    // returns the value once, as in memcached).
    let r = f(a.lookup().ok().map(|it| &*it));
    if let Some(exp) = touched {
        if let Ok(it) = a.lookup() {
            it.exptime = exp;
        }
        a.changed();
    }
    r
}
