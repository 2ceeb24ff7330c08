//! Packet framing: a 3-byte little-endian payload length, a 1-byte sequence id, the payload.
//!
//! A payload of 16 MiB - 1 bytes ([`MAX_PACKET_PAYLOAD`]) or more is split: every packet but
//! the last carries exactly `MAX_PACKET_PAYLOAD` bytes, and a payload whose length is a
//! multiple of it ends with an empty packet. Sequence ids increase by one (wrapping) for every
//! packet of an exchange, message parts included.

use std::borrow::Cow;

use crate::error::Error;

/// Bytes of a packet header.
pub const PACKET_HEADER_LEN: usize = 4;

/// The largest payload of one packet (`0xffffff`); a packet this size continues.
pub const MAX_PACKET_PAYLOAD: usize = 0xff_ffff;

/// One physical packet, borrowed from the caller's buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The sequence id.
    pub seq: u8,
    /// The payload (at most [`MAX_PACKET_PAYLOAD`] bytes).
    pub payload: &'a [u8],
}

impl Packet<'_> {
    /// Whether the payload continues in the next packet (it has the maximal length).
    pub fn continues(&self) -> bool {
        self.payload.len() == MAX_PACKET_PAYLOAD
    }
}

/// Parses one packet at the start of `buf`.
///
/// `Ok(None)` until the header and the whole payload are buffered; then the packet and the
/// bytes used. Any header is valid, so this never fails today; the `Result` leaves room for
/// limits.
pub fn parse_packet(buf: &[u8]) -> Result<Option<(Packet<'_>, usize)>, Error> {
    let Some(&[a, b, c, seq]) = buf.first_chunk::<4>() else { return Ok(None) };
    let len = u32::from_le_bytes([a, b, c, 0]) as usize;
    let used = PACKET_HEADER_LEN + len;
    match buf.get(PACKET_HEADER_LEN..used) {
        Some(payload) => Ok(Some((Packet { seq, payload }, used))),
        None => Ok(None),
    }
}

/// A logical message: one payload, possibly reassembled from several packets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// The sequence id of the first packet.
    pub first_seq: u8,
    /// The sequence id of the last packet (the next packet of the exchange uses this + 1).
    pub last_seq: u8,
    /// The payload: borrowed when it fit in one packet, owned when it was reassembled.
    pub payload: Cow<'a, [u8]>,
}

/// Parses one logical message at the start of `buf`, joining split packets.
///
/// `Ok(None)` until every packet of the message is buffered. Fails with [`Error::TooLarge`]
/// as soon as the declared payloads exceed `max_len`, and with [`Error::Invalid`] if the
/// sequence ids of the parts are not consecutive.
pub fn parse_message(buf: &[u8], max_len: usize) -> Result<Option<(Message<'_>, usize)>, Error> {
    let Some((first, mut used)) = parse_packet(buf)? else {
        return match buf.first_chunk::<3>() {
            Some(&[a, b, c]) if u32::from_le_bytes([a, b, c, 0]) as usize > max_len => Err(Error::TooLarge),
            _ => Ok(None),
        };
    };
    if first.payload.len() > max_len {
        return Err(Error::TooLarge);
    }
    if !first.continues() {
        return Ok(Some((
            Message { first_seq: first.seq, last_seq: first.seq, payload: Cow::Borrowed(first.payload) },
            used,
        )));
    }
    // Check that everything is buffered before copying anything.
    let mut total = first.payload.len();
    let mut seq = first.seq;
    let mut parts = 1usize;
    loop {
        let rest = &buf[used..];
        if let Some(&[a, b, c, _]) = rest.first_chunk::<4>() {
            let len = u32::from_le_bytes([a, b, c, 0]) as usize;
            if total.saturating_add(len) > max_len {
                return Err(Error::TooLarge);
            }
        }
        let Some((p, n)) = parse_packet(rest)? else { return Ok(None) };
        if p.seq != seq.wrapping_add(1) {
            return Err(Error::Invalid("sequence id of a continuation packet"));
        }
        seq = p.seq;
        total += p.payload.len();
        used += n;
        parts += 1;
        if !p.continues() {
            break;
        }
    }
    let mut payload = Vec::with_capacity(total);
    let mut rest = buf;
    for _ in 0..parts {
        let Some((p, n)) = parse_packet(rest)? else { return Ok(None) };
        payload.extend_from_slice(p.payload);
        rest = &rest[n..];
    }
    Ok(Some((Message { first_seq: first.seq, last_seq: seq, payload: Cow::Owned(payload) }, used)))
}

