//! Replies that wait for the disk tier (`--data-dir`).
//!
//! A write's reply may only leave once the write is durable (fsynced with `--durability
//! sync`, handed to the OS with `async`). The engine hands each write to the disk tier,
//! which numbers it; the number goes on the connection's [`Receipt`] (every engine access
//! is opened with one, so no write escapes it), and each command that wrote is noted
//! here with that number and the bytes of its reply in the connection's output buffer. Before the
//! buffer is sent the connection waits for the highest number. If the disk fails first,
//! the replies of the writes that did not become durable are replaced, one by one, by the
//! error a refused write gets (`SERVER_ERROR out of space for persistence` / `persistence
//! failed`, binary status 0x82) and every other reply (reads, earlier writes) is sent as
//! it is: the client learns exactly which writes were not acknowledged, and the connection
//! goes on. (The refused writes stay queued and are written if the disk recovers, like a
//! write whose reply timed out.)

use std::cell::RefCell;

use engine::Receipt;
use protocol_memcache::binary::{write_error, Opcode, Status};

/// One command that wrote.
struct Ack {
    /// Its reply: `out[start..end]` (empty under noreply or for a quiet binary request).
    start: usize,
    end: usize,
    /// The disk tier's number for its (last) write.
    seq: u64,
    /// A binary request's opcode and opaque, for its error reply; `None` for text.
    binary: Option<(Opcode, u32)>,
}

/// The writes behind the replies buffered on one connection.
#[derive(Default)]
pub struct Acks {
    list: RefCell<Vec<Ack>>,
    /// The connection's writes not noted yet: pass it to every engine operation.
    pub receipt: Receipt,
}

impl Acks {
    /// After a command ran: if it wrote to the disk tier, note its reply `out[start..end]`.
    /// `binary`: the request's opcode and opaque.
    #[inline]
    pub fn note(&self, start: usize, end: usize, binary: Option<(Opcode, u32)>) {
        let seq = self.receipt.take();
        if seq > 0 {
            self.list.borrow_mut().push(Ack { start, end, seq, binary });
        }
    }

    /// The number to wait for before sending the buffered replies (0: nothing to wait
    /// for). A write no front end noted (the removal of an item whose replacement was
    /// too large, answered with its own error) is waited for too, but its reply is left
    /// as it is.
    pub fn highest(&self) -> u64 {
        let stray = self.receipt.take();
        self.list.borrow().iter().map(|a| a.seq).max().unwrap_or(0).max(stray)
    }

    /// Everything up to the highest number is durable: forget the notes.
    pub fn clear(&self) {
        self.list.borrow_mut().clear();
    }

    /// The disk failed with writes up to `durable` made durable: replace the reply of
    /// every later write in `out` by `text_error` (text) or status 0x82 (binary).
    pub fn refuse_after(&self, durable: u64, out: &mut Vec<u8>, text_error: &[u8]) {
        let list = std::mem::take(&mut *self.list.borrow_mut());
        if list.iter().all(|a| a.seq <= durable) {
            return;
        }
        let mut fixed = Vec::with_capacity(out.len());
        let mut cursor = 0;
        for a in list.iter().filter(|a| a.seq > durable) {
            // Notes are in output order; clamped all the same, a bad range must not panic.
            let start = a.start.clamp(cursor, out.len());
            fixed.extend_from_slice(&out[cursor..start]);
            match a.binary {
                Some((op, opaque)) => write_error(&mut fixed, op, Status::OutOfMemory, opaque),
                None => fixed.extend_from_slice(text_error),
            }
            cursor = a.end.clamp(start, out.len());
        }
        fixed.extend_from_slice(&out[cursor..]);
        *out = fixed;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(start: usize, end: usize, seq: u64) -> Ack {
        Ack { start, end, seq, binary: None }
    }

    #[test]
    fn only_the_replies_of_writes_past_the_durable_point_are_replaced() {
        let acks = Acks::default();
        let mut out = b"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\nSTORED\r\nDELETED\r\n".to_vec();
        acks.list.borrow_mut().extend([ack(0, 8, 5), ack(29, 37, 6), ack(37, 46, 7)]);
        acks.refuse_after(5, &mut out, b"SERVER_ERROR persistence failed\r\n");
        assert_eq!(
            out,
            b"STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\nSERVER_ERROR persistence failed\r\nSERVER_ERROR persistence failed\r\n"
        );
        assert!(acks.list.borrow().is_empty());
    }

    #[test]
    fn a_noreply_write_gets_its_error_inserted() {
        let acks = Acks::default();
        let mut out = b"END\r\n".to_vec();
        acks.list.borrow_mut().push(ack(0, 0, 9));
        acks.refuse_after(8, &mut out, b"SERVER_ERROR out of space for persistence\r\n");
        assert_eq!(out, b"SERVER_ERROR out of space for persistence\r\nEND\r\n");
    }

    #[test]
    fn binary_replies_keep_opcode_and_opaque() {
        let acks = Acks::default();
        let mut out = Vec::new();
        acks.list.borrow_mut().push(Ack { start: 0, end: 0, seq: 3, binary: Some((Opcode::SetQ, 0xabcd)) });
        acks.refuse_after(2, &mut out, b"");
        assert_eq!(out[0], 0x81);
        assert_eq!(out[1], u8::from(Opcode::SetQ));
        assert_eq!(u16::from_be_bytes([out[6], out[7]]), 0x82);
        assert_eq!(u32::from_be_bytes(out[12..16].try_into().unwrap()), 0xabcd);
    }

    #[test]
    fn nothing_changes_when_everything_is_durable() {
        let acks = Acks::default();
        let mut out = b"STORED\r\n".to_vec();
        acks.list.borrow_mut().push(ack(0, 8, 4));
        acks.refuse_after(4, &mut out, b"SERVER_ERROR x\r\n");
        assert_eq!(out, b"STORED\r\n");
    }
}
