//! The stored item and what it costs in memory.
//!
//! An item is one packed record: a 27-byte header, then the key, then the value. The same
//! layout serves an item being built (a `Box<Item>`, see [`Item::new`]) and an item held in
//! a shard's segments ([`crate::segments`]), which copy the record in whole; the shard's hash
//! table points at records, so there is no per-item allocation, slot or list node.
//! A value too large for a segment stays in the allocation it was built in (the whole
//! `Box<Item>`, moved, not copied) and the record holds a pointer to it ([`LARGE`]).

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

/// Record state: reads since the policy last looked (S3-FIFO's 0-3 frequency).
pub(crate) const FREQ_MASK: u8 = 3;
/// Record state: removed; its bytes wait for its segment to be reclaimed.
pub(crate) const DEAD: u8 = 4;
/// Record state: the value lives in its own allocation; the record holds a pointer.
pub(crate) const LARGE: u8 = 8;

/// Bytes of an item's header (everything before the key).
pub const HEADER: usize = 27;

/// Offset of the policy state byte in the header (the key length is the byte before it).
const STATE_AT: usize = 22;

/// One key with its value and metadata, laid out as a packed record (header, key, value).
/// Fields are read and written by value (`it.cas`, `it.exptime = t`); being packed, they
/// cannot be borrowed.
#[repr(C, packed)]
pub struct Item {
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
    /// [`FETCHED`], [`WON`], [`STALE`], [`KEY_BINARY`].
    pub bits: u8,
    key_len: u8,
    /// Eviction and storage state, owned by the shard: [`FREQ_MASK`], [`DEAD`], [`LARGE`].
    pub(crate) state: u8,
    value_len: u32,
    /// Key bytes, then value bytes (or, when [`LARGE`], a pointer to them).
    data: [u8],
}

const _: () = assert!(std::mem::size_of::<u32>() * 4 + 8 + 3 == HEADER);

