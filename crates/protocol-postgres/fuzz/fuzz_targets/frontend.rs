//! Fuzzes what a server (or a proxy) reads from clients: the startup packet, then a reader
//! loop of typed frames with the server's per-type limits, every frontend message and the
//! 'p' sub-messages (SCRAM attributes included), with compose → parse round trips (composing a parsed message gives
//! back the bytes it came from).
//!
//! `cargo +nightly fuzz run frontend -- -max_total_time=60` (from crates/protocol-postgres).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_postgres::frontend::auth::parse_password;
use protocol_postgres::*;

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((body, used))) = parse_startup_frame(data) {
        assert!(used <= data.len() && body.len() + 4 == used);
        if let Ok(p) = StartupPacket::parse(body) {
            let mut out = Vec::new();
            p.write(&mut out);
            assert_eq!(&out[..], &data[..used]);
        }
    }

    let mut rest = data;
    let mut pipeline = Pipeline::new();
    while let Ok(Some((frame, used))) = parse_frontend_frame(rest) {
        assert!(used == frame.body.len() + 5 && frame.body.len() + 4 <= frontend_limit(frame.tag) as usize);
        pipeline.sent(frame.tag);
        if let Ok(m) = FrontendMessage::parse(frame) {
            assert_eq!(m.tag(), frame.tag);
            let mut out = Vec::new();
            m.write(&mut out);
            assert_eq!(&out[..], &rest[..used]);
            if let FrontendMessage::Password(body) = m {
                let _ = parse_password(body);
                if let Ok(s) = SaslInitialResponse::parse(body) {
                    let mut out = Vec::new();
                    s.write(&mut out);
                    assert_eq!(&out[5..], body);
                    if let Some(Ok(first)) = s.data.map(scram::ClientFirst::parse) {
                        assert_eq!(first.gs2_header().len() + first.bare().len(), s.data.unwrap().len());
                    }
                }
                if let Ok(fin) = scram::ClientFinal::parse(body) {
                    let mut out = Vec::new();
                    scram::ClientFinal::write(&mut out, fin.channel_binding, fin.nonce, fin.proof);
                    assert!(body.starts_with(fin.without_proof().as_bytes()));
                    assert_eq!(scram::ClientFinal::parse(&out).unwrap().proof, fin.proof);
                }
                if let Ok(text) = std::str::from_utf8(body) {
                    let _ = scram::StoredVerifier::parse(text);
                }
            }
            if let FrontendMessage::CopyData(payload) = m {
                if let Ok(c) = ClientMessage::parse(payload) {
                    let mut out = Vec::new();
                    c.write(&mut out);
                    assert_eq!(ClientMessage::parse(&out).unwrap(), c);
                }
            }
        }
        rest = &rest[used..];
    }
});
