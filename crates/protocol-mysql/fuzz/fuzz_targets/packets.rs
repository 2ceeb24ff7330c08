//! Fuzzes framing, handshake and generic response parsers: arbitrary bytes through
//! `parse_packet` / `parse_message` (as a reader loop), and every payload parser, with
//! compose → parse round trips where the composed form is canonical.
//!
//! `cargo +nightly fuzz run packets -- -max_total_time=60` (from crates/protocol-mysql).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_mysql::*;

fuzz_target!(|data: &[u8]| {
    // The first 4 bytes pick capabilities; the rest is the input.
    let Some((caps, data)) = data.split_first_chunk::<4>() else { return };
    let caps = u32::from_le_bytes(*caps);

    // Framing: a reader loop.
    let mut rest = data;
    while let Ok(Some((p, used))) = parse_packet(rest) {
        assert_eq!(used, p.payload.len() + 4);
        let mut out = Vec::new();
        write_packet(&mut out, p.seq, p.payload);
        if p.payload.len() < MAX_PACKET_PAYLOAD {
            assert_eq!(&out[..], &rest[..used]);
        }
        rest = &rest[used..];
    }
    if let Ok(Some((m, used))) = parse_message(data, 1 << 20) {
        assert!(used <= data.len() && m.payload.len() <= 1 << 20);
    }

    payloads(data, caps);
});

fn payloads(p: &[u8], caps: u32) {
    if let Ok(hs) = HandshakeV10::parse(p) {
        let mut a = Vec::new();
        hs.write(&mut a);
        let again = HandshakeV10::parse(&a).expect("composed handshake parses");
        let mut b = Vec::new();
        again.write(&mut b);
        assert_eq!(a, b);
        let mut inplace = p.to_vec();
        rewrite_handshake_capabilities(&mut inplace, CLIENT_SSL | CLIENT_COMPRESS, 0).unwrap();
        assert_eq!(
            HandshakeV10::parse(&inplace).unwrap().capabilities,
            hs.capabilities & !(CLIENT_SSL | CLIENT_COMPRESS)
        );
        let _ = hs.scramble();
    }
    if let Ok(ClientHandshake::Response(r)) = parse_client_handshake(p) {
        let mut a = Vec::new();
        r.write(&mut a);
        let again = HandshakeResponse41::parse(&a).expect("composed response parses");
        let mut b = Vec::new();
        again.write(&mut b);
        assert_eq!(a, b);
    }
    if let Ok(ok) = OkPacket::parse(p, caps) {
        let _ = ok.session_state_changes().map(|v| v.iter().map(|c| c.strings()).count());
        let mut a = Vec::new();
        ok.write(&mut a, caps);
        let again = OkPacket::parse(&a, caps).expect("composed OK parses");
        assert_eq!((again.affected_rows, again.last_insert_id), (ok.affected_rows, ok.last_insert_id));
    }
    if let Ok(e) = ErrPacket::parse(p) {
        let mut a = Vec::new();
        e.write(&mut a, CLIENT_PROTOCOL_41);
        let again = ErrPacket::parse(&a).unwrap();
        assert_eq!(again.code, e.code);
    }
    let _ = EofPacket::parse(p, caps);
    let _ = ResponseKind::classify(p, caps);
    if let Ok(a) = AuthPacket::parse(p, caps) {
        let _ = a.caching_sha2_status();
    }
    let _ = parse_lenenc_str(p);
}
