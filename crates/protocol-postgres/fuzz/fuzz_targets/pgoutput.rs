//! Fuzzes the logical replication stream: walsender CopyData payloads (XLogData,
//! PrimaryKeepalive) and the pgoutput decoder, as a sequence of messages through one
//! `Decoder` (so streamed chunks open and close), with compose → parse round trips.
//!
//! Input: the first byte picks the protocol version (1 or 2); the rest is a sequence of
//! messages, each a 2-byte big-endian length then its bytes.
//!
//! `cargo +nightly fuzz run pgoutput -- -max_total_time=60` (from crates/protocol-postgres).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_postgres::replication::pgoutput::{Decoder, LogicalMessage};
use protocol_postgres::ServerMessage;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, mut rest)) = data.split_first() else { return };
    let mut decoder = Decoder::new(1 + u32::from(pick & 1)).unwrap();
    while let Some((len, tail)) = rest.split_first_chunk::<2>() {
        let n = usize::from(u16::from_be_bytes(*len)).min(tail.len());
        let (msg, tail) = tail.split_at(n);
        rest = tail;

        if let Ok(s) = ServerMessage::parse(msg) {
            let mut out = Vec::new();
            s.write(&mut out);
            assert_eq!(ServerMessage::parse(&out).unwrap(), s);
        }
        let in_stream = decoder.in_stream();
        if let Ok(m) = decoder.decode(msg) {
            let mut out = Vec::new();
            m.write(&mut out);
            assert_eq!(&out[..], msg, "compose gives back the bytes");
            assert_eq!(LogicalMessage::parse(&out, in_stream).unwrap(), m);
        }
    }
});
