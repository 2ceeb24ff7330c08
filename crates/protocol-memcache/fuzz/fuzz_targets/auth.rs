//! Fuzzes the ASCII authentication exchange (`-Y`): arbitrary bytes read the way an
//! unauthenticated connection reads them (a command line, then its data block), checking
//! that parsing never panics and that credentials are always non-empty, space-free tokens.
//!
//! `cargo +nightly fuzz run auth -- -max_total_time=60` (from crates/protocol-memcache).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_memcache::text::auth::{auth_line, auth_token, MAX_LINE};

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    while let Some(nl) = rest.iter().take(MAX_LINE + 1).position(|&b| b == b'\n') {
        let line = &rest[..nl];
        rest = &rest[nl + 1..];
        if let Some(size) = auth_line(line) {
            let need = size as usize + 2;
            if rest.len() < need {
                break;
            }
            if let Ok((user, pass)) = auth_token(&rest[..need]) {
                for t in [user, pass] {
                    assert!(!t.is_empty() && !t.contains(&b' ') && !t.contains(&0));
                }
            }
            rest = &rest[need..];
        }
    }
});
