//! The stored item and what it costs in memory.

use std::alloc::Layout;
use std::ptr::NonNull;

/// The item was returned by a read at least once (memcached's `ITEM_FETCHED`).
pub const FETCHED: u8 = 1;
/// A meta "win" token was handed out for this item: one client recaches it.
pub const WON: u8 = 2;
/// The item was invalidated by a meta delete/set with `I`: it is served as stale.
pub const STALE: u8 = 4;
/// The key was sent base64-encoded (meta `b` flag); meta replies re-encode it.
pub const KEY_BINARY: u8 = 8;

/// memcached only refreshes an item's access time when it is older than this.
pub const ITEM_UPDATE_INTERVAL: u32 = 60;

/// One key with its value and metadata: a 40-byte slot (key and value behind a thin
/// pointer) beside the one allocation that holds the bytes.
#[derive(Debug)]
pub struct Item {
    /// Key bytes followed by value bytes.
    data: Bytes,
    key_len: u8,
    /// Opaque client flags.
    pub flags: u32,
    /// Relative expiry time; 0 never expires.
    pub exptime: u32,
    /// Relative time of the last access (as memcached's `it->time`, refreshed at most once
    /// a minute). A delayed `flush_all` kills the items whose access time is before its
    /// deadline, as memcached does: an item read after the deadline is checked first.
    pub atime: u32,
    /// Internal version, unique per write; the CAS unique clients see when CAS is on.
    pub cas: u64,
    /// [`FETCHED`], [`WON`], [`STALE`].
    pub bits: u8,
    // Eviction bookkeeping, owned by the shard.
    pub(crate) prev: u32,
    pub(crate) next: u32,
    pub(crate) queue: u8,
    pub(crate) freq: u8,
}

impl Item {
    /// A new item (not yet linked into any queue).
    pub fn new(key: &[u8], value_parts: &[&[u8]], flags: u32, exptime: u32, now: u32) -> Item {
        debug_assert!(key.len() <= 255);
        let data = Bytes::concat(key, value_parts);
        Item {
            data,
            key_len: key.len() as u8,
            flags,
            exptime,
            atime: now,
            cas: 0,
            bits: 0,
            prev: u32::MAX,
            next: u32::MAX,
            queue: 0,
            freq: 0,
        }
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.data.as_slice()[..self.key_len as usize]
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        &self.data.as_slice()[self.key_len as usize..]
    }

    /// Replace the value bytes (used by in-place incr/decr of equal length).
    pub fn value_mut(&mut self) -> &mut [u8] {
        let k = self.key_len as usize;
        &mut self.data.as_mut_slice()[k..]
    }

    /// Whether the item's TTL has run out at relative time `now`.
    #[inline]
    pub fn is_expired(&self, now: u32) -> bool {
        self.exptime != 0 && self.exptime <= now
    }

    /// Whether a flag bit is set.
    #[inline]
    pub fn has(&self, bit: u8) -> bool {
        self.bits & bit != 0
    }

    /// Bytes this item holds in memory: its allocation (with malloc's header and rounding),
    /// its slot and its hash-table entry.
    pub fn cost(&self) -> usize {
        cost_of(self.data.as_slice().len())
    }
}

/// Memory cost of an item whose key plus value are `data_len` bytes: the allocation as
/// glibc's malloc makes it (the 4-byte length, its own 8-byte header, rounded up to 16
/// bytes, at least 32), the slot and the hash-table entry.
pub fn cost_of(data_len: usize) -> usize {
    let alloc = ((LEN_BYTES + data_len + 8 + 15) & !15).max(32);
    alloc + std::mem::size_of::<Item>() + 8
}

/// memcached's size of an item for the `-I` limit: header, key, value, CRLF, CAS and flags.
pub fn memcached_item_size(key_len: usize, value_len: usize, flags: u32, use_cas: bool) -> usize {
    48 + key_len + 1 + value_len + 2 + if use_cas { 8 } else { 0 } + if flags != 0 { 4 } else { 0 }
}