/// Appends `payload` framed as packets starting at sequence id `seq`, splitting it if it
/// is [`MAX_PACKET_PAYLOAD`] bytes or more. Returns the sequence id for the next packet.
pub fn write_packet(out: &mut Vec<u8>, seq: u8, payload: &[u8]) -> u8 {
    let mut seq = seq;
    let mut rest = payload;
    loop {
        let n = rest.len().min(MAX_PACKET_PAYLOAD);
        out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        out.push(seq);
        out.extend_from_slice(&rest[..n]);
        seq = seq.wrapping_add(1);
        rest = &rest[n..];
        if n < MAX_PACKET_PAYLOAD {
            return seq;
        }
    }
}

/// Starts a packet in place: appends a placeholder header and returns its offset, so that a
/// payload can be composed directly into `out` and framed by [`finish_packet`].
pub fn begin_packet(out: &mut Vec<u8>) -> usize {
    let start = out.len();
    out.extend_from_slice(&[0; PACKET_HEADER_LEN]);
    start
}

/// Frames the payload composed after [`begin_packet`] returned `start`, with sequence id
/// `seq`; splits it if needed. Returns the sequence id for the next packet.
pub fn finish_packet(out: &mut Vec<u8>, start: usize, seq: u8) -> u8 {
    let Some(payload_len) = out.len().checked_sub(start + PACKET_HEADER_LEN) else {
        return seq; // no begin_packet at `start`: nothing sensible to frame
    };
    if payload_len < MAX_PACKET_PAYLOAD {
        out[start..start + 3].copy_from_slice(&(payload_len as u32).to_le_bytes()[..3]);
        out[start + 3] = seq;
        return seq.wrapping_add(1);
    }
    let payload = out.split_off(start + PACKET_HEADER_LEN);
    out.truncate(start);
    write_packet(out, seq, &payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_packet() {
        let mut out = Vec::new();
        assert_eq!(write_packet(&mut out, 0, b"\x03SELECT 1"), 1);
        assert_eq!(&out[..4], &[9, 0, 0, 0]);
        for cut in 0..out.len() {
            assert_eq!(parse_packet(&out[..cut]), Ok(None));
        }
        out.extend_from_slice(b"next");
        let (p, used) = parse_packet(&out).unwrap().unwrap();
        assert_eq!((p.seq, p.payload, used), (0, &b"\x03SELECT 1"[..], 13));
        assert!(!p.continues());
    }

    #[test]
    fn empty_packet() {
        let mut out = Vec::new();
        assert_eq!(write_packet(&mut out, 255, b""), 0);
        assert_eq!(out, [0, 0, 0, 255]);
        let (m, used) = parse_message(&out, 10).unwrap().unwrap();
        assert_eq!((m.first_seq, m.last_seq, &m.payload[..], used), (255, 255, &b""[..], 4));
    }

    #[test]
    fn split_and_join() {
        for len in [MAX_PACKET_PAYLOAD - 1, MAX_PACKET_PAYLOAD, MAX_PACKET_PAYLOAD + 5, 2 * MAX_PACKET_PAYLOAD] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut out = Vec::new();
            let next = write_packet(&mut out, 254, &payload);
            let parts = len / MAX_PACKET_PAYLOAD + 1;
            assert_eq!(out.len(), len + 4 * parts);
            assert_eq!(next, 254u8.wrapping_add(parts as u8));
            let (m, used) = parse_message(&out, usize::MAX).unwrap().unwrap();
            assert_eq!(used, out.len());
            assert_eq!((m.first_seq, m.last_seq), (254, 254u8.wrapping_add(parts as u8 - 1)));
            assert_eq!(m.payload.len(), len);
            assert!(m.payload[..] == payload[..]);
            // Missing the last byte: not complete yet.
            assert_eq!(parse_message(&out[..out.len() - 1], usize::MAX), Ok(None));
            assert_eq!(parse_message(&out, len - 1), Err(Error::TooLarge));
        }
    }

    #[test]
    fn bad_continuation_seq() {
        let payload = vec![0u8; MAX_PACKET_PAYLOAD + 1];
        let mut out = Vec::new();
        write_packet(&mut out, 0, &payload);
        out[4 + MAX_PACKET_PAYLOAD + 3] = 7;
        assert!(matches!(parse_message(&out, usize::MAX), Err(Error::Invalid(_))));
    }

    #[test]
    fn in_place_framing() {
        let mut out = b"prefix".to_vec();
        let start = begin_packet(&mut out);
        out.extend_from_slice(b"abc");
        assert_eq!(finish_packet(&mut out, start, 3), 4);
        assert_eq!(&out[6..], &[3, 0, 0, 3, b'a', b'b', b'c']);

        let mut big = Vec::new();
        let start = begin_packet(&mut big);
        big.resize(start + 4 + MAX_PACKET_PAYLOAD, 1);
        assert_eq!(finish_packet(&mut big, start, 0), 2);
        assert_eq!(big.len(), 8 + MAX_PACKET_PAYLOAD);
    }
}
