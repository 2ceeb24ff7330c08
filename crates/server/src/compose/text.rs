//! Text protocol replies from outcomes (memory or container alike). Under `noreply`
//! nothing is written, errors included, as memcached does for these commands.

use engine::ops::{ArithOutcome, DeleteOutcome, StoreOutcome};
use protocol_memcache::text::reply;

use crate::pending::Fail;

/// Write `bytes` unless the command asked for no reply.
fn say(out: &mut Vec<u8>, noreply: bool, bytes: &[u8]) {
    if !noreply {
        out.extend_from_slice(bytes);
    }
}

/// A failed command's error line (nothing under `noreply`).
pub fn fail(out: &mut Vec<u8>, noreply: bool, f: &Fail) {
    say(out, noreply, &f.line());
}

/// The reply to `set`/`add`/`replace`/`append`/`prepend`/`cas`.
pub fn store(out: &mut Vec<u8>, noreply: bool, r: Result<StoreOutcome, Fail>) {
    let line = match r {
        Ok(StoreOutcome::Stored(_)) => reply::STORED,
        Ok(StoreOutcome::NotStored) => reply::NOT_STORED,
        Ok(StoreOutcome::Exists) => reply::EXISTS,
        Ok(StoreOutcome::NotFound) => reply::NOT_FOUND,
        Ok(StoreOutcome::NoMemory) => reply::NO_MEMORY,
        Err(f) => return fail(out, noreply, &f),
    };
    say(out, noreply, line);
}

/// The reply to `delete` (a CAS mismatch cannot happen in text: NOT_FOUND like a miss).
pub fn delete(out: &mut Vec<u8>, noreply: bool, r: Result<DeleteOutcome, Fail>) {
    match r {
        Ok(DeleteOutcome::Deleted) => say(out, noreply, reply::DELETED),
        Ok(_) => say(out, noreply, reply::NOT_FOUND),
        Err(f) => fail(out, noreply, &f),
    }
}

/// The reply to `touch`: whether the key was there.
pub fn touch(out: &mut Vec<u8>, noreply: bool, r: Result<bool, Fail>) {
    match r {
        Ok(hit) => say(out, noreply, if hit { reply::TOUCHED } else { reply::NOT_FOUND }),
        Err(f) => fail(out, noreply, &f),
    }
}

/// The reply to `incr`/`decr`.
pub fn arith(out: &mut Vec<u8>, noreply: bool, r: Result<ArithOutcome, Fail>) {
    if noreply {
        return;
    }
    match r {
        Ok(ArithOutcome::Done { value, .. }) => reply::number(out, value),
        Ok(ArithOutcome::NotFound) => out.extend_from_slice(reply::NOT_FOUND),
        Ok(ArithOutcome::NonNumeric) => out.extend_from_slice(reply::NON_NUMERIC),
        Ok(ArithOutcome::NoMemory) => out.extend_from_slice(b"SERVER_ERROR out of memory\r\n"),
        Ok(ArithOutcome::Exists) => out.extend_from_slice(reply::EXISTS),
        Err(f) => fail(out, noreply, &f),
    }
}

/// The reply to `flush_all`.
pub fn flushed(out: &mut Vec<u8>, noreply: bool, r: Result<(), Fail>) {
    match r {
        Ok(()) => say(out, noreply, reply::OK),
        Err(f) => fail(out, noreply, &f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(f: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut v = Vec::new();
        f(&mut v);
        String::from_utf8(v).unwrap()
    }

    #[test]
    fn outcomes_become_memcached_lines() {
        assert_eq!(text(|v| store(v, false, Ok(StoreOutcome::Stored(3)))), "STORED\r\n");
        assert_eq!(
            text(|v| store(v, false, Ok(StoreOutcome::NoMemory))),
            "SERVER_ERROR out of memory storing object\r\n"
        );
        assert_eq!(text(|v| delete(v, false, Ok(DeleteOutcome::Exists))), "NOT_FOUND\r\n");
        assert_eq!(text(|v| touch(v, false, Ok(true))), "TOUCHED\r\n");
        let done = ArithOutcome::Done { value: 42, cas: 1, created: false };
        assert_eq!(text(|v| arith(v, false, Ok(done))), "42\r\n");
        assert_eq!(text(|v| flushed(v, false, Err(Fail::Server("x".into())))), "SERVER_ERROR x\r\n");
    }

    #[test]
    fn noreply_silences_everything() {
        assert_eq!(text(|v| store(v, true, Err(Fail::Client("bad".into())))), "");
        assert_eq!(text(|v| arith(v, true, Ok(ArithOutcome::NonNumeric))), "");
    }
}