impl Item {
    /// A new item: the key followed by the value's parts, copied once.
    pub fn new(key: &[u8], value_parts: &[&[u8]], flags: u32, exptime: u32, now: u32) -> Box<Item> {
        debug_assert!(key.len() <= 255);
        let value_len: usize = value_parts.iter().map(|p| p.len()).sum();
        let mut buf = Vec::with_capacity(HEADER + key.len() + value_len);
        let vlen = u32::try_from(value_len).expect("an item's value fits in 4 GiB");
        write_header(&mut buf, flags, exptime, now, 0, 0, key.len() as u8, 0, vlen);
        buf.extend_from_slice(key);
        for p in value_parts {
            buf.extend_from_slice(p);
        }
        let data_len = buf.len() - HEADER;
        let raw = Box::into_raw(buf.into_boxed_slice()) as *mut u8;
        // SAFETY: `Item` is packed (align 1) and its size for `data_len` trailing bytes is
        // HEADER + data_len, exactly the boxed slice's layout, every byte initialized.
        unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(raw, data_len) as *mut Item) }
    }

    /// The record at the start of `bytes`, whose header says how long it is.
    ///
    /// # Safety
    /// `bytes` must start with a record written by [`Item::write_to`] (whole).
    #[inline]
    pub(crate) unsafe fn at(bytes: &[u8]) -> &Item {
        let len = record_data_len(bytes);
        // SAFETY: the caller promises a whole record; align 1.
        unsafe { &*(std::ptr::slice_from_raw_parts(bytes.as_ptr(), len) as *const Item) }
    }

    /// The record at the start of `bytes`, mutably.
    ///
    /// # Safety
    /// As [`Item::at`].
    #[inline]
    pub(crate) unsafe fn at_mut(bytes: &mut [u8]) -> &mut Item {
        let len = record_data_len(bytes);
        // SAFETY: as in `at`, and the borrow is exclusive.
        unsafe { &mut *(std::ptr::slice_from_raw_parts_mut(bytes.as_mut_ptr(), len) as *mut Item) }
    }

    /// The key.
    #[inline]
    pub fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    /// The value.
    #[inline]
    pub fn value(&self) -> &[u8] {
        let k = self.key_len as usize;
        if self.state & LARGE != 0 {
            // SAFETY: a LARGE record owns the item its pointer points at.
            unsafe { &*self.large_item() }.value()
        } else {
            &self.data[k..]
        }
    }

    /// Replace the value bytes (used by in-place incr/decr of equal length).
    pub fn value_mut(&mut self) -> &mut [u8] {
        let k = self.key_len as usize;
        if self.state & LARGE != 0 {
            // SAFETY: as in `value`; `&mut self` makes the access exclusive.
            unsafe { &mut *self.large_item() }.value_mut()
        } else {
            &mut self.data[k..]
        }
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

    /// Bytes of this record (header and data) where it is stored.
    #[inline]
    pub fn record_len(&self) -> usize {
        HEADER + self.data.len()
    }

    /// Bytes the record takes in a segment if its value is kept out of line.
    pub(crate) fn large_record_len(&self) -> usize {
        HEADER + self.key_len as usize + std::mem::size_of::<*mut u8>()
    }

    /// Copy this record to `out` (exactly [`Item::record_len`] bytes); a LARGE record moves
    /// its pointer along (the value stays where it is).
    pub(crate) fn write_to(&self, out: &mut [u8]) {
        let k = self.key_len as usize;
        let tail = (self.state & LARGE != 0).then(|| self.large_item() as *mut u8);
        self.write_head(out, self.state, tail);
        if tail.is_none() {
            out[HEADER + k..HEADER + self.data.len()].copy_from_slice(&self.data[k..]);
        }
    }

    /// Write a LARGE record for `item` to `out` (exactly [`Item::large_record_len`] bytes):
    /// the header and key, then a pointer to `item` itself, which the record now owns.
    pub(crate) fn write_large(item: Box<Item>, out: &mut [u8]) {
        let state = item.state | LARGE;
        let head = Box::into_raw(item);
        // SAFETY: just leaked from a live box; only read here.
        let it = unsafe { &*head };
        it.write_head(out, state, Some(head as *mut u8));
    }

    fn write_head(&self, out: &mut [u8], state: u8, pointer: Option<*mut u8>) {
        let k = self.key_len as usize;
        // SAFETY: an `Item` begins with its HEADER bytes of header (packed, no padding).
        let own = unsafe { std::slice::from_raw_parts(self as *const Item as *const u8, HEADER) };
        out[..HEADER].copy_from_slice(own);
        out[STATE_AT] = state;
        out[HEADER..HEADER + k].copy_from_slice(self.key());
        if let Some(p) = pointer {
            let at = &mut out[HEADER + k..HEADER + k + std::mem::size_of::<*mut u8>()];
            // SAFETY: `at` has room for a pointer; written unaligned, as a pointer (so it
            // keeps its provenance).
            unsafe { (at.as_mut_ptr() as *mut *mut u8).write_unaligned(p) }
        }
    }

    /// Bytes of the out-of-line allocation, if the value is out of line.
    pub(crate) fn heap_cost(&self) -> usize {
        if self.state & LARGE != 0 {
            large_cost(HEADER + self.key_len as usize + { self.value_len } as usize)
        } else {
            0
        }
    }

    /// Mark the record dead and free its out-of-line value, if any (once: a dead record
    /// frees nothing); returns the bytes freed. The LARGE bit stays, so the record keeps its
    /// length for whoever walks its segment.
    pub(crate) fn kill(&mut self) -> usize {
        if self.state & DEAD != 0 {
            return 0;
        }
        self.state |= DEAD;
        let cost = self.heap_cost();
        if cost > 0 {
            // SAFETY: the pointer came from `Box::into_raw` in `write_large`, with this data
            // length; the DEAD bit makes this the only time it is freed.
            unsafe { drop(Box::from_raw(self.large_item())) }
        }
        cost
    }

    /// The boxed item a LARGE record points at (its header is not read: the record's is).
    fn large_item(&self) -> *mut Item {
        let k = self.key_len as usize;
        let at = &self.data[k..k + std::mem::size_of::<*mut u8>()];
        // SAFETY: a LARGE record's data holds the pointer `write_large` wrote there.
        let p = unsafe { (at.as_ptr() as *const *mut u8).read_unaligned() };
        std::ptr::slice_from_raw_parts_mut(p, k + { self.value_len } as usize) as *mut Item
    }
}

