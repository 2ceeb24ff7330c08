//! Fuzzes the text and meta protocols: arbitrary bytes framed into lines and parsed the
//! way the server's read loop does (data blocks and swallowed bytes skipped), checking
//! that parsing never panics, always makes progress and respects memcached's limits.
//!
//! `cargo +nightly fuzz run text -- -max_total_time=60` (from crates/protocol-memcache).

#![no_main]

use libfuzzer_sys::fuzz_target;
use protocol_memcache::meta::MetaCmd;
use protocol_memcache::text::{next_line, parse, split_keys, Command, Frame, KEY_MAX_LENGTH, MAX_TOKENS};

fuzz_target!(|data: &[u8]| {
    let mut rest = data;
    loop {
        let (line, used) = match next_line(rest, 4096) {
            Frame::Incomplete | Frame::Close => break,
            Frame::Line(line, used) => (line, used),
        };
        assert!(used > 0 && used <= rest.len());
        assert!(!line.contains(&0));
        let tokens = protocol_memcache::text::Tokens::new(line);
        assert!(tokens.len() < MAX_TOKENS);
        let mut skip = 0;
        match parse(line) {
            Ok(Command::Store { key, bytes, .. }) => {
                assert!(key.len() <= KEY_MAX_LENGTH);
                skip = bytes.saturating_add(2);
            }
            Ok(Command::Meta(m)) => {
                if m.cmd == MetaCmd::Set {
                    skip = m.datalen + 2;
                }
                for f in m.flag_tokens() {
                    assert!(!f.is_empty());
                }
            }
            Ok(Command::Get { keys, .. }) | Ok(Command::Gat { keys, .. }) => {
                for k in split_keys(keys) {
                    assert!(!k.is_empty() && !k.contains(&b' '));
                }
            }
            Ok(Command::Delete { key, .. }) | Ok(Command::Touch { key, .. }) | Ok(Command::Arith { key, .. }) => {
                assert!(key.len() <= KEY_MAX_LENGTH);
            }
            Ok(_) => {}
            Err(e) => {
                assert!(e.msg.starts_with("ERROR") || e.msg.starts_with("CLIENT_ERROR"));
                skip = e.swallow;
            }
        }
        rest = &rest[used..];
        rest = &rest[skip.min(rest.len())..];
    }
});
