//! Fuzzes where a reply ends (`reply::Reply`): arbitrary packets fed to the state machine
//! for each kind of command, and the final-status readers. Nothing may panic, a finished
//! reply stays finished, and `read_status` agrees with `status_of`.
//!
//! `cargo +nightly fuzz run reply -- -max_total_time=60` (from crates/protocol-mysql).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_mysql::reply::{read_status, status_of, Expect, Reply, Step};
use protocol_mysql::*;

fuzz_target!(|data: &[u8]| {
    // First byte: which command kind and whether DEPRECATE_EOF was negotiated.
    let Some((&pick, data)) = data.split_first() else { return };
    let expect = match pick % 5 {
        0 => Expect::Results,
        1 => Expect::Prepare,
        2 => Expect::FieldList,
        3 => Expect::Rows,
        _ => Expect::Single,
    };
    let caps = if pick & 0x80 != 0 { CLIENT_DEPRECATE_EOF } else { 0 };
    let mut reply = Reply::new(expect, caps);
    let mut rest = data;
    while let Ok(Some((p, used))) = parse_packet(rest) {
        rest = &rest[used..];
        let was_done = reply.done();
        let step = reply.feed(p.payload);
        if was_done {
            // Bytes after the end are not this reply's: the caller must not feed them.
            break;
        }
        let _ = (step, reply.storable());
        if matches!(step, Step::Done) {
            assert!(reply.done());
        }
        if let Some(s) = read_status(p.payload, caps != 0) {
            assert_eq!(s, status_of(p.payload, caps != 0));
        }
    }
});
