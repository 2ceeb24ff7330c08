//! Which engine store mode each protocol's storage command means. One mapping, used by
//! `text/storage.rs`, `meta/set.rs` and `binary/exec.rs` for memory and container keys alike.

use engine::ops::StoreMode;
use protocol_memcache::binary::Opcode;
use protocol_memcache::text::StoreCmd;

/// A text storage command (`set`, `add`, ..., `cas`).
pub fn text(cmd: StoreCmd) -> StoreMode {
    match cmd {
        StoreCmd::Set => StoreMode::Set,
        StoreCmd::Add => StoreMode::Add,
        StoreCmd::Replace => StoreMode::Replace,
        StoreCmd::Append => StoreMode::Append,
        StoreCmd::Prepend => StoreMode::Prepend,
        StoreCmd::Cas => StoreMode::Cas,
    }
}

/// A binary store, from its base opcode and the CAS in effect (0 for none, and always 0
/// with `-C`): as in memcached, a CAS on set/add/replace makes it a CAS store.
pub fn binary(base: Opcode, cas: u64) -> StoreMode {
    let mode = match base {
        Opcode::Set => StoreMode::Set,
        Opcode::Add => StoreMode::Add,
        Opcode::Replace => StoreMode::Replace,
        Opcode::Append => StoreMode::Append,
        _ => StoreMode::Prepend,
    };
    if cas != 0 && matches!(mode, StoreMode::Set | StoreMode::Add | StoreMode::Replace) {
        StoreMode::Cas
    } else {
        mode
    }
}

/// A meta set, from its `M` mode token and whether a `C` token was given: as in
/// memcached, a CAS turns set and replace into a CAS store.
pub fn meta(mode: Option<u8>, has_cas: bool) -> StoreMode {
    let mode = match mode {
        Some(b'E') => StoreMode::Add,
        Some(b'A') => StoreMode::Append,
        Some(b'P') => StoreMode::Prepend,
        Some(b'R') => StoreMode::Replace,
        _ => StoreMode::Set,
    };
    if has_cas && matches!(mode, StoreMode::Set | StoreMode::Replace) {
        StoreMode::Cas
    } else {
        mode
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cas_upgrades_like_memcached() {
        assert_eq!(binary(Opcode::Set, 0), StoreMode::Set);
        assert_eq!(binary(Opcode::Add, 7), StoreMode::Cas);
        assert_eq!(binary(Opcode::Append, 7), StoreMode::Append);
        assert_eq!(meta(Some(b'E'), true), StoreMode::Add);
        assert_eq!(meta(Some(b'R'), true), StoreMode::Cas);
        assert_eq!(meta(None, false), StoreMode::Set);
        assert_eq!(text(StoreCmd::Prepend), StoreMode::Prepend);
    }
}
