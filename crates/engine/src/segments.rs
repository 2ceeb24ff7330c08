//! A shard's item memory: fixed-size segments filled front to back, in two FIFO queues.
//!
//! Records ([`Item`]) are appended to the open (last) segment of a queue. A removed record
//! is only marked dead; its bytes come back when its segment is reclaimed (or at once, when
//! the segment holds nothing live any more). There is no per-item allocation, so an item
//! costs its header, key and value and nothing else: no allocator header or rounding, no
//! slot, no list links (Segcache's layout, NSDI '21). Values too large for a quarter of a
//! segment live in their own allocation, pointed to by their record.
//!
//! A location (what the shard's hash table holds) is a segment number and an offset in one
//! `u32`.

use std::collections::VecDeque;

use crate::item::{large_cost, Item, DEAD, LARGE};

/// Bits of a location that hold the offset in its segment (segments are at most 32 KiB).
const OFFSET_BITS: u32 = 15;
/// Largest segment.
pub const MAX_SEGMENT: usize = 1 << OFFSET_BITS;
/// Smallest segment.
pub const MIN_SEGMENT: usize = 1024;
/// Segments a shard can hold at once.
const MAX_SEGMENTS: usize = 1 << (32 - OFFSET_BITS);

/// Which queue a segment belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Queue {
    /// New items: S3-FIFO's small probation queue.
    Small,
    /// Items read while in the small queue, and ghosts that came back.
    Main,
}

/// One segment: records back to back.
pub struct Segment {
    buf: Box<[u8]>,
    used: usize,
    dead: usize,
    live: u32,
    queue: Queue,
}

impl Segment {
    /// The records of this segment (dead ones included), with their offsets.
    pub fn records(&mut self) -> Records<'_> {
        Records { seg: self, at: 0 }
    }
}

/// Iterates a segment's records in the order they were written.
pub struct Records<'a> {
    seg: &'a mut Segment,
    at: usize,
}

impl Records<'_> {
    /// The next record and its offset.
    pub fn next_record(&mut self) -> Option<(u32, &mut Item)> {
        if self.at >= self.seg.used {
            return None;
        }
        let off = self.at;
        // SAFETY: records are written whole and back to back up to `used`.
        let it = unsafe { Item::at_mut(&mut self.seg.buf[off..]) };
        self.at += it.record_len();
        Some((off as u32, it))
    }
}

/// The segments of one shard and its two queues.
pub struct Segments {
    seg_size: usize,
    segs: Vec<Option<Segment>>,
    free_ids: Vec<u32>,
    small: VecDeque<u32>,
    main: VecDeque<u32>,
    main_items: usize,
    dead: usize,
    /// Bytes held: segments plus out-of-line values.
    pub bytes: usize,
}

impl Segments {
    /// No segments yet; each will be `seg_size` bytes (clamped to 1-32 KiB).
    pub fn new(seg_size: usize) -> Segments {
        let seg_size = seg_size.clamp(MIN_SEGMENT, MAX_SEGMENT);
        Segments {
            seg_size,
            segs: Vec::new(),
            free_ids: Vec::new(),
            small: VecDeque::new(),
            main: VecDeque::new(),
            main_items: 0,
            dead: 0,
            bytes: 0,
        }
    }

    /// Segments in `q`.
    pub fn len(&self, q: Queue) -> usize {
        self.queue(q).len()
    }

    fn queue(&self, q: Queue) -> &VecDeque<u32> {
        match q {
            Queue::Small => &self.small,
            Queue::Main => &self.main,
        }
    }

    fn queue_mut(&mut self, q: Queue) -> &mut VecDeque<u32> {
        match q {
            Queue::Small => &mut self.small,
            Queue::Main => &mut self.main,
        }
    }

    /// Bytes of dead records in the shard's segments.
    pub fn dead_total(&self) -> usize {
        self.dead
    }

    /// Bytes of the shard's segments (out-of-line values not included).
    pub fn segment_bytes(&self) -> usize {
        (self.small.len() + self.main.len()) * self.seg_size
    }

    /// Live items in the main queue.
    pub fn main_items(&self) -> usize {
        self.main_items
    }

    /// Whether `item` is stored with its value out of line.
    fn goes_large(&self, item: &Item) -> bool {
        item.state & LARGE != 0 || item.record_len() > self.seg_size / 4
    }

    fn stored_len(&self, item: &Item) -> usize {
        if self.goes_large(item) {
            item.large_record_len()
        } else {
            item.record_len()
        }
    }

    /// Bytes that appending `item` to `q` would add to [`Segments::bytes`].
    pub fn append_cost(&self, item: &Item, q: Queue) -> usize {
        let len = self.stored_len(item);
        let room = self.queue(q).back().is_some_and(|&id| self.seg(id).used + len <= self.seg_size);
        let large = if item.state & LARGE == 0 && self.goes_large(item) { large_cost(item.record_len()) } else { 0 };
        if room {
            large
        } else {
            self.seg_size + large
        }
    }