impl std::fmt::Debug for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (flags, exptime, cas) = (self.flags, self.exptime, self.cas);
        write!(f, "Item({:?}, {} bytes, flags {flags}, exptime {exptime}, cas {cas})", self.key(), self.value().len())
    }
}

/// What an out-of-line allocation of `len` bytes costs, as glibc's malloc makes it (8-byte
/// header, rounded up to 16 bytes).
pub(crate) fn large_cost(len: usize) -> usize {
    (len + 8 + 15) & !15
}

/// Length of the data (key and value, or key and pointer) of the record heading `bytes`.
#[inline]
fn record_data_len(bytes: &[u8]) -> usize {
    let key_len = bytes[STATE_AT - 1] as usize;
    let state = bytes[STATE_AT];
    if state & LARGE != 0 {
        return key_len + 8;
    }
    key_len + u32::from_ne_bytes([bytes[23], bytes[24], bytes[25], bytes[26]]) as usize
}

#[allow(clippy::too_many_arguments)]
fn write_header(
    out: &mut Vec<u8>,
    flags: u32,
    exptime: u32,
    atime: u32,
    cas: u64,
    bits: u8,
    key_len: u8,
    state: u8,
    vlen: u32,
) {
    out.extend_from_slice(&flags.to_ne_bytes());
    out.extend_from_slice(&exptime.to_ne_bytes());
    out.extend_from_slice(&atime.to_ne_bytes());
    out.extend_from_slice(&cas.to_ne_bytes());
    out.extend_from_slice(&[bits, key_len, state]);
    out.extend_from_slice(&vlen.to_ne_bytes());
}

/// memcached's size of an item for the `-I` limit: header, key, value, CRLF, CAS and flags.
pub fn memcached_item_size(key_len: usize, value_len: usize, flags: u32, use_cas: bool) -> usize {
    48 + key_len + 1 + value_len + 2 + if use_cas { 8 } else { 0 } + if flags != 0 { 4 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_and_value_round_trip_through_a_record() {
        let mut it = Item::new(b"key", &[b"va", b"lue"], 7, 9, 1);
        assert_eq!((it.key(), it.value()), (&b"key"[..], &b"value"[..]));
        it.value_mut().copy_from_slice(b"VALUE");
        it.cas = 42;
        assert_eq!(it.value(), b"VALUE");
        assert_eq!(it.record_len(), HEADER + 8);
        let mut seg = vec![0u8; 64];
        it.write_to(&mut seg);
        // SAFETY: a whole record was just written.
        let back = unsafe { Item::at(&seg) };
        assert_eq!(
            (back.key(), back.value(), { back.flags }, { back.exptime }, { back.cas }),
            (&b"key"[..], &b"VALUE"[..], 7, 9, 42)
        );
        let empty = Item::new(&[], &[], 0, 0, 0);
        assert_eq!((empty.key(), empty.value()), (&b""[..], &b""[..]));
    }

    #[test]
    fn a_large_value_stays_in_its_box_and_is_freed_once() {
        let big = vec![9u8; 1 << 20];
        let it = Item::new(b"k", &[&big], 3, 0, 0);
        let mut seg = vec![0u8; 2 * it.large_record_len()];
        let len = it.large_record_len();
        Item::write_large(it, &mut seg[..len]);
        // SAFETY: a whole record was just written.
        let rec = unsafe { Item::at_mut(&mut seg) };
        assert_eq!(
            (rec.key(), rec.value().len(), rec.record_len(), { rec.flags }),
            (&b"k"[..], 1 << 20, HEADER + 9, 3)
        );
        assert_eq!(rec.value(), &big[..]);
        rec.value_mut()[0] = 1;
        // Moving the record moves the pointer, not the value.
        let (a, b) = seg.split_at_mut(len);
        // SAFETY: as above.
        unsafe { Item::at(a) }.write_to(b);
        // SAFETY: `b` now holds the moved record.
        let moved = unsafe { Item::at_mut(b) };
        assert_eq!((moved.value()[0], moved.value().len()), (1, 1 << 20));
        assert_eq!(moved.kill(), large_cost(HEADER + 1 + (1 << 20)));
        assert_eq!((moved.kill(), moved.record_len()), (0, HEADER + 9));
    }
}
