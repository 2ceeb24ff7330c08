//! Fuzzes the SASL PLAIN message parser and memcached's password-file matcher (`-S`):
//! arbitrary bytes as a PLAIN message and as a password file, checking that parsing never
//! panics, that a parsed message has a user name and no NUL inside its parts, and that a
//! user the file lets in really has a `user:` line.
//!
//! `cargo +nightly fuzz run sasl -- -max_total_time=60` (from crates/protocol-memcache).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_memcache::binary::sasl::{parse_plain, pwdb_allows};

fuzz_target!(|data: &[u8]| {
    let (msg, file) = data.split_at(data.len() / 2);
    if let Some(p) = parse_plain(msg) {
        assert!(!p.authcid.is_empty());
        for part in [p.authzid, p.authcid, p.passwd] {
            assert!(!part.contains(&0));
        }
        if pwdb_allows(file, p.authcid, p.passwd) {
            let mut entry = p.authcid.to_vec();
            entry.push(b':');
            assert!(file.windows(entry.len()).any(|w| w == entry.as_slice()));
        }
    }
});