    /// Room for a record of `len` bytes at the end of `q`: (segment, offset), opening a
    /// segment if the open one is full; `None` when the shard has no segment numbers left.
    fn room(&mut self, len: usize, q: Queue) -> Option<(u32, usize)> {
        let tail = self.queue(q).back().copied().filter(|&id| self.seg(id).used + len <= self.seg_size);
        let id = match tail {
            Some(id) => id,
            None => {
                let id = self.new_segment(q)?;
                self.queue_mut(q).push_back(id);
                id
            }
        };
        let seg = self.segs[id as usize].as_mut().expect("queued segment");
        let off = seg.used;
        seg.used += len;
        seg.live += 1;
        self.main_items += (q == Queue::Main) as usize;
        Some((id, off))
    }

    /// Store a new item at the end of `q`, copied in, or, when its value is too large for a
    /// quarter segment, kept in its own allocation; returns its location, or the item back
    /// when the shard has no segment numbers left.
    pub fn insert(&mut self, item: Box<Item>, q: Queue) -> Result<u32, Box<Item>> {
        let len = self.stored_len(&item);
        let large = self.goes_large(&item);
        let Some((id, off)) = self.room(len, q) else { return Err(item) };
        if large {
            self.bytes += large_cost(item.record_len());
        }
        let out = &mut self.segs[id as usize].as_mut().expect("queued segment").buf[off..off + len];
        if large {
            Item::write_large(item, out);
        } else {
            item.write_to(out);
        }
        Ok(Self::location(id, off as u32))
    }

    /// Copy a stored record (being reclaimed) to the end of `q`; a LARGE record's value
    /// stays where it is. Returns its new location, or `None` when the shard has no segment
    /// numbers left.
    pub fn append(&mut self, item: &Item, q: Queue) -> Option<u32> {
        let len = item.record_len();
        let (id, off) = self.room(len, q)?;
        item.write_to(&mut self.segs[id as usize].as_mut().expect("queued segment").buf[off..off + len]);
        Some(Self::location(id, off as u32))
    }

    fn new_segment(&mut self, queue: Queue) -> Option<u32> {
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None if self.segs.len() < MAX_SEGMENTS => {
                self.segs.push(None);
                (self.segs.len() - 1) as u32
            }
            None => return None,
        };
        self.segs[id as usize] =
            Some(Segment { buf: vec![0; self.seg_size].into_boxed_slice(), used: 0, dead: 0, live: 0, queue });
        self.bytes += self.seg_size;
        Some(id)
    }

    fn seg(&self, id: u32) -> &Segment {
        self.segs[id as usize].as_ref().expect("live segment")
    }

    /// The record at `loc`.
    #[inline]
    pub fn get(&self, loc: u32) -> &Item {
        let seg = self.seg(loc >> OFFSET_BITS);
        // SAFETY: locations point at whole records.
        unsafe { Item::at(&seg.buf[(loc & (MAX_SEGMENT as u32 - 1)) as usize..]) }
    }

    /// The record at `loc`, mutably.
    #[inline]
    pub fn get_mut(&mut self, loc: u32) -> &mut Item {
        let seg = self.segs[(loc >> OFFSET_BITS) as usize].as_mut().expect("live segment");
        // SAFETY: as in `get`.
        unsafe { Item::at_mut(&mut seg.buf[(loc & (MAX_SEGMENT as u32 - 1)) as usize..]) }
    }

    /// Mark the record at `loc` dead and free its out-of-line value. A segment left with no
    /// live record is freed at once.
    pub fn kill(&mut self, loc: u32) {
        let id = loc >> OFFSET_BITS;
        let it = self.get_mut(loc);
        let freed = it.kill();
        let len = it.record_len();
        self.bytes -= freed;
        let seg = self.segs[id as usize].as_mut().expect("live segment");
        seg.dead += len;
        seg.live -= 1;
        let (q, empty, seg_dead) = (seg.queue, seg.live == 0, seg.dead);
        self.dead += len;
        self.main_items -= (q == Queue::Main) as usize;
        if empty {
            let queue = self.queue_mut(q);
            if let Some(i) = queue.iter().rposition(|&s| s == id) {
                queue.remove(i);
                self.dead -= seg_dead;
                self.release(id);
            }
        }
    }

    /// Dead bytes of each segment of `q`, oldest first.
    pub fn dead_bytes(&self, q: Queue) -> impl Iterator<Item = usize> + '_ {
        self.queue(q).iter().map(|&id| self.seg(id).dead)
    }

    /// Take the segment at position `i` of `q` out of its queue (its records still count
    /// until it is handed to [`Segments::release`]); returns its id and the segment.
    pub fn take(&mut self, q: Queue, i: usize) -> Option<(u32, Segment)> {
        let id = self.queue_mut(q).remove(i)?;
        let seg = self.segs[id as usize].take().expect("queued segment");
        if q == Queue::Main {
            self.main_items -= seg.live as usize;
        }
        self.dead -= seg.dead;
        Some((id, seg))
    }

    /// Location of the record at `off` in segment `id`.
    pub fn location(id: u32, off: u32) -> u32 {
        id << OFFSET_BITS | off
    }

    /// Give back a segment taken by [`Segments::take`] (or emptied by `kill`).
    pub fn release(&mut self, id: u32) {
        self.segs[id as usize] = None;
        self.free_ids.push(id);
        self.bytes -= self.seg_size;
    }

    /// Free every segment and out-of-line value.
    pub fn clear(&mut self) {
        self.free_values();
        self.segs.clear();
        self.free_ids.clear();
        self.small.clear();
        self.main.clear();
        self.main_items = 0;
        self.dead = 0;
        self.bytes = 0;
    }

    fn free_values(&mut self) {
        for seg in self.segs.iter_mut().flatten() {
            let mut recs = seg.records();
            while let Some((_, it)) = recs.next_record() {
                it.kill();
            }
        }
    }

    /// Visit every live record.
    pub fn for_each(&self, mut f: impl FnMut(&Item)) {
        for seg in self.segs.iter().flatten() {
            let mut at = 0;
            while at < seg.used {
                // SAFETY: records are written whole and back to back up to `used`.
                let it = unsafe { Item::at(&seg.buf[at..]) };
                at += it.record_len();
                if it.state & DEAD == 0 {
                    f(it);
                }
            }
        }
    }
}