/// Bytes of the length that heads an item's allocation.
const LEN_BYTES: usize = 4;

/// Key and value bytes behind a thin pointer: one allocation holding a `u32` length, then
/// the bytes. Half a `Box<[u8]>` in the slot; the length mostly lands in room malloc's
/// 16-byte rounding leaves anyway (113 bytes of key and value: 128 either way). Empty (a
/// vacant slot) allocates nothing.
struct Bytes(Option<NonNull<u8>>);

// SAFETY: `Bytes` owns its allocation alone, as a `Box<[u8]>` would.
unsafe impl Send for Bytes {}
// SAFETY: shared access only reads.
unsafe impl Sync for Bytes {}

impl Bytes {
    /// `first` followed by `rest`, copied into one allocation (every byte written once).
    fn concat(first: &[u8], rest: &[&[u8]]) -> Bytes {
        let len = first.len() + rest.iter().map(|p| p.len()).sum::<usize>();
        if len == 0 {
            return Bytes(None);
        }
        let n = u32::try_from(len).expect("an item's key and value fit in 4 GiB");
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size; the length is written at its aligned start
        // and the parts, `len` bytes in all, right after it, so every byte is initialized.
        unsafe {
            let p = std::alloc::alloc(layout);
            let Some(p) = NonNull::new(p) else { std::alloc::handle_alloc_error(layout) };
            p.cast::<u32>().write(n);
            let mut at = p.as_ptr().add(LEN_BYTES);
            for part in std::iter::once(first).chain(rest.iter().copied()) {
                std::ptr::copy_nonoverlapping(part.as_ptr(), at, part.len());
                at = at.add(part.len());
            }
            Bytes(Some(p))
        }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(LEN_BYTES + len, std::mem::align_of::<u32>()).expect("item layout")
    }

    /// The bytes.
    #[inline]
    fn as_slice(&self) -> &[u8] {
        match self.0 {
            None => &[],
            // SAFETY: the allocation holds its length, then that many initialized bytes.
            Some(p) => unsafe {
                let len = p.cast::<u32>().read() as usize;
                std::slice::from_raw_parts(p.as_ptr().add(LEN_BYTES), len)
            },
        }
    }

    /// The bytes, mutably.
    #[inline]
    fn as_mut_slice(&mut self) -> &mut [u8] {
        match self.0 {
            None => &mut [],
            // SAFETY: as above, and `&mut self` makes the access exclusive.
            Some(p) => unsafe {
                let len = p.cast::<u32>().read() as usize;
                std::slice::from_raw_parts_mut(p.as_ptr().add(LEN_BYTES), len)
            },
        }
    }
}

impl Drop for Bytes {
    fn drop(&mut self) {
        if let Some(p) = self.0 {
            // SAFETY: allocated by `concat` with this layout (its length is stored in it).
            unsafe {
                let len = p.cast::<u32>().read() as usize;
                std::alloc::dealloc(p.as_ptr(), Self::layout(len));
            }
        }
    }
}

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} bytes", self.as_slice().len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_value_round_trip_and_the_slot_is_40_bytes() {
        let mut it = Item::new(b"key", &[b"va", b"lue"], 7, 0, 1);
        assert_eq!((it.key(), it.value()), (&b"key"[..], &b"value"[..]));
        it.value_mut().copy_from_slice(b"VALUE");
        assert_eq!(it.value(), b"VALUE");
        let empty = Item::new(&[], &[], 0, 0, 0);
        assert_eq!((empty.key(), empty.value()), (&b""[..], &b""[..]));
        let big = vec![9u8; 1 << 20];
        assert_eq!(Item::new(b"k", &[&big], 0, 0, 0).value(), &big[..]);
        assert_eq!(std::mem::size_of::<Item>(), 40);
        // 13-byte key + 100-byte value: 128-byte allocation + slot + hash entry.
        assert_eq!(cost_of(113), 176);
    }
}
