//! Fuzzes what a client (or a proxy) reads from servers: a reader loop of typed frames
//! with libpq's per-type limits, every backend message with compose → parse round trips,
//! DataRow iteration, SCRAM server messages, and the reply state machine (a finished reply stays finished; a
//! ReadyForQuery always ends it).
//!
//! `cargo +nightly fuzz run backend -- -max_total_time=60` (from crates/protocol-postgres).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_postgres::*;

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    let mut reply = Reply::new();
    while let Ok(Some((frame, used))) = parse_backend_frame(rest) {
        assert!(frame.body.len() + 4 <= backend_limit(frame.tag) as usize);
        if !reply.done() {
            let step = reply.feed(frame.tag, frame.body);
            assert_eq!(step == Step::Done, frame.tag == b'Z');
            assert_eq!(reply.done(), frame.tag == b'Z');
        }
        if let Ok(m) = BackendMessage::parse(frame) {
            assert_eq!(m.tag(), frame.tag);
            let mut out = Vec::new();
            m.write(&mut out);
            assert_eq!(&out[..], &rest[..used]);
            match m {
                BackendMessage::DataRow(row) => {
                    let values: Vec<_> = row.iter().collect();
                    assert_eq!(values.len(), row.len());
                    let mut again = Vec::new();
                    DataRow::write(&mut again, &values);
                    assert_eq!(again, out);
                }
                BackendMessage::ErrorResponse(f) | BackendMessage::NoticeResponse(f) => {
                    let _ = (f.code(), f.message(), f.severity(), f.to_string());
                }
                BackendMessage::Authentication(Authentication::SaslContinue(d) | Authentication::SaslFinal(d)) => {
                    if let Ok(first) = scram::ServerFirst::parse(d) {
                        let mut out = Vec::new();
                        first.write(&mut out);
                        assert_eq!(scram::ServerFirst::parse(&out).unwrap(), first);
                    }
                    if let Ok(fin) = scram::ServerFinal::parse(d) {
                        let mut out = Vec::new();
                        fin.write(&mut out);
                        assert_eq!(scram::ServerFinal::parse(&out).unwrap(), fin);
                    }
                }
                BackendMessage::CommandComplete(tag) => {
                    let _ = command_rows(tag);
                }
                BackendMessage::CopyData(payload) => {
                    if let Ok(s) = ServerMessage::parse(payload) {
                        let mut out = Vec::new();
                        s.write(&mut out);
                        assert_eq!(ServerMessage::parse(&out).unwrap(), s);
                    }
                }
                _ => {}
            }
        }
        rest = &rest[used..];
    }
    let _ = reply.storable();
});
