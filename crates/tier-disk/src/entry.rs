//! One change to one key, in one allocation laid out as the write-ahead log writes it:
//! `[key length: u16][key][record length: u32][record]` for a put, `[key length][key]`
//! for a removal (a tombstone). The queue, the staged states and the log share it: the
//! log copies its bytes into a frame, an ingestion hands its key and record to fjall
//! as they are, and a read decodes the record only when it is asked for.

use std::sync::Arc;

use crate::record::{Damage, Record};

/// A key's new state: a record, or removed.
#[derive(Clone, PartialEq, Eq)]
pub struct Entry(Arc<[u8]>);

impl std::fmt::Debug for Entry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let key = String::from_utf8_lossy(self.key());
        match self.record() {
            Some(r) => write!(f, "Entry({key:?}: {} record bytes)", r.len()),
            None => write!(f, "Entry({key:?}: removed)"),
        }
    }
}

thread_local! {
    /// Where an entry is assembled before its one allocation (a put's record is encoded
    /// in place, so its length is known only after).
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Entry {
    /// A put of `rec` under `key` (keys are at most 250 bytes; the length field allows
    /// 65535).
    pub fn put<V: AsRef<[u8]>>(key: &[u8], rec: &Record<V>) -> Entry {
        SCRATCH.with(|s| {
            let mut b = s.borrow_mut();
            b.clear();
            b.extend_from_slice(&(key.len() as u16).to_le_bytes());
            b.extend_from_slice(key);
            b.extend_from_slice(&[0; 4]);
            let at = b.len();
            rec.encode_into(&mut b);
            let len = (b.len() - at) as u32;
            b[at - 4..at].copy_from_slice(&len.to_le_bytes());
            let e = Entry(Arc::from(&b[..]));
            if b.capacity() > 64 << 10 {
                *b = Vec::new();
            }
            e
        })
    }

    /// A removal of `key`.
    pub fn delete(key: &[u8]) -> Entry {
        let mut b = Vec::with_capacity(2 + key.len());
        b.extend_from_slice(&(key.len() as u16).to_le_bytes());
        b.extend_from_slice(key);
        Entry(b.into())
    }

    /// Read an entry from the front of `p` (a log frame's payload), advancing `p`;
    /// `put` says whether a record follows the key. The record's checksum is verified.
    pub fn take(p: &mut &[u8], put: bool) -> Result<Entry, String> {
        let short = || "change cut short inside a frame".to_string();
        let klen = u16::from_le_bytes(p.get(..2).ok_or_else(short)?.try_into().expect("2 bytes")) as usize;
        let mut len = 2 + klen;
        if put {
            let at = p.get(len..len + 4).ok_or_else(short)?;
            let rlen = u32::from_le_bytes(at.try_into().expect("4 bytes")) as usize;
            let rec = p.get(len + 4..len + 4 + rlen).ok_or_else(short)?;
            Record::check(rec).map_err(|d: Damage| format!("record of a put: {d}"))?;
            len += 4 + rlen;
        }
        let (e, rest) = p.get(..len).map(|e| (e, &p[len..])).ok_or_else(short)?;
        *p = rest;
        Ok(Entry(Arc::from(e)))
    }

    /// The bytes as the log writes them (after the change's kind and sequence number).
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// The key.
    pub fn key(&self) -> &[u8] {
        let klen = u16::from_le_bytes([self.0[0], self.0[1]]) as usize;
        &self.0[2..2 + klen]
    }

    /// The encoded record; None for a removal.
    pub fn record(&self) -> Option<&[u8]> {
        let at = 2 + self.key().len();
        (self.0.len() > at).then(|| &self.0[at + 4..])
    }

    /// Bytes this entry holds in memory (its allocation and the map slot that holds it).
    pub fn size(&self) -> usize {
        self.0.len() + 48
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_and_delete_round_trip_through_their_bytes() {
        let rec = Record { flags: 3, exptime: 0, cas: 77, stored: 5, seq: 9, bits: 0, value: &b"value"[..] };
        let put = Entry::put(b"key", &rec);
        assert_eq!(put.key(), b"key");
        let decoded = Record::decode(put.record().expect("a put has a record")).expect("intact");
        assert_eq!((decoded.cas, decoded.value.as_slice()), (77, &b"value"[..]));
        let del = Entry::delete(b"gone");
        assert_eq!((del.key(), del.record()), (&b"gone"[..], None));

        let mut log = put.bytes().to_vec();
        log.extend_from_slice(del.bytes());
        let mut p = &log[..];
        assert_eq!(Entry::take(&mut p, true).expect("put"), put);
        assert_eq!(Entry::take(&mut p, false).expect("delete"), del);
        assert!(p.is_empty());
    }

    #[test]
    fn damaged_or_short_bytes_are_errors() {
        let rec = Record { flags: 0, exptime: 0, cas: 1, stored: 0, seq: 1, bits: 0, value: &b"v"[..] };
        let put = Entry::put(b"k", &rec);
        let mut b = put.bytes().to_vec();
        let last = b.len() - 1;
        b[last] ^= 1;
        assert!(Entry::take(&mut &b[..], true).unwrap_err().contains("checksum"));
        for cut in 0..put.bytes().len() {
            assert!(Entry::take(&mut &put.bytes()[..cut], true).is_err(), "cut at {cut}");
        }
    }
}