impl Drop for Segments {
    fn drop(&mut self) {
        self.free_values();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::item::HEADER;

    #[test]
    fn records_are_appended_moved_and_freed_with_their_segment() {
        let mut log = Segments::new(MIN_SEGMENT);
        let small = Item::new(b"a", &[b"x"], 1, 0, 0);
        let big = Item::new(b"b", &[&[7u8; 600]], 2, 0, 0);
        let l1 = log.insert(small, Queue::Small).expect("room");
        let l2 = log.insert(big, Queue::Small).expect("room");
        assert_eq!((log.get(l1).value(), log.get(l2).value()), (&b"x"[..], &[7u8; 600][..]));
        // The large value is out of line: its record is header, key and a pointer.
        assert_eq!(log.get(l2).record_len(), HEADER + 1 + 8);
        assert_eq!(log.bytes, MIN_SEGMENT + large_cost(HEADER + 1 + 600));
        // Reclaiming: the segment leaves its queue, its records are copied on, it is released.
        let (id, mut seg) = log.take(Queue::Small, 0).expect("a segment");
        let mut moved = Vec::new();
        let mut recs = seg.records();
        while let Some((off, it)) = recs.next_record() {
            moved.push((Segments::location(id, off), log.append(it, Queue::Main).expect("room")));
        }
        drop(seg);
        log.release(id);
        assert_eq!(moved.iter().map(|m| m.0).collect::<Vec<_>>(), [l1, l2]);
        assert_eq!((log.len(Queue::Small), log.len(Queue::Main), log.main_items()), (0, 1, 2));
        assert_eq!(log.get(moved[1].1).value(), &[7u8; 600][..]);
        assert_eq!(log.bytes, MIN_SEGMENT + large_cost(HEADER + 1 + 600));
        // Killing the last live record frees the segment; the large value goes with its record.
        log.kill(moved[1].1);
        assert_eq!(log.bytes, MIN_SEGMENT);
        log.kill(moved[0].1);
        assert_eq!((log.bytes, log.len(Queue::Main), log.main_items()), (0, 0, 0));
    }

    #[test]
    fn a_full_segment_opens_the_next_and_clear_frees_everything() {
        let mut log = Segments::new(MIN_SEGMENT);
        let it = || Item::new(b"key", &[&[1u8; 100]], 0, 0, 0);
        let locs: Vec<u32> = (0..20).map(|_| log.insert(it(), Queue::Small).expect("room")).collect();
        let per_seg = MIN_SEGMENT / it().record_len();
        assert_eq!(log.len(Queue::Small), 20_usize.div_ceil(per_seg));
        assert!(locs.iter().all(|&l| log.get(l).value() == [1u8; 100]));
        let big = Item::new(b"b", &[&[7u8; 600]], 2, 0, 0);
        log.insert(big, Queue::Main).expect("room");
        let mut seen = 0;
        log.for_each(|_| seen += 1);
        assert_eq!(seen, 21);
        log.clear();
        assert_eq!((log.bytes, log.len(Queue::Small), log.len(Queue::Main)), (0, 0, 0));
    }
}
